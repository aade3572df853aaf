#!/bin/bash
# 87-dotlockfile-takes.t — thousands of dot-lock takes from two hosts on one
# name, as a mail spool sees them: every take by dotlockfile and
# lockfile-progs ends in "got it" or "held" (exit 0 or 4), never in an
# error a plain disk would not give (dotlockfile's exit 2, "cannot create
# temporary lockfile", was seen about once in 1,200 takes on tinystore).
#
# As root the two hosts are two lockfs mounts (host=hA, host=hB) over two
# bind mounts of one spool directory, passthrough, as /var/mail on two NFS
# clients; unprivileged (no bind mounts) two mounts without passthrough.
# LOCKFS_TEST_STRACE=1 runs every dotlockfile under strace -f and keeps the
# trace of each unexpected exit (slower: fewer takes).
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] || skip_all "the local backend is one host's; two mounts share nothing"

SECS=${LOCKFS_TEST_TAKES_SECS:-40}
if ((EUID == 0)); then
    SPOOL=$TESTDIR/spool
    mkdir -p "$SPOOL" "$TESTDIR/hA" "$TESTDIR/hB"
    chgrp mail "$SPOOL" && chmod 2775 "$SPOOL"
    for h in hA hB; do
        mount --bind "$SPOOL" "$TESTDIR/$h" || BAIL_OUT "mount --bind $SPOOL $TESTDIR/$h"
        at_exit "umount -l '$TESTDIR/$h' 2>/dev/null"
    done
    lockfs_start_or_bail --mnt "$TESTDIR/hA" -o host=hA,passthrough=yes
    A=$MNT
    lockfs_start_or_bail --mnt "$TESTDIR/hB" -o host=hB,passthrough=yes
    B=$MNT
    note "two mounts over bind mounts of one spool, passthrough"
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
if ((EUID == 0)) && have_user2; then
    WHO=(setpriv --reuid="$USER2_UID" --regid="$USER2_GID" --clear-groups --)
    chmod 0777 "$TESTDIR"
    : >"$SPOOL/user1"
    chown "$USER2_UID:mail" "$SPOOL/user1"
    chmod 0660 "$SPOOL/user1"
fi
STRACE=()
[[ ${LOCKFS_TEST_STRACE:-0} == 1 ]] && STRACE=(strace -f -tt -o)

# worker ID MOUNT KIND: take and let go user1.lock until SECS have passed;
# counts every exit status in $TESTDIR/rc.ID ("RC COUNT" lines).
worker() {
    local id=$1 m=$2 kind=$3 n=0 rc deadline=$((EPOCHSECONDS + SECS))
    local -A rcs=()
    while ((EPOCHSECONDS < deadline)); do
        n=$((n + 1))
        case $kind in
        dotlockfile)
            if ((${#STRACE[@]})); then
                "${STRACE[@]}" "$TESTDIR/st.$id.$n" timeout 20 dotlockfile -l -r 0 "$m/user1.lock" 2>"$TESTDIR/err.$id"
            else
                timeout 20 dotlockfile -l -r 0 "$m/user1.lock" 2>"$TESTDIR/err.$id"
            fi
            rc=$?
            ((rc == 0)) && { timeout 20 dotlockfile -u "$m/user1.lock" || rc=100; }
            if ((${#STRACE[@]})); then
                ((rc == 0 || rc == 4)) && rm -f "$TESTDIR/st.$id.$n"
            fi
            ;;
        lockfile-progs)
            timeout 20 lockfile-create --retry 0 "$m/user1" 2>"$TESTDIR/err.$id"
            rc=$?
            ((rc == 0)) && { timeout 20 lockfile-remove "$m/user1" || rc=100; }
            ;;
        esac
        rcs[$rc]=$((${rcs[$rc]:-0} + 1))
        ((rc != 0 && rc != 4)) &&
            echo "$id take $n: exit $rc at $(date +%T.%N): $(head -c 300 "$TESTDIR/err.$id")" >>"$TESTDIR/odd"
    done
    for rc in "${!rcs[@]}"; do echo "$rc ${rcs[$rc]}"; done >"$TESTDIR/rc.$id"
}

: >"$TESTDIR/odd"
chmod 0666 "$TESTDIR/odd"
export -f worker
export TESTDIR SECS
STRACE_W=${STRACE[*]:-}
export STRACE_W
pids=()
for w in "a1 $A dotlockfile" "a2 $A lockfile-progs" "b1 $B dotlockfile" "b2 $B dotlockfile" \
    "b3 $B lockfile-progs"; do
    # shellcheck disable=SC2086
    "${WHO[@]}" bash -c 'STRACE=($STRACE_W); worker "$@"' _ $w 2>/dev/null &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

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
odd=$((takes - ${total[0]:-0} - ${total[4]:-0}))
is "$odd" 0 "no take ended in anything but 0 or 4 ($takes takes:$summary)"
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
