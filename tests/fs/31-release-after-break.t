#!/bin/bash
# 31-release-after-break.t — CONTRACT §6: a release compares the fence it
# holds, so a late rm after a break must not delete the next holder's lock:
# it answers ENOENT and deletes nothing.
#
# Mounts with different host identities on one shared backend are different
# hosts.  hostA takes a lock; hostB breaks it (rm of another host's lock, as
# a legacy tool would break it) and takes it; then hostA's rm (or rmdir)
# comes too late: right away, before hostA can have noticed the break (its
# next renewal is 10 s away); after hostA's own write found the lock gone
# (ESTALE); and after hostA's renewal found it gone and it shows it lost
# (then heartbeats and writes through a descriptor open on it fail).
# Each time hostB's lock is still there, still hostB's, with the same fence
# and content, and hostB can still release it.
set -u
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] ||
    skip_all "needs two hosts on one backend; two mounts of the local backend share nothing"

# hostA: the default lease (30 s, renewed every 10 s), so its late rm comes
# before it can have noticed the break.  hostC: a short lease, so it notices
# at its next renewal (ttl/3 = 1 s).
lockfs_start_or_bail -o host=hostA
A=$MNT
lockfs_start_or_bail -o host=hostC -o ttl=3s -o network_timeout=1s
C=$MNT
lockfs_start_or_bail -o host=hostB
B=$MNT
LOG_B=$LOCKFS_LOG

# field MNT KEY NAME: "NAME: value" of .lockfs/KEY on mount MNT.
field() { info_field "$2" "$3" "$1"; }
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
fd_lost() { [[ $(timeout 10 getfattr --only-values -n user.lockfs.state -- "$1" 2>/dev/null) == lost ]]; }

# take KIND PATH CONTENT: a file lock by O_EXCL create (written through the
# descriptor), or a directory lock by mkdir.
take() {
    if [[ $1 == dir ]]; then fsop1 mkdir "$2"; else fsop1 excl "$2" 0644 "$3"; fi
}
drop() {
    if [[ $1 == dir ]]; then fsop1 rmdir "$2"; else fsop1 unlink "$2"; fi
}

# late_release MNT HOST NAME KIND WHEN: the whole story for one lock, first
# held through MNT (host identity HOST; called hostA below).  WHEN is
# "at-once" (hostA's rm right after hostB took it), "after-write" (hostA
# writes to its lock first) or "after-lost" (hostA's rm once hostA shows the
# lock lost).
late_release() {
    local A=$1 hostA=$2 name=$3 kind=$4 when=$5 fa fb
    local what="$name ($kind lock of $hostA, rm $when)"
    is "$(take "$kind" "$A/$name" 'hostA\n')" OK "$what: hostA takes it"
    fa=$(field "$A" "$name" fence)
    # A descriptor kept open on it: once the lock is lost its name leaves
    # hostA's namespace, and the holder learns of the loss through this.
    local fd='' fdpath=''
    exec {fd}<"$A/$name" # a directory lock opens too (OPENDIR)
    fdpath=/proc/$$/fd/$fd
    like "$fa" '^[0-9]+$' "$what: hostA's fence ($fa)"
    # hostB may see another host's lock only once its record is published.
    ok "$what: hostB sees it held by hostA" wait_until 10 held_by "$B" "$name" "$hostA" "$fa"

    # hostB breaks it, as a legacy tool breaks another host's lock: rm.
    is "$(drop "$kind" "$B/$name")" OK "$what: hostB's rm of hostA's lock succeeds (a break)"
    ok "$what: hostB logged it as a break" wait_until 5 log_has "lock broken: $name: held by $hostA:" "$LOG_B"
    ok "$what: broken: hostB sees it free" gone "$B/$name"
    is "$(take "$kind" "$B/$name" 'hostB\n')" OK "$what: hostB takes it"
    fb=$(field "$B" "$name" fence)
    fence_gt "$fb" "$fa" "$what: hostB's fence is larger than hostA's"

    if [[ $when == at-once ]]; then
        note "$what: before its rm hostA shows it $(field "$A" "$name" state)"
    elif [[ $when == after-write ]]; then
        # A content change always reaches the backend, which no longer has
        # hostA's lock: the write fails and the lock is lost.
        is "$(fsop1 write "$A/$name" x)" ESTALE "$what: hostA's write through the broken lock: ESTALE"
        ok "$what: hostA reports its lock lost" fd_lost "$fdpath"
    elif [[ $when == after-lost ]]; then
        # hostA learns of the break at its next renewal (ttl/3 = 1 s).
        # Through the descriptor: by then hostB holds the name, which is
        # what hostA's .lockfs/ shows of it.
        ok "$what: hostA reports its lock lost" wait_until 10 fd_lost "$fdpath"
        if [[ $kind == file ]]; then
            is "$(fsop1 utime "$fdpath")" ESTALE "$what: hostA's heartbeat through the lost lock: ESTALE"
            is "$(fsop1 write "$fdpath" x)" ESTALE "$what: hostA's write through the lost lock: ESTALE"
        fi
    fi

    [[ -n $fd ]] && exec {fd}<&-
    # The late release.
    is "$(drop "$kind" "$A/$name")" ENOENT "$what: hostA's late release answers ENOENT"

    # Nothing was deleted: hostB's lock is there, hostB's, same fence.
    ok "$what: hostB still holds it, same fence" held_by "$B" "$name" hostB "$fb"
    is "$(field "$B" "$name" fence)" "$fb" "$what: hostB's .lockfs shows the same fence"
    if [[ $kind == file ]]; then
        is "$(timeout 10 cat -- "$B/$name")" hostB "$what: hostB's content is untouched"
    fi
    ok "$what: hostA now sees hostB's lock" wait_until 10 held_by "$A" "$name" hostB "$fb"
    if [[ $kind == file ]]; then
        is "$(fsop1 excl "$A/$name")" EEXIST "$what: hostA cannot take it while hostB holds it"
    else
        is "$(fsop1 mkdir "$A/$name")" EEXIST "$what: hostA cannot take it while hostB holds it"
    fi

    # And hostB's own release still works.
    is "$(drop "$kind" "$B/$name")" OK "$what: hostB releases it"
    ok "$what: released: gone for hostA too" wait_until 10 gone "$A/$name"
}

late_release "$A" hostA x.lock file at-once
late_release "$A" hostA d.lock dir at-once
late_release "$A" hostA w.lock file after-write
late_release "$C" hostC y.lock file after-lost
late_release "$C" hostC e.lock dir after-lost

done_testing
