/* fs_inval.c: telling the kernel what lockfs changed by itself. */
#ifndef LOCKFS_FS_INVAL_H
#define LOCKFS_FS_INVAL_H

#include "fs.h"

void inval_start(lfs *fs);
void inval_node(lfs *fs, lfs_node *n);                      /* queue; never blocks */
void inval_entry(lfs *fs, lfs_node *dir, const char *name); /* queue */
bool inval_other_name(lfs *fs, lfs_node *dir, lfs_node *n, fuse_ino_t *parent, char **name);
/* At once: only without fs->mu and outside requests on that directory. */
void inval_entry_now(lfs *fs, fuse_ino_t parent, const char *name);
void inval_stop(lfs *fs);

#endif
