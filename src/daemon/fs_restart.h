/* fs_restart.c: taking locks back at a restart, and the gap a stopped lockfs left. */
#ifndef LOCKFS_FS_RESTART_H
#define LOCKFS_FS_RESTART_H

#include "fs.h"

struct lockfs_lockstate_found;
/* Take back what FOUND records, before any request is answered. */
void restart_reclaim(lfs *fs, struct lockfs_lockstate_found *found);
/* The gap: lock names created on the disk under the mount point while no
 * lockfs was mounted.  Found before the mount (restart_gap_file *, free
 * with g_ptr_array_unref); whether the directory holds nothing else (for
 * passthrough=auto); taken for their owners, or reported as conflicts,
 * once the previous lockfs's locks are back (UNDER_FD: the directory). */
typedef struct restart_gap_file restart_gap_file;
GPtrArray *restart_gap_find(int under_fd, const char *suffix);
bool restart_gap_only(int under_fd, GPtrArray *found);
void restart_gap_close(lfs *fs, GPtrArray *found, int under_fd);

#endif
