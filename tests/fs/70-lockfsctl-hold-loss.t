#!/bin/bash
# 70-lockfsctl-hold-loss.t — lockfsctl hold stops CMD (SIGTERM, SIGKILL 5 s
# later) when the lock is lost — broken by lockfsctl unlock or the break
# xattr, replaced, its mount hung or gone (not back) past --ttl — or when --max-hold
# passes; then it prints exactly one line and exits 75 (lost) or 124
# (--max-hold; 74-hold-flock-flags.t has the other codes).  Signals sent to
# lockfsctl reach CMD, and the lock is released after CMD ends.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

lockfs_start_or_bail
L=$MNT
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
alive() { kill -0 "$1" 2>/dev/null; }

# start_hold LOCK [HOLD OPTIONS...]: run "lockfsctl hold LOCK OPTIONS -- sh"
# in the background, the shell writing its pid to $TESTDIR/cmd.pid and then
# exec'ing "sleep 60"; waits until the lock is taken.  Sets HP (the hold's
# pid; timeout passes lockfsctl's status through) and HERR (its stderr).
start_hold() {
    local lock=$1; shift
    rm -f "$TESTDIR/cmd.pid"
    HERR=$TESTDIR/hold.err
    timeout -k 3 40 "$CTL" hold "$@" "$lock" -- \
        sh -c 'echo $$ > "$1"; exec sleep 60' _ "$TESTDIR/cmd.pid" 2>"$HERR" &
    HP=$!
    wait_until 10 test -s "$TESTDIR/cmd.pid" || diag "the held command did not start"
    CP=$(cat "$TESTDIR/cmd.pid" 2>/dev/null)
}

# end_hold SECS: wait for the hold to end; sets HRC and HMS (ms from now).
end_hold() {
    local t0=$(date +%s%N)
    wait_until "$1" bash -c '! kill -0 "$1" 2>/dev/null' _ "$HP"
    wait "$HP"
    HRC=$?
    HMS=$((($(date +%s%N) - t0) / 1000000))
}

lost_checks() {
    local what=$1
    is "$HRC" 75 "$what: hold exits 75 (lost)"
    cmp_ok "$HMS" -lt 3000 "$what: within moments ($HMS ms)"
    is "$(grep -c . "$HERR")" 1 "$what: exactly one line on stderr"
    like "$(cat "$HERR")" "^lockfsctl hold: the lock $L/l\\.lock was lost .*so the command was stopped: another may hold it now$" \
        "$what: the line says the lock was lost and the command stopped"
    nok "$what: the command was stopped" alive "$CP"
}

# Broken by lockfsctl unlock --yes.
start_hold "$L/l.lock"
ok "the hold runs its command" alive "$CP"
run 10 "$CTL" unlock --yes "$L/l.lock"
is "$RC" 0 "lockfsctl unlock --yes breaks the held lock"
end_hold 10
lost_checks "broken by lockfsctl unlock"
ok "the lock stays free" gone "$L/l.lock"

# Broken by the break xattr from another process.
start_hold "$L/l.lock"
"$PYTHON" -c 'import os, sys; os.setxattr(sys.argv[1], "user.lockfs.break", b"")' "$L/l.lock"
end_hold 10
lost_checks "broken with setxattr user.lockfs.break"

# Removed and taken by another: the name is someone else's lock now, which
# lockfsctl must leave alone.
start_hold "$L/l.lock"
rm -f "$L/l.lock" && timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/l.lock"
other=$(xattr "$L/l.lock" user.lockfs.fence)
end_hold 10
lost_checks "removed and retaken by another"
is "$(xattr "$L/l.lock" user.lockfs.fence)" "$other" "the new holder's lock is left alone"
rm -f "$L/l.lock"

# --max-hold: stopped after 1 s, one line, the lock released.
start_hold "$L/m.lock" --max-hold 1s
end_hold 10
is "$HRC" 124 "--max-hold 1s with sleep 60: exit 124"
cmp_ok "$HMS" -lt 4000 "stopped after about a second ($HMS ms)"
is "$(grep -c . "$HERR")" 1 "exactly one line on stderr"
like "$(cat "$HERR")" "^lockfsctl hold: the lock $L/m\\.lock was held past --max-hold 1s, so the command was stopped$" \
    "the line names the lock and --max-hold"
nok "the command was stopped" alive "$CP"
ok "the lock was released" gone "$L/m.lock"

# A command that ignores SIGTERM gets SIGKILL 5 s later.
rm -f "$TESTDIR/cmd.pid"
t0=$(date +%s%N)
timeout -k 3 40 "$CTL" hold --max-hold 500ms "$L/k.lock" -- \
    sh -c 'trap "" TERM; echo $$ > "$1"; exec sleep 60' _ "$TESTDIR/cmd.pid" 2>"$TESTDIR/k.err"
krc=$?
kms=$((($(date +%s%N) - t0) / 1000000))
is "$krc" 124 "a command ignoring SIGTERM, past --max-hold: exit 124"
cmp_ok "$kms" -ge 5000 "it was killed no sooner than 5 s after SIGTERM ($kms ms)"
cmp_ok "$kms" -lt 9000 "and not much later"
nok "the command is gone" alive "$(cat "$TESTDIR/cmd.pid")"
is "$(grep -c . "$TESTDIR/k.err")" 1 "exactly one line on stderr"
ok "the lock was released" gone "$L/k.lock"

# SIGTERM and SIGINT sent to lockfsctl reach the command; the lock is released.
start_hold "$L/s.lock"
kill -TERM "$(pgrep -P "$HP" -x lockfsctl || echo "$HP")"
end_hold 10
is "$HRC" 143 "SIGTERM to lockfsctl: the command ends by it, exit 143"
nok "the command was stopped" alive "$CP"
ok "the lock was released" gone "$L/s.lock"
is "$(grep -c . "$HERR")" 0 "nothing on stderr"

start_hold "$L/s.lock"
kill -INT "$(pgrep -P "$HP" -x lockfsctl || echo "$HP")"
end_hold 10
is "$HRC" 130 "SIGINT to lockfsctl: the command ends by it, exit 130"
ok "the lock was released" gone "$L/s.lock"

# A plain directory: the lock removed under it.
P=$TESTDIR/plain
mkdir "$P"
rm -f "$TESTDIR/cmd.pid"
timeout -k 3 40 "$CTL" hold "$P/l.lock" -- sh -c 'echo $$ > "$1"; exec sleep 60' _ "$TESTDIR/cmd.pid" \
    2>"$TESTDIR/p.err" &
HP=$!
wait_until 10 test -s "$TESTDIR/cmd.pid"
CP=$(cat "$TESTDIR/cmd.pid")
rm -f "$P/l.lock"
end_hold 10
is "$HRC" 75 "plain directory, lock removed: exit 75 (lost)"
is "$(grep -c . "$TESTDIR/p.err")" 1 "exactly one line on stderr"
like "$(cat "$TESTDIR/p.err")" "the lock $P/l\\.lock was lost" "saying the lock was lost"
nok "the command was stopped" alive "$CP"

# The mount hangs (its lockfs stopped): unconfirmed for --ttl, the lock
# counts as lost.  Nothing else may touch the mount until it is continued.
lockfs_start_or_bail
M=$MNT
start_hold "$M/g.lock" --ttl 1s
kill -STOP "$LOCKFS_PID"
end_hold 15
kill -CONT "$LOCKFS_PID"
is "$HRC" 75 "the mount's lockfs stopped, --ttl 1s: exit 75 (lost)"
cmp_ok "$HMS" -lt 6000 "within a few seconds ($HMS ms)"
is "$(grep -c . "$HERR")" 1 "exactly one line on stderr"
like "$(cat "$HERR")" 'was lost \(it could not be confirmed for --ttl 1s: .*\), so the command was stopped' \
    "saying the lock could not be confirmed"
nok "the command was stopped" alive "$CP"
rm -f "$M/g.lock"

# The mount goes away (its lockfs killed) and no lockfs comes back: the
# lock is lost once hold's deadline (--ttl, and on a shared backend the
# lease the mount last reported) passes; until then a restarted lockfs
# could bring it back (70-lockfsctl-hold-restart.t).
start_hold "$M/g.lock" --ttl 2s
{
    kill -KILL "$LOCKFS_PID"
    wait "$LOCKFS_PID"
} 2>/dev/null
HERR_SAVED=$HERR
end_hold 10
is "$HRC" 75 "the mount's lockfs killed: exit 75 (lost)"
cmp_ok "$HMS" -lt 6000 "within --ttl and a few seconds ($HMS ms)"
is "$(grep -c . "$HERR_SAVED")" 1 "exactly one line on stderr"
like "$(cat "$HERR_SAVED")" 'was lost \(.*its lockfs mount went away' "saying the mount went away"
nok "the command was stopped" alive "$CP"
_unmount_force "$M"
is "$(ls -A "$M")" "" "nothing was created under the mount point while it was away"

done_testing
