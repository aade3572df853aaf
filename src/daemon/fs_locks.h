/* fs_locks.c: lock names: taking, releasing, breaking and losing locks, and what this
 * mount knows of them. */
#ifndef LOCKFS_FS_LOCKS_H
#define LOCKFS_FS_LOCKS_H

#include "fs.h"
#include "fs_rules.h"

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
void locks_fini(lfs *fs); /* at exit, after locks_stop: the lock layer's tables */
/* How many locks this mount holds (takes fs->mu). */
unsigned locks_held_count(lfs *fs);
/* fs->held is this file's index of the lock dentries of this mount (the
 * files below read it, the files above go through these; fs->mu held): */
/* The dentry NAME in DIR, after expiring it if it is a stale lock. */
lfs_dentry *locks_find_live(lfs *fs, lfs_node *dir, const char *name);
void locks_init(lfs *fs);                           /* the index and the claims' table */
lfs_dentry *locks_find(lfs *fs, const char *key);   /* KEY's lock dentry here, or NULL */
bool locks_held_under(lfs *fs, const char *prefix); /* a lock held here under PREFIX */
/* FN for each lock dentry held here (FN must not add or remove one). */
void locks_foreach(lfs *fs, void (*fn)(lfs *fs, lfs_dentry *d, void *user), void *user);
void locks_index(lfs *fs, lfs_dentry *d); /* D, taken back at a restart, is held here */
int locks_check_writable(lfs *fs, lfs_node *n);
/* What lock dentry D of this mount shows (.lockfs/, user.lockfs.*): OUT
 * to clear with lockfs_lock_info_clear (fs->mu held). */
void locks_info_of(lfs *fs, lfs_dentry *d, lockfs_lock_info *out);
/* Whether C may change lock file N (write, truncate, set times). */
bool locks_may_change(lfs_node *n, const struct lfs_caller *c);
/* Whether this mount lost KEY's lock lately, held by UID (fs->mu held). */
bool locks_lost_by(lfs *fs, const char *key, uid_t uid);
/* Whether C is of the family (the process, its parent, their descendants)
 * of the holder this mount lost KEY's lock from within the last minute
 * (fs->mu held). */
bool locks_lost_by_family(lfs *fs, const char *key, const struct lfs_caller *c);

/* What this mount lost of KEY without a dentry to show it (a lock the
 * restart could not take back): logged, notified, shown lost a while. */
void locks_note_lost(lfs *fs, const char *key, const lockfs_holder *h, const char *fence,
                     pid_t ppid, const char *why);

/* A lookup by PID asked at AT found lock KEY free, or FAILED
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

#endif
