#!/usr/bin/python3
"""fsop.py — single system calls for the lockfs filesystem tests.

Shell tools hide the errno (ln prints a message, bash decides from stat()
whether to open at all), so the tests that assert "held => EEXIST, nothing
else" or "nlink == 2 immediately after link()" call the system call here
and print the outcome:

  * "OK" (plus key=value facts for some commands) on success,
  * the errno name (EEXIST, ENAMETOOLONG, EPERM, ...) on failure.

The exit status is 0 either way, except for usage errors (2), so that a test
compares the printed errno with what it expects.  Paths are taken from argv
as raw bytes (surrogateescape), so names with newlines, control bytes or
invalid UTF-8 pass through unchanged.
"""

import ctypes
import errno
import os
import random
import stat
import subprocess
import sys
import time

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def b(s):
    return os.fsencode(s)


def unesc(s):
    """Data arguments: allow \\n, \\t, \\0 and \\xHH escapes."""
    return b(s).decode('unicode_escape').encode('latin-1')


def facts(st, prefix=''):
    return ' '.join('%s%s=%s' % (prefix, k, v) for k, v in (
        ('ino', st.st_ino), ('nlink', st.st_nlink), ('mode', '%o' % stat.S_IMODE(st.st_mode)),
        ('type', filetype(st.st_mode)), ('uid', st.st_uid), ('gid', st.st_gid),
        ('size', st.st_size), ('dev', st.st_dev), ('rdev', st.st_rdev),
        ('atime', st.st_atime_ns), ('mtime', st.st_mtime_ns), ('ctime', st.st_ctime_ns)))


def filetype(m):
    if stat.S_ISREG(m):
        return 'reg'
    if stat.S_ISDIR(m):
        return 'dir'
    if stat.S_ISLNK(m):
        return 'lnk'
    return 'other'


def parse_mode(s, default):
    return int(s, 8) if s is not None else default


def cmd_link(a):
    os.link(b(a[0]), b(a[1]))
    return 'OK'


def cmd_linkcheck(a):
    """link(tmp, lock), then at once every check the legacy tools make."""
    tmp, lock = b(a[0]), b(a[1])
    os.link(tmp, lock)
    lt = os.lstat(tmp)        # liblockfile, mailutils
    ll = os.lstat(lock)       # liblockfile
    st = os.stat(tmp)         # mutt_dotlock
    fd = os.open(lock, os.O_RDWR)  # mailutils
    try:
        fs = os.fstat(fd)
    finally:
        os.close(fd)
    same = all(getattr(lt, f) == getattr(fs, f) for f in
               ('st_dev', 'st_ino', 'st_mode', 'st_nlink', 'st_uid', 'st_gid', 'st_rdev'))
    return 'OK tmp_nlink=%d lock_nlink=%d stat_nlink=%d fstat_nlink=%d same_ino=%d same_rdev=%d fstat_same=%d' % (
        lt.st_nlink, ll.st_nlink, st.st_nlink, fs.st_nlink,
        int(lt.st_ino == ll.st_ino), int(lt.st_rdev == ll.st_rdev), int(same))


def _create(path, flags, mode, data):
    fd = os.open(b(path), flags, mode)
    try:
        st = os.fstat(fd)
        if data is not None:
            n = os.write(fd, unesc(data))
        else:
            n = 0
    finally:
        os.close(fd)
    return 'OK size_at_open=%d nlink_at_open=%d written=%d pid=%d' % (st.st_size, st.st_nlink, n, os.getpid())


def cmd_seq(a):
    """OP PATH [OP PATH ...] in this one process, back to back: lstat, excl
    (O_CREAT|O_EXCL, 0644, closed), unlink, childexcl (excl in a child
    process, which then is the lock's holder), holder (prints STATE/HOST
    from user.lockfs.state and user.lockfs.host, an absent one empty),
    nap MS (sleep MS milliseconds, touching nothing), mark FILE (creates
    FILE, outside the mount: the test knows the steps before it are done)
    or waitfile FILE (waits until FILE exists, 20 s at most, else
    TIMEOUT: the test did what comes between).  Prints each outcome."""
    def one(op, path):
        if op == 'nap':
            time.sleep(int(path) / 1000.0)
            return 'OK'
        if op == 'mark':
            open(path, 'w').close()
            return 'OK'
        if op == 'waitfile':
            for _ in range(2000):
                if os.path.exists(path):
                    return 'OK'
                time.sleep(0.01)
            return 'TIMEOUT'
        if op == 'childexcl':
            r = subprocess.run([sys.executable, __file__, 'excl', path],
                               stdout=subprocess.PIPE, check=False)
            return r.stdout.decode().split(' ')[0].strip() or 'FAIL'
        try:
            if op == 'holder':
                def xa(name):
                    try:
                        return os.getxattr(b(path), b(name)).decode('utf-8', 'backslashreplace')
                    except OSError as e:
                        if e.errno == errno.ENODATA:
                            return ''
                        raise
                return xa('user.lockfs.state') + '/' + xa('user.lockfs.host')
            if op == 'lstat':
                os.lstat(b(path))
            elif op == 'excl':
                os.close(os.open(b(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            elif op == 'unlink':
                os.unlink(b(path))
            else:
                raise ValueError('unknown op %s' % op)
            return 'OK'
        except OSError as e:
            return err(e)
    if not a or len(a) % 2:
        raise IndexError('OP PATH pairs')
    return ' '.join(one(a[i], a[i + 1]) for i in range(0, len(a), 2))


def cmd_excl(a):
    """open(O_WRONLY|O_CREAT|O_EXCL, mode) [+ write DATA through that fd]."""
    return _create(a[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                   parse_mode(a[1] if len(a) > 1 else None, 0o644), a[2] if len(a) > 2 else None)


def cmd_creat(a):
    """open(O_WRONLY|O_CREAT) without O_EXCL [+ write DATA]."""
    return _create(a[0], os.O_WRONLY | os.O_CREAT,
                   parse_mode(a[1] if len(a) > 1 else None, 0o644), a[2] if len(a) > 2 else None)


def cmd_symlink(a):
    os.symlink(b(a[0]), b(a[1]))
    return 'OK'


def cmd_mkdir(a):
    os.mkdir(b(a[0]), parse_mode(a[1] if len(a) > 1 else None, 0o777))
    return 'OK'


def cmd_unlink(a):
    os.unlink(b(a[0]))
    return 'OK'


def cmd_rmdir(a):
    os.rmdir(b(a[0]))
    return 'OK'


def cmd_rename(a):
    os.rename(b(a[0]), b(a[1]))
    return 'OK'


def cmd_rename2(a):
    """renameat2(AT_FDCWD, a, AT_FDCWD, b, FLAGS); FLAGS: noreplace|exchange|0."""
    flags = {'noreplace': RENAME_NOREPLACE, 'exchange': RENAME_EXCHANGE, '0': 0}[a[2]]
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    r = fn(AT_FDCWD, b(a[0]), AT_FDCWD, b(a[1]), flags)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return 'OK'


def cmd_access(a):
    mode = {'W_OK': os.W_OK, 'R_OK': os.R_OK, 'X_OK': os.X_OK, 'F_OK': os.F_OK}[a[1]]
    return 'OK' if os.access(b(a[0]), mode) else 'DENIED'


def cmd_stat(a):
    return 'OK ' + facts(os.stat(b(a[0])))


def cmd_lstat(a):
    return 'OK ' + facts(os.lstat(b(a[0])))


def cmd_utime(a):
    """utimensat(AT_FDCWD, path, NULL, 0): the heartbeat every tool sends."""
    os.utime(b(a[0]))
    return 'OK'


def cmd_futime(a):
    """open(O_WRONLY) + futimens(fd, NULL): what touch(1) does."""
    fd = os.open(b(a[0]), os.O_WRONLY)
    try:
        os.utime(fd)
    finally:
        os.close(fd)
    return 'OK'


def cmd_write(a):
    """open(O_WRONLY [|O_APPEND|O_TRUNC]) an existing file and write DATA."""
    how = a[2] if len(a) > 2 else 'plain'
    flags = os.O_WRONLY | {'plain': 0, 'append': os.O_APPEND, 'trunc': os.O_TRUNC}[how]
    fd = os.open(b(a[0]), flags)
    try:
        n = os.write(fd, unesc(a[1]))
    finally:
        os.close(fd)
    return 'OK written=%d' % n


def cmd_readhex(a):
    with open(b(a[0]), 'rb') as f:
        return 'OK ' + f.read().hex()


def cmd_ftruncate(a):
    fd = os.open(b(a[0]), os.O_WRONLY)
    try:
        os.ftruncate(fd, int(a[1]))
    finally:
        os.close(fd)
    return 'OK'


def cmd_getxattr(a):
    return 'OK ' + os.getxattr(b(a[0]), b(a[1])).decode('utf-8', 'backslashreplace')


def cmd_listxattr(a):
    return 'OK ' + ' '.join(sorted(os.listxattr(b(a[0]))))


def cmd_listdir(a):
    """readdir names, one per line, with C-style escapes so any byte shows."""
    names = sorted(os.listdir(b(a[0])))
    return 'OK\n' + '\n'.join(n.decode('latin-1').encode('unicode_escape').decode('ascii') for n in names)


def cmd_inlist(a):
    """OK when readdir(DIR) lists NAME (byte-exact), else MISSING."""
    return 'OK' if b(a[1]) in os.listdir(b(a[0])) else 'MISSING'


def cmd_statushas(a):
    """STATUSFILE NAME: OK when a line for key NAME with state=held exists.

    NAME escaped as src/common/view_format.h says (tests/lib/viewfmt.py): \\NNN
    for controls, the space, the backslash, bad UTF-8, C1 and the like.
    """
    import viewfmt
    name = viewfmt.escape(b(a[1]))
    with open(b(a[0]), 'rb') as f:
        for line in f.read().split(b'\n'):
            fields = line.split(b' ')
            if fields[0] == name and b'state=held' in fields[1:]:
                return 'OK'
    return 'MISSING'


def cmd_race(a):
    """N PATH: N processes released together by a barrier each try to take
    PATH with one primitive (in turn: O_CREAT|O_EXCL, link() of its own temp
    file, mkdir(), symlink()).  Prints the outcome counts, e.g.
    "OK=1 EEXIST=23", sorted by name.
    """
    import multiprocessing as mp
    n, path = int(a[0]), b(a[1])
    d = os.path.dirname(path) or b'.'
    ctx = mp.get_context('fork')
    barrier = ctx.Barrier(n)
    q = ctx.Queue()

    def one(i):
        tmp = os.path.join(d, b'.race%d.tmp' % i)
        if i % 4 == 1:
            with open(tmp, 'wb') as f:
                f.write(b'%d\n' % i)
        barrier.wait()
        try:
            if i % 4 == 0:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            elif i % 4 == 1:
                os.link(tmp, path)
            elif i % 4 == 2:
                os.mkdir(path)
            else:
                os.symlink(b'%d' % i, path)
            q.put('OK')
        except OSError as e:
            q.put(err(e))
        finally:
            if i % 4 == 1:
                os.unlink(tmp)

    procs = [ctx.Process(target=one, args=(i,)) for i in range(n)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    return ' '.join('%s=%d' % (k, results.count(k)) for k in sorted(set(results)))


def cmd_contend(a):
    """Contention worker: LOCK MARKER LOG WORKER_ID ITERATIONS DEADLINE_EPOCH.

    Takes LOCK with open(O_CREAT|O_EXCL), runs the same critical section as the
    shell workers (marker by O_EXCL on the local disk, S/E lines appended to
    LOG), releases by unlink.  Prints "done N overlaps M".
    """
    lock, marker, log, wid, n, deadline = b(a[0]), b(a[1]), a[2], a[3], int(a[4]), float(a[5])
    done = overlaps = 0
    logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    backoff = 0.004
    while done < n and time.time() < deadline:
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            # Same randomized exponential back-off as the shell workers.
            time.sleep(random.uniform(backoff / 2, backoff))
            backoff = min(backoff * 2, 0.256)
            continue
        backoff = 0.004
        os.write(fd, b'%d\n' % os.getpid())
        os.close(fd)
        i = done + 1
        os.write(logfd, ('S %s %d\n' % (wid, i)).encode())
        try:
            mfd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(mfd)
            os.unlink(marker)
        except FileExistsError:
            overlaps += 1
            os.write(logfd, ('O %s %d\n' % (wid, i)).encode())
        os.write(logfd, ('E %s %d\n' % (wid, i)).encode())
        os.unlink(lock)
        done = i
        time.sleep(random.uniform(0.004, 0.008))
    os.close(logfd)
    return 'done %d overlaps %d' % (done, overlaps)


COMMANDS = {name[4:]: fn for name, fn in globals().items() if name.startswith('cmd_')}


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        sys.stderr.write('usage: fsop.py {%s} ARGS...\n' % '|'.join(sorted(COMMANDS)))
        return 2
    try:
        out = COMMANDS[argv[1]](argv[2:])
    except OSError as e:
        out = err(e)
    except (IndexError, KeyError, ValueError) as e:
        sys.stderr.write('fsop.py %s: bad arguments: %r\n' % (argv[1], e))
        return 2
    sys.stdout.write(out + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
