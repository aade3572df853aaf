#!/bin/bash
# 26-rename-noreplace.t — renameat2(RENAME_NOREPLACE) onto a free lock name
# takes the lock with the renamed file's content; onto a held one it gets
# EEXIST and leaves both names alone.  (coreutils mv -n does not reliably use
# RENAME_NOREPLACE, so the system call is made through python ctypes.)
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

printf 'data\n' >"$L/t"
is "$(fsop rename2 "$L/t" "$L/R.lock" noreplace)" OK "renameat2(t, R.lock, RENAME_NOREPLACE) on a free name"
is "$(fsop1 lstat "$L/t")" ENOENT "t is gone"
is "$(timeout 10 cat -- "$L/R.lock")" data "R.lock has t's content"
like "$(status_line R.lock)" '^R\.lock state=held fence=[0-9]+ ' "R.lock is held"
f1=$(xattr "$L/R.lock" user.lockfs.fence)

printf 'other\n' >"$L/t2"
is "$(fsop rename2 "$L/t2" "$L/R.lock" noreplace)" EEXIST "renameat2 NOREPLACE onto the held R.lock: EEXIST"
is "$(timeout 10 cat -- "$L/t2")" other "t2 still there with its content"
is "$(timeout 10 cat -- "$L/R.lock")" data "R.lock unchanged"
is "$(xattr "$L/R.lock" user.lockfs.fence)" "$f1" "R.lock still the same acquisition"

# "Held => EEXIST, always": a plain rename() must not replace a held lock
# either (that would hand the lock over without the holder's unlink).
printf 'thief\n' >"$L/t3"
is "$(fsop rename "$L/t3" "$L/R.lock")" EEXIST "plain rename() onto the held R.lock: EEXIST"
is "$(fsop rename2 "$L/t3" "$L/R.lock" 0)" EEXIST "renameat2(flags 0) onto the held R.lock: EEXIST"
is "$(timeout 10 cat -- "$L/R.lock")" data "R.lock unchanged after the refused renames"
is "$(xattr "$L/R.lock" user.lockfs.fence)" "$f1" "R.lock still the same acquisition after the refused renames"
is "$(timeout 10 cat -- "$L/t3")" thief "t3 still in place"

run 10 rm -f "$L/R.lock"
is "$(status_line R.lock)" "" "R.lock released"
is "$(fsop rename2 "$L/t2" "$L/R.lock" noreplace)" OK "renameat2 NOREPLACE after release takes it again"
is "$(timeout 10 cat -- "$L/R.lock")" other "R.lock has t2's content"
fence_gt "$(xattr "$L/R.lock" user.lockfs.fence)" "$f1" "the second acquisition has a larger fence"

# Into a subdirectory lock name as well.
mkdir "$L/d"
printf 'sub\n' >"$L/d/t"
is "$(fsop rename2 "$L/d/t" "$L/d/S.lock" noreplace)" OK "renameat2 NOREPLACE onto d/S.lock"
like "$(status_line d/S.lock)" '^d/S\.lock state=held ' "d/S.lock is held"

done_testing
