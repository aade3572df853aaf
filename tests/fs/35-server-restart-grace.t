#!/bin/bash
# 35-server-restart-grace.t — after the tinystore server restarts, no mount
# is granted a lock until ttl has passed since the restart (docs/backends.md,
# "Server restart grace"; issue 10): the server forgets every lease, and a
# holder from before the restart believes in its lock until its next
# renewal, or until ttl less a fifth after its last one.
#
# On a fresh store the first lock is granted at once (nothing to wait for).
# hostA holds x.lock; the server restarts; hostB (mounted before) and hostC
# (mounted right after the restart: a new mount, that knows of the restart
# only from the store) both try to take x.lock over and over, and hostB also
# a lock nobody held.  Every try answers EEXIST until ttl after the restart,
# and none is granted before hostA shows x.lock lost; then x.lock goes to
# one of them with a larger fence, and the grace is logged.
set -u
TEST_TIMEOUT=120
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND == tinystore ]] ||
    skip_all "the restart grace is tinystore's: its server forgets leases when it restarts"

TTL_MS=3000
opts=(-o ttl=3s -o network_timeout=1s)

is_lost() { [[ $(state_of "$1") == lost ]]; }

lockfs_start_or_bail -o host=hostA "${opts[@]}"
A=$MNT LOG_A=$LOCKFS_LOG
lockfs_start_or_bail -o host=hostB "${opts[@]}"
B=$MNT LOG_B=$LOCKFS_LOG

# A store lockfs never used: granted at the first try, at once.
t0=$(date +%s%N)
is "$(fsop1 excl "$A/x.lock" 0644 'hostA\n')" OK "fresh store: hostA takes x.lock at the first try"
ms=$(ms_since "$t0")
cmp_ok "$ms" -lt 1500 "fresh store: ... without waiting (${ms} ms)"
fa=$(xattr "$A/x.lock" user.lockfs.fence)
exec {xfd}<"$A/x.lock"
XFD=/proc/$$/fd/$xfd
held_by_a() { [[ $(status_field "$(status_line x.lock "$B")" host) == hostA ]]; }
ok "hostB sees x.lock held by hostA" wait_until 10 held_by_a
nok "fresh store: no grace logged" log_has 'server has restarted' "$LOG_A"

tinystore_restart "$TS_DIR" >/dev/null || BAIL_OUT "cannot restart the tinystore server"
t_back=$(date +%s%N)
lockfs_start_or_bail -o host=hostC "${opts[@]}"
C=$MNT LOG_C=$LOCKFS_LOG

# Until one of them is granted x.lock (at most 15 s): hostB and hostC try in
# turn, and hostB tries a free lock too.
winner='' lost_ms='' early=0 double=0 eexist=0 eio=0 other=0
declare -A got=() refused=([hostB]=0 [hostC]=0)
try() { # NAME PATH
    local r at
    r=$(fsop1 excl "$2" 0644 "$1\n")
    at=$(ms_since "$t_back")
    case $r in
    OK)
        got[$1:${2##*/}]=$at
        ((at < TTL_MS)) && early=1
        [[ ${2##*/} == x.lock && -z $lost_ms ]] && ! is_lost "$XFD" && double=1
        return 0
        ;;
    EEXIST) eexist=$((eexist + 1)) refused[$1]=$((${refused[$1]} + 1)) ;;
    EIO) eio=$((eio + 1)) ;;
    *) other=$((other + 1)); diag "$1: $2: $r" ;;
    esac
    return 1
}
while (($(ms_since "$t_back") < 15000)); do
    [[ -z $lost_ms ]] && is_lost "$XFD" && lost_ms=$(ms_since "$t_back")
    if try hostB "$B/x.lock"; then winner=hostB; break; fi
    if try hostC "$C/x.lock"; then winner=hostC; break; fi
    [[ -n ${got[hostB:free.lock]:-} ]] || try hostB "$B/free.lock"
    sleep 0.05
done
[[ -n ${got[hostB:free.lock]:-} ]] || try hostB "$B/free.lock"
diag "hostA lost x.lock ${lost_ms:-?} ms after the restart; x.lock to ${winner:-nobody}" \
    "${got[$winner:x.lock]:-?} ms after it; free.lock ${got[hostB:free.lock]:-?} ms after it;" \
    "$eexist EEXIST, $eio EIO before"
isnt "$winner" '' "after the restart, hostB or hostC takes x.lock"
is "$early" 0 "no grant came before ttl (${TTL_MS} ms) since the restart"
is "$double" 0 "no grant came while hostA still showed x.lock held"
ok "hostA shows x.lock lost" is_lost "$XFD"
cmp_ok "${lost_ms:-99999}" -le "${got[$winner:x.lock]:-0}" "hostA showed its loss before x.lock was granted"
cmp_ok "${got[$winner:x.lock]:-99999}" -lt $((TTL_MS + 2500)) "... and x.lock was granted soon after the grace"
ok "the free lock was granted too, after the grace" test -n "${got[hostB:free.lock]:-}"
cmp_ok "${refused[hostB]}" -gt 0 "hostB (mounted before the restart) was refused within the grace: EEXIST"
cmp_ok "${refused[hostC]}" -gt 0 "hostC (mounted after the restart) was refused within the grace: EEXIST"
is "$other" 0 "... and nothing but EEXIST (or EIO while reconnecting)"
if [[ $winner == hostB ]]; then W=$B L=$C; else W=$C L=$B; fi
fw=$(xattr "$W/x.lock" user.lockfs.fence)
fence_gt "$fw" "$fa" "$winner's fence is larger than hostA's"
is "$(fsop1 excl "$L/x.lock")" EEXIST "one holder: the other mount is refused x.lock"
is "$(fsop1 unlink "$A/x.lock")" ENOENT "hostA's late rm of its lost lock answers ENOENT"
ok "the grace was logged by a mount that met it" \
    bash -c 'grep -Eq "server has restarted .*no lock is granted" "$1" "$2"' _ "$LOG_B" "$LOG_C"
# After the grace, locks are granted at the first try again.
is "$(fsop1 excl "$A/n.lock")" OK "after the grace: hostA takes a new lock at the first try"

exec {xfd}<&-
rm -f "$W/x.lock" "$B/free.lock" "$A/n.lock"
done_testing
