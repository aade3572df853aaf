#!/bin/bash
# 13-ctime.t — legacy-clients.md §8.14 and §0.5: heartbeats (utimensat NULL,
# write) move mtime AND ctime to now (Emacs movemail judges staleness by
# ctime); touch -d sets mtime back but ctime to now.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

run 10 dotlockfile -l -r 0 "$L/c.lock"
is "$RC" 0 "dotlockfile -l c.lock: rc 0"
z0=$(st %Z "$L/c.lock"); m0=$(st %Y "$L/c.lock")
wait_clock_past $((z0 + 1))
run 10 dotlockfile -t "$L/c.lock"
is "$RC" 0 "dotlockfile -t: rc 0"
cmp_ok "$(st %Z "$L/c.lock")" -gt "$z0" "dotlockfile -t moved ctime"
cmp_ok "$(st %Y "$L/c.lock")" -gt "$m0" "dotlockfile -t moved mtime"

t0=$(now)
timeout 10 touch -d '1 hour ago' -- "$L/c.lock"
m=$(st %Y "$L/c.lock"); z=$(st %Z "$L/c.lock")
cmp_ok "$m" -le $((t0 - 3590)) "touch -d '1 hour ago' sets mtime back an hour"
cmp_ok "$m" -ge $((t0 - 3610)) "... to about an hour ago"
cmp_ok "$z" -ge $((t0 - 1)) "touch -d sets ctime to now"
is "$(st %X "$L/c.lock")" "$m" "touch -d sets atime like mtime"

# A write is a heartbeat too.
z1=$(st %Z "$L/c.lock")
wait_clock_past $((z1 + 1))
t1=$(now)
is "$(fsop write "$L/c.lock" '0\n' trunc)" "OK written=2" "holder rewrites c.lock"
cmp_ok "$(st %Y "$L/c.lock")" -ge "$t1" "the write moved mtime to now"
cmp_ok "$(st %Z "$L/c.lock")" -ge "$t1" "the write moved ctime to now"

# futimens(fd, NULL) (what touch does) as well.
timeout 10 touch -d '1 hour ago' -- "$L/c.lock"
z2=$(st %Z "$L/c.lock")
wait_clock_past $((z2 + 1))
t2=$(now)
is "$(fsop futime "$L/c.lock")" OK "futimens(fd, NULL) on c.lock"
cmp_ok "$(st %Y "$L/c.lock")" -ge "$t2" "futimens moved mtime to now"
cmp_ok "$(st %Z "$L/c.lock")" -ge "$t2" "futimens moved ctime to now"

# Emacs's view: a lock with an old mtime but a fresh ctime is not stale by
# ctime (checked as the tool does, with stat).
timeout 10 touch -d '1 hour ago' -- "$L/c.lock"
cmp_ok "$(st %Z "$L/c.lock")" -gt $(($(now) - 300)) "ctime stays fresh after touch -d (Emacs does not break it)"

run 10 dotlockfile -u "$L/c.lock"
is "$RC" 0 "dotlockfile -u: rc 0"

done_testing
