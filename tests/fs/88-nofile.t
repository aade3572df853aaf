#!/bin/bash
# 88-nofile.t — lockfs keeps a descriptor for every file of the disk
# underneath the kernel knows (and one more for each open one), so a spool
# of many mailboxes needs more than the usual soft limit of 1024 open files:
# started with a soft limit of 64, lockfs raises it to the hard limit (as
# libfuse's passthrough_hp does) and says so at the debug level, and then serves hundreds of
# files open at once, ordinary and locks, where EMFILE would otherwise
# surface as an error of open, stat or create.
set -u
. "$(dirname "$0")/../lib/mount.sh"

B=$TESTDIR/backing
mkdir -p "$B"
for ((i = 0; i < 300; i++)); do echo "box $i" >"$B/box$i"; done

old=$(ulimit -Sn)
ulimit -Sn 64
lockfs_start_or_bail --mnt "$B" -o passthrough=yes,log_level=debug
ulimit -Sn "$old"
M=$MNT

soft=$(awk '/^Max open files/ { print $4 }' "/proc/$LOCKFS_PID/limits")
hard=$(awk '/^Max open files/ { print $5 }' "/proc/$LOCKFS_PID/limits")
is "$soft" "$hard" "lockfs raised its soft limit of open files (64) to the hard limit"
like "$(cat "$LOCKFS_LOG")" "open files.*64.*$hard" "and said so in its log (debug level)"

# 300 mailboxes open and read at once, 100 new files and 100 locks made
# and held open beside them: about 1,100 descriptors in lockfs.
run 60 "$PYTHON" -c '
import os, sys
m = sys.argv[1]
fds = []
for i in range(300):
    fd = os.open(f"{m}/box{i}", os.O_RDONLY)
    assert os.read(fd, 16) == f"box {i}\n".encode(), i
    fds.append(fd)
for i in range(100):
    fds.append(os.open(f"{m}/new{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    fds.append(os.open(f"{m}/box{i}.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
for i in range(300):
    os.stat(f"{m}/box{i}")
print(len(fds))' "$M"
is "$RC" 0 "500 files open at once through lockfs, read, made and locked ($ERR)"
is "$OUT" 500 "every one of them opened"
run 30 bash -c 'rm -f "$1"/box*.lock "$1"/new*' _ "$M"
is "$RC" 0 "the locks and new files removed ($ERR)"
done_testing
