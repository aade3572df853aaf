#!/bin/bash
# 75-audit-log.t — the audit trail (lockfs(8) LOGGING): every grant and
# every release is one info line naming the lock, its holder (host:pid, user,
# uid) and its fence, the fence the lock file shows; a break stays a warning.
# With audit=no the grant and release lines go, the break's warning stays.
# Names reach the log escaped (a control character never reaches the log
# raw), as in .lockfs/.
set -u
. "$(dirname "$0")/../lib/mount.sh"

# take NAME: O_EXCL from a shell that writes its pid in it; sets TPID.
take() {
    run 10 bash -c 'set -C; echo $$ >"$1"' _ "$1"
    TPID=$(cat -- "$1" 2>/dev/null)
}
# lines PATTERN [LOG]: how many lines of the log match (grep -E).
lines() { grep -Ec -- "$1" "${2:-$LOCKFS_LOG}"; }
has_line() { (($(lines "$@") > 0)); }

user=$(id -un)
host=$LOCKFS_TEST_HOST

lockfs_start_or_bail
L=$MNT
take "$L/a.lock"
is "$RC" 0 "take a.lock"
fa=$(xattr "$L/a.lock" user.lockfs.fence)
# The grant's line is written before create() answers: no wait needed.
is "$(lines "^lockfs: info: granted a\.lock to $host:$TPID \(user $user, uid $EUID\), fence $fa\$")" 1 \
    "one info line: granted a.lock to $host:$TPID (user $user, uid $EUID), fence $fa"
run 10 rm -f "$L/a.lock"
is "$RC" 0 "release a.lock"
is "$(lines "^lockfs: info: released a\.lock, fence $fa: held by $host:$TPID \(user $user, uid $EUID\); unlinked by pid [0-9]+\$")" 1 \
    "one info line: released a.lock, fence $fa, held by $host:$TPID"
take "$L/b.lock"
fb=$(xattr "$L/b.lock" user.lockfs.fence)
run 10 bash -c 'printf "b.lock\n" >"$1"' _ "$L/.lockfs/break"
is "$RC" 0 "break b.lock through .lockfs/break"
is "$(lines "^lockfs: warning: lock broken: b\.lock: held by $host:$TPID \(user $user, uid $EUID\) with fence $fb, ")" 1 \
    "the break is a warning naming holder and fence $fb"
is "$(lines '^lockfs: info: released b\.lock')" 0 "a break is not logged as a release"
esc=$'e\033[31m.lock'
take "$L/$esc"
is "$RC" 0 "take a name with an escape sequence"
ok "its grant is logged" has_line '^lockfs: info: granted e.*\.lock to '
is "$(grep -c $'\033' "$LOCKFS_LOG")" 0 "no raw ESC byte reaches the log"
run 10 rm -f "$L/$esc"

# Unmount releases nothing (the locks are their holders'), and says so.
take "$L/c.lock"
log1=$LOCKFS_LOG
lockfs_stop
is "$LOCKFS_RC" 0 "unmount"
is "$(lines "^lockfs: info: released c\.lock" "$log1")" 0 "c.lock is not released at unmount"
is "$(lines "^lockfs: info: 1 lock left to its holder: the next lockfs of .* takes them back" "$log1")" 1 \
    "the unmount says what it left to its holders"

# audit=no: no grant or release lines; the break's warning stays.
lockfs_start_or_bail -o audit=no
L=$MNT
take "$L/a.lock"
is "$RC" 0 "audit=no: take a.lock"
run 10 rm -f "$L/a.lock"
is "$RC" 0 "audit=no: release a.lock"
take "$L/b.lock"
run 10 bash -c 'printf "b.lock\n" >"$1"' _ "$L/.lockfs/break"
is "$RC" 0 "audit=no: break b.lock"
is "$(lines 'lock broken: b\.lock')" 1 "audit=no: the break is still logged"
is "$(lines '(granted|released) ')" 0 "audit=no: no grant or release line"

# log_level=warning silences the trail too (it is info).
lockfs_start_or_bail -o log_level=warning
L=$MNT
take "$L/a.lock"
run 10 rm -f "$L/a.lock"
is "$RC" 0 "log_level=warning: take and release a.lock"
is "$(lines '(granted|released) ')" 0 "log_level=warning: no grant or release line"

done_testing
