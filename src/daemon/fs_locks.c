/* Lock names: acquisition, release, breaks, heartbeats, staleness and lease
 * loss.  The only place the filesystem asks the backend to change a lock.
 *
 * Backend calls may wait on the network, so they are made without fs->mu.
 * Instead the key is *claimed*: every change to one lock (take, release,
 * break, heartbeat, renew) holds its key's claim, so they happen one at a
 * time per lock while the rest of the filesystem goes on.  A claimed
 * dentry cannot be removed by anyone else, so it stays valid across the
 * unlocked call. */
#include "fs_locks.h"
#include "fs_inval.h"
#include "fs_nodes.h"
#include "fs_record.h"
#include "fs_remote.h"
#include "fs_rules.h"
#include "holder.h"
#include "lockstate.h"
#include "log.h"
#include "metrics.h"
#include "view_format.h"

#include <errno.h>
#include <string.h>
#include <time.h>

void locks_claim(lfs *fs, const char *key)
{
	while (g_hash_table_contains(fs->busy, key))
		pthread_cond_wait(&fs->cond, &fs->mu);
	g_hash_table_add(fs->busy, g_strdup(key));
}

/* How long a request waits for another thread's claim.  Each claim covers a
 * few backend calls, each bounded by network_timeout; but the wait has no
 * order: claimants that come later may take the key first (the condition
 * wakes every waiter and the fastest wins), so a key kept busy by a stream
 * of calls -- tools retrying a contended lock -- could hold a waiter for
 * ever.  Past this the request answers EIO. */
static int64_t claim_wait_us(lfs *fs)
{
	return MAX(3 * fs->set->network_timeout_ms, (int64_t)1000) * 1000;
}

/* Wait on fs->cond (CLOCK_MONOTONIC, lfs_new) until DEADLINE; false then. */
static bool wait_until(lfs *fs, int64_t deadline_mono_us)
{
	int64_t left = deadline_mono_us - lockfs_mono_us();
	if (left <= 0)
		return false;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t ns = ts.tv_nsec + (left % G_USEC_PER_SEC) * 1000;
	ts.tv_sec += left / G_USEC_PER_SEC + ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	pthread_cond_timedwait(&fs->cond, &fs->mu, &ts);
	return true;
}

bool locks_key_under(GHashTable *keys, const char *prefix)
{
	GHashTableIter it;
	gpointer k;
	g_hash_table_iter_init(&it, keys);
	while (g_hash_table_iter_next(&it, &k, NULL))
		if (g_str_has_prefix(k, prefix))
			return true;
	return false;
}

/* Wait while KEY (or, UNDER, a key under it) is claimed, until the bound;
 * false, logged, when it passed. */
static bool wait_idle(lfs *fs, const char *key, bool under)
{
	int64_t deadline = lockfs_mono_us() + claim_wait_us(fs);
	while (under ? locks_key_under(fs->busy, key) : g_hash_table_contains(fs->busy, key))
		if (!wait_until(fs, deadline)) {
			lockfs_log(G_LOG_LEVEL_WARNING, under ? NULL : key,
			           "%s: %s still runs after %" G_GINT64_FORMAT " ms; %s", key,
			           under ? "a call on a lock in it" : "another call on it",
			           claim_wait_us(fs) / 1000,
			           under ? "the directory is treated as holding locks"
			                 : "this one answers EIO");
			return false;
		}
	return true;
}

bool locks_wait_idle(lfs *fs, const char *key)
{
	return wait_idle(fs, key, false);
}

bool locks_wait_idle_under(lfs *fs, const char *prefix)
{
	return wait_idle(fs, prefix, true);
}

bool locks_claim_bounded(lfs *fs, const char *key)
{
	if (!locks_wait_idle(fs, key))
		return false;
	g_hash_table_add(fs->busy, g_strdup(key));
	return true;
}

void locks_unclaim(lfs *fs, const char *key)
{
	g_hash_table_remove(fs->busy, key);
	pthread_cond_broadcast(&fs->cond);
}

/* Claim D's key.  Waiting for the claim lets go of fs->mu, and the thread
 * that held it may have removed D (two tools breaking one stale lock, a
 * lookup expiring it): D is looked up again by key and grant serial, which
 * no later holder shares (the fence may still change: see locks_confirm).
 * Returns the same dentry, or NULL (then unclaimed) when it is gone
 * (*ERR -ENOENT) or the claim was waited for too long (*ERR -EIO). */
static lfs_dentry *claim_dentry(lfs *fs, lfs_dentry *d, const char *key, int *err)
{
	uint64_t serial = d->serial;
	*err = -EIO;
	if (!locks_claim_bounded(fs, key))
		return NULL;
	*err = -ENOENT;
	lfs_dentry *now = g_hash_table_lookup(fs->held, key);
	if (!now || now->serial != serial) {
		locks_unclaim(fs, key);
		return NULL;
	}
	return now;
}

/* "HOST:PID (user NAME, uid N)", without printf: every audit line has one. */
static void describe(const lockfs_holder *h, GString *out)
{
	g_string_append(out, h->host ? h->host : "?");
	g_string_append_c(out, ':');
	lockfs_append_i64(out, h->pid);
	g_string_append(out, " (user ");
	g_string_append(out, h->user ? h->user : "?");
	g_string_append(out, ", uid ");
	lockfs_append_u64(out, h->uid);
	g_string_append_c(out, ')');
}

/* STALE: broken for staleness (by lockfs, or by an acquisition), not at a
 * user's request. */
static void log_break(const char *what, const char *key, const lockfs_lock_info *prev,
                      const lockfs_holder *breaker, bool stale)
{
	metrics_count(stale ? M_BREAK_STALE : M_BREAK_REQUEST);
	g_autoptr(GString) s = g_string_new(NULL);
	describe(&prev->holder, s);
	int64_t age = (lockfs_now_us() - prev->holder.heartbeat_us) / G_USEC_PER_SEC;
	g_autoptr(GString) b = g_string_new(NULL);
	if (breaker)
		describe(breaker, b);
	else
		g_string_append(b, "lockfs");
	lockfs_log_event(G_LOG_LEVEL_WARNING, stale ? "stale" : "break", key, &prev->holder,
	                 breaker, prev->fence,
	                 "%s %s: held by %s with fence %s, last heartbeat %" G_GINT64_FORMAT
	                 " s ago; broken by %s",
	                 what, key, s->str, prev->fence, age, b->str);
	lockfs_notify("break", key, &prev->holder, breaker, prev->fence);
}

/* How a release came about, for its audit line: BY, the process that
 * unlinked KEY (or let go of its flock), a close, or 0 (at unmount). */
static void audit_release_how(GString *m, const char *key, pid_t by)
{
	const char *kind, *path;
	bool flock = rules_flock_key_parse(key, &kind, &path);
	if (by > 0) {
		g_string_append(m, flock ? "; let go by pid " : "; unlinked by pid ");
		lockfs_append_i64(m, by);
	} else if (by == LOCKS_BY_CLOSE && flock && g_str_has_prefix(kind, "posix")) {
		g_string_append(m, "; at a close of its file");
	} else {
		g_string_append(m, by == LOCKS_BY_CLOSE ? "; at the last close of its file"
		                                        : "; at unmount");
	}
}

/* The audit trail's line for D's grant or release (audit=yes, info).  BY,
 * for a release: the process that unlinked it, or 0 (at unmount). */
static void log_audit(lfs *fs, lfs_dentry *d, bool grant, pid_t by)
{
	if (!fs->set->audit || !lockfs_log_enabled(G_LOG_LEVEL_INFO))
		return;
	const char *key = d->lease->key, *fence = d->lease->fence;
	/* The line is made here, without printf (it was a third of what a
	 * lock cycle cost the daemon): "granted KEY to HOLDER, fence F" or
	 * "released KEY, fence F: held by HOLDER[; how]". */
	g_autoptr(GString) m = g_string_sized_new(160);
	g_string_append(m, grant ? "granted " : "released ");
	g_string_append(m, key);
	if (grant) {
		g_string_append(m, " to ");
		describe(&d->holder, m);
		g_string_append(m, ", fence ");
		g_string_append(m, fence);
	} else {
		g_string_append(m, ", fence ");
		g_string_append(m, fence);
		g_string_append(m, ": held by ");
		describe(&d->holder, m);
		audit_release_how(m, key, by);
	}
	/* Without fs->mu (D's key is claimed, so D stays): a log that is slow
	 * to take a line must not hold up the rest of the filesystem. */
	pthread_mutex_unlock(&fs->mu);
	lockfs_log_event_msg(G_LOG_LEVEL_INFO, grant ? "grant" : "release", key, &d->holder, NULL,
	                     fence, m->str);
	pthread_mutex_lock(&fs->mu);
}

/* A holder let go: counted, and the audit trail's line. */
static void log_release(lfs *fs, lfs_dentry *d, pid_t by)
{
	metrics_count(M_RELEASES);
	log_audit(fs, d, false, by);
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

/* Remove a lock name that was broken or lost: the node loses its lock when
 * that was its last lock name, so writes through open descriptors fail.
 * (Marked first: removing the name may free the node.) */
static void remove_broken(lfs *fs, lfs_dentry *d)
{
	if (d->node->lock_names <= 1)
		d->node->lost = true;
	locks_remove_name(fs, d);
}

static int64_t us_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* "PID:KEY", without printf: made twice a cycle. */
static char *saw_key(pid_t pid, const char *key)
{
	GString *s = g_string_sized_new(strlen(key) + 12);
	lockfs_append_i64(s, pid);
	g_string_append_c(s, ':');
	g_string_append(s, key);
	return g_string_free(s, FALSE);
}

static void forget_saw_free(lfs *fs, pid_t pid, const char *key)
{
	if (!fs->saw_free)
		return;
	g_autofree char *k = saw_key(pid, key);
	g_hash_table_remove(fs->saw_free, k);
}

static void lost_before(lfs *fs, lfs_dentry *d);

/* One grant in the making: what the steps of locks_acquire share. */
typedef struct {
	const char *key;
	int64_t now;
	lockfs_holder holder;
	char *initial; /* a copy: node->data may change unlocked */
	size_t initial_len;
	lockfs_lease *lease;
	lockfs_acquire_result res;
	int64_t sent;
	char *token;
	uint64_t holder_start;
} acquire_call;

/* Claim KEY, and make sure the name is free here: 0, or -EIO (the key
 * stays busy) or -EEXIST (taken here while we waited; unclaimed). */
static int acquire_claim(lfs *fs, lfs_node *dir, const char *name, const char *key)
{
	if (!locks_claim_bounded(fs, key)) {
		metrics_count(M_ACQ_ERROR);
		return -EIO;
	}
	lfs_dentry *old = dentry_find(dir, name);
	if (old && old->lease && old->lost) { /* lost here: the name is the backend's */
		remove_broken(fs, old);
		remote_forget(fs, key);
		old = NULL;
	}
	if (old) { /* taken here while we waited */
		metrics_count(M_ACQ_HELD);
		locks_unclaim(fs, key);
		return -EEXIST;
	}
	return 0;
}

/* The holder record WHO asks the backend for, with what NODE holds. */
static void acquire_prepare(lfs *fs, lfs_node *node, const struct lfs_caller *who, acquire_call *a)
{
	lockfs_holder_fill(&a->holder, who->pid, who->uid, who->gid, node->mode, a->now);
	/* The process tries the name itself: it knows now whether it is held,
	 * so what it found before is no reason to refuse its unlink. */
	forget_saw_free(fs, who->pid, a->key);
	/* Linked from a temp file the tool already wrote (a pid), or a
	 * symlink's target: recorded with the grant, so other hosts read the
	 * same bytes; and the times the file has, as every host shows them. */
	a->holder.mtime_us = us_of(node->mtime);
	a->holder.atime_us = us_of(node->atime);
	a->holder.ctime_us = us_of(node->ctime);
	if (fs->shared && node->kind == NODE_MEM && (S_ISREG(node->mode) || S_ISLNK(node->mode)) &&
	    node->size) {
		a->initial_len = MIN(node->size, (size_t)LOCKFS_CONTENT_MAX);
		a->initial = g_memdup2(node->data, a->initial_len);
	}
}

/* The backend's acquire, without fs->mu: 0 or a negative errno. */
static int acquire_at_backend(lfs *fs, lfs_node *dir, lfs_node *node, const struct lfs_caller *who,
                              acquire_call *a)
{
	/* The node and its directory may have no other reference meanwhile. */
	node->nlookup++;
	dir->nlookup++;
	a->sent = lockfs_mono_us();
	char *session = NULL;
	pthread_mutex_unlock(&fs->mu);
	int r = backend_errno(fs->be->acquire(fs->be, a->key, &a->holder, a->initial,
	                                      a->initial_len, &a->lease, &a->res));
	if (r == 0) { /* for the lock record, without fs->mu */
		a->token = record_token(fs, a->lease, &session);
		/* A flock's holder: /proc/PID/stat, read once, to know it again
		 * after a restart (fs_flock.c, orphans). */
		if (rules_flock_key_parse(a->key, &(const char *){ NULL }, &(const char *){ NULL }))
			a->holder_start = lockfs_pid_start(who->pid);
	}
	pthread_mutex_lock(&fs->mu);
	record_session(fs, session);
	node->nlookup--;
	dir->nlookup--;
	return r;
}

/* Granted, but DIR was removed while the backend answered: the lease goes
 * back, and the request answers ENOENT. */
static int acquire_dir_gone(lfs *fs, lfs_node *dir, acquire_call *a)
{
	/* The release goes out without fs->mu (it waits on the network): the
	 * key stays claimed until locks_unclaim, so no thread of this mount
	 * takes or judges it meanwhile, and release() deletes only an entry
	 * of this lease, never a later holder's. */
	node_maybe_free(fs, dir);
	UNLOCKED(fs, (fs->be->release(fs->be, a->lease), 0));
	fs->be->lease_free(fs->be, a->lease);
	lockfs_holder_clear(&a->holder);
	locks_unclaim(fs, a->key);
	return -ENOENT;
}

/* The backend refused (R: -EEXIST) or failed. */
static int acquire_refused(lfs *fs, acquire_call *a, int r)
{
	if (r == -EEXIST)
		metrics_count(M_ACQ_HELD);
	if (r == -EIO) {
		metrics_count(M_ACQ_ERROR);
		lockfs_log_event(G_LOG_LEVEL_WARNING, "error", a->key, NULL, NULL, NULL,
		                 "cannot take %s: the %s backend failed; answered EIO", a->key,
		                 fs->be->name);
	}
	lockfs_holder_clear(&a->holder);
	locks_unclaim(fs, a->key);
	return r;
}

/* The lock dentry of a grant, in fs->held and in the record: 0, or -EIO
 * (let go) when the record cannot be written. */
static int acquire_install(lfs *fs, lfs_node *dir, const char *name, lfs_node *node,
                           const struct lfs_caller *who, acquire_call *a, lfs_dentry **out)
{
	const char *key = a->key;
	lockfs_lease *lease = a->lease;
	if (a->res.broke) {
		log_break("broke stale lock", key, &a->res.previous, &a->holder, true);
		lockfs_lock_info_clear(&a->res.previous);
	}
	lfs_dentry *d = dentry_add(fs, dir, name, node);
	d->lease = lease;
	d->holder = a->holder;
	d->holder_ppid = who->ppid;
	d->heartbeat_us = a->now;
	d->hb_sent_mono = d->granted_mono = d->heartbeat_boot = lockfs_mono_us();
	d->serial = ++fs->next_serial;
	d->fence_final = !fs->be->confirm;
	d->renewed_mono = a->sent;
	node->lost = false;
	d->token = g_steal_pointer(&a->token);
	d->holder_start = a->holder_start;
	g_hash_table_insert(fs->held, lease->key, d);
	if (record_lock(fs, d) != 0) {
		/* Unrecorded, a restart would lose it while its holder runs. */
		lockfs_log_event(G_LOG_LEVEL_WARNING, "error", key, &d->holder, NULL, lease->fence,
		                 "cannot take %s: its grant could not be recorded in state_dir; "
		                 "let go, answered EIO",
		                 key);
		UNLOCKED(fs, (fs->be->release(fs->be, lease), 0));
		locks_remove_name(fs, d);
		metrics_count(M_ACQ_ERROR);
		locks_unclaim(fs, key);
		return -EIO;
	}
	lost_before(fs, d);
	if (fs->lost_recent) /* taken again: the new lock is what counts */
		g_hash_table_remove(fs->lost_recent, key);
	metrics_count(M_ACQ_GRANTED);
	log_audit(fs, d, true, 0); /* who took which lock, with which fence */
	locks_unclaim(fs, key);
	if (out)
		*out = d;
	return 0;
}

int locks_acquire(lfs *fs, lfs_node *dir, const char *name, lfs_node *node,
                  const struct lfs_caller *who, lfs_dentry **out)
{
	acquire_call a = { .now = lockfs_now_us() };
	g_autofree char *key = node_key(fs, dir, name);
	a.key = key;
	int r = acquire_claim(fs, dir, name, key);
	if (r)
		return r;
	acquire_prepare(fs, node, who, &a);
	r = acquire_at_backend(fs, dir, node, who, &a);
	if (!r && S_ISDIR(dir->mode) && dir != fs->root && dir->kind == NODE_MEM && !dir->nlink) {
		r = acquire_dir_gone(fs, dir, &a); /* removed while the backend answered */
	} else {
		remote_forget(fs, key);
		if (r == -EEXIST)
			UNLOCKED(fs, (remote_note_refused(fs, key), 0));
		r = r ? acquire_refused(fs, &a, r)
		      : acquire_install(fs, dir, name, node, who, &a, out);
	}
	g_free(a.initial);
	g_free(a.token);
	return r;
}

/* How long a process's finding a lock name free counts (below): from when
 * the finding was answered; the unlink that follows may wait for the backend
 * up to network_timeout first. */
#define SAW_FREE_US (2 * G_USEC_PER_SEC)
static int64_t saw_free_us(const lfs *fs)
{
	return SAW_FREE_US + fs->set->network_timeout_ms * 1000;
}

void locks_saw_free(lfs *fs, pid_t pid, const char *key, int64_t at, bool failed)
{
	if (!fs->saw_free)
		fs->saw_free = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	int64_t now = lockfs_mono_us();
	if (g_hash_table_size(fs->saw_free) > 4096) {
		GHashTableIter it;
		gpointer v;
		g_hash_table_iter_init(&it, fs->saw_free);
		while (g_hash_table_iter_next(&it, NULL, &v))
			if (now - ((int64_t *)v)[1] > saw_free_us(fs))
				g_hash_table_iter_remove(&it);
		if (g_hash_table_size(fs->saw_free) > 4096)
			g_hash_table_remove_all(fs->saw_free);
	}
	/* When it found the name free, when that was noted (the finding
	 * counts for saw_free_us from the noting), and
	 * whether the look failed. */
	int64_t v[3] = { at, now, failed };
	g_hash_table_replace(fs->saw_free, saw_key(pid, key), g_memdup2(v, sizeof(v)));
}

/* When PID last found KEY free, if that still counts: else NULL. */
static const int64_t *saw_free_at(lfs *fs, pid_t pid, const char *key)
{
	if (!fs->saw_free)
		return NULL;
	g_autofree char *k = saw_key(pid, key);
	const int64_t *v = g_hash_table_lookup(fs->saw_free, k);
	return v && lockfs_mono_us() - v[1] < saw_free_us(fs) ? v : NULL;
}

static const char *saw_how(const int64_t *v)
{
	return !v ? NULL : v[2] ? "after its look at it failed" : "after finding it free";
}

const char *locks_saw_free_lately(lfs *fs, pid_t pid, const char *key)
{
	return saw_how(saw_free_at(fs, pid, key));
}

/* liblockfile's stale check stat()s the lock it could not take, and when
 * that fails -- nothing there (the holder let go meanwhile), or EIO (the
 * backend did not answer) -- it unlinks the name anyway, as stale: by then
 * it may be the next holder's lock, which the unlink, from the same uid,
 * would release (the etcd long run saw it after a server restart).  A
 * process that last saw no lock there before the lock was granted has
 * never seen this lock: its unlink answers ENOENT, which is what it
 * expected.  Says how it saw none, or NULL. */
const char *locks_unseen_by(lfs *fs, pid_t pid, const lfs_dentry *d)
{
	if (pid == (pid_t)d->holder.pid || !d->lease)
		return NULL;
	const int64_t *v = saw_free_at(fs, pid, d->lease->key);
	return v && v[0] < d->granted_mono ? saw_how(v) : NULL;
}

/* How long after a grant that followed a loss the lost holder's late
 * release is recognised (an rm retried on EIO, a script's cleanup). */
#define LATE_RELEASE_US (60 * G_USEC_PER_SEC)

/* D was taken here just after this mount lost the key's previous lock:
 * an unlink from that lost holder's family, and not from the new holder's,
 * is the lost holder's late release (the rm at the end of its critical
 * section, retried while the backend was away), not a release of D, which
 * it has never seen: an unlink by path cannot tell the two apart. */
static bool late_release(const lfs_dentry *d, const struct lfs_caller *who)
{
	return d->prev_lost_pid && rules_is_holder(who, d->prev_lost_uid) &&
	       lockfs_mono_us() - d->granted_mono < LATE_RELEASE_US &&
	       rules_in_family(who, d->prev_lost_pid, d->prev_lost_ppid) &&
	       !rules_in_family(who, (pid_t)d->holder.pid, d->holder_ppid);
}

static void lost_remember(lfs *fs, lfs_dentry *d, bool released);

int locks_unlink(lfs *fs, lfs_dentry *d, const struct lfs_caller *who)
{
	if (late_release(d, who)) {
		lockfs_log(
		        G_LOG_LEVEL_INFO, d->lease->key,
		        "pid %d removed %s, whose lock of pid %d this mount lost before pid %" G_GINT64_FORMAT
		        " took it; the new lock is left alone, ENOENT",
		        who->pid, d->lease->key, d->prev_lost_pid, d->holder.pid);
		return -ENOENT;
	}
	const char *unseen = locks_unseen_by(fs, who->pid, d);
	if (unseen) {
		lockfs_log(G_LOG_LEVEL_INFO, d->lease->key,
		           "pid %d removed %s %s; the lock taken since (pid %" G_GINT64_FORMAT
		           ") is left alone, ENOENT",
		           who->pid, d->lease->key, unseen, d->holder.pid);
		return -ENOENT;
	}
	if (rules_unlink_effect(who, d->holder.uid) == TOUCH_BREAK)
		return locks_break(fs, d, who, NULL);
	return locks_release(fs, d, who->pid);
}

int locks_release(lfs *fs, lfs_dentry *d, pid_t by)
{
	g_autofree char *key = g_strdup(d->lease->key);
	int err;
	if (!(d = claim_dentry(fs, d, key, &err)))
		return err;
	int r = d->lost ? -ENOENT : backend_errno(UNLOCKED(fs, fs->be->release(fs->be, d->lease)));
	if (r == -EIO && fs->shared && (fs->be->flags & LOCKFS_BACKEND_LEASES)) {
		/* Kept, it would be renewed for a holder that is done with it:
		 * tools do not retry a failed rm, and nobody else may unlink it.
		 * So it leaves the namespace and is no longer renewed; the
		 * renewal workers release it once the backend answers, and at
		 * worst it runs out within ttl. */
		lockfs_log_event(G_LOG_LEVEL_WARNING, "error", key, &d->holder, NULL,
		                 d->lease->fence,
		                 "cannot release %s: the %s backend failed; the lock is let go "
		                 "(no longer renewed; released when the backend answers, free "
		                 "within ttl at the latest), EIO",
		                 key, fs->be->name);
		d->let_go = true;
		/* Its holder's rm retried once the server is back must not break
		 * the next holder's lock (as after a loss). */
		lost_remember(fs, d, true);
		locks_remove_name(fs, d);
		remote_forget(fs, key);
		locks_unclaim(fs, key);
		return -EIO;
	}
	if (r == -EIO) {
		lockfs_log_event(G_LOG_LEVEL_WARNING, "error", key, &d->holder, NULL,
		                 d->lease->fence,
		                 "cannot release %s: the %s backend failed; the lock is kept", key,
		                 fs->be->name);
		locks_unclaim(fs, key);
		return -EIO;
	}
	if (r)
		lockfs_log(G_LOG_LEVEL_WARNING, key,
		           "%s was no longer held by this mount when released; nothing deleted",
		           key);
	else
		log_release(fs, d, by);
	locks_remove_name(fs, d);
	/* Just let go: free for as long as a lookup may believe the backend
	 * (the next create's lookup then costs no round trip). */
	if (r)
		remote_forget(fs, key);
	else
		remote_note_free(fs, key);
	locks_unclaim(fs, key);
	return r ? -ENOENT : 0;
}

int locks_break(lfs *fs, lfs_dentry *d, const struct lfs_caller *who, const char *fence)
{
	g_autofree char *key = g_strdup(d->lease->key);
	int err;
	if (!(d = claim_dentry(fs, d, key, &err)))
		return err;
	if (fence && lockfs_fence_cmp(fence, d->lease->fence) != 0) {
		locks_unclaim(fs, key);
		return -ESTALE;
	}
	lockfs_holder breaker;
	lockfs_holder_fill(&breaker, who->pid, who->uid, who->gid, 0, lockfs_now_us());
	lockfs_lock_info prev;
	int r = d->lost ? -ENOENT
	                : backend_errno(
	                          UNLOCKED(fs, fs->be->break_lock(fs->be, key, d->lease->fence,
	                                                          &breaker, &prev)));
	if (r == -EIO) {
		lockfs_holder_clear(&breaker);
		locks_unclaim(fs, key);
		return -EIO;
	}
	if (r == 0) {
		log_break("lock broken:", key, &prev, &breaker, false);
		lockfs_lock_info_clear(&prev);
	}
	lockfs_holder_clear(&breaker);
	inval_node(fs, d->node);
	remove_broken(fs, d);
	remote_forget(fs, key);
	locks_unclaim(fs, key);
	return r ? -ENOENT : 0;
}

int locks_break_remote(lfs *fs, const char *key, const char *fence, const struct lfs_caller *who)
{
	if (!locks_claim_bounded(fs, key))
		return -EIO;
	lockfs_holder breaker;
	lockfs_holder_fill(&breaker, who->pid, who->uid, who->gid, 0, lockfs_now_us());
	lockfs_lock_info prev;
	int r = backend_errno(
	        UNLOCKED(fs, fs->be->break_lock(fs->be, key, fence, &breaker, &prev)));
	if (r == 0) {
		log_break("lock broken:", key, &prev, &breaker, false);
		lockfs_lock_info_clear(&prev);
	}
	lockfs_holder_clear(&breaker);
	remote_forget(fs, key);
	locks_unclaim(fs, key);
	return r == -EIO ? -EIO : r ? -ENOENT : 0;
}

bool locks_past_stale(lfs *fs, const lfs_dentry *d)
{
	return fs->stale_after_us && d->lease &&
	       lockfs_mono_us() - d->heartbeat_boot > fs->stale_after_us;
}

bool locks_expire_if_stale(lfs *fs, lfs_dentry *d)
{
	if (d->lost || !locks_past_stale(fs, d))
		return false;
	g_autofree char *key = g_strdup(d->lease->key);
	int err;
	if (!(d = claim_dentry(fs, d, key, &err)))
		return true; /* gone meanwhile (or still busy): look again */
	lockfs_lock_info prev;
	int r = UNLOCKED(fs, fs->be->break_lock(fs->be, key, d->lease->fence, NULL, &prev));
	if (r == 0) {
		log_break("expired stale lock", key, &prev, NULL, true);
		lockfs_lock_info_clear(&prev);
	} else if (r != -ENOENT) {
		locks_unclaim(fs, key);
		return false; /* backend unreachable: leave it */
	}
	inval_node(fs, d->node);
	remove_broken(fs, d);
	remote_forget(fs, key);
	locks_unclaim(fs, key);
	return true;
}

/* How long, and how many, lost locks .lockfs/ still shows. */
#define LOST_SHOWN_US (10 * 60 * G_USEC_PER_SEC)
#define LOST_SHOWN_MAX 4096

typedef struct {
	lockfs_lock_info info;
	pid_t ppid; /* the lost holder's parent */
	int64_t at_mono;
	/* Not lost: let go by an unlink the backend did not answer (shown
	 * nowhere; only its holder's late rm is judged by it). */
	bool released;
} lfs_lost;

static void lost_free(gpointer p)
{
	lfs_lost *l = p;
	lockfs_lock_info_clear(&l->info);
	g_free(l);
}

/* Who this mount lost KEY from lately (or failed to release it for): its
 * late release must not break a lock taken after, whether that is the next
 * grant of KEY or a later one (a lost holder's rm may come seconds late,
 * after several short holds by others).  late_guard: key → lfs_late. */
typedef struct {
	pid_t pid, ppid;
	uid_t uid;
	int64_t at_mono;
} lfs_late;

static void late_note(lfs *fs, const char *key, const lockfs_holder *h, pid_t ppid, int64_t mono)
{
	if (!fs->late_guard)
		fs->late_guard = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	if (g_hash_table_size(fs->late_guard) >= LOST_SHOWN_MAX) {
		GHashTableIter it;
		gpointer v;
		g_hash_table_iter_init(&it, fs->late_guard);
		while (g_hash_table_iter_next(&it, NULL, &v))
			if (mono - ((lfs_late *)v)->at_mono > LATE_RELEASE_US)
				g_hash_table_iter_remove(&it);
	}
	lfs_late *l = g_new(lfs_late, 1);
	*l = (lfs_late){ (pid_t)h->pid, ppid, h->uid, mono };
	g_hash_table_replace(fs->late_guard, g_strdup(key), l);
}

/* A new entry of lost_recent for KEY, held by H (fence FENCE, parent PPID). */
static lfs_lost *lost_add(lfs *fs, const char *key, const lockfs_holder *h, int64_t heartbeat_us,
                          const char *fence, pid_t ppid, bool released)
{
	if (!fs->lost_recent)
		fs->lost_recent = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, lost_free);
	int64_t mono = lockfs_mono_us();
	if (g_hash_table_size(fs->lost_recent) >= LOST_SHOWN_MAX) {
		GHashTableIter it;
		gpointer v;
		g_hash_table_iter_init(&it, fs->lost_recent);
		while (g_hash_table_iter_next(&it, NULL, &v))
			if (mono - ((lfs_lost *)v)->at_mono > LOST_SHOWN_US)
				g_hash_table_iter_remove(&it);
		if (g_hash_table_size(fs->lost_recent) >= LOST_SHOWN_MAX)
			g_hash_table_remove_all(fs->lost_recent);
	}
	late_note(fs, key, h, ppid, mono);
	lfs_lost *l = g_new0(lfs_lost, 1);
	l->at_mono = mono;
	l->ppid = ppid;
	l->info.key = g_strdup(key);
	lockfs_holder_copy(&l->info.holder, h);
	l->info.holder.heartbeat_us = heartbeat_us;
	g_strlcpy(l->info.fence, fence, sizeof(l->info.fence));
	l->info.lease_left_ms = (fs->be->flags & LOCKFS_BACKEND_LEASES) ? 0 : -1;
	l->info.state = LOCKFS_STATE_LOST;
	l->info.mine = true;
	l->released = released;
	g_hash_table_replace(fs->lost_recent, g_strdup(key), l);
	return l;
}

static void lost_remember(lfs *fs, lfs_dentry *d, bool released)
{
	lfs_lost *l = lost_add(fs, d->lease->key, &d->holder, d->heartbeat_us, d->lease->fence,
	                       d->holder_ppid, released);
	if (!released) { /* for xattrs read through descriptors still open on it */
		lfs_node *n = d->node;
		if (!n->lost_info)
			n->lost_info = g_new0(lockfs_lock_info, 1);
		else
			lockfs_lock_info_clear(n->lost_info);
		remote_info_copy(n->lost_info, &l->info);
	}
}

/* A loss of KEY, held by H with FENCE: counted, logged, notified. */
static void say_lost(const char *key, const lockfs_holder *h, const char *fence, const char *why)
{
	metrics_count(M_LOSSES);
	lockfs_log_event(G_LOG_LEVEL_WARNING, "lost", key, h, NULL, fence,
	                 "lost %s (fence %s, held by %s:%" G_GINT64_FORMAT " uid %u): %s", key,
	                 fence, h->host, h->pid, h->uid, why);
	lockfs_notify("lost", key, h, NULL, fence);
}

void locks_note_lost(lfs *fs, const char *key, const lockfs_holder *h, const char *fence,
                     pid_t ppid, const char *why)
{
	say_lost(key, h, fence, why);
	lost_add(fs, key, h, h->heartbeat_us, fence, ppid, false);
}

/* D, just granted: note who this mount lost the key's previous lock from,
 * if that was within LATE_RELEASE_US (late_release). */
static void lost_before(lfs *fs, lfs_dentry *d)
{
	lfs_late *l = fs->late_guard ? g_hash_table_lookup(fs->late_guard, d->lease->key) : NULL;
	if (!l || d->granted_mono - l->at_mono > LATE_RELEASE_US)
		return;
	d->prev_lost_pid = l->pid;
	d->prev_lost_ppid = l->ppid;
	d->prev_lost_uid = l->uid;
}

/* KEY's entry in lost_recent while it is shown (10 minutes), else NULL. */
static lfs_lost *lost_entry(lfs *fs, const char *key)
{
	lfs_lost *l = fs->lost_recent ? g_hash_table_lookup(fs->lost_recent, key) : NULL;
	if (l && lockfs_mono_us() - l->at_mono > LOST_SHOWN_US) {
		g_hash_table_remove(fs->lost_recent, key);
		return NULL;
	}
	return l;
}

const lockfs_lock_info *locks_late_info(lfs *fs, const char *key)
{
	lfs_lost *l = lost_entry(fs, key);
	return l ? &l->info : NULL;
}

const lockfs_lock_info *locks_lost_info(lfs *fs, const char *key)
{
	lfs_lost *l = lost_entry(fs, key);
	return l && !l->released ? &l->info : NULL;
}

void locks_lost_list(lfs *fs, const char *prefix, GHashTable *seen, GPtrArray *out)
{
	if (!fs->lost_recent)
		return;
	int64_t mono = lockfs_mono_us();
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, fs->lost_recent);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		lfs_lost *l = v;
		if (mono - l->at_mono > LOST_SHOWN_US) {
			g_hash_table_iter_remove(&it);
			continue;
		}
		if (l->released)
			continue;
		if (!g_str_has_prefix(k, prefix) || g_hash_table_contains(seen, k))
			continue;
		lockfs_lock_info *copy = g_new0(lockfs_lock_info, 1);
		remote_info_copy(copy, &l->info);
		g_ptr_array_add(out, copy);
	}
}

/* The lease of D can no longer be counted on: say so once, fail its
 * heartbeats and writes, and let the name go (locks_drop_lost): from now
 * on it is what the backend says it is, free or another host's, so that
 * the next acquisition here asks the backend. */
void locks_mark_lost(lfs *fs, lfs_dentry *d, const char *why)
{
	if (d->lost)
		return;
	d->lost = true;
	d->node->lost = true;
	say_lost(d->lease->key, &d->holder, d->lease->fence, why);
	lost_remember(fs, d, false);
	inval_node(fs, d->node);
	inval_entry(fs, d->dir, d->name);
}

bool locks_drop_lost(lfs *fs, lfs_dentry *d)
{
	g_autofree char *key = g_strdup(d->lease->key);
	int err;
	if (!(d = claim_dentry(fs, d, key, &err)))
		return true; /* D may be gone: look again */
	bool gone = d->lost;
	if (gone) {
		remove_broken(fs, d);
		remote_forget(fs, key);
	}
	locks_unclaim(fs, key);
	return gone;
}

/* True when D's lease may already have run out at the backend: the last
 * renewal that succeeded was sent longer ago than ttl less a margin for
 * clock rates and delays.  Checked before every use of the lease. */
bool locks_lease_expired(lfs *fs, lfs_dentry *d)
{
	if (!(fs->be->flags & LOCKFS_BACKEND_LEASES))
		return false;
	int64_t ttl = fs->set->ttl_ms * 1000;
	return lockfs_mono_us() - d->renewed_mono >= ttl - ttl / 5;
}

bool locks_lost_if_expired(lfs *fs, lfs_dentry *d)
{
	if (d && !d->lost && locks_lease_expired(fs, d))
		locks_mark_lost(fs, d, "its lease could not be renewed in time");
	return d && d->lost;
}

int locks_check_writable(lfs *fs, lfs_node *n)
{
	for (lfs_dentry *d = n->locks; d; d = d->next_lock)
		locks_lost_if_expired(fs, d);
	return n->lost ? -ESTALE : 0;
}

/* Send what D's holder changed since the last send: its heartbeat, its
 * content (WITH_CONTENT), and where other hosts show it, the lock file's
 * times and mode.  D's key is claimed; called with fs->mu, let go meanwhile. */
static int send_beat(lfs *fs, lfs_dentry *d, bool with_content)
{
	lfs_node *n = d->node;
	lockfs_beat beat = { .heartbeat_us = d->hb_unsent ? d->heartbeat_us : 0 };
	if (fs->shared) {
		beat.mtime_us = us_of(n->mtime);
		beat.atime_us = us_of(n->atime);
		beat.ctime_us = us_of(n->ctime);
		beat.mode = n->mode;
	}
	g_autofree char *content = NULL;
	if (with_content && n->kind == NODE_MEM && S_ISREG(n->mode)) {
		beat.content_len = MIN(n->size, (size_t)LOCKFS_CONTENT_MAX);
		content = g_malloc(beat.content_len + 1);
		if (beat.content_len)
			memcpy(content, n->data, beat.content_len);
		content[beat.content_len] = '\0';
		beat.content = content;
	}
	int64_t mono = lockfs_mono_us();
	bool had_hb = d->hb_unsent;
	d->hb_unsent = false;
	d->beat_pending = false;
	metrics_count(M_HB_SENT);
	int r = backend_errno(UNLOCKED(fs, fs->be->heartbeat(fs->be, d->lease, &beat)));
	if (r == -ESTALE || r == -ENOENT) {
		locks_mark_lost(fs, d, "the backend no longer has it");
	} else if (r == 0) {
		d->hb_sent_mono = mono;
	} else {
		/* Not recorded: the next round tries again. */
		d->hb_unsent = d->hb_unsent || had_hb;
		d->beat_pending = true;
	}
	return r;
}

int locks_auto_beat(lfs *fs, lfs_dentry *d)
{
	g_autofree char *key = g_strdup(d->lease->key);
	int err;
	if (!(d = claim_dentry(fs, d, key, &err)))
		return err;
	int r = -ESTALE;
	if (!d->lost) {
		d->heartbeat_us = lockfs_now_us();
		d->heartbeat_boot = lockfs_mono_us();
		d->hb_unsent = true;
		r = send_beat(fs, d, false);
	}
	locks_unclaim(fs, key);
	return r;
}

void locks_info_of(lfs *fs, lfs_dentry *d, lockfs_lock_info *out)
{
	memset(out, 0, sizeof(*out));
	out->key = g_strdup(d->lease->key);
	lockfs_holder_copy(&out->holder, &d->holder);
	out->holder.heartbeat_us = d->heartbeat_us;
	/* A fence the backend has not confirmed may be older than another
	 * holder's since (LDAP's blocks): shown empty, as the fence xattr
	 * answers EIO, until it is; a lost lock's is shown with its state. */
	if (d->fence_final || d->lost || d->node->lost)
		g_strlcpy(out->fence, d->lease->fence, sizeof(out->fence));
	out->lease_left_ms = -1;
	if (fs->be->flags & LOCKFS_BACKEND_LEASES) {
		int64_t left = d->renewed_mono + fs->set->ttl_ms * 1000 - lockfs_mono_us();
		out->lease_left_ms = MAX(left / 1000, 0);
	}
	out->mine = true;
	if (d->lost || d->node->lost)
		out->state = LOCKFS_STATE_LOST;
	else if (fs->stale_after_us && lockfs_mono_us() - d->heartbeat_boot > fs->stale_after_us)
		out->state = LOCKFS_STATE_STALE;
	else
		out->state = LOCKFS_STATE_HELD;
}

/* Whether C may change lock file N (write, truncate, set times): only its
 * holder's uid and root; any file that is no lock. */
bool locks_may_change(lfs_node *n, const struct lfs_caller *c)
{
	for (lfs_dentry *d = n->locks; d; d = d->next_lock)
		if (!rules_may_touch(c, d->holder.uid))
			return false;
	return true;
}

/* Whether this mount lost KEY's lock lately, held by UID. */
bool locks_lost_by(lfs *fs, const char *key, uid_t uid)
{
	const lockfs_lock_info *lost = locks_late_info(fs, key);
	return lost && rules_is_holder(&(struct lfs_caller){ .uid = uid }, lost->holder.uid);
}

/* How many parents up a lost holder's family is looked for: a script's
 * getfattr run through a subshell and timeout(1) is three down from it. */
#define FAMILY_GENERATIONS 4

/* Whether C is of the family of KEY's holder this mount lost within
 * LATE_RELEASE_US (late_guard), as its uid: that process or its parent (the
 * script that ran it), or a descendant of either (which takes in what
 * rules_in_family calls family: child and sibling). */
bool locks_lost_by_family(lfs *fs, const char *key, const struct lfs_caller *c)
{
	const lfs_late *l = fs->late_guard ? g_hash_table_lookup(fs->late_guard, key) : NULL;
	return l && lockfs_mono_us() - l->at_mono < LATE_RELEASE_US && rules_is_holder(c, l->uid) &&
	       lockfs_descends_from(c->pid, l->pid, l->ppid, FAMILY_GENERATIONS);
}

int locks_heartbeat(lfs *fs, lfs_node *n, const struct lfs_caller *who, unsigned what)
{
	if (locks_check_writable(fs, n))
		return -ESTALE;
	if (!n->locks)
		return 0;
	for (lfs_dentry *d = n->locks; d; d = d->next_lock)
		if (!rules_may_touch(who, d->holder.uid))
			return -EPERM;
	int64_t now = lockfs_now_us(), mono = lockfs_mono_us();
	/* The record a restart takes back shows what the holder changed. */
	for (lfs_dentry *d = n->locks; d; d = d->next_lock) {
		if (what & BEAT_HEARTBEAT)
			d->heartbeat_us = now;
		record_lock(fs, d);
	}
	/* Only a heartbeat or new content matters where no other host shows
	 * the lock file. */
	if (!fs->shared && !(what & (BEAT_HEARTBEAT | BEAT_CONTENT)))
		return 0;
	/* Collect first: the list may change while a call runs unlocked. */
	g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
	for (lfs_dentry *d = n->locks; d; d = d->next_lock) {
		if (what & BEAT_HEARTBEAT) {
			d->heartbeat_us = now;
			d->heartbeat_boot = mono;
			d->hb_unsent = true;
		}
		/* Rate-limited, so a tight touch loop cannot flood the backend;
		 * what is held back goes with the next renewal round once the
		 * interval has passed (locks_renew_due). */
		if ((what & BEAT_CONTENT) || mono - d->hb_sent_mono >= fs->heartbeat_min_us)
			g_ptr_array_add(keys, g_strdup(d->lease->key));
		else {
			metrics_count(M_HB_SKIPPED);
			d->beat_pending = true;
		}
	}
	int result = 0;
	for (guint i = 0; i < keys->len; i++) {
		const char *key = keys->pdata[i];
		if (!locks_claim_bounded(fs, key)) {
			result = result ? result : -EIO;
			continue;
		}
		lfs_dentry *d = g_hash_table_lookup(fs->held, key);
		if (d && d->node == n && !d->lost &&
		    send_beat(fs, d, what & BEAT_CONTENT) == -ESTALE)
			result = -ESTALE;
		locks_unclaim(fs, key);
	}
	/* A heartbeat that waited (on a claim, on the network) while its lease
	 * was declared lost must not answer success: its caller would go on
	 * working under a lock another host may hold by now. */
	if (locks_check_writable(fs, n))
		result = -ESTALE;
	return result;
}

/* Confirm the fence of KEY's lock here (see the backend's confirm()); a
 * lock the backend no longer has is lost.  Called with fs->mu. */
static void confirm_key(lfs *fs, const char *key)
{
	/* Bounded: a reader of the fence then answers EIO (lfs_getxattr). */
	if (!locks_claim_bounded(fs, key))
		return;
	lfs_dentry *d = g_hash_table_lookup(fs->held, key);
	if (d && !d->fence_final && !d->lost) {
		char fence[LOCKFS_FENCE_MAX];
		g_strlcpy(fence, d->lease->fence, sizeof(fence));
		int r = backend_errno(UNLOCKED(fs, fs->be->confirm(fs->be, d->lease, fence)));
		/* D stays: removing it needs the claim. */
		if (r == 0) {
			g_strlcpy(d->lease->fence, fence, sizeof(d->lease->fence));
			d->fence_final = true;
			/* Checked now: the record says so (a restart need not check
			 * again), with the final fence. */
			char *session = NULL;
			g_autofree char *token =
			        UNLOCKED_PTR(fs, record_token(fs, d->lease, &session));
			g_free(session);
			if (token) {
				g_free(d->token);
				d->token = g_steal_pointer(&token);
			}
			record_lock(fs, d);
		} else if (r == -ESTALE || r == -ENOENT) {
			locks_mark_lost(fs, d, "the backend no longer has it");
		}
	}
	locks_unclaim(fs, key);
}

void locks_confirm(lfs *fs, const char *only_key, int64_t older_than_us)
{
	if (!fs->be->confirm)
		return;
	int64_t mono = lockfs_mono_us();
	g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, fs->held);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		lfs_dentry *d = v;
		if (!d->fence_final && !d->lost && (!only_key || strcmp(k, only_key) == 0) &&
		    mono - d->granted_mono >= older_than_us)
			g_ptr_array_add(keys, g_strdup(k));
	}
	for (guint i = 0; i < keys->len; i++)
		confirm_key(fs, keys->pdata[i]);
}

/* ---- the renewal round ----
 *
 * The renew thread never waits: not on the network, not on a key's claim.
 * It declares every lease lost whose deadline has come (that needs neither:
 * a lost mark only sets flags under fs->mu, and a claimed dentry cannot go
 * away), and hands the calls due — renewals, held-back heartbeats, fence
 * confirmations — to a pool of workers, each call of a key queued once.  So
 * a loss is declared on time however many locks are held, whatever
 * network_timeout is, and while any call hangs; a renewal that succeeds
 * after its lease was declared lost does not bring it back. */

typedef enum {
	JOB_RENEW,
	JOB_BEAT,
	JOB_CONFIRM,
	JOB_ORPHAN
} job_kind;

/* ------------------------------------------------------------ orphans
 *
 * A lease this mount declared lost may live on at the backend: a renewal
 * sent before the deadline and given up on (the server was stopped, the
 * link cut) can still arrive and extend it.  Its holder has been told, and
 * nobody here will unlink it any more, so it would keep the lock from every
 * host until it runs out again.  Once ttl has passed since the last renewal
 * that succeeded -- when the backend could have let it go anyway -- the
 * mount releases it; release() deletes only an entry that lease still
 * holds, so a newer holder's lock is never touched. */
typedef struct {
	lockfs_lease *lease; /* its key names the lock */
	int64_t not_before;  /* ttl after the last renewal that succeeded */
	int64_t give_up;     /* then the backend's own expiry is left to it */
	bool queued;
	bool unlinked; /* not lost: unlinked while the backend did not answer */
} lfs_orphan;

/* How long a backend that does not answer is asked again. */
#define ORPHAN_TRIES_US (60 * G_USEC_PER_SEC)
#define ORPHANS_MAX 4096

static void orphan_free(lfs *fs, lfs_orphan *o)
{
	fs->be->lease_free(fs->be, o->lease);
	g_free(o);
}

static void orphan_drop(lfs *fs, lfs_orphan *o)
{
	g_ptr_array_remove_fast(fs->orphans, o);
	orphan_free(fs, o);
}

/* D leaves the namespace: free its lease, or keep a lost one, or one let
 * go (locks_unlink), as an orphan. */
static void lease_gone(lfs *fs, lfs_dentry *d)
{
	bool keep = (d->lost || d->let_go) && fs->shared &&
	            (fs->be->flags & LOCKFS_BACKEND_LEASES) &&
	            (!fs->orphans || fs->orphans->len < ORPHANS_MAX);
	if (!keep) {
		fs->be->lease_free(fs->be, d->lease);
		d->lease = NULL;
		return;
	}
	if (!fs->orphans)
		fs->orphans = g_ptr_array_new();
	lfs_orphan *o = g_new0(lfs_orphan, 1);
	o->lease = d->lease;
	/* One let go is released at once: its holder asked for that. */
	o->unlinked = d->let_go && !d->lost;
	o->not_before = o->unlinked ? 0 : d->renewed_mono + fs->set->ttl_ms * 1000;
	o->give_up = MAX(o->not_before, lockfs_mono_us()) + ORPHAN_TRIES_US;
	g_ptr_array_add(fs->orphans, o);
	d->lease = NULL;
}

void locks_remove_name(lfs *fs, lfs_dentry *d)
{
	if (!(d = dentry_remove(fs, d)))
		return;
	/* A lock name of this mount's lease: it is held no more. */
	if (g_hash_table_lookup(fs->held, d->lease->key) == d) {
		g_hash_table_remove(fs->held, d->lease->key);
		record_forget(fs, d);
	}
	lease_gone(fs, d);
	dentry_free(fs, d);
}

static void orphans_free(lfs *fs)
{
	if (!fs->orphans)
		return;
	for (guint i = 0; i < fs->orphans->len; i++)
		orphan_free(fs, fs->orphans->pdata[i]);
	g_ptr_array_free(fs->orphans, TRUE);
	fs->orphans = NULL;
}

/* A worker: release orphan O, claimed like any change to its key. */
static void release_orphan(lfs *fs, lfs_orphan *o)
{
	const char *key = o->lease->key;
	locks_claim(fs, key);
	int r = backend_errno(UNLOCKED(fs, fs->be->release(fs->be, o->lease)));
	locks_unclaim(fs, key);
	o->queued = false;
	if (r == 0 && o->unlinked)
		lockfs_log(G_LOG_LEVEL_INFO, key,
		           "released %s (fence %s), unlinked here while the backend did not answer",
		           key, o->lease->fence);
	else if (r != -EIO && o->unlinked)
		lockfs_log(G_LOG_LEVEL_INFO, key,
		           "%s (fence %s), unlinked here while the backend did not answer, was "
		           "already gone from it (the first release had reached it late)",
		           key, o->lease->fence);
	else if (r == 0)
		lockfs_log(G_LOG_LEVEL_INFO, key,
		           "released %s (fence %s), lost here earlier: the backend still held it "
		           "(a renewal given up on had reached it late)",
		           key, o->lease->fence);
	if (r != -EIO || lockfs_mono_us() >= o->give_up)
		orphan_drop(fs, o);
}

typedef struct {
	char *key;
	uint64_t serial;
	job_kind kind;
	lfs_orphan *orphan;
} renew_job;

/* Workers: enough that a few hung calls do not hold up the others. */
#define RENEW_WORKERS 8

static void run_job(gpointer data, gpointer user)
{
	renew_job *j = data;
	lfs *fs = user;
	pthread_mutex_lock(&fs->mu);
	if (j->kind == JOB_ORPHAN) {
		release_orphan(fs, j->orphan);
		pthread_mutex_unlock(&fs->mu);
		g_free(j->key);
		g_free(j);
		return;
	}
	if (j->kind == JOB_CONFIRM) {
		confirm_key(fs, j->key);
		lfs_dentry *d = g_hash_table_lookup(fs->held, j->key);
		if (d && d->serial == j->serial)
			d->confirm_queued = false;
		pthread_mutex_unlock(&fs->mu);
		g_free(j->key);
		g_free(j);
		return;
	}
	locks_claim(fs, j->key);
	lfs_dentry *d = g_hash_table_lookup(fs->held, j->key);
	if (d && d->serial == j->serial && !d->lost) {
		if (j->kind == JOB_RENEW) {
			int64_t sent = lockfs_mono_us();
			int r = backend_errno(UNLOCKED(fs, fs->be->renew(fs->be, d->lease)));
			metrics_count(r == 0 ? M_RENEWALS : M_RENEW_FAILED);
			if (r == 0 && !d->lost)
				d->renewed_mono = sent;
			else if (r == -ESTALE || r == -ENOENT)
				locks_mark_lost(fs, d, "the backend no longer has it");
			else if (locks_lease_expired(fs, d))
				locks_mark_lost(fs, d, "its lease could not be renewed in time");
		} else if (j->kind == JOB_BEAT && d->beat_pending) {
			send_beat(fs, d, false);
		}
	}
	if (d && d->serial == j->serial) {
		if (j->kind == JOB_RENEW)
			d->renew_queued = false;
		else if (j->kind == JOB_BEAT)
			d->beat_queued = false;
	}
	locks_unclaim(fs, j->key);
	pthread_mutex_unlock(&fs->mu);
	g_free(j->key);
	g_free(j);
}

static void push_job(lfs *fs, renew_job *j)
{
	if (!fs->renew_pool)
		fs->renew_pool = g_thread_pool_new(run_job, fs, RENEW_WORKERS, FALSE, NULL);
	g_thread_pool_push(fs->renew_pool, j, NULL);
}

static void queue_job(lfs *fs, const char *key, lfs_dentry *d, job_kind kind)
{
	renew_job *j = g_new0(renew_job, 1);
	j->key = g_strdup(key);
	j->serial = d->serial;
	j->kind = kind;
	push_job(fs, j);
}

static void queue_orphans(lfs *fs, int64_t mono)
{
	for (guint i = 0; fs->orphans && i < fs->orphans->len; i++) {
		lfs_orphan *o = fs->orphans->pdata[i];
		if (o->queued || mono < o->not_before)
			continue;
		o->queued = true;
		renew_job *j = g_new0(renew_job, 1);
		j->kind = JOB_ORPHAN;
		j->orphan = o;
		push_job(fs, j);
	}
}

/* One round: called by the renew thread with fs->mu, often enough that no
 * lost deadline is missed by more than a tick. */
int64_t locks_renew_due(lfs *fs)
{
	int64_t interval = fs->set->renew_ms * 1000;
	int64_t ttl = fs->set->ttl_ms * 1000;
	int64_t mono = lockfs_mono_us(), due = INT64_MAX;
	g_autoptr(GPtrArray) lost = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, fs->held);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		lfs_dentry *d = v;
		if (locks_lost_if_expired(fs, d)) {
			if (!g_hash_table_contains(fs->busy, k))
				g_ptr_array_add(lost, g_strdup(k));
			continue;
		}
		if (!d->renew_queued && mono - d->renewed_mono >= interval) {
			d->renew_queued = true;
			queue_job(fs, k, d, JOB_RENEW);
		}
		/* Its lost deadline (locks_lease_expired).  Renewals keep it
		 * more than a tick away; only a late one brings it close. */
		due = MIN(due, d->renewed_mono + ttl - ttl / 5);
		if (d->beat_pending && !d->beat_queued &&
		    mono - d->hb_sent_mono >= fs->heartbeat_min_us) {
			d->beat_queued = true;
			queue_job(fs, k, d, JOB_BEAT);
		}
		/* Fences are shown to other hosts too: confirm those of locks
		 * held a while, even if nobody here asked. */
		if (fs->be->confirm && !d->fence_final && !d->confirm_queued &&
		    mono - d->granted_mono >= CONFIRM_AFTER_US) {
			d->confirm_queued = true;
			queue_job(fs, k, d, JOB_CONFIRM);
		}
	}
	/* A lost lock leaves the namespace: names nobody is using now (the
	 * others at a later round). */
	for (guint i = 0; i < lost->len; i++) {
		lfs_dentry *d = g_hash_table_lookup(fs->held, lost->pdata[i]);
		if (d && d->lost && !g_hash_table_contains(fs->busy, lost->pdata[i]))
			locks_drop_lost(fs, d);
	}
	queue_orphans(fs, mono);
	return due;
}

void locks_renew_stop(lfs *fs)
{
	if (fs->renew_pool) {
		/* Each job is bounded by the network timeout. */
		g_thread_pool_free(fs->renew_pool, FALSE, TRUE);
		fs->renew_pool = NULL;
	}
}

void locks_stop(lfs *fs)
{
	pthread_mutex_lock(&fs->mu);
	guint n = g_hash_table_size(fs->held);
	if (n)
		lockfs_log(G_LOG_LEVEL_INFO, NULL,
		           "%u lock%s left to %s holder%s: the next lockfs of %s takes them back%s",
		           n, n == 1 ? "" : "s", n == 1 ? "its" : "their", n == 1 ? "" : "s",
		           fs->mountpoint,
		           (fs->be->flags & LOCKFS_BACKEND_LEASES)
		                   ? "; without one they run out with their leases (ttl)"
		                   : "");
	/* The renewal workers are stopped: what is left runs out by itself. */
	orphans_free(fs);
	pthread_mutex_unlock(&fs->mu);
}

/* At exit, after locks_stop, with no other thread left: the lock layer's
 * tables (the names and leases themselves are nodes_fini's). */
void locks_fini(lfs *fs)
{
	g_hash_table_destroy(fs->held);
	g_hash_table_destroy(fs->busy);
	if (fs->saw_free)
		g_hash_table_destroy(fs->saw_free);
	if (fs->lost_recent)
		g_hash_table_destroy(fs->lost_recent);
	if (fs->late_guard)
		g_hash_table_destroy(fs->late_guard);
	fs->late_guard = NULL;
	fs->held = fs->busy = fs->saw_free = fs->lost_recent = NULL;
}

/* The dentry NAME in DIR, after expiring it if it is a stale lock. */
lfs_dentry *locks_find_live(lfs *fs, lfs_node *dir, const char *name)
{
	lfs_dentry *d = dentry_find(dir, name);
	if (!d || !d->lease)
		return d;
	/* A lease that may have run out is lost now, not at the next renewal
	 * round: the backend may have granted the name elsewhere already. */
	locks_lost_if_expired(fs, d);
	/* A lookup does not wait for a call on a live lock (a renewal may hang
	 * on the network): while one runs, the name stays as it is.  A lock
	 * past stale_after must not pass for live because a renewal happens
	 * to be running: that call is bounded by network_timeout, so wait for
	 * it once and judge again. */
	if (g_hash_table_contains(fs->busy, d->lease->key)) {
		if (d->lost || !locks_past_stale(fs, d))
			return d;
		g_autofree char *key = g_strdup(d->lease->key);
		bool idle = locks_wait_idle(fs, key); /* bounded: else shown as it is */
		d = dentry_find(dir, name);
		if (!idle || !d || !d->lease || g_hash_table_contains(fs->busy, d->lease->key))
			return d;
	}
	if (d->lost ? locks_drop_lost(fs, d) : locks_expire_if_stale(fs, d))
		return dentry_find(dir, name); /* a new holder may have taken it meanwhile */
	return d;
}

void locks_init(lfs *fs)
{
	fs->held = g_hash_table_new(g_str_hash, g_str_equal);
	fs->busy = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

bool locks_held_under(lfs *fs, const char *prefix)
{
	return locks_key_under(fs->held, prefix);
}

lfs_dentry *locks_find(lfs *fs, const char *key)
{
	return g_hash_table_lookup(fs->held, key);
}

void locks_foreach(lfs *fs, void (*fn)(lfs *fs, lfs_dentry *d, void *user), void *user)
{
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, fs->held);
	while (g_hash_table_iter_next(&it, NULL, &v))
		fn(fs, v, user);
}

void locks_index(lfs *fs, lfs_dentry *d)
{
	g_hash_table_insert(fs->held, d->lease->key, d);
}

unsigned locks_held_count(lfs *fs)
{
	pthread_mutex_lock(&fs->mu);
	unsigned n = g_hash_table_size(fs->held);
	pthread_mutex_unlock(&fs->mu);
	return n;
}
