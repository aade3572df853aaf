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

# In one process: lstat, a child takes the lock, unlink.
is "$(fsop seq lstat "$L/a.lock" childexcl "$L/a.lock" unlink "$L/a.lock")" "ENOENT OK ENOENT" \
    "found a.lock free, a child took it, the unlink answers ENOENT"
is "$(xattr "$L/a.lock" user.lockfs.state)" held "the child's lock is still held"
run 10 rm -f -- "$L/a.lock"
is "$RC" 0 "rm -f by another process (which sees the lock) releases it"
is "$(fsop1 lstat "$L/a.lock")" ENOENT "a.lock is free"

# Seen held, then unlinked: an ordinary release.
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/b.lock"
is "$(fsop seq lstat "$L/b.lock" unlink "$L/b.lock")" "OK OK" \
    "a process that saw b.lock held unlinks it"
is "$(fsop1 lstat "$L/b.lock")" ENOENT "b.lock is free"

# The holder itself, after finding the name free: takes it and lets it go.
is "$(fsop seq lstat "$L/c.lock" excl "$L/c.lock" unlink "$L/c.lock")" "ENOENT OK OK" \
    "a holder that found c.lock free takes and releases it"
is "$(fsop1 lstat "$L/c.lock")" ENOENT "c.lock is free"
log_has "removed a\\.lock after finding it free" && pass "the refused unlink is logged" ||
    fail "the refused unlink is logged"

done_testing
