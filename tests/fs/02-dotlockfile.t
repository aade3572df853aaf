#!/bin/bash
# 02-dotlockfile.t — legacy-clients.md §8.2 (dotlockfile basic cycle) and
# §8.3 (pid mode: -p writes the parent's pid; a dead pid is stolen, a live
# one is respected even when the mtime is an hour old).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

# §8.2
run 10 dotlockfile -l -r 0 "$L/a.lock"
is "$RC" 0 "dotlockfile -l -r 0 a.lock on a free lock: rc 0 ($ERR)"
is "$(fsop readhex "$L/a.lock")" "OK 300a" "a.lock contains exactly '0\\n'"
is "$(st %a:%h "$L/a.lock")" "644:1" "a.lock mode 0644, nlink 1"
is "$(tmp_leaks "$L")" "" "no .lk* temporary file left"
isnt "$(status_line a.lock)" "" "a.lock is held according to .lockfs/status"

run 10 dotlockfile -l -r 0 "$L/a.lock"
is "$RC" 4 "dotlockfile -l -r 0 on the held lock: rc 4"
cmp_ok "$ELAPSED_MS" -lt 1000 "... and it says so in under 1 s (${ELAPSED_MS} ms)"
is "$(tmp_leaks "$L")" "" "no .lk* left after the refused attempt"

# Heartbeat: backdate the displayed mtime, then -t must bring it to now.
timeout 10 touch -d '1 min ago' -- "$L/a.lock"
t0=$(now)
run 10 dotlockfile -t "$L/a.lock"
is "$RC" 0 "dotlockfile -t: rc 0"
cmp_ok "$(st %Y "$L/a.lock")" -ge $((t0 - 1)) "dotlockfile -t moved mtime to now"

run 10 dotlockfile -c "$L/a.lock"
is "$RC" 0 "dotlockfile -c on the held, fresh lock: rc 0"

run 10 dotlockfile -u "$L/a.lock"
is "$RC" 0 "dotlockfile -u: rc 0"
is "$(fsop1 lstat "$L/a.lock")" ENOENT "a.lock is gone"
is "$(status_line a.lock)" "" "a.lock no longer in .lockfs/status"
run 10 dotlockfile -u "$L/a.lock"
is "$RC" 0 "dotlockfile -u again (ENOENT): rc 0"
run 10 dotlockfile -c "$L/missing.lock"
is "$RC" 1 "dotlockfile -c on a missing lock: rc 1"

# §8.3: -p writes the parent's pid (here: the sh that runs it).
run 10 sh -c 'dotlockfile -l -p -r 0 "$1" || exit 9; echo $$; cat "$1"' _ "$L/p.lock"
is "$RC" 0 "sh -c 'dotlockfile -l -p -r 0 p.lock': rc 0"
shpid=$(sed -n 1p <<<"$OUT"); content=$(sed -n 2p <<<"$OUT")
like "$shpid" '^[0-9]+$' "the shell reported its pid ($shpid)"
is "$content" "$shpid" "p.lock holds the shell's pid"

# That shell is gone now: the next dotlockfile -p judges the lock stale and steals it.
run 10 dotlockfile -l -p -r 0 "$L/p.lock"
is "$RC" 0 "dead holder pid: dotlockfile -l -p -r 0 steals p.lock"
like "$(timeout 10 cat -- "$L/p.lock")" '^[0-9]+$' "p.lock now holds the new parent's pid"
is "$(tmp_leaks "$L")" "" "no .lk* left after the steal"

# A live pid in the file keeps the lock valid even with a 1-hour-old mtime.
sleep 300 </dev/null >/dev/null 2>&1 &
live=$!
at_exit "kill $live 2>/dev/null"
r=$(fsop write "$L/p.lock" "$live\\n" trunc)
like "$r" '^OK' "holder writes a live pid ($live) into p.lock"
timeout 10 touch -d '1 hour ago' -- "$L/p.lock"
run 10 dotlockfile -l -p -r 0 "$L/p.lock"
is "$RC" 4 "live holder pid with 1-hour-old mtime: rc 4"
is "$(timeout 10 cat -- "$L/p.lock")" "$live" "p.lock still holds the live pid"
kill "$live" 2>/dev/null
run 10 dotlockfile -u "$L/p.lock"
is "$RC" 0 "dotlockfile -u p.lock: rc 0"
is "$(tmp_leaks "$L")" "" "no temporary files left at the end"

done_testing
