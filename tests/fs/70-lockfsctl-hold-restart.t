#!/bin/bash
# 70-lockfsctl-hold-restart.t — lockfsctl hold rides a restart of its
# mount's lockfs (issue 25).  While its command runs, hostA's lockfs is
# restarted (SIGTERM then mount; kill -9 then mount): the mount goes away and
# comes back with the lock taken back under the same fence, so the command
# keeps running, hold heartbeats the lock again through the new mount, and
# exits with the command's status, releasing the lock.  Nothing is created
# under the mount point while it is away.  A restart slower than the lease
# hold knows of (here the mount's ttl and hold's --ttl) is a real loss:
# the command is stopped, exit 75.
set -u
TEST_TIMEOUT=400
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

A=$TESTDIR/A
STATE_A=$TESTDIR/stateA
mkdir -p "$A" "$STATE_A"
start_a() { lockfs_start --mnt "$A" --state "$STATE_A" -o host=hostA; }
start_a || BAIL_OUT "cannot mount hostA"
PID_A=$LOCKFS_PID
alive() { kill -0 "$1" 2>/dev/null; }
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }

# start_hold LOCK [HOLD OPTIONS...]: "lockfsctl hold --verbose OPTIONS LOCK
# -- sh ..." in the background; the shell writes its pid and LOCKFS_FENCE,
# then runs until $TESTDIR/go exists (bounded) and exits 7.  Sets HP (the
# hold), CP (the command) and HERR (hold's stderr).
start_hold() {
    local lock=$1; shift
    rm -f "$TESTDIR/cmd.pid" "$TESTDIR/cmd.fence" "$TESTDIR/go"
    HERR=$TESTDIR/hold.err
    timeout -k 3 120 "$CTL" hold --verbose "$@" "$lock" -- sh -c '
        echo "$LOCKFS_FENCE" > "$2"; echo $$ > "$1"
        n=0; while [ ! -e "$3" ] && [ $n -lt 1000 ]; do sleep 0.1; n=$((n + 1)); done
        exit 7' _ "$TESTDIR/cmd.pid" "$TESTDIR/cmd.fence" "$TESTDIR/go" 2>"$HERR" &
    HP=$!
    wait_until 10 test -s "$TESTDIR/cmd.pid" || diag "the held command did not start"
    CP=$(cat "$TESTDIR/cmd.pid" 2>/dev/null)
}

# end_hold SECS: wait for hold to end; sets HRC.
end_hold() {
    wait_until "$1" bash -c '! kill -0 "$1" 2>/dev/null' _ "$HP"
    wait "$HP"
    HRC=$?
}

# restart WAY: restart hostA's lockfs as systemctl restart (term) or
# Restart=on-failure after a crash (kill) would; sets PID_A.
restart() {
    case $1 in
    term) lockfs_stop "$PID_A" TERM || return 1 ;;
    kill)
        kill -KILL "$PID_A"
        wait_until 10 eval '! _pid_alive "$PID_A"' || return 1
        _lockfs_reap "$PID_A"
        ;;
    esac
    start_a || return 1
    PID_A=$LOCKFS_PID
}

# The lock's last heartbeat, unix seconds, as the mount shows it.
beat_s() { date -d "$(info_field j.lock heartbeat "$A")" +%s 2>/dev/null || echo 0; }
beat_after() { (($(beat_s) > $1)); }

for way in term kill; do
    start_hold "$A/j.lock" --ttl 3s
    fence=$(xattr "$A/j.lock" user.lockfs.fence)
    is "$(cat "$TESTDIR/cmd.fence")" "$fence" "$way: the command got the lock's fence"
    restart "$way"
    is "$?" 0 "restart by $way: hostA's lockfs is back"
    t_back=$(date +%s)
    # hold checks its lock and heartbeats it every --ttl/3 (1 s): a beat
    # newer than the restart is hold's, through the new mount.
    ok "$way: hold heartbeats the lock through the new mount" wait_until 10 beat_after "$t_back"
    ok "$way: the command still runs" alive "$CP"
    ok "$way: hold still runs" alive "$HP"
    is "$(xattr "$A/j.lock" user.lockfs.fence)" "$fence" "$way: the lock is held with the same fence"
    is "$(state_of "$A/j.lock")" held "$way: in state held"
    touch "$TESTDIR/go"
    end_hold 20
    is "$HRC" 7 "$way: hold exits with the command's status"
    ok "$way: the lock was released" gone "$A/j.lock"
    unlike "$(cat "$HERR")" 'was lost' "$way: hold said nothing of a loss"
done

# Nothing was made under the mount point while it was away (a take or a
# touch there would have created a real file the mount then hides).
ok "hostA's lockfs stops" lockfs_stop "$PID_A"
is "$(ls -A "$A")" "" "nothing was created under hostA's mount point"

# A restart slower than the lease: a real loss.  hold's deadline is its
# --ttl, and on a shared backend also the lease the mount last reported.
C=$TESTDIR/C
mkdir -p "$C" "$TESTDIR/stateC"
lockfs_start_or_bail --mnt "$C" --state "$TESTDIR/stateC" -o host=hostC -o ttl=3s -o network_timeout=1s
PID_C=$LOCKFS_PID
start_hold "$C/j.lock" --ttl 3s
ok "hostC's lockfs stops" lockfs_stop "$PID_C"
end_hold 15
is "$HRC" 75 "the mount away longer than the lease: exit 75 (lost)"
nok "the command was stopped" alive "$CP"
like "$(cat "$HERR")" "the lock $C/j\\.lock was lost .*so the command was stopped" "hold said the lock was lost"
like "$(cat "$HERR")" 'mount went away' "and that its mount went away"
is "$(ls -A "$C")" "" "nothing was created under hostC's mount point"

done_testing
