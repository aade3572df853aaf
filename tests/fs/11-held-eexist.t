#!/bin/bash
# 11-held-eexist.t — legacy-clients.md §8.11 and §0.3: a held lock answers
# EEXIST to every acquisition primitive (link, open O_CREAT|O_EXCL, symlink,
# mkdir, renameat2 RENAME_NOREPLACE), whatever form the lock has (file,
# symlink, directory) and whoever asks (another uid too).  Tools: ln, ln -s,
# mkdir, bash/dash noclobber, dotlock.mailutils (rc 3, not 1/4), procmail
# lockfile (rc 73, not 69), dotlockfile (4), lockfile-create (4),
# mutt_dotlock (3).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

: >"$L/X"          # base file for the mailbox tools
echo x >"$L/t"
run 10 ln -- "$L/t" "$L/X.lock"
is "$RC" 0 "X.lock taken by ln (file lock)"
run 10 ln -s 999999 "$L/S.lock"
is "$RC" 0 "S.lock taken by ln -s (dangling symlink lock)"
run 10 mkdir "$L/D.lock"
is "$RC" 0 "D.lock taken by mkdir (directory lock)"
echo src >"$L/src"
f0=$(xattr "$L/X.lock" user.lockfs.fence)

for lk in X.lock S.lock D.lock; do
    is "$(fsop link "$L/src" "$L/$lk")" EEXIST "$lk held: link() -> EEXIST"
    is "$(fsop1 excl "$L/$lk")" EEXIST "$lk held: open(O_CREAT|O_EXCL) -> EEXIST"
    is "$(fsop symlink target "$L/$lk")" EEXIST "$lk held: symlink() -> EEXIST"
    is "$(fsop mkdir "$L/$lk")" EEXIST "$lk held: mkdir() -> EEXIST"
    is "$(fsop rename2 "$L/src" "$L/$lk" noreplace)" EEXIST "$lk held: renameat2(RENAME_NOREPLACE) -> EEXIST"
done
is "$(fsop1 lstat "$L/src")" OK "the refused rename left its source in place"

# The tools, against the file lock X.lock.
run 10 ln -T -- "$L/src" "$L/X.lock"
is "$RC" 1 "ln: rc 1"
like "$ERR" 'File exists' "ln: 'File exists'"
run 10 ln -s 1 "$L/X.lock"
is "$RC" 1 "ln -s: rc 1"
like "$ERR" 'File exists' "ln -s: 'File exists'"
run 10 mkdir "$L/X.lock"
is "$RC" 1 "mkdir: rc 1"
like "$ERR" 'File exists' "mkdir: 'File exists'"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/X.lock"
is "$RC" 1 "bash set -C: rc 1"
run 10 dash -c 'set -C; echo $$ > "$1"' _ "$L/X.lock"
is "$RC" 2 "dash set -C: rc 2"
like "$ERR" 'File exists' "dash set -C: 'File exists'"
run 20 dotlock.mailutils --no-config -r 1 "$L/X"
is "$RC" 3 "dotlock.mailutils -r 1: rc 3 (not 1 or 4) ($ERR)"
run 10 lockfile -r 0 "$L/X.lock"
is "$RC" 73 "procmail lockfile -r 0: rc 73 (not 69) ($ERR)"
run 10 dotlockfile -l -r 0 "$L/X.lock"
is "$RC" 4 "dotlockfile -l -r 0: rc 4"
run 10 lockfile-create --retry 0 --lock-name "$L/X.lock"
is "$RC" 4 "lockfile-create --retry 0: rc 4"
run 10 mutt_dotlock -r 0 "$L/X"
is "$RC" 3 "mutt_dotlock -r 0: rc 3"
# The same primitives against the directory lock: bash opens non-regular
# files without O_EXCL, so only dash is meaningful there.
run 10 dash -c 'set -C; echo $$ > "$1"' _ "$L/D.lock"
is "$RC" 2 "dash set -C on the directory lock: rc 2"

# Nothing was disturbed.
is "$(timeout 10 cat -- "$L/X.lock")" x "X.lock content unchanged"
is "$(xattr "$L/X.lock" user.lockfs.fence)" "$f0" "X.lock fence unchanged (still the same acquisition)"
is "$(timeout 10 readlink -- "$L/S.lock")" 999999 "S.lock unchanged"
is "$(tmp_leaks "$L")" "" "no temporary files left by the refused tools"

# Atomicity: 24 processes, released together, race for a free lock with
# O_EXCL, link, mkdir and symlink: exactly one wins, all others see EEXIST.
for round in 1 2 3; do
    is "$(fsop race 24 "$L/race.lock")" "EEXIST=23 OK=1" "race $round for a free lock: one winner, 23 x EEXIST"
    timeout 10 rm -rf -- "$L/race.lock"
done

# Another uid gets EEXIST too — not EACCES/EPERM.
if have_user2; then
    u2tmp=$L/u2.tmp
    run 10 as_user2 touch "$u2tmp"
    is "$RC" 0 "second uid creates its tmp file"
    for lk in X.lock S.lock D.lock; do
        run 20 as_user2 "$PYTHON" "$TESTLIB/fsop.py" link "$u2tmp" "$L/$lk"
        is "$OUT" EEXIST "second uid: link() onto $lk -> EEXIST"
        run 20 as_user2 "$PYTHON" "$TESTLIB/fsop.py" excl "$L/$lk"
        is "${OUT%% *}" EEXIST "second uid: open(O_CREAT|O_EXCL) $lk -> EEXIST"
        run 20 as_user2 "$PYTHON" "$TESTLIB/fsop.py" mkdir "$L/$lk"
        is "$OUT" EEXIST "second uid: mkdir() $lk -> EEXIST"
        run 20 as_user2 "$PYTHON" "$TESTLIB/fsop.py" symlink t "$L/$lk"
        is "$OUT" EEXIST "second uid: symlink() $lk -> EEXIST"
    done
    run 20 as_user2 lockfile -r 0 "$L/X.lock"
    is "$RC" 73 "second uid: procmail lockfile -r 0: rc 73"
    run 20 as_user2 dotlock.mailutils --no-config -r 1 "$L/X"
    is "$RC" 3 "second uid: dotlock.mailutils -r 1: rc 3"
    run 10 rm -f "$u2tmp"
else
    skip "$(user2_skip_reason)" 15
fi

done_testing
