#!/bin/bash
# 70-lockfsctl-release.t — lockfsctl release --all [--yes] MOUNT frees every
# lock a mount holds, at once (issue 25: stopping lockfs releases nothing).
# On a live mount each lock held through it is broken with its fence, and
# another host's locks are left alone; with nothing mounted the locks
# recorded in state_dir are released at the backend and the record emptied,
# so that the next lockfs of the mount takes nothing back and another host
# gets them at once, not a ttl later.  Confirmation as unlock's; a record
# flock'ed by a running lockfs or a corrupt one is refused and left as it is.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

# with_pty ANSWER CMD...: run CMD on a new pseudo-terminal, type ANSWER and
# Enter once it asks "[y/N]"; sets RC and OUT (everything it wrote).
with_pty() {
    local answer=$1; shift
    OUT=$(timeout -k 3 20 "$PYTHON" - "$answer" "$@" <<'EOF'
import os, pty, select, sys, time
answer = sys.argv[1].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out, asked, deadline = b"", False, time.time() + 15
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if not asked and b"[y/N]" in out:
        os.write(fd, answer + b"\n")
        asked = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
sys.exit(os.waitstatus_to_exitcode(status))
EOF
)
    RC=$?
}

SHARED=0
[[ $LOCKFS_BACKEND == local ]] || SHARED=1
A=$TESTDIR/A
STATE_A=$TESTDIR/stateA
mkdir -p "$A" "$STATE_A"
start_a() { lockfs_start --mnt "$A" --state "$STATE_A" -o host=hostA; }
start_a || BAIL_OUT "cannot mount hostA"
PID_A=$LOCKFS_PID
LOG_A=$LOCKFS_LOG
# What lockfsctl needs to find the record and the backend of a stopped A:
# the options A was mounted with.
CONF=(${BACKEND_CONFIG:+--config "$BACKEND_CONFIG"} -o "$LOCKFS_OPTS")
if ((SHARED)); then
    lockfs_start_or_bail -o host=hostB
    B=$MNT
fi
take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$1"; }
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
fence_of() { xattr "$1" user.lockfs.fence; }

# Usage and --help.
run 10 "$CTL" release "$A"
is "$RC" 64 "release without --all: exit 64"
like "$ERR" 'give --all' "saying to give --all"
run 10 "$CTL" --help
like "$OUT" 'lockfsctl release --all \[--yes\]' "lockfsctl --help lists release"

# ---- a live mount

take "$A/a.lock"
take "$A/b.lock"
fa=$(fence_of "$A/a.lock")
if ((SHARED)); then
    take "$B/c.lock"
    fc=$(fence_of "$B/c.lock")
fi

# No terminal, no --yes: refused in one line, nothing released.
run 10 "$CTL" release --all "$A"
is "$RC" 1 "without a terminal and without --yes: exit 1"
is "$(grep -c . <<<"$ERR")" 1 "one line on stderr"
like "$ERR" 'not a terminal.*--yes' "saying to use --yes"
is "$(fence_of "$A/a.lock")" "$fa" "the lock is still held, same fence"

# A terminal, answer n: the list, the question, nothing released.
with_pty n "$CTL" release --all "$A"
is "$RC" 1 "on a terminal, answering n: exit 1"
like "$OUT" 'release 2 locks\? \[y/N\]' "it asked 'release 2 locks? [y/N]'"
like "$OUT" "a\\.lock +fence $fa +held by hostA:[0-9]+" "it listed a.lock with its fence and holder"
like "$OUT" 'b\.lock +fence' "it listed b.lock"
unlike "$OUT" 'c\.lock' "another host's lock is not listed"
is "$(fence_of "$A/a.lock")" "$fa" "declined: the lock is still held"

# --yes: every lock of A broken, at once free for another host.
run 20 "$CTL" release --all --yes "$A"
is "$RC" 0 "release --all --yes on a live mount: exit 0"
like "$OUT" "released a\\.lock \\(fence $fa\\)" "it says it released a.lock"
like "$OUT" 'released 2 locks' "and counts two"
ok "a.lock is gone" gone "$A/a.lock"
ok "b.lock is gone" gone "$A/b.lock"
ok "lockfs logged the break" wait_until 5 log_has 'broken.*a\.lock|a\.lock.*broken' "$LOG_A"
if ((SHARED)); then
    # (hostB may believe what it saw of a.lock for list_cache, 200 ms; the
    # lease would hold it for ttl, 30 s)
    ok "hostB takes a.lock right after" wait_until 5 takes "$B/a.lock"
    rm -f "$B/a.lock"
    like "$OUT" '1 lock held by other hosts is left alone' "it says another host's lock is left alone"
    is "$(fence_of "$B/c.lock")" "$fc" "hostB's own lock is left alone"
    rm -f "$B/c.lock"
else
    ok "a second process takes a.lock right after" takes "$A/a.lock"
    rm -f "$A/a.lock"
fi
run 10 "$CTL" release --all --yes "$A"
is "$RC" 0 "nothing held: exit 0"
like "$OUT" 'holds no lock; nothing to release' "saying there is nothing to release"

# ---- nothing mounted: the record in state_dir

take "$A/d.lock"
take "$A/e.lock"
fd=$(fence_of "$A/d.lock")
ok "hostA's lockfs stops" lockfs_stop "$PID_A"
REC=$(ls "$STATE_A"/mount*.locks 2>/dev/null | head -n 1)
ok "hostA's record of its locks is in its state_dir" test -s "$REC"
if ((SHARED)); then
    # Stopping released nothing: the lease lives on at the backend.
    nok "hostB is refused d.lock while hostA is stopped" takes "$B/d.lock"
fi

# A running lockfs of the mount holds the record's flock (here flock(1)):
# refused, nothing released.
sum=$(sha256sum <"$REC")
run 20 flock "$REC" "$CTL" release --all --yes "${CONF[@]}" "$A"
is "$RC" 1 "the record in use by another process: exit 1"
like "$ERR" 'a lockfs of .* is running' "saying a lockfs of the mount runs"
is "$(sha256sum <"$REC")" "$sum" "the record is untouched"

# Another state_dir: no record there.
mkdir -p "$TESTDIR/other"
run 20 "$CTL" release --all --yes "${CONF[@]}" -o "state_dir=$TESTDIR/other" "$A"
is "$RC" 1 "no record in the state_dir given: exit 1"
like "$ERR" 'no record of its locks.*state_dir' "saying there is no record and to give state_dir"

run 20 "$CTL" release --all --yes "${CONF[@]}" "$A"
is "$RC" 0 "release --all --yes on a stopped mount: exit 0"
like "$OUT" 'is not mounted; its record .* holds 2 locks' "it says it read the record"
like "$OUT" "released d\\.lock \\(fence $fd\\)" "it released d.lock"
like "$OUT" 'released e\.lock' "it released e.lock"
if ((SHARED)); then
    ok "hostB takes d.lock at once (list_cache), not a ttl later" wait_until 5 takes "$B/d.lock"
    rm -f "$B/d.lock"
fi
run 20 "$CTL" release --all --yes "${CONF[@]}" "$A"
is "$RC" 0 "run again: exit 0"
like "$OUT" 'holds 0 locks.*nothing to release' "the record is empty now"

start_a || BAIL_OUT "cannot mount hostA again"
PID_A=$LOCKFS_PID
ok "the next lockfs of A took nothing back: d.lock is free" gone "$A/d.lock"
ok "e.lock is free" gone "$A/e.lock"
ok "and may be taken" take "$A/d.lock"

# A killed lockfs (kill -9) leaves its dead mount behind: the record is
# released all the same.
take "$A/f.lock"
kill -KILL "$PID_A"
wait_until 10 eval '! _pid_alive "$PID_A"'
_lockfs_reap "$PID_A"
run 20 "$CTL" release --all --yes "${CONF[@]}" "$A"
is "$RC" 0 "after kill -9, its dead mount left: exit 0"
like "$OUT" 'released d\.lock' "it released d.lock"
like "$OUT" 'released f\.lock' "it released f.lock"
if ((SHARED)); then
    ok "hostB takes f.lock at once (list_cache)" wait_until 5 takes "$B/f.lock"
    rm -f "$B/f.lock"
fi
start_a || BAIL_OUT "cannot mount hostA again"
PID_A=$LOCKFS_PID
ok "the next lockfs of A took nothing back: f.lock is free" gone "$A/f.lock"

# ---- a corrupt record: a clear error, the file left as it is

take "$A/d.lock"
ok "hostA's lockfs stops, d.lock held" lockfs_stop "$PID_A"
echo 'G not a record' >>"$REC"
sum=$(sha256sum <"$REC")
run 20 "$CTL" release --all --yes "${CONF[@]}" "$A"
is "$RC" 2 "a corrupt record: exit 2"
is "$(grep -c . <<<"$ERR")" 1 "one line on stderr"
like "$ERR" "${REC//./\\.}:[0-9]+: .*move it aside" "naming the file and line, and what to do"
is "$(sha256sum <"$REC")" "$sum" "the record is untouched"

done_testing
