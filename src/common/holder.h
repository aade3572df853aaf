/* Who is taking a lock: the holder record made from a FUSE request's pid,
 * uid and gid, with the user name and command line looked up (and cached:
 * NSS and /proc reads on every acquisition would dominate its cost). */
#ifndef LOCKFS_HOLDER_H
#define LOCKFS_HOLDER_H

#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/backend_support.h>
#include <sys/types.h>

void lockfs_holder_set_host(const char *host);
/* lockfs_holder_host(): lockfs/backend_support.h. */

/* Fill H (strings allocated; free with lockfs_holder_clear). */
void lockfs_holder_fill(lockfs_holder *h, pid_t pid, uid_t uid, gid_t gid, mode_t mode,
                        int64_t now_us);

/* The process (thread group) of thread TID: FUSE reports the calling
 * thread, and a process is its thread group wherever lockfs reasons about
 * who took, found free, holds or releases a lock. */
pid_t lockfs_tgid(pid_t tid);
/* The same, and its parent in *PPID (0 when unknown). */
pid_t lockfs_tgid_ppid(pid_t tid, pid_t *ppid);
/* Whether A or B (pids above 1) is PID or one of its ancestors within
 * GENERATIONS parents: a tool a script ran through timeout(1), nice(1) or a
 * subshell is still the script's. */
bool lockfs_descends_from(pid_t pid, pid_t a, pid_t b, int generations);

/* The clocks, lockfs_now_us(), lockfs_mono_us() and
 * lockfs_cond_wait_until(), are in lockfs/backend_support.h. */

#endif
