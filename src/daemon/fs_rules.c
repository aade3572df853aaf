/* The filesystem's pure rules (fs_rules.h): decisions on plain values that
 * the lock layers above apply to the model. */
#include "fs_rules.h"

#include <string.h>

/* The one uid rule: a caller acts as a lock's holder when it runs as the
 * holder's uid (a pid cannot tell: tools take a lock in one process and
 * remove it in another). */
bool rules_is_holder(const struct lfs_caller *c, uid_t holder_uid)
{
	return c->uid == holder_uid;
}

/* Who may touch a lock file (write, truncate, times, heartbeats): its
 * holder, and root, who may do anything to any file. */
bool rules_may_touch(const struct lfs_caller *c, uid_t holder_uid)
{
	return c->uid == 0 || rules_is_holder(c, holder_uid);
}

/* What an unlink by C does to a lock of HOLDER_UID: the holder's is a
 * release; anyone else's (root included) a break, logged and notified --
 * the kernel already checked directory permissions, sticky bit included. */
lfs_touch rules_unlink_effect(const struct lfs_caller *c, uid_t holder_uid)
{
	return rules_is_holder(c, holder_uid) ? TOUCH_RELEASE : TOUCH_BREAK;
}

/* How a script and the tools it runs are related (a late release). */
bool rules_in_family(const struct lfs_caller *c, pid_t pid, pid_t ppid)
{
	return (pid > 1 && (c->pid == pid || c->ppid == pid)) ||
	       (ppid > 1 && (c->pid == ppid || c->ppid == ppid));
}

/* Root may; anyone else needs write and search permission on the
 * directory, and, where it is sticky, to own the name or the directory. */
bool rules_may_delete(uid_t uid, unsigned bits, mode_t dir_mode, uid_t dir_uid, uid_t owner)
{
	if (uid == 0)
		return true;
	if ((bits & 03) != 03)
		return false;
	return !(dir_mode & S_ISVTX) || uid == owner || uid == dir_uid;
}

const char *const RULES_EX_PREFIX[2] = { ".lockfs/flock/", ".lockfs/posix/" };
const char *const RULES_SH_PREFIX[2] = { ".lockfs/flock-sh/", ".lockfs/posix-sh/" };
const char *const RULES_EX_KIND[2] = { "flock", "posix" };
const char *const RULES_SH_KIND[2] = { "flock-shared", "posix-shared" };

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool rules_flock_key_parse(const char *key, const char **kind, const char **path)
{
	for (int c = 0; c <= 1; c++) {
		if (has_prefix(key, RULES_SH_PREFIX[c])) {
			*kind = RULES_SH_KIND[c];
			*path = key + strlen(RULES_SH_PREFIX[c]);
			return true;
		}
		if (has_prefix(key, RULES_EX_PREFIX[c])) {
			*kind = RULES_EX_KIND[c];
			*path = key + strlen(RULES_EX_PREFIX[c]);
			return true;
		}
	}
	return false;
}
