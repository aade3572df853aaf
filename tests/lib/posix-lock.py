#!/usr/bin/python3
"""posix-lock.py FILE — a process that takes fcntl(2) record locks of FILE
on command, for 41-posix-locks.t.  Reads one command a line on stdin and
answers one line on stdout (flushed):

    lock rd|wr START LEN [wait]   F_SETLK (F_SETLKW with wait): OK or the errno
    unlock START LEN              F_UNLCK of the range: OK or the errno
    getlk rd|wr                   F_GETLK of the whole file: "unlck", or
                                  "rd PID" / "wr PID" of the conflicting lock
    ofd rd|wr|un                  F_OFD_SETLK of the whole file on a second
                                  descriptor of its own: OK or the errno
    closeofd                      close that descriptor
    openclose                     open FILE once more and close it
    thread rd|wr                  F_SETLK of the whole file from another thread
    pid                           this process's pid
    quit
LEN 0 is "to the end of the file".  Errno names as errno.errorcode has them.
"""

import errno
import fcntl
import os
import struct
import sys
import threading

F_OFD_SETLK = getattr(fcntl, 'F_OFD_SETLK', 37)
FMT = 'hhqqi'  # struct flock on x86-64 and arm64: type, whence, start, len, pid
TYPES = {'rd': fcntl.F_RDLCK, 'wr': fcntl.F_WRLCK, 'un': fcntl.F_UNLCK}


def flock_struct(kind, start=0, length=0):
    return struct.pack(FMT, TYPES[kind], os.SEEK_SET, start, length, 0)


def call(fd, cmd, arg):
    try:
        return 'OK', fcntl.fcntl(fd, cmd, arg)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)), None


def main(path):
    fd = os.open(path, os.O_RDWR)
    ofd = None
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        out = '?'
        if w[0] == 'lock':
            cmd = fcntl.F_SETLKW if len(w) > 4 and w[4] == 'wait' else fcntl.F_SETLK
            out, _ = call(fd, cmd, flock_struct(w[1], int(w[2]), int(w[3])))
        elif w[0] == 'unlock':
            out, _ = call(fd, fcntl.F_SETLK, flock_struct('un', int(w[1]), int(w[2])))
        elif w[0] == 'getlk':
            out, r = call(fd, fcntl.F_GETLK, flock_struct(w[1]))
            if r is not None:
                t, _, _, _, pid = struct.unpack(FMT, r)
                out = 'unlck' if t == fcntl.F_UNLCK else '%s %d' % ('rd' if t == fcntl.F_RDLCK else 'wr', pid)
        elif w[0] == 'ofd':
            if ofd is None:
                ofd = os.open(path, os.O_RDWR)
            out, _ = call(ofd, F_OFD_SETLK, flock_struct(w[1]))
        elif w[0] == 'closeofd':
            if ofd is not None:
                os.close(ofd)
                ofd = None
            out = 'OK'
        elif w[0] == 'openclose':
            os.close(os.open(path, os.O_RDONLY))
            out = 'OK'
        elif w[0] == 'thread':
            res = []
            t = threading.Thread(target=lambda: res.append(call(fd, fcntl.F_SETLK, flock_struct(w[1]))[0]))
            t.start()
            t.join()
            out = res[0]
        elif w[0] == 'pid':
            out = str(os.getpid())
        elif w[0] == 'quit':
            print('OK', flush=True)
            return 0
        print(out, flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
