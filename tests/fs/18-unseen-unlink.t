#!/bin/bash
# 18-unseen-unlink.t — an unlink from a process that last found the lock name
# free, before the lock there now was taken, is no release: it answers ENOENT
# and the lock stays.  liblockfile's stale check (lockfile_check) stat()s the
# lock it could not take and, when the holder let go meanwhile, unlinks the
# name anyway: by then it may be the next holder's lock, and the unlink, from
# the same uid, would release it under its holder (an overlap seen in
# 90-contention on the shared backends).  Every other unlink is unchanged.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

# look_take_unlink LOCK: in one process, lstat LOCK, let a child take it
# (bash noclobber), then unlink it; prints the three results.
look_take_unlink() {
    timeout 20 "$PYTHON" - "$1" <<'PY'
import errno, os, subprocess, sys
p = sys.argv[1]
def res(f):
    try:
        f()
        return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
a = res(lambda: os.lstat(p))
b = "OK" if subprocess.run(["bash", "-c", 'set -C; echo $$ > "$1"', "_", p]).returncode == 0 else "FAIL"
c = res(lambda: os.unlink(p))
print(a, b, c)
PY
}

is "$(look_take_unlink "$L/a.lock")" "ENOENT OK ENOENT" \
    "found a.lock free, a child took it, the unlink answers ENOENT"
is "$(xattr "$L/a.lock" user.lockfs.state)" held "the child's lock is still held"
run 10 rm -f -- "$L/a.lock"
is "$RC" 0 "rm -f by another process (which sees the lock) releases it"
is "$(fsop1 lstat "$L/a.lock")" ENOENT "a.lock is free"

# Seen held, then unlinked: an ordinary release.
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/b.lock"
is "$(timeout 10 "$PYTHON" -c '
import os, sys
os.lstat(sys.argv[1]); os.unlink(sys.argv[1]); print("OK")' "$L/b.lock" 2>&1)" OK \
    "a process that saw b.lock held unlinks it"
is "$(fsop1 lstat "$L/b.lock")" ENOENT "b.lock is free"

# The holder itself, after finding the name free: takes it and lets it go.
is "$(timeout 10 "$PYTHON" -c '
import os, sys
p = sys.argv[1]
try:
    os.lstat(p)
except FileNotFoundError:
    pass
os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
os.unlink(p)
print("OK")' "$L/c.lock" 2>&1)" OK "a holder that found c.lock free takes and releases it"
is "$(fsop1 lstat "$L/c.lock")" ENOENT "c.lock is free"
log_has "removed a\\.lock after finding it free" && pass "the refused unlink is logged" ||
    fail "the refused unlink is logged"

done_testing
