#!/bin/bash
# 76-journald.t — with stderr connected to the journal (as under a systemd
# unit), lockfs logs through GLib's journald writer (lockfs(8) LOGGING): each
# lock event is one entry with PRIORITY from its level (a break is a warning,
# 4; a grant info, 6), SYSLOG_IDENTIFIER=lockfs and the fields LOCKFS_EVENT,
# LOCKFS_LOCK, LOCKFS_FENCE, LOCKFS_HOLDER (LOCKFS_BREAKER for breaks), the
# lock's exact bytes in LOCKFS_LOCK and MESSAGE escaped; nothing is written
# to the stream as text besides.  A mount that detaches from such a stderr
# goes on logging to the journal.
#
# The journal is a real systemd-journald, started by this file in a private
# mount namespace with a tmpfs on /run (its sockets) and volatile storage,
# so the host's journal, if any, is never touched.  Root only (namespaces).
set -u
if [[ -z ${LOCKFS_JOURNAL_NS:-} ]]; then
    why=''
    JOURNALD=''
    for j in /usr/lib/systemd/systemd-journald /lib/systemd/systemd-journald; do
        [[ -x $j ]] && JOURNALD=$j && break
    done
    if ((EUID != 0)); then
        why="a journald of its own needs a mount namespace, which needs root; this pass runs as uid $EUID"
    elif [[ -z $JOURNALD ]]; then
        why="systemd-journald is not installed (apt-get install systemd; scripts/setup-debian does)"
    elif ! command -v systemd-cat >/dev/null || ! command -v journalctl >/dev/null; then
        why="systemd-cat or journalctl missing (apt-get install systemd)"
    elif [[ ! -f /etc/systemd/journald.conf ]]; then
        why="/etc/systemd/journald.conf is missing: no file to bind this test's journald settings over"
    elif ! unshare -m --propagation private true 2>/dev/null; then
        why="unshare -m fails here: no private mount namespace for a journald of its own"
    fi
    if [[ -n $why ]]; then
        printf '1..0 # SKIP %s\n' "$why"
        exit 0
    fi
    export JOURNALD LOCKFS_JOURNAL_NS=1
    exec unshare -m --propagation private bash "$0" "$@"
fi

. "$(dirname "$0")/../lib/mount.sh"

# ---------------------------------------------------------------- a journal of our own

mount -t tmpfs -o mode=0755 lockfs-test-run /run || BAIL_OUT "cannot mount a tmpfs on /run in the namespace"
mkdir -p /run/systemd/journal /run/lockfs-test
printf '[Journal]\nStorage=volatile\nRateLimitBurst=0\nForwardToSyslog=no\nForwardToKMsg=no\nForwardToConsole=no\nForwardToWall=no\nReadKMsg=no\n' \
    >/run/lockfs-test/journald.conf
mount --bind /run/lockfs-test/journald.conf /etc/systemd/journald.conf ||
    BAIL_OUT "cannot bind a journald.conf in the namespace"
"$JOURNALD" >"$TESTDIR/journald.out" 2>&1 &
JPID=$!
at_exit 'kill "$JPID" 2>/dev/null; wait "$JPID" 2>/dev/null'
wait_until 10 test -S /run/systemd/journal/stdout ||
    BAIL_OUT "systemd-journald did not come up: $(tail -n 3 "$TESTDIR/journald.out")"

# lockfs with stderr (and stdout) connected to the journal's stream.
REAL_BIN=$LOCKFS_BIN
printf '#!/bin/sh\nexec systemd-cat -t lockfs-stream -- %q "$@"\n' "$REAL_BIN" >/run/lockfs-test/lockfs
chmod 0755 /run/lockfs-test/lockfs
LOCKFS_BIN=/run/lockfs-test/lockfs

# entries MATCH...: the journal's entries matching (journalctl matches), one
# JSON object a line.
entries() { timeout 10 journalctl -D /run/log/journal -o json --no-pager "$@" 2>/dev/null; }
count() { entries "$@" | grep -c .; }
has_entry() { (($(count "$@") >= 1)); }
# field NAME MATCH...: NAME of the one entry matching, as text (bytes that
# are not UTF-8 as \xNN), or "<N entries>".
field() {
    local name=$1; shift
    entries "$@" | "$PYTHON" -c '
import json, sys
es = [json.loads(l) for l in sys.stdin if l.strip()]
if len(es) != 1:
    print("<%d entries>" % len(es)); sys.exit()
v = es[0].get(sys.argv[1])
if isinstance(v, list):  # bytes journalctl does not show as text
    v = "".join(chr(b) if 32 <= b < 127 else "\\x%02x" % b for b in v)
print("<none>" if v is None else v)' "$name"
}

user=$(id -un)
host=$LOCKFS_TEST_HOST

lockfs_start_or_bail
L=$MNT
ok "the mount's start is logged to the journal" \
    wait_until 10 has_entry SYSLOG_IDENTIFIER=lockfs _PID="$LOCKFS_PID"
M=(SYSLOG_IDENTIFIER=lockfs _PID="$LOCKFS_PID" "MESSAGE=mounted $L (backend $LOCKFS_BACKEND)")
is "$(field PRIORITY "${M[@]}")" 6 "'mounted $L' is info (PRIORITY 6)"
is "$(field LOCKFS_LOCK "${M[@]}")" '<none>' "... with no empty LOCKFS_LOCK field"

run 10 bash -c 'set -C; echo $$ >"$1"' _ "$L/a.lock"
is "$RC" 0 "take a.lock"
tpid=$(cat "$L/a.lock")
fa=$(xattr "$L/a.lock" user.lockfs.fence)
run 10 rm -f "$L/a.lock"
is "$RC" 0 "release a.lock"
G=(LOCKFS_EVENT=grant LOCKFS_LOCK=a.lock)
ok "the grant is an entry (LOCKFS_EVENT=grant LOCKFS_LOCK=a.lock)" wait_until 10 has_entry "${G[@]}"
is "$(field PRIORITY "${G[@]}")" 6 "grant: PRIORITY 6 (info)"
is "$(field SYSLOG_IDENTIFIER "${G[@]}")" lockfs "grant: SYSLOG_IDENTIFIER=lockfs"
is "$(field LOCKFS_FENCE "${G[@]}")" "$fa" "grant: LOCKFS_FENCE is the lock's fence ($fa)"
is "$(field LOCKFS_HOLDER "${G[@]}")" "$host:$tpid uid=$EUID user=$user" "grant: LOCKFS_HOLDER"
is "$(field MESSAGE "${G[@]}")" "granted a.lock to $host:$tpid (user $user, uid $EUID), fence $fa" "grant: MESSAGE"
R=(LOCKFS_EVENT=release LOCKFS_LOCK=a.lock)
ok "the release is an entry" wait_until 10 has_entry "${R[@]}"
is "$(field PRIORITY "${R[@]}")" 6 "release: PRIORITY 6"
is "$(field LOCKFS_FENCE "${R[@]}")" "$fa" "release: LOCKFS_FENCE $fa"

run 10 mkdir "$L/b.lock"
fb=$(xattr "$L/b.lock" user.lockfs.fence)
run 10 bash -c 'printf "b.lock\n" >"$1"' _ "$L/.lockfs/break"
is "$RC" 0 "break b.lock through .lockfs/break"
B=(LOCKFS_EVENT=break LOCKFS_LOCK=b.lock)
ok "the break is an entry" wait_until 10 has_entry "${B[@]}"
is "$(field PRIORITY "${B[@]}")" 4 "break: PRIORITY 4 (warning), not info"
is "$(field LOCKFS_FENCE "${B[@]}")" "$fb" "break: LOCKFS_FENCE $fb"
like "$(field LOCKFS_BREAKER "${B[@]}")" "^$host:[0-9]+ uid=$EUID user=$user\$" "break: LOCKFS_BREAKER"

esc=$'e\033[31m.lock'
run 10 mkdir "$L/$esc"
is "$RC" 0 "take a name with an escape sequence"
E=(LOCKFS_EVENT=grant "LOCKFS_LOCK=$esc")
ok "its grant is an entry, found by the exact name" wait_until 10 has_entry "${E[@]}"
is "$(field LOCKFS_LOCK "${E[@]}")" 'e\x1b[31m.lock' "LOCKFS_LOCK keeps the exact bytes"
msg=$(entries "${E[@]}" | "$PYTHON" -c 'import json,sys; print(json.loads(sys.stdin.readline())["MESSAGE"])')
like "$msg" '^granted e.*\.lock to ' "MESSAGE is text ($msg)"
unlike "$msg" $'\033' "MESSAGE carries no raw ESC"

is "$(count SYSLOG_IDENTIFIER=lockfs-stream)" 0 "nothing went to the stream as text"

# Detached: the journal's socket outlives the fork.
D=$TESTDIR/detached
mkdir "$D"
mkdir "$TESTDIR/dstate"
run 20 "$LOCKFS_BIN" "$D" -o "state_dir=$TESTDIR/dstate,host=$host${BACKEND_OPTS:+,$BACKEND_OPTS}" \
    ${BACKEND_CONFIG:+--config "$BACKEND_CONFIG"}
is "$RC" 0 "a detached mount starts"
at_exit 'umount "$D" 2>/dev/null'
if wait_until 10 is_fuse_mounted "$D"; then
    run 10 mkdir "$D/d.lock"
    is "$RC" 0 "detached: take d.lock"
    ok "detached: the grant reaches the journal" wait_until 10 has_entry LOCKFS_EVENT=grant LOCKFS_LOCK=d.lock
    is "$(field PRIORITY LOCKFS_EVENT=grant LOCKFS_LOCK=d.lock)" 6 "detached: PRIORITY 6"
    run 10 rmdir "$D/d.lock"
    run 10 umount "$D"
    is "$RC" 0 "detached: unmounted"
else
    fail "the detached mount did not come up"
    skip "no detached mount" 4
fi

done_testing
