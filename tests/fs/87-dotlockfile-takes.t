#!/bin/bash
# 87-dotlockfile-takes.t — thousands of dot-lock takes from two hosts on one
# name, as a mail spool sees them: every take by dotlockfile and
# lockfile-progs ends in "got it" or "held" (exit 0 or 4), never in an
# error a plain disk would not give.
#
# As root the two hosts are two lockfs mounts (host=hA, host=hB) over two
# bind mounts of one spool directory, passthrough, as /var/mail on two NFS
# clients (LOCKFS_TEST_TAKES_PLAIN=1: the bind mounts alone, no lockfs, to
# compare); the takers are a user outside group mail who owns the mailbox,
# and the same user, in group mail, runs mailutils movemail on hA, which
# empties the mailbox by renaming a new one over it (issue 26: dotlockfile's
# exit 2, "cannot create temporary lockfile", about once in 1,200 takes on
# tinystore).  That exit 2 is liblockfile's own race with movemail's
# renames, on any disk (see "race" below): it is counted apart, every other
# status fails.  Unprivileged (no bind mounts): two mounts without
# passthrough, no movemail.
# LOCKFS_TEST_STRACE=1 runs every dotlockfile under strace and keeps the
# trace of each unexpected exit (slower: fewer takes).
# LOCKFS_TEST_TAKES_MOVEMAIL=0: no movemail; LOCKFS_TEST_TAKES_RENAMER=1:
# movemail's rename pair alone, in a tight loop (many races).
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] || skip_all "the local backend is one host's; two mounts share nothing"

SECS=${LOCKFS_TEST_TAKES_SECS:-40}
# LOCKFS_TEST_TAKES_PLAIN=1 (root): the same takes on the two bind mounts
# themselves, without lockfs, to compare with a plain disk.
PLAIN=${LOCKFS_TEST_TAKES_PLAIN:-0}
if ((EUID == 0)); then
    SPOOL=$TESTDIR/spool
    mkdir -p "$SPOOL" "$TESTDIR/hA" "$TESTDIR/hB"
    chgrp mail "$SPOOL" && chmod 2775 "$SPOOL"
    for h in hA hB; do
        mount --bind "$SPOOL" "$TESTDIR/$h" || BAIL_OUT "mount --bind $SPOOL $TESTDIR/$h"
        at_exit "umount -l '$TESTDIR/$h' 2>/dev/null"
    done
    if ((PLAIN)); then
        A=$TESTDIR/hA B=$TESTDIR/hB
        note "PLAIN: two bind mounts of one spool, no lockfs"
    else
        lockfs_start_or_bail --mnt "$TESTDIR/hA" -o host=hA,passthrough=yes
        A=$MNT
        lockfs_start_or_bail --mnt "$TESTDIR/hB" -o host=hB,passthrough=yes
        B=$MNT
        note "two mounts over bind mounts of one spool, passthrough"
    fi
else
    lockfs_start_or_bail -o host=hA
    A=$MNT
    lockfs_start_or_bail -o host=hB
    B=$MNT
    note "two mounts without passthrough (bind mounts need root)"
fi

# The takers: as root, the second test user, not in group mail, whose
# mailbox user1 (0660, group mail) is in the 2775 root:mail spool, as on
# Debian.  Such a user cannot write the spool: dotlockfile (setgid mail)
# keeps its group only when the lock is that user's mailbox's
# (liblockfile's is_maillock: user1 is a regular file the user owns, in a
# directory group mail may write), and otherwise cannot make its temp file
# (exit 2).
WHO=(env)
MOVER=()
if ((EUID == 0)) && have_user2; then
    WHO=(setpriv --reuid="$USER2_UID" --regid="$USER2_GID" --clear-groups --)
    chmod 0777 "$TESTDIR"
    : >"$SPOOL/user1"
    chown "$USER2_UID:mail" "$SPOOL/user1"
    chmod 0660 "$SPOOL/user1"
    # The mail reader: the same user, in group mail this time (a user who
    # cannot write the spool has mailutils lock with fcntl, and its
    # movemail cannot rewrite the mailbox), running mailutils movemail on
    # hA, which empties the mailbox by renaming a new one over it: for a
    # moment the mailbox is not there, or is 0600.  dotlockfile's
    # is_maillock looks at it before every take.
    if [[ ${LOCKFS_TEST_TAKES_MOVEMAIL:-1} == 1 ]]; then
        MOVER=(setpriv --reuid="$USER2_UID" --regid="$USER2_GID"
            --groups="$(getent group mail | cut -d: -f3)" --)
        mkdir -p "$TESTDIR/out"
        chown "$USER2_UID" "$TESTDIR/out"
    fi
fi
# LOCKFS_TEST_STRACE=1 runs every dotlockfile under strace (as root, which
# then runs it as the test user with its setgid bit honoured: strace -u)
# and keeps the trace of each unexpected exit (slower: fewer takes).
STRACE=() AS=()
if [[ ${LOCKFS_TEST_STRACE:-0} == 1 ]]; then
    if ((EUID == 0)) && have_user2; then
        STRACE=(strace -f -tt -e trace=file,desc,process -u "$LOCKFS_TEST_USER2" -o)
        AS=("${WHO[@]}")
        WHO=(env)
    else
        STRACE=(strace -f -tt -e trace=file,desc,process -o)
    fi
fi

# The mailbox's inode and birth time on the disk, past lockfs: movemail
# renames a new mailbox over the old one (whose inode number the next may
# reuse; not its birth time).
box_ino() { [[ -n ${SPOOL:-} ]] && stat -c '%i %w' "$SPOOL/user1" 2>/dev/null; }

# A take that failed while movemail renamed the mailbox (its inode
# changed during the take, or it was not there) may fail on any disk:
# liblockfile's is_maillock (in dotlockfile, and in lockfile_create and
# lockfile_remove when the spool refuses the user) looks at the mailbox,
# finds none between movemail's rename(mailbox, muX) and rename(muY,
# mailbox), takes the lock for an ordinary file's, and the user, who may
# not write the spool without dotlockfile's group mail, gets EACCES: exit 2
# for a take; for a release, dotlockfile -u exits 1, and lockfile-remove
# exits 0 with the lock left in place (is_maillock's lstat leaves ENOENT in
# errno, which lockfile_remove takes for "already gone").  Such a take
# counts as "race", not as an error of lockfs; every other status but 0
# and 4 is one.
raced() { [[ -z $1 || $1 != "$(box_ino)" || -z $(box_ino) ]]; }

# release ID MOUNT KIND: let the lock go, again while that race leaves it
# held (it would stay held for 5 minutes).
release() {
    local m=$2 kind=$3 i0 k mine
    mine=$(stat -c %i "$m/user1.lock")
    for ((k = 0; k < 20; k++)); do
        ((k)) && sleep 0.01
        i0=$(box_ino)
        case $kind in
        dotlockfile) timeout 20 "${AS[@]}" dotlockfile -u "$m/user1.lock" ;;
        lockfile-progs) timeout 20 "${AS[@]}" lockfile-remove "$m/user1" ;;
        esac
        local rc=$?
        raced "$i0" || return $rc
        # still this take's lock?
        ((rc == 0)) && [[ $(stat -c %i "$m/user1.lock" 2>/dev/null) != "$mine" ]] && return 0
        echo "race" >>"$TESTDIR/races.$1"
    done
    return 1
}

# worker ID MOUNT KIND: take and let go user1.lock until SECS have passed,
# appending a message to the mailbox under the lock; counts every exit
# status in $TESTDIR/rc.ID ("RC COUNT" lines; "race" as above, 100 for a
# failed release).
worker() {
    local id=$1 m=$2 kind=$3 n=0 rc i0 deadline=$((EPOCHSECONDS + SECS))
    local -A rcs=()
    while ((EPOCHSECONDS < deadline)); do
        n=$((n + 1))
        i0=$(box_ino)
        case $kind in
        dotlockfile)
            if ((${#STRACE[@]})); then
                timeout 20 "${STRACE[@]}" "$TESTDIR/st.$id.$n" dotlockfile -l -r 0 "$m/user1.lock" 2>"$TESTDIR/err.$id"
            else
                timeout 20 dotlockfile -l -r 0 "$m/user1.lock" 2>"$TESTDIR/err.$id"
            fi
            rc=$?
            ;;
        lockfile-progs)
            timeout 20 "${AS[@]}" lockfile-create --retry 0 "$m/user1" 2>"$TESTDIR/err.$id"
            rc=$?
            ;;
        esac
        if ((rc == 2)) && raced "$i0"; then
            rc=race
        elif ((rc == 0)); then
            "${AS[@]}" bash -c 'printf "From %s@spool Thu Jan  1 00:00:00 2026\n\n%s\n\n" "$1" "$1" >>"$2"' _ "$id.$n" "$m/user1"
            release "$id" "$m" "$kind" || rc=100
        fi
        if ((${#STRACE[@]})); then
            [[ $rc == 0 || $rc == 4 || $rc == race ]] && rm -f "$TESTDIR/st.$id.$n"
        fi
        rcs[$rc]=$((${rcs[$rc]:-0} + 1))
        # held: back off a little, as an MDA does, so that movemail gets in
        [[ $rc == 4 && -n $MOVER_W ]] && sleep "0.0$((RANDOM % 20 + 10))"
        [[ $rc != 0 && $rc != 4 && $rc != race ]] &&
            echo "$id take $n: exit $rc at $(date +%T.%N): $(head -c 300 "$TESTDIR/err.$id")" >>"$TESTDIR/odd"
    done
    for rc in "${!rcs[@]}"; do echo "$rc ${rcs[$rc]}"; done >"$TESTDIR/rc.$id"
}

# mover: movemail on hA until the takers are done.
mover() {
    local k=0 rc
    local -A rcs=()
    umask 007
    if [[ ${LOCKFS_TEST_TAKES_RENAMER:-0} == 1 ]]; then
        # movemail's rewrite of the mailbox alone, without its lock, in a
        # loop: new file 0600, rename the mailbox away, the new one over
        # it, chmod 0660, unlink the old one.
        "$PYTHON" -c '
import os, sys, time
d, stop = sys.argv[1], sys.argv[2]
k = 0
while not os.path.exists(stop):
    k += 1
    new, old = f"{d}/muN{k}", f"{d}/muO{k}"
    fd = os.open(new, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.rename(f"{d}/user1", old)
    os.rename(new, f"{d}/user1")
    os.fchmod(fd, 0o660)
    os.close(fd)
    os.unlink(old)
    time.sleep(0.002)
print(k)' "$A" "$TESTDIR/stop" >"$TESTDIR/out/rc" 2>>"$TESTDIR/out/err"
        return
    fi
    while [[ ! -e $TESTDIR/stop ]]; do
        timeout 60 movemail.mailutils --no-config "$A/user1" "$TESTDIR/out/moved" >>"$TESTDIR/out/err" 2>&1
        rc=$?
        rcs[$rc]=$((${rcs[$rc]:-0} + 1))
    done
    for rc in "${!rcs[@]}"; do echo "$rc ${rcs[$rc]}"; done >"$TESTDIR/out/rc"
}

: >"$TESTDIR/odd"
chmod 0666 "$TESTDIR/odd"
export -f worker mover release box_ino raced
export TESTDIR SECS A PYTHON SPOOL
STRACE_W=${STRACE[*]:-} AS_W=${AS[*]:-} MOVER_W=${MOVER[*]:-}
export STRACE_W AS_W MOVER_W
pids=()
for w in "a1 $A dotlockfile" "a2 $A lockfile-progs" "b1 $B dotlockfile" "b2 $B dotlockfile" \
    "b3 $B lockfile-progs"; do
    # shellcheck disable=SC2086
    "${WHO[@]}" bash -c 'STRACE=($STRACE_W) AS=($AS_W); worker "$@"' _ $w 2>/dev/null &
    pids+=($!)
done
mpid=''
if ((${#MOVER[@]})); then
    "${MOVER[@]}" bash -c mover 2>/dev/null &
    mpid=$!
fi
for p in "${pids[@]}"; do wait "$p"; done
: >"$TESTDIR/stop"
if [[ -n $mpid ]]; then
    wait "$mpid"
    note "movemail on hA: $(sort -n "$TESTDIR/out/rc" | tr '\n' ' ')"
fi

declare -A total=()
takes=0
for id in a1 a2 b1 b2 b3; do
    [[ -s $TESTDIR/rc.$id ]] || { fail "worker $id reported nothing"; continue; }
    while read -r rc c; do
        total[$rc]=$((${total[$rc]:-0} + c))
        takes=$((takes + c))
    done <"$TESTDIR/rc.$id"
done
summary=""
for rc in $(printf '%s\n' "${!total[@]}" | sort -n); do summary+=" exit $rc: ${total[$rc]};"; done
note "$takes takes in ${SECS}s:$summary"
cmp_ok "${total[0]:-0}" -ge 100 "the takes got the lock often (${total[0]:-0} times)"
releases_raced=$(cat "$TESTDIR"/races.* 2>/dev/null | wc -l)
((${total[race]:-0} + releases_raced)) &&
    note "failed while movemail renamed the mailbox, as on any disk: ${total[race]:-0} takes, $releases_raced releases (tried again)"
odd=$((takes - ${total[0]:-0} - ${total[4]:-0} - ${total[race]:-0}))
is "$odd" 0 "no take ended in anything but 0 or 4 but for movemail's rename ($takes takes:$summary)"
((odd)) && diag "$(head -n 20 "$TESTDIR/odd")"
if ((odd && ${#STRACE[@]})); then
    for f in "$TESTDIR"/st.*; do
        [[ -e $f ]] || continue
        diag "--- $f"
        diag "$(grep -E 'lk|user1|exit' "$f" | tail -n 30)"
    done
fi
free_on() { [[ $(fsop1 lstat "$1/user1.lock") == ENOENT ]]; }
ok "nothing left held, seen on hA" wait_until 5 free_on "$A"
ok "nothing left held, seen on hB" wait_until 5 free_on "$B"
if ((EUID == 0)); then
    is "$(cd "$SPOOL" && ls -A | grep -vx user1)" "" "no temporary file left in the spool"
fi
done_testing
