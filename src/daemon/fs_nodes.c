/* Nodes and dentries: creation, naming, attributes, lifetime. */
#include "fs_nodes.h"
#include "fs_disk.h"
#include "holder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

lfs_node *node_new(lfs *fs, lfs_node_kind kind, mode_t mode, uid_t uid, gid_t gid)
{
	lfs_node *n = g_new0(lfs_node, 1);
	n->kind = kind;
	n->st_ino = fs->next_ino++;
	n->mode = mode;
	n->uid = uid;
	n->gid = gid;
	n->fd = -1;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	n->atime = n->mtime = n->ctime = now;
	if (S_ISDIR(mode))
		n->nlink = kind == NODE_MEM ? 2 : 0;
	n->all_next = fs->all_nodes;
	if (fs->all_nodes)
		fs->all_nodes->all_prev = n;
	fs->all_nodes = n;
	return n;
}

static void node_free(lfs *fs, lfs_node *n)
{
	if (n->all_prev)
		n->all_prev->all_next = n->all_next;
	else
		fs->all_nodes = n->all_next;
	if (n->all_next)
		n->all_next->all_prev = n->all_prev;
	if (n->kind == NODE_DISK) {
		g_autofree char *k =
		        g_strdup_printf("%lu:%lu", (unsigned long)n->dev, (unsigned long)n->dino);
		if (g_hash_table_lookup(fs->disk_nodes, k) == n)
			g_hash_table_remove(fs->disk_nodes, k);
		if (n->fd >= 0)
			close(n->fd);
	}
	if (n->children)
		g_hash_table_destroy(n->children);
	g_free(n->data);
	g_free(n->ctl_path);
	g_free(n->old_path);
	if (n->remote) {
		lockfs_lock_info_clear(n->remote);
		g_free(n->remote);
	}
	if (n->lost_info) {
		lockfs_lock_info_clear(n->lost_info);
		g_free(n->lost_info);
	}
	g_free(n);
}

/* A node lives while the kernel references it, a handle is open, or a name
 * (in memory) leads to it.  Disk nodes are found again from disk. */
void node_maybe_free(lfs *fs, lfs_node *n)
{
	if (n == fs->root || n == fs->control || n->nlookup || n->opens)
		return;
	if (n->kind == NODE_MEM && n->nlink && !n->remote)
		return;
	if (n->kind == NODE_DISK && n->lock_names)
		return;
	if (n->children && g_hash_table_size(n->children))
		return;
	node_free(fs, n);
}

/* The node for the disk file FD (an O_PATH descriptor, which this takes),
 * the one already known when the kernel has it. */
static lfs_node *node_for_disk_fd(lfs *fs, int fd, const struct stat *st)
{
	char key[48];
	snprintf(key, sizeof(key), "%lu:%lu", (unsigned long)st->st_dev, (unsigned long)st->st_ino);
	lfs_node *n = g_hash_table_lookup(fs->disk_nodes, key);
	if (n) {
		close(fd);
		return n;
	}
	n = node_new(fs, NODE_DISK, st->st_mode, st->st_uid, st->st_gid);
	n->fd = fd;
	n->dev = st->st_dev;
	n->dino = st->st_ino;
	/* Disk files keep their own inode numbers (readdir reports them);
	 * memory nodes are numbered far above (see lfs_new). */
	n->st_ino = st->st_ino;
	g_hash_table_insert(fs->disk_nodes, g_strdup(key), n);
	return n;
}

int node_lookup_disk(lfs *fs, lfs_node *dir, const char *name, lfs_node **out)
{
	int fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*out = node_for_disk_fd(fs, fd, &st);
	return 0;
}

bool name_is_lock(const lfs *fs, const char *name)
{
	size_t len = strlen(name);
	return len > fs->suffix_len &&
	       memcmp(name + len - fs->suffix_len, fs->set->suffix, fs->suffix_len) == 0;
}

lfs_dentry *dentry_find(lfs_node *dir, const char *name)
{
	return dir->children ? g_hash_table_lookup(dir->children, name) : NULL;
}

lfs_dentry *dentry_add(lfs *fs, lfs_node *dir, const char *name, lfs_node *node)
{
	lfs_dentry *d = g_new0(lfs_dentry, 1);
	d->name = g_strdup(name);
	d->dir = dir;
	d->node = node;
	if (!dir->children)
		dir->children = g_hash_table_new(g_str_hash, g_str_equal);
	g_hash_table_insert(dir->children, d->name, d);
	if (S_ISDIR(node->mode)) {
		node->parent = dir;
		node->self = d;
		if (node->kind == NODE_MEM)
			node->nlink = 2;
		if (dir->kind == NODE_MEM)
			dir->nlink++;
	} else {
		node->nlink++;
		node->named = d;
	}
	if (dir == fs->flock_dir || name_is_lock(fs, name)) {
		node->lock_names++;
		d->next_lock = node->locks;
		node->locks = d;
	}
	return d;
}

/* Take the name D out of its directory.  A lock name's lease is not the
 * model's but fs_locks.c's, a layer above: rather than call up into it,
 * this hands back D, out of its directory but not freed, when it still
 * carries a lease, for the caller to let the lease go and free D
 * (dentry_free); NULL when D is freed.  Every caller goes through
 * locks_remove_name. */
lfs_dentry *dentry_remove(lfs *fs, lfs_dentry *d)
{
	lfs_node *dir = d->dir, *node = d->node;
	g_hash_table_remove(dir->children, d->name);
	if (S_ISDIR(node->mode)) {
		node->nlink = 0;
		node->self = NULL;
		if (dir->kind == NODE_MEM && dir->nlink > 2)
			dir->nlink--;
	} else if (node->nlink) {
		node->nlink--;
	}
	if (node->named == d) { /* what a flock of it, still open, locks */
		node->named = NULL;
		if (dir != fs->flock_dir) {
			g_free(node->old_path);
			node->old_path = node_key(fs, dir, d->name);
		}
	}
	if (dir == fs->flock_dir || name_is_lock(fs, d->name)) {
		for (lfs_dentry **pp = &node->locks; *pp; pp = &(*pp)->next_lock)
			if (*pp == d) {
				*pp = d->next_lock;
				break;
			}
		node->lock_names--;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	node->ctime = now;
	dir->mtime = dir->ctime = now;
	if (d->lease)
		return d; /* the lock layer's to let go of (locks_remove_name) */
	dentry_free(fs, d);
	return NULL;
}

/* Free every node and name of the model, at exit, with no thread left but
 * the caller's: a lease a name still carries is freed (lease_free), not let
 * go, as the backend's destroy() lets go of nothing.  The kernel's
 * references (nlookup) and open handles are ignored: the session is gone. */
void nodes_fini(lfs *fs)
{
	for (lfs_node *n = fs->all_nodes; n; n = n->all_next) {
		if (!n->children)
			continue;
		GHashTableIter it;
		gpointer v;
		g_hash_table_iter_init(&it, n->children);
		while (g_hash_table_iter_next(&it, NULL, &v)) {
			lfs_dentry *d = v;
			if (d->lease)
				fs->be->lease_free(fs->be, d->lease);
			lockfs_holder_clear(&d->holder);
			g_free(d->token);
			g_free(d->name);
			g_free(d);
		}
		g_hash_table_remove_all(n->children);
	}
	while (fs->all_nodes)
		node_free(fs, fs->all_nodes);
	g_hash_table_destroy(fs->disk_nodes);
	fs->disk_nodes = NULL;
}

void dentry_free(lfs *fs, lfs_dentry *d)
{
	lfs_node *node = d->node;
	lockfs_holder_clear(&d->holder);
	g_free(d->token);
	g_free(d->name);
	g_free(d);
	node_maybe_free(fs, node);
}

lfs_dentry *node_lock_dentry(lfs *fs, lfs_node *n)
{
	(void)fs;
	return n->locks;
}

/* The directory's path from the mount root, for lock keys and .lockfs/. */
static void dir_path(lfs *fs, const lfs_node *dir, GString *out)
{
	if (!dir || dir == fs->root)
		return;
	if (dir->kind == NODE_DISK) {
		/* Disk directories are named on disk (and may be renamed there):
		 * ask the kernel where their descriptor points. */
		g_autofree char *p = disk_proc_path(dir);
		g_autofree char *target = g_file_read_link(p, NULL);
		g_autofree char *rp = disk_proc_path(fs->root);
		g_autofree char *root = g_file_read_link(rp, NULL);
		if (target && root && g_str_has_prefix(target, root)) {
			const char *rel = target + strlen(root);
			while (*rel == '/')
				rel++;
			g_string_append(out, rel);
		}
		return;
	}
	if (!dir->self)
		return;
	dir_path(fs, dir->parent, out);
	if (out->len)
		g_string_append_c(out, '/');
	g_string_append(out, dir->self->name);
}

char *node_key(lfs *fs, const lfs_node *dir, const char *name)
{
	GString *s = g_string_new(NULL);
	dir_path(fs, dir, s);
	if (s->len)
		g_string_append_c(s, '/');
	g_string_append(s, name);
	return g_string_free(s, FALSE);
}

char *node_path(lfs *fs, lfs_node *n)
{
	if (n == fs->root)
		return g_strdup("");
	if (S_ISDIR(n->mode) || n->kind == NODE_DISK) {
		if (n->kind != NODE_DISK && !n->self)
			return NULL;
		GString *s = g_string_new(NULL);
		dir_path(fs, n, s);
		if (!s->len) { /* a disk node the kernel could not place under the root */
			g_string_free(s, TRUE);
			return NULL;
		}
		return g_string_free(s, FALSE);
	}
	if (n->named)
		return node_key(fs, n->named->dir, n->named->name);
	if (n->remote) /* held elsewhere */
		return g_strdup(n->remote->key);
	return g_strdup(n->old_path);
}

void node_touch(lfs_node *n, bool m, bool c)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	if (m)
		n->mtime = now;
	if (c)
		n->ctime = now;
}

int node_set_size(lfs_node *n, size_t size)
{
	if (size > n->cap) {
		size_t cap = n->cap ? n->cap : 64;
		while (cap < size)
			cap *= 2;
		char *data = realloc(n->data, cap);
		if (!data)
			return -ENOMEM;
		n->data = data;
		n->cap = cap;
	}
	if (size > n->size)
		memset(n->data + n->size, 0, size - n->size);
	n->size = size;
	return 0;
}

int node_getattr(lfs *fs, lfs_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	if (n->kind == NODE_DISK) {
		int r = disk_getattr(n, st);
		if (r)
			return r;
		st->st_nlink += n->lock_names;
	} else if (n->kind == NODE_CONTROL) {
		st->st_mode = n->mode;
		st->st_nlink = S_ISDIR(n->mode) ? 2 : 1;
		st->st_uid = fs->root->uid;
		st->st_gid = fs->root->gid;
		/* Size 0, as /proc's files: the content is made at open (and read
		 * with direct I/O), not at every lookup and stat, each of which
		 * would list the backend and, while it hangs, wait out a timeout. */
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		st->st_atim = st->st_mtim = st->st_ctim = now;
	} else {
		st->st_mode = n->mode;
		st->st_nlink = n->nlink;
		st->st_uid = n->uid;
		st->st_gid = n->gid;
		st->st_size = S_ISDIR(n->mode) ? 4096 : (off_t)n->size;
		st->st_atim = n->atime;
		st->st_mtim = n->mtime;
		st->st_ctim = n->ctime;
	}
	st->st_ino = n->st_ino;
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}
