/* fs_flock.c: flock(2) and POSIX record locks held in the backend. */
#ifndef LOCKFS_FS_FLOCK_H
#define LOCKFS_FS_FLOCK_H

#include "fs.h"
#include "fs_rules.h"

void flock_init(lfs *fs);
void flock_start(lfs *fs);
/* Stop the waiters' thread; waiters are answered EINTR. */
void flock_stop(lfs *fs);
void flock_fini(lfs *fs); /* at exit, after flock_stop: records, orphans, waiters */
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

#endif
