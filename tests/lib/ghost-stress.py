#!/usr/bin/python3
"""ghost-stress.py ROLE LOCK SECONDS [ARGS] — one role of 86-remote-cache.t.

    symlinker LOCK SECS UNIQUE   symlink(UNIQUE, LOCK), then unlink it, again and
                                 again; after each EEXIST, readlink(LOCK): it
                                 must never give UNIQUE (this process holds
                                 nothing then), which is what python lockfile's
                                 SymlinkLockFile takes for "mine".
    stater LOCK SECS             lstat(LOCK) in a loop (lookups of the name on the
                                 symlinker's mount, whose answers race its
                                 takes and releases).
    mkdirer LOCK SECS            mkdir(LOCK), a moment, rmdir(LOCK), then up to 30 ms
                                 with the name free: the holder on the other
                                 mount.  The pause is what lets the symlinker
                                 in: after a refusal its mount believes the
                                 lock held for list_cache (200 ms), and a
                                 mkdirer that took the name again at once
                                 would be holding it at nearly every one of
                                 those retries (a CI run saw 0 grants in 8 s).

Each prints one line at the end: "done GRANTS REFUSALS GHOSTS ERRORS" (the
stater and mkdirer: GHOSTS is 0).  Every loop ends after SECS.
"""

import errno
import os
import random
import sys
import time


def main(role, lock, secs, *rest):
    end = time.monotonic() + float(secs)
    grants = refusals = ghosts = errors = 0
    while time.monotonic() < end:
        try:
            if role == 'symlinker':
                unique = rest[0]
                try:
                    os.symlink(unique, lock)
                except FileExistsError:
                    refusals += 1
                    try:
                        if os.readlink(lock) == unique:
                            ghosts += 1
                            print('ghost: after EEXIST, readlink gave our own name', file=sys.stderr)
                    except OSError as e:
                        if e.errno not in (errno.ENOENT, errno.EINVAL):
                            raise
                    continue
                grants += 1
                os.unlink(lock)
            elif role == 'stater':
                try:
                    os.lstat(lock)
                except FileNotFoundError:
                    pass
            elif role == 'mkdirer':
                try:
                    os.mkdir(lock)
                except FileExistsError:
                    refusals += 1
                    time.sleep(0.001)
                    continue
                grants += 1
                time.sleep(0.002)
                os.rmdir(lock)
                time.sleep(random.uniform(0, 0.03))
            else:
                print('error: unknown role %s' % role, flush=True)
                return 2
        except OSError as e:
            errors += 1
            print('error: %s' % e, file=sys.stderr)
            time.sleep(0.01)
    print('done %d %d %d %d' % (grants, refusals, ghosts, errors), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
