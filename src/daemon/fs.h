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
 * This header is the model's types and its locks; each fs_X.c declares what
 * it offers the files above it in fs_X.h, and includes only the headers of
 * the files below it (docs/design.md, "The filesystem's files and the way
 * calls go").
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
 * atomics lock for themselves.  Every flag one thread sets to stop another
 * is read under the mutex it is written under (none is read bare); a
 * ThreadSanitizer build checks it (src/common/tsan_glib.h lets it see
 * GMutex, GCond and those queues).  service.c's status_mu guards only its own
 * thread's stop flag.
 */
#ifndef LOCKFS_FS_H
#define LOCKFS_FS_H

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

	/* Every node of the model, for nodes_fini at exit (the kernel's
	 * references are never given back at an unmount); fs->mu. */
	lfs_node *all_prev, *all_next;
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
	lfs_node *control;   /* .lockfs */
	lfs_node *all_nodes; /* the list of every node (lfs_node.all_next); fs->mu */
	/* fs->mu from here to renew_thread, unless said otherwise. */
	GHashTable *disk_nodes; /* "dev:ino" → lfs_node */
	uint64_t next_ino;
	uint64_t next_serial;     /* of lock grants */
	int64_t stale_after_us;   /* set once */
	int64_t heartbeat_min_us; /* set once */
	/* lease key → lock dentry holding it here: fs_locks.c's index (fs_record.c,
	 * below it, reads it; the files above go through locks_find/locks_foreach) */
	GHashTable *held;
	GHashTable *saw_free; /* "pid:key" → when that process last found KEY free */
	/* key → lfs_lost: locks this mount lost lately, shown in .lockfs/ as
	 * lost while nobody else holds the name (fs_locks.c). */
	GHashTable *lost_recent;
	/* key → lfs_late: the holder this mount last lost each key from, for a
	 * minute, so that its late release breaks no later grant (fs_locks.c). */
	GHashTable *late_guard;
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
	int64_t remote_heard_mono;   /* when the backend last said anything may have changed */
	GPtrArray *remote_views;     /* listings their readers still believe */
	/* The backend's change notifications (watch()), which end what the
	 * table says of a key as soon as another mount changes it; its thread
	 * is remote_watch_start's and remote_watch_stop's, and
	 * remote_watch_stop (the flag) is read and written under
	 * fs->remote_mu, with remote_watch_cond. */
	GThread *remote_watcher;
	GCond remote_watch_cond;
	bool remote_watch_stop;
	/* Where the backend has only wait_free(): the key last refused here,
	 * waited on until remote_wait_until (mono µs). */
	char *remote_wait_key;
	int64_t remote_wait_until;
	/* fs_leases.c: the renew thread (leases_start, leases_stop), which
	 * sleeps on renew_cond under fs->renew_mu; renew_stop is read and
	 * written under fs->renew_mu only. */
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
	 * flock_trying, flock_stop (read by both threads under it too) and
	 * each waiter's interrupted, changed, next_try and backoff are under
	 * flock_mu, taken under fs->mu or alone, never held while fs->mu is
	 * taken.  The two threads are flock_start's and flock_stop's. */
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

#endif
