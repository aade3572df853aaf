#!/usr/bin/python3
"""flufl-lock.py — drives flufl.lock (PyPI flufl.lock; Debian python3-flufl.lock).

    flufl-lock.py [--lifetime S] [--refresh S] LOCK ACTION [ARGS]

flufl.lock links a claim file "LOCK|host|pid|random" to LOCK and sets the
claim file's mtime (and so the lock's, which is the same inode on a plain
disk) to now + lifetime with os.utime: a lock's mtime is its expiry time.
A contender breaks a lock whose mtime is more than CLOCK_SLOP (10 s) in the
past.  Holders refresh with Lock.refresh(), which sets the time again.
Actions: see README.md in this directory.
"""

import sys
from datetime import timedelta

from locklib_common import main

try:
    from flufl.lock import Lock, TimeOutError, NotLockedError
except ImportError as e:
    print('error: flufl.lock is not installed: %s' % e, flush=True)
    sys.exit(2)


def run(argv):
    if argv == ['version']:
        from importlib.metadata import version
        print('flufl.lock', version('flufl.lock'), flush=True)
        return 0
    lifetime, refresh_every = 15, None
    while argv and argv[0].startswith('--'):
        opt, val = argv[0], float(argv[1])
        argv = argv[2:]
        if opt == '--lifetime':
            lifetime = val
        elif opt == '--refresh':
            refresh_every = val
        else:
            print('error: unknown option', opt, flush=True)
            return 2
    path, rest = argv[0], argv[1:]
    lock = Lock(path, lifetime=timedelta(seconds=lifetime))

    def attempt():
        try:
            lock.lock(timeout=timedelta(0))
            return True
        except TimeOutError:
            return False

    def wait(secs):
        try:
            lock.lock(timeout=timedelta(seconds=secs))
            return True
        except TimeOutError:
            return False

    def release():
        try:
            lock.unlock()
            return None
        except NotLockedError as e:
            # The library's own word that the lock is no longer ours.
            lock.unlock(unconditionally=True)
            return 'NotLockedError: %s' % e

    def refresh():
        lock.refresh()

    return main(rest, attempt, release, wait, refresh, refresh_every or lifetime / 3)


if __name__ == '__main__':
    sys.exit(run(sys.argv[1:]))
