/* systemd's notification protocol, through libsystemd's sd_notify(3). */
#include "service.h"
#include "fs_locks.h"
#include "fs_ops.h"
#include "log.h"
#include "view_format.h"

#include <stdlib.h>
#include <systemd/sd-daemon.h>

/* How often the status thread looks at the lock count. */
#define STATUS_INTERVAL_US G_USEC_PER_SEC

static GThread *status_thread;
static GMutex status_mu;
static GCond status_cond;
static bool status_stop;

static bool wanted(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	return s && *s;
}

static void notify(const char *what, const char *text)
{
	int r = sd_notify(0, text);
	if (r < 0)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "cannot tell systemd (%s) through NOTIFY_SOCKET=%s: %s", what,
		           getenv("NOTIFY_SOCKET"), g_strerror(-r));
}

static char *status_of(lfs *fs, unsigned n, const char *doing)
{
	/* A mount point may hold any byte but STATUS is one line. */
	g_autofree char *mnt = lockfs_escape_text(lfs_mountpoint(fs));
	return g_strdup_printf("%s: %sbackend %s, %u lock%s held", mnt, doing, lfs_backend_name(fs),
	                       n, n == 1 ? "" : "s");
}

char *service_status_text(lfs *fs)
{
	return status_of(fs, locks_held_count(fs), "");
}

void service_ready(pid_t mainpid, const char *status)
{
	if (!wanted())
		return;
	g_autofree char *text = mainpid > 0 ? g_strdup_printf("READY=1\nMAINPID=%ld\nSTATUS=%s",
	                                                      (long)mainpid, status)
	                                    : g_strdup_printf("READY=1\nSTATUS=%s", status);
	notify("READY=1", text);
}

static gpointer status_main(gpointer data)
{
	lfs *fs = data;
	unsigned last = locks_held_count(fs);
	g_mutex_lock(&status_mu);
	while (!status_stop) {
		int64_t until = g_get_monotonic_time() + STATUS_INTERVAL_US;
		while (!status_stop && g_cond_wait_until(&status_cond, &status_mu, until))
			;
		if (status_stop)
			break;
		g_mutex_unlock(&status_mu);
		unsigned n = locks_held_count(fs);
		if (n != last) {
			g_autofree char *s = status_of(fs, n, "");
			g_autofree char *text = g_strdup_printf("STATUS=%s", s);
			notify("STATUS", text);
			last = n;
		}
		g_mutex_lock(&status_mu);
	}
	g_mutex_unlock(&status_mu);
	return NULL;
}

void service_status_start(lfs *fs)
{
	if (!wanted() || status_thread)
		return;
	status_thread = g_thread_new("lockfs-status", status_main, fs);
}

void service_stopping(lfs *fs)
{
	if (status_thread) {
		g_mutex_lock(&status_mu);
		status_stop = true;
		g_cond_broadcast(&status_cond);
		g_mutex_unlock(&status_mu);
		g_thread_join(status_thread);
		status_thread = NULL;
	}
	if (!wanted())
		return;
	g_autofree char *s = status_of(fs, locks_held_count(fs), "stopping, ");
	g_autofree char *text = g_strdup_printf("STOPPING=1\nSTATUS=%s", s);
	notify("STOPPING=1", text);
}
