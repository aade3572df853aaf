#!/bin/bash
# 17-other-uid.t — legacy-clients.md §8.18 and the lockfs policy: heartbeats
# (utimensat NULL, write) only from the holder's uid or root, others get
# EPERM; unlink by another uid follows directory permissions (the default
# dir_mode 1777 is sticky, so it fails) and, where allowed, is a logged
# break.  The holder's own uid always succeeds.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT
U2=$USER2_UID

# --- same uid (always runs) ---
run 10 dotlockfile -l -r 0 "$L/r.lock"
is "$RC" 0 "uid $EUID takes r.lock"
f0=$(xattr "$L/r.lock" user.lockfs.fence)
timeout 10 touch -d '10 min ago' -- "$L/r.lock"
m_old=$(st %Y "$L/r.lock")

if have_user2; then
    run 10 as_user2 touch "$L/r.lock"
    is "$RC" 1 "uid $U2: touch on uid $EUID's lock: rc 1"
    run 10 as_user2 touch -c "$L/r.lock"
    is "$RC" 1 "uid $U2: touch -c: rc 1"
    run 10 as_user2 dotlockfile -t "$L/r.lock"
    is "$RC" 1 "uid $U2: dotlockfile -t: rc 1"
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" utime "$L/r.lock"
    like "$OUT" '^(EPERM|EACCES)$' "uid $U2: utimensat(NULL) -> EPERM/EACCES ($OUT)"
    run 10 as_user2 rm -f "$L/r.lock"
    is "$RC" 1 "uid $U2: rm -f in the sticky 1777 directory: rc 1"
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" unlink "$L/r.lock"
    like "$OUT" '^(EPERM|EACCES)$' "uid $U2: unlink() -> EPERM/EACCES ($OUT)"
    run 10 as_user2 dotlockfile -u "$L/r.lock"
    is "$RC" 1 "uid $U2: dotlockfile -u: rc 1"
    is "$(st %Y "$L/r.lock")" "$m_old" "r.lock's mtime unchanged by the refused heartbeats"
    is "$(xattr "$L/r.lock" user.lockfs.fence)" "$f0" "r.lock still the same acquisition (fence $f0)"
    isnt "$(status_line r.lock)" "" "r.lock still held"

    # A lock whose mode lets everyone write: the kernel permits the open, so
    # the refusal must come from lockfs's heartbeat policy (EPERM).
    r=$( (umask 0; fsop excl "$L/w.lock" 0666 'mine') )
    like "$r" '^OK' "uid $EUID takes w.lock with mode 0666"
    is "$(st %a "$L/w.lock")" 666 "w.lock mode 0666"
    timeout 10 touch -d '10 min ago' -- "$L/w.lock"
    mw=$(st %Y "$L/w.lock")
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" utime "$L/w.lock"
    is "$OUT" EPERM "uid $U2: utimensat(NULL) on a 0666 lock of uid $EUID -> EPERM"
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" write "$L/w.lock" 'theirs' append
    is "${OUT%% *}" EPERM "uid $U2: write to a 0666 lock of uid $EUID -> EPERM"
    is "$(st %Y "$L/w.lock")" "$mw" "w.lock's mtime unchanged"
    is "$(timeout 10 cat -- "$L/w.lock")" mine "w.lock's content unchanged"
    run 10 rm -f "$L/w.lock"
else
    skip "$(user2_skip_reason)" 16
fi

# The holder's uid: heartbeat and release succeed.
t0=$(now)
run 10 touch "$L/r.lock"
is "$RC" 0 "uid $EUID: touch r.lock: rc 0"
cmp_ok "$(st %Y "$L/r.lock")" -ge $((t0 - 1)) "uid $EUID: touch moved mtime"
run 10 dotlockfile -t "$L/r.lock"
is "$RC" 0 "uid $EUID: dotlockfile -t: rc 0"
run 10 rm -f "$L/r.lock"
is "$RC" 0 "uid $EUID: rm -f r.lock: rc 0"
is "$(fsop1 lstat "$L/r.lock")" ENOENT "r.lock released"

# --- a lock held by the second uid ---
if have_user2; then
    run 10 as_user2 dotlockfile -l -r 0 "$L/u.lock"
    is "$RC" 0 "uid $U2 takes u.lock"
    is "$(st %u "$L/u.lock")" "$U2" "u.lock shows its holder's uid $U2"
    like "$(status_line u.lock)" " uid=$U2 " "status shows uid=$U2"
    if ((EUID == 0)); then
        timeout 10 touch -d '10 min ago' -- "$L/u.lock"
        t0=$(now)
        run 10 touch -c "$L/u.lock"
        is "$RC" 0 "root may heartbeat uid $U2's lock"
        cmp_ok "$(st %Y "$L/u.lock")" -ge $((t0 - 1)) "root's heartbeat moved mtime"
        nlog=$(wc -l <"$LOCKFS_LOG")
        run 10 rm -f "$L/u.lock"
        is "$RC" 0 "root may remove uid $U2's lock in the sticky directory"
        is "$(fsop1 lstat "$L/u.lock")" ENOENT "u.lock is gone"
        ok "the removal by another uid is logged as a break" \
            bash -c 'tail -n +$(($2 + 1)) "$1" | grep -F "u.lock" | grep -Eqi "break|broke"' _ "$LOCKFS_LOG" "$nlog"
    fi

    # A non-sticky directory: another uid's unlink is allowed — and a break.
    mkdir "$L/open" && chmod 0777 "$L/open"
    is "$(st %a "$L/open")" 777 "directory open/ has mode 0777 (not sticky)"
    run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/open/o.lock"
    is "$RC" 0 "uid $EUID takes open/o.lock"
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" utime "$L/open/o.lock"
    like "$OUT" '^(EPERM|EACCES)$' "uid $U2: heartbeat on open/o.lock still refused ($OUT)"
    nlog=$(wc -l <"$LOCKFS_LOG")
    run 10 as_user2 rm -f "$L/open/o.lock"
    is "$RC" 0 "uid $U2: rm -f open/o.lock in a 0777 directory: rc 0 (directory permissions allow it)"
    is "$(fsop1 lstat "$L/open/o.lock")" ENOENT "open/o.lock is gone"
    is "$(status_line open/o.lock)" "" "open/o.lock no longer held"
    ok "the removal by uid $U2 is logged as a break" \
        bash -c 'tail -n +$(($2 + 1)) "$1" | grep -F "o.lock" | grep -Eqi "break|broke"' _ "$LOCKFS_LOG" "$nlog"
else
    skip "$(user2_skip_reason)" 16
fi

done_testing
