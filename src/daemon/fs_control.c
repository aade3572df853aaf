/* The inspection view: .lockfs/status and .lockfs/PATH.lock (the same facts
 * are user.lockfs.* extended attributes on lock files: fs_xattr.c).  Never
 * part of a lock file's content: tools read their own bytes back
 * (legacy-clients.md §7.3). */
#include "fs_control.h"
#include "fs_flock.h"
#include "fs_locks.h"
#include "fs_nodes.h"
#include "fs_remote.h"
#include "holder.h"
#include "metrics.h"
#include "view_format.h"

#include <errno.h>
#include <string.h>

/* What is known of KEY: from this mount's own dentry when it holds the lock
 * (freshest heartbeat), else from the backend when others may hold it.
 * Called with fs->mu, which is let go while the backend answers. */
static int info_for(lfs *fs, const char *key, lockfs_lock_info *out)
{
	lfs_dentry *d = locks_find(fs, key);
	if (d) {
		locks_info_of(fs, d, out);
		return 0;
	}
	int r = -ENOENT;
	if (fs->shared) {
		pthread_mutex_unlock(&fs->mu);
		r = remote_get(fs, key, false, out);
		pthread_mutex_lock(&fs->mu);
	}
	/* Lost here lately, and nobody holds it now. */
	const lockfs_lock_info *lost = r == -ENOENT ? locks_lost_info(fs, key) : NULL;
	if (lost) {
		remote_info_copy(out, lost);
		r = 0;
	}
	return r;
}

static char *iso_time(int64_t us)
{
	g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(us / G_USEC_PER_SEC);
	return t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%SZ") : g_strdup("-");
}

static int64_t age_s(int64_t us)
{
	int64_t a = (lockfs_now_us() - us) / G_USEC_PER_SEC;
	return a < 0 ? 0 : a;
}

/* Every field the view shows of I, as text: the host, user and command are
 * another host's words, escaped where view_format.c writes them. */
static void view_of(lfs *fs, const lockfs_lock_info *i, lockfs_view *v)
{
	const lockfs_holder *h = &i->holder;
	memset(v, 0, sizeof(*v));
	lockfs_view_set(v, LOCKFS_VF_LOCK, i->key);
	/* A flock or POSIX lock a restart took back, kept for its holder's
	 * process until it exits (fs_flock.c), says so. */
	bool orphan = i->mine && i->state == LOCKFS_STATE_HELD && flock_orphan_key(fs, i->key);
	lockfs_view_set(v, LOCKFS_VF_STATE, orphan ? "orphaned" : lockfs_state_name(i->state));
	lockfs_view_set(v, LOCKFS_VF_FENCE, i->fence);
	lockfs_view_set(v, LOCKFS_VF_HOST, h->host ? h->host : "-");
	lockfs_view_setf(v, LOCKFS_VF_PID, "%" G_GINT64_FORMAT, h->pid);
	lockfs_view_setf(v, LOCKFS_VF_UID, "%u", h->uid);
	lockfs_view_setf(v, LOCKFS_VF_GID, "%u", h->gid);
	lockfs_view_set(v, LOCKFS_VF_USER, h->user ? h->user : "-");
	lockfs_view_set(v, LOCKFS_VF_COMMAND, h->command ? h->command : "");
	v->v[LOCKFS_VF_ACQUIRED] = iso_time(h->acquired_us);
	v->v[LOCKFS_VF_HEARTBEAT] = iso_time(h->heartbeat_us);
	lockfs_view_setf(v, LOCKFS_VF_AGE, "%" G_GINT64_FORMAT, age_s(h->acquired_us));
	lockfs_view_setf(v, LOCKFS_VF_HEARTBEAT_AGE, "%" G_GINT64_FORMAT, age_s(h->heartbeat_us));
	if (i->lease_left_ms >= 0)
		lockfs_view_setf(v, LOCKFS_VF_LEASE_LEFT_MS, "%" G_GINT64_FORMAT, i->lease_left_ms);
	lockfs_view_set(v, LOCKFS_VF_BACKEND, fs->be->name);
	/* Held through this mount: lockfsctl then knows the holder is on this
	 * host even when the mount's host identity is not the host name. */
	lockfs_view_set(v, LOCKFS_VF_MINE, i->mine ? "yes" : "no");
}

static void status_line(lfs *fs, const lockfs_lock_info *i, GString *out)
{
	lockfs_view v;
	view_of(fs, i, &v);
	lockfs_view_status_line(&v, out);
	lockfs_view_clear(&v);
}

static void lock_text(lfs *fs, const lockfs_lock_info *i, GString *out)
{
	lockfs_view v;
	view_of(fs, i, &v);
	lockfs_view_lock_text(&v, out);
	lockfs_view_clear(&v);
}

static int by_key(gconstpointer a, gconstpointer b)
{
	const lockfs_lock_info *x = *(lockfs_lock_info *const *)a,
	                       *y = *(lockfs_lock_info *const *)b;
	return strcmp(x->key, y->key);
}

struct held_under {
	const char *prefix;
	GPtrArray *out;
};

static void add_held_under(lfs *fs, lfs_dentry *d, void *user)
{
	struct held_under *h = user;
	if (!g_str_has_prefix(d->lease->key, h->prefix))
		return;
	lockfs_lock_info *info = g_new0(lockfs_lock_info, 1);
	locks_info_of(fs, d, info);
	g_ptr_array_add(h->out, info);
}

/* Every lock under PREFIX: this mount's from its dentries, others' from the
 * backend (with fs->mu let go meanwhile).  ERR (may be NULL): -EIO when the
 * backend could not list (then only this mount's locks are there). */
static GPtrArray *all_locks(lfs *fs, const char *prefix, int *err)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(remote_info_free);
	if (err)
		*err = 0;
	if (fs->shared) {
		pthread_mutex_unlock(&fs->mu);
		g_autoptr(GPtrArray) remote = remote_list(fs, prefix, err);
		pthread_mutex_lock(&fs->mu);
		for (guint i = 0; i < remote->len; i++) {
			lockfs_lock_info *info = remote->pdata[i];
			if ((locks_find(fs, info->key) != NULL))
				continue;
			remote->pdata[i] = NULL;
			g_ptr_array_add(out, info);
		}
	}
	struct held_under h = { prefix, out };
	locks_foreach(fs, add_held_under, &h);
	/* Locks lost here lately, where nobody holds the name now. */
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < out->len; i++)
		g_hash_table_add(seen, ((lockfs_lock_info *)out->pdata[i])->key);
	locks_lost_list(fs, prefix, seen, out);
	g_ptr_array_sort(out, by_key);
	return out;
}

struct held_gauges {
	metrics_gauges *g;
	int64_t mono, oldest;
};

static void add_held_gauges(lfs *fs, lfs_dentry *d, void *user)
{
	struct held_gauges *h = user;
	if (d->lost)
		return;
	h->g->locks_held++;
	if ((fs->be->flags & LOCKFS_BACKEND_LEASES) && h->mono - d->renewed_mono > h->oldest)
		h->oldest = h->mono - d->renewed_mono;
}

void control_metrics(lfs *fs, GString *out)
{
	metrics_gauges g = { .mountpoint = fs->mountpoint, .backend = fs->be->name };
	struct held_gauges h = { &g, lockfs_mono_us(), 0 };
	locks_foreach(fs, add_held_gauges, &h);
	g.renewal_age_s = h.oldest / 1e6;
	metrics_render(&g, out);
}

char *control_render(lfs *fs, lfs_node *n, size_t *len, int *err)
{
	GString *out = g_string_new(NULL);
	*err = 0;
	if (n->ctl_metrics) {
		control_metrics(fs, out);
	} else if (n->ctl_status) {
		g_autoptr(GPtrArray) infos = all_locks(fs, "", NULL);
		for (guint i = 0; i < infos->len; i++)
			status_line(fs, infos->pdata[i], out);
	} else if (n->ctl_path && *n->ctl_path && !n->ctl_break) {
		/* (.lockfs/break, written to, shows nothing: no backend call) */
		lockfs_lock_info info;
		int r = info_for(fs, n->ctl_path, &info);
		if (r == 0) {
			lock_text(fs, &info, out);
			lockfs_lock_info_clear(&info);
		} else if (r != -ENOENT) {
			*err = -EIO; /* not "nobody holds it": nobody could say */
		}
	}
	*len = out->len;
	return g_string_free(out, FALSE);
}

static lfs_node *control_node(lfs *fs, const char *path, mode_t mode)
{
	lfs_node *n = node_new(fs, NODE_CONTROL, mode, 0, 0);
	n->ctl_path = g_strdup(path);
	return n;
}

int control_lookup(lfs *fs, lfs_node *dir, const char *name, lfs_node **out)
{
	if (dir == fs->control && strcmp(name, LOCKFS_VIEW_STATUS) == 0) {
		*out = control_node(fs, "", S_IFREG | 0444);
		(*out)->ctl_status = true;
		return 0;
	}
	if (dir == fs->control && strcmp(name, LOCKFS_VIEW_METRICS) == 0) {
		*out = control_node(fs, "", S_IFREG | 0444);
		(*out)->ctl_metrics = true;
		return 0;
	}
	if (dir == fs->control && strcmp(name, LOCKFS_VIEW_BREAK) == 0) {
		/* Anyone may write a request; the daemon decides as unlink would. */
		*out = control_node(fs, "", S_IFREG | 0222);
		(*out)->ctl_break = true;
		return 0;
	}
	g_autofree char *key =
	        *dir->ctl_path ? g_strconcat(dir->ctl_path, "/", name, NULL) : g_strdup(name);
	lockfs_lock_info info;
	int r = name_is_lock(fs, name) ? info_for(fs, key, &info) : -ENOENT;
	if (r == 0) {
		lockfs_lock_info_clear(&info);
		*out = control_node(fs, key, S_IFREG | 0444);
		return 0;
	}
	/* A backend that could not answer leaves the name unknown, not free:
	 * EIO, as a lookup of the lock name itself answers. */
	if (r != -ENOENT)
		return -EIO;
	g_autofree char *prefix = g_strconcat(key, "/", NULL);
	g_autoptr(GPtrArray) under = all_locks(fs, prefix, &r);
	if (!under->len)
		return r ? -EIO : -ENOENT;
	*out = control_node(fs, key, S_IFDIR | 0555);
	return 0;
}

int control_readdir_names(lfs *fs, lfs_node *dir, GPtrArray *names, GArray *types)
{
	g_autofree char *prefix =
	        *dir->ctl_path ? g_strconcat(dir->ctl_path, "/", NULL) : g_strdup("");
	g_autoptr(GPtrArray) infos = all_locks(fs, prefix, NULL);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	unsigned reg = S_IFREG >> 12, dirt = S_IFDIR >> 12;
	if (dir == fs->control) {
		g_ptr_array_add(names, g_strdup(LOCKFS_VIEW_STATUS));
		g_array_append_val(types, reg);
		g_ptr_array_add(names, g_strdup(LOCKFS_VIEW_BREAK));
		g_array_append_val(types, reg);
		g_ptr_array_add(names, g_strdup(LOCKFS_VIEW_METRICS));
		g_array_append_val(types, reg);
	}
	for (guint i = 0; i < infos->len; i++) {
		const char *rest = ((lockfs_lock_info *)infos->pdata[i])->key + strlen(prefix);
		const char *slash = strchr(rest, '/');
		char *name = slash ? g_strndup(rest, slash - rest) : g_strdup(rest);
		if (!g_hash_table_add(seen, name))
			continue;
		unsigned type = slash ? dirt : reg;
		g_ptr_array_add(names, g_strdup(name));
		g_array_append_val(types, type);
	}
	return 0;
}
