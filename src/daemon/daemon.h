/* Detaching from the caller (mount(8), a shell) without forking a process
 * that has threads or connections.
 *
 * fuse_daemonize() forks where it is called: every thread made before stays
 * behind in the parent (the notify thread, a backend's publisher, GLib's
 * worker pool that GIO's resolver and TLS run on), and the child inherits
 * connections whose helper threads are gone.  lockfs forks instead before it
 * makes any of them; the child does all the rest (backend, mount, threads),
 * and the parent waits for it: it exits 0 once the child says it is mounted
 * and serving, as fuse_daemonize's parent does, or with the child's own exit
 * status (1, 2, 3) when the child gives up first.  mount(8) and a shell see
 * what a foreground lockfs would have said, and its error on stderr. */
#ifndef LOCKFS_DAEMON_H
#define LOCKFS_DAEMON_H

#include <sys/types.h>

/* Fork.  Returns in the child only; the parent waits as said above and
 * exits. */
void daemon_fork(void);

/* In the child, once mounted and serving: a session of its own, "/" as the
 * working directory, stdin and stdout on /dev/null and stderr on LOG_FD (or
 * /dev/null when it is -1); then tell the parent, which passes STATUS (one
 * line) to systemd with READY=1 and this process as MAINPID.  In the
 * foreground (no daemon_fork()), only the working directory and stderr
 * change, and READY=1 is sent from here. */
void daemon_ready(const char *status, int log_fd);

#endif
