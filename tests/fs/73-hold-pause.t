#!/bin/bash
# 73-hold-pause.t — lockfsctl hold stops its command before the mount's
# lease could run out (CONTRACT §8; issue: process pause under hold).
#
# hostA's hold runs a command that stamps the time every 20 ms; hostA's
# lockfs is then stopped (SIGSTOP: a VM stall, a swap storm), so it neither
# renews nor answers.  hostB's hold waits for the lock and runs a command
# that stamps once.  hold on hostA goes by the lease end the mount last
# reported, not by its own --ttl: every stamp of hostA's command is older
# than hostB's, hostA's hold says the lock was lost and exits 75, and
# whatever its command started is gone too.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] ||
    skip_all "the local backend is one host's: a paused mount loses nothing to another"

lockfsctl_or_bail

opts=(-o ttl=3s -o network_timeout=1s)
lockfs_start_or_bail -o host=hostA "${opts[@]}"
A=$MNT
pid_a=$LOCKFS_PID
lockfs_start_or_bail -o host=hostB "${opts[@]}"
B=$MNT

STAMPS_A=$TESTDIR/a.stamps
STAMP_B=$TESTDIR/b.stamp
: >"$STAMPS_A"
# The command on hostA: a shell loop with a child per stamp, so that a stray
# process of its group would be seen writing.
timeout -k 3 60 "$CTL" hold --wait 0 "$A/p.lock" -- \
    sh -c 'while :; do date +%s%N >> "$1"; sleep 0.02; done' _ "$STAMPS_A" \
    2>"$TESTDIR/a.err" &
hp_a=$!
stamping() { [[ $(wc -l <"$STAMPS_A") -ge 3 ]]; }
ok "hostA's hold runs its command" wait_until 10 stamping
ok "hostB sees p.lock held" wait_until 10 bash -c '[[ $(timeout 5 stat -c %n -- "$1" 2>/dev/null) ]]' _ "$B/p.lock"

kill -STOP "$pid_a"
t_stop=$(date +%s%N)
run 30 "$CTL" hold --wait 20s "$B/p.lock" -- sh -c 'date +%s%N > "$1"' _ "$STAMP_B"
kill -CONT "$pid_a"
is "$RC" 0 "hostB's hold got p.lock and ran its command once hostA's lease ran out"
ok "hostB's command stamped" test -s "$STAMP_B"

wait_until 15 bash -c '! kill -0 "$1" 2>/dev/null' _ "$hp_a"
wait "$hp_a"
rc_a=$?
is "$rc_a" 75 "hostA's hold exits 75 (lost)"
like "$(cat "$TESTDIR/a.err")" 'was lost .*so the command was stopped' "hostA's hold says the lock was lost"

last_a=$(tail -n 1 "$STAMPS_A")
first_b=$(cat "$STAMP_B" 2>/dev/null || echo 0)
note "hostA stopped at +0; hostA's last stamp at +$(((last_a - t_stop) / 1000000)) ms; hostB's first at +$(((first_b - t_stop) / 1000000)) ms"
cmp_ok "$last_a" -lt "$first_b" "hostA's command was dead before hostB's began"
n=$(wc -l <"$STAMPS_A")
# Nothing of hostA's command group still writes.
wait_clock_past "$(date +%s)"
is "$(wc -l <"$STAMPS_A")" "$n" "nothing hostA's command started still runs"

done_testing
