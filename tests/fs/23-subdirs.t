#!/bin/bash
# 23-subdirs.t — subdirectories work as in any filesystem and a lock's key is
# its path relative to the mount root: the same basename in two directories
# is two locks; every tool works in a nested directory; a directory holding
# a lock cannot be removed.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
D=$MNT/a/b/c
run 10 mkdir -p "$D"
is "$RC" 0 "mkdir -p a/b/c"
is "$(st %F "$MNT/a/b")" directory "a/b is a directory"
echo hello >"$D/file"
is "$(timeout 10 cat -- "$D/file")" hello "ordinary file in a/b/c round-trips"

# Same basename, different directories: independent locks.
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$MNT/k.lock"
is "$RC" 0 "k.lock at the root"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$MNT/a/k.lock"
is "$RC" 0 "a/k.lock is a different lock"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$D/k.lock"
is "$RC" 0 "a/b/c/k.lock is a different lock"
is "$(fsop1 excl "$MNT/a/k.lock")" EEXIST "a/k.lock held => EEXIST"
for k in k.lock a/k.lock a/b/c/k.lock; do
    like "$(status_line "$k")" "^${k//./\\.} state=held " "status lists $k"
done
fa=$(xattr "$MNT/a/k.lock" user.lockfs.fence)
is "$(info_field a/k.lock fence)" "$fa" ".lockfs/a/k.lock shows a/k.lock's fence"
is "$(info_field a/b/c/k.lock lock)" a/b/c/k.lock ".lockfs/a/b/c/k.lock: lock is the relative path"

# Every tool in a nested directory.
: >"$D/mbox"
run 10 dotlockfile -l -r 0 "$D/d.lock"
is "$RC" 0 "dotlockfile in a/b/c"
run 10 dotlockfile -l -r 0 "$D/d.lock"
is "$RC" 4 "dotlockfile in a/b/c: held => rc 4"
run 10 dotlockfile -u "$D/d.lock"
is "$RC" 0 "dotlockfile -u in a/b/c"
run 10 lockfile-create --retry 0 "$D/lp"
is "$RC" 0 "lockfile-create in a/b/c"
run 10 lockfile-remove "$D/lp"
is "$RC" 0 "lockfile-remove in a/b/c"
run 10 lockfile -r 0 "$D/pm.lock"
is "$RC" 0 "procmail lockfile in a/b/c"
run 10 lockfile -r 0 "$D/pm.lock"
is "$RC" 73 "procmail lockfile in a/b/c: held => rc 73"
rm -f "$D/pm.lock"
run 10 mutt_dotlock -r 0 "$D/mbox"
is "$RC" 0 "mutt_dotlock in a/b/c"
run 10 mutt_dotlock -u "$D/mbox"
is "$RC" 0 "mutt_dotlock -u in a/b/c"
run 20 dotlock.mailutils --no-config "$D/mbox"
is "$RC" 0 "dotlock.mailutils in a/b/c"
run 20 dotlock.mailutils --no-config -r 1 "$D/mbox"
is "$RC" 3 "dotlock.mailutils in a/b/c: held => rc 3"
run 20 dotlock.mailutils --no-config -u "$D/mbox"
is "$RC" 0 "dotlock.mailutils -u in a/b/c"
run 10 mkdir "$D/m.lock"
is "$RC" 0 "mkdir lock in a/b/c"
like "$(status_line a/b/c/m.lock)" '^a/b/c/m\.lock state=held ' "status lists a/b/c/m.lock"
run 10 rmdir "$D/m.lock"
is "$(tmp_leaks "$D")" "" "no temporary files left in a/b/c"

# A directory that holds a lock is not empty.
run 10 rmdir "$MNT/a/b/c"
isnt "$RC" 0 "rmdir a/b/c while it holds k.lock fails"
like "$ERR" 'not empty' "... with 'Directory not empty'"
is "$(fsop1 lstat "$D/k.lock")" OK "a/b/c/k.lock is still there"
run 10 rm -f "$D/k.lock" "$D/file" "$D/mbox"
run 10 rmdir "$MNT/a/b/c"
is "$RC" 0 "rmdir a/b/c after releasing its lock"
is "$(status_line a/b/c/k.lock)" "" "a/b/c/k.lock no longer listed"
like "$(status_line a/k.lock)" '^a/k\.lock state=held ' "a/k.lock untouched"

# Renaming a directory that holds a lock: lockfs may refuse it, or move the
# lock's key along — but the namespace and the lock table must agree.
mkdir "$MNT/d"
echo x >"$MNT/d/t"
run 10 ln -- "$MNT/d/t" "$MNT/d/k.lock"
is "$RC" 0 "d/k.lock taken"
fsop unlink "$MNT/d/t" >/dev/null
run 10 mv -- "$MNT/d" "$MNT/e"
if ((RC != 0)); then
    pass "mv d e with a held lock inside is refused ($ERR)"
    like "$(status_line d/k.lock)" '^d/k\.lock state=held ' "d/k.lock still held under its key"
    is "$(fsop1 lstat "$MNT/d/k.lock")" OK "d/k.lock still at its path"
    skip "directory not renamed" 3
else
    pass "mv d e with a held lock inside succeeded"
    like "$(status_line e/k.lock)" '^e/k\.lock state=held ' "the lock's key moved to e/k.lock"
    is "$(status_line d/k.lock)" "" "no lock is listed under the old key d/k.lock"
    is "$(info_field e/k.lock lock)" e/k.lock ".lockfs/e/k.lock describes the moved lock"
    mkdir "$MNT/d"
    is "$(fsop1 excl "$MNT/d/k.lock")" OK "a new d/k.lock in a new, empty d can be taken"
    is "$(fsop1 excl "$MNT/e/k.lock")" EEXIST "e/k.lock is still held"
fi

done_testing
