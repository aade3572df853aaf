/* Lock names: acquisition, release, breaks, heartbeats and staleness.  The
 * only place the filesystem talks to the backend about holding locks. */
#include "fs.h"
#include "holder.h"
#include "log.h"

#include <errno.h>
#include <string.h>

static void describe(const lockfs_holder *h, GString *out)
{
	g_string_append_printf(out, "%s:%" G_GINT64_FORMAT " (user %s, uid %u)",
	                       h->host ? h->host : "?", h->pid, h->user ? h->user : "?", h->uid);
}

static void log_break(const char *what, const char *key, const lockfs_lock_info *prev,
                      const lockfs_holder *breaker)
{
	g_autoptr(GString) s = g_string_new(NULL);
	describe(&prev->holder, s);
	int64_t age = (lockfs_now_us() - prev->holder.heartbeat_us) / G_USEC_PER_SEC;
	g_autoptr(GString) b = g_string_new(NULL);
	if (breaker)
		describe(breaker, b);
	else
		g_string_append(b, "lockfs");
	lockfs_log(G_LOG_LEVEL_WARNING, key,
	           "%s %s: held by %s with fence %s, last heartbeat %" G_GINT64_FORMAT
	           " s ago; broken by %s",
	           what, key, s->str, prev->fence, age, b->str);
	lockfs_notify("break", key, &prev->holder, breaker, prev->fence);
}

static int backend_errno(int r)
{
	switch (r) {
	case 0:
	case -EEXIST:
	case -ENOENT:
	case -ESTALE:
	case -EINVAL:
	case -ENAMETOOLONG:
		return r;
	default:
		return -EIO;
	}
}

int locks_acquire(lfs *fs, lfs_node *dir, const char *name, lfs_node *node,
                  const struct lfs_caller *who, lfs_dentry **out)
{
	int64_t now = lockfs_now_us();
	g_autofree char *key = node_key(dir, name);
	lockfs_holder holder;
	lockfs_holder_fill(&holder, who->pid, who->uid, who->gid, node->mode, now);
	lockfs_lease *lease = NULL;
	lockfs_acquire_result res;
	int r = backend_errno(fs->be->acquire(fs->be, key, &holder, &lease, &res));
	if (r) {
		if (r == -EIO)
			lockfs_log(G_LOG_LEVEL_WARNING, key,
			           "cannot take %s: the %s backend failed; answered EIO", key,
			           fs->be->name);
		lockfs_holder_clear(&holder);
		return r;
	}
	if (res.broke) {
		log_break("broke stale lock", key, &res.previous, &holder);
		lockfs_lock_info_clear(&res.previous);
	}
	lfs_dentry *d = dentry_add(fs, dir, name, node);
	d->lease = lease;
	d->holder = holder;
	d->heartbeat_us = now;
	d->hb_sent_mono = lockfs_mono_us();
	node->lost = false;
	g_hash_table_insert(fs->held, lease->key, d);
	lockfs_log(G_LOG_LEVEL_DEBUG, key, "took %s for pid %d uid %u, fence %s", key, who->pid,
	           who->uid, lease->fence);
	if (out)
		*out = d;
	return 0;
}

/* Remove a lock name that was broken: the node loses its lock when that
 * was its last lock name, so writes through open descriptors fail.  (Marked
 * first: removing the name may free the node.) */
static void remove_broken(lfs *fs, lfs_dentry *d)
{
	if (d->node->lock_names <= 1)
		d->node->lost = true;
	dentry_remove(fs, d);
}

int locks_unlink(lfs *fs, lfs_dentry *d, const struct lfs_caller *who)
{
	if (!d->lease) { /* a lost lock still shown: forget it */
		dentry_remove(fs, d);
		return -ENOENT;
	}
	if (who->uid == d->holder.uid) {
		const char *key = d->lease->key;
		int r = backend_errno(fs->be->release(fs->be, d->lease));
		if (r == -EIO) {
			lockfs_log(G_LOG_LEVEL_WARNING, key,
			           "cannot release %s: the %s backend failed; the lock is kept",
			           key, fs->be->name);
			return -EIO;
		}
		if (r)
			lockfs_log(G_LOG_LEVEL_WARNING, key,
			           "%s was no longer held by this mount when released; nothing "
			           "deleted",
			           key);
		dentry_remove(fs, d);
		return r ? -ENOENT : 0;
	}
	/* Someone else: the kernel has checked directory permissions (sticky bit
	 * included), so this is a break. */
	return locks_break(fs, d, who);
}

int locks_break(lfs *fs, lfs_dentry *d, const struct lfs_caller *who)
{
	const char *key = d->lease->key;
	lockfs_holder breaker;
	lockfs_holder_fill(&breaker, who->pid, who->uid, who->gid, 0, lockfs_now_us());
	lockfs_lock_info prev;
	int r = backend_errno(fs->be->break_lock(fs->be, key, d->lease->fence, &breaker, &prev));
	if (r == -EIO) {
		lockfs_holder_clear(&breaker);
		return -EIO;
	}
	if (r == 0) {
		log_break("lock broken:", key, &prev, &breaker);
		lockfs_lock_info_clear(&prev);
	}
	lockfs_holder_clear(&breaker);
	remove_broken(fs, d);
	return r ? -ENOENT : 0;
}

bool locks_expire_if_stale(lfs *fs, lfs_dentry *d)
{
	if (!fs->stale_after_us || !d->lease)
		return false;
	if (lockfs_now_us() - d->heartbeat_us <= fs->stale_after_us)
		return false;
	const char *key = d->lease->key;
	lockfs_lock_info prev;
	int r = fs->be->break_lock(fs->be, key, d->lease->fence, NULL, &prev);
	if (r == 0) {
		log_break("expired stale lock", key, &prev, NULL);
		lockfs_lock_info_clear(&prev);
	} else if (r != -ENOENT) {
		return false; /* backend unreachable: leave it */
	}
	inval_node(fs, d->node);
	remove_broken(fs, d);
	return true;
}

int locks_check_writable(lfs *fs, lfs_node *n)
{
	(void)fs;
	return n->lost ? -ESTALE : 0;
}

int locks_heartbeat(lfs *fs, lfs_node *n, const struct lfs_caller *who, bool content_changed)
{
	if (n->lost)
		return -ESTALE;
	if (!n->locks)
		return 0;
	int64_t now = lockfs_now_us(), mono = lockfs_mono_us();
	for (lfs_dentry *d = n->locks; d; d = d->next_lock) {
		if (who->uid != 0 && who->uid != d->holder.uid)
			return -EPERM;
	}
	for (lfs_dentry *d = n->locks; d; d = d->next_lock) {
		if (!d->lease)
			continue;
		d->heartbeat_us = now;
		if (!content_changed && mono - d->hb_sent_mono < fs->heartbeat_min_us)
			continue;
		const void *content = NULL;
		size_t len = 0;
		if (content_changed && n->kind == NODE_MEM && S_ISREG(n->mode)) {
			content = n->data ? n->data : "";
			len = MIN(n->size, (size_t)LOCKFS_CONTENT_MAX);
		}
		int r = backend_errno(fs->be->heartbeat(fs->be, d->lease, now, content, len));
		if (r == -ESTALE || r == -ENOENT) {
			const char *key = d->lease->key;
			lockfs_log(G_LOG_LEVEL_WARNING, key, "lost %s: the backend no longer has it",
			           key);
			n->lost = true;
			return -ESTALE;
		}
		if (r == 0)
			d->hb_sent_mono = mono;
	}
	return 0;
}

void locks_release_all(lfs *fs)
{
	GList *ds = g_hash_table_get_values(fs->held);
	guint n = 0;
	for (GList *l = ds; l; l = l->next) {
		lfs_dentry *d = l->data;
		if (fs->be->release(fs->be, d->lease) == 0)
			n++;
		remove_broken(fs, d);
	}
	g_list_free(ds);
	if (n)
		lockfs_log(G_LOG_LEVEL_INFO, NULL, "released %u lock%s at unmount", n,
		           n == 1 ? "" : "s");
}
