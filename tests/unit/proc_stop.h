/* SIGSTOP a server and wait until every one of its threads is stopped.
 * kill() returns once the stop is pending, not done: on a loaded machine a
 * thread running on another CPU may still answer a request sent right after
 * it, and a test that expects "hung" would see an answer. */
#ifndef LOCKFS_TEST_PROC_STOP_H
#define LOCKFS_TEST_PROC_STOP_H

#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* True once every task of PID shows state T (stopped) or t, within 5 s. */
static inline bool proc_all_stopped(pid_t pid)
{
	g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
	GDir *d = g_dir_open(dir, 0, NULL);
	if (!d)
		return false;
	bool all = true;
	for (const char *t; all && (t = g_dir_read_name(d));) {
		g_autofree char *path = g_strdup_printf("%s/%s/stat", dir, t);
		g_autofree char *text = NULL;
		if (!g_file_get_contents(path, &text, NULL, NULL))
			continue;                   /* the thread is gone */
		const char *p = strrchr(text, ')'); /* the command may hold spaces */
		all = p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
	}
	g_dir_close(d);
	return all;
}

static inline int proc_stop(pid_t pid)
{
	if (kill(pid, SIGSTOP) != 0)
		return -1;
	gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	while (!proc_all_stopped(pid)) {
		if (g_get_monotonic_time() > end)
			return -1;
		g_usleep(1000);
	}
	return 0;
}

#endif
