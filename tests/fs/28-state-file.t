#!/bin/bash
# 28-state-file.t — bad state: a state file that cannot be written (as on a
# full disk, here through RLIMIT_FSIZE, which every user can lower) keeps
# lockfs from mounting with a one-line error naming the file and what to do;
# a corrupt state file is refused and left as it was; a bad configuration is
# refused with file, line and key, and nothing is mounted.
set -u
. "$(dirname "$0")/../lib/mount.sh"
local_backend_only "the fence state file"

mnt=$TESTDIR/m
mkdir -p "$mnt"

# 1. The state file cannot be written: no mount, exit 3, the reason named.
state=$TESTDIR/state-full
mkdir -p "$state"
# (stderr through a pipe: the limit is on files, and the message must get out)
run 20 bash -c 'set -o pipefail
    (trap "" XFSZ; ulimit -f 0; exec "$0" "$1" -f -o "state_dir=$2") 2>&1 >/dev/null | cat >&2' \
    "$LOCKFS_BIN" "$mnt" "$state"
is "$RC" 3 "unwritable state file: exit 3"
like "$ERR" "(cannot save the fence counter to $state/.*fence|cannot write lock record $state/mount.*\.locks)" "the error names the state file"
like "$ERR" "free space" "the error says what to do"
is "$(printf '%s\n' "$ERR" | grep -c .)" 1 "one line"
nok "nothing mounted" is_fuse_mounted "$mnt"

# 2. A corrupt state file is refused and never reset (fences could repeat).
state=$TESTDIR/state-bad
mkdir -p "$state"
lockfs_start_or_bail --mnt "$mnt" --state "$state"
lockfs_stop
f=$(ls "$state"/*.fence 2>/dev/null | head -n 1)
ok "a mount writes its fence state file ($f)" test -n "$f"
printf 'not a state file\n' >"$f"
run 20 "$LOCKFS_BIN" "$mnt" -f -o "state_dir=$state"
is "$RC" 3 "corrupt state file: exit 3"
like "$ERR" "is not a lockfs fence state file" "the error says what is wrong"
is "$(cat "$f")" "not a state file" "the file is left as it was"
nok "nothing mounted" is_fuse_mounted "$mnt"

# 3. A bad configuration: exit 1, FILE:LINE and the key.
conf=$TESTDIR/bad.conf
printf '[lockfs]\nsuffix = .lock\nttl = soon\n' >"$conf"
run 20 "$LOCKFS_BIN" "$mnt" -f --config "$conf" -o "state_dir=$TESTDIR/state-conf"
is "$RC" 1 "bad config: exit 1"
like "$ERR" "$conf:3: key 'ttl'" "the error names file, line and key"
nok "nothing mounted" is_fuse_mounted "$mnt"

done_testing
