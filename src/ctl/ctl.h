/* lockfsctl: what its commands share.  lockfsctl talks to a mount only
 * through what any process can use: the inspection view .lockfs/ the daemon
 * serves, the user.lockfs.* extended attributes and ordinary system calls.
 * It opens a backend itself (lockfs_backend_new) in two commands only, and
 * only a shared one (never local, whose state_dir it reads as files):
 *  - check, to reach the configured backend as a mount would (connect, TLS,
 *    bind), list its locks and measure its clock against this host's: it
 *    holds no lock there;
 *  - release --all on a mount point with nothing mounted, to take back each
 *    lease in the mount's lock record in state_dir and release it, holding
 *    the flock of that record: a running lockfs of the mount holds it, so
 *    the two never work on the same locks at once.
 * Everything else goes through a mounted lockfs. */
#ifndef LOCKFS_CTL_H
#define LOCKFS_CTL_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit codes (documented in lockfsctl(1)). */
enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAIL = 1,   /* warnings (check); refused, declined, not held; hold: held by
	                     * another (flock's default conflict code, -E changes it) */
	CTL_EXIT_ERROR = 2,  /* bad configuration, unreachable mount or backend */
	CTL_EXIT_USAGE = 64, /* EX_USAGE */
	/* hold exits with its command's status, so its own failures take codes
	 * commands seldom use: sysexits.h's, and timeout(1)'s. */
	CTL_EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: the lock could not be tried */
	CTL_EXIT_LOST = 75,        /* EX_TEMPFAIL: lost, the command stopped: run it again */
	CTL_EXIT_MAX_HOLD = 124,   /* held past --max-hold: timeout(1)'s code */
};

/* A time this far in the local future is clock skew, not a fresh lock (the
 * seed's rule). */
#define CTL_SKEW_LIMIT_S 300

/* "lockfsctl CMD", the prefix of every message. */
extern const char *ctl_prog;

/* One line on stderr: "lockfsctl CMD: ...". */
void ctl_err(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* A usage error: the line, a pointer to --help; returns CTL_EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* ARGV[*I] is "--NAME VALUE" or "--NAME=VALUE": 1 with *OUT set and *I on
 * the value; 0 when it is another word; -1 (message printed) when the value
 * is missing. */
int ctl_opt_value(int argc, char **argv, int *i, const char *name, const char **out);

/* One lock as a mount shows it.  Unknown numbers are -1, unknown strings NULL. */
typedef struct {
	char *mount; /* the mount root */
	char *key;   /* path relative to the mount root */
	char *path;  /* mount/key */
	char *state; /* held, stale, lost */
	char *fence;
	char *host;
	int64_t pid;
	int64_t uid, gid;
	char *user;
	char *command;
	char *acquired; /* ISO 8601 UTC, as the daemon wrote it */
	char *heartbeat;
	int64_t acquired_s; /* the same as unix time */
	int64_t heartbeat_s;
	int64_t age_s;
	int64_t heartbeat_age_s;
	int64_t lease_left_ms;
	char *backend;
	bool mine; /* held through the mount read ("mine: yes") */
} ctl_lock;

void ctl_lock_free(ctl_lock *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ctl_lock, ctl_lock_free)

/* Where the lock PATH lives. */
typedef struct {
	char *path;  /* absolute; its directory resolved, its own name not followed */
	char *dir;   /* the directory, resolved */
	char *base;  /* the lock's own name */
	char *mount; /* the lockfs mount root, NULL in a plain directory */
	char *key;   /* relative to mount, NULL in a plain directory */
} ctl_target;

bool ctl_target_resolve(const char *path, ctl_target *t, GError **error);
void ctl_target_clear(ctl_target *t);

/* DIR is the root of a lockfs mount: FUSE, with .lockfs/status. */
bool ctl_is_lockfs_mount(const char *dir);
/* Mount points of type fuse.lockfs in /proc/self/mounts, in order. */
GPtrArray *ctl_list_mounts(void);

/* .lockfs/status of MOUNT, sorted as the daemon sorts it (by key); NULL with
 * *ERR set to the errno. */
GPtrArray *ctl_read_status(const char *mount, int *err);
/* .lockfs/KEY: NULL with *ERR set (ENOENT: not held). */
ctl_lock *ctl_read_lock(const char *mount, const char *key, int *err);
/* Every lock of MOUNT with every field the daemon shows: status, completed
 * from each lock's own view. */
GPtrArray *ctl_read_all(const char *mount, int *err);

/* The whole of a file read with read(2): the inspection files are generated
 * on open and need not report their size. */
char *ctl_read_text(const char *path, int *err);

/* S as lockfsctl shows it: escaped as in .lockfs/status (view_format.h), so
 * that another host's host name, user or command can print no control
 * character, terminal escape or line of its own.  NULL is taken as "". */
char *ctl_escape(const char *s);
/* The same, with spaces shown as spaces: for a command line, where nothing
 * follows on the line. */
char *ctl_escape_text(const char *s);

/* flock(1)'s -w SECS: seconds, fractions allowed ("5", "0.5", ".007",
 * rounded up to a millisecond), or a duration ("500ms", "2m").  False when
 * it is neither. */
bool ctl_parse_seconds(const char *text, int64_t *ms);

/* "45s", "5m3s", "2h10m", "3d4h". */
char *ctl_format_age(int64_t s);
/* "500ms", "30s", "5m", "1m30s". */
char *ctl_format_ms(int64_t ms);
/* Unix seconds as ISO 8601 UTC. */
char *ctl_iso(int64_t s);

void ctl_json_string(GString *out, const char *s);

/* The holder process PID as this host sees it: its start time (unix s) and
 * name.  False when no such process is running here. */
bool ctl_proc_info(int64_t pid, int64_t *start_s, char **comm);

/* The configuration lockfs would use: --config FILE, then each -o OPTIONS
 * (lockfs's own rules, the defaults without either); NULL with *ERR. */
typedef struct lockfs_config lockfs_config;
lockfs_config *ctl_config_load(const char *file, GPtrArray *opts, GError **err);
/* ARGV[*I] is --config FILE (*FILE set) or -o OPTIONS (added to OPTS): 1,
 * *I on its value; 0 another word; -1 a usage error (printed). */
int ctl_config_arg(int argc, char **argv, int *i, const char **file, GPtrArray *opts);

/* Ask QUESTION " [y/N]" on stderr and read the answer from stdin. */
bool ctl_confirm(const char *question);
/* Write "KEY FENCE" to MOUNT/.lockfs/break: 0 or an errno (ESTALE: FENCE
 * no longer holds KEY; ENOENT: KEY is not held). */
int ctl_request_break(const char *mount, const char *key, const char *fence);

int ctl_status(int argc, char **argv);
int ctl_check(int argc, char **argv);
int ctl_unlock(int argc, char **argv);
int ctl_hold(int argc, char **argv);
int ctl_release(int argc, char **argv);

#endif
