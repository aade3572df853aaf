#!/usr/bin/python3
"""flock-libs.py — drives the Python libraries that lock with flock(2) or
fcntl(2) record locks, not dot-locks (42-flock-libraries.t).

    flock-libs.py LIB LOCK version
    flock-libs.py LIB LOCK contend N LOG ID HOST DEADLINE [THREADS]

LIB is one of
    filelock     py-filelock's FileLock (Debian python3-filelock): opens LOCK
                 O_RDWR|O_CREAT|O_TRUNC|O_NOFOLLOW, flock(LOCK_EX|LOCK_NB),
                 closes to release; one FileLock per thread (each its own
                 open file description);
    portalocker  portalocker.Lock (python3-portalocker): open(LOCK, 'a'),
                 flock(LOCK_EX|LOCK_NB), close;
    fasteners    fasteners.InterProcessLock (python3-fasteners): open(LOCK,
                 'a'), fcntl.lockf(LOCK_EX|LOCK_NB) (a POSIX record lock,
                 the process's), close.  Not for threads: POSIX locks are
                 the process's, so its threads would share one.
    lockf        os.open(LOCK, O_RDWR|O_CREAT), fcntl.lockf, os.close: what
                 a hand-written Python script does.

contend: THREADS threads (default 1) each take the lock N times with the
library's non-blocking call (backing off while held) and log each critical
section, "S HOST ID.T K NS" and "E HOST ID.T K NS", one O_APPEND write each,
to LOG (check-sections.py reads it).  Prints "done DONE N ERRORS" over all
threads: an exception other than the library's "held" answer is an error.
"""

import fcntl
import os
import sys
import threading

import locklib_common
from locklib_common import say


def make(lib, path):
    """(attempt, release) for one worker: attempt() True or False ("held")."""
    if lib == 'filelock':
        import filelock
        lk = filelock.FileLock(path, timeout=0)

        def attempt():
            try:
                lk.acquire(timeout=0)
                return True
            except filelock.Timeout:
                return False
        return attempt, lk.release
    if lib == 'portalocker':
        import portalocker
        lk = portalocker.Lock(path, mode='a', timeout=0, fail_when_locked=True,
                              flags=portalocker.LOCK_EX | portalocker.LOCK_NB)

        def attempt():
            try:
                lk.acquire()
                return True
            except (portalocker.exceptions.AlreadyLocked, portalocker.exceptions.LockException):
                return False  # "held": AlreadyLocked with fail_when_locked
        return attempt, lk.release
    if lib == 'fasteners':
        import fasteners
        lk = fasteners.InterProcessLock(path)

        def attempt():
            return lk.acquire(blocking=False)
        return attempt, lk.release
    if lib == 'lockf':
        state = {}

        def attempt():
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except (BlockingIOError, PermissionError):
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            state['fd'] = fd
            return True

        def release():
            os.close(state.pop('fd'))
        return attempt, release
    raise SystemExit('error: unknown library %s' % lib)


def version(lib):
    if lib == 'lockf':
        return 'python fcntl.lockf %s' % sys.version.split()[0]
    from importlib.metadata import version as v
    dist = {'filelock': 'filelock', 'portalocker': 'portalocker', 'fasteners': 'fasteners'}[lib]
    return '%s %s' % (dist, v(dist))


def contend(lib, path, n, logpath, wid, host, deadline, threads):
    fd = os.open(logpath, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    totals = {'done': 0, 'errs': 0}
    mu = threading.Lock()

    def worker(t):
        attempt, release = make(lib, path)

        def release_why():
            try:
                release()
            except Exception as e:
                return '%s: %s' % (type(e).__name__, e)
        done, errs = locklib_common.contend(attempt, release_why, n, fd, '%s.%d' % (wid, t),
                                            host, deadline)
        with mu:
            totals['done'] += done
            totals['errs'] += errs

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    say('done', totals['done'], n * threads, totals['errs'])
    return 0 if totals['done'] == n * threads and totals['errs'] == 0 else 1


def main(argv):
    if len(argv) < 3:
        say('error: usage: LIB LOCK version | LIB LOCK contend N LOG ID HOST DEADLINE [THREADS]')
        return 2
    lib, path, action = argv[0], argv[1], argv[2]
    try:
        if action == 'version':
            say(version(lib))
            return 0
        if action == 'contend':
            a = argv[3:]
            return contend(lib, path, int(a[0]), a[1], a[2], a[3], float(a[4]),
                           int(a[5]) if len(a) > 5 else 1)
    except ImportError as e:
        say('error: %s is not installed: %s' % (lib, e))
        return 2
    say('error: unknown action', action)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
