#!/bin/bash
# 03-stale-mtime.t — legacy-clients.md §8.4 and §0.6: a lock whose mtime is
# 10 minutes old is broken by liblockfile on the *first* try.  That only
# works when reads leave atime alone (liblockfile takes the pre-read atime as
# "now" when a read changed it).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

printf '0\n' >"$L/s.lock"
timeout 10 touch -d '10 min ago' -- "$L/s.lock"
a0=$(st %X "$L/s.lock"); m0=$(st %Y "$L/s.lock")
cmp_ok "$m0" -le $(($(now) - 590)) "s.lock displays a 10-minute-old mtime"
timeout 10 cat -- "$L/s.lock" >/dev/null
fsop readhex "$L/s.lock" >/dev/null
is "$(st %X "$L/s.lock")" "$a0" "reading the lock does not change atime"
is "$(st %Y "$L/s.lock")" "$m0" "reading the lock does not change mtime"

t0=$(now)
run 10 dotlockfile -l -r 0 "$L/s.lock"
is "$RC" 0 "dotlockfile -l -r 0 breaks the 10-minute-old lock on the first try"
cmp_ok "$(st %Y "$L/s.lock")" -ge $((t0 - 1)) "s.lock is a fresh lock now"
is "$(fsop readhex "$L/s.lock")" "OK 300a" "s.lock holds dotlockfile's content"
run 10 dotlockfile -u "$L/s.lock"
is "$RC" 0 "dotlockfile -u s.lock"

# The same with lockfile-create (liblockfile through the library).
printf '0\n' >"$L/s2.lock"
timeout 10 touch -d '10 min ago' -- "$L/s2.lock"
run 10 lockfile-check "$L/s2"
is "$RC" 255 "lockfile-check judges the 10-minute-old s2.lock invalid"
run 10 lockfile-create --retry 0 "$L/s2"
is "$RC" 0 "lockfile-create --retry 0 breaks it on the first try"
run 10 lockfile-check "$L/s2"
is "$RC" 0 "lockfile-check: the new s2.lock is valid"
run 10 lockfile-remove "$L/s2"
is "$RC" 0 "lockfile-remove s2"
is "$(fsop1 lstat "$L/s2.lock")" ENOENT "s2.lock is gone"

# A fresh lock is not broken.
printf '0\n' >"$L/f.lock"
run 10 dotlockfile -l -r 0 "$L/f.lock"
is "$RC" 4 "a fresh lock is not broken: rc 4"
is "$(tmp_leaks "$L")" "" "no temporary files left"

done_testing
