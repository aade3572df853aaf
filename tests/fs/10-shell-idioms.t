#!/bin/bash
# 10-shell-idioms.t — legacy-clients.md §8.10: ln -s, bash and dash
# noclobber, mkdir (+ a pid file inside), touch / touch -c as heartbeats,
# rm -f as release (idempotent).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

# ln -s
run 10 ln -s "$$" "$L/h.lock"
is "$RC" 0 "ln -s \$\$ h.lock: rc 0"
is "$(timeout 10 readlink -- "$L/h.lock")" "$$" "readlink h.lock gives the pid"
is "$(st %F "$L/h.lock")" "symbolic link" "h.lock is a symlink"
isnt "$(status_line h.lock)" "" "the symlink lock is held according to .lockfs/status"
run 10 ln -s "$$" "$L/h.lock"
is "$RC" 1 "ln -s again: rc 1"
like "$ERR" 'File exists' "ln -s again: 'File exists'"
run 10 rm -f "$L/h.lock"
is "$RC" 0 "rm -f h.lock: rc 0"
is "$(status_line h.lock)" "" "symlink lock released"

# bash noclobber
run 10 bash -c 'set -C; echo $$ > "$1" && echo $$' _ "$L/n.lock"
is "$RC" 0 "bash set -C; echo \$\$ > n.lock: rc 0"
is "$(timeout 10 cat -- "$L/n.lock")" "$OUT" "n.lock holds bash's pid"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/n.lock"
is "$RC" 1 "bash set -C again: rc 1"
like "$ERR" 'cannot overwrite existing file' "bash: 'cannot overwrite existing file'"

# dash noclobber
run 10 dash -c 'set -C; echo $$ > "$1" && echo $$' _ "$L/d.lock"
is "$RC" 0 "dash set -C; echo \$\$ > d.lock: rc 0"
is "$(timeout 10 cat -- "$L/d.lock")" "$OUT" "d.lock holds dash's pid"
run 10 dash -c 'set -C; echo $$ > "$1"' _ "$L/d.lock"
is "$RC" 2 "dash set -C again: rc 2"
like "$ERR" 'File exists' "dash: 'File exists'"

# mkdir
run 10 mkdir "$L/m.lock"
is "$RC" 0 "mkdir m.lock: rc 0"
isnt "$(status_line m.lock)" "" "the directory lock is held according to .lockfs/status"
run 10 mkdir "$L/m.lock"
is "$RC" 1 "mkdir m.lock again: rc 1"
like "$ERR" 'File exists' "mkdir again: 'File exists'"
run 10 bash -c 'echo $$ > "$1/pid"' _ "$L/m.lock"
is "$RC" 0 "a pid file inside the directory lock can be written ($ERR)"
like "$(timeout 10 cat -- "$L/m.lock/pid")" '^[0-9]+$' "m.lock/pid holds a pid"
run 10 rm -rf "$L/m.lock"
is "$RC" 0 "rm -rf m.lock: rc 0 ($ERR)"
is "$(fsop1 lstat "$L/m.lock")" ENOENT "m.lock is gone"
is "$(status_line m.lock)" "" "directory lock released"
run 10 mkdir "$L/m.lock"
is "$RC" 0 "mkdir m.lock after release: rc 0"
run 10 rmdir "$L/m.lock"
is "$RC" 0 "rmdir m.lock releases it: rc 0"
is "$(status_line m.lock)" "" "directory lock released by rmdir"

# touch and touch -c are heartbeats on a held lock.
timeout 10 touch -d '10 min ago' -- "$L/n.lock"
t0=$(now)
run 10 touch "$L/n.lock"
is "$RC" 0 "touch n.lock: rc 0"
cmp_ok "$(st %Y "$L/n.lock")" -ge $((t0 - 1)) "touch moved n.lock's mtime to now"
timeout 10 touch -d '10 min ago' -- "$L/n.lock"
t0=$(now)
run 10 touch -c "$L/n.lock"
is "$RC" 0 "touch -c n.lock: rc 0"
cmp_ok "$(st %Y "$L/n.lock")" -ge $((t0 - 1)) "touch -c moved n.lock's mtime to now"
run 10 touch -c "$L/nothere.lock"
is "$RC" 0 "touch -c on a missing lock: rc 0"
is "$(fsop1 lstat "$L/nothere.lock")" ENOENT "touch -c created nothing"

# rm -f releases, and is idempotent.
run 10 rm -f "$L/n.lock"
is "$RC" 0 "rm -f n.lock: rc 0"
is "$(fsop1 lstat "$L/n.lock")" ENOENT "n.lock is gone"
run 10 rm -f "$L/n.lock"
is "$RC" 0 "rm -f n.lock again: rc 0"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/n.lock"
is "$RC" 0 "n.lock can be taken again after rm -f"
run 10 rm -f "$L/n.lock" "$L/d.lock"
is "$(timeout 10 cat -- "$L/.lockfs/status")" "" "no lock left"

done_testing
