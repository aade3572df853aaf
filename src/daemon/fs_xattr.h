/* fs_xattr.c: user.lockfs.* extended attributes on lock files. */
#ifndef LOCKFS_FS_XATTR_H
#define LOCKFS_FS_XATTR_H

#include "fs.h"

int xattr_get(lfs *fs, lfs_node *n, const char *name, GString *out);
void xattr_list(lfs *fs, lfs_node *n, GString *out);

#endif
