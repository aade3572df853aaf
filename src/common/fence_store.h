/* A durable, strictly increasing counter kept in a state file.
 *
 * Writing the file for every fence would put an fsync on every acquisition,
 * so the file records a reservation: numbers up to `reserved` may have been
 * handed out.  On start the counter resumes above the reservation, so a fence
 * is never repeated across restarts or crashes; a new block is reserved (and
 * the file rewritten safely) only when the current one is used up. */
#ifndef LOCKFS_FENCE_STORE_H
#define LOCKFS_FENCE_STORE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lockfs_fence_store lockfs_fence_store;

/* Open (creating when missing) and lock PATH; reserves the first block, so a
 * state file that cannot be written fails here, before anything is granted. */
lockfs_fence_store *lockfs_fence_store_open(const char *path, uint64_t block, GError **error);

/* The next fence, or -EIO when a new block could not be made durable (the
 * reason is logged).  Not thread-safe: callers serialise. */
int lockfs_fence_store_next(lockfs_fence_store *fs, uint64_t *out);

void lockfs_fence_store_close(lockfs_fence_store *fs);

/* The state file's format, "lockfs-fence-state 1\nreserved N\n": true with
 * *RESERVED = N when TEXT is one.  lockfsctl check reads files by it without
 * opening the store (the store flock()s the file a running mount holds). */
bool lockfs_fence_state_parse(const char *text, uint64_t *reserved);

/* The state file name of the local backend's mount MOUNT_ID (its mount
 * point): "local" + the path with bytes outside [A-Za-z0-9._-] as %XX +
 * ".fence".  lockfsctl check finds a mount's state by the same name. */
char *lockfs_local_state_name(const char *mount_id);

#endif
