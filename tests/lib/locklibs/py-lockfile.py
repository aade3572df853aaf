#!/usr/bin/python3
"""py-lockfile.py — drives lockfile (PyPI lockfile; Debian python3-lockfile).

    py-lockfile.py --class link|mkdir|symlink LOCK ACTION [ARGS]

The library appends ".lock" to the path it is given, so LOCK (NAME.lock) is
passed as NAME.
  link     LinkLockFile: links a unique file "HOST-THREAD.PIDHASH" to the
           lock; taken when link() succeeds or the unique file's nlink is 2.
  mkdir    MkdirLockFile: mkdir of the lock, then a unique file inside it;
           release unlinks that file and rmdirs the lock.
  symlink  SymlinkLockFile: symlink(unique name, lock); ours when
           readlink() gives our unique name.
None refreshes or breaks a lock by age.  Actions: see README.md here.
"""

import sys
import time

from locklib_common import main

try:
    from lockfile import AlreadyLocked, LockTimeout, NotLocked, NotMyLock
    from lockfile.linklockfile import LinkLockFile
    from lockfile.mkdirlockfile import MkdirLockFile
    from lockfile.symlinklockfile import SymlinkLockFile
except ImportError as e:
    print('error: lockfile is not installed: %s' % e, flush=True)
    sys.exit(2)

CLASSES = {'link': LinkLockFile, 'mkdir': MkdirLockFile, 'symlink': SymlinkLockFile}


def run(argv):
    cls = None
    if len(argv) >= 2 and argv[0] == '--class':
        cls = CLASSES.get(argv[1])
        argv = argv[2:]
    if argv == ['version']:
        from importlib.metadata import version
        print('lockfile', version('lockfile'), flush=True)
        return 0
    if cls is None or not argv or not argv[0].endswith('.lock'):
        print('error: usage: py-lockfile.py --class link|mkdir|symlink NAME.lock ACTION', flush=True)
        return 2
    lock = cls(argv[0][:-len('.lock')])

    def released_between(e):
        # SymlinkLockFile.i_am_locking() is islink() then readlink(): a lock
        # its holder releases between the two raises FileNotFoundError out of
        # acquire() -- the library's own race, on any filesystem (wider where
        # a lookup of another host's lock takes a round trip).  The lock was
        # held when looked at: an answer of "held", and the caller tries again.
        return cls is SymlinkLockFile and e.filename == lock.lock_file

    def attempt():
        try:
            lock.acquire(timeout=0)
            return True
        except AlreadyLocked:
            return False
        except FileNotFoundError as e:
            if released_between(e):
                return False
            raise

    def wait(secs):
        end = time.monotonic() + secs
        while True:
            try:
                lock.acquire(timeout=max(end - time.monotonic(), 0.01))
                return True
            except LockTimeout:
                return False
            except FileNotFoundError as e:
                if not released_between(e) or time.monotonic() >= end:
                    raise

    def release():
        try:
            lock.release()
            return None
        except (NotLocked, NotMyLock) as e:
            return '%s: %s' % (type(e).__name__, e)

    return main(argv[1:], attempt, release, wait)


if __name__ == '__main__':
    sys.exit(run(sys.argv[1:]))
