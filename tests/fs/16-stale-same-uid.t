#!/bin/bash
# 16-stale-same-uid.t — legacy-clients.md §8.17 and §0.7: lock, stale break,
# heartbeat and release come from different processes of the same uid.
# lockfs must let process B unlink A's stale lock and take it (a new
# acquisition, larger fence), and let process C heartbeat and release it.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

fence() { xattr "$L/s.lock" user.lockfs.fence; }

run 10 dotlockfile -l -r 0 "$L/s.lock"
is "$RC" 0 "process A: dotlockfile -l s.lock: rc 0"
f1=$(fence)
like "$f1" '^[0-9]+$' "fence of A's lock ($f1)"

timeout 10 touch -d '10 min ago' -- "$L/s.lock"
t0=$(now)
run 10 dotlockfile -l -r 0 "$L/s.lock"
is "$RC" 0 "process B: dotlockfile -l -r 0 breaks the stale lock: rc 0"
cmp_ok "$(st %Y "$L/s.lock")" -ge $((t0 - 1)) "B's lock is fresh"
f2=$(fence)
fence_gt "$f2" "$f1" "B's fence > A's"

timeout 10 touch -d '10 min ago' -- "$L/s.lock"
run 20 lockfile -1 -r 0 -l 60 -s 0 "$L/s.lock"
is "$RC" 0 "procmail lockfile -l 60 forces the stale lock: rc 0"
like "$ERR" 'Forcing lock' "... 'Forcing lock'"
f3=$(fence)
fence_gt "$f3" "$f2" "procmail's fence > B's"

timeout 10 touch -d '10 min ago' -- "$L/s.lock"
t0=$(now)
run 10 dotlockfile -t "$L/s.lock"
is "$RC" 0 "process C: dotlockfile -t: rc 0"
cmp_ok "$(st %Y "$L/s.lock")" -ge $((t0 - 1)) "C's heartbeat moved mtime"
is "$(fence)" "$f3" "a heartbeat does not change the fence"
run 10 dotlockfile -u "$L/s.lock"
is "$RC" 0 "process C: dotlockfile -u: rc 0"
is "$(fsop1 lstat "$L/s.lock")" ENOENT "s.lock is gone"
is "$(status_line s.lock)" "" "s.lock released"

# The same with mailutils (-f) and lockfile-create across processes.
: >"$L/mbox"
run 20 dotlock.mailutils --no-config "$L/mbox"
is "$RC" 0 "dotlock.mailutils mbox: rc 0"
timeout 10 touch -d '90 seconds ago' -- "$L/mbox.lock"
run 20 dotlock.mailutils --no-config -f -r 1 "$L/mbox"
is "$RC" 0 "another dotlock.mailutils -f breaks the 90 s old lock: rc 0"
run 10 lockfile-remove "$L/mbox"
is "$RC" 0 "lockfile-remove (a third process) releases it"
is "$(fsop1 lstat "$L/mbox.lock")" ENOENT "mbox.lock is gone"
is "$(tmp_leaks "$L")" "" "no temporary files left"

done_testing
