/* A restart keeps every lock: the locks taken back from the record of this
 * mount's locks in state_dir (fs_record.c) when lockfs starts again, before
 * any request is answered.
 *
 * A lock belongs to the program that took it, not to the lockfs process:
 * stopping lockfs lets go of nothing (main.c), the backend keeps each lease
 * until its ttl, and the next lockfs of the mount adopts it (backend.h,
 * "Restart") and shows the same name, holder record, fence, content, owner,
 * mode and times.  A lease that ran out meanwhile is declared lost. */
#include "fs_restart.h"
#include "fs_flock.h"
#include "fs_locks.h"
#include "fs_nodes.h"
#include "fs_record.h"
#include "fs_rules.h"
#include "holder.h"
#include "lockstate.h"
#include "log.h"
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static struct timespec ts_of(int64_t us)
{
	return (struct timespec){ .tv_sec = us / G_USEC_PER_SEC,
		                  .tv_nsec = (us % G_USEC_PER_SEC) * 1000 };
}

/* ---- taking locks back ---- */

/* The directory KEY's name lives in, made in memory where it is missing
 * (like the root), and *NAME its last component; NULL if a component is
 * not a directory. */
static lfs_node *dir_for(lfs *fs, const char *key, char **name)
{
	g_auto(GStrv) parts = g_strsplit(key, "/", -1);
	guint n = g_strv_length(parts);
	lfs_node *dir = fs->root;
	for (guint i = 0; i + 1 < n && dir; i++) {
		lfs_dentry *d = dentry_find(dir, parts[i]);
		lfs_node *next = d ? d->node : NULL;
		if (!next && dir->kind == NODE_DISK &&
		    node_lookup_disk(fs, dir, parts[i], &next) != 0)
			next = NULL;
		if (!next && dir->kind != NODE_DISK) {
			next = node_new(fs, NODE_MEM, fs->root->mode, fs->root->uid, fs->root->gid);
			dentry_add(fs, dir, parts[i], next);
		}
		dir = next && S_ISDIR(next->mode) ? next : NULL;
	}
	*name = g_strdup(parts[n - 1]);
	return dir;
}

/* Show REC, adopted as LEASE, as it was shown before (fs->mu held). */
static lfs_dentry *install(lfs *fs, const lockfs_lockrec *rec, lockfs_lease *lease,
                           int64_t sent_mono)
{
	const char *kind, *path;
	bool flock = rules_flock_key_parse(rec->key, &kind, &path);
	g_autofree char *name = NULL;
	lfs_node *dir = flock ? fs->flock_dir : dir_for(fs, rec->key, &name);
	if (!dir || (!flock && (!name_is_lock(fs, name) || dentry_find(dir, name))))
		return NULL;
	const lockfs_holder *h = &rec->holder;
	mode_t mode = h->mode ? h->mode : S_IFREG | 0644;
	lfs_node *n = node_new(fs, NODE_MEM, mode, h->uid, h->gid);
	if (rec->content_len && (S_ISREG(mode) || S_ISLNK(mode))) {
		n->data = g_memdup2(rec->content, rec->content_len + 1);
		n->data[rec->content_len] = '\0';
		n->size = n->cap = rec->content_len;
	}
	if (h->mtime_us)
		n->mtime = ts_of(h->mtime_us);
	if (h->atime_us)
		n->atime = ts_of(h->atime_us);
	if (h->ctime_us)
		n->ctime = ts_of(h->ctime_us);
	lfs_dentry *d = dentry_add(fs, dir, flock ? rec->key : name, n);
	int64_t now = lockfs_now_us(), mono = lockfs_mono_us();
	d->lease = lease;
	lockfs_holder_copy(&d->holder, h);
	d->holder_ppid = (pid_t)rec->ppid;
	d->holder_start = rec->start;
	d->token = g_strdup(rec->token);
	d->heartbeat_us = h->heartbeat_us;
	d->heartbeat_boot = mono - MAX(now - h->heartbeat_us, 0);
	d->hb_sent_mono = mono;
	d->granted_mono = mono - MAX(now - h->acquired_us, 0);
	d->renewed_mono = sent_mono;
	d->serial = ++fs->next_serial;
	/* Confirmed again where the backend confirms (the record may have
	 * been written before the confirmation was). */
	d->fence_final = !fs->be->confirm;
	locks_index(fs, d);
	return d;
}

typedef struct {
	guint taken, lost, left, refused;
} reclaim_count;

/* REC could not be taken back (WHY): its lease ran out, it was broken, or
 * the backend refused the record. */
static void reclaim_lost(lfs *fs, const lockfs_lockrec *rec, const char *why)
{
	locks_note_lost(fs, rec->key, &rec->holder, rec->fence, (pid_t)rec->ppid, why);
}

/* One record's adoption, made by a worker without fs->mu. */
typedef struct {
	const lockfs_lockrec *rec;
	lockfs_lease *lease;
	int r;
	int64_t sent; /* when the adopt that answered was sent */
} adoption;

typedef struct {
	lfs *fs;
	int64_t deadline;
} adopt_ctx;

/* Adopt one record, asked again while the backend does not answer until
 * the deadline.  Backends are thread-safe: the workers run side by side, so
 * 10,000 locks come back in about as many round trips as workers allow. */
static void adopt_job(gpointer data, gpointer user)
{
	adoption *a = data;
	adopt_ctx *ctx = user;
	lockfs_backend *be = ctx->fs->be;
	const lockfs_lockrec *rec = a->rec;
	if (!be->adopt) {
		a->r = -ENOTSUP;
		return;
	}
	for (;;) {
		a->sent = lockfs_mono_us();
		a->r = be->adopt(be, rec->key, rec->fence, rec->token ? rec->token : "",
		                 &rec->holder, rec->content, rec->content_len, &a->lease);
		if (a->r != -EIO || lockfs_mono_us() >= ctx->deadline)
			return;
		g_usleep(200 * 1000);
	}
}

#define ADOPT_WORKERS 16

/* Adopt every record of LOCKS, without fs->mu: an array of adoptions. */
static adoption *adopt_all(lfs *fs, GPtrArray *locks, int64_t deadline)
{
	adoption *all = g_new0(adoption, locks->len);
	adopt_ctx ctx = { fs, deadline };
	GThreadPool *pool = locks->len > 1
	                            ? g_thread_pool_new(adopt_job, &ctx, ADOPT_WORKERS, TRUE, NULL)
	                            : NULL;
	for (guint i = 0; i < locks->len; i++) {
		all[i].rec = locks->pdata[i];
		if (pool)
			g_thread_pool_push(pool, &all[i], NULL);
		else
			adopt_job(&all[i], &ctx);
	}
	if (pool)
		g_thread_pool_free(pool, FALSE, TRUE);
	return all;
}

/* Show what A took back, or say why not (fs->mu held). */
static void reclaim_one(lfs *fs, adoption *a, reclaim_count *c)
{
	const lockfs_lockrec *rec = a->rec;
	int r = a->r;
	lockfs_lease *lease = a->lease;
	lfs_dentry *d = r == 0 ? install(fs, rec, lease, a->sent) : NULL;
	if (d) {
		c->taken++;
		if (d->dir == fs->flock_dir)
			flock_adopt_orphan(fs, d);
		return;
	}
	if (r == 0) { /* a name this mount cannot show: let it go as unlinked */
		lockfs_log(G_LOG_LEVEL_WARNING, rec->key,
		           "cannot show %s again (its directory is gone or not a directory); "
		           "released it",
		           rec->key);
		UNLOCKED(fs, fs->be->release(fs->be, lease));
		fs->be->lease_free(fs->be, lease);
		c->refused++;
	} else if (r == -ESTALE || r == -ENOENT) {
		reclaim_lost(fs, rec, "its lease ran out or was broken while lockfs was stopped");
		c->lost++;
	} else if (r == -EIO) {
		reclaim_lost(fs, rec, "the backend did not answer within ttl of the restart");
		c->left++;
	} else {
		lockfs_log(G_LOG_LEVEL_WARNING, rec->key,
		           "the record of %s in %s is not one the %s backend wrote (%s); not "
		           "taken back: it runs out with its lease",
		           rec->key, record_file(fs), fs->be->name, g_strerror(-r));
		c->refused++;
	}
}

/* Resume the recorded session: false when every lock of it is lost. */
static bool resume_session(lfs *fs, const char *token, int64_t deadline)
{
	if (!token || !fs->be->resume)
		return true;
	int r;
	while ((r = UNLOCKED(fs, fs->be->resume(fs->be, token))) == -EIO &&
	       lockfs_mono_us() < deadline)
		UNLOCKED(fs, (g_usleep(200 * 1000), 0));
	if (r == 0) {
		record_session_resumed(fs, token);
		return true;
	}
	lockfs_log(G_LOG_LEVEL_WARNING, NULL,
	           "cannot carry on the %s session of the previous lockfs of %s: %s; its locks "
	           "are lost",
	           fs->be->name, fs->mountpoint,
	           r == -ESTALE ? "it ran out while lockfs was stopped" : g_strerror(-r));
	return false;
}

void restart_reclaim(lfs *fs, lockfs_lockstate_found *found)
{
	GPtrArray *locks = found->locks;
	if (locks && locks->len && found->other_boot) {
		lockfs_log(G_LOG_LEVEL_INFO, NULL,
		           "%u lock%s recorded in %s before this host restarted: their holders are "
		           "gone; not taken back (they run out with their leases)",
		           locks->len, locks->len == 1 ? "" : "s", record_file(fs));
		locks = NULL;
	}
	if (!locks || !locks->len) { /* the record starts anew, with this lockfs's header */
		pthread_mutex_lock(&fs->mu);
		record_start_anew(fs);
		pthread_mutex_unlock(&fs->mu);
		return;
	}
	int64_t start = lockfs_mono_us();
	/* No lease outlives ttl without a renewal: past it, nothing is left. */
	int64_t deadline = start + MAX(fs->set->ttl_ms, 1000) * 1000;
	reclaim_count c = { 0 };
	pthread_mutex_lock(&fs->mu);
	if (!resume_session(fs, found->session, deadline)) {
		for (guint i = 0; i < locks->len; i++)
			reclaim_lost(fs, locks->pdata[i],
			             "its session ran out while lockfs was stopped");
		c.lost = locks->len;
	} else {
		pthread_mutex_unlock(&fs->mu);
		g_autofree adoption *all = adopt_all(fs, locks, deadline);
		pthread_mutex_lock(&fs->mu);
		for (guint i = 0; i < locks->len; i++)
			reclaim_one(fs, &all[i], &c);
	}
	/* The record from here on: what was taken back, under new serials. */
	record_rewrite(fs);
	pthread_mutex_unlock(&fs->mu);
	lockfs_log(c.lost || c.left || c.refused ? G_LOG_LEVEL_WARNING : G_LOG_LEVEL_INFO, NULL,
	           "took back %u lock%s of the previous lockfs of %s in %.3f s (%u lost, %u not "
	           "answered, %u refused)",
	           c.taken, c.taken == 1 ? "" : "s", fs->mountpoint,
	           (lockfs_mono_us() - start) / 1e6, c.lost, c.left, c.refused);
}

/* ---- the gap ----
 * While no lockfs is mounted (between one lockfs and the next), a tool
 * that takes X.lock creates a real file in the directory underneath, which
 * the new mount then hides: a holder nobody else would see.  Such files are
 * found before the mount (restart_gap_find), and once the previous
 * lockfs's locks are back (restart_gap_close) each is taken in the backend
 * for the file's owner and removed from the disk, or, where another holder
 * has the name, reported as a conflict: never ignored. */

#define GAP_DEPTH 4
#define GAP_MAX 10000

struct restart_gap_file {
	char *key;
	struct stat st;
	char *content; /* a regular file's first bytes, a symlink's target */
	size_t content_len;
};

static void gap_file_free(gpointer p)
{
	restart_gap_file *g = p;
	g_free(g->key);
	g_free(g->content);
	g_free(g);
}

static void gap_content(int dirfd, const char *name, restart_gap_file *g)
{
	char buf[LOCKFS_CONTENT_MAX];
	ssize_t n = -1;
	if (S_ISLNK(g->st.st_mode)) {
		n = readlinkat(dirfd, name, buf, sizeof(buf));
	} else if (S_ISREG(g->st.st_mode)) {
		int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf));
			close(fd);
		}
	}
	if (n > 0) {
		g->content = g_memdup2(buf, (gsize)n);
		g->content_len = (size_t)n;
	}
}

static void gap_scan(int dirfd, const char *prefix, const char *suffix, int depth, GPtrArray *out)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	size_t slen = strlen(suffix);
	while ((de = readdir(dp)) && out->len < GAP_MAX) {
		const char *name = de->d_name;
		size_t len = strlen(name);
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		g_autofree char *key = g_strconcat(prefix, name, NULL);
		if (len > slen && !memcmp(name + len - slen, suffix, slen)) {
			restart_gap_file *g = g_new0(restart_gap_file, 1);
			g->key = g_steal_pointer(&key);
			g->st = st;
			gap_content(dirfd, name, g);
			g_ptr_array_add(out, g);
		} else if (S_ISDIR(st.st_mode) && depth < GAP_DEPTH) {
			int sub =
			        openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				g_autofree char *p = g_strconcat(key, "/", NULL);
				gap_scan(sub, p, suffix, depth + 1, out);
				close(sub);
			}
		}
	}
	closedir(dp);
}

GPtrArray *restart_gap_find(int under_fd, const char *suffix)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(gap_file_free);
	if (*suffix)
		gap_scan(under_fd, "", suffix, 0, out);
	return out;
}

bool restart_gap_only(int under_fd, GPtrArray *found)
{
	int fd = openat(under_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return true;
	}
	bool only = true;
	struct dirent *de;
	while (only && (de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		only = false;
		for (guint i = 0; i < found->len && !only; i++)
			only = !strcmp(((restart_gap_file *)found->pdata[i])->key, de->d_name);
	}
	closedir(dp);
	return only;
}

/* A lock name found on the disk cannot be taken: say so everywhere. */
static void gap_conflict(lfs *fs, const restart_gap_file *g, const char *why)
{
	lockfs_holder h = { .host = (char *)lockfs_holder_host(),
		            .uid = g->st.st_uid,
		            .gid = g->st.st_gid,
		            .command = (char *)"(unknown)" };
	lockfs_log_event(G_LOG_LEVEL_WARNING, "conflict", g->key, &h, NULL, NULL,
	                 "%s was created on the disk under %s (uid %u, %s) while no lockfs was "
	                 "mounted there, and %s: its creator may believe it holds the lock; "
	                 "the file is left underneath",
	                 g->key, fs->mountpoint, (unsigned)g->st.st_uid,
	                 S_ISDIR(g->st.st_mode) ? "a directory" : "a file", why);
	lockfs_notify("conflict", g->key, &h, NULL, NULL);
}

/* Take G in the backend for its owner; true when it is held here now. */
static bool gap_take(lfs *fs, const restart_gap_file *g)
{
	g_autofree char *name = NULL;
	lfs_node *dir = dir_for(fs, g->key, &name);
	if (!dir)
		return false;
	lfs_node *n = node_new(fs, NODE_MEM, g->st.st_mode & (S_IFMT | 07777), g->st.st_uid,
	                       g->st.st_gid);
	if (g->content_len && !S_ISDIR(g->st.st_mode)) {
		n->data = g_malloc(g->content_len + 1);
		memcpy(n->data, g->content, g->content_len);
		n->data[g->content_len] = '\0';
		n->size = n->cap = g->content_len;
	}
	n->mtime = g->st.st_mtim;
	n->atime = g->st.st_atim;
	struct lfs_caller who = { .pid = 0, .uid = g->st.st_uid, .gid = g->st.st_gid };
	lfs_dentry *d = NULL;
	int r = locks_acquire(fs, dir, name, n, &who, &d);
	if (r) {
		node_maybe_free(fs, n);
		gap_conflict(fs, g,
		             r == -EEXIST ? "another holder has the name"
		                          : "the backend did not answer");
		return false;
	}
	lockfs_log(G_LOG_LEVEL_WARNING, g->key,
	           "%s was created on the disk under %s (uid %u) while no lockfs was mounted "
	           "there; taken for its owner and removed from the disk",
	           g->key, fs->mountpoint, (unsigned)g->st.st_uid);
	return true;
}

void restart_gap_close(lfs *fs, GPtrArray *found, int under_fd)
{
	pthread_mutex_lock(&fs->mu);
	for (guint i = 0; i < found->len; i++) {
		restart_gap_file *g = found->pdata[i];
		if (locks_find(fs, g->key)) {
			gap_conflict(fs, g, "this mount's holder held it through the restart");
			continue;
		}
		if (!gap_take(fs, g))
			continue;
		g_autofree char *dir = g_path_get_dirname(g->key);
		g_autofree char *base = g_path_get_basename(g->key);
		int dfd = strcmp(dir, ".") ? openat(under_fd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC)
		                           : dup(under_fd);
		if (dfd < 0 || unlinkat(dfd, base, S_ISDIR(g->st.st_mode) ? AT_REMOVEDIR : 0) != 0)
			lockfs_log(G_LOG_LEVEL_WARNING, g->key,
			           "cannot remove %s from the disk under the mount: %s", g->key,
			           g_strerror(errno));
		if (dfd >= 0)
			close(dfd);
	}
	pthread_mutex_unlock(&fs->mu);
}
