/* The lock filesystem's internal model.
 *
 * Nodes are inodes: an in-memory file, directory or symlink, or a file or
 * directory of the directory lockfs is mounted over (passthrough, "disk"
 * nodes, reached through an O_PATH descriptor).  Dentries are names in a
 * directory.  A dentry whose name ends in the lock suffix carries the lease
 * that makes it exist: lock names live only in memory and in the backend,
 * whatever the directory they are in.
 *
 * Node ids given to the kernel are node pointers; st_ino is a small counter.
 * Every kernel cache timeout is 0 (other processes, lockfs itself and, with
 * shared backends, other hosts change lock names), and a hard link answers
 * with the source's node id and nlink already counted, so both names agree
 * the moment link() returns (research/legacy-clients.md §7.2).
 *
 * Locks.  fs->mu guards the model: every node, every dentry, and each
 * field of struct lfs not marked otherwise below.  Three other mutexes
 * guard what threads share outside it, each named at its fields:
 * fs->flock_mu (the flock waiters' queue, fs_flock.c), fs->remote_mu (what
 * other mounts hold, fs_remote.c) and fs->renew_mu (the renew thread's
 * sleep, fs_leases.c).  Fields "set once" are written before the FUSE loop
 * and the threads start (lfs_new, main) and only read after; fields of a
 * file's own threads are written by that file's start and stop only.
 *
 * Lock order -- a mutex may be taken while holding those to its left:
 *
 *	fs->mu  ->  fs->flock_mu
 *	fs->mu  ->  fs->remote_mu
 *	fs->renew_mu  (alone: let go before fs->mu is taken)
 *
 * fs->flock_mu and fs->remote_mu are leaves: nothing is taken while one of
 * them is held (fs->flock_mu is let go before fs->mu is taken), and they
 * are never held together.  Backend calls are made without fs->mu
 * (UNLOCKED below), on a key claimed first (locks_claim: fs->busy,
 * fs->cond).  GLib's queues (fs->inval, the renew pool) and metrics.c's
 * atomics lock for themselves.  service.c's status_mu guards only its own
 * thread's stop flag.
 */
#ifndef LOCKFS_FS_H
#define LOCKFS_FS_H

#include "fs_rules.h"

#include <fuse_lowlevel.h>
#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/config.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct lfs_node lfs_node;
typedef struct lfs_dentry lfs_dentry;

typedef enum {
	NODE_MEM,     /* in memory */
	NODE_DISK,    /* passthrough to the directory under the mount */
	NODE_CONTROL, /* .lockfs/ and the files in it */
} lfs_node_kind;

/* Every field: fs->mu. */
struct lfs_node {
	lfs_node_kind kind;
	uint64_t st_ino;
	uint64_t nlookup;    /* kernel references (lookup/create/link replies) */
	uint32_t opens;      /* open handles */
	uint32_t nlink;      /* names in memory (dentries); disk nodes add the disk's */
	uint32_t lock_names; /* how many of those names are lock names */
	lfs_dentry *locks;   /* those lock names, linked through next_lock */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec atime, mtime, ctime;
	bool lost;     /* its lock was broken or lost: writes fail ESTALE */
	bool relinked; /* kept its other name when a lock name went (inval_other_name) */

	/* NODE_MEM regular file or symlink target. */
	char *data;
	size_t size, cap;

	/* Directories (every kind): names in memory.  For disk directories only
	 * lock names are here; ordinary names live on disk. */
	GHashTable *children; /* name → lfs_dentry */
	lfs_node *parent;     /* directories: where ".." leads */
	lfs_dentry *self;     /* directories: the dentry naming this directory */
	lfs_dentry *named;    /* files: a name of this node (its latest), or NULL */
	char *old_path;       /* files: the path of the last name it lost */

	/* Locks held through another mount (shared backends): a read-only
	 * snapshot made at lookup, freed when the kernel forgets it. */
	lockfs_lock_info *remote;
	/* Its lock was lost: what it was, for xattrs read through descriptors
	 * still open on it once the name has gone. */
	lockfs_lock_info *lost_info;

	/* NODE_DISK */
	int fd;    /* O_PATH */
	dev_t dev; /* disk identity, key of fs->disk_nodes */
	ino_t dino;

	/* NODE_CONTROL: path relative to the mount root ("" for .lockfs itself). */
	char *ctl_path;
	bool ctl_status;  /* .lockfs/status */
	bool ctl_break;   /* .lockfs/break: write "KEY [FENCE]" to break a lock */
	bool ctl_metrics; /* .lockfs/metrics */
};

/* Every field: fs->mu. */
struct lfs_dentry {
	char *name;
	lfs_node *dir;
	lfs_node *node;
	/* Lock names only: */
	lfs_dentry *next_lock;
	lockfs_lease *lease;
	lockfs_holder holder;
	pid_t holder_ppid; /* the holder's parent when it took the lock */
	/* Taken here within a minute of this mount losing the key's previous
	 * lock, whose holder and parent these are (locks_unlink). */
	pid_t prev_lost_pid, prev_lost_ppid;
	uid_t prev_lost_uid;
	int64_t heartbeat_us;   /* last heartbeat seen (wall clock, as shown) */
	int64_t heartbeat_boot; /* the same on the boot clock: staleness */
	int64_t hb_sent_mono;   /* last heartbeat sent to the backend */
	bool hb_unsent;         /* a heartbeat since then, not yet sent */
	bool beat_pending;      /* a change the rate limit held back */
	/* A call of this lock waits in the renewal workers' queue. */
	bool renew_queued, beat_queued, confirm_queued;
	int64_t renewed_mono;  /* when the last successful renewal was sent */
	int64_t granted_mono;  /* when it was granted */
	uint64_t serial;       /* which grant: a claim re-finds the dentry by it */
	bool fence_final;      /* the backend has confirmed lease->fence */
	char *token;           /* the backend's lease_token(), for the lock record */
	uint64_t holder_start; /* flocks: the holder's start time (lockstate.h) */
	bool lost;             /* the lease is gone: shown as lost until unlinked */
	bool let_go;           /* unlinked while the backend did not answer */
};

typedef struct {
	pthread_mutex_t mu;
	/* Set once (lfs_new; se: main, through lfs_attach_session). */
	const lockfs_settings *set;
	lockfs_backend *be;
	struct fuse_session *se;
	char *mountpoint;
	size_t suffix_len;
	lfs_node *root;
	lfs_node *control; /* .lockfs */
	/* fs->mu from here to renew_thread, unless said otherwise. */
	GHashTable *disk_nodes; /* "dev:ino" → lfs_node */
	uint64_t next_ino;
	uint64_t next_serial;     /* of lock grants */
	int64_t stale_after_us;   /* set once */
	int64_t heartbeat_min_us; /* set once */
	GHashTable *held;         /* lease key → lock dentry holding it here */
	GHashTable *saw_free;     /* "pid:key" → when that process last found KEY free */
	/* key → lfs_lost: locks this mount lost lately, shown in .lockfs/ as
	 * lost while nobody else holds the name (fs_locks.c). */
	GHashTable *lost_recent;
	/* How long the kernel may trust attributes: 0 where other hosts change
	 * locks; otherwise every change goes through the kernel, or through
	 * lockfs, which invalidates what it changed (fs_inval). */
	double attr_timeout;  /* set once */
	double entry_timeout; /* the same, for names; set once */
	/* Node ids whose kernel attributes are stale: the queue locks for
	 * itself; it and its thread are inval_start's and inval_stop's. */
	GAsyncQueue *inval;
	GThread *inval_thread;
	/* Keys whose lock a thread is changing at the backend (fs_locks.c). */
	GHashTable *busy;
	pthread_cond_t cond; /* with fs->mu: a key of busy is let go */
	bool shared;         /* the backend is shared with other hosts; set once */
	/* fs_remote.c: what the backend said of locks held elsewhere, under
	 * fs->remote_mu (taken with or without fs->mu). */
	GMutex remote_mu;
	GHashTable *remote;
	int64_t remote_cleared_mono; /* when the table was last emptied (its cap) */
	/* fs_leases.c: the renew thread (leases_start, leases_stop), which
	 * sleeps on renew_cond under fs->renew_mu; renew_stop: fs->renew_mu. */
	GThread *renew_thread;
	/* Workers of the renewal round: made under fs->mu (fs_locks.c),
	 * freed by locks_renew_stop once the renew thread has ended. */
	GThreadPool *renew_pool;
	GMutex renew_mu;
	GCond renew_cond;
	bool renew_stop;
	/* lfs_orphan: leases this mount lost whose entry the backend may still
	 * keep (a renewal that arrived after its deadline): fs_locks.c; fs->mu. */
	GPtrArray *orphans;
	/* fs_flock.c: flock(2) locks.  Their leases are lock dentries of this
	 * directory, which no name leads to, named by their backend keys. */
	lfs_node *flock_dir; /* set once */
	GHashTable *flocks;  /* "owner:node" → lfs_flock; fs->mu */
	/* The waiters' queue: flock_cond, flock_waiters, flock_watch_cond,
	 * flock_trying, flock_stop and each waiter's interrupted, changed,
	 * next_try and backoff are under flock_mu, taken under fs->mu or
	 * alone, never held while fs->mu is taken.  The two threads are
	 * flock_start's and flock_stop's. */
	GMutex flock_mu;
	GCond flock_cond;
	GQueue flock_waiters;
	GThread *flock_thread;
	GThread *flock_watcher; /* the backend's watch, for the waiters */
	GCond flock_watch_cond;
	void *flock_trying; /* the waiter being tried, out of the queue */
	bool flock_stop;
	uint64_t flock_ids; /* shared holders' keys; fs->mu */
	/* POSIX locks held (records of fs->flocks), read without fs->mu so
	 * that a close (FUSE_FLUSH) of a mount without any costs no lock:
	 * atomic (g_atomic_int_*), changed under fs->mu. */
	gint posix_records;
	/* Flocks and POSIX locks taken back at a restart, kept until their
	 * holder exits (fs_flock.c; fs->mu). */
	GPtrArray *flock_orphans;
	/* fs_record.c: the record of this mount's locks in state_dir (NULL:
	 * none kept; set once, record_attach), written under fs->mu. */
	struct lockfs_lockstate *state;
	bool state_failing; /* the last write of it failed (said once); fs->mu */
	char *session;      /* the backend session token last recorded; fs->mu */
} lfs;

/* Run EXPR, a backend call (of a claimed key), without fs->mu: it may wait
 * on the network. */
#define UNLOCKED(fs, expr)                       \
	({                                       \
		pthread_mutex_unlock(&(fs)->mu); \
		int r_ = (expr);                 \
		pthread_mutex_lock(&(fs)->mu);   \
		r_;                              \
	})

/* The same for an expression whose value is a pointer. */
#define UNLOCKED_PTR(fs, expr)                   \
	({                                       \
		pthread_mutex_unlock(&(fs)->mu); \
		__typeof__(expr) p_ = (expr);    \
		pthread_mutex_lock(&(fs)->mu);   \
		p_;                              \
	})

/* ---- fs_nodes.c: the model ---- */
lfs_node *node_new(lfs *fs, lfs_node_kind kind, mode_t mode, uid_t uid, gid_t gid);
void node_maybe_free(lfs *fs, lfs_node *n);
lfs_dentry *dentry_add(lfs *fs, lfs_node *dir, const char *name, lfs_node *node);
/* Take D out of its directory: D itself, not freed, when it carries a lease
 * (the caller lets the lease go, then dentry_free), else NULL (freed). */
lfs_dentry *dentry_remove(lfs *fs, lfs_dentry *d) G_GNUC_WARN_UNUSED_RESULT;
void dentry_free(lfs *fs, lfs_dentry *d);
lfs_dentry *dentry_find(lfs_node *dir, const char *name);
bool name_is_lock(const lfs *fs, const char *name);
char *node_key(lfs *fs, const lfs_node *dir, const char *name); /* lock key: path from the root */
/* N's path from the root ("" for the root), NULL when it has no name. */
char *node_path(lfs *fs, lfs_node *n);
int node_getattr(lfs *fs, lfs_node *n, struct stat *st);
void node_touch(lfs_node *n, bool m, bool c);
lfs_dentry *node_lock_dentry(lfs *fs, lfs_node *n); /* one lock name of N, or NULL */
int node_set_size(lfs_node *n, size_t size);
/* NAME of disk directory DIR: the node of the file on disk, the one
 * already known when the kernel has it. */
int node_lookup_disk(lfs *fs, lfs_node *dir, const char *name, lfs_node **out);
static inline fuse_ino_t node_id(lfs *fs, lfs_node *n)
{
	return n == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}
static inline lfs_node *node_of(lfs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? fs->root : (lfs_node *)(uintptr_t)ino;
}

/* ---- fs_locks.c: lock names ---- */
void locks_claim(lfs *fs, const char *key);
/* The same for a request: false (logged) when the key stays busy longer
 * than a few network timeouts; the request then answers EIO. */
bool locks_claim_bounded(lfs *fs, const char *key);
void locks_unclaim(lfs *fs, const char *key);
/* Wait until no thread of this mount is changing KEY at the backend: a lock
 * this mount is taking or letting go must not look like another host's.
 * False (logged) when it stays busy as long as locks_claim_bounded waits. */
bool locks_wait_idle(lfs *fs, const char *key);
/* The same for every key under PREFIX ("dir/"). */
bool locks_wait_idle_under(lfs *fs, const char *prefix);
/* Whether a key of KEYS (a set of lock keys) lies under PREFIX. */
bool locks_key_under(GHashTable *keys, const char *prefix);
int locks_acquire(lfs *fs, lfs_node *dir, const char *name, lfs_node *node,
                  const struct lfs_caller *who, lfs_dentry **out);
int locks_unlink(lfs *fs, lfs_dentry *d, const struct lfs_caller *who);
/* locks_release's BY for a lock let go at the last close of its file. */
#define LOCKS_BY_CLOSE (-1)
/* Release D, its holder's own doing (BY: the pid that asked, 0 at unmount):
 * what locks_unlink does once it has judged who asks. */
int locks_release(lfs *fs, lfs_dentry *d, pid_t by);
/* A heartbeat of D now, sent at once: for a lock whose holder is alive
 * without touching it (a flock, alive while its file is open). */
int locks_auto_beat(lfs *fs, lfs_dentry *d);
/* Break D for WHO whoever holds it (logged and notified); with FENCE, only
 * if it is still the holder's (-ESTALE otherwise). */
int locks_break(lfs *fs, lfs_dentry *d, const struct lfs_caller *who, const char *fence);
/* Break KEY held through another mount. */
int locks_break_remote(lfs *fs, const char *key, const char *fence, const struct lfs_caller *who);
void locks_mark_lost(lfs *fs, lfs_dentry *d, const char *why);
/* A lost lock leaves the namespace: remove D's name (true when it went). */
bool locks_drop_lost(lfs *fs, lfs_dentry *d);
/* Remove the name D, and let its lease go if it carries one (kept as an
 * orphan when lost or let go): how every name leaves the namespace. */
void locks_remove_name(lfs *fs, lfs_dentry *d);
/* What this mount lost of KEY lately, or NULL (fs->mu held). */
const lockfs_lock_info *locks_lost_info(lfs *fs, const char *key);
/* The same, or a lock let go by an unlink the backend did not answer: what
 * a late rm of its holder is judged by. */
const lockfs_lock_info *locks_late_info(lfs *fs, const char *key);
/* Every recent loss under PREFIX not in SEEN (key set), appended to OUT as
 * copies (lockfs_lock_info *). */
void locks_lost_list(lfs *fs, const char *prefix, GHashTable *seen, GPtrArray *out);
bool locks_lease_expired(lfs *fs, lfs_dentry *d);
/* D (may be NULL) is lost now if its lease may have run out, whether or not
 * the renewals have said so: true when D is lost. */
bool locks_lost_if_expired(lfs *fs, lfs_dentry *d);
/* Returns the next lost deadline (lockfs_mono_us), INT64_MAX when none. */
int64_t locks_renew_due(lfs *fs);
/* Wait for the renewal workers' calls, and stop them. */
void locks_renew_stop(lfs *fs);
/* What a holder changed of its lock file (locks_heartbeat). */
enum {
	BEAT_HEARTBEAT = 1u << 0, /* a heartbeat: touch, utimes near now, write */
	BEAT_CONTENT = 1u << 1,   /* the content (write, truncate) */
	BEAT_ATTRS = 1u << 2,     /* times or mode, as shown on other hosts */
};
int locks_heartbeat(lfs *fs, lfs_node *n, const struct lfs_caller *who, unsigned what);
/* Whether D's last heartbeat is older than stale_after. */
bool locks_past_stale(lfs *fs, const lfs_dentry *d);
/* Break D if its lock is stale; true when it was removed. */
bool locks_expire_if_stale(lfs *fs, lfs_dentry *d);
/* At unmount: let go of nothing (the locks are their holders'), say so
 * (takes fs->mu). */
void locks_stop(lfs *fs);
/* How many locks this mount holds (takes fs->mu). */
unsigned locks_held_count(lfs *fs);
int locks_check_writable(lfs *fs, lfs_node *n);
/* What lock dentry D of this mount shows (.lockfs/, user.lockfs.*): OUT
 * to clear with lockfs_lock_info_clear (fs->mu held). */
void locks_info_of(lfs *fs, lfs_dentry *d, lockfs_lock_info *out);
/* Whether C may change lock file N (write, truncate, set times). */
bool locks_may_change(lfs_node *n, const struct lfs_caller *c);
/* Whether this mount lost KEY's lock lately, held by UID (fs->mu held). */
bool locks_lost_by(lfs *fs, const char *key, uid_t uid);

/* What this mount lost of KEY without a dentry to show it (a lock the
 * restart could not take back): logged, notified, shown lost a while. */
void locks_note_lost(lfs *fs, const char *key, const lockfs_holder *h, const char *fence,
                     pid_t ppid, const char *why);

/* ---- fs_record.c: the record of this mount's locks in state_dir ---- */
/* Record D's grant or its new state (fs->mu held): 0 or a negative errno. */
int record_lock(lfs *fs, lfs_dentry *d);
/* D leaves the namespace (fs->mu held). */
void record_forget(lfs *fs, lfs_dentry *d);
/* After a grant, without fs->mu: LEASE's token and (*SESSION) the
 * backend's session token, both g_free'd, NULL when there is none. */
char *record_token(lfs *fs, lockfs_lease *lease, char **session);
/* Record SESSION (owned) if it is new (fs->mu held). */
void record_session(lfs *fs, char *session);
/* Rewrite the record whole, from what is held now (fs->mu held). */
void record_rewrite(lfs *fs);
void record_start_anew(lfs *fs);
void record_session_resumed(lfs *fs, const char *session);
/* STATE is the record of this mount (set once, before the mount). */
void record_attach(lfs *fs, struct lockfs_lockstate *state);
const char *record_file(lfs *fs);

/* ---- fs_restart.c: taking locks back ---- */
struct lockfs_lockstate_found;
/* Take back what FOUND records, before any request is answered. */
void restart_reclaim(lfs *fs, struct lockfs_lockstate_found *found);
/* The gap: lock names created on the disk under the mount point while no
 * lockfs was mounted.  Found before the mount (restart_gap_file *, free
 * with g_ptr_array_unref); whether the directory holds nothing else (for
 * passthrough=auto); taken for their owners, or reported as conflicts,
 * once the previous lockfs's locks are back (UNDER_FD: the directory). */
typedef struct restart_gap_file restart_gap_file;
GPtrArray *restart_gap_find(int under_fd, const char *suffix);
bool restart_gap_only(int under_fd, GPtrArray *found);
void restart_gap_close(lfs *fs, GPtrArray *found, int under_fd);

/* ---- fs_disk.c: disk nodes' descriptors (passthrough) ---- */
int disk_open(lfs_node *n, int flags);
int disk_getattr(lfs_node *n, struct stat *st);
char *disk_proc_path(const lfs_node *n);

/* ---- fs_control.c: .lockfs/ ---- */
int control_lookup(lfs *fs, lfs_node *dir, const char *name, lfs_node **out);
char *control_render(lfs *fs, lfs_node *n, size_t *len);
int control_readdir_names(lfs *fs, lfs_node *dir, GPtrArray *names, GArray *types);

/* ---- fs_xattr.c: user.lockfs.* ---- */
int xattr_get(lfs *fs, lfs_node *n, const char *name, GString *out);
void xattr_list(lfs *fs, lfs_node *n, GString *out);

/* ---- fs_remote.c: locks held through other mounts (shared backends) ----
 * Called without fs->mu: they may wait on the network. */
void remote_init(lfs *fs);
void remote_forget(lfs *fs, const char *key);
/* This mount just released KEY: free, as far as lookups within list_cache go. */
void remote_note_free(lfs *fs, const char *key);
/* KEY as the backend has it, at most list_cache old unless FRESH. */
int remote_get(lfs *fs, const char *key, bool fresh, lockfs_lock_info *out);
/* The backend refused KEY as held: remember what it says of the holder, or a
 * fresh lock of an unknown holder when it has no record (for list_cache).
 * Called without fs->mu. */
void remote_note_refused(lfs *fs, const char *key);

/* fs_locks.c: a lookup by PID asked at AT found lock KEY free, or FAILED
 * (EIO: the backend did not answer), so PID saw no lock there; whether PID
 * last saw none before D was granted (and lately): its unlink is then no
 * release.  The answers say how it saw none ("after finding it free"), for
 * the log; NULL when it did not. */
void locks_saw_free(lfs *fs, pid_t pid, const char *key, int64_t at, bool failed);
/* PID saw no lock at KEY lately, and has not tried to take it since. */
const char *locks_saw_free_lately(lfs *fs, pid_t pid, const char *key);
/* Make the fences of this mount's locks final before they are shown
 * (backends with confirm()): ONLY_KEY's, or all when NULL, of locks
 * granted at least OLDER_THAN_US ago.  Called with fs->mu. */
void locks_confirm(lfs *fs, const char *only_key, int64_t older_than_us);
/* The renew thread confirms the fences of locks held this long. */
#define CONFIRM_AFTER_US (100 * 1000)
const char *locks_unseen_by(lfs *fs, pid_t pid, const lfs_dentry *d);
/* Every lock under PREFIX (lockfs_lock_info *, free with remote_info_free). */
GPtrArray *remote_list(lfs *fs, const char *prefix);
void remote_info_free(gpointer p);
void remote_info_copy(lockfs_lock_info *dst, const lockfs_lock_info *src);
/* Under fs->mu: a read-only node showing INFO (copied). */
lfs_node *remote_node_new(lfs *fs, const lockfs_lock_info *info);
/* A node for KEY, which the backend refused to this mount and nobody
 * describes: an unknown holder's fresh lock (fs_remote.c). */
lfs_node *remote_node_refused(lfs *fs, const char *key);
uint64_t remote_ino(const char *key);

/* ---- fs_leases.c: renewing the leases of shared backends ---- */
void leases_start(lfs *fs);
void leases_stop(lfs *fs);

/* ---- fs_flock.c: flock(2) locks held in the backend ---- */
void flock_init(lfs *fs);
void flock_start(lfs *fs);
/* Stop the waiters' thread; waiters are answered EINTR. */
void flock_stop(lfs *fs);
/* A FUSE flock request of OWNER (the open file description's handle): OP is
 * LOCK_SH, LOCK_EX or LOCK_UN, with LOCK_NB.
 * Answers REQ, now or (a blocking one) from the waiters' thread. */
void flock_request(lfs *fs, fuse_req_t req, lfs_node *n, uint64_t owner, int op,
                   const struct lfs_caller *who);
/* D, a flock or POSIX lock the restart took back (fs->mu held): kept while
 * the process that took it runs, released at once when it is gone. */
void flock_adopt_orphan(lfs *fs, lfs_dentry *d);
/* Whether KEY is such a lock (fs->mu held): .lockfs/ shows it "orphaned". */
bool flock_orphan_key(lfs *fs, const char *key);
/* The last close of OWNER's open file description of N (fs->mu held). */
void flock_release_owner(lfs *fs, lfs_node *n, uint64_t owner);
/* The key whose fence user.lockfs.KIND.fence shows on N to process TGID
 * (KIND "flock" or "posix"), or NULL (fs->mu held; fs_flock.c). */
char *flock_fence_key(lfs *fs, lfs_node *n, const char *kind, pid_t tgid);
/* FUSE setlk/getlk of OWNER (FUSE's lock_owner) on N, through handle FH:
 * POSIX record locks, widened to the whole file.  flock_posix_setlk answers REQ,
 * now or (SLEEP, F_SETLKW) from the waiters' thread; flock_posix_getlk fills LK
 * and returns 0 or a negative errno. */
struct flock;
void flock_posix_setlk(lfs *fs, fuse_req_t req, lfs_node *n, uint64_t owner, uint64_t fh,
                       const struct flock *lk, bool sleep, const struct lfs_caller *who);
int flock_posix_getlk(lfs *fs, lfs_node *n, uint64_t owner, struct flock *lk);
/* A close of N by OWNER (FUSE_FLUSH) lets its POSIX locks go; the last close
 * of handle FH, those taken through it (F_OFD_SETLK's).  fs->mu held. */
void flock_posix_flush(lfs *fs, lfs_node *n, uint64_t owner);
/* Whether any POSIX lock is held through this mount (no lock needed). */
bool flock_posix_any(lfs *fs);
void flock_posix_release_fh(lfs *fs, lfs_node *n, uint64_t fh);

/* ---- fs_inval.c: telling the kernel what lockfs changed by itself ---- */
void inval_start(lfs *fs);
void inval_node(lfs *fs, lfs_node *n);                      /* queue; never blocks */
void inval_entry(lfs *fs, lfs_node *dir, const char *name); /* queue */
bool inval_other_name(lfs *fs, lfs_node *dir, lfs_node *n, fuse_ino_t *parent, char **name);
/* At once: only without fs->mu and outside requests on that directory. */
void inval_entry_now(lfs *fs, fuse_ino_t parent, const char *name);
void inval_stop(lfs *fs);

/* ---- fs_caller.c: who asks, and what the kernel would let it do ---- */
struct lfs_caller caller_of(fuse_req_t req); /* the requesting process */
/* Whether the caller of REQ could unlink a name of DIR owned by OWNER (fs->mu held). */
bool caller_may_delete(lfs *fs, fuse_req_t req, lfs_node *dir, uid_t owner);
/* Whether the caller of REQ could open N for writing, by its mode (fs->mu held). */
bool caller_may_write(lfs *fs, fuse_req_t req, lfs_node *n);

/* ---- fs_break.c: breaks on purpose ---- */
/* Unlink of lock NAME of DIR not held here (fs->mu held; lets go of it). */
int break_unlink_remote(lfs *fs, lfs_node *dir, const char *name, const struct lfs_caller *c);
/* Break D, or KEY held elsewhere, for the caller of REQ, as its unlink would
 * be allowed (fs->mu held). */
int break_for(lfs *fs, fuse_req_t req, lfs_dentry *d, const char *fence, fuse_ino_t *parent,
              char **name);
int break_remote_for(lfs *fs, fuse_req_t req, const char *key, const char *fence);
/* A write to .lockfs/break: "KEY [FENCE]\n" (fs->mu held). */
int break_request(lfs *fs, fuse_req_t req, const char *buf, size_t size);

/* ---- fs_ops.c ---- */
extern const struct fuse_lowlevel_ops lfs_ops;
lfs *lfs_new(const lockfs_settings *set, lockfs_backend *be, const char *mountpoint, int under_fd,
             bool passthrough);
/* SE is the session that serves FS (set once, before the loop starts). */
void lfs_attach_session(lfs *fs, struct fuse_session *se);
const char *lfs_mountpoint(const lfs *fs);
/* The backend's name, as the log and systemd's status say it. */
const char *lfs_backend_name(const lfs *fs);

#endif
