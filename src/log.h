/* Logging (GLib structured logging to stderr or syslog) and notifications. */
#ifndef LOCKFS_LOG_H
#define LOCKFS_LOG_H

#include <glib.h>
#include <lockfs/backend.h>
#include <stdbool.h>

/* LEVEL: "error", "warning", "info" or "debug".  TO_STDERR: foreground runs
 * log to stderr; daemons to syslog (which the journal also collects). */
void lockfs_log_init(const char *ident, bool to_stderr, const char *level);

/* One line; KEY (the lock concerned, or NULL) is also a structured field. */
void lockfs_log(GLogLevelFlags level, const char *key, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

/* Every break and every lost lock runs COMMAND (through /bin/sh) with the
 * facts in its environment.  It runs on a thread of its own with a bounded
 * queue and a time limit, so a slow or failing notifier never delays locking. */
void lockfs_notify_init(const char *command, const char *mount);
void lockfs_notify(const char *event, const char *key, const lockfs_holder *holder,
                   const lockfs_holder *breaker, const char *fence);
/* The same with LOCKFS_DETAIL: one line saying more (event "clock": this
 * host's clock against the server's). */
void lockfs_notify_detail(const char *event, const char *key, const lockfs_holder *holder,
                          const lockfs_holder *breaker, const char *fence, const char *detail);
void lockfs_notify_shutdown(void);

#endif
