/* Breaks: a lock broken on purpose, by .lockfs/break, user.lockfs.break or
 * an unlink of a lock held through another mount, allowed as the caller's
 * unlink of it would be.  The rules applied are fs_rules.c's; the break
 * itself is fs_locks.c's (locks_break, locks_break_remote). */
#include "fs_break.h"
#include "fs_caller.h"
#include "fs_inval.h"
#include "fs_locks.h"
#include "fs_nodes.h"
#include "fs_remote.h"
#include "fs_rules.h"
#include "log.h"
#include "view_format.h"

#include <errno.h>
#include <string.h>

/* Unlink of a lock held through another mount: the kernel allowed it by
 * directory permissions against the holder's uid, so it is a break. */
int break_unlink_remote(lfs *fs, lfs_node *dir, const char *name, const struct lfs_caller *c)
{
	if (!fs->shared)
		return -ENOENT;
	g_autofree char *key = node_key(fs, dir, name);
	lockfs_lock_info info;
	/* A lock this mount is taking is not another host's to break here. */
	if (!locks_wait_idle(fs, key)) /* as when the backend does not answer */
		return locks_lost_by(fs, key, c->uid) ? -ENOENT : -EIO;
	lfs_dentry *d = dentry_find(dir, name);
	if (d && d->lease)
		return locks_unlink(fs, d, c);
	/* A lock this mount lost (or let go, locks_unlink): an unlink here by its holder's uid is the
	 * holder's late release (the rm after its critical section), not a
	 * break of whoever holds the name now.  Breaking that lock on purpose
	 * goes through .lockfs/break or lockfsctl unlock. */
	if (locks_lost_by(fs, key, c->uid)) {
		lockfs_log(G_LOG_LEVEL_INFO, key,
		           "pid %d removed %s, whose lock (fence %s) this mount lost or let go; "
		           "nothing deleted, ENOENT",
		           c->pid, key, locks_late_info(fs, key)->fence);
		return -ENOENT;
	}
	pthread_mutex_unlock(&fs->mu);
	int r = remote_get(fs, key, true, &info);
	pthread_mutex_lock(&fs->mu);
	if (r)
		return r == -ENOENT ? -ENOENT : -EIO;
	d = dentry_find(dir, name);
	if (d && d->lease) { /* taken here meanwhile: not the lock looked at */
		lockfs_lock_info_clear(&info);
		return -ENOENT;
	}
	/* The process found the name free moments ago and has not tried to
	 * take it since: it has never seen this lock, so its unlink is no
	 * judgement of it (liblockfile calls a lock whose stat() fails
	 * invalid and unlinks the name), as for a lock taken here
	 * (locks_unseen_by). */
	const char *unseen = locks_saw_free_lately(fs, c->pid, key);
	if (unseen) {
		lockfs_log(G_LOG_LEVEL_INFO, key,
		           "pid %d removed %s %s; the lock held through host %s "
		           "(fence %s) is left alone, ENOENT",
		           c->pid, key, unseen, info.holder.host ? info.holder.host : "-",
		           info.fence);
		lockfs_lock_info_clear(&info);
		return -ENOENT;
	}
	r = locks_break_remote(fs, key, info.fence, c);
	lockfs_lock_info_clear(&info);
	return r;
}

/* Break D for the caller, as an unlink by it would be allowed, and always as
 * a break (logged, notified) even when the caller shares the holder's uid.
 * FENCE, when given, must still be the holder's: the lock did not change
 * hands since the caller looked. */
int break_for(lfs *fs, fuse_req_t req, lfs_dentry *d, const char *fence, fuse_ino_t *parent,
              char **name)
{
	struct lfs_caller c = caller_of(req);
	if (!d || !d->lease)
		return -ENOENT;
	if (fence && lockfs_fence_cmp(fence, d->lease->fence) != 0)
		return -ESTALE;
	if (!caller_may_delete(fs, req, d->dir, d->node->uid))
		return -EPERM;
	lfs_node *n = d->node;
	if (S_ISDIR(n->mode) && n->children && g_hash_table_size(n->children))
		return -ENOTEMPTY;
	*parent = node_id(fs, d->dir);
	*name = g_strdup(d->name);
	return locks_break(fs, d, &c, fence);
}

/* The directory KEY's name is in, walked from the root through the names
 * this mount knows, or NULL. */
static lfs_node *dir_of_key(lfs *fs, const char *key)
{
	g_auto(GStrv) parts = g_strsplit(key, "/", -1);
	lfs_node *dir = fs->root;
	for (char **p = parts; dir && p[0] && p[1]; p++) {
		lfs_dentry *d = dentry_find(dir, *p);
		dir = d && S_ISDIR(d->node->mode) ? d->node : NULL;
	}
	return dir;
}

/* Break KEY, held through another mount, for the caller: allowed as an
 * unlink of it would be (the directory's permissions against the holder's
 * uid); FENCE, when given, must be the holder's.  Only the fence seen here
 * is broken, so a lock that changed hands meanwhile is left alone. */
int break_remote_for(lfs *fs, fuse_req_t req, const char *key, const char *fence)
{
	if (!fs->shared)
		return -ENOENT;
	struct lfs_caller c = caller_of(req);
	lockfs_lock_info info;
	pthread_mutex_unlock(&fs->mu);
	int r = remote_get(fs, key, true, &info);
	pthread_mutex_lock(&fs->mu);
	if (r)
		return r == -ENOENT ? -ENOENT : -EIO;
	if (locks_find(fs, key))
		r = -ENOENT; /* taken here meanwhile: not the lock the caller meant */
	else if (fence && lockfs_fence_cmp(fence, info.fence) != 0)
		r = -ESTALE;
	else if (!caller_may_delete(fs, req, dir_of_key(fs, key), info.holder.uid))
		r = -EPERM;
	else if (!info.fence[0])
		r = -ENOENT; /* no holder record: nothing names what to break */
	else
		r = locks_break_remote(fs, key, info.fence, &c);
	lockfs_lock_info_clear(&info);
	return r;
}

/* A write to .lockfs/break: "KEY [FENCE]\n", KEY escaped as in status. */
int break_request(lfs *fs, fuse_req_t req, const char *buf, size_t size)
{
	char *key, *fence, *bname = NULL;
	fuse_ino_t parent = 0;
	if (!lockfs_view_parse_break(buf, size, &key, &fence))
		return -EINVAL;
	lfs_dentry *d = locks_find(fs, key);
	if (!d && fs->shared) {
		int r = break_remote_for(fs, req, key, fence);
		g_free(key);
		g_free(fence);
		return r;
	}
	int r = break_for(fs, req, d, fence, &parent, &bname);
	if (!r) {
		/* Before the writer hears back, so it never sees the old name:
		 * the writer holds no lock of that directory. */
		pthread_mutex_unlock(&fs->mu);
		inval_entry_now(fs, parent, bname);
		pthread_mutex_lock(&fs->mu);
	}
	g_free(bname);
	g_free(key);
	g_free(fence);
	return r;
}
