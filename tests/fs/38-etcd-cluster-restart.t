#!/bin/bash
# 38-etcd-cluster-restart.t — the whole 3-member etcd cluster goes away while
# two mounts (hostA, hostB) hold locks, and comes back on its data (design.md,
# "Shared backends"; backends.md, "The etcd backend").
#
# 1. Killed (-9, every member) for longer than ttl: while it is down, every
#    acquisition answers EIO within the network timeout (not EEXIST, not
#    success), on the holder's mount and on the other; the held locks stay
#    held until their lost deadline, then both holders declare them lost
#    (xattr state `lost`, `.lockfs/status`, logged; heartbeats and writes
#    through their descriptors ESTALE; the lost name gone for its holder's
#    uid, ENOENT).  Once the cluster is back, nothing attempted meanwhile was
#    granted, and each mount takes the other's lost locks only once their
#    holder shows them lost (none granted twice), with fences larger than
#    every fence before the restart; the late rm of a lost holder deletes
#    nothing.
# 2. Stopped (SIGTERM, every member) and started again within the lost
#    deadline: acquisitions answer EIO while it is down, and every lock stays
#    held by its holder (renewed after the restart, same fence, nothing lost,
#    the other mount refused with EEXIST throughout).
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND == etcd ]] || skip_all "an etcd cluster stopped whole; this run tests $LOCKFS_BACKEND"
# shellcheck source=../lib/etcd.sh
. "$TESTLIB/etcd.sh"

# An answer while the cluster is away: every member refuses the connection at
# once, so a call ends within its network timeout (1 s), plus python's start
# and a loaded machine.
EIO_BOUND_MS=2500

is_lost() { [[ $(state_of "$1") == lost ]]; }
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
# renewed_since MNT KEY T0 TTL_MS: a renewal of KEY's lease sent after T0
# (lease_left_ms counts ttl from the last renewal sent).
renewed_since() {
    local since left
    since=$(ms_since "$3")
    left=$(info_field "$2" lease_left_ms "$1")
    [[ $left =~ ^[0-9]+$ ]] && ((left + since > $4))
}
# A descriptor kept open on a lock: its /proc path still reaches the lock
# once its name is gone.
declare -A FD_OF=() FDNUM_OF=()
open_fd() { # KEY PATH
    local fd
    exec {fd}<"$2"
    FD_OF[$1]=/proc/$$/fd/$fd FDNUM_OF[$1]=$fd
}
close_fds() {
    local k fd
    for k in "${!FDNUM_OF[@]}"; do
        fd=${FDNUM_OF[$k]}
        exec {fd}<&-
    done
    FD_OF=() FDNUM_OF=()
}
cluster_kill() {
    local n
    for n in 0 1 2; do etcd_kill "$ETCD_TOP" "$n"; done
}
cluster_restart_or_bail() {
    etcd_restart "$ETCD_TOP" >/dev/null 2>&1 && return 0
    fail "restart the etcd cluster on its data; everything after depends on it"
    done_testing
}

# ---------------------------------------------------------------- 1. long outage

TTL_MS=4000
lockfs_start_or_bail -o host=hostA,ttl=4s,network_timeout=1s
A=$MNT
PID_A=$LOCKFS_PID
LOG_A=$LOCKFS_LOG
lockfs_start_or_bail -o host=hostB,ttl=4s,network_timeout=1s
B=$MNT
PID_B=$LOCKFS_PID
LOG_B=$LOCKFS_LOG

declare -A fence=() mnt_of=([a]=$A [b]=$A [c]=$B) host_of=([a]=hostA [b]=hostA [c]=hostB)
for k in a b c; do
    ok "long: ${host_of[$k]} takes $k.lock" takes "${mnt_of[$k]}/$k.lock" "${host_of[$k]}\n"
    fence[$k]=$(xattr "${mnt_of[$k]}/$k.lock" user.lockfs.fence)
    open_fd "$k" "${mnt_of[$k]}/$k.lock"
done
max_before=0
for k in a b c; do
    ok "long: both mounts show $k.lock held by ${host_of[$k]}" \
        wait_until 10 eval 'held_by "$A" $k.lock ${host_of[$k]} ${fence[$k]} && held_by "$B" $k.lock ${host_of[$k]} ${fence[$k]}'
    fence_greater "${fence[$k]}" "$max_before" && max_before=${fence[$k]}
done
t_listed=$(date +%s%N) # the mounts' last listings of the backend were before this
# A listing (list_cache, 200 ms) may answer a lookup of another host's lock
# without the backend: the answers below must come from the backend.
listing_aged() { (($(ms_since "$t_listed") > 300)); }

left_before=$(info_field a.lock lease_left_ms "$A")
t_left=$(date +%s%N)
cluster_kill
t_down=$(date +%s%N) # every member is gone: no renewal after this reached one
note "killed every member (-9) in $(( (t_down - t_left) / 1000000 )) ms; a.lock's lease_left_ms before: $left_before"
# Holding on: a lock is lost 0.8 ttl after its last renewal, no sooner.
is "$(state_of "${FD_OF[a]}")" held "long, cluster down: hostA's a.lock is still held right after the kill"
note "state read $(ms_since "$t_down") ms after the kill"
wait_until 2 listing_aged
timed excl "$B/a.lock"
is "$R" EIO "long, cluster down: hostB's create of hostA's a.lock answers EIO, not EEXIST"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "long, cluster down: ... within the network timeout (${MS} ms)"
timed excl "$A/y.lock"
is "$R" EIO "long, cluster down: hostA's create of a free y.lock answers EIO"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "long, cluster down: ... within the network timeout (${MS} ms)"
timed mkdir "$B/z.lock"
is "$R" EIO "long, cluster down: hostB's mkdir of a free z.lock answers EIO"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "long, cluster down: ... within the network timeout (${MS} ms)"

all_lost() { is_lost "${FD_OF[a]}" && is_lost "${FD_OF[b]}" && is_lost "${FD_OF[c]}"; }
ok "long, cluster down: both holders declare their locks lost" wait_until $((TTL_MS / 1000 + 7)) all_lost
lost_ms=$(ms_since "$t_down")
cmp_ok "$lost_ms" -le $((TTL_MS + 500)) \
    "long, cluster down: declared lost within ttl (${TTL_MS} ms) of the last possible renewal: after ${lost_ms} ms"
for k in a b; do
    ok "long, cluster down: hostA logged $k.lock lost" log_has "lost $k\\.lock .*could not be renewed" "$LOG_A"
done
ok "long, cluster down: hostB logged c.lock lost" log_has 'lost c\.lock .*could not be renewed' "$LOG_B"
is "$(status_field "$(status_line a.lock "$A")" state)" lost "long, cluster down: hostA's .lockfs/status shows a.lock lost"
is "$(status_field "$(status_line c.lock "$B")" state)" lost "long, cluster down: hostB's .lockfs/status shows c.lock lost"
is "$(fsop1 utime "${FD_OF[a]}")" ESTALE "long, cluster down: touch of the lost a.lock through its descriptor: ESTALE"
is "$(fsop1 write "${FD_OF[c]}" more)" ESTALE "long, cluster down: write to the lost c.lock through its descriptor: ESTALE"
is "$(fsop1 lstat "$A/b.lock")" ENOENT "long, cluster down: the lost holder's uid finds b.lock gone (ENOENT, not EIO)"

# Down for longer than ttl: a lease the cluster still has would have run out
# by now but for the cluster being away; etcd extends every lease by its ttl
# when a leader is elected, so the keys may outlive the restart until their
# holders' mounts delete what they lost, or the lease runs out.
down_past_ttl() { (($(ms_since "$t_down") > TTL_MS + 1000)); }
ok "long: the cluster has been down for longer than ttl" wait_until 10 down_past_ttl
cluster_restart_or_bail
note "cluster restarted on its data after $(ms_since "$t_down") ms"

ok "long, cluster back: hostA takes a new lock" wait_until 15 takes "$A/n.lock"
ok "long, cluster back: hostB takes a new lock" wait_until 15 takes "$B/m.lock"
ok "long, cluster back: nothing attempted during the outage was granted: y.lock" gone "$A/y.lock"
ok "long, cluster back: nothing attempted during the outage was granted: z.lock" gone "$B/z.lock"
fence_gt "$(xattr "$A/n.lock" user.lockfs.fence)" "$max_before" \
    "long, cluster back: a new lock's fence is larger than every fence before the restart"

# Each lost lock is taken by the other mount; whenever it is granted, its old
# holder must already show it lost (it does since before the restart).
double=0
other_takes() { # KEY MNT HOST
    takes "$2/$1.lock" "$3\n" || return 1
    [[ $(state_of "${FD_OF[$1]}") == held ]] && double=1
    return 0
}
other_mnt() { if [[ $1 == "$A" ]]; then echo "$B"; else echo "$A"; fi; }
other_host() { if [[ $1 == hostA ]]; then echo hostB; else echo hostA; fi; }
for k in a b c; do
    m=$(other_mnt "${mnt_of[$k]}")
    h=$(other_host "${host_of[$k]}")
    ok "long, cluster back: $h takes the lost $k.lock" wait_until 20 other_takes "$k" "$m" "$h"
    f=$(xattr "$m/$k.lock" user.lockfs.fence)
    fence_gt "$f" "$max_before" "long, cluster back: $h's $k.lock has a fence larger than every one before the restart"
    is "$(state_of "${FD_OF[$k]}")" lost "long, cluster back: ${host_of[$k]} still shows its $k.lock lost, not held"
    is "$(fsop1 unlink "${mnt_of[$k]}/$k.lock")" ENOENT "long, cluster back: ${host_of[$k]}'s late rm of its lost $k.lock answers ENOENT"
    ok "long, cluster back: ${host_of[$k]} sees $h holding $k.lock" wait_until 10 held_by "${mnt_of[$k]}" "$k.lock" "$h" "$f"
    ok "long, cluster back: $h still holds $k.lock (same fence)" held_by "$m" "$k.lock" "$h" "$f"
    is "$(timeout 10 cat -- "$m/$k.lock")" "$h" "long, cluster back: $h's content of $k.lock untouched"
done
is "$double" 0 "long, cluster back: no lost lock was granted while its old holder showed it held"
# One holder per key: every held line of both mounts' status names the same host.
held_twice=$( (timeout 10 cat "$A/.lockfs/status" "$B/.lockfs/status") | awk '
    / state=held / { for (i = 2; i <= NF; i++) if ($i ~ /^host=/) h = $i
                     if ($1 in seen && seen[$1] != h) print $1; seen[$1] = h }')
is "$held_twice" "" "long, cluster back: no key is held by two hosts (both mounts' status agree)"

close_fds
rm -f "$A/n.lock" "$B/m.lock" "$B/a.lock" "$B/b.lock" "$A/c.lock"
lockfs_stop "$PID_A" || fail "long: stop hostA's mount"
lockfs_stop "$PID_B" || fail "long: stop hostB's mount"

# ---------------------------------------------------------------- 2. short outage

# ttl 30 s, a renewal every 2 s: a lock is lost 24 s after its last renewal,
# so at least 22 s after the stop began; the outage below (etcd's own SIGTERM
# shutdown without quorum, which takes several seconds, two EIO answers and a
# restart) must end 2 s before that, for the first renewal after it.
TTL_S_MS=30000
lockfs_start_or_bail -o host=hostC,ttl=30s,renew_interval=2s,network_timeout=1s
C=$MNT
LOG_C=$LOCKFS_LOG
lockfs_start_or_bail -o host=hostD,ttl=30s,renew_interval=2s,network_timeout=1s
D=$MNT
LOG_D=$LOCKFS_LOG

ok "short: hostC takes p.lock" takes "$C/p.lock"
fp=$(xattr "$C/p.lock" user.lockfs.fence)
ok "short: hostD takes q.lock" takes "$D/q.lock"
fq=$(xattr "$D/q.lock" user.lockfs.fence)
ok "short: hostD sees p.lock held by hostC" wait_until 10 held_by "$D" p.lock hostC "$fp"
ok "short: hostC sees q.lock held by hostD" wait_until 10 held_by "$C" q.lock hostD "$fq"
open_fd p "$C/p.lock"
open_fd q "$D/q.lock"
t_listed=$(date +%s%N)

t0=$(date +%s%N)
etcd_stop "$ETCD_TOP"
note "stopped every member"
wait_until 2 listing_aged
timed excl "$D/p.lock"
is "$R" EIO "short, cluster down: hostD's create of hostC's p.lock answers EIO, not EEXIST"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "short, cluster down: ... within the network timeout (${MS} ms)"
timed excl "$C/r.lock"
is "$R" EIO "short, cluster down: hostC's create of a free r.lock answers EIO"
is "$(state_of "${FD_OF[p]}")" held "short, cluster down: hostC's p.lock is still held"
is "$(state_of "${FD_OF[q]}")" held "short, cluster down: hostD's q.lock is still held"
cluster_restart_or_bail
t_back=$(date +%s%N)
outage_ms=$(((t_back - t0) / 1000000))
cmp_ok "$outage_ms" -lt 20000 "short: stopped and restarted 2 s before the earliest lost deadline (${outage_ms} ms < 20000)"

# Until both holders renew after the restart, the other mount keeps trying to
# take their locks: it must never be granted either.
granted=0
settled() {
    takes "$D/p.lock" && granted=1
    takes "$C/q.lock" && granted=1
    renewed_since "$C" p.lock "$t_back" "$TTL_S_MS" && renewed_since "$D" q.lock "$t_back" "$TTL_S_MS"
}
ok "short, cluster back: both holders renew their locks" wait_until 20 settled
is "$granted" 0 "short, cluster back: neither lock was granted to the other mount"
is "$(state_of "${FD_OF[p]}")" held "short, cluster back: p.lock still held by hostC"
is "$(state_of "${FD_OF[q]}")" held "short, cluster back: q.lock still held by hostD"
is "$(xattr "$C/p.lock" user.lockfs.fence)" "$fp" "short, cluster back: p.lock keeps its fence"
is "$(xattr "$D/q.lock" user.lockfs.fence)" "$fq" "short, cluster back: q.lock keeps its fence"
is "$(fsop1 utime "${FD_OF[p]}")" OK "short, cluster back: a heartbeat of p.lock works"
is "$(fsop1 write "${FD_OF[q]}" more)" OK "short, cluster back: a write to q.lock works"
ok "short, cluster back: hostD sees p.lock held by hostC" held_by "$D" p.lock hostC "$fp"
ok "short, cluster back: hostC sees q.lock held by hostD" held_by "$C" q.lock hostD "$fq"
is "$(fsop1 excl "$D/p.lock")" EEXIST "short, cluster back: hostD's create of p.lock answers EEXIST"
is "$(fsop1 excl "$C/q.lock")" EEXIST "short, cluster back: hostC's create of q.lock answers EEXIST"
nok "short, cluster back: hostC reported nothing lost" log_has 'lost .* \(fence ' "$LOG_C"
nok "short, cluster back: hostD reported nothing lost" log_has 'lost .* \(fence ' "$LOG_D"
ok "short, cluster back: nothing attempted during the outage was granted: r.lock" gone "$C/r.lock"
ok "short, cluster back: new acquisitions work" wait_until 10 takes "$C/r.lock"
fence_gt "$(xattr "$C/r.lock" user.lockfs.fence)" "$fq" "short, cluster back: a new lock's fence is larger than those before"

close_fds
rm -f "$C/p.lock" "$C/r.lock" "$D/q.lock"
b_free() { takes "$D/p.lock"; }
ok "short: released by hostC, p.lock is free for hostD" wait_until 5 b_free
rm -f "$D/p.lock"
done_testing
