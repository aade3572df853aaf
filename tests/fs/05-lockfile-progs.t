#!/bin/bash
# 05-lockfile-progs.t — legacy-clients.md §8.6: lockfile-create / -check /
# -touch / -remove, and a background lockfile-touch that heartbeats at once
# and then every 60 s, and exits 255 once the lock has been removed.
# lockfile-touch 0.1.19 (strace on ext4 as well): touch, sleep(60), touch
# fails with ENOENT, sleep(60) again, exit 255 — so it exits about 120 s
# after it started when the lock is removed right away.  The waits are
# bounded (75 s for the 60 s touch, 135 s for the exit) and both background
# cases run concurrently.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

run 10 lockfile-create --retry 0 "$L/f"
is "$RC" 0 "lockfile-create --retry 0 f: rc 0 ($ERR)"
is "$(fsop readhex "$L/f.lock")" "OK 300a" "f.lock contains '0\\n'"
run 10 lockfile-check "$L/f"
is "$RC" 0 "lockfile-check f: rc 0"
run 10 lockfile-create --retry 0 "$L/f"
is "$RC" 4 "lockfile-create on the held f: rc 4"
timeout 10 touch -d '10 min ago' -- "$L/f.lock"
t0=$(now)
run 10 lockfile-touch --oneshot "$L/f"
is "$RC" 0 "lockfile-touch --oneshot f: rc 0"
cmp_ok "$(st %Y "$L/f.lock")" -ge $((t0 - 1)) "lockfile-touch --oneshot moved mtime to now"
run 10 lockfile-remove "$L/f"
is "$RC" 0 "lockfile-remove f: rc 0"
is "$(fsop1 lstat "$L/f.lock")" ENOENT "f.lock is gone"
run 10 lockfile-check "$L/f"
is "$RC" 255 "lockfile-check after removal: rc 255"
run 10 lockfile-touch --oneshot "$L/f"
is "$RC" 255 "lockfile-touch --oneshot after removal: rc 255"
run 10 lockfile-create --retry 0 --lock-name "$L/named.lock"
is "$RC" 0 "lockfile-create --lock-name named.lock: rc 0"
run 10 lockfile-remove --lock-name "$L/named.lock"
is "$RC" 0 "lockfile-remove --lock-name named.lock: rc 0"

# Background lockfile-touch on two locks: g keeps being heartbeated, h is
# removed right away and its toucher must notice at its next touch.
for n in g h; do
    run 10 lockfile-create --retry 0 "$L/$n"
    is "$RC" 0 "lockfile-create $n: rc 0"
    timeout 10 touch -d '10 min ago' -- "$L/$n.lock"
done
fresh() { local m; m=$(st %Y "$1" 2>/dev/null) && ((m >= $(now) - 3)); }

timeout -k 5 200 lockfile-touch "$L/g" </dev/null >"$TESTDIR/g.out" 2>&1 &
gpid=$!
at_exit "kill $gpid 2>/dev/null"
timeout -k 5 200 lockfile-touch "$L/h" </dev/null >"$TESTDIR/h.out" 2>&1 &
hpid=$!
at_exit "kill $hpid 2>/dev/null"

ok "background lockfile-touch g touches at once" wait_until 5 fresh "$L/g.lock"
ok "background lockfile-touch h touches at once" wait_until 5 fresh "$L/h.lock"
hstart=$(now)
run 10 lockfile-remove "$L/h"
is "$RC" 0 "lockfile-remove h while its toucher runs: rc 0"

# g: backdate again and wait for the periodic touch (60 s cadence).
timeout 10 touch -d '10 min ago' -- "$L/g.lock"
gstart=$(now)
if wait_until 75 fresh "$L/g.lock"; then
    pass "lockfile-touch g heartbeated again after $(($(now) - gstart)) s (60 s cadence)"
else
    fail "lockfile-touch g heartbeated again within 75 s"
fi
ok "lockfile-touch g is still running" kill -0 "$gpid"

# h: its next touch fails (the lock is gone) and it exits 255.
gone() { ! kill -0 "$1" 2>/dev/null; }
if wait_until $((135 - ($(now) - hstart))) gone "$hpid"; then
    wait "$hpid"; rc=$?
    is "$rc" 255 "lockfile-touch h exits 255 after the lock was removed ($(cat "$TESTDIR/h.out"))"
    cmp_ok $(($(now) - hstart)) -le 135 "... within 135 s (two 60 s periods) of the removal"
else
    fail "lockfile-touch h exited within 135 s of the removal"
    skip "toucher still running" 1
fi
is "$(fsop1 lstat "$L/h.lock")" ENOENT "the toucher did not recreate h.lock"
ok "lockfile-touch g is still running while its lock exists" kill -0 "$gpid"
cmp_ok "$(st %Y "$L/g.lock")" -ge $(($(now) - 65)) "g.lock has been heartbeated within the last 60 s"

run 10 lockfile-remove "$L/g"
is "$RC" 0 "lockfile-remove g: rc 0"
kill "$gpid" 2>/dev/null; wait "$gpid" 2>/dev/null
is "$(fsop1 lstat "$L/g.lock")" ENOENT "g.lock is gone"
is "$(tmp_leaks "$L")" "" "no temporary files left"

done_testing
