#!/usr/bin/python3
"""locklib.py — lock clients the way popular lock libraries behave, for the
cross-host tests (tests/fs/81-cross-host.t).  Every loop is bounded.

  locklib.py refresh PATH SECS PERIOD
      Take PATH by mkdir, then keep it alive for SECS seconds the way
      proper-lockfile and similar libraries do: utimes(PATH, now, now)
      every PERIOD seconds (explicit times, not NULL).  Releases at the end.
      Prints "OK refreshes=N" or the errno of the first failure.

  locklib.py judge PATH SECS STALE
      For SECS seconds, every 0.25 s, stat PATH and count the times its
      mtime was older than STALE seconds (where such a client would break
      the lock as stale).  Prints "OK checks=N stale=M max_age=A".

  locklib.py threads PATH CYCLES WORKERS
      One process, WORKERS threads: each cycle one thread looks at PATH,
      another takes it by mkdir, and the first releases it by rmdir (as
      runtimes whose thread pool makes the file system calls do).  Retries
      on EEXIST, for at most 60 s.  Prints "OK cycles=N" or "FAIL ..." with
      the errno of a release that did not work.
"""

import concurrent.futures
import errno
import os
import sys
import time


def refresh(path, secs, period):
    os.mkdir(path)
    n = 0
    end = time.monotonic() + secs
    try:
        while time.monotonic() < end:
            time.sleep(min(period, max(0.0, end - time.monotonic())))
            t = time.time()
            os.utime(path, (t, t))
            n += 1
    finally:
        os.rmdir(path)
    return 'OK refreshes=%d' % n


def judge(path, secs, stale):
    checks = stale_n = 0
    max_age = 0.0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            age = time.time() - os.stat(path).st_mtime
        except FileNotFoundError:
            age = None
        if age is not None:
            checks += 1
            max_age = max(max_age, age)
            if age > stale:
                stale_n += 1
        time.sleep(0.25)
    return 'OK checks=%d stale=%d max_age=%.1f' % (checks, stale_n, max_age)


class _Thread:
    """A thread that runs the calls handed to it, one at a time."""

    def __init__(self):
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def call(self, fn, *args):
        return self.pool.submit(fn, *args).result(timeout=30)


def _errno_of(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


def threads(path, cycles, workers):
    """Each cycle: thread B looks at the name (free, usually), thread A takes
    it by mkdir, thread B releases it by rmdir — how a runtime's thread pool
    spreads one task's calls over its threads."""
    pool = [_Thread() for _ in range(max(2, workers))]
    done = tries = 0
    deadline = time.monotonic() + 60
    try:
        while done < cycles and time.monotonic() < deadline:
            a = pool[tries % len(pool)]
            b = pool[(tries + 1) % len(pool)]
            tries += 1
            b.call(_errno_of, os.lstat, path)
            if a.call(_errno_of, os.mkdir, path) != 0:
                time.sleep(0.005)
                continue
            r = b.call(_errno_of, os.rmdir, path)
            if r != 0:
                return 'FAIL release %s after %d cycles' % (errno.errorcode.get(r, r), done)
            done += 1
    finally:
        for t in pool:
            t.pool.shutdown()
    return 'OK cycles=%d' % done


def main(argv):
    try:
        if argv[1] == 'refresh':
            print(refresh(argv[2], float(argv[3]), float(argv[4])))
        elif argv[1] == 'judge':
            print(judge(argv[2], float(argv[3]), float(argv[4])))
        elif argv[1] == 'threads':
            print(threads(argv[2], int(argv[3]), int(argv[4])))
        else:
            raise IndexError
    except IndexError:
        print(__doc__, file=sys.stderr)
        return 2
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
