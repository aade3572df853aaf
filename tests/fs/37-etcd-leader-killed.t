#!/bin/bash
# 37-etcd-leader-killed.t — two mounts on a 3-member etcd cluster; the leader is
# killed (-9) while hostA holds locks: every lock stays held (hostB is refused,
# both show hostA holding it, no lock is reported lost) while hostA's lease is
# renewed through the members left, hostB takes new locks once a new leader is
# elected, and the member killed rejoins.
set -u
TEST_TIMEOUT=180
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND == etcd ]] || skip_all "an etcd cluster's leader; this run tests $LOCKFS_BACKEND"

# ttl 15s: a lock is declared lost 12 s after the renewal before the kill, and
# the renewals after it (every 5 s, 3 s each at most) must reach a new leader
# before then; with 6 s, and once with 9 s, an election on a loaded 2-core host
# (other tests running, these under nice) outlasted that margin.
lockfs_start_or_bail -o host=hostA,ttl=15s,network_timeout=3s
A=$MNT
APID=$LOCKFS_PID
ALOG=$LOCKFS_LOG
lockfs_start_or_bail -o host=hostB,ttl=15s,network_timeout=3s
B=$MNT

take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$1" 2>/dev/null; }
# Renewals that succeeded on hostA (a counter of .lockfs/metrics, labelled).
renewals() {
    timeout 10 awk '$1 ~ /^lockfs_renewals_total([{]|$)/ { print $2; exit }' "$A/.lockfs/metrics"
}
held_by_a() { # NAME: both mounts show hostA holding it, hostB is refused
    [[ $(status_line "$1" "$A") == *" host=hostA "* &&
        $(status_line "$1" "$B") == *" host=hostA "* &&
        $(fsop1 excl "$B/$1") == EEXIST ]]
}

fences=()
for n in a b c; do
    take "$A/$n.lock"
    is "$?" 0 "hostA takes $n.lock"
done
for n in a b c; do
    ok "$n.lock is held by hostA on both mounts" wait_until 5 held_by_a "$n.lock"
    fences[${#fences[@]}]=$(xattr "$A/$n.lock" user.lockfs.fence)
done

leader=$(bash "$TESTLIB/etcd.sh" leader "$ETCD_TOP")
like "$leader" '^[0-2]$' "the cluster has a leader (member $leader)"
before=$(renewals)
like "$before" '^[0-9]+$' "hostA counts its renewals ($before)"
bash "$TESTLIB/etcd.sh" kill "$ETCD_TOP" "$leader"
note "killed member $leader (-9)"

b_takes() { take "$B/after.lock"; }
ok "hostB takes a new lock once a new leader is elected (20 s at most)" wait_until 20 b_takes
rm -f "$B/after.lock"
# Three more renewal rounds of hostA's locks than before the kill: its lease
# was kept alive through the two members left (a renewal every 5 s).
renewed() { (($(renewals) >= before + 9)); }
ok "hostA's renewals go on without the old leader" wait_until 45 renewed
i=0
for n in a b c; do
    ok "$n.lock is still held by hostA" held_by_a "$n.lock"
    is "$(xattr "$A/$n.lock" user.lockfs.fence)" "${fences[$i]}" "$n.lock keeps its fence"
    i=$((i + 1))
done
nok "hostA reported no lock lost" log_has 'lost .* \(fence ' "$ALOG"

bash "$TESTLIB/etcd.sh" start-member "$ETCD_TOP" "$leader" >/dev/null
ok "the killed member rejoins" bash "$TESTLIB/etcd.sh" wait "$ETCD_TOP"
for n in a b c; do
    rm -f "$A/$n.lock"
done
b_free() { take "$B/a.lock"; }
ok "released on hostA: hostB takes a.lock" wait_until 5 b_free
rm -f "$B/a.lock"
ok "hostA's lockfs still runs" kill -0 "$APID"
done_testing
