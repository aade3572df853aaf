/* fs_disk.c: disk nodes' descriptors: the primitives of passthrough. */
#ifndef LOCKFS_FS_DISK_H
#define LOCKFS_FS_DISK_H

#include "fs.h"

int disk_open(lfs_node *n, int flags);
int disk_getattr(lfs_node *n, struct stat *st);
char *disk_proc_path(const lfs_node *n);

#endif
