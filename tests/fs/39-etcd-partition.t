#!/bin/bash
# 39-etcd-partition.t — one follower of the 3-member etcd cluster is cut off
# from the other two (its peer traffic dropped both ways) while two mounts
# hold and take locks through it: both mounts list the partitioned member
# first among their endpoints, so every call starts there and must fail over
# to the majority within the network timeout (backends.md, "Endpoints and
# failures").  Throughout: every lock stays held (same fence, nothing lost,
# renewals go on), acquisitions and releases work, the other mount is refused
# with EEXIST, no key has two holders.  Then the partition heals, the member
# rejoins, and it all goes on.
#
# The cut: the member runs in a cgroup v2 directory of its own that the test
# makes, and an nftables table of the test's own drops, on loopback, what
# goes to or comes from its peer port and what its sockets send to the other
# members' peer ports or receive from them (`socket cgroupv2`: the local
# socket's cgroup).  Its client port stays open.  Both are removed on exit,
# whatever happened (at_exit).  Root only; SKIP without nft or cgroup v2.
set -u
TEST_TIMEOUT=240
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND == etcd ]] || skip_all "an etcd member partitioned; this run tests $LOCKFS_BACKEND"
((EUID == 0)) || skip_all "cutting an etcd member off needs root (nftables rules, a cgroup); this pass runs as uid $EUID"
command -v nft >/dev/null || skip_all "nft is not installed (apt-get install nftables, or run scripts/setup-debian)"
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[[ -n $CG2 ]] || skip_all "no cgroup v2 hierarchy is mounted (nft's socket cgroupv2 match needs one)"
# nft names a cgroup by its path below /sys/fs/cgroup (a hybrid host mounts
# cgroup v2 at /sys/fs/cgroup/unified).
case $CG2 in
/sys/fs/cgroup) CG_PREFIX= ;;
/sys/fs/cgroup/*) CG_PREFIX=${CG2#/sys/fs/cgroup/}/ ;;
*) skip_all "cgroup v2 is mounted at $CG2, not under /sys/fs/cgroup where nft looks for cgroups" ;;
esac
# shellcheck source=../lib/etcd.sh
. "$TESTLIB/etcd.sh"

CG_NAME=lockfs-etcd-part-$$
CG_DIR=$CG2/$CG_NAME
NFT_TABLE=lockfs_etcd_part_$$

heal() { nft delete table inet "$NFT_TABLE" 2>/dev/null; }
# What the test made goes, also on failure: the table first (the member can
# reach its peers again), then what runs in the cgroup (the member and its
# watcher, both started here; the other two members keep quorum for the
# mounts' unmount), then the cgroup.
partition_cleanup() {
    local i pids
    heal
    [[ -d $CG_DIR ]] || return 0
    for ((i = 0; i < 50; i++)); do
        pids=$(cat "$CG_DIR/cgroup.procs" 2>/dev/null)
        [[ -z $pids ]] && break
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null
        sleep 0.1
    done
    rmdir "$CG_DIR" 2>/dev/null || diag "could not remove the cgroup $CG_DIR"
}
at_exit partition_cleanup
mkdir "$CG_DIR" 2>"$TESTDIR/.cg.err" || skip_all "cannot make a cgroup in $CG2: $(head -n 1 "$TESTDIR/.cg.err")"

EIO_BOUND_MS=4500 # network_timeout (3 s), plus python's start and a loaded machine
renewals() { # MNT: renewals that succeeded (.lockfs/metrics)
    timeout 10 awk '$1 ~ /^lockfs_renewals_total([{]|$)/ { print $2; exit }' "$1/.lockfs/metrics"
}
# member_healthy N: member N answers /health with a leader (etcd 3.4 says
# false once it has had none for an election timeout).
member_healthy() {
    _etcd_http "$ETCD_TOP" "$(_etcd_url "$ETCD_TOP" "$1")/health" 2>/dev/null | grep -q '"health":"true"'
}
member_unhealthy() { ! member_healthy "$1"; }
# nft_packets COMMENT: packets the table's rule with that comment dropped.
nft_packets() {
    nft list table inet "$NFT_TABLE" 2>/dev/null |
        awk -v c="\"$1\"" 'index($0, "comment " c) { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}
# One holder per key: every held line of both mounts' status names one host.
two_holders() {
    (timeout 10 cat "$A/.lockfs/status" "$B/.lockfs/status") | awk '
        / state=held / { for (i = 2; i <= NF; i++) if ($i ~ /^host=/) h = $i
                         if ($1 in seen && seen[$1] != h) print $1; seen[$1] = h }'
}

# ---------------------------------------------------------------- the member

# start_in_cgroup N: (re)start member N on its data, inside the cgroup.
start_in_cgroup() {
    etcd_stop_member "$ETCD_TOP" "$1"
    (echo "$BASHPID" >"$CG_DIR/cgroup.procs" && exec bash "$TESTLIB/etcd.sh" start-member "$ETCD_TOP" "$1") \
        >/dev/null 2>"$TESTDIR/.cg.err" || BAIL_OUT "cannot start etcd member $1 in $CG_DIR: $(head -n 1 "$TESTDIR/.cg.err")"
    etcd_wait "$ETCD_TOP" || BAIL_OUT "the etcd cluster has no leader after member $1 restarted"
}
leader=$(etcd_leader "$ETCD_TOP") || BAIL_OUT "the etcd cluster has no leader"
X=
for n in 0 1 2; do [[ $n != "$leader" ]] && { X=$n; break; }; done
# A restarted member comes back a follower; should it win an election all the
# same, once more (it is then stopped and the others elect a leader).
for try in 1 2 3; do
    start_in_cgroup "$X"
    leader=$(etcd_leader "$ETCD_TOP") || BAIL_OUT "the etcd cluster has no leader"
    [[ $leader != "$X" ]] && break
done
isnt "$leader" "$X" "member $X, to be cut off, is a follower (leader: member $leader)"
ok "member $X runs in the test's cgroup $CG_NAME" grep -qx "$(cat "$ETCD_TOP/m$X/pid")" "$CG_DIR/cgroup.procs"
others=()
for n in 0 1 2; do [[ $n != "$X" ]] && others+=("$n"); done
PX=$(cat "$ETCD_TOP/m$X/peer-port")
PY=$(cat "$ETCD_TOP/m${others[0]}/peer-port")
PZ=$(cat "$ETCD_TOP/m${others[1]}/peer-port")
EX=$(_etcd_url "$ETCD_TOP" "$X")
EY=$(_etcd_url "$ETCD_TOP" "${others[0]}")
EZ=$(_etcd_url "$ETCD_TOP" "${others[1]}")

# ---------------------------------------------------------------- the mounts

# Both list member X first: every call starts there.
BACKEND_OPTS="backend=etcd,etcd_endpoints=$EX;$EY;$EZ"
lockfs_start_or_bail -o host=hostA,ttl=9s,network_timeout=3s
A=$MNT
PID_A=$LOCKFS_PID
LOG_A=$LOCKFS_LOG
BACKEND_OPTS="backend=etcd,etcd_endpoints=$EX;$EZ;$EY"
lockfs_start_or_bail -o host=hostB,ttl=9s,network_timeout=3s
B=$MNT
PID_B=$LOCKFS_PID
LOG_B=$LOCKFS_LOG

declare -A fence=() mnt_of=() host_of=()
hold() { # KEY MNT HOST: take KEY, remember who holds it
    ok "$3 takes $1.lock" takes "$2/$1.lock" "$3\n" || return
    mnt_of[$1]=$2 host_of[$1]=$3
    fence[$1]=$(xattr "$2/$1.lock" user.lockfs.fence)
}
held_everywhere() { # KEY: both mounts show its holder, with its fence
    held_by "$A" "$1.lock" "${host_of[$1]}" "${fence[$1]}" && held_by "$B" "$1.lock" "${host_of[$1]}" "${fence[$1]}"
}
other_of() { if [[ $1 == "$A" ]]; then echo "$B"; else echo "$A"; fi; }
hold a "$A" hostA
hold b "$A" hostA
hold c "$B" hostB
for k in a b c; do
    ok "before the cut: both mounts show $k.lock held by ${host_of[$k]}" wait_until 10 held_everywhere "$k"
done
max_fence=${fence[c]}

# ---------------------------------------------------------------- the cut

nft -f - <<EOF || BAIL_OUT "nft refused the partition's rules"
table inet $NFT_TABLE {
    chain out {
        type filter hook output priority 0; policy accept;
        oif "lo" tcp dport $PX counter drop comment "to-x"
        oif "lo" tcp sport $PX counter drop comment "from-x-listener"
        oif "lo" socket cgroupv2 level 1 "$CG_PREFIX$CG_NAME" tcp dport { $PY, $PZ } counter drop comment "from-x"
    }
    chain in {
        type filter hook input priority 0; policy accept;
        iif "lo" socket cgroupv2 level 1 "$CG_PREFIX$CG_NAME" tcp sport { $PY, $PZ } counter drop comment "to-x-dialed"
    }
}
EOF
t_cut=$(date +%s%N)
note "member $X (peer port $PX) cut off from members ${others[*]} (peer ports $PY, $PZ)"
before_a=$(renewals "$A")
before_b=$(renewals "$B")

# At once, before member X even notices: calls that start at X fail over.
timed excl "$B/d.lock"
is "$R" OK "cut: hostB takes d.lock through the endpoint list that starts at member $X"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "cut: ... failing over within the network timeout (${MS} ms)"
mnt_of[d]=$B host_of[d]=hostB fence[d]=$(xattr "$B/d.lock" user.lockfs.fence)
timed excl "$A/e.lock"
is "$R" OK "cut: hostA takes e.lock"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "cut: ... within the network timeout (${MS} ms)"
mnt_of[e]=$A host_of[e]=hostA fence[e]=$(xattr "$A/e.lock" user.lockfs.fence)
timed excl "$B/a.lock"
is "$R" EEXIST "cut: hostB's create of hostA's a.lock answers EEXIST"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "cut: ... within the network timeout (${MS} ms)"

ok "cut: member $X finds itself without a leader (its /health)" wait_until 15 member_unhealthy "$X"
ok "cut: members ${others[*]} keep a leader" eval 'member_healthy "${others[0]}" && member_healthy "${others[1]}"'
# Each way, one of its two rules drops what flows: which one depends on
# which member dialed the connection the peers use (etcd streams both ways),
# so on a quiet cluster one rule of a pair may well see nothing.
for pair in "to-x to-x-dialed" "from-x-listener from-x"; do
    read -r c1 c2 <<<"$pair"
    p1=$(nft_packets "$c1") p2=$(nft_packets "$c2")
    cmp_ok $((${p1:-0} + ${p2:-0})) -gt 0 \
        "cut: the rules '$c1' and '$c2' dropped peer traffic (${p1:-0} + ${p2:-0} packets)"
done

# Member X has no leader now: its answers say so, or it times out.
hold f "$B" hostB
hold g "$A" hostA
is "$(fsop1 excl "$A/d.lock")" EEXIST "cut: hostA's create of hostB's d.lock answers EEXIST"
is "$(fsop1 mkdir "$B/b.lock")" EEXIST "cut: hostB's mkdir of hostA's b.lock answers EEXIST"
# A release, and the name taken by the other mount.
rm -f "$A/g.lock"
b_takes_g() { takes "$B/g.lock" hostB; }
ok "cut: released on hostA, g.lock is taken by hostB" wait_until 10 b_takes_g
mnt_of[g]=$B host_of[g]=hostB fence[g]=$(xattr "$B/g.lock" user.lockfs.fence)
for k in d e f g; do
    fence_gt "${fence[$k]}" "$max_fence" "cut: $k.lock's fence is larger than those before the cut"
done
# More than two renewal rounds of every lock each mount holds (three or four
# locks each, each renewed every 3 s).
renewed() { (($(renewals "$A") >= before_a + 9 && $(renewals "$B") >= before_b + 9)); }
ok "cut: both mounts' renewals go on through the majority" wait_until 40 renewed
note "partition held for $(ms_since "$t_cut") ms"
for k in a b c d e f g; do
    ok "cut: both mounts show $k.lock held by ${host_of[$k]}, same fence" held_everywhere "$k"
    is "$(fsop1 excl "$(other_of "${mnt_of[$k]}")/$k.lock")" EEXIST "cut: the other mount's create of $k.lock answers EEXIST"
done
is "$(two_holders)" "" "cut: no key has two holders"
nok "cut: hostA reported no lock lost" log_has 'lost .* \(fence ' "$LOG_A"
nok "cut: hostB reported no lock lost" log_has 'lost .* \(fence ' "$LOG_B"

# ---------------------------------------------------------------- the heal

heal
t_heal=$(date +%s%N)
note "partition healed"
ok "healed: member $X has a leader again" wait_until 20 member_healthy "$X"
ok "healed: the cluster agrees on a leader" etcd_wait "$ETCD_TOP"
healed_a=$(renewals "$A") # two rounds and more of its three locks
renewed_after() { (($(renewals "$A") >= healed_a + 7)); }
ok "healed: hostA's renewals go on" wait_until 30 renewed_after
for k in a b c d e f g; do
    ok "healed: both mounts show $k.lock held by ${host_of[$k]}, same fence" held_everywhere "$k"
done
hold h "$A" hostA
fence_gt "${fence[h]}" "${fence[g]}" "healed: h.lock's fence is larger than every one before"
is "$(fsop1 excl "$B/h.lock")" EEXIST "healed: hostB's create of h.lock answers EEXIST"
is "$(two_holders)" "" "healed: no key has two holders"
nok "healed: hostA reported no lock lost" log_has 'lost .* \(fence ' "$LOG_A"
nok "healed: hostB reported no lock lost" log_has 'lost .* \(fence ' "$LOG_B"
note "healed for $(ms_since "$t_heal") ms"

for k in a b c d e f g h; do rm -f "${mnt_of[$k]}/$k.lock"; done
a_takes_c() { takes "$A/c.lock"; }
ok "released on hostB: hostA takes c.lock" wait_until 5 a_takes_c
rm -f "$A/c.lock"
ok "hostA's lockfs still runs" kill -0 "$PID_A"
ok "hostB's lockfs still runs" kill -0 "$PID_B"
done_testing
