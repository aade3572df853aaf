/* What a backend may call from the lockfs core: the header for backend
 * writers.
 *
 * A backend (src/backends/NAME/) is compiled with include/ alone on its
 * include path: it implements lockfs/backend.h, reads its group of the
 * configuration through lockfs/config.h, and calls the core only through
 * what this header declares.  The core's own headers (src/common/) and the
 * daemon's (src/daemon/) are not reachable from a backend, so a backend that
 * reaches into either does not compile.  Something new a backend needs from
 * the core is added here, where every backend writer sees it.
 *
 * Everything here is thread-safe unless it says otherwise. */
#ifndef LOCKFS_BACKEND_SUPPORT_H
#define LOCKFS_BACKEND_SUPPORT_H

#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/config.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Clocks (src/common/holder.c). */

/* Unix time in µs, and CLOCK_BOOTTIME in µs (monotonic, counting suspend:
 * every lease, deadline and staleness of this host is measured on it). */
int64_t lockfs_now_us(void);
int64_t lockfs_mono_us(void);
/* g_cond_wait_until() for a DEADLINE of lockfs_mono_us(). */
gboolean lockfs_cond_wait_until(GCond *cond, GMutex *mu, int64_t deadline);

/* This host's name, as the holder records this mount writes carry it. */
const char *lockfs_holder_host(void);

/* Apply a heartbeat() to a holder record (src/common/holder.c): every time
 * and the mode BEAT changes (the nonzero ones) are copied into H, the times
 * moved by OFFSET_US (0, but where a backend's unit tests play a host whose
 * clock is off).  TRUE when BEAT carries new content: then *CONTENT is a
 * copy of it cut to LOCKFS_CONTENT_MAX bytes (NULL when empty; the caller's
 * to free) and *CONTENT_LEN its length, for the caller to put in place of
 * what it kept.  What a backend does besides (its own clock's date of the
 * heartbeat) stays in the backend. */
gboolean lockfs_holder_apply_beat(lockfs_holder *h, int64_t offset_us, const lockfs_beat *beat,
                                  void **content, size_t *content_len);

/* Logging and notification (src/common/log.c). */

/* One log line of LEVEL; KEY (the lock concerned, or NULL) is also the
 * journal field LOCKFS_LOCK. */
void lockfs_log(GLogLevelFlags level, const char *key, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Run the notify command (notify= in the configuration) for EVENT, with
 * LOCKFS_DETAIL, one line saying more, in its environment (the event
 * "clock": this host's clock against the server's).  It runs on a thread of
 * its own: it never delays the caller. */
void lockfs_notify_detail(const char *event, const char *key, const lockfs_holder *holder,
                          const lockfs_holder *breaker, const char *fence, const char *detail);

/* Secrets kept in files (src/common/secret.c): a bind password, a user's
 * password. */

/* The first line of PATH (without its line end), which must be a regular
 * file no group or other can read, and not empty; to free.  NULL with a
 * configuration error naming GROUP/KEY, the key that named PATH. */
char *lockfs_secret_read(const lockfs_config *cfg, const char *group, const char *key,
                         const char *path, GError **error);

/* A durable, strictly increasing counter kept in a state file
 * (src/common/fence_store.c): fences for a backend that has no server to
 * number them (the local backend).
 *
 * Writing the file for every fence would put an fsync on every acquisition,
 * so the file records a reservation: numbers up to `reserved` may have been
 * handed out.  On start the counter resumes above the reservation, so a fence
 * is never repeated across restarts or crashes; a new block is reserved (and
 * the file rewritten safely) only when the current one is used up. */
typedef struct lockfs_fence_store lockfs_fence_store;

/* Open (creating when missing) and lock PATH; reserves the first block, so a
 * state file that cannot be written fails here, before anything is granted. */
lockfs_fence_store *lockfs_fence_store_open(const char *path, uint64_t block, GError **error);

/* The next fence, or -EIO when a new block could not be made durable (the
 * reason is logged).  Not thread-safe: callers serialise. */
int lockfs_fence_store_next(lockfs_fence_store *fs, uint64_t *out);

void lockfs_fence_store_close(lockfs_fence_store *fs);

/* The state file name of the local backend's mount MOUNT_ID (its mount
 * point): "local" + the path with bytes outside [A-Za-z0-9._-] as %XX +
 * ".fence".  lockfsctl check finds a mount's state by the same name. */
char *lockfs_local_state_name(const char *mount_id);

G_END_DECLS

#endif
