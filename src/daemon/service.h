/* Telling systemd about the service (sd_notify(3)): READY=1 once mounted,
 * STATUS= with the mount, its backend and how many locks it holds, and
 * STOPPING=1 when it begins to shut down.  Nothing is sent when
 * $NOTIFY_SOCKET is not set (not started by a Type=notify unit). */
#ifndef LOCKFS_SERVICE_H
#define LOCKFS_SERVICE_H

#include "fs.h"

#include <sys/types.h>

/* "MOUNT: backend NAME, N locks held" (escaped, one line), to free. */
char *service_status_text(lfs *fs);

/* READY=1 and STATUS; with MAINPID > 0 (a detaching lockfs's parent), also
 * MAINPID= so that systemd follows the child. */
void service_ready(pid_t mainpid, const char *status);

/* Keep STATUS up to date while mounted: a thread that looks at the lock
 * count every second (only when $NOTIFY_SOCKET is set). */
void service_status_start(lfs *fs);

/* STOPPING=1 (with the locks about to be let go in STATUS), and the status
 * thread ends. */
void service_stopping(lfs *fs);

#endif
