/* Detaching: fork before any thread exists, report readiness through a pipe. */
#include "daemon.h"
#include "log.h"
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child's end of the pipe; -1 in the foreground. */
static int ready_fd = -1;

/* What the child writes once ready: 'R' and the STATUS line.  Anything else
 * (nothing, when it exits) means it gave up. */
#define READY_MAX 4096

static void wait_child(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "lockfs: cannot wait for the daemon (pid %ld): %s\n",
			        (long)pid, g_strerror(errno));
			exit(2);
		}
	}
	if (WIFEXITED(st))
		exit(WEXITSTATUS(st));
	fprintf(stderr,
	        "lockfs: the daemon (pid %ld) was killed by signal %d before it was "
	        "mounted; see the system log\n",
	        (long)pid, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	exit(2);
}

void daemon_fork(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		fprintf(stderr, "lockfs: cannot make a pipe to detach: %s\n", g_strerror(errno));
		exit(2);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "lockfs: cannot fork to detach: %s; or run lockfs -f\n",
		        g_strerror(errno));
		exit(2);
	}
	if (pid == 0) {
		close(p[0]);
		ready_fd = p[1];
		return;
	}
	close(p[1]);
	char buf[READY_MAX + 1];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(p[0], buf + n, READY_MAX - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == READY_MAX)
			break;
	}
	buf[n] = '\0';
	if (n > 0 && buf[0] == 'R') {
		service_ready(pid, buf + 1);
		exit(0);
	}
	wait_child(pid);
}

void daemon_ready(const char *status, int log_fd)
{
	if (chdir("/") != 0) {
		/* Only keeps the directory it started in busy. */
	}
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (ready_fd >= 0) {
		setsid();
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
	}
	/* stderr: the log file, or nothing once detached. */
	int err = log_fd >= 0 ? log_fd : ready_fd >= 0 ? null : -1;
	if (err >= 0)
		dup2(err, STDERR_FILENO);
	if (null >= 0)
		close(null);
	if (ready_fd < 0) {
		service_ready(0, status);
		return;
	}
	GString *msg = g_string_new("R");
	g_string_append(msg, status);
	const char *s = msg->str;
	size_t left = MIN(msg->len, READY_MAX);
	while (left > 0) {
		ssize_t w = write(ready_fd, s, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* the parent is gone: nobody to tell */
		s += w;
		left -= (size_t)w;
	}
	g_string_free(msg, TRUE);
	close(ready_fd);
	ready_fd = -1;
}
