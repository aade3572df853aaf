#!/bin/bash
# 87-spool-stacked.t — lockfs_start returns only once its own mount is
# there, also when it stacks a mount over another lockfs, as
# tests/lib/spool.sh does unprivileged (hB over hA).  The ready check used to
# be "a FUSE mount at MNT whose .lockfs/status reads": hA's mount passed it
# at once, so 87-spool's first take could reach hA's mount before hB's came
# up (about one run in seven), and the lock hA granted was never let go
# (the release went to hB).  Here hB's lockfs starts a second late, through
# a wrapper, to make that race certain.
set -u
TEST_TIMEOUT=60
. "$(dirname "$0")/../lib/mount.sh"

DIR=$TESTDIR/dir
mkdir -p "$DIR"
lockfs_start_or_bail --mnt "$DIR" -o host=hA
slow=$TESTDIR/slow-lockfs
printf '#!/bin/sh\nsleep 1\nexec %q "$@"\n' "$LOCKFS_BIN" >"$slow"
chmod 755 "$slow"
REAL_BIN=$LOCKFS_BIN
LOCKFS_BIN=$slow
lockfs_start_or_bail --mnt "$DIR" -o host=hB
LOCKFS_BIN=$REAL_BIN
# A name taken through DIR is hB's, not hA's underneath.
set -C
: >"$DIR/x.lock" 2>/dev/null
set +C
is "$(getfattr --absolute-names --only-values -n user.lockfs.host "$DIR/x.lock" 2>&1)" "hB" "a lock taken through the stacked path is hB's"
rm -f "$DIR/x.lock"
done_testing
