#!/bin/bash
# 25-plain-create.t — creating a free lock name without O_EXCL also takes the
# lock: touch (O_CREAT), shell '>' (O_CREAT|O_TRUNC), open(O_CREAT).  On a
# held lock the same calls by the holder are heartbeats/writes, not errors.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

run 10 touch "$L/new.lock"
is "$RC" 0 "touch new.lock on a free name: rc 0"
like "$(status_line new.lock)" '^new\.lock state=held fence=[0-9]+ ' "touch took the lock"
is "$(st %s "$L/new.lock")" 0 "new.lock is empty"
is "$(fsop1 excl "$L/new.lock")" EEXIST "new.lock held => O_EXCL gets EEXIST"
f=$(xattr "$L/new.lock" user.lockfs.fence)
timeout 10 touch -d '10 min ago' -- "$L/new.lock"
t0=$(now)
run 10 touch "$L/new.lock"
is "$RC" 0 "touch on the held lock by its holder: rc 0 (a heartbeat)"
cmp_ok "$(st %Y "$L/new.lock")" -ge $((t0 - 1)) "... which moved mtime"
is "$(xattr "$L/new.lock" user.lockfs.fence)" "$f" "... and kept the fence"

run 10 bash -c 'echo hi > "$1"' _ "$L/e.lock"
is "$RC" 0 "echo hi > e.lock (O_CREAT|O_TRUNC) on a free name: rc 0"
like "$(status_line e.lock)" '^e\.lock state=held ' "e.lock is held"
is "$(timeout 10 cat -- "$L/e.lock")" hi "e.lock contains hi"
run 10 bash -c 'echo more >> "$1"' _ "$L/e.lock"
is "$RC" 0 "holder appends to e.lock"
is "$(timeout 10 cat -- "$L/e.lock")" $'hi\nmore' "e.lock contains both lines"

r=$(fsop creat "$L/c.lock" 0644 'pid\n')
like "$r" '^OK size_at_open=0 nlink_at_open=1 written=4' "open(O_CREAT) without O_EXCL on a free c.lock ($r)"
like "$(status_line c.lock)" '^c\.lock state=held ' "c.lock is held"
is "$(fsop1 excl "$L/c.lock")" EEXIST "c.lock held => O_EXCL gets EEXIST"
is "$(fsop link "$L/e.lock" "$L/c.lock")" EEXIST "c.lock held => link gets EEXIST"

for n in new e c; do
    run 10 rm -f "$L/$n.lock"
    is "$(status_line "$n.lock")" "" "$n.lock released by rm -f"
done

done_testing
