/* lockfs backend interface.
 *
 * The filesystem (src/daemon/fs_*.c) calls these functions and knows nothing of LDAP,
 * tinystore or the in-process table; a backend knows nothing of FUSE.  Like
 * libgit2's git_odb_backend, a backend is a versioned table of functions, made
 * by the constructor of its lockfs_backend_type (below; the table of types is
 * src/common/backend.c).
 *
 * Ownership.  "The caller" is the filesystem (or lockfsctl check, a test):
 *   - Every pointer in these structs is allocated with GLib (g_malloc,
 *     g_strdup), so lockfs_holder_clear() and lockfs_lock_info_clear() free
 *     them whoever filled the struct.
 *   - What is passed in (a holder, a breaker, a beat, acquire()'s content,
 *     keys and fences) is the caller's, borrowed for the call: a backend
 *     copies what it keeps (lockfs_holder_copy) and writes nothing of it.
 *   - What is passed out (a lock info, an acquire result) is in the
 *     caller's storage.  The backend fills it only when the call returns 0
 *     (an acquire result: previous only when broke); the caller then owns
 *     what it points to and frees it with lockfs_lock_info_clear().  On any
 *     other answer there is nothing to free and nothing to read.
 *   - A list() callback's info is the backend's, valid during the call:
 *     the callback copies what it keeps.
 *   - A lease is the backend's: see lockfs_lease.
 *
 * Error convention: every function returns 0 or a negative errno.
 *   -EEXIST   the lock is held by someone else (and only that)
 *   -ENOENT   no such lock, or the lease named is no longer the holder's
 *   -ESTALE   the caller's lease was lost (expired, broken or replaced)
 *   -EIO      the backend failed or could not be reached in time; nothing granted
 *   -EINVAL   the key cannot be represented by this backend
 * Functions may block on the network for at most the configured network
 * timeout; they are called from several threads at once and must be
 * thread-safe.
 *
 * Shared keys.  A key "G//ID" ("//" is in no lock name's key) is one share
 * of G, taken for shared flock(2) and fcntl(2) locks: any number of them may
 * be held at once, each by its own acquire().  A backend may keep the shares
 * of G as one counted lock (tinystore: a semaphore), and then answers
 * -EEXIST to an acquire() past its count.  In every other call a share is a
 * key like any other.  Exclusion between shares and G itself is the
 * filesystem's: it takes its key, then looks (held(), or inspect()/list()).
 */
#ifndef LOCKFS_BACKEND_H
#define LOCKFS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>
#include <lockfs/config.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 5: watch(), optional.  6: shared keys; held() and wait_free(), optional.
 * 7: restart: destroy() lets go of nothing; identity(), lease_token() and
 * adopt() required, session_token() and resume() where a backend has a
 * session (see "Restart" below). */
#define LOCKFS_BACKEND_VERSION 7

/* Longest token lease_token() or session_token() may write (bytes). */
#define LOCKFS_TOKEN_MAX 1024

/* Fences are decimal strings: tinystore's are u128, LDAP's and local's u64. */
#define LOCKFS_FENCE_MAX 40

/* Largest content a holder may keep in a lock file (bytes).  Legacy tools
 * write a pid; nothing longer is needed, and backends may copy it into their
 * holder record so other hosts can read it. */
#define LOCKFS_CONTENT_MAX 4096

typedef enum {
	LOCKFS_STATE_HELD = 0,
	LOCKFS_STATE_STALE, /* last heartbeat older than stale_after */
	LOCKFS_STATE_LOST,  /* the holder's lease could not be kept */
} lockfs_lock_state;

/* Who holds (or wants) a lock.  Passed to acquire() (the taker) and
 * break_lock() (the breaker), the caller fills it — lockfs_holder_fill() —
 * and frees it after the call; the backend records a copy, and may put its
 * own clock's time in acquired_us and heartbeat_us.  In a lockfs_lock_info
 * the backend fills it from its record. */
typedef struct {
	char *host;           /* host identity of the mount */
	int64_t pid;          /* process that took the lock */
	uint32_t uid, gid;    /* numeric, as recorded */
	char *user;           /* user name as recorded (may not exist here) */
	char *command;        /* command line, spaces between arguments */
	int64_t acquired_us;  /* unix time, µs */
	int64_t heartbeat_us; /* last heartbeat, unix time, µs */
	uint32_t mode;        /* st_mode of the lock file (type+perm), as its holder set it */
	/* The lock file's times as its holder set them (touch -d, utimes), unix
	 * µs; 0: the heartbeat's (mtime, ctime) or the acquisition's (atime).
	 * What every host shows; staleness goes by heartbeat_us alone. */
	int64_t mtime_us, atime_us, ctime_us;
} lockfs_holder;

/* What a backend knows of one lock: filled by the backend, every field,
 * from its record (inspect, list, break_lock's BROKEN, acquire's
 * res->previous); read and freed (lockfs_lock_info_clear) by the caller. */
typedef struct {
	char *key; /* path relative to the mount root, '/'-separated */
	lockfs_holder holder;
	char fence[LOCKFS_FENCE_MAX];
	int64_t lease_left_ms; /* -1 when the backend has no lease (local) */
	lockfs_lock_state state;
	bool mine; /* held through this backend instance */
	/* What the holder wrote in the lock file (≤ LOCKFS_CONTENT_MAX), as
	 * given to acquire() or last sent with heartbeat(); NULL when unknown
	 * (local: the filesystem keeps content itself).  Shared backends keep
	 * it so other hosts read the holder's bytes (legacy tools read a pid). */
	char *content;
	size_t content_len;
} lockfs_lock_info;

/* A granted lock.  The backend allocates it in acquire() and frees it in
 * lease_free(), which the filesystem calls exactly once, when no other call
 * on the lease is under way (after release(), or for a lock it gave up as
 * lost without one).  Meanwhile the filesystem keeps it while the lock
 * name exists, hands it back to heartbeat/renew/release/confirm one call at
 * a time, and never frees or replaces what it points to. */
typedef struct lockfs_lease {
	/* The backend's copy of the key, fixed for the lease's life (the
	 * filesystem indexes its held locks by this very string). */
	char *key;
	/* Filled by the backend at the grant, never written by it after.  The
	 * filesystem reads it (the lock file's view, break_lock()) and, where
	 * confirm() exists, writes here the fence confirm() gave it: such a
	 * backend keeps its own copy in priv (LDAP); one without confirm() may
	 * read it back (local). */
	char fence[LOCKFS_FENCE_MAX];
	void *priv; /* the backend's own, never read by the filesystem */
} lockfs_lease;

/* What an acquisition broke on its way, if anything (for the log/notify):
 * in the caller's storage, filled by the backend when acquire() returns 0;
 * the caller frees previous when broke. */
typedef struct {
	bool broke;
	lockfs_lock_info previous; /* valid when broke */
} lockfs_acquire_result;

typedef struct lockfs_backend lockfs_backend;

/* What heartbeat() records, all from the holder's mount: filled by the
 * filesystem, borrowed by the backend for the call. */
typedef struct {
	int64_t heartbeat_us; /* a holder heartbeat at this unix time, or 0: none */
	/* The lock file's attributes as its holder set them: times in unix µs
	 * and st_mode, each 0 when unchanged. */
	int64_t mtime_us, atime_us, ctime_us;
	uint32_t mode;
	/* The lock file's new content (≤ LOCKFS_CONTENT_MAX), or NULL when
	 * unchanged.  Borrowed for the call. */
	const void *content;
	size_t content_len;
} lockfs_beat;

typedef void (*lockfs_list_cb)(const lockfs_lock_info *info, void *user);
/* KEY changed (NULL: anything may have; the watch began or began again). */
typedef void (*lockfs_watch_cb)(const char *key, void *user);

/* This instance's clock against the backend's, as clock() reports it:
 * filled by the backend in the caller's storage; no pointers. */
typedef struct {
	int64_t offset_us;      /* the backend's clock less this host's wall clock */
	int64_t uncertainty_us; /* the offset is known within ± this */
	int64_t age_us;         /* since it was measured */
	/* Beyond this offset the backend breaks no other host's lock; 0: none. */
	int64_t bound_us;
} lockfs_clock_info;

/* Backend properties the filesystem adapts to. */
enum {
	/* Other hosts may hold locks: names not held here must be looked up. */
	LOCKFS_BACKEND_SHARED = 1u << 0,
	/* Grants are leases that must be renewed every renew interval. */
	LOCKFS_BACKEND_LEASES = 1u << 1,
	/* A key may be held without anything inspect() or list() could report
	 * (tinystore: a lock of its own CLI, a holder record not written yet). */
	LOCKFS_BACKEND_UNDESCRIBED = 1u << 2,
};

struct lockfs_backend {
	unsigned version; /* LOCKFS_BACKEND_VERSION */
	const char *name; /* "local", "ldap", "tinystore" */
	unsigned flags;   /* LOCKFS_BACKEND_* */

	/* Take KEY for WHO.  A lock that is stale by the backend's rules is broken
	 * first (atomically at the backend) and reported in *res (RES may be
	 * NULL).  -EEXIST if held, -EIO if the backend failed: never a grant it
	 * did not make.  CONTENT (CONTENT_LEN ≤ LOCKFS_CONTENT_MAX bytes, NULL
	 * when empty) is what the lock file holds already — a temp file the tool
	 * wrote its pid in, then linked; a symlink's target — for a shared
	 * backend to record with the grant, as if sent by a first heartbeat;
	 * borrowed for the call. */
	int (*acquire)(lockfs_backend *be, const char *key, const lockfs_holder *who,
	               const void *content, size_t content_len, lockfs_lease **out,
	               lockfs_acquire_result *res);

	/* Record a holder heartbeat and what the holder changed of the lock
	 * file (backends that share holder records keep content, times and
	 * mode so other hosts show what the holder's mount shows). */
	int (*heartbeat)(lockfs_backend *be, lockfs_lease *lease, const lockfs_beat *beat);

	/* Renew the lease (host liveness).  -ESTALE when it is gone or replaced. */
	int (*renew)(lockfs_backend *be, lockfs_lease *lease);

	/* Release only if LEASE still holds its key: -ENOENT otherwise, and
	 * nothing is deleted.  Frees nothing: call lease_free afterwards. */
	int (*release)(lockfs_backend *be, lockfs_lease *lease);

	/* Break KEY held by someone else.  When FENCE is not NULL, only the holder
	 * with that fence is removed (-ENOENT if the lock changed meanwhile).
	 * BREAKER is NULL when the holder's own mount expires it; BROKEN, when
	 * not NULL, is filled with what was removed. */
	int (*break_lock)(lockfs_backend *be, const char *key, const char *fence,
	                  const lockfs_holder *breaker, lockfs_lock_info *broken);

	/* What is known of KEY: 0, -ENOENT or -EIO. */
	int (*inspect)(lockfs_backend *be, const char *key, lockfs_lock_info *out);

	/* Every lock whose key starts with PREFIX ("" for all). */
	int (*list)(lockfs_backend *be, const char *prefix, lockfs_list_cb cb, void *user);

	/* Make LEASE's fence final before anyone is shown it, writing it to
	 * FENCE (LOCKFS_FENCE_MAX bytes): 0, -ESTALE (the lock is gone) or -EIO.
	 * NULL where fences are final at the grant.  (LDAP checks its fence block
	 * only here, so a lock taken and let go unseen costs no check.) */
	int (*confirm)(lockfs_backend *be, lockfs_lease *lease, char *fence);

	void (*lease_free)(lockfs_backend *be, lockfs_lease *lease);
	/* Frees the instance.  Lets go of nothing at the backend: no release,
	 * no revocation of a lease or session, no deletion of a record (see
	 * "Restart"); what the instance still holds runs out with its lease
	 * unless a later instance takes it back.  Bounded by the network
	 * timeout. */
	void (*destroy)(lockfs_backend *be);

	/* This instance's clock against the server's, for lockfsctl check: 0,
	 * or -ENOENT while it could not be measured.  NULL where the backend
	 * has no server clock or does not report it. */
	int (*clock)(lockfs_backend *be, lockfs_clock_info *out);

	/* Watch the keys starting with PREFIX for TIMEOUT_MS: CHANGED(NULL,
	 * USER) once the watch is in place (a change before it is not
	 * reported), then CHANGED(KEY, USER) for each key created, changed or
	 * deleted, from the calling thread.  0 when the time is up, -EIO when
	 * the watch could not be made or broke off.  A hint, never a grant:
	 * waiters still ask acquire(), so a missed or spurious change costs
	 * time, not safety.  NULL where the backend has nothing to watch with
	 * (blocked flock/fcntl waiters then poll). */
	int (*watch)(lockfs_backend *be, const char *prefix, int timeout_ms,
	             lockfs_watch_cb changed, void *user);

	/* Whether KEY is held at this instant, asked of the backend's grants
	 * rather than of the records inspect() and list() read: 1, 0 or -EIO.
	 * For "G//", whether G has shares other than the MINE (0 or 1) the
	 * caller holds itself (shared keys, above).  The answer may be made by
	 * taking KEY and letting it go at once, so an acquire() of KEY at the
	 * same moment may answer -EEXIST: a refusal, never a second grant.
	 * Required of a backend with LOCKFS_BACKEND_UNDESCRIBED for shared
	 * flock/fcntl locks to be shared there (without it they are taken
	 * exclusive); NULL where inspect() and list() see every key held. */
	int (*held)(lockfs_backend *be, const char *key, unsigned mine);

	/* Wait up to TIMEOUT_MS for KEY to be free: 1 when it was free at some
	 * moment of the wait, 0 when the time ran out, -EIO (also at once, for
	 * a key the backend cannot represent).  A hint, as watch()'s: nothing
	 * is held for the caller, whose waiters then ask acquire().  For a
	 * backend with a blocking primitive and no watch() (tinystore: a hold
	 * that stands in line); NULL elsewhere. */
	int (*wait_free)(lockfs_backend *be, const char *key, int timeout_ms);

	/* ---- Restart (version 7) ----
	 * A lock belongs to the program that took it, not to the lockfs
	 * process that asked for it: stopping lockfs (destroy() without a
	 * release) leaves every lease at the backend, and a lockfs started
	 * again for the same mount takes them back.  The filesystem records,
	 * in its state file, identity(), session_token() and, for each lease
	 * it holds, its key, fence and lease_token(), as grants happen.  A new
	 * instance of the same mount calls resume() with the recorded session
	 * token (where there is one), then adopt() for each recorded lease,
	 * before any other call.  Tokens are one line of printable ASCII
	 * (0x21..0x7e), at most LOCKFS_TOKEN_MAX bytes; they are read back from
	 * a file anyone with write access to state_dir could edit: a backend
	 * checks each one and answers -EINVAL, never a grant, for one it did
	 * not write. */

	/* What names the server(s) and the namespace this instance's locks
	 * live in (URIs, base DN, key prefix, lock name), one printable line,
	 * g_free'd by the caller: a state file recorded for another is refused.
	 * Excludes what may change without moving a lock (credentials,
	 * timeouts). */
	char *(*identity)(lockfs_backend *be);

	/* This instance's session (one lease for all its locks: etcd's mount
	 * lease, LDAP's session entry), written to OUT: 0, or -ENOENT while it
	 * has none (nothing was granted yet).  NULL where every lock has a
	 * lease of its own (tinystore) or none (local). */
	int (*session_token)(lockfs_backend *be, GString *out);

	/* Before any other call but identity(): carry on the previous
	 * instance's session TOKEN, renewed now, instead of making one.  0;
	 * -ESTALE when it ran out or was deleted (every lock of it is lost: the
	 * instance makes a new session at its next grant, as a fresh one does);
	 * -EIO when the backend did not answer (the caller may try again while
	 * the session could still be alive); -EINVAL for a token it did not
	 * write.  NULL where session_token() is. */
	int (*resume)(lockfs_backend *be, const char *token);

	/* LEASE's own part of its record (tinystore: its lease id; etcd: the
	 * key's create revision), written to OUT: 0 or -EIO.  What adopt()
	 * needs beside key and fence. */
	int (*lease_token)(lockfs_backend *be, const lockfs_lease *lease, GString *out);

	/* Take back KEY, granted to a previous instance of this mount with
	 * FENCE and lease token TOKEN (after resume(), where there is a
	 * session), and renew it now.  WHO is its holder record and CONTENT
	 * (CONTENT_LEN bytes, NULL when empty) its content, as recorded: a
	 * backend that keeps holder records writes them again where they may
	 * be missing.  0 with *OUT a lease of this instance, as acquire()
	 * gives one, its fence FENCE; -ESTALE when the lock is no longer that
	 * lease's (ran out, broken, taken by another: it is lost, and nothing
	 * is deleted); -EIO when the backend did not answer; -EINVAL for a
	 * token it did not write. */
	int (*adopt)(lockfs_backend *be, const char *key, const char *fence, const char *token,
	             const lockfs_holder *who, const void *content, size_t content_len,
	             lockfs_lease **out);
};

/* The common header of a backend instance, first in its constructor's
 * initializer, so that every instance says which interface it was built
 * for (the registry refuses another version) and the header is filled in
 * one place:
 *
 *     b->base = (lockfs_backend){
 *             LOCKFS_BACKEND_INIT("etcd", LOCKFS_BACKEND_SHARED | LOCKFS_BACKEND_LEASES),
 *             .acquire = etcd_acquire,
 *             ...
 *     };
 *
 * NAME is the type's name; FLAGS are LOCKFS_BACKEND_* (0 for none). */
#define LOCKFS_BACKEND_INIT(NAME, FLAGS) \
	.version = LOCKFS_BACKEND_VERSION, .name = (NAME), .flags = (FLAGS)

#define LOCKFS_BACKEND_TYPE_VERSION 1

/* A kind of backend, as built into lockfs: each backend exports one, named
 * lockfs_NAME_backend_type, and src/common/backend.c lists them.  The registry
 * refuses a type whose version is not LOCKFS_BACKEND_TYPE_VERSION (a backend
 * built against another lockfs). */
typedef struct lockfs_backend_type {
	unsigned version; /* LOCKFS_BACKEND_TYPE_VERSION */
	const char *name; /* what backend= names */
	/* Its configuration group ([ldap] and ldap_* mount options) and the
	 * keys it accepts, NULL-terminated; group NULL: no keys of its own. */
	const char *group;
	const char *const *keys;
	/* A new instance from CFG; MOUNT_ID names the mount's durable state
	 * (e.g. the mount point).  NULL with a one-line error naming the key
	 * and what to do. */
	lockfs_backend *(*create)(const lockfs_config *cfg, const char *mount_id, GError **error);
} lockfs_backend_type;

/* The same for a type: const lockfs_backend_type lockfs_etcd_backend_type = {
 * LOCKFS_BACKEND_TYPE_INIT("etcd"), .group = ..., .create = ... }. */
#define LOCKFS_BACKEND_TYPE_INIT(NAME) .version = LOCKFS_BACKEND_TYPE_VERSION, .name = (NAME)

void lockfs_holder_clear(lockfs_holder *h);
void lockfs_holder_copy(lockfs_holder *dst, const lockfs_holder *src);
void lockfs_lock_info_clear(lockfs_lock_info *info);
const char *lockfs_state_name(lockfs_lock_state s);

/* Fences compare as unsigned decimal numbers of any length. */
int lockfs_fence_cmp(const char *a, const char *b);

/* V's digits in BASE (2..16, lower case) at the start of BUF, no NUL; their
 * count.  Without printf: fences and record numbers are written at every
 * grant. */
#define LOCKFS_DIGITS_MAX 64
size_t lockfs_u64_digits(char buf[LOCKFS_DIGITS_MAX], uint64_t v, unsigned base);

#ifdef __cplusplus
}
#endif
#endif
