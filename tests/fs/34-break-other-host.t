#!/bin/bash
# 34-break-other-host.t — a lock held through another host's mount can be
# broken through this one by every documented way, not only by rm:
# `lockfsctl unlock --yes PATH` (CONTRACT §8: it shows the holder, then
# breaks it), a "KEY FENCE" line written to .lockfs/break and the
# user.lockfs.break attribute (lockfs(8), lockfsctl(1): allowed exactly when
# an unlink by the writer would be, and refused with ESTALE when the fence
# is no longer the lock's).
#
# Two mounts with different host identities on one shared backend: hostA
# takes a lock, hostB sees it, breaks it one way, and then: the lock is gone
# for both, hostB logged the break, hostA shows its lock lost (at its next
# renewal) and its late rm answers ENOENT, and hostB can take the lock.
# Last, an unlink on hostB from a process that found the name free just
# before hostA took it breaks nothing (ENOENT), while one that saw the lock
# breaks it.
set -u
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] ||
    skip_all "needs two hosts on one backend; two mounts of the local backend share nothing"

lockfsctl_or_bail

# A short lease: hostA notices the break at its next renewal (ttl/3 = 1 s).
lockfs_start_or_bail -o host=hostA -o ttl=3s -o network_timeout=1s
A=$MNT
lockfs_start_or_bail -o host=hostB -o ttl=3s -o network_timeout=1s
B=$MNT
LOG_B=$LOCKFS_LOG

gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
# What hostA's .lockfs/ says of its lost lock: its name has left hostA's
# namespace, but the loss is shown while nobody else holds it.
is_lost() { [[ $(info_field "$1" state "$A") == lost ]]; }

# break_by HOW KEY FENCE: hostB breaks KEY, held by hostA with FENCE.
break_by() {
    case $1 in
    lockfsctl)
        run 20 "$CTL" unlock --yes "$B/$2"
        [[ $RC == 0 ]] || diag "lockfsctl unlock: exit $RC: $ERR"
        return "$RC"
        ;;
    break-file)
        R=$(fsop1 write "$B/.lockfs/break" "$2 $3\\n")
        [[ $R == OK ]] || diag "write to .lockfs/break: $R"
        [[ $R == OK ]]
        ;;
    xattr)
        R=$(timeout 10 setfattr -h -n user.lockfs.break -v "$3" -- "$B/$2" 2>&1)
        local rc=$?
        ((rc == 0)) || diag "setfattr user.lockfs.break: $R"
        return "$rc"
        ;;
    esac
}

n=0
for how in lockfsctl break-file xattr; do
    n=$((n + 1))
    key=k$n.lock
    what="$how, $key"
    is "$(fsop1 excl "$A/$key" 0644 'hostA\n')" OK "$what: hostA takes it"
    fa=$(xattr "$A/$key" user.lockfs.fence)
    ok "$what: hostB sees it held by hostA" wait_until 10 held_by "$B" "$key" hostA "$fa"

    if [[ $how == break-file ]]; then
        # A fence that is not the lock's: refused, nothing broken.
        is "$(fsop1 write "$B/.lockfs/break" "$key 1\\n")" ESTALE \
            "$what: a break with another fence is refused with ESTALE"
        ok "$what: ... and the lock is still hostA's" held_by "$B" "$key" hostA "$fa"
    fi

    if ok "$what: hostB breaks hostA's lock" break_by "$how" "$key" "$fa"; then
        ok "$what: gone for hostB" wait_until 5 gone "$B/$key"
        ok "$what: hostB logged the break" wait_until 5 log_has "lock broken: $key: held by hostA:" "$LOG_B"
        ok "$what: hostA shows its lock lost" wait_until 10 is_lost "$key"
        is "$(fsop1 unlink "$A/$key")" ENOENT "$what: hostA's late rm answers ENOENT"
        is "$(fsop1 excl "$B/$key")" OK "$what: hostB takes it"
        ok "$what: hostA sees hostB holding it" wait_until 10 held_by "$A" "$key" hostB
        rm -f "$B/$key"
    else
        is "$(xattr "$A/$key" user.lockfs.state)" held "$what: not broken: hostA still holds it"
        skip "hostB could not break the lock" 5
        rm -f "$A/$key"
    fi
done

# An unlink from a process that found the name free moments ago, and has not
# tried to take it since, breaks nothing held elsewhere: it has never seen
# that lock (liblockfile's stale check unlinks a name whose stat() failed).
# The nap outlasts list_cache, so that hostB's lookup for the unlink asks the
# backend and finds hostA's lock.
is "$(fsop seq lstat "$B/u.lock" childexcl "$A/u.lock" nap 600 unlink "$B/u.lock")" "ENOENT OK OK ENOENT" \
    "found u.lock free on hostB, hostA took it: that process's unlink on hostB answers ENOENT"
is "$(xattr "$A/u.lock" user.lockfs.state)" held "... and hostA still holds u.lock"
ok "... logged on hostB" log_has "removed u\.lock after finding it free; the lock held through host hostA" "$LOG_B"
ok "hostB sees hostA holding u.lock" wait_until 10 held_by "$B" u.lock hostA
is "$(fsop seq lstat "$B/u.lock" unlink "$B/u.lock")" "OK OK" \
    "a process on hostB that saw u.lock held unlinks it: a break"
ok "... gone for hostB" wait_until 5 gone "$B/u.lock"
ok "... hostB logged the break" wait_until 5 log_has "lock broken: u\.lock: held by hostA:" "$LOG_B"

# A process whose look at a lock name failed (EIO: the backend did not
# answer) has seen no lock there either, and liblockfile unlinks a name
# whose stat() fails, as stale.  The etcd fault run saw that unlink release
# a lock another tool on the same host had been granted 10 ms before, after
# a server restart.  Its unlink answers ENOENT: of a lock taken since on its
# host, and of a lock held through another.  Two more mounts with a long
# ttl, so that pausing the server while the look fails costs no lease.
lockfs_start_or_bail -o host=hostC -o ttl=30s -o network_timeout=1s
C=$MNT
LOG_C=$LOCKFS_LOG
lockfs_start_or_bail -o host=hostD -o ttl=30s -o network_timeout=1s
D=$MNT
take_on_c() { [[ $(fsop1 excl "$C/$1") == OK ]]; }

# failed_look KEY N: hostD holds KEY; on hostC a process looks at it while
# the server is paused (the nap outlasts list_cache: the look asks the
# server), then waits for $TESTDIR/go.N before it unlinks KEY.  Its answers
# go to $TESTDIR/out.N; the server is running again when this returns.
failed_look() {
    is "$(fsop1 excl "$D/$1")" OK "$1: hostD takes it"
    ok "$1: hostC sees it held by hostD" wait_until 10 held_by "$C" "$1" hostD
    backend_server_pause
    fsop seq nap 300 lstat "$C/$1" mark "$TESTDIR/looked.$2" waitfile "$TESTDIR/go.$2" \
        unlink "$C/$1" >"$TESTDIR/out.$2" &
    LOOKER=$!
    ok "$1: hostC's look is over" wait_until 15 test -e "$TESTDIR/looked.$2"
    backend_server_resume
}

# finish_look KEY N HOLDER_MNT WHEN LOG: failed_look's process unlinks
# KEY now: ENOENT, KEY's holder (through HOLDER_MNT) still holds it, and
# hostC logged LOG.
finish_look() {
    touch "$TESTDIR/go.$2"
    wait "$LOOKER"
    is "$(cat "$TESTDIR/out.$2")" "OK EIO OK OK ENOENT" \
        "$1: the process whose look failed (EIO) unlinks it $4: ENOENT"
    is "$(xattr "$3/$1" user.lockfs.state)" held "$1: ... and its holder still holds it"
    ok "$1: ... logged" log_has "$5" "$LOG_C"
    run 10 rm -f -- "$3/$1"
}

failed_look e1.lock 1
run 10 rm -f -- "$D/e1.lock"
is "$RC" 0 "e1.lock: hostD lets it go"
ok "e1.lock: another process on hostC takes it" wait_until 10 take_on_c e1.lock
finish_look e1.lock 1 "$C" "after another process on hostC took it" \
    "removed e1\.lock after its look at it failed; the lock taken since"

failed_look e2.lock 2
finish_look e2.lock 2 "$D" "while hostD holds it" \
    "removed e2\.lock after its look at it failed; the lock held through host hostD"

done_testing
