#!/usr/bin/python3
"""posix-holder.py — the fcntl worker's hands (tests/faults/lib.sh,
posix_worker): one process for the worker's whole life, so that a section
costs no interpreter start.  It takes fcntl(2) (POSIX record) locks of the
whole file on command and answers one line a command on stdout (flushed):

    take PATH rd|wr nb|WAIT_MS  open PATH, then F_SETLK (nb) or F_SETLKW bounded
                                by WAIT_MS (an interval timer; its signal ends
                                the wait): "OK FENCE" (user.lockfs.posix.fence
                                of the file, "-" when unreadable) or "ERR NAME"
                                (errno name; the file is closed again)
    check                       the heartbeat: the same lock asked for again
                                (F_SETLK of the type held: lockfs answers EIO
                                once the lock is lost), then the fence read
                                again: "OK FENCE" or "ERR NAME"
    release                     F_UNLCK, then close: "OK" or "ERR NAME" (closed
                                all the same: a close lets the lock go too)
    quit

fcntl.lockf (rd: LOCK_SH, wr: LOCK_EX) is F_SETLK/F_SETLKW of the whole file.
"""

import errno
import fcntl
import os
import signal
import sys

MODES = {'rd': fcntl.LOCK_SH, 'wr': fcntl.LOCK_EX}


class Timeout(Exception):
    pass


def on_alarm(_sig, _frame):
    raise Timeout()


def fence(path):
    try:
        return os.getxattr(path, 'user.lockfs.posix.fence').decode().strip('\0') or '-'
    except OSError:
        return '-'


def name(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) else type(e).__name__


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    fd = None
    path = mode = None
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        out = '?'
        if w[0] == 'take':
            if fd is not None:
                os.close(fd)
                fd = None
            path, mode, how = w[1], w[2], w[3]
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                if how == 'nb':
                    fcntl.lockf(fd, MODES[mode] | fcntl.LOCK_NB)
                else:
                    signal.setitimer(signal.ITIMER_REAL, int(how) / 1000.0)
                    try:
                        fcntl.lockf(fd, MODES[mode])
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                out = 'OK ' + fence(path)
            except (OSError, Timeout) as e:
                out = 'ERR ' + ('TIMEOUT' if isinstance(e, Timeout) else name(e))
                if fd is not None:
                    os.close(fd)
                    fd = None
        elif w[0] == 'check':
            try:
                if fd is None:
                    raise OSError(errno.EBADF, 'nothing held')
                fcntl.lockf(fd, MODES[mode] | fcntl.LOCK_NB)
                out = 'OK ' + fence(path)
            except OSError as e:
                out = 'ERR ' + name(e)
        elif w[0] == 'release':
            out = 'OK'
            if fd is not None:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_UN)
                except OSError as e:
                    out = 'ERR ' + name(e)
                try:
                    os.close(fd)
                except OSError:
                    pass
                fd = None
        elif w[0] == 'quit':
            print('OK', flush=True)
            return 0
        print(out, flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
