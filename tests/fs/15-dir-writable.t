#!/bin/bash
# 15-dir-writable.t — legacy-clients.md §8.16 and §0.8: the lock directory
# must look writable (access W_OK), or mailutils silently falls back to
# fcntl locks and exits 0 *without* creating a lock.  Checked for the suite's
# uid and for an unprivileged second uid.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

is "$(fsop1 access "$L" W_OK)" OK "access(mount root, W_OK) for uid $EUID"
: >"$L/mbox"
run 20 dotlock.mailutils --no-config "$L/mbox"
is "$RC" 0 "dotlock.mailutils mbox: rc 0"
is "$(fsop1 lstat "$L/mbox.lock")" OK "mbox.lock was really created (no fcntl fallback)"
isnt "$(status_line mbox.lock)" "" "mbox.lock is held according to .lockfs/status"
run 20 dotlock.mailutils --no-config -u "$L/mbox"
is "$RC" 0 "dotlock.mailutils -u: rc 0"
run 10 mutt_dotlock -t "$L/mbox"
is "$RC" 0 "mutt_dotlock -t mbox: rc 0 (directory writable)"

# A subdirectory made by the user is writable by the user as well.
mkdir "$L/sub"
is "$(fsop1 access "$L/sub" W_OK)" OK "access(subdirectory, W_OK) for its creator"

if have_user2; then
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" access "$L" W_OK
    is "$OUT" OK "access(mount root, W_OK) for unprivileged uid $USER2_UID"
    run 10 as_user2 touch "$L/mbox2"
    is "$RC" 0 "uid $USER2_UID creates its mailbox in the mount root"
    run 20 as_user2 dotlock.mailutils --no-config "$L/mbox2"
    is "$RC" 0 "uid $USER2_UID: dotlock.mailutils mbox2: rc 0"
    is "$(fsop1 lstat "$L/mbox2.lock")" OK "uid $USER2_UID: mbox2.lock really created"
    is "$(st %u "$L/mbox2.lock")" "$USER2_UID" "mbox2.lock is owned by uid $USER2_UID"
    run 10 as_user2 mutt_dotlock -t "$L/mbox2"
    is "$RC" 0 "uid $USER2_UID: mutt_dotlock -t: rc 0"
    run 20 as_user2 dotlock.mailutils --no-config -u "$L/mbox2"
    is "$RC" 0 "uid $USER2_UID: dotlock.mailutils -u: rc 0"
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" access "$L/sub" W_OK
    is "$OUT" DENIED "access(W_OK) of a 0755 subdirectory owned by uid $EUID is denied to uid $USER2_UID (permissions are real)"
else
    skip "$(user2_skip_reason)" 8
fi

done_testing
