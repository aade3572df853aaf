#!/bin/bash
# 70-lockfsctl-hold.t — lockfsctl hold PATH [--wait D] [--ttl D] -- CMD:
# runs CMD while holding the lock, with its fence in LOCKFS_FENCE, heartbeats
# it, releases it after, and exits with CMD's code.  A lock held by another
# past --wait exits 1 in one line and CMD never runs.  In a plain directory
# it is a careful dot-lock without a fence.  (Losing the lock and --max-hold:
# 70-lockfsctl-hold-loss.t.)
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

lockfs_start_or_bail -o heartbeat_min_interval=500ms
L=$MNT
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$1"; }

# The normal path: CMD's exit code, the fence, the content, released after.
run 20 "$CTL" hold "$L/h.lock" -- sh -c \
    'echo "fence=${LOCKFS_FENCE-unset}"; echo "content=$(cat "$1")"; echo "ppid=$PPID"; exit 7' _ "$L/h.lock"
is "$RC" 7 "CMD's exit code passes through (7)"
is "$ERR" '' "nothing on stderr"
f1=$(sed -n 's/^fence=//p' <<<"$OUT")
like "$f1" '^[0-9]+$' "LOCKFS_FENCE is set and numeric ($f1)"
is "$(sed -n 's/^content=//p' <<<"$OUT")" "$(sed -n 's/^ppid=//p' <<<"$OUT")" \
    "the lock's content is lockfsctl's pid"
ok "the lock is gone after" gone "$L/h.lock"

run 20 "$CTL" hold "$L/h.lock" -- true
is "$RC" 0 "exit 0 passes through"
run 20 "$CTL" hold "$L/h.lock" -- sh -c 'kill -TERM $$'
is "$RC" 143 "CMD killed by SIGTERM: exit 128+15"
ok "released after CMD was killed by a signal" gone "$L/h.lock"

# The fence grows across holds.
run 20 "$CTL" hold "$L/h.lock" -- sh -c 'echo "$LOCKFS_FENCE"'
f2=$OUT
fence_gt "$f2" "$f1" "the next hold's fence is larger"
run 20 "$CTL" hold --wait=0 "$L/h.lock" -- sh -c 'echo "$LOCKFS_FENCE"'
fence_gt "$OUT" "$f2" "and the one after"

# While CMD runs: the lock is held, by lockfsctl, with the fence CMD got.
out=$TESTDIR/during
run 20 "$CTL" hold "$L/sub-less.lock" -- sh -c \
    'echo "$LOCKFS_FENCE" > "$2"; cat "$1/.lockfs/status" >> "$2"' _ "$L" "$out"
is "$RC" 0 "CMD can read the status while holding"
line=$(grep '^sub-less\.lock ' "$out")
like "$line" "state=held fence=$(head -n1 "$out") " "the status shows the lock held with CMD's fence"

# Heartbeats: with --ttl 1500ms lockfsctl touches the lock every 500 ms.
bash -c '"$1" hold --ttl 1500ms "$2" -- sleep 4' _ "$CTL" "$L/hb.lock" &
hp=$!
wait_until 5 test -e "$L/hb.lock"
sleep 2.5
hb=$(info_field hb.lock heartbeat_age)
age=$(info_field hb.lock age)
cmp_ok "${age:-0}" -ge 2 "the lock has been held for 2 s or more ($age)"
cmp_ok "${hb:-99}" -le 1 "its heartbeat is recent: lockfsctl heartbeats ($hb s ago)"
wait "$hp"
is "$?" 0 "hold with heartbeats exits 0"

# --wait 0 on a held lock: exit 1, one line, CMD never runs.
take "$L/busy.lock"
bp=$(info_field busy.lock pid)
run 20 "$CTL" hold --wait 0 "$L/busy.lock" -- touch "$TESTDIR/marker"
is "$RC" 1 "--wait 0 on a held lock: exit 1"
is "$(grep -c . <<<"$ERR")" 1 "one line on stderr"
like "$ERR" "$L/busy\\.lock is held by $LOCKFS_TEST_HOST:$bp \\(user $(id -un)\\); --wait longer" \
    "it names the lock, its holder and --wait ($ERR)"
ok "CMD never ran" test ! -e "$TESTDIR/marker"
cmp_ok "$ELAPSED_MS" -lt 1000 "--wait 0 does not wait ($ELAPSED_MS ms)"

run 20 "$CTL" hold --wait 1s "$L/busy.lock" -- touch "$TESTDIR/marker"
is "$RC" 1 "--wait 1s on a lock held throughout: exit 1"
cmp_ok "$ELAPSED_MS" -ge 900 "it waited about 1 s ($ELAPSED_MS ms)"
ok "CMD never ran" test ! -e "$TESTDIR/marker"

# --wait 2 on a lock released after 1 s: taken.
(sleep 1; rm -f "$L/busy.lock") &
run 20 "$CTL" hold --wait 2 "$L/busy.lock" -- touch "$TESTDIR/marker"
is "$RC" 0 "--wait 2 on a lock released after 1 s: exit 0"
ok "CMD ran" test -e "$TESTDIR/marker"
ok "and the lock was released" gone "$L/busy.lock"
rm -f "$TESTDIR/marker"

# CMD that cannot run: 127, lock released.
run 20 "$CTL" hold "$L/x.lock" -- "$TESTDIR/no-such-command"
is "$RC" 127 "a CMD that does not exist: exit 127"
like "$ERR" 'cannot run' "saying it cannot run"
ok "the lock was released" gone "$L/x.lock"

# A name that is not a lock name in the mount.
run 20 "$CTL" hold "$L/notalock" -- true
is "$RC" 69 "a name without the lock suffix: exit 69 (the lock could not be tried)"
like "$ERR" 'not a lock name' "saying so"
ok "nothing is left behind" gone "$L/notalock"

# A plain directory: a dot-lock without a fence.
P=$TESTDIR/plain
mkdir "$P"
run 20 env LOCKFS_FENCE=999 "$CTL" hold "$P/p.lock" -- sh -c \
    'echo "fence=${LOCKFS_FENCE-unset}"; cat "$1"; ls -A "$2"; exit 3' _ "$P/p.lock" "$P"
is "$RC" 3 "plain directory: CMD's exit code passes through"
like "$OUT" 'fence=unset' "plain directory: LOCKFS_FENCE is not set (not even inherited)"
like "$(sed -n 2p <<<"$OUT")" '^[0-9]+$' "plain directory: the lock holds a pid"
is "$(sed -n '3,$p' <<<"$OUT")" 'p.lock' "plain directory: only the lock exists while held (temp file gone)"
ok "plain directory: released after" test ! -e "$P/p.lock"
is "$(ls -A "$P")" '' "plain directory: nothing left behind"
echo 4000000 >"$P/q.lock"
run 20 "$CTL" hold --wait 0 "$P/q.lock" -- touch "$TESTDIR/marker"
is "$RC" 1 "plain directory, held lock, --wait 0: exit 1"
like "$ERR" 'is held by pid 4000000' "naming the pid in the lock"
ok "CMD never ran" test ! -e "$TESTDIR/marker"
ok "the other's lock is untouched" test -e "$P/q.lock"
is "$(ls -A "$P")" 'q.lock' "plain directory: no temp file left behind"

# Usage.
run 10 "$CTL" hold "$L/u.lock"
is "$RC" 64 "no command: exit 64"
run 10 "$CTL" hold --wait soon "$L/u.lock" -- true
is "$RC" 64 "a bad duration: exit 64"
run 10 "$CTL" hold --bogus "$L/u.lock" -- true
is "$RC" 64 "an unknown option: exit 64"

done_testing
