/* Invalidation of kernel caches for changes lockfs makes on its own (a stale
 * lock expired, a lock broken by request).  The kernel must not be told from
 * inside a request handler that holds fs->mu, nor from one whose caller
 * holds inode locks the notification needs: such changes are queued and a
 * thread of their own sends them. */
#include "fs.h"

#include <string.h>

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
