#!/bin/bash
# 47-sighup.t — SIGHUP reopens log_file and ends nothing (issue 25):
# logrotate's habit (mv the log, then postrotate "kill -HUP") must neither
# end the mount nor let go of a lock, and the lines after it go to the new
# file.
set -u
. "$(dirname "$0")/../lib/mount.sh"

LOGF=$TESTDIR/lockfs-file.log
lockfs_start_or_bail -o "log_file=$LOGF"
ok "hostA takes a.lock" takes "$MNT/a.lock"
ok "the grant is in log_file" wait_until 5 grep -q 'granted a\.lock' "$LOGF"
mv "$LOGF" "$LOGF.1"
kill -HUP "$LOCKFS_PID"
ok "b.lock is taken after the SIGHUP" takes "$MNT/b.lock"
ok "its grant is in the reopened log_file" wait_until 5 grep -q 'granted b\.lock' "$LOGF"
nok "and not in the rotated one" grep -q 'granted b\.lock' "$LOGF.1"
ok "lockfs still runs" kill -0 "$LOCKFS_PID"
ok "still mounted" is_fuse_mounted "$MNT"
is "$(status_field "$(status_line a.lock)" state)" held "a.lock is still held"
rm -f "$MNT/a.lock" "$MNT/b.lock"
done_testing
