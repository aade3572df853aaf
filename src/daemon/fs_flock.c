/* flock(2) locks and POSIX record locks (fcntl(2), lockf(3)) held in the
 * backend, across every mount of it.
 *
 * A flock of the file at path P is a lock of the backend in a key space no
 * lock name reaches (".lockfs" is the read-only control directory):
 *   exclusive  .lockfs/flock/P            one holder at a time
 *   shared     .lockfs/flock-sh/P//ID     one key per shared holder
 * ("//" never occurs in a path, so P's shared keys are exactly those under
 * ".lockfs/flock-sh/P//").  A POSIX lock is the same under .lockfs/posix/
 * and .lockfs/posix-sh/: the two kinds are independent, as the kernel's are
 * on a local filesystem (a program may take both on one file, and must not
 * wait for itself).  A shared holder takes its own key, then looks
 * for P's exclusive key, and lets its own go if there is one; an exclusive
 * holder takes P's key, then lists P's shared keys, and lets its key go if
 * there are any.  The backend's calls are linearizable, so of a shared and
 * an exclusive holder the one that took its key second sees the other's:
 * both cannot pass (docs/design.md).  Either may fail when both come at
 * once; a blocking request then tries again, looking before it takes.  That
 * needs looks that see every key held: where the backend may hold a key it
 * cannot describe yet (LOCKFS_BACKEND_UNDESCRIBED: tinystore) they ask its
 * held(), the grants themselves; a backend with neither has shared flocks
 * taken as exclusive ones.
 *
 * Each key is a lease of this mount like a lock name's, a lock dentry of
 * fs->flock_dir: renewed, declared lost before another host could be
 * granted it, released at LOCK_UN or at the last close of its open file
 * description.  Its holder never touches it, so the mount heart-beats it
 * while it is held: a flock is never stale.  A lost flock answers EIO to its
 * owner's next flock call.
 *
 * A blocking request does not keep a FUSE worker: it waits in
 * fs->flock_waiters, tried again by the waiters' thread, at once when a
 * flock of this mount is let go or, where the backend can watch (etcd), the
 * backend says one of its keys changed, and with a backoff otherwise; a
 * signal (FUSE_INTERRUPT) answers it EINTR.
 *
 * POSIX locks differ in whose they are and what they cover.  The owner is
 * the process (FUSE's lock_owner: the kernel's files_struct, shared by its
 * threads), and any close of the file by it lets them go (FUSE_FLUSH); an
 * open file description's lock (F_OFD_SETLK) goes at its last close.  A
 * range is widened to the whole file, never weakened: the owner's ranges are
 * kept here, and the backend key is held, shared while they are all read
 * locks and exclusive once one is a write lock, until none is left.  A
 * conversion keeps what was held when it cannot be granted, as fcntl(2)
 * says, so shared to exclusive takes the exclusive key before the shared one
 * goes.
 */
#include "fs_flock.h"
#include "fs_locks.h"
#include "fs_nodes.h"
#include "fs_remote.h"
#include "fs_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "holder.h"
#include "lockstate.h"
#include "log.h"
#include "metrics.h"
#include "view_format.h"

/* The two kinds of lock, each with its own keys. */
typedef enum {
	FL_FLOCK = 0,
	FL_POSIX = 1
} fl_class;
/* Their keys' prefixes and kinds, indexed by fl_class (fs_rules.c). */
#define EX_PREFIX RULES_EX_PREFIX
#define SH_PREFIX RULES_SH_PREFIX
#define EX_KIND RULES_EX_KIND

/* A blocked request is tried again after this, doubling up to the most. */
#define WAIT_FIRST_US (10 * 1000)
#define WAIT_MOST_US (200 * 1000)
/* How often held flocks are looked at for a heartbeat. */
#define BEAT_CHECK_US (G_USEC_PER_SEC)
/* Each watch of the backend lasts this long (the stop waits for it), and
 * one that failed is made again after the pause. */
#define WATCH_MS 1000
#define WATCH_PAUSE_US (G_USEC_PER_SEC)

/* A POSIX owner's locked range: [start, end), end INT64_MAX for "to the
 * end of the file, however long". */
typedef struct {
	int64_t start, end;
	bool write;
} fl_range;

typedef struct {
	fl_class cls;
	uint64_t owner;  /* flock: the open file description's FUSE handle;
	                 * POSIX: FUSE's lock_owner */
	lfs_node *node;  /* kept (opens) while the flock is */
	int mode;        /* LOCK_SH or LOCK_EX */
	char *key;       /* the backend key held */
	uint64_t serial; /* of its dentry's grant */
	GArray *ranges;  /* POSIX: fl_range, what the owner asked for */
	uint64_t via_fh; /* POSIX: the handle of the last request (F_OFD_SETLK) */
} lfs_flock;

typedef struct {
	fuse_req_t req;
	lfs_node *node; /* kept (opens) while it waits */
	fl_class cls;
	uint64_t owner;
	int mode;
	GArray *ranges; /* POSIX: the owner's ranges once granted */
	uint64_t via_fh;
	char *path; /* as it was asked: N may lose its name while it waits */
	struct lfs_caller who;
	bool interrupted;          /* under fs->flock_mu */
	bool changed;              /* the same: its keys changed while it was tried */
	int64_t next_try, backoff; /* g_get_monotonic_time */
} flock_waiter;

/* "p|f OWNER:NODE" in hex: the key of an owner's lock of a node in
 * fs->flocks, made at every lock and unlock (printf was a tenth of it). */
static char *owner_key(fl_class cls, uint64_t owner, const lfs_node *n)
{
	GString *k = g_string_sized_new(40);
	g_string_append_c(k, cls == FL_POSIX ? 'p' : 'f');
	lockfs_append_hex(k, owner);
	g_string_append_c(k, ':');
	lockfs_append_hex(k, (uint64_t)(uintptr_t)n);
	return g_string_free(k, FALSE);
}

/* The root is "."; other paths as they are. */
static const char *key_path(const char *path)
{
	return *path ? path : ".";
}

static lfs_dentry *flock_dentry(lfs *fs, const lfs_flock *f)
{
	lfs_dentry *d = locks_find(fs, f->key);
	return d && d->serial == f->serial && d->dir == fs->flock_dir ? d : NULL;
}

static void flock_free(lfs *fs, lfs_flock *f)
{
	f->node->opens--;
	node_maybe_free(fs, f->node);
	g_free(f->key);
	if (f->cls == FL_POSIX)
		g_atomic_int_dec_and_test(&fs->posix_records);
	if (f->ranges)
		g_array_unref(f->ranges);
	g_free(f);
}

/* Take KEY for WHO: 0 (*OUT its dentry), -EEXIST, -EIO. */
static int take_key(lfs *fs, const char *key, const struct lfs_caller *who, lfs_dentry **out)
{
	lfs_node *n = node_new(fs, NODE_MEM, S_IFREG | 0644, who->uid, who->gid);
	n->opens++; /* nothing else refers to it until it has a name */
	int r = locks_acquire(fs, fs->flock_dir, key, n, who, out);
	n->opens--;
	if (r) {
		node_maybe_free(fs, n);
		return r == -EEXIST ? r : -EIO;
	}
	return 0;
}

/* Let go of D, the lease of KEY taken for a flock (fs->mu held). */
static void let_go(lfs *fs, lfs_dentry *d, pid_t by)
{
	lfs_node *n = d->node;
	n->opens++;
	if (d->lost)
		locks_drop_lost(fs, d);
	else
		locks_release(fs, d, by);
	n->opens--;
	node_maybe_free(fs, n);
}

typedef struct {
	const char *except;
	unsigned n;
} count_ctx;

static void count_other(const lockfs_lock_info *info, void *user)
{
	count_ctx *c = user;
	if (info->state != LOCKFS_STATE_STALE && (!c->except || strcmp(info->key, c->except)))
		c->n++;
}

/* Whether the backend can look at the grants themselves (held()) or only
 * at records that see every one (no LOCKFS_BACKEND_UNDESCRIBED).  Where
 * neither, shared locks are taken exclusive. */
static bool can_share(const lfs *fs)
{
	return fs->be->held || !(fs->be->flags & LOCKFS_BACKEND_UNDESCRIBED);
}

/* How many shared holders PATH has other than EXCEPT's key (held here):
 * >= 0 (where the backend's held() answers, 1 for "some"), or -EIO. */
static int shared_holders(lfs *fs, fl_class cls, const char *path, const char *except)
{
	if (!can_share(fs))
		return 0; /* every flock is exclusive there: none to look for */
	g_autofree char *prefix = g_strconcat(SH_PREFIX[cls], key_path(path), "//", NULL);
	if (fs->be->held) {
		int r = UNLOCKED(fs, fs->be->held(fs->be, prefix, except ? 1 : 0));
		if (r < 0 || !except)
			return r < 0 ? -EIO : r;
		/* "None but ours" counts ours: it must have been held at the
		 * server when asked, that is, its lease not yet maybe run out. */
		lfs_dentry *own = locks_find(fs, except);
		return own && !own->lost && !locks_lease_expired(fs, own) ? r : -EIO;
	}
	count_ctx c = { except, 0 };
	int r = UNLOCKED(fs, fs->be->list(fs->be, prefix, count_other, &c));
	return r ? -EIO : (int)c.n;
}

/* Whether PATH has an exclusive holder: 1, 0, or -EIO. */
static int exclusive_held(lfs *fs, fl_class cls, const char *path)
{
	g_autofree char *key = g_strconcat(EX_PREFIX[cls], key_path(path), NULL);
	if (fs->be->held) {
		int r = UNLOCKED(fs, fs->be->held(fs->be, key, 0));
		return r < 0 ? -EIO : r;
	}
	lockfs_lock_info info;
	int r = UNLOCKED(fs, fs->be->inspect(fs->be, key, &info));
	if (r == 0) {
		lockfs_lock_info_clear(&info);
		return 1;
	}
	return r == -ENOENT ? 0 : -EIO;
}

static void record(lfs *fs, fl_class cls, lfs_node *n, uint64_t owner, int mode, lfs_dentry *d)
{
	lfs_flock *f = g_new0(lfs_flock, 1);
	f->cls = cls;
	f->owner = owner;
	f->node = n;
	n->opens++;
	f->mode = mode;
	f->key = g_strdup(d->lease->key);
	f->serial = d->serial;
	if (cls == FL_POSIX)
		g_atomic_int_inc(&fs->posix_records);
	g_hash_table_replace(fs->flocks, owner_key(cls, owner, n), f);
}

static void wake_waiters(lfs *fs)
{
	g_mutex_lock(&fs->flock_mu);
	for (GList *l = fs->flock_waiters.head; l; l = l->next) {
		flock_waiter *w = l->data;
		w->next_try = 0;
		w->backoff = WAIT_FIRST_US;
	}
	g_cond_signal(&fs->flock_cond);
	g_mutex_unlock(&fs->flock_mu);
}

/* Let go of OWNER's flock of N, if any: 0, or -EIO when it had been lost
 * (its owner is told at its next flock call). */
static int unlock_owner(lfs *fs, fl_class cls, lfs_node *n, uint64_t owner, pid_t by)
{
	g_autofree char *k = owner_key(cls, owner, n);
	lfs_flock *f = g_hash_table_lookup(fs->flocks, k);
	if (!f)
		return 0;
	g_hash_table_remove(fs->flocks, k); /* frees the table's key; F is freed below */
	lfs_dentry *d = flock_dentry(fs, f);
	int r = d && !d->lost ? 0 : -EIO;
	if (d)
		let_go(fs, d, by);
	flock_free(fs, f);
	wake_waiters(fs);
	return r;
}

/* Let go of the record at owner key HK, whose key was replaced (a
 * conversion), keeping what the new record holds. */
static void drop_converted(lfs *fs, const char *hk, const char *keep_key, pid_t by)
{
	lfs_flock *old = g_hash_table_lookup(fs->flocks, hk);
	if (!old || strcmp(old->key, keep_key) == 0)
		return;
	lfs_dentry *od = flock_dentry(fs, old);
	g_hash_table_remove(fs->flocks, hk); /* the same */
	if (od)
		let_go(fs, od, by);
	flock_free(fs, old);
}

/* One try at MODE (LOCK_SH or LOCK_EX) on N, at PATH, for OWNER, without
 * waiting (LOOK_FIRST: a waiter's retry): 0, -EWOULDBLOCK (held in a way
 * that conflicts), -EIO.  fs->mu held, let go during backend calls. */
/* The exclusive key of PATH, held in *D once no shared holder but OWN_SH
 * (a POSIX owner's own shared key) is seen: 0, -EWOULDBLOCK or -EIO. */
static int take_exclusive(lfs *fs, fl_class cls, const char *path, const char *own_sh,
                          const struct lfs_caller *who, lfs_dentry **d)
{
	g_autofree char *key = g_strconcat(EX_PREFIX[cls], key_path(path), NULL);
	int r = take_key(fs, key, who, d);
	if (r)
		return r == -EEXIST ? -EWOULDBLOCK : r;
	uint64_t serial = (*d)->serial;
	int others = shared_holders(fs, cls, path, own_sh);
	*d = locks_find(fs, key);
	if (!*d || (*d)->serial != serial || (*d)->lost)
		return -EIO; /* lost while we looked */
	if (others) {
		let_go(fs, *d, who->pid);
		return others < 0 ? -EIO : -EWOULDBLOCK;
	}
	return 0;
}

/* A shared key of PATH of our own, held in *D once no exclusive holder is
 * seen (none looked for when HAD: made shared from our exclusive). */
static int take_shared(lfs *fs, fl_class cls, const char *path, bool had,
                       const struct lfs_caller *who, lfs_dentry **d)
{
	g_autofree char *key = g_strdup_printf("%s%s//%016" PRIx64 "%08x", SH_PREFIX[cls],
	                                       key_path(path), ++fs->flock_ids, g_random_int());
	int r = take_key(fs, key, who, d);
	if (r) /* a key of our own, but a backend may count shares (backend.h) */
		return r == -EEXIST ? -EWOULDBLOCK : -EIO;
	uint64_t serial = (*d)->serial;
	/* Made shared from exclusive: the exclusive key is ours. */
	int excl = had ? 0 : exclusive_held(fs, cls, path);
	*d = locks_find(fs, key);
	if (!*d || (*d)->serial != serial || (*d)->lost)
		return -EIO;
	if (excl) {
		let_go(fs, *d, who->pid);
		return excl < 0 ? -EIO : -EWOULDBLOCK;
	}
	return 0;
}

static int flock_try(lfs *fs, fl_class cls, lfs_node *n, const char *path, uint64_t owner, int mode,
                     bool look_first, const struct lfs_caller *who)
{
	/* Where the backend may hold a key it cannot yet describe and cannot
	 * look at its grants (held()), neither look can be trusted: a shared
	 * flock is taken exclusive there, stronger than asked. */
	if (!can_share(fs))
		mode = LOCK_EX;
	g_autofree char *k = owner_key(cls, owner, n);
	lfs_flock *f = g_hash_table_lookup(fs->flocks, k);
	bool had = false;               /* an exclusive lock being made shared */
	g_autofree char *own_sh = NULL; /* POSIX: the shared key kept while made exclusive */
	if (f) {
		lfs_dentry *d = flock_dentry(fs, f);
		/* A lease past its lost deadline is lost now, whether or not the
		 * renewals have said so yet: after a stop of this process, this
		 * request may come before them, and another host may hold it. */
		if (!d || locks_lost_if_expired(fs, d)) {
			lockfs_log(G_LOG_LEVEL_WARNING, f->key,
			           "%s of %s by pid %d: its lock was lost, EIO",
			           cls == FL_POSIX ? "fcntl lock" : "flock", key_path(path),
			           (int)who->pid);
			unlock_owner(fs, cls, n, owner, who->pid);
			return -EIO;
		}
		if (f->mode == mode)
			return 0;
		if (mode == LOCK_SH)
			had = true;
		else if (cls == FL_POSIX)
			own_sh = g_strdup(f->key); /* fcntl(2): kept if not granted */
		else
			/* Shared to exclusive is not atomic (flock(2) says so). */
			unlock_owner(fs, cls, n, owner, who->pid);
	}
	lfs_dentry *d = NULL;
	int r;
	/* A waiting request looks first: each try then costs one read, no
	 * write and no grant in the log.  Only the look after taking a key
	 * decides. */
	int pre = !look_first       ? 0
	          : mode == LOCK_EX ? shared_holders(fs, cls, path, own_sh)
	          : had             ? 0
	                            : exclusive_held(fs, cls, path);
	if (pre)
		return pre < 0 ? -EIO : -EWOULDBLOCK;
	r = mode == LOCK_EX ? take_exclusive(fs, cls, path, own_sh, who, &d)
	                    : take_shared(fs, cls, path, had, who, &d);
	if (r)
		return r;
	/* Converted: the new key is held, now the old one goes. */
	if (had || own_sh) {
		uint64_t serial = d->serial;
		g_autofree char *key = g_strdup(d->lease->key);
		drop_converted(fs, k, key, who->pid);
		d = locks_find(fs, key);
		if (!d || d->serial != serial)
			return -EIO;
	}
	record(fs, cls, n, owner, mode, d);
	if (had)
		wake_waiters(fs);
	return 0;
}

/* ---------------------------------------------------------------- waiters */

static void interrupted(fuse_req_t req, void *data)
{
	lfs *fs = fuse_req_userdata(req);
	flock_waiter *w = data;
	g_mutex_lock(&fs->flock_mu);
	w->interrupted = true;
	g_cond_signal(&fs->flock_cond);
	g_mutex_unlock(&fs->flock_mu);
}

/* Answer W (taken out of the queue) with R and free it. */
static void finish(lfs *fs, flock_waiter *w, int r)
{
	fuse_req_interrupt_func(w->req, NULL, NULL); /* waits for a running one */
	fuse_reply_err(w->req, -r);
	pthread_mutex_lock(&fs->mu);
	w->node->opens--;
	node_maybe_free(fs, w->node);
	pthread_mutex_unlock(&fs->mu);
	if (w->ranges)
		g_array_unref(w->ranges);
	g_free(w->path);
	g_free(w);
}

static void set_ranges(lfs *fs, lfs_node *n, uint64_t owner, GArray *ranges, uint64_t via_fh);

static void try_waiter(lfs *fs, flock_waiter *w)
{
	pthread_mutex_lock(&fs->mu);
	int r = flock_try(fs, w->cls, w->node, w->path, w->owner, w->mode, true, &w->who);
	if (r == 0 && w->cls == FL_POSIX)
		set_ranges(fs, w->node, w->owner, w->ranges, w->via_fh);
	pthread_mutex_unlock(&fs->mu);
	g_mutex_lock(&fs->flock_mu);
	fs->flock_trying = NULL;
	bool stop = w->interrupted || fs->flock_stop;
	if (r == -EWOULDBLOCK && !stop) {
		if (w->changed) /* the answer may be old already */
			w->backoff = WAIT_FIRST_US;
		w->next_try = w->changed ? 0 : g_get_monotonic_time() + w->backoff;
		w->backoff = MIN(w->backoff * 2, WAIT_MOST_US);
		w->changed = false;
		g_queue_push_tail(&fs->flock_waiters, w);
		g_cond_signal(&fs->flock_watch_cond);
		g_mutex_unlock(&fs->flock_mu);
		return;
	}
	g_mutex_unlock(&fs->flock_mu);
	/* Granted as the signal came: the lock is held, and the call says so. */
	finish(fs, w, r == -EWOULDBLOCK ? -EINTR : r);
}

/* ---- orphaned flocks ----
 * A restart of lockfs cannot hand its FUSE connection to the next lockfs
 * (libfuse 3.14), so the descriptors a flock or POSIX lock was taken
 * through die with it: the holder's next flock(2), fcntl(2) or close(2) on
 * them answers ENOTCONN.  Its lock must not go to another host while the
 * holder still runs in the belief that it holds it: the new lockfs keeps
 * it, an orphan, until the holder process exits (a pidfd, or its start
 * time where there is none, so that a reused pid is not taken for it). */
typedef struct {
	char *key;
	uint64_t serial; /* of its dentry's grant */
	int64_t pid;
	uint64_t start;
	int pidfd; /* -1: judged by start time */
} lfs_flock_orphan;

static bool orphan_alive(const lfs_flock_orphan *o)
{
	if (o->pidfd >= 0) {
		struct pollfd p = { .fd = o->pidfd, .events = POLLIN };
		return poll(&p, 1, 0) == 0; /* readable once the process exited */
	}
	return o->start && lockfs_pid_start(o->pid) == o->start;
}

static void orphan_drop_at(lfs *fs, guint i)
{
	lfs_flock_orphan *o = fs->flock_orphans->pdata[i];
	if (o->pidfd >= 0)
		close(o->pidfd);
	g_free(o->key);
	g_free(o);
	g_ptr_array_remove_index_fast(fs->flock_orphans, i);
}

void flock_adopt_orphan(lfs *fs, lfs_dentry *d)
{
	int64_t pid = d->holder.pid;
	int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, (pid_t)pid, 0) : -1;
	/* A pidfd names the process only if it is the one that took the lock. */
	bool alive = d->holder_start && lockfs_pid_start(pid) == d->holder_start;
	if (!alive) {
		if (pidfd >= 0)
			close(pidfd);
		lockfs_log(G_LOG_LEVEL_INFO, d->lease->key,
		           "%s: its holder (pid %" G_GINT64_FORMAT ") exited while lockfs was "
		           "stopped; released",
		           d->lease->key, pid);
		let_go(fs, d, 0);
		return;
	}
	if (!fs->flock_orphans)
		fs->flock_orphans = g_ptr_array_new();
	lfs_flock_orphan *o = g_new0(lfs_flock_orphan, 1);
	o->key = g_strdup(d->lease->key);
	o->serial = d->serial;
	o->pid = pid;
	o->start = d->holder_start;
	o->pidfd = pidfd;
	g_ptr_array_add(fs->flock_orphans, o);
	lockfs_log(G_LOG_LEVEL_INFO, d->lease->key,
	           "%s: kept for pid %" G_GINT64_FORMAT " until it exits (orphaned: the "
	           "descriptor it was taken through died with the previous lockfs)",
	           d->lease->key, pid);
}

bool flock_orphan_key(lfs *fs, const char *key)
{
	lfs_dentry *d = locks_find(fs, key);
	for (guint i = 0; d && fs->flock_orphans && i < fs->flock_orphans->len; i++) {
		lfs_flock_orphan *o = fs->flock_orphans->pdata[i];
		if (o->serial == d->serial && strcmp(o->key, key) == 0)
			return true;
	}
	return false;
}

/* Let go of the orphans whose holder exited; the keys of the rest, to be
 * heart-beaten as every flock is (fs->mu held). */
static void check_orphans(lfs *fs, GPtrArray *keys)
{
	for (guint i = fs->flock_orphans ? fs->flock_orphans->len : 0; i-- > 0;) {
		lfs_flock_orphan *o = fs->flock_orphans->pdata[i];
		lfs_dentry *d = locks_find(fs, o->key);
		if (!d || d->serial != o->serial || d->dir != fs->flock_dir) {
			orphan_drop_at(fs, i);
		} else if (!orphan_alive(o)) {
			lockfs_log(G_LOG_LEVEL_INFO, o->key,
			           "%s: its holder (pid %" G_GINT64_FORMAT ") exited; released",
			           o->key, o->pid);
			orphan_drop_at(fs, i);
			let_go(fs, d, 0);
		} else {
			g_ptr_array_add(keys, g_strdup(o->key));
		}
	}
}

/* Heart-beat every flock held long enough: its holder never does. */
static void beat_flocks(lfs *fs)
{
	int64_t every = fs->stale_after_us / 3;
	pthread_mutex_lock(&fs->mu);
	g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
	check_orphans(fs, keys);
	if (!every) {
		pthread_mutex_unlock(&fs->mu);
		return;
	}
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, fs->flocks);
	while (g_hash_table_iter_next(&it, NULL, &v))
		g_ptr_array_add(keys, g_strdup(((lfs_flock *)v)->key));
	int64_t mono = lockfs_mono_us();
	for (guint i = 0; i < keys->len; i++) {
		lfs_dentry *d = locks_find(fs, keys->pdata[i]);
		if (d && d->dir == fs->flock_dir && !d->lost && mono - d->heartbeat_boot >= every)
			locks_auto_beat(fs, d);
	}
	pthread_mutex_unlock(&fs->mu);
}

static gpointer waiters_main(gpointer data)
{
	lfs *fs = data;
	int64_t next_beat = g_get_monotonic_time() + BEAT_CHECK_US;
	g_mutex_lock(&fs->flock_mu);
	while (!fs->flock_stop) {
		int64_t now = g_get_monotonic_time(), wake = next_beat;
		flock_waiter *due = NULL;
		bool due_interrupted = false;
		for (GList *l = fs->flock_waiters.head; l; l = l->next) {
			flock_waiter *w = l->data;
			if (w->interrupted || w->next_try <= now) {
				due = w;
				/* Read here, under flock_mu: interrupted() may set it
				 * the moment the mutex is let go. */
				due_interrupted = w->interrupted;
				g_queue_delete_link(&fs->flock_waiters, l);
				fs->flock_trying = due_interrupted ? NULL : due;
				break;
			}
			wake = MIN(wake, w->next_try);
		}
		if (due) {
			g_mutex_unlock(&fs->flock_mu);
			if (due_interrupted)
				finish(fs, due, -EINTR);
			else
				try_waiter(fs, due);
			g_mutex_lock(&fs->flock_mu);
			continue;
		}
		if (now >= next_beat) {
			g_mutex_unlock(&fs->flock_mu);
			beat_flocks(fs);
			g_mutex_lock(&fs->flock_mu);
			next_beat = g_get_monotonic_time() + BEAT_CHECK_US;
			continue;
		}
		g_cond_wait_until(&fs->flock_cond, &fs->flock_mu, wake);
	}
	flock_waiter *w;
	while ((w = g_queue_pop_head(&fs->flock_waiters))) {
		g_mutex_unlock(&fs->flock_mu);
		finish(fs, w, -EINTR);
		g_mutex_lock(&fs->flock_mu);
	}
	g_mutex_unlock(&fs->flock_mu);
	return NULL;
}

/* The backend says KEY changed (NULL: anything may have): the waiters for
 * its file try again now.  A hint: what they are granted is acquire()'s. */
static bool waits_for(const flock_waiter *w, const char *key)
{
	const char *p = key_path(w->path);
	if (!key)
		return true;
	if (g_str_has_prefix(key, EX_PREFIX[w->cls]))
		return strcmp(key + strlen(EX_PREFIX[w->cls]), p) == 0;
	if (!g_str_has_prefix(key, SH_PREFIX[w->cls]))
		return false;
	const char *rest = key + strlen(SH_PREFIX[w->cls]);
	return g_str_has_prefix(rest, p) && g_str_has_prefix(rest + strlen(p), "//");
}

static void on_change(const char *key, void *user)
{
	lfs *fs = user;
	g_mutex_lock(&fs->flock_mu);
	bool any = false;
	flock_waiter *trying = fs->flock_trying;
	if (trying && waits_for(trying, key))
		trying->changed = true;
	for (GList *l = fs->flock_waiters.head; l; l = l->next) {
		flock_waiter *w = l->data;
		bool hit = waits_for(w, key);
		if (hit) {
			if (key)
				metrics_count(M_WAIT_WATCHED);
			w->next_try = 0;
			w->backoff = WAIT_FIRST_US;
			any = true;
		}
	}
	if (any)
		g_cond_signal(&fs->flock_cond);
	g_mutex_unlock(&fs->flock_mu);
}

/* After wait_free() found a key free, the next wait waits this long, so
 * that the waiters it woke ask for the key first: the next wait then
 * stands in line behind whichever took it, not in its way.  A key found
 * free at once waits longer: its waiter waits for something else (shared
 * holders), and polls. */
#define FREE_PAUSE_US (5 * 1000)
#define FREE_AT_ONCE_US (10 * 1000)
#define FREE_AT_ONCE_PAUSE_US (100 * 1000)

/* While requests wait, the backend's keys of flocks and POSIX locks are
 * watched (watch()), or the exclusive key of the waiter first in line is
 * waited on (wait_free()), so a lock let go through another host is tried
 * for at once rather than at the next poll. */
static gpointer watcher_main(gpointer data)
{
	lfs *fs = data;
	g_mutex_lock(&fs->flock_mu);
	while (!fs->flock_stop) {
		if (g_queue_is_empty(&fs->flock_waiters)) {
			g_cond_wait_until(&fs->flock_watch_cond, &fs->flock_mu,
			                  g_get_monotonic_time() + G_USEC_PER_SEC);
			continue;
		}
		g_autofree char *key = NULL;
		if (!fs->be->watch) {
			const flock_waiter *w = g_queue_peek_head(&fs->flock_waiters);
			key = g_strconcat(EX_PREFIX[w->cls], key_path(w->path), NULL);
		}
		g_mutex_unlock(&fs->flock_mu);
		int64_t began = g_get_monotonic_time(), pause = 0;
		bool here = false;
		if (key) {
			/* Held through this mount: its release wakes the waiters
			 * itself, and a wait in line would only come first. */
			pthread_mutex_lock(&fs->mu);
			here = (locks_find(fs, key) != NULL);
			pthread_mutex_unlock(&fs->mu);
		}
		if (here) {
			pause = FREE_AT_ONCE_PAUSE_US;
		} else if (key) {
			int r = fs->be->wait_free(fs->be, key, WATCH_MS);
			if (r == 1)
				on_change(key, fs);
			if (r < 0)
				pause = WATCH_PAUSE_US;
			else if (r == 1)
				pause = g_get_monotonic_time() - began < FREE_AT_ONCE_US
				                ? FREE_AT_ONCE_PAUSE_US
				                : FREE_PAUSE_US;
		} else {
			int r = fs->be->watch(fs->be, ".lockfs/", WATCH_MS, on_change, fs);
			/* A watch the server ended well before its time counts as
			 * broken off: made again at once, it could spin. */
			if (r || g_get_monotonic_time() - began < WATCH_MS * 1000 / 2)
				pause = WATCH_PAUSE_US;
		}
		g_mutex_lock(&fs->flock_mu);
		/* A waiter queued again signals the cond.  A watch that failed
		 * may be made again then (the waiters' backoff bounds it); a
		 * wait_free() pause is kept whole, or a key found free at once
		 * would be waited on at every retry of its waiter. */
		int64_t until = g_get_monotonic_time() + pause;
		while (pause && !fs->flock_stop &&
		       g_cond_wait_until(&fs->flock_watch_cond, &fs->flock_mu, until) && key)
			;
	}
	g_mutex_unlock(&fs->flock_mu);
	return NULL;
}

/* ---------------------------------------------------------------- requests */

void flock_init(lfs *fs)
{
	fs->flock_dir = node_new(fs, NODE_MEM, S_IFDIR | 0700, 0, 0);
	fs->flock_dir->nlink = 2; /* never freed, never "removed" */
	fs->flocks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_mutex_init(&fs->flock_mu);
	g_cond_init(&fs->flock_cond);
	g_cond_init(&fs->flock_watch_cond);
	g_queue_init(&fs->flock_waiters);
}

/* At exit, after flock_stop, with no other thread left: the records of
 * flocks and POSIX locks, orphans and waiters (their nodes and leases are
 * nodes_fini's; the session their requests came through is gone). */
void flock_fini(lfs *fs)
{
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, fs->flocks);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		lfs_flock *f = v;
		g_free(f->key);
		if (f->ranges)
			g_array_unref(f->ranges);
		g_free(f);
	}
	g_hash_table_destroy(fs->flocks);
	fs->flocks = NULL;
	while (fs->flock_orphans && fs->flock_orphans->len)
		orphan_drop_at(fs, fs->flock_orphans->len - 1);
	if (fs->flock_orphans)
		g_ptr_array_free(fs->flock_orphans, TRUE);
	fs->flock_orphans = NULL;
	flock_waiter *w;
	while ((w = g_queue_pop_head(&fs->flock_waiters))) {
		if (w->ranges)
			g_array_unref(w->ranges);
		g_free(w->path);
		g_free(w);
	}
	g_mutex_clear(&fs->flock_mu);
	g_cond_clear(&fs->flock_cond);
	g_cond_clear(&fs->flock_watch_cond);
}

void flock_start(lfs *fs)
{
	fs->flock_thread = g_thread_new("lockfs-flock", waiters_main, fs);
	if ((fs->be->watch || fs->be->wait_free) && (fs->be->flags & LOCKFS_BACKEND_SHARED))
		fs->flock_watcher = g_thread_new("lockfs-watch", watcher_main, fs);
}

void flock_stop(lfs *fs)
{
	if (!fs->flock_thread)
		return;
	g_mutex_lock(&fs->flock_mu);
	fs->flock_stop = true;
	g_cond_signal(&fs->flock_cond);
	g_cond_signal(&fs->flock_watch_cond);
	g_mutex_unlock(&fs->flock_mu);
	g_thread_join(fs->flock_thread);
	fs->flock_thread = NULL;
	if (fs->flock_watcher)
		g_thread_join(fs->flock_watcher);
	fs->flock_watcher = NULL;
}

/* Queue REQ to wait for MODE (fs->mu held, and let go here); RANGES
 * (POSIX, taken over) are the owner's once granted. */
static void wait_for(lfs *fs, fuse_req_t req, fl_class cls, lfs_node *n, char *path, uint64_t owner,
                     int mode, GArray *ranges, uint64_t via_fh, const struct lfs_caller *who)
{
	flock_waiter *w = g_new0(flock_waiter, 1);
	w->req = req;
	w->path = path;
	w->node = n;
	n->opens++;
	w->cls = cls;
	w->owner = owner;
	w->mode = mode;
	w->ranges = ranges;
	w->via_fh = via_fh;
	w->who = *who;
	w->backoff = WAIT_FIRST_US;
	w->next_try = g_get_monotonic_time() + w->backoff;
	pthread_mutex_unlock(&fs->mu);
	/* Before it is queued: once queued, another thread may answer it. */
	fuse_req_interrupt_func(req, interrupted, w);
	g_mutex_lock(&fs->flock_mu);
	g_queue_push_tail(&fs->flock_waiters, w);
	g_cond_signal(&fs->flock_cond);
	g_cond_signal(&fs->flock_watch_cond);
	g_mutex_unlock(&fs->flock_mu);
}

void flock_request(lfs *fs, fuse_req_t req, lfs_node *n, uint64_t owner, int op,
                   const struct lfs_caller *who)
{
	int mode = op & (LOCK_SH | LOCK_EX | LOCK_UN);
	pthread_mutex_lock(&fs->mu);
	int r;
	if (mode == LOCK_UN) {
		r = unlock_owner(fs, FL_FLOCK, n, owner, who->pid);
	} else if (mode != LOCK_SH && mode != LOCK_EX) {
		r = -EINVAL;
	} else {
		/* The path when asked: what it locks, also if N loses the name. */
		char *path = n->kind == NODE_CONTROL ? NULL : node_path(fs, n);
		r = path ? flock_try(fs, FL_FLOCK, n, path, owner, mode, false, who) : -ENOLCK;
		if (r == -EWOULDBLOCK && !(op & LOCK_NB)) {
			wait_for(fs, req, FL_FLOCK, n, path, owner, mode, NULL, 0, who);
			return;
		}
		g_free(path);
	}
	pthread_mutex_unlock(&fs->mu);
	fuse_reply_err(req, -r);
}

void flock_release_owner(lfs *fs, lfs_node *n, uint64_t owner)
{
	unlock_owner(fs, FL_FLOCK, n, owner, LOCKS_BY_CLOSE);
}

/* ---------------------------------------------------------------- POSIX locks */

/* RANGES with [START, END) set to WRITE, or unlocked (UNLOCK): a new array. */
static GArray *ranges_apply(const GArray *ranges, int64_t start, int64_t end, bool write,
                            bool unlock)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(fl_range));
	for (guint i = 0; ranges && i < ranges->len; i++) {
		fl_range r = g_array_index(ranges, fl_range, i);
		if (r.end <= start || r.start >= end) {
			g_array_append_val(out, r);
			continue;
		}
		/* What of R lies outside [start, end) stays as it was. */
		if (r.start < start) {
			fl_range left = { r.start, start, r.write };
			g_array_append_val(out, left);
		}
		if (r.end > end) {
			fl_range right = { end, r.end, r.write };
			g_array_append_val(out, right);
		}
	}
	if (!unlock) {
		fl_range nr = { start, end, write };
		g_array_append_val(out, nr);
	}
	return out;
}

/* The backend lock RANGES need: LOCK_EX, LOCK_SH or 0 (none). */
static int ranges_mode(const GArray *ranges)
{
	for (guint i = 0; i < ranges->len; i++)
		if (g_array_index(ranges, fl_range, i).write)
			return LOCK_EX;
	return ranges->len ? LOCK_SH : 0;
}

static void set_ranges(lfs *fs, lfs_node *n, uint64_t owner, GArray *ranges, uint64_t via_fh)
{
	g_autofree char *k = owner_key(FL_POSIX, owner, n);
	lfs_flock *f = g_hash_table_lookup(fs->flocks, k);
	if (!f)
		return;
	if (f->ranges)
		g_array_unref(f->ranges);
	f->ranges = g_array_ref(ranges);
	f->via_fh = via_fh;
}

/* [start, end) of LK (libfuse gives l_whence SEEK_SET; l_len 0: to the end). */
static bool lock_range(const struct flock *lk, int64_t *start, int64_t *end)
{
	if (lk->l_start < 0 || lk->l_len < 0)
		return false;
	*start = lk->l_start;
	*end = lk->l_len == 0 || lk->l_len > INT64_MAX - lk->l_start ? INT64_MAX
	                                                             : lk->l_start + lk->l_len;
	return true;
}

void flock_posix_setlk(lfs *fs, fuse_req_t req, lfs_node *n, uint64_t owner, uint64_t fh,
                       const struct flock *lk, bool sleep, const struct lfs_caller *who)
{
	int64_t start, end;
	if (!lock_range(lk, &start, &end) ||
	    (lk->l_type != F_RDLCK && lk->l_type != F_WRLCK && lk->l_type != F_UNLCK)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	pthread_mutex_lock(&fs->mu);
	g_autofree char *k = owner_key(FL_POSIX, owner, n);
	lfs_flock *f = g_hash_table_lookup(fs->flocks, k);
	g_autoptr(GArray) ranges = ranges_apply(f ? f->ranges : NULL, start, end,
	                                        lk->l_type == F_WRLCK, lk->l_type == F_UNLCK);
	int mode = ranges_mode(ranges), r;
	if (!mode) {
		r = unlock_owner(fs, FL_POSIX, n, owner, who->pid);
	} else {
		char *path = n->kind == NODE_CONTROL ? NULL : node_path(fs, n);
		r = path ? flock_try(fs, FL_POSIX, n, path, owner, mode, false, who) : -ENOLCK;
		if (r == 0)
			set_ranges(fs, n, owner, ranges, fh);
		if (r == -EWOULDBLOCK && sleep) {
			wait_for(fs, req, FL_POSIX, n, path, owner, mode, g_array_ref(ranges), fh,
			         who);
			return;
		}
		g_free(path);
	}
	pthread_mutex_unlock(&fs->mu);
	fuse_reply_err(req, r == -EWOULDBLOCK ? EAGAIN : -r);
}

typedef struct {
	const char *except;
	lockfs_lock_info info;
	bool found;
} first_ctx;

static void first_other(const lockfs_lock_info *info, void *user)
{
	first_ctx *c = user;
	if (c->found || info->state == LOCKFS_STATE_STALE ||
	    (c->except && strcmp(info->key, c->except) == 0))
		return;
	remote_info_copy(&c->info, info);
	c->found = true;
}

/* F_GETLK: a lock of another owner that would keep LK out, in *LK
 * (whole-file: l_start 0, l_len 0; l_pid 0 for another host's), or F_UNLCK. */
int flock_posix_getlk(lfs *fs, lfs_node *n, uint64_t owner, struct flock *lk)
{
	if (lk->l_type == F_UNLCK)
		return 0;
	if (lk->l_type != F_RDLCK && lk->l_type != F_WRLCK)
		return -EINVAL;
	pthread_mutex_lock(&fs->mu);
	g_autofree char *k = owner_key(FL_POSIX, owner, n);
	lfs_flock *f = g_hash_table_lookup(fs->flocks, k);
	g_autofree char *own = f ? g_strdup(f->key) : NULL;
	g_autofree char *path = n->kind == NODE_CONTROL ? NULL : node_path(fs, n);
	g_autofree char *ex = path ? g_strconcat(EX_PREFIX[FL_POSIX], key_path(path), NULL) : NULL;
	/* Held through this mount by another owner: known here, with no round
	 * trip, and before a backend that writes its records after the grant
	 * (tinystore) could describe it. */
	lfs_dentry *mine = ex && (!own || strcmp(own, ex)) ? locks_find(fs, ex) : NULL;
	if (mine && mine->dir == fs->flock_dir && !mine->lost) {
		lk->l_type = F_WRLCK;
		lk->l_whence = SEEK_SET;
		lk->l_start = 0;
		lk->l_len = 0;
		lk->l_pid = (pid_t)mine->holder.pid;
		pthread_mutex_unlock(&fs->mu);
		return 0;
	}
	pthread_mutex_unlock(&fs->mu);
	if (!path)
		return -ENOLCK;
	first_ctx c = { .except = own };
	int r = 0;
	if (!own || strcmp(own, ex) != 0) {
		r = fs->be->inspect(fs->be, ex, &c.info);
		if (r == 0)
			c.found = c.info.state != LOCKFS_STATE_STALE;
		if (r == 0 && !c.found)
			lockfs_lock_info_clear(&c.info);
		else if (r == -ENOENT)
			r = 0;
	}
	bool write_conflict = c.found;
	if (!r && !c.found && lk->l_type == F_WRLCK) {
		g_autofree char *prefix =
		        g_strconcat(SH_PREFIX[FL_POSIX], key_path(path), "//", NULL);
		r = fs->be->list(fs->be, prefix, first_other, &c);
	}
	if (r)
		return -EIO;
	if (!c.found) {
		lk->l_type = F_UNLCK;
		return 0;
	}
	lk->l_type = write_conflict ? F_WRLCK : F_RDLCK;
	lk->l_whence = SEEK_SET;
	lk->l_start = 0;
	lk->l_len = 0;
	/* A pid is this host's to name; another host's means nothing here. */
	const char *host = c.info.holder.host;
	lk->l_pid = host && strcmp(host, lockfs_holder_host()) == 0 ? (pid_t)c.info.holder.pid : 0;
	lockfs_lock_info_clear(&c.info);
	return 0;
}

bool flock_posix_any(lfs *fs)
{
	return g_atomic_int_get(&fs->posix_records) > 0;
}

void flock_posix_flush(lfs *fs, lfs_node *n, uint64_t owner)
{
	unlock_owner(fs, FL_POSIX, n, owner, LOCKS_BY_CLOSE);
}

void flock_posix_release_fh(lfs *fs, lfs_node *n, uint64_t fh)
{
	if (!flock_posix_any(fs))
		return; /* the common last close: nothing to look for */
	g_autoptr(GPtrArray) owners = g_ptr_array_new();
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, fs->flocks);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		lfs_flock *f = v;
		if (f->cls == FL_POSIX && f->node == n && f->via_fh == fh)
			g_ptr_array_add(owners, (gpointer)(uintptr_t)f->owner);
	}
	for (guint i = 0; i < owners->len; i++)
		unlock_owner(fs, FL_POSIX, n, (uint64_t)(uintptr_t)owners->pdata[i],
		             LOCKS_BY_CLOSE);
}

/* The key of the lock of kind KIND ("flock" or "posix") held through this
 * mount on N that process TGID reads the fence of: the exclusive one, else
 * a shared one that process holds, else the newest shared one held here;
 * NULL when none is (fs->mu held).  What `user.lockfs.flock.fence` and
 * `user.lockfs.posix.fence` show, so that a flock or lockf holder can hand
 * its fence on, as LOCKFS_FENCE does for a lock name. */
char *flock_fence_key(lfs *fs, lfs_node *n, const char *kind, pid_t tgid)
{
	fl_class cls = strcmp(kind, EX_KIND[FL_POSIX]) == 0 ? FL_POSIX : FL_FLOCK;
	lfs_dentry *best = NULL;
	int rank = 0; /* 3 exclusive, 2 the caller's shared, 1 another shared */
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, fs->flocks);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		lfs_flock *f = v;
		/* By the grant's serial: a lost lock's record may stay until its
		 * owner's next call, and its key may be another's grant by then. */
		lfs_dentry *d = f->cls == cls && f->node == n ? flock_dentry(fs, f) : NULL;
		if (!d || !d->lease || d->lost)
			continue;
		int r = f->mode == LOCK_EX ? 3 : d->holder.pid == tgid ? 2 : 1;
		if (r > rank || (r == rank && d->serial > best->serial)) {
			best = d;
			rank = r;
		}
	}
	return best ? g_strdup(best->lease->key) : NULL;
}
