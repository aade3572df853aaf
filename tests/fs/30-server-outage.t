#!/bin/bash
# 30-server-outage.t — the shared backend's server goes away while locks are
# held (CONTRACT §3, §5; lockfs.conf(5) [ldap], [tinystore] and [etcd]).  On
# etcd the server is the whole 3-member cluster, every member killed (-9),
# paused or resumed together.
#
# 1. A long outage (stopped for longer than ttl, then restarted on the same
#    port and store): new acquisitions answer EIO within the network
#    timeout — not EEXIST, not success — on the holder's mount and on
#    another; the held lock shows `lost` no later than ttl after the server
#    went (the last renewal can only be older), and heartbeats and writes
#    through descriptors still open on it fail with ESTALE.  Lost, the name
#    leaves hostA's namespace: it is what the backend says, and new
#    acquisitions on hostA go to the backend at once.  Once the server is back, acquisitions work
#    again, the lock can be taken by another mount with a larger fence, and
#    there is one holder: the old one shows its lock lost, never held, and
#    its late rm answers ENOENT.  On LDAP this runs with dynamic entries (the
#    server expires the entry ttl after the last refresh) and without them
#    (`ldap_dynamic=no`: the stale rules decide, and the taker breaks it).
# 2. A hung server (SIGSTOP) for less than ttl/2: acquisitions answer EIO
#    within the network timeout, and the held lock stays held: a renewal
#    after the outage succeeds, same fence, nothing lost.
# 3. The server stopped and restarted within ttl/2.  LDAP and etcd keep the entry:
#    the lock stays held (renewed after the restart).  tinystore keeps leases
#    in memory only: the holder finds its lock lost at its next renewal
#    (lockfs.conf(5)), and the lock can be taken once the restart grace (ttl
#    after the restart, 35-server-restart-grace.t) is over.  Either way, no
#    other mount is granted the lock while the holder still shows it held.
# 4. A hung server again: reading .lockfs/status or listing the mount waits
#    for the server at most about one network timeout, like any other call.
# 5. A server stopped until the holder declares its lock lost, renewals sent
#    meanwhile waiting in its socket: once it runs again, another mount takes
#    the lock within 2 s, not a ttl later (the holder's mount releases a lost
#    lease the server kept: design.md).
# 6. A late release of a lost lock leaves the next holder's lock alone, and any
#    holder's for a minute, however many grants came between (6b).
# 7. A holder's rm while the server hangs answers EIO and lets the lock go:
#    it is released once the server answers, long before it would run out.
# 8. A lockfsctl hold whose lock is lost stops its command and unlinks the
#    lost name: left, nobody on its host could take the lock again.
# 9. A mount stopped while the server hangs exits within seconds, leaving
#    its locks to run out with their leases, not a network timeout per lock.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] ||
    skip_all "the local backend has no server to stop: its locks live in the lockfs process"

NET_MS=1000
# An answer while the server is away: the network timeout, plus time for
# python to start and for a loaded machine.
EIO_BOUND_MS=$((NET_MS + 1500))

# ---------------------------------------------------------------- the server

# On etcd "the server" is the whole 3-member cluster: every member is killed
# (-9; etcd's own SIGTERM shutdown without quorum takes seconds, longer than
# the quick restart below may; 38-etcd-cluster-restart.t stops it gently),
# paused and resumed.
server_stop() {
    case $LOCKFS_BACKEND in
    tinystore) tinystore_stop "$TS_DIR" ;;
    ldap) bash "$TESTLIB/slapd.sh" stop "$SLAPD_TOP/slapd" ;;
    etcd) for n in 0 1 2; do bash "$TESTLIB/etcd.sh" kill "$ETCD_TOP" "$n"; done ;;
    esac
}

# Same port, same store or database.
server_start() {
    case $LOCKFS_BACKEND in
    tinystore) tinystore_restart "$TS_DIR" >/dev/null ;;
    ldap) bash "$TESTLIB/slapd.sh" restart "$SLAPD_TOP/slapd" >/dev/null ;;
    etcd) bash "$TESTLIB/etcd.sh" restart "$ETCD_TOP" >/dev/null ;;
    esac
}

# A hung server (SIGSTOP), and back (SIGCONT).
server_pause() { backend_server_pause; }
server_resume() { backend_server_resume; }

server_restart_or_bail() {
    server_start && return 0
    fail "restart the $LOCKFS_BACKEND server; everything after depends on it"
    done_testing
}

# ---------------------------------------------------------------- helpers



# state_of (mount.sh): the mount's own view, no backend call (a descriptor's /proc path followed).
# A descriptor kept open on a lock: once lost, its name is gone, but what
# the descriptor reaches still says lost.  Sets FD_PATH.
open_fd() {
    local fd
    exec {fd}<"$1"
    FD_PATH=/proc/$$/fd/$fd FD_NUM=$fd
}
close_fd() { local fd=$1; exec {fd}<&-; }
is_lost() { [[ $(state_of "$1") == lost ]]; }
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }


# renewed_since MNT KEY T0 TTL_MS: MNT renewed KEY's lease with a renewal
# sent after T0 (date +%s%N).  The lease runs ttl from the last renewal sent,
# so lease_left_ms + (now - T0) > ttl says that renewal came after T0 (now
# taken before the read, so the test errs on the safe side).
renewed_since() {
    local since left
    since=$(ms_since "$3")
    left=$(info_field "$2" lease_left_ms "$1")
    [[ $left =~ ^[0-9]+$ ]] && ((left + since > $4))
}

# pair_holding LABEL HOST_A HOST_B TTL KEY: two mounts (network timeout 1 s);
# HOST_A takes KEY and HOST_B sees it held by HOST_A.  Sets PAIR_A, PAIR_B
# (the mounts), PAIR_LOG (HOST_A's log) and PAIR_FENCE.
pair_holding() {
    local label=$1 ha=$2 hb=$3 ttl=$4 key=$5
    lockfs_start_or_bail -o host="$ha" -o ttl="$ttl" -o network_timeout=1s
    PAIR_A=$MNT PAIR_LOG=$LOCKFS_LOG
    lockfs_start_or_bail -o host="$hb" -o ttl="$ttl" -o network_timeout=1s
    PAIR_B=$MNT
    ok "$label: $ha takes $key" takes "$PAIR_A/$key"
    PAIR_FENCE=$(xattr "$PAIR_A/$key" user.lockfs.fence)
    ok "$label: $hb sees it" wait_until 10 held_by "$PAIR_B" "$key" "$ha" "$PAIR_FENCE"
}

# ---------------------------------------------------------------- 1. long outage

# long_outage LABEL [MOUNT OPTION...]: hostA holds x.lock; the server is
# stopped until hostA shows it lost, then restarted; hostB takes it.
long_outage() {
    local label=$1 ttl_ms=3000 fa fb t_down lost_ms line
    shift
    local -a extra=()
    local o
    for o in "$@"; do extra+=(-o "$o"); done
    local -a opts=(-o ttl=3s -o network_timeout=1s "${extra[@]}")
    lockfs_start_or_bail -o host=hostA "${opts[@]}"
    local A=$MNT pid_a=$LOCKFS_PID log_a=$LOCKFS_LOG
    lockfs_start_or_bail -o host=hostB "${opts[@]}"
    local B=$MNT pid_b=$LOCKFS_PID log_b=$LOCKFS_LOG

    ok "$label: hostA takes x.lock" takes "$A/x.lock" 'hostA\n'
    fa=$(xattr "$A/x.lock" user.lockfs.fence)
    open_fd "$A/x.lock"
    local xfd=$FD_PATH xfd_num=$FD_NUM
    ok "$label: hostB sees x.lock held by hostA" wait_until 10 held_by "$B" x.lock hostA "$fa"

    server_stop
    t_down=$(date +%s%N) # the server is gone: hostA's last renewal was before this
    ok "$label: hostA shows x.lock lost once its lease could not be renewed" \
        wait_until $((ttl_ms / 1000 + 7)) is_lost "$xfd"
    lost_ms=$(ms_since "$t_down")
    cmp_ok "$lost_ms" -le $((ttl_ms + 500)) \
        "$label: declared lost within ttl (${ttl_ms} ms) of the last possible renewal: after ${lost_ms} ms"
    ok "$label: hostA logged the loss" log_has 'lost x\.lock .*could not be renewed' "$log_a"
    line=$(status_line x.lock "$A")
    is "$(status_field "$line" state)" lost "$label: hostA's .lockfs/status shows x.lock lost"

    # While the server is away: EIO, within the network timeout.
    timed excl "$A/y.lock"
    is "$R" EIO "$label: server down: O_EXCL create of a free lock on hostA answers EIO"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "$label: ... within the network timeout (${MS} ms)"
    timed mkdir "$A/m.lock"
    is "$R" EIO "$label: server down: mkdir of a lock on hostA answers EIO"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "$label: ... within the network timeout (${MS} ms)"
    # The lost lock's name is gone for its holder's uid (below), at once:
    # the server just failed to answer, and asking it again would only wait
    # the network timeout to say so.  Timed with stat(1), not a python start.
    local t0 msg
    t0=$(date +%s%N)
    msg=$(LC_ALL=C timeout 10 stat -c %n -- "$A/x.lock" 2>&1)
    MS=$(ms_since "$t0")
    like "$msg" "No such file or directory" "$label: the lost holder's stat of x.lock right after an EIO: ENOENT"
    cmp_ok "$MS" -lt $((NET_MS / 2)) "$label: ... at once, without waiting for the server (${MS} ms)"
    : >"$B/tmp.B"
    timed link "$B/tmp.B" "$B/x.lock"
    is "$R" EIO "$label: server down: hostB's link() onto hostA's x.lock answers EIO, not EEXIST"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "$label: ... within the network timeout (${MS} ms)"
    timed excl "$B/x.lock"
    is "$R" EIO "$label: server down: hostB's O_EXCL create of x.lock answers EIO"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "$label: ... within the network timeout (${MS} ms)"

    # The lost lock: heartbeats and writes through it fail; its name is gone.
    is "$(fsop1 utime "$xfd")" ESTALE "$label: touch of the lost x.lock through its descriptor: ESTALE"
    is "$(fsop1 write "$xfd" more)" ESTALE "$label: write to the lost x.lock through its descriptor: ESTALE"
    # For the lost holder's uid its name is gone (ENOENT, as its rm would
    # answer), not EIO: a late rm retried on EIO would, once the server is
    # back, release whatever lock this uid took here since (design.md).
    is "$(fsop1 lstat "$A/x.lock")" ENOENT "$label: the lost holder's uid finds x.lock gone while the server is down (ENOENT, not EIO)"
    is "$(fsop1 unlink "$A/x.lock")" ENOENT "$label: ... and its late rm of x.lock answers ENOENT, deleting nothing"

    server_restart_or_bail
    # hostA reconnects after its back-off (at most 2 s).
    ok "$label: server back: hostA takes a new lock again" wait_until 15 takes "$A/n.lock"
    ok "$label: nothing attempted during the outage was granted: y.lock" gone "$A/y.lock"
    ok "$label: nothing attempted during the outage was granted: m.lock" gone "$A/m.lock"

    # hostB gets x.lock once the backend lets go of hostA's lease (tinystore:
    # its record expires; LDAP: dds expires the entry, or the stale rules
    # let hostB break it), or hostA releases the lease it lost.  Every time hostB is granted it, hostA must
    # already show its own lock lost.
    local granted=0 double=0
    b_takes_x() {
        takes "$B/x.lock" 'hostB\n' || return 1
        granted=1
        [[ $(state_of "$xfd") == held ]] && double=1
        return 0
    }
    ok "$label: hostB takes x.lock after the restart" wait_until 20 b_takes_x
    is "$double" 0 "$label: hostA did not show x.lock held when hostB was granted it"
    fb=$(xattr "$B/x.lock" user.lockfs.fence)
    fence_gt "$fb" "$fa" "$label: hostB's fence is larger than hostA's, across the server restart"
    is "$(state_of "$xfd")" lost "$label: hostA still shows its x.lock lost, not held"
    ok "$label: hostB's status: x.lock held by hostB" held_by "$B" x.lock hostB "$fb"
    local held_lines
    held_lines=$( (status_line x.lock "$A"; status_line x.lock "$B") | grep -c ' state=held .*host=hostA ')
    is "$held_lines" 0 "$label: one holder: neither mount's status says hostA holds x.lock"
    is "$(fsop1 unlink "$A/x.lock")" ENOENT "$label: hostA's late rm of its lost lock answers ENOENT"
    ok "$label: hostA now sees hostB holding x.lock" wait_until 10 held_by "$A" x.lock hostB "$fb"
    is "$(xattr "$B/x.lock" user.lockfs.fence)" "$fb" "$label: hostB's lock untouched (same fence)"
    is "$(timeout 10 cat -- "$B/x.lock")" hostB "$label: hostB's content untouched"
    if [[ $label == *no-dds* ]]; then
        # No server expiry: hostA lets go of the lease it lost once the
        # server answers, or hostB breaks the entry by the stale rules.
        removed() {
            log_has 'released x\.lock .*lost here earlier' "$log_a" || log_has 'broke stale lock x\.lock' "$log_b"
        }
        ok "$label: hostA released its lost entry, or hostB broke it as stale (logged)" removed
    fi

    close_fd "$xfd_num"
    rm -f "$A/n.lock" "$B/x.lock" "$B/tmp.B"
    lockfs_stop "$pid_a" || fail "$label: stop hostA's mount"
    lockfs_stop "$pid_b" || fail "$label: stop hostB's mount"
}

if [[ $LOCKFS_BACKEND == ldap ]]; then
    long_outage "ldap, dynamic entries"
    long_outage "ldap, no-dds (stale rules)" ldap_dynamic=no
else
    long_outage "$LOCKFS_BACKEND"
fi

# ---------------------------------------------------------------- 2. hung server

# A longer lease here: ttl/2 = 5 s leaves room for the outage, and its loss
# (0.8 ttl after the last renewal) is far from a renewal after it.
TTL_S_MS=10000
lockfs_start_or_bail -o host=hostS -o ttl=10s -o network_timeout=1s
S=$MNT
LOG_S=$LOCKFS_LOG
lockfs_start_or_bail -o host=hostB -o ttl=10s -o network_timeout=1s
B=$MNT

ok "hung: hostS takes h.lock" takes "$S/h.lock"
fh=$(xattr "$S/h.lock" user.lockfs.fence)
ok "hung: hostB sees it" wait_until 10 held_by "$B" h.lock hostS "$fh"
t0=$(date +%s%N)
server_pause
timed excl "$S/i.lock"
is "$R" EIO "hung server: O_EXCL create answers EIO"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "hung server: ... within the network timeout (${MS} ms)"
timed excl "$B/h.lock"
is "$R" EIO "hung server: hostB's create of hostS's h.lock answers EIO, not EEXIST"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "hung server: ... within the network timeout (${MS} ms)"
server_resume
t_back=$(date +%s%N)
outage_ms=$(((t_back - t0) / 1000000))
cmp_ok "$outage_ms" -lt $((TTL_S_MS / 2)) "hung server: the outage (${outage_ms} ms) was shorter than ttl/2"
ok "hung server back: hostS renews h.lock again" wait_until 15 renewed_since "$S" h.lock "$t_back" "$TTL_S_MS"
is "$(state_of "$S/h.lock")" held "hung server back: h.lock still held"
is "$(xattr "$S/h.lock" user.lockfs.fence)" "$fh" "hung server back: same fence"
is "$(fsop1 utime "$S/h.lock")" OK "hung server back: a heartbeat works"
nok "hung server back: nothing was lost" log_has 'lost h\.lock' "$LOG_S"
is "$(fsop1 excl "$B/h.lock")" EEXIST "hung server back: hostB's create of h.lock answers EEXIST"
ok "hung server back: new acquisitions work" wait_until 10 takes "$S/i.lock"
ok "hung server back: i.lock is listed on hostB" wait_until 10 held_by "$B" i.lock hostS
rm -f "$S/h.lock" "$S/i.lock"

# ---------------------------------------------------------------- 3. quick restart

ok "quick restart: hostS takes k.lock" takes "$S/k.lock"
fk=$(xattr "$S/k.lock" user.lockfs.fence)
open_fd "$S/k.lock"
kfd=$FD_PATH kfd_num=$FD_NUM
ok "quick restart: hostB sees it" wait_until 10 held_by "$B" k.lock hostS "$fk"
t0=$(date +%s%N)
server_stop
server_restart_or_bail
t_back=$(date +%s%N)
outage_ms=$(((t_back - t0) / 1000000))
cmp_ok "$outage_ms" -lt $((TTL_S_MS / 2)) "quick restart: stopped and restarted within ttl/2 (${outage_ms} ms)"

# Until hostS either renews k.lock after the restart or shows it lost, hostB
# keeps trying to take it: it must never be granted while hostS shows held.
double=0 b_got=0
settled() {
    renewed_since "$S" k.lock "$t_back" "$TTL_S_MS" && return 0
    is_lost "$kfd" && return 0
    if takes "$B/k.lock"; then
        b_got=1
        [[ $(state_of "$kfd") == held ]] && double=1
    fi
    return 1
}
ok "quick restart: hostS renews k.lock or finds it lost" wait_until 20 settled
is "$double" 0 "quick restart: hostB was never granted k.lock while hostS showed it held"
if [[ $LOCKFS_BACKEND == ldap || $LOCKFS_BACKEND == etcd ]]; then
    # The entry is in the database (etcd: the key and its lease, on every
    # member's disk): a renewal after the restart keeps it.
    B_NAME=$LOCKFS_BACKEND
    [[ $B_NAME == ldap ]] && B_NAME=LDAP
    is "$(state_of "$S/k.lock")" held "quick restart, $B_NAME: k.lock still held"
    is "$b_got" 0 "quick restart, $B_NAME: hostB was not granted k.lock"
    is "$(xattr "$S/k.lock" user.lockfs.fence)" "$fk" "quick restart, $B_NAME: same fence"
    is "$(fsop1 utime "$S/k.lock")" OK "quick restart, $B_NAME: a heartbeat works"
    nok "quick restart, $B_NAME: nothing was lost" log_has 'lost k\.lock' "$LOG_S"
    is "$(fsop1 excl "$B/k.lock")" EEXIST "quick restart, $B_NAME: hostB's create of k.lock answers EEXIST"
    rm -f "$S/k.lock"
else
    # tinystore forgets every lease when it restarts (lockfs.conf(5)).
    ok "quick restart, tinystore: hostS shows k.lock lost (leases live in the server's memory)" \
        wait_until 10 is_lost "$kfd"
    ok "quick restart, tinystore: hostS logged the loss" log_has 'lost k\.lock' "$LOG_S"
    is "$(fsop1 utime "$kfd")" ESTALE "quick restart, tinystore: touch of the lost k.lock through its descriptor: ESTALE"
    b_takes_k() {
        takes "$B/k.lock" || [[ $b_got == 1 && $(status_field "$(status_line k.lock "$B")" host) == hostB ]]
    }
    ok "quick restart, tinystore: hostB can take k.lock now" wait_until 20 b_takes_k
    fb=$(xattr "$B/k.lock" user.lockfs.fence)
    fence_gt "$fb" "$fk" "quick restart, tinystore: with a larger fence"
    is "$(state_of "$kfd")" lost "quick restart, tinystore: hostS still shows its k.lock lost"
    is "$(fsop1 unlink "$S/k.lock")" ENOENT "quick restart, tinystore: hostS's late rm answers ENOENT"
    ok "quick restart, tinystore: hostB still holds k.lock" held_by "$B" k.lock hostB "$fb"
    rm -f "$B/k.lock"
fi
close_fd "$kfd_num"
ok "quick restart: new acquisitions work" wait_until 10 takes "$S/l.lock"
rm -f "$S/l.lock"

# ---------------------------------------------------------------- 4. status while hung

# The first reads after the server hangs, on a mount with a live connection
# to it.  One read is one wait for the server: the network timeout, plus
# 900 ms for cat and a loaded machine.
ok "hung, status: hostS takes s.lock" takes "$S/s.lock"
run 20 cat "$S/.lockfs/status"
server_pause
run 30 cat "$S/.lockfs/status"
status_ms=$ELAPSED_MS
run 30 ls -- "$S"
ls_ms=$ELAPSED_MS
server_resume
like "$OUT" 's\.lock' "hung, status: ls still lists this mount's own lock"
cmp_ok "$status_ms" -le $((NET_MS + 900)) \
    "hung, status: cat .lockfs/status answered within about the network timeout (${status_ms} ms)"
cmp_ok "$ls_ms" -le $((NET_MS + 900)) "hung, status: ls of the mount answered within about the network timeout (${ls_ms} ms)"
# A release while lockfs still backs off from the server answers EIO and
# lets the lock go (part 7); either way, once lockfs is connected again the
# name is free: this mount takes it anew.
releases() { [[ $(fsop1 unlink "$1") == @(OK|ENOENT) ]]; }
ok "hung, status: server back: s.lock can be released" wait_until 15 releases "$S/s.lock"
ok "hung, status: ... and taken again" wait_until 15 takes "$S/s.lock"
rm -f "$S/s.lock"

# ---------------------------------------------------------------- 5. late renewal

# The server is stopped (SIGSTOP) until hostP declares p.lock lost.  The
# renewals hostP sent meanwhile and gave up on wait in the server's socket;
# run again, the server may still apply them and keep the entry another
# ttl, held for a holder that has been told it lost it and that nobody will
# unlink.  hostP lets go of such a lease once ttl has passed since its last
# renewal that succeeded: hostQ takes p.lock within about a renewal round
# of the server's return, not a ttl later.
pair_holding "late renewal" hostP hostQ 3s p.lock
P=$PAIR_A LOG_P=$PAIR_LOG Q=$PAIR_B fp=$PAIR_FENCE
open_fd "$P/p.lock"
pfd=$FD_PATH pfd_num=$FD_NUM
server_pause
ok "late renewal: hostP declares p.lock lost while the server is stopped" wait_until 10 is_lost "$pfd"
server_resume
t_back=$(date +%s%N)
ok "late renewal: hostQ takes p.lock once the server is back" wait_until 10 takes "$Q/p.lock"
back_ms=$(ms_since "$t_back")
cmp_ok "$back_ms" -le 2000 "late renewal: ... within 2 s of the server's return, less than ttl (${back_ms} ms)"
fence_gt "$(xattr "$Q/p.lock" user.lockfs.fence)" "$fp" "late renewal: with a larger fence"
is "$(state_of "$pfd")" lost "late renewal: hostP still shows its p.lock lost"
is "$(fsop1 unlink "$P/p.lock")" ENOENT "late renewal: hostP's late rm answers ENOENT"
ok "late renewal: hostQ still holds p.lock" held_by "$Q" p.lock hostQ
close_fd "$pfd_num"
rm -f "$Q/p.lock"

# ---------------------------------------------------------------- 6. late release

# A shell takes r.lock on hostP (set -C) and waits; the server is stopped
# until hostP declares it lost; back, another process takes r.lock on
# hostP.  The shell, not told, then removes r.lock at the end of its work:
# that is its late release, and it must not release the new holder's lock.
mkfifo "$TESTDIR/go6"
exec {go6}<>"$TESTDIR/go6"
bash -c 'set -C; echo $$ >"$1" || exit 1; read -r _ <"$2"; "$3" "$4" unlink "$1" >"$5"' _ \
    "$P/r.lock" "$TESTDIR/go6" "$PYTHON" "$TESTLIB/fsop.py" "$TESTDIR/late6.out" &
late6=$!
ok "late release: a shell on hostP takes r.lock" wait_until 10 held_by "$P" r.lock hostP
open_fd "$P/r.lock"
rfd=$FD_PATH rfd_num=$FD_NUM
server_pause
ok "late release: hostP declares r.lock lost while the server is stopped" wait_until 10 is_lost "$rfd"
server_resume
ok "late release: back, another process takes r.lock on hostP" wait_until 10 takes "$P/r.lock"
fr=$(xattr "$P/r.lock" user.lockfs.fence)
echo go >&"$go6"
wait "$late6"
is "$(cat "$TESTDIR/late6.out")" ENOENT "late release: the shell's rm of r.lock answers ENOENT"
is "$(xattr "$P/r.lock" user.lockfs.fence)" "$fr" "late release: ... and the new holder keeps r.lock (same fence)"
ok "late release: ... logged" log_has "removed r\.lock, whose lock of pid $late6 this mount lost" "$LOG_P"
is "$(fsop1 unlink "$P/r.lock")" OK "late release: the new holder's own rm releases it"
close_fd "$rfd_num"
exec {go6}>&-

# 6b. The same, with a short hold by another process between the loss and the
# lock the late rm meets: the lost holder's rm may come seconds late, after
# several grants, and must not release any of them (the fault suite found a
# dotlockfile -u, 2.6 s after its loss, releasing the second grant since).
mkfifo "$TESTDIR/go6b"
exec {go6b}<>"$TESTDIR/go6b"
bash -c 'set -C; echo $$ >"$1" || exit 1; read -r _ <"$2"; "$3" "$4" unlink "$1" >"$5"' _ \
    "$P/r.lock" "$TESTDIR/go6b" "$PYTHON" "$TESTLIB/fsop.py" "$TESTDIR/late6b.out" &
late6b=$!
ok "late release after a short hold: a shell on hostP takes r.lock" wait_until 10 held_by "$P" r.lock hostP
open_fd "$P/r.lock"
rfd=$FD_PATH rfd_num=$FD_NUM
server_pause
ok "late release after a short hold: hostP declares r.lock lost" wait_until 10 is_lost "$rfd"
server_resume
ok "late release after a short hold: back, another process takes r.lock" wait_until 10 takes "$P/r.lock"
is "$(fsop1 unlink "$P/r.lock")" OK "late release after a short hold: ... and lets it go"
ok "late release after a short hold: a third process takes r.lock" wait_until 10 takes "$P/r.lock"
fr=$(xattr "$P/r.lock" user.lockfs.fence)
echo go >&"$go6b"
wait "$late6b"
is "$(cat "$TESTDIR/late6b.out")" ENOENT "late release after a short hold: the shell's rm of r.lock answers ENOENT"
is "$(xattr "$P/r.lock" user.lockfs.fence)" "$fr" "late release after a short hold: ... and the third holder keeps r.lock"
is "$(fsop1 unlink "$P/r.lock")" OK "late release after a short hold: the third holder's own rm releases it"
close_fd "$rfd_num"
exec {go6b}>&-

# ---------------------------------------------------------------- 7. release while hung

# A holder's rm while the server hangs answers EIO (the release did not
# reach it), and the lock is let go all the same: kept, it would be renewed
# for a holder that is done with it, and tools do not retry a failed rm.
# Not renewed any more, it is released as soon as the server answers: a ttl
# of 20 s shows that another mount gets it by that release, not by expiry.
pair_holding "release while hung" hostU hostV 20s u.lock
U=$PAIR_A LOG_U=$PAIR_LOG V=$PAIR_B fu=$PAIR_FENCE
server_pause
t_stop=$(date +%s%N)
timed unlink "$U/u.lock"
is "$R" EIO "release while hung: hostU's rm of u.lock answers EIO"
cmp_ok "$MS" -le "$EIO_BOUND_MS" "release while hung: ... within the network timeout (${MS} ms)"
ok "release while hung: ... and says it lets the lock go" log_has "cannot release u\.lock: .*the lock is let go" "$LOG_U"
server_resume
t_back=$(date +%s%N)
ok "release while hung: hostV takes u.lock once the server is back" wait_until 10 takes "$V/u.lock"
back_ms=$(ms_since "$t_back") held_ms=$(ms_since "$t_stop")
# Run out, it would be free no sooner than ttl less a renew interval (20 s
# less 6.7 s) after the server stopped.
cmp_ok "$held_ms" -lt 12000 "release while hung: ... released, not run out: ${held_ms} ms after the server stopped, ttl 20 s"
fence_gt "$(xattr "$V/u.lock" user.lockfs.fence)" "$fu" "release while hung: ... with a larger fence"
# Released by the mount once the server answered, or (LDAP) by the first
# release, which the server applied when it ran again.
ok "release while hung: hostU logged the release" \
    wait_until 5 log_has "u\.lock \(fence $fu\), unlinked here while the backend did not answer" "$LOG_U"
is "$(fsop1 unlink "$U/u.lock")" ENOENT "release while hung: hostU's rm again answers ENOENT: it is hostV's now"
ok "release while hung: hostV still holds u.lock" held_by "$V" u.lock hostV
rm -f "$V/u.lock"

# ---------------------------------------------------------------- 8. a hold's loss

# A lockfsctl hold on hostP; the server is stopped until hostP declares the
# lock lost.  The hold stops its command (exit 75) and unlinks its lost
# name (only a name that is still its inode and fence), so that once the
# server is back a process on hostP takes the lock again.
lockfsctl_or_bail
rm -f "$TESTDIR/h8.pid"
timeout -k 3 40 "$CTL" hold "$P/h.lock" -- sh -c 'echo $$ >"$1"; exec sleep 60' _ "$TESTDIR/h8.pid" \
    2>"$TESTDIR/h8.err" &
h8=$!
ok "a hold's loss: lockfsctl hold on hostP takes h.lock" wait_until 10 test -s "$TESTDIR/h8.pid"
open_fd "$P/h.lock"
hfd=$FD_PATH hfd_num=$FD_NUM
server_pause
ok "a hold's loss: hostP declares h.lock lost while the server is stopped" wait_until 10 is_lost "$hfd"
wait_until 10 bash -c '! kill -0 "$1" 2>/dev/null' _ "$h8"
wait "$h8"
is "$?" 75 "a hold's loss: the hold exits 75 (lost)"
like "$(cat "$TESTDIR/h8.err")" "the lock $P/h\\.lock was lost" "a hold's loss: ... saying so"
server_resume
ok "a hold's loss: back, a process on hostP takes h.lock (the lost name went with the hold)" \
    wait_until 10 takes "$P/h.lock"
close_fd "$hfd_num"
rm -f "$P/h.lock"

# ---------------------------------------------------------------- 9. unmount while hung

# hostU holds ten locks and is stopped (SIGTERM) while the server hangs:
# an unmount releases nothing (the locks are their holders', 45-restart.t),
# so it asks the hung server nothing and exits at once; without a lockfs of
# hostU to take them back, the locks run out with their leases.
lockfs_start_or_bail -o host=hostU -o ttl=12s -o network_timeout=1s
U=$MNT pid_u=$LOCKFS_PID log_u=$LOCKFS_LOG
n=0
for i in 0 1 2 3 4 5 6 7 8 9; do takes "$U/u$i.lock" && n=$((n + 1)); done
is "$n" 10 "unmount while hung: hostU takes ten locks"
server_pause
t_stop=$(date +%s%N)
lockfs_stop "$pid_u"
stop_ms=$(ms_since "$t_stop")
cmp_ok "$stop_ms" -le 5000 "unmount while hung: hostU's lockfs exits within 5 s, not a network timeout per lock (${stop_ms} ms)"
ok "unmount while hung: ... saying what it left" log_has '10 locks left to their holders: .*without one they run out with their leases' "$log_u"
server_resume
lockfs_start_or_bail -o host=hostW -o ttl=12s -o network_timeout=1s
W=$MNT
all_taken() {
    local i
    for i in 0 1 2 3 4 5 6 7 8 9; do [[ -e $TESTDIR/w$i.ok ]] || { takes "$W/u$i.lock" && : >"$TESTDIR/w$i.ok"; } || return 1; done
}
ok "unmount while hung: hostW takes all ten once their leases ran out" wait_until 40 all_taken
for i in 0 1 2 3 4 5 6 7 8 9; do rm -f "$W/u$i.lock"; done

done_testing
