#!/bin/bash
# 24-passthrough.t — mounted over a directory that already holds files
# (passthrough=auto), those files stay readable, writable, truncatable,
# renamable and removable through the mount, new ordinary files go to the
# backing directory too, locks stay in lockfs; after unmount the backing
# directory shows every change and no lock.  passthrough=no hides the
# backing files; passthrough=yes forwards new files even over an empty dir.
set -u
. "$(dirname "$0")/../lib/mount.sh"

B=$TESTDIR/backing
mkdir -p "$B/sub"
printf 'alpha\n' >"$B/a.txt"
printf 'bravo bravo\n' >"$B/sub/b.txt"
printf 'private\n' >"$B/p.txt"; chmod 0600 "$B/p.txt"
printf 'doomed\n' >"$B/gone.txt"
printf 'keep\n' >"$B/base"

lockfs_start_or_bail --mnt "$B"
M=$MNT
is "$(timeout 10 cat -- "$M/a.txt")" alpha "existing a.txt readable through the mount"
is "$(timeout 10 cat -- "$M/sub/b.txt")" "bravo bravo" "existing sub/b.txt readable"
is "$(st %a "$M/p.txt")" 600 "existing p.txt keeps mode 0600"
is "$(st %u "$M/p.txt")" "$EUID" "existing p.txt keeps its owner"
like "$(timeout 10 ls -A -- "$M" | tr '\n' ' ')" 'a\.txt .*base .*gone\.txt .*p\.txt .*sub' "readdir lists the backing files"

run 10 bash -c 'echo more >> "$1"' _ "$M/a.txt"
is "$RC" 0 "append to a.txt"
is "$(fsop ftruncate "$M/sub/b.txt" 5)" OK "ftruncate sub/b.txt to 5 bytes"
is "$(st %s "$M/sub/b.txt")" 5 "sub/b.txt has size 5"
run 10 mv -- "$M/a.txt" "$M/c.txt"
is "$RC" 0 "rename a.txt -> c.txt ($ERR)"
is "$(fsop1 lstat "$M/a.txt")" ENOENT "a.txt is gone after the rename"
run 10 rm -- "$M/gone.txt"
is "$RC" 0 "unlink gone.txt"
run 10 bash -c 'printf "new\n" > "$1"' _ "$M/new.txt"
is "$RC" 0 "create new.txt"
run 10 bash -c 'printf "x" > "$1"' _ "$M/sub/new2.txt"
is "$RC" 0 "create sub/new2.txt"

# Locks next to passthrough files: link from a backing file into a lock.
run 10 ln -- "$M/new.txt" "$M/X.lock"
is "$RC" 0 "ln new.txt X.lock (passthrough file -> lock)"
is "$(st %h "$M/X.lock")" 2 "X.lock nlink 2 right after the link"
is "$(st %i "$M/new.txt")" "$(st %i "$M/X.lock")" "new.txt and X.lock share the inode"
isnt "$(status_line X.lock)" "" "X.lock is held"
run 10 dotlockfile -l -r 0 "$M/d.lock"
is "$RC" 0 "dotlockfile in the passthrough directory"
run 10 mutt_dotlock -r 0 "$M/base"
is "$RC" 0 "mutt_dotlock on the passthrough mailbox 'base'"
run 10 mutt_dotlock -u "$M/base"
is "$RC" 0 "mutt_dotlock -u"
run 20 dotlock.mailutils --no-config "$M/base"
is "$RC" 0 "dotlock.mailutils on the passthrough mailbox 'base'"
run 20 dotlock.mailutils --no-config -u "$M/base"
is "$RC" 0 "dotlock.mailutils -u"
run 10 dotlockfile -u "$M/d.lock"
is "$(tmp_leaks "$M")" "" "no temporary files left"
# flock(2) and a POSIX lock of a mailbox in the backing directory are
# lockfs's locks like any other file's (what procmail and mutt add to dot-locks).
flock -n "$M/base" -c "flock -n \"$M/base\" true; echo \$? >\"$TESTDIR/pf\"; timeout 10 cat \"$M/.lockfs/status\" >\"$TESTDIR/pst\""
is "$(cat "$TESTDIR/pf")" 1 "flock of the passthrough mailbox 'base': a second flock -n is refused"
like "$(cat "$TESTDIR/pst")" '^\.lockfs/flock/base state=held ' "... and .lockfs/status lists it"
is "$(timeout 10 "$PYTHON" -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print(open(os.path.join(os.path.dirname(sys.argv[1]), ".lockfs/status")).read().count(".lockfs/posix/base "))
' "$M/base" 2>&1)" 1 "lockf of the passthrough mailbox 'base': listed as a POSIX lock"
is "$(timeout 10 cat -- "$M/base")" keep "... and its content is untouched"
# X.lock stays held across the unmount check below: it must not land in the backing dir.

if lockfs_stop; then pass "lockfs stopped cleanly"; else fail "lockfs stopped cleanly"; fi
is "$LOCKFS_RC" 0 "exit status 0"
is "$(cat -- "$B/c.txt" 2>/dev/null)" $'alpha\nmore' "backing: c.txt has the appended content"
is "$(fsop1 lstat "$B/a.txt")" ENOENT "backing: a.txt renamed away"
is "$(cat -- "$B/sub/b.txt" 2>/dev/null)" "bravo" "backing: sub/b.txt truncated to 5 bytes"
is "$(fsop1 lstat "$B/gone.txt")" ENOENT "backing: gone.txt removed"
is "$(cat -- "$B/new.txt" 2>/dev/null)" new "backing: new.txt created"
is "$(cat -- "$B/sub/new2.txt" 2>/dev/null)" x "backing: sub/new2.txt created"
is "$(cat -- "$B/p.txt" 2>/dev/null)" private "backing: p.txt intact"
is "$(st %a "$B/p.txt")" 600 "backing: p.txt mode intact"
is "$(cd "$B" && ls -A -- *.lock 2>/dev/null)" "" "backing: no *.lock file"
is "$(tmp_leaks "$B")" "" "backing: no temporary files"
is "$(fsop1 lstat "$B/.lockfs")" ENOENT "backing: no .lockfs"

# passthrough=no: the backing files are not visible and stay untouched.
B2=$TESTDIR/backing2
mkdir "$B2"; printf 'hidden\n' >"$B2/keep.txt"
lockfs_start_or_bail --mnt "$B2" -o passthrough=no
is "$(fsop1 lstat "$MNT/keep.txt")" ENOENT "passthrough=no: keep.txt not visible"
printf 'mem\n' >"$MNT/inmem.txt"
is "$(timeout 10 cat -- "$MNT/inmem.txt")" mem "passthrough=no: in-memory file works"
lockfs_stop
is "$(cat -- "$B2/keep.txt")" hidden "passthrough=no: keep.txt untouched after unmount"
is "$(fsop1 lstat "$B2/inmem.txt")" ENOENT "passthrough=no: in-memory file vanished at unmount"

# passthrough=yes over an empty directory: new files land in it.
B3=$TESTDIR/backing3
mkdir "$B3"
lockfs_start_or_bail --mnt "$B3" -o passthrough=yes
printf 'kept\n' >"$MNT/f.txt"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$MNT/f.lock"
is "$RC" 0 "passthrough=yes: lock taken"
lockfs_stop
is "$(cat -- "$B3/f.txt" 2>/dev/null)" kept "passthrough=yes: f.txt is in the backing directory"
is "$(fsop1 lstat "$B3/f.lock")" ENOENT "passthrough=yes: the lock is not"

done_testing
