/* Logging (GLib structured logging to stderr, the journal or syslog) and
 * notifications. */
#ifndef LOCKFS_LOG_H
#define LOCKFS_LOG_H

#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/backend_support.h>
#include <stdbool.h>

/* LEVEL: "error", "warning", "info" or "debug".  When stderr is the
 * journal's stream (g_log_writer_is_journald), every line goes to the
 * journal with its fields, foreground or not; else TO_STDERR (foreground)
 * writes text lines to stderr, and daemons log to syslog. */
void lockfs_log_init(const char *ident, bool to_stderr, const char *level);

/* Whether a line of LEVEL is written at all (check before costly text). */
bool lockfs_log_enabled(GLogLevelFlags level);

/* lockfs_log(), one line, is in lockfs/backend_support.h. */

/* A lock event: one line, and in the journal the fields LOCKFS_EVENT
 * (grant, release, break, stale, lost, error), LOCKFS_LOCK, LOCKFS_FENCE,
 * LOCKFS_HOLDER and LOCKFS_BREAKER ("host:pid uid=N user=NAME", as the
 * notify command's environment has them); NULL or empty ones are left out. */
void lockfs_log_event(GLogLevelFlags level, const char *event, const char *key,
                      const lockfs_holder *holder, const lockfs_holder *breaker, const char *fence,
                      const char *fmt, ...) G_GNUC_PRINTF(7, 8);

/* The same with the line already made (MSG): the audit trail's lines,
 * made without printf. */
void lockfs_log_event_msg(GLogLevelFlags level, const char *event, const char *key,
                          const lockfs_holder *holder, const lockfs_holder *breaker,
                          const char *fence, const char *msg);

/* The journal's fields of one line (the writer's, here for its unit test):
 * IN less MESSAGE and PRIORITY, then MESSAGE escaped (*MSG, to free),
 * PRIORITY from LEVEL (in PRIO) and SYSLOG_IDENTIFIER=IDENT unless IN has
 * one.  Returns how many of MAX were written. */
gsize lockfs_log_journal_fields(GLogLevelFlags level, const GLogField *in, gsize n,
                                const char *ident, GLogField *out, gsize max, char prio[2],
                                char **msg);
/* syslog(3)'s priority of LEVEL: critical is LOG_ERR, message LOG_NOTICE. */
int lockfs_log_priority(GLogLevelFlags level);

/* "host:pid uid=N user=NAME" ("" for NULL), to free. */
char *lockfs_holder_text(const lockfs_holder *h);

/* Every break and every lost lock runs COMMAND (through /bin/sh) with the
 * facts in its environment.  It runs on a thread of its own with a bounded
 * queue and a time limit, so a slow or failing notifier never delays locking. */
void lockfs_notify_init(const char *command, const char *mount);
void lockfs_notify(const char *event, const char *key, const lockfs_holder *holder,
                   const lockfs_holder *breaker, const char *fence);
/* The same with LOCKFS_DETAIL, lockfs_notify_detail(): lockfs/backend_support.h. */
void lockfs_notify_shutdown(void);

#endif
