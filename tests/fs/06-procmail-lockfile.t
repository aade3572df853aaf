#!/bin/bash
# 06-procmail-lockfile.t — legacy-clients.md §8.7: procmail's lockfile makes
# a 0444 lock containing exactly "0", retries with EEXIST (rc 73 when out of
# retries; any other errno would be rc 69), forces an old lock with -l, and
# inverts with -!.  Its tmp files (_*) must not be left behind.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

run 10 lockfile -r 0 "$L/g.lock"
is "$RC" 0 "lockfile -r 0 g.lock: rc 0 ($ERR)"
is "$(st %A "$L/g.lock")" "-r--r--r--" "g.lock mode -r--r--r--"
is "$(fsop readhex "$L/g.lock")" "OK 30" "g.lock content is exactly '0'"
is "$(st %s "$L/g.lock")" 1 "g.lock size 1"
is "$(tmp_leaks "$L")" "" "no _* temporary file left"

run 10 lockfile -1 -r 1 "$L/g.lock"
is "$RC" 73 "lockfile -1 -r 1 on the held lock: rc 73 (not 69) ($ERR)"
cmp_ok "$ELAPSED_MS" -ge 900 "... after one 1 s retry (${ELAPSED_MS} ms)"
cmp_ok "$ELAPSED_MS" -lt 5000 "... and no longer (${ELAPSED_MS} ms)"
is "$(tmp_leaks "$L")" "" "no _* left after the refused attempts"

timeout 10 touch -d '1 hour ago' -- "$L/g.lock"
t0=$(now)
run 20 lockfile -1 -r 0 -l 60 -s 0 "$L/g.lock"
is "$RC" 0 "lockfile -l 60 forces the 1-hour-old lock: rc 0"
like "$ERR" 'Forcing lock' "... saying 'Forcing lock'"
cmp_ok "$(st %Y "$L/g.lock")" -ge $((t0 - 1)) "g.lock is a fresh lock"
is "$(fsop readhex "$L/g.lock")" "OK 30" "the new g.lock contains '0'"

run 10 lockfile -! -r 0 "$L/g.lock"
is "$RC" 0 "lockfile -! -r 0 on the held lock: rc 0"

# A 0444 lock can still be heartbeated by its owner: touch falls back to
# utimensat(path, NULL) when open(O_WRONLY) fails.
timeout 10 touch -d '10 min ago' -- "$L/g.lock"
t0=$(now)
run 10 touch "$L/g.lock"
is "$RC" 0 "touch on the 0444 lock by its owner: rc 0 ($ERR)"
cmp_ok "$(st %Y "$L/g.lock")" -ge $((t0 - 1)) "touch moved the 0444 lock's mtime to now"

run 10 rm -f "$L/g.lock"
is "$RC" 0 "rm -f g.lock: rc 0"
is "$(fsop1 lstat "$L/g.lock")" ENOENT "g.lock is gone"
run 10 lockfile -r 0 "$L/g.lock"
is "$RC" 0 "lockfile -r 0 retakes the released g.lock"
run 10 rm -f "$L/g.lock"
is "$(tmp_leaks "$L")" "" "no temporary files left"

done_testing
