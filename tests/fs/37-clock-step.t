#!/bin/bash
# 37-clock-step.t — a step of the wall clock (NTP, date -s) moves no lease
# and no staleness (CONTRACT §5 "Clocks"): lockfs measures them on
# CLOCK_BOOTTIME.  The daemon runs under libfaketime with a timestamp file
# the test rewrites, so its wall clock jumps while it runs; its monotonic
# clocks are left alone.
#
# 1. A step forward past stale_after: a live lock is not broken, on this
#    host (local) or, on shared backends, when the stepped host is the
#    contender of another host's lock.
# 2. A step backward: a lock nobody heartbeats still goes stale on time.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"

FT_LIB=''
for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 /usr/lib/*/faketime/libfaketimeMT.so.1; do
    [[ -r $f ]] && { FT_LIB=$f; break; }
done
[[ -n $FT_LIB ]] || skip_all "libfaketime is not installed (apt-get install faketime)"

# A lockfs whose wall clock is what FT_FILE says (re-read at every call).
FT_FILE=$TESTDIR/faketime
echo "+0" >"$FT_FILE"
WRAP=$TESTDIR/lockfs-stepped
cat >"$WRAP" <<EOF
#!/bin/sh
FAKETIME_TIMESTAMP_FILE='$FT_FILE' FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 \\
LD_PRELOAD='$FT_LIB' exec '$LOCKFS_BIN' "\$@"
EOF
chmod 0755 "$WRAP"
chmod 0644 "$FT_FILE"
step() { echo "$1" >"$FT_FILE"; }
real_bin=$LOCKFS_BIN
stepped_start() { LOCKFS_BIN=$WRAP lockfs_start_or_bail "$@"; LOCKFS_BIN=$real_bin; }

take() { [[ $(fsop1 excl "$1" 0644 "$$\n") == OK ]]; }

# ---------------------------------------------------------------- 1. forward

opts=(-o ttl=3s -o network_timeout=1s -o stale_after=20s -o heartbeat_min_interval=1s)
if [[ $LOCKFS_BACKEND == local ]]; then
    stepped_start "${opts[@]}"
    H=$MNT C=$MNT
else
    lockfs_start_or_bail -o host=hostA "${opts[@]}"
    H=$MNT
    stepped_start -o host=hostB "${opts[@]}"
    C=$MNT
fi
ok "forward: the holder takes x.lock" take "$H/x.lock"
fence=$(xattr "$H/x.lock" user.lockfs.fence)
b_sees() { [[ $(timeout 5 stat -c %n -- "$C/x.lock" 2>/dev/null) ]]; }
ok "forward: the contender sees it" wait_until 10 b_sees
# The stepped clock jumps 10 minutes ahead: far past stale_after (20 s).
step "+600s"
broke=0
for i in 1 2 3 4 5; do
    timeout 5 touch -- "$H/x.lock" # the holder is alive: heartbeats
    r=$(fsop1 excl "$C/x.lock")
    [[ $r == OK ]] && broke=1
    [[ $r == OK ]] && break
    sleep 0.5 # the pace of the holder's heartbeats; no condition to wait for
done
is "$broke" 0 "forward: the contender never got the live lock after its clock jumped 600 s"
is "$(xattr "$H/x.lock" user.lockfs.fence)" "$fence" "forward: the holder's lock is the same acquisition"
is "$(xattr "$H/x.lock" user.lockfs.state)" held "forward: ... and held"
rm -f "$H/x.lock"
step "+0"

# ---------------------------------------------------------------- 2. backward

# A lock nobody heartbeats, on the stepped mount: its wall clock goes back
# an hour right after the grant; stale_after (20 s) passes on the boot
# clock all the same, and a contender breaks it.
stepped_start -o ttl=3s -o network_timeout=1s -o stale_after=5s -o heartbeat_min_interval=1s
S=$MNT
ok "backward: s.lock taken" take "$S/s.lock"
step "-3600s"
broken() { [[ $(fsop1 excl "$S/s.lock") == OK ]]; }
t0=$(date +%s)
ok "backward: a contender breaks s.lock once stale_after has passed on the boot clock" wait_until 30 broken
el=$(($(date +%s) - t0))
cmp_ok "$el" -ge 3 "backward: ... not before it was due (${el} s after the step)"
rm -f "$S/s.lock"
step "+0"

done_testing
