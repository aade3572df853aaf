/* The filesystem's pure rules: who may touch, unlink or break a lock, what
 * an unlink does, and what a flock's or POSIX lock's backend key names.
 * They decide on plain values only (no model, no lock, no clock), so that
 * each rule is written once and tested alone (tests/unit/test_rules.c).
 * The bottom of the daemon's layers: it includes no other fs_ header. */
#ifndef LOCKFS_FS_RULES_H
#define LOCKFS_FS_RULES_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The process behind a request. */
struct lfs_caller {
	pid_t pid;
	pid_t ppid; /* its parent, 0 when unknown */
	uid_t uid;
	gid_t gid;
};

typedef enum {
	TOUCH_RELEASE,
	TOUCH_BREAK
} lfs_touch;

bool rules_is_holder(const struct lfs_caller *c, uid_t holder_uid);
bool rules_may_touch(const struct lfs_caller *c, uid_t holder_uid);
lfs_touch rules_unlink_effect(const struct lfs_caller *c, uid_t holder_uid);
/* Whether C is the process PID or its parent, or a child or sibling of PID
 * (PPID its parent); pids 0 and 1 name nobody. */
bool rules_in_family(const struct lfs_caller *c, pid_t pid, pid_t ppid);
/* Whether UID may unlink a name owned by OWNER in a directory of mode
 * DIR_MODE owned by DIR_UID, BITS being the rwx bits of that directory that
 * apply to UID (what the kernel checks for unlink(2)). */
bool rules_may_delete(uid_t uid, unsigned bits, mode_t dir_mode, uid_t dir_uid, uid_t owner);

/* The backend keys of flock(2) and POSIX locks, by class ([0] flock,
 * [1] POSIX): exclusive and shared keys' prefixes, and their kinds'
 * names as user.lockfs.* and .lockfs/ show them. */
extern const char *const RULES_EX_PREFIX[2];
extern const char *const RULES_SH_PREFIX[2];
extern const char *const RULES_EX_KIND[2];
extern const char *const RULES_SH_KIND[2];
/* Whether KEY is a flock's or a POSIX lock's backend key, and what it
 * locks: "flock", "flock-shared", "posix" or "posix-shared", and the file's
 * path (a pointer into KEY). */
bool rules_flock_key_parse(const char *key, const char **kind, const char **path);

#endif
