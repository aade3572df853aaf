#!/bin/bash
# 00-mount.t — the mount itself: it comes up, looks like a writable sticky
# directory, hides and protects .lockfs/, validates its options, daemonizes
# without -f, and SIGTERM/SIGINT release the locks and unmount cleanly.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
pass "lockfs mounts at $MNT"

like "$(timeout 10 stat -f -c %T -- "$MNT")" '^fuse' "statfs reports a fuse filesystem"
is "$(st %a "$MNT")" 1777 "mount root has the default dir_mode 1777"
is "$(fsop1 access "$MNT" W_OK)" OK "mount root is writable (access W_OK) for uid $EUID"

# .lockfs/ exists, is a directory, but is not listed in the root.
is "$(st %F "$MNT/.lockfs")" directory ".lockfs is a directory"
unlike "$(timeout 10 ls -A -- "$MNT")" '(^|[[:space:]])\.lockfs($|[[:space:]])' ".lockfs is hidden from readdir of the root"
ok ".lockfs/status is readable" timeout 10 cat -- "$MNT/.lockfs/status"
is "$(timeout 10 cat -- "$MNT/.lockfs/status")" "" ".lockfs/status is empty on a fresh mount"

# .lockfs/ is read-only: no create, no mkdir, no unlink, no write.
isnt "$(fsop1 excl "$MNT/.lockfs/new")" OK "cannot create a file in .lockfs/"
isnt "$(fsop1 excl "$MNT/.lockfs/new.lock")" OK "cannot create a lock in .lockfs/"
isnt "$(fsop1 mkdir "$MNT/.lockfs/d")" OK "cannot mkdir in .lockfs/"
isnt "$(fsop1 unlink "$MNT/.lockfs/status")" OK "cannot unlink .lockfs/status"
isnt "$(fsop1 write "$MNT/.lockfs/status" junk)" OK "cannot write .lockfs/status"

# An ordinary file is not a lock.
echo plain >"$MNT/plain.txt"
is "$(timeout 10 cat -- "$MNT/plain.txt")" plain "ordinary file round-trips"
is "$(status_line plain.txt)" "" "ordinary file is not listed in .lockfs/status"

# SIGTERM: clean unmount, exit 0, nothing released (the locks are their
# holders': 45-restart.t).
run 10 ln -- "$MNT/plain.txt" "$MNT/held.lock"
is "$RC" 0 "took held.lock before SIGTERM"
isnt "$(status_line held.lock)" "" "held.lock is listed in status"
mnt1=$MNT state1=$LOCKFS_STATE
if lockfs_stop "$LOCKFS_PID" TERM; then pass "SIGTERM: lockfs exited and unmounted"; else fail "SIGTERM: lockfs exited and unmounted"; fi
is "$LOCKFS_RC" 0 "SIGTERM: exit status 0"
nok "SIGTERM: $mnt1 is no longer a fuse mount" is_fuse_mounted "$mnt1"
is "$(timeout 10 ls -A -- "$mnt1")" "" "SIGTERM: the mount point is an empty directory again"

# The lock survived: a new mount with the same state_dir takes it back;
# with another state_dir (a lockfs that knows nothing of it) it starts empty.
lockfs_start_or_bail --mnt "$mnt1" --state "$state1"
is "$(status_field "$(status_line held.lock)" state)" held "after restart held.lock is held again"
run 10 rm -- "$MNT/held.lock"
is "$RC" 0 "and released by its holder's rm"
lockfs_stop
lockfs_start_or_bail --mnt "$mnt1" --state "$state1-other"
is "$(status_line held.lock)" "" "after restart with another state_dir nothing is held"
is "$(fsop1 lstat "$MNT/held.lock")" ENOENT "after restart held.lock does not exist"

# SIGINT behaves like SIGTERM.
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$MNT/int.lock"
is "$RC" 0 "took int.lock before SIGINT"
if lockfs_stop "$LOCKFS_PID" INT; then pass "SIGINT: lockfs exited and unmounted"; else fail "SIGINT: lockfs exited and unmounted"; fi
is "$LOCKFS_RC" 0 "SIGINT: exit status 0"
nok "SIGINT: no longer a fuse mount" is_fuse_mounted "$mnt1"

# Option validation: stale_after must be 0 or > ttl; errors are one line on stderr.
bad=$TESTDIR/badmnt; mkdir "$bad"; mkdir "$TESTDIR/badstate"
run 15 "$LOCKFS_BIN" "$bad" -f -o "state_dir=$TESTDIR/badstate,ttl=30s,stale_after=10s"
isnt "$RC" 0 "stale_after <= ttl is refused (exit status $RC)"
isnt "$RC" 124 "refusal is immediate, not a hang"
nok "refused configuration did not mount" is_fuse_mounted "$bad"
is "$(printf '%s' "$ERR" | grep -c .)" 1 "refusal is one line on stderr"
like "$ERR" 'stale_after|ttl' "refusal names the offending key"
is_fuse_mounted "$bad" && _unmount_force "$bad"

run 15 "$LOCKFS_BIN" "$bad" -f -o "state_dir=$TESTDIR/badstate,ttl=banana"
isnt "$RC" 0 "a malformed duration is refused (exit status $RC)"
nok "malformed duration did not mount" is_fuse_mounted "$bad"
is_fuse_mounted "$bad" && _unmount_force "$bad"

# --config FILE: a GLib key file, group [lockfs]; -o overrides the file.
cmnt=$TESTDIR/cfgmnt; mkdir "$cmnt" "$TESTDIR/cfgstate"
cat >"$TESTDIR/good.conf" <<CONF
[lockfs]
suffix = .lck
stale_after = 10m
state_dir = $TESTDIR/cfgstate
host = from-config
CONF
_lockfs_mnts+=("$cmnt")
copts="host=$LOCKFS_TEST_HOST"
((EUID != 0)) && copts+=",allow_other"
env --default-signal=INT,TERM "$LOCKFS_BIN" "$cmnt" -f --config "$TESTDIR/good.conf" -o "$copts" \
    </dev/null >"$TESTDIR/cfg.log" 2>&1 &
cpid=$!
_lockfs_pids+=("$cpid"); _lockfs_mnt_of[$cpid]=$cmnt; _lockfs_log_of[$cpid]=$TESTDIR/cfg.log
echo "$cpid" >>"$TESTDIR/.pids"
if wait_until 10 _lockfs_ready "$cmnt"; then
    pass "--config: mounted"
    run 10 bash -c 'set -C; : > "$1"' _ "$cmnt/a.lck"
    like "$(status_line a.lck "$cmnt")" '^a\.lck state=held ' "--config: suffix from the file (.lck) makes locks"
    is "$(status_field "$(status_line a.lck "$cmnt")" host)" "$LOCKFS_TEST_HOST" "--config: -o host= overrides the file's host"
    run 10 bash -c 'set -C; : > "$1"' _ "$cmnt/a.lock"
    is "$(status_line a.lock "$cmnt")" "" "--config: a.lock is an ordinary file there"
    if lockfs_stop "$cpid"; then pass "--config mount stops cleanly"; else fail "--config mount stops cleanly"; fi
else
    fail "--config: mounted"
    diag "$(cat "$TESTDIR/cfg.log")"
    skip "no --config mount" 4
fi

printf '[lockfs]\nttl = 30s\nstale_aftr = 10m\n' >"$TESTDIR/bad.conf"
run 15 "$LOCKFS_BIN" "$bad" -f --config "$TESTDIR/bad.conf" -o "state_dir=$TESTDIR/badstate"
isnt "$RC" 0 "--config with an unknown key is refused (exit status $RC)"
nok "the bad config did not mount" is_fuse_mounted "$bad"
is_fuse_mounted "$bad" && _unmount_force "$bad"
like "$ERR" 'stale_aftr' "the refusal names the key"
like "$ERR" '(line )?3|:3' "the refusal names the line"

# -o: "\," is a comma inside a value (LDAP DNs have them), "\\" a backslash;
# the later host= wins over the one lockfs_start gives.
lockfs_start_or_bail -o 'host=h\,comma\\slash'
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$MNT/c.lock"
is "$RC" 0 "a mount with an escaped comma in -o takes a lock"
is "$(xattr "$MNT/c.lock" user.lockfs.host)" 'h,comma\slash' "-o: '\,' is a comma and '\\' a backslash in a value"
rm -f -- "$MNT/c.lock"
lockfs_stop

# Without -f it daemonizes: the command returns 0 with the mount ready.
dmnt=$TESTDIR/daemon; mkdir "$dmnt" "$TESTDIR/dstate"
_lockfs_mnts+=("$dmnt")   # cleanup unmounts it if the test fails half-way
dopts="state_dir=$TESTDIR/dstate,host=$LOCKFS_TEST_HOST"
((EUID != 0)) && dopts+=",allow_other"
run 20 "$LOCKFS_BIN" "$dmnt" -o "$dopts"
is "$RC" 0 "without -f lockfs returns 0 after daemonizing"
ok "daemonized mount becomes ready" wait_until 10 _lockfs_ready "$dmnt"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$dmnt/d.lock"
is "$RC" 0 "daemonized mount takes a lock"
if ((EUID == 0)); then run 15 umount -- "$dmnt"; else run 15 fusermount3 -u -- "$dmnt"; fi
is "$RC" 0 "daemonized mount unmounts cleanly ($ERR)"
nok "daemonized mount is gone" is_fuse_mounted "$dmnt"

done_testing
