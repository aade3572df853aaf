#!/bin/bash
# 08-mailutils-dotlock.t — legacy-clients.md §8.9 (dotlock part): GNU
# mailutils dotlock: rc 3 when held (EEXIST), -u rc 2 when not locked, -f
# breaks a lock older than 60 s but not a 30 s one, -p writes a pid.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT
DL=(dotlock.mailutils --no-config)

: >"$L/mbox"
run 20 "${DL[@]}" "$L/mbox"
is "$RC" 0 "dotlock mbox: rc 0 ($ERR)"
is "$(fsop1 lstat "$L/mbox.lock")" OK "mbox.lock exists (a real dot lock, not the fcntl fallback)"
is "$(st %s "$L/mbox.lock")" 0 "mbox.lock is empty"
isnt "$(status_line mbox.lock)" "" "mbox.lock is held according to .lockfs/status"

run 20 "${DL[@]}" -r 1 "$L/mbox"
is "$RC" 3 "dotlock -r 1 on the held lock: rc 3 ($ERR)"
run 20 "${DL[@]}" -u "$L/mbox"
is "$RC" 0 "dotlock -u: rc 0"
is "$(fsop1 lstat "$L/mbox.lock")" ENOENT "mbox.lock is gone"
run 20 "${DL[@]}" -u "$L/mbox"
is "$RC" 2 "dotlock -u again: rc 2"

# -f: 90 s old is broken, 30 s old is not.
run 20 "${DL[@]}" "$L/mbox"
is "$RC" 0 "dotlock mbox again: rc 0"
timeout 10 touch -d '90 seconds ago' -- "$L/mbox.lock"
t0=$(now)
run 20 "${DL[@]}" -f -r 1 "$L/mbox"
is "$RC" 0 "dotlock -f -r 1 breaks a 90 s old lock: rc 0 ($ERR)"
cmp_ok "$(st %Y "$L/mbox.lock")" -ge $((t0 - 1)) "mbox.lock is a fresh lock"
timeout 10 touch -d '30 seconds ago' -- "$L/mbox.lock"
run 20 "${DL[@]}" -f -r 1 "$L/mbox"
is "$RC" 3 "dotlock -f -r 1 leaves a 30 s old lock: rc 3"
run 20 "${DL[@]}" -u "$L/mbox"
is "$RC" 0 "dotlock -u: rc 0"

# -p writes its pid into the lock itself (through open(O_RDWR)).
run 20 "${DL[@]}" -p "$L/mbox"
is "$RC" 0 "dotlock -p mbox: rc 0"
like "$(timeout 10 cat -- "$L/mbox.lock")" '^[0-9]+$' "mbox.lock holds a decimal pid"
run 20 "${DL[@]}" -u "$L/mbox"
is "$RC" 0 "dotlock -u: rc 0"
is "$(tmp_leaks "$L")" "" "no mbox.PID.TIME.HOST tmp file left"

done_testing
