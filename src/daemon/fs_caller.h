/* fs_caller.c: who asks, and what the kernel would let it do. */
#ifndef LOCKFS_FS_CALLER_H
#define LOCKFS_FS_CALLER_H

#include "fs.h"
#include "fs_rules.h"

struct lfs_caller caller_of(fuse_req_t req); /* the requesting process */
/* Whether the caller of REQ could unlink a name of DIR owned by OWNER (fs->mu held). */
bool caller_may_delete(lfs *fs, fuse_req_t req, lfs_node *dir, uid_t owner);
/* Whether the caller of REQ could open N for writing, by its mode (fs->mu held). */
bool caller_may_write(lfs *fs, fuse_req_t req, lfs_node *n);

#endif
