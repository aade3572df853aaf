#!/bin/bash
# 04-dotlockfile-cmd.t — legacy-clients.md §8.5: "dotlockfile -l LOCK cmd"
# holds the lock while cmd runs and heartbeats with utimensat(NULL) every
# 30 s (SIGALRM).  The mtime is sampled by polling (about 5, 35, 65 s), not
# by assuming when the touches happen; at the end the lock is gone.
set -u
TEST_TIMEOUT=200
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

start=$(now)
timeout -k 5 120 dotlockfile -l -r 0 "$L/c.lock" sleep 65 </dev/null >"$TESTDIR/cmd.out" 2>&1 &
bg=$!
at_exit "kill $bg 2>/dev/null"
ok "c.lock appears" wait_until 10 test -e "$L/c.lock"
m0=$(st %Y "$L/c.lock")
cmp_ok "$m0" -ge $((start - 1)) "c.lock's mtime is its acquisition time"

# ~5 s: no heartbeat yet.
wait_clock_past $((start + 4))
is "$(st %Y "$L/c.lock")" "$m0" "at ~5 s the mtime has not moved"

# mtime_after M: c.lock's mtime is later than M.
mtime_after() { local m; m=$(st %Y "$L/c.lock" 2>/dev/null) && ((m > $1)); }

# First heartbeat, about 30 s after the start (sampled around 35 s).
if wait_until 45 mtime_after "$m0"; then
    t1=$(now); m1=$(st %Y "$L/c.lock")
    pass "first heartbeat observed $((t1 - start)) s after the start"
    cmp_ok $((m1 - start)) -ge 25 "first heartbeat not earlier than ~30 s ($((m1 - start)) s)"
    cmp_ok $((m1 - start)) -le 36 "first heartbeat not later than ~30 s ($((m1 - start)) s)"
    cmp_ok "$(st %Z "$L/c.lock")" -ge "$m1" "ctime moved with the heartbeat"
    # Second heartbeat, about 60 s after the start (sampled around 65 s).
    if wait_until 45 mtime_after "$m1"; then
        m2=$(st %Y "$L/c.lock")
        pass "second heartbeat observed $(($(now) - start)) s after the start"
        cmp_ok $((m2 - m1)) -ge 25 "heartbeats ~30 s apart ($((m2 - m1)) s)"
        cmp_ok $((m2 - m1)) -le 35 "heartbeats ~30 s apart ($((m2 - m1)) s)"
    else
        fail "second heartbeat observed within 45 s of the first"
        skip "no second heartbeat to measure" 2
    fi
else
    fail "first heartbeat observed within 45 s"
    skip "no first heartbeat to measure" 6
fi
is "$(fsop1 lstat "$L/c.lock")" OK "c.lock still held while the command runs"

# The command ends at ~65 s; dotlockfile releases the lock and exits 0.
if wait_until 40 bash -c '! kill -0 "$1" 2>/dev/null' _ "$bg"; then
    wait "$bg"; rc=$?
    is "$rc" 0 "dotlockfile -l ... sleep 65 exits 0 ($(cat "$TESTDIR/cmd.out"))"
else
    fail "dotlockfile -l ... sleep 65 exited within 105 s"
fi
is "$(fsop1 lstat "$L/c.lock")" ENOENT "c.lock is gone at the end"
is "$(status_line c.lock)" "" "c.lock is no longer in .lockfs/status"
is "$(tmp_leaks "$L")" "" "no temporary files left"

done_testing
