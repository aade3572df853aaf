/* Invalidation of kernel caches for changes lockfs makes on its own (a stale
 * lock expired, a lock broken by request).  The kernel must not be told from
 * inside a request handler that holds fs->mu, nor from one whose caller
 * holds inode locks the notification needs: such changes are queued and a
 * thread of their own sends them. */
#include "fs_inval.h"
#include "fs_nodes.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	fuse_ino_t ino;    /* attributes of this node */
	fuse_ino_t parent; /* or the name NAME in PARENT */
	char *name;
} inval_item;

static inval_item stop_item;

static gpointer inval_main(gpointer data)
{
	lfs *fs = data;
	for (;;) {
		inval_item *it = g_async_queue_pop(fs->inval);
		if (it == &stop_item)
			return NULL;
		/* -ENOENT: the kernel forgot it already, nothing to do. */
		if (it->name)
			inval_entry_now(fs, it->parent, it->name);
		else
			fuse_lowlevel_notify_inval_inode(fs->se, it->ino, -1, 0);
		g_free(it->name);
		g_free(it);
	}
}

void inval_start(lfs *fs)
{
	if (fs->attr_timeout <= 0 || fs->inval_thread)
		return;
	fs->inval = g_async_queue_new();
	fs->inval_thread = g_thread_new("lockfs-inval", inval_main, fs);
}

void inval_node(lfs *fs, lfs_node *n)
{
	if (!fs->inval_thread)
		return;
	inval_item *it = g_new0(inval_item, 1);
	it->ino = node_id(fs, n);
	g_async_queue_push(fs->inval, it);
}

void inval_entry(lfs *fs, lfs_node *dir, const char *name)
{
	if (!fs->inval_thread)
		return;
	inval_item *it = g_new0(inval_item, 1);
	it->parent = node_id(fs, dir);
	it->name = g_strdup(name);
	g_async_queue_push(fs->inval, it);
}

void inval_entry_now(lfs *fs, fuse_ino_t parent, const char *name)
{
	if (fs->attr_timeout > 0)
		fuse_lowlevel_notify_inval_entry(fs->se, parent, name, strlen(name));
}

void inval_stop(lfs *fs)
{
	if (!fs->inval_thread)
		return;
	g_async_queue_push(fs->inval, &stop_item);
	g_thread_join(fs->inval_thread);
	fs->inval_thread = NULL;
	g_async_queue_unref(fs->inval);
}

/* The kernel takes an unlinked name off the inode's link count itself, and
 * a getattr answered after the release but applied before that unlink's
 * reply leaves the count one short: a file linked to a lock name whose lock
 * is then unlinked ("ln tmp L.lock" ... "rm L.lock", tmp kept for the next
 * round) shows 0 links, and link(2) from it answers ENOENT while the kernel
 * keeps the file's entry.  Its other name is dropped from the kernel's cache
 * after the unlink's reply: the kernel takes that up only once the unlink
 * is done (it waits for the directory the unlink holds), so the next path
 * to the file asks again and gets the count right.  The same is done after
 * each later link of that file to a lock name, so the name is looked up
 * afresh well before the next unlink's reply can race the next link; and
 * from then on that name is given no entry timeout (make_entry), so that
 * every path to it is looked up and its count mended, whatever the delay of
 * these notices on a loaded machine.  This
 * finds the file's name that is not a lock name, beside the lock name in DIR
 * (just removed, or just made), under fs->mu. */
bool inval_other_name(lfs *fs, lfs_node *dir, lfs_node *n, fuse_ino_t *parent, char **name)
{
	if (fs->attr_timeout <= 0 || S_ISDIR(n->mode))
		return false;
	if (n->kind != NODE_DISK) {
		lfs_dentry *o = n->named && !n->named->lease ? n->named : NULL;
		if (!o && n->nlink > n->lock_names) { /* a temp file beside the lock, most likely */
			GHashTableIter it;
			gpointer v;
			g_hash_table_iter_init(&it, dir->children);
			while (!o && g_hash_table_iter_next(&it, NULL, &v))
				if (((lfs_dentry *)v)->node == n && !((lfs_dentry *)v)->lease)
					o = v;
		}
		if (!o)
			return false;
		*parent = node_id(fs, o->dir);
		*name = g_strdup(o->name);
		return true;
	}
	/* Placed through the root's descriptor, never through a path: the
	 * mount is over that directory, and this runs inside a request. */
	g_autofree char *rel = node_path(fs, n);
	if (!rel || g_str_has_suffix(rel, " (deleted)"))
		return false;
	g_autofree char *up = g_path_get_dirname(rel);
	lfs_node *d = fs->root;
	if (strcmp(up, ".") != 0) {
		struct stat st;
		int fd = openat(fs->root->fd, up, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return false;
		int e = fstatat(fd, "", &st, AT_EMPTY_PATH);
		close(fd);
		if (e != 0)
			return false;
		char key[48];
		snprintf(key, sizeof(key), "%lu:%lu", (unsigned long)st.st_dev,
		         (unsigned long)st.st_ino);
		if (!(d = g_hash_table_lookup(fs->disk_nodes, key)))
			return false; /* the kernel has no entry under it */
	}
	*parent = node_id(fs, d);
	*name = g_path_get_basename(rel);
	return true;
}
