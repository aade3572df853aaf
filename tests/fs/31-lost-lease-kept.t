#!/bin/bash
# 31-lost-lease-kept.t — a lease its mount declared lost while the backend
# still holds it is gone for its holder, not shown with its fence (issue 10).
#
# hostP's lockfs is stopped (SIGSTOP: a VM stall) past its lost deadline
# (ttl less a fifth after the last renewal) but not past ttl, so the backend
# still holds the lease when lockfs runs again and declares it lost.  The
# mount releases such a lease once ttl has passed since its last renewal
# (the orphan release); until then a lookup reaches the backend and finds
# the lock with the very fence the holder had.  Shown to the holder's uid,
# a client that checks its fence by path (touch, then the fence) would take
# it for still its own: the etcd long run saw a section go on 54 ms into the
# next holder's.  Its holder's uid must get ENOENT.
#
# hostQ's listing right after, finding it held by hostP with that fence,
# shows the backend held the lease when hostP's lookup came (a lease gone
# never comes back), so this test cannot pass without reaching the window.
set -u
TEST_TIMEOUT=150
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] ||
    skip_all "the local backend has no lease a backend could keep: its locks live in the lockfs process"

# ttl 20 s, renewals every second: stopped 16.5 s within a second of its
# last renewal, the mount finds its lost deadline (16 s after that renewal)
# passed, and has at least 2.5 s before it releases the lease (20 s after).
TTL_S=20 STOP_S=16.5
opts=(-o ttl=${TTL_S}s -o renew_interval=1s -o network_timeout=1s)
lockfs_start_or_bail -o host=hostP "${opts[@]}"
P=$MNT LOG_P=$LOCKFS_LOG PID_P=$LOCKFS_PID
lockfs_start_or_bail -o host=hostQ "${opts[@]}"
Q=$MNT

is "$(fsop1 excl "$P/p.lock" 0644 'hostP\n')" OK "hostP takes p.lock"
fp=$(xattr "$P/p.lock" user.lockfs.fence)
like "$fp" '^[0-9]+$' "p.lock has a fence ($fp)"
# (tinystore writes the holder record a moment after the grant.)
ok "hostQ sees p.lock held by hostP" wait_until 10 held_by "$Q" p.lock hostP "$fp"
# No descriptor stays open on p.lock here: the shell's children would
# flush it on exec, and wait on the stopped lockfs.
lost() { log_has 'lost p\.lock' "$LOG_P"; }

kill -STOP "$PID_P"
sleep "$STOP_S"
kill -CONT "$PID_P"
t_cont=$(date +%s%N)
ok "hostP declares p.lock lost once it runs again" wait_until 5 lost

# The lookup of its holder (same uid): the backend still holds the lease.
r_stat=$(fsop1 lstat "$P/p.lock")
f_seen=$(xattr "$P/p.lock" user.lockfs.fence)
look_ms=$(ms_since "$t_cont")
is "$r_stat" ENOENT "hostP's holder: lstat p.lock answers ENOENT (${look_ms} ms after it ran again)"
is "$f_seen" "" "hostP's holder: p.lock shows no fence (it had $fp)"

# hostQ lists the backend's locks (its list is at most list_cache old).
ok "hostQ, listing after that, sees p.lock still held by hostP with that fence (the window was reached)" \
    held_by "$Q" p.lock hostP "$fp"
ok "hostQ takes p.lock once the lease ran out or was let go" wait_until 15 takes "$Q/p.lock"
fence_gt "$(xattr "$Q/p.lock" user.lockfs.fence)" "$fp" "hostQ's p.lock has a larger fence"
is "$(fsop1 unlink "$P/p.lock")" ENOENT "hostP's late rm answers ENOENT"
is "$(xattr "$Q/p.lock" user.lockfs.state)" held "hostQ still holds p.lock"
is "$(fsop1 unlink "$Q/p.lock")" OK "hostQ releases p.lock"

done_testing
