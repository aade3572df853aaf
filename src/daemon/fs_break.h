/* fs_break.c: breaks on purpose: .lockfs/break, user.lockfs.break, an unlink of a
 * lock held elsewhere. */
#ifndef LOCKFS_FS_BREAK_H
#define LOCKFS_FS_BREAK_H

#include "fs.h"
#include "fs_rules.h"

/* Unlink of lock NAME of DIR not held here (fs->mu held; lets go of it). */
int break_unlink_remote(lfs *fs, lfs_node *dir, const char *name, const struct lfs_caller *c);
/* Break D, or KEY held elsewhere, for the caller of REQ, as its unlink would
 * be allowed (fs->mu held). */
int break_for(lfs *fs, fuse_req_t req, lfs_dentry *d, const char *fence, fuse_ino_t *parent,
              char **name);
int break_remote_for(lfs *fs, fuse_req_t req, const char *key, const char *fence);
/* A write to .lockfs/break: "KEY [FENCE]\n" (fs->mu held). */
int break_request(lfs *fs, fuse_req_t req, const char *buf, size_t size);

#endif
