/* The fence store's state file, beyond what a backend calls: the store
 * itself (lockfs_fence_store_open/next/close) and the local backend's state
 * file name are in lockfs/backend_support.h. */
#ifndef LOCKFS_FENCE_STORE_H
#define LOCKFS_FENCE_STORE_H

#include <lockfs/backend_support.h>
#include <stdbool.h>
#include <stdint.h>

/* The state file's format, "lockfs-fence-state 1\nreserved N\n": true with
 * *RESERVED = N when TEXT is one.  lockfsctl check reads files by it without
 * opening the store (the store flock()s the file a running mount holds). */
bool lockfs_fence_state_parse(const char *text, uint64_t *reserved);

#endif
