#!/usr/bin/python3
"""detach.py STEM -- CMD...: run CMD, a mount command whose program detaches
(mount(8), mount.fuse3, lockfs without -f), and keep hold of the daemon it
leaves behind.

This process is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so the
daemon, once its parent exits, is re-parented here instead of to init: its
pid is known for certain (no search by name), and so is its exit status,
which only a parent can read.  Files, each written whole (rename):
  STEM.mount   CMD's exit status, once CMD has exited
  STEM.pid     then the daemon's pid, or 0 when CMD left none
  STEM.rc      the daemon's exit status once it has exited (128+N: signal N)
Exits once the daemon has exited (anything else re-parented here, such as a
notify command's own background job, then goes on to init).
"""
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def put(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.rename(tmp, path)


def status(st):
    return os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)


def children():
    """Pids of this process's children (re-parented ones too, zombies too)."""
    pids = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/children") as f:
            pids += [int(p) for p in f.read().split()]
    return pids


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: detach.py STEM -- CMD...")
    stem, cmd = sys.argv[1], sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"detach.py: prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, st = os.waitpid(pid, 0)
    # The daemon's parent exited before CMD did (mount(8) and mount.fuse3
    # wait for it): the daemon is one of ours by now, if there is one.
    left = children()
    put(stem + ".mount", str(status(st)))
    put(stem + ".pid", str(left[0] if left else 0))
    daemon = left[0] if left else 0
    while daemon:
        try:
            p, st = os.waitpid(-1, 0)
        except ChildProcessError:
            put(stem + ".rc", "unknown")
            break
        if p == daemon:
            put(stem + ".rc", str(status(st)))
            break


if __name__ == "__main__":
    main()
