/* Invalidation of kernel caches for changes lockfs makes on its own (a stale
 * lock expired, a lock broken by request).  The kernel must not be told from
 * inside a request handler: it may hold the very locks the notification
 * needs.  So changes are queued and a thread of their own sends them. */
#include "fs.h"

static gpointer inval_main(gpointer data)
{
	lfs *fs = data;
	for (;;) {
		gpointer id = g_async_queue_pop(fs->inval);
		if (id == fs) /* stop */
			return NULL;
		/* -ENOENT: the kernel forgot the node already, nothing to do. */
		fuse_lowlevel_notify_inval_inode(fs->se, (fuse_ino_t)(uintptr_t)id, -1, 0);
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
	if (fs->inval_thread)
		g_async_queue_push(fs->inval, (gpointer)(uintptr_t)node_id(fs, n));
}

void inval_stop(lfs *fs)
{
	if (!fs->inval_thread)
		return;
	g_async_queue_push(fs->inval, fs);
	g_thread_join(fs->inval_thread);
	fs->inval_thread = NULL;
	g_async_queue_unref(fs->inval);
}
