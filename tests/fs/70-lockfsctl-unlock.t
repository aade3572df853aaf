#!/bin/bash
# 70-lockfsctl-unlock.t — lockfsctl unlock [--yes] PATH: shows the holder,
# its age, the holder's start time and clock skew, asks "break it? [y/N]" on
# a terminal, and breaks the lock (logged by lockfs as a break).  Without
# --yes and without a terminal it refuses in one line, exit 1.  Exit 0
# broken, 1 refused/declined/not held, 2 error.
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

lockfs_start_or_bail
L=$MNT
take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$1"; }
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }

# No terminal, no --yes: refused in one line, nothing broken.
take "$L/a.lock"
fa=$(xattr "$L/a.lock" user.lockfs.fence)
run 10 "$CTL" unlock "$L/a.lock"
is "$RC" 1 "without a terminal and without --yes: exit 1"
is "$(grep -c . <<<"$ERR")" 1 "one line on stderr"
like "$ERR" 'not a terminal.*--yes' "saying to use --yes"
is "$OUT" '' "nothing on stdout"
is "$(xattr "$L/a.lock" user.lockfs.fence)" "$fa" "the lock is still held, same fence"

# A terminal, answer n: declined, exit 1.
with_pty n "$CTL" unlock "$L/a.lock"
is "$RC" 1 "on a terminal, answering n: exit 1"
like "$OUT" 'break it\? \[y/N\]' "it asked 'break it? [y/N]'"
like "$OUT" "holder: +$LOCKFS_TEST_HOST:[0-9]+ \\(user $(id -un)" "it showed the holder host:pid and user"
like "$OUT" "acquired: +[0-9T:-]+Z, [0-9]+s ago \\(by the $LOCKFS_BACKEND backend" "it showed the age by the backend's time"
like "$OUT" 'started: ' "it showed the holder's start"
if [[ $LOCKFS_BACKEND == local ]]; then
    like "$OUT" 'clock skew: none \(local backend\)' "it showed the clock skew"
else
    like "$OUT" 'clock skew: none seen' "it showed the clock skew"
fi
like "$OUT" "fence: +$fa" "it showed the fence"
is "$(xattr "$L/a.lock" user.lockfs.fence)" "$fa" "declined: the lock is still held"

# A terminal, answer y: broken, exit 0, logged as a break.
with_pty y "$CTL" unlock "$L/a.lock"
is "$RC" 0 "on a terminal, answering y: exit 0"
like "$OUT" "broke $L/a\\.lock" "it says it broke the lock"
ok "the lock is gone" gone "$L/a.lock"
ok "lockfs logged the break" wait_until 5 log_has 'broken.*a\.lock|a\.lock.*broken'

# --yes: no terminal needed.
take "$L/b.lock"
run 10 "$CTL" unlock --yes "$L/b.lock"
is "$RC" 0 "--yes without a terminal: exit 0"
ok "the lock is gone" gone "$L/b.lock"
like "$OUT" "holder: +$LOCKFS_TEST_HOST:" "--yes still shows the holder"
# (held through this mount, so on this machine, although the mount's host
# identity is not this machine's name: lockfsctl looks at the pid)
like "$OUT" 'started: +pid [0-9]+ is not running' "the holder's pid is reported as gone"

# The holder still running: its start time is shown.
bash -c 'set -C; echo $$ > "$1"; exec sleep 20' _ "$L/r.lock" &
rpid=$!
wait_until 5 test -e "$L/r.lock"
run 10 "$CTL" unlock --yes "$L/r.lock"
like "$OUT" "started: +[0-9T:-]+Z \\(pid $rpid, sleep, still running\\)" "a running holder's start time is shown"
kill "$rpid" 2>/dev/null
wait "$rpid" 2>/dev/null

# A relative path, a lock in a subdirectory, a symlink lock and a mkdir lock.
mkdir -p "$L/sub"
take "$L/sub/c.lock"
run 10 bash -c 'cd "$1" && "$2" unlock --yes sub/c.lock' _ "$L" "$CTL"
is "$RC" 0 "a relative path into a subdirectory: exit 0"
ok "the subdirectory's lock is gone" gone "$L/sub/c.lock"
timeout 10 ln -s 12345 "$L/s.lock"
run 10 "$CTL" unlock --yes "$L/s.lock"
is "$RC" 0 "a symlink lock: exit 0"
ok "the symlink lock is gone" gone "$L/s.lock"
timeout 10 mkdir "$L/d.lock"
run 10 "$CTL" unlock --yes "$L/d.lock"
is "$RC" 0 "a mkdir lock: exit 0"
ok "the mkdir lock is gone" gone "$L/d.lock"

# Not held: exit 1.
run 10 "$CTL" unlock --yes "$L/none.lock"
is "$RC" 1 "a lock that is not held: exit 1"
like "$ERR" 'is not held' "saying it is not held"
echo data >"$L/plainfile"
run 10 "$CTL" unlock --yes "$L/plainfile"
is "$RC" 1 "an ordinary file in the mount: exit 1"
like "$ERR" 'not a held lock' "saying it is not a held lock"

# Another user may not break it in a sticky directory (root run only).
if have_user2 && as_user2 test -x "$CTL"; then
    take "$L/p.lock"
    run 10 as_user2 "$CTL" unlock --yes "$L/p.lock"
    is "$RC" 2 "another uid in the sticky root: exit 2"
    like "$ERR" 'cannot break .*p\.lock: (Operation not permitted|Permission denied); only root' "the error names the lock and the refusal"
    isnt "$(fsop1 lstat "$L/p.lock")" ENOENT "the lock is still held"
    rm -f "$L/p.lock"
    # ...but may in a directory it can write without the sticky bit.
    mkdir -m 0777 "$L/open"
    chmod 0777 "$L/open"
    take "$L/open/q.lock"
    run 10 as_user2 "$CTL" unlock --yes "$L/open/q.lock"
    is "$RC" 0 "another uid in a writable, non-sticky directory: exit 0"
    ok "the lock is gone" gone "$L/open/q.lock"
    ok "lockfs logged it as a break" wait_until 5 log_has 'broken.*open/q\.lock'
else
    skip "needs a second uid that can run $CTL ($(user2_skip_reason))" 6
fi

# A plain dot-lock outside lockfs.
mkdir "$TESTDIR/plain"
echo 4000000 >"$TESTDIR/plain/x.lock"
run 10 "$CTL" unlock --yes "$TESTDIR/plain/x.lock"
is "$RC" 0 "a plain dot-lock: exit 0"
like "$OUT" 'plain dot-lock' "it says it is a plain dot-lock"
like "$OUT" 'pid: +4000000 \(from its content\)' "it shows the pid of its content"
ok "the plain dot-lock is gone" test ! -e "$TESTDIR/plain/x.lock"

# Usage.
run 10 "$CTL" unlock
is "$RC" 64 "no PATH: exit 64"
run 10 "$CTL" unlock a.lock b.lock
is "$RC" 64 "two PATHs: exit 64"
run 10 "$CTL" unlock --force "$L/x.lock"
is "$RC" 64 "an unknown option: exit 64"

done_testing
