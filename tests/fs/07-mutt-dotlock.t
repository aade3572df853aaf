#!/bin/bash
# 07-mutt-dotlock.t — legacy-clients.md §8.8: mutt_dotlock locks MBOX.lock
# by linking an empty mode-000 tmp file and trusts stat(tmp).st_nlink == 2.
# Never -r >= 10 here: mutt then reports success without the lock (§0.10).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

: >"$L/mbox"
run 10 mutt_dotlock -r 0 "$L/mbox"
is "$RC" 0 "mutt_dotlock -r 0 mbox: rc 0 ($ERR)"
is "$(st %a:%s "$L/mbox.lock")" "0:0" "mbox.lock mode 000 and empty"
isnt "$(status_line mbox.lock)" "" "mbox.lock is held according to .lockfs/status"
is "$(tmp_leaks "$L")" "" "no mbox.HOST.PID tmp file left"

run 10 mutt_dotlock -r 0 "$L/mbox"
is "$RC" 3 "mutt_dotlock -r 0 on the held lock: rc 3"
run 10 mutt_dotlock -u "$L/mbox"
is "$RC" 0 "mutt_dotlock -u: rc 0"
is "$(fsop1 lstat "$L/mbox.lock")" ENOENT "mbox.lock is gone"
run 10 mutt_dotlock -u "$L/mbox"
is "$RC" 1 "mutt_dotlock -u again: rc 1"
run 10 mutt_dotlock -t "$L/mbox"
is "$RC" 0 "mutt_dotlock -t: rc 0 (directory writable)"

run 10 mutt_dotlock -r 0 "$L/mbox"
is "$RC" 0 "mutt_dotlock -r 0 takes mbox.lock again"
# .lockfs/, not the xattr: a mode-000 lock's xattrs are unreadable to non-root.
fence1=$(info_field mbox.lock fence)
run 10 mutt_dotlock -f -r 0 "$L/mbox"
is "$RC" 0 "mutt_dotlock -f -r 0 on the held lock: rc 0"
is "$(fsop1 lstat "$L/mbox.lock")" OK "mbox.lock exists after the forced lock"
fence2=$(info_field mbox.lock fence)
fence_gt "$fence2" "$fence1" "the forced lock is a new acquisition"
run 10 mutt_dotlock -u "$L/mbox"
is "$RC" 0 "mutt_dotlock -u: rc 0"

run 10 mutt_dotlock -r 0 "$L/nombox"
is "$RC" 1 "mutt_dotlock on a missing mailbox: rc 1"
is "$(fsop1 lstat "$L/nombox.lock")" ENOENT "no nombox.lock was created"
is "$(tmp_leaks "$L")" "" "no temporary files left"

done_testing
