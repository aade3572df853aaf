/* fs_nodes.c: the model's nodes and dentries: creation, naming, attributes, lifetime. */
#ifndef LOCKFS_FS_NODES_H
#define LOCKFS_FS_NODES_H

#include "fs.h"

lfs_node *node_new(lfs *fs, lfs_node_kind kind, mode_t mode, uid_t uid, gid_t gid);
void node_maybe_free(lfs *fs, lfs_node *n);
lfs_dentry *dentry_add(lfs *fs, lfs_node *dir, const char *name, lfs_node *node);
/* Take D out of its directory: D itself, not freed, when it carries a lease
 * (the caller lets the lease go, then dentry_free), else NULL (freed). */
lfs_dentry *dentry_remove(lfs *fs, lfs_dentry *d) G_GNUC_WARN_UNUSED_RESULT;
void dentry_free(lfs *fs, lfs_dentry *d);
void nodes_fini(lfs *fs); /* at exit: every node, name and lease object */
lfs_dentry *dentry_find(lfs_node *dir, const char *name);
bool name_is_lock(const lfs *fs, const char *name);
char *node_key(lfs *fs, const lfs_node *dir, const char *name); /* lock key: path from the root */
/* N's path from the root ("" for the root), NULL when it has no name. */
char *node_path(lfs *fs, lfs_node *n);
int node_getattr(lfs *fs, lfs_node *n, struct stat *st);
void node_touch(lfs_node *n, bool m, bool c);
lfs_dentry *node_lock_dentry(lfs *fs, lfs_node *n); /* one lock name of N, or NULL */
int node_set_size(lfs_node *n, size_t size);
/* NAME of disk directory DIR: the node of the file on disk, the one
 * already known when the kernel has it. */
int node_lookup_disk(lfs *fs, lfs_node *dir, const char *name, lfs_node **out);
static inline fuse_ino_t node_id(lfs *fs, lfs_node *n)
{
	return n == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}
static inline lfs_node *node_of(lfs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? fs->root : (lfs_node *)(uintptr_t)ino;
}

#endif
