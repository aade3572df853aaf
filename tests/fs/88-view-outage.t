#!/bin/bash
# 88-view-outage.t — a mount cut off from its backend cannot vouch for a lock
# name it does not hold: while it cannot reach the backend, a lookup, stat,
# getxattr or .lockfs/NAME of such a name answers EIO, never ENOENT ("free")
# -- not for a lock another host holds, nor one it took or let go during
# the cut, nor a name nobody holds (issues 26 and 28: one view of a lock at
# every moment).  Only an answer the backend gave less than list_cache
# (200 ms) ago may still be believed (lockfs(8)).  The locks this mount holds
# itself it still shows.
#
# Two mounts of one server, hA and hB, each reaching it through a proxy of
# its own (tests/faults/proxy.py, as the fault suite's hosts do); hB's link
# is cut twice, silently ("drop": requests vanish, each call waits
# network_timeout) and loudly ("reset": connections reset and refused).
set -u
TEST_TIMEOUT=240
here=$(cd "$(dirname "$0")" && pwd)
VIEW_BACKEND=${LOCKFS_BACKEND:-local}
if [[ $VIEW_BACKEND == local ]]; then
    echo "1..0 # SKIP the local backend is one host's; two mounts share nothing"
    exit 0
fi
# mount.sh would start a server of its own; the fault suite's library starts
# one reachable over TCP, behind a proxy per host.
LOCKFS_BACKEND=local
. "$here/../lib/mount.sh"
LOCKFS_BACKEND=$VIEW_BACKEND
FAULTS_TTL_S=30
FAULTS_NET_TIMEOUT=1s
# shellcheck source=../faults/lib.sh
. "$here/../faults/lib.sh"
FAULTS_REAL_LOCKFS=$LOCKFS_BIN
faults_setup "$VIEW_BACKEND"
# The proxies' control sockets live in $RUN, whose path under the runner's
# TMPDIR may not fit in a Unix socket address: a short name for it.
_short=$(mktemp -d /tmp/lkv.XXXXXX) || BAIL_OUT "mktemp -d /tmp/lkv.XXXXXX failed"
at_exit 'rm -rf -- "$_short"'
ln -s -- "$RUN" "$_short/r"
RUN=$_short/r
H_PID[hA]='' H_PID[hB]='' # (faults_unfreeze at exit, should a start fail)
at_exit faults_unfreeze
host_start hA none || BAIL_OUT "cannot start hA (proxy and mount)"
host_start hB none || BAIL_OUT "cannot start hB (proxy and mount)"
A=$TESTDIR/hA B=$TESTDIR/hB

# probe NAME...: hB's view of each NAME (lstat, getxattr user.lockfs.host,
# reading .lockfs/NAME), at once and then twice more from 300 ms after the
# cut (past list_cache), each call of a round in a thread of its own (a cut
# call waits network_timeout): one line "MS NAME CALL ANSWER" per answer, MS
# since the probe began, which is right after the cut.
probe() {
    timeout -k 3 60 "$PYTHON" - "$B" "$@" <<'EOF'
import errno, os, sys, threading, time
b, names = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
out_mu = threading.Lock()
calls = {
    "lstat": lambda p, n: os.lstat(p),
    "getxattr": lambda p, n: os.getxattr(p, "user.lockfs.host"),
    "lockfs": lambda p, n: open(os.path.join(b, ".lockfs", n)).read(),
}
def one(n, call):
    t = time.monotonic()
    try:
        calls[call](os.path.join(b, n), n)
        r = "OK"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    with out_mu:
        print(f"{int((t - t0) * 1000)} {n} {call} {r}", flush=True)
def round_():
    ts = [threading.Thread(target=one, args=(n, c)) for n in names for c in calls]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
one(names[0], "lstat")
time.sleep(max(0, 0.3 - (time.monotonic() - t0)))
round_()
round_()
EOF
}

b_sees() { [[ $(fsop1 lstat "$B/$1") == OK ]]; }
b_free() { [[ $(fsop1 lstat "$B/$1") == ENOENT ]]; }

for mode in drop reset; do
    timeout 10 bash -c 'set -C; echo $$ >"$1"' _ "$A/x-$mode.lock" || fail "hA takes x-$mode.lock"
    timeout 10 bash -c 'set -C; echo $$ >"$1"' _ "$A/y-$mode.lock" || fail "hA takes y-$mode.lock"
    timeout 10 bash -c 'set -C; echo $$ >"$1"' _ "$B/mine-$mode.lock" || fail "hB takes mine-$mode.lock"
    ok "$mode: hB sees hA's x-$mode.lock" wait_until 10 b_sees "x-$mode.lock"
    proxy_ctl hB "$mode" >/dev/null || fail "$mode: cut hB's link"
    # Held by hA all along; let go by hA during the cut; taken by hA during
    # the cut; never held.  hB knows none of it.
    rm -f "$A/y-$mode.lock"
    timeout 10 bash -c 'set -C; echo $$ >"$1"' _ "$A/z-$mode.lock" || fail "hA takes z-$mode.lock"
    out=$(probe "x-$mode.lock" "y-$mode.lock" "z-$mode.lock" "never-$mode.lock")
    # Past list_cache (200 ms, and a margin for a loaded machine), only EIO.
    bad=$(awk '$4 == "ENOENT" || ($1 >= 300 && $4 != "EIO")' <<<"$out")
    is "$bad" "" "$mode: cut off, hB answers EIO (never ENOENT, only EIO past list_cache) for every name it does not hold"
    [[ -z $bad ]] || diag "$(head -n 20 <<<"$out")"
    n=$(awk '$1 >= 300' <<<"$out" | wc -l)
    is "$n" 24 "$mode: hB was asked 24 times past list_cache"
    is "$(fsop1 lstat "$B/mine-$mode.lock")" OK "$mode: hB still shows the lock it holds itself"
    proxy_ctl hB forward >/dev/null || fail "$mode: mend hB's link"
    ok "$mode: link mended: hB sees hA's x-$mode.lock" wait_until 20 b_sees "x-$mode.lock"
    ok "$mode: ... and z-$mode.lock, taken during the cut" wait_until 20 b_sees "z-$mode.lock"
    ok "$mode: ... and y-$mode.lock free, let go during the cut" wait_until 20 b_free "y-$mode.lock"
    rm -f "$A/x-$mode.lock" "$A/z-$mode.lock" "$B/mine-$mode.lock"
done

done_testing
