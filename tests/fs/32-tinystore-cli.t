#!/bin/bash
# 32-tinystore-cli.t — tinystore's own command line and lockfs exclude each
# other on one server: `tinystore lock STORE hold LOCK KEY -- CMD` with LOCK =
# lockfs's lock_name (default "lockfs") and KEY = the lock's path under the
# mount (docs/backends.md; docs/tinystore-protocol.md §7.2, §7.3).
#
# While the CLI holds a key, every lockfs primitive on that name answers
# EEXIST; the CLI's key has no holder record, so it is not listed
# (lockfs.conf(5)); once the CLI's command ends, lockfs takes it at once with
# a larger fence.  While lockfs holds a key, the CLI with --wait 0 exits 1
# and runs nothing, with --wait it waits its wait out and exits 1, and it
# runs once lockfs lets go.  Another lock_name is another namespace.  The
# CLI's commands wait on FIFOs the test controls, never on sleeps.
set -u
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND == tinystore ]] ||
    skip_all "the tinystore command line is tinystore's; this run tests $LOCKFS_BACKEND"

TS=$TINYSTORE_BIN
STORE=$TINYSTORE_STORE

lockfs_start_or_bail -o host=hostA
L=$MNT
lockfs_start_or_bail -o host=hostO -o tinystore_lock_name=other
O=$MNT
# A mount that keeps no answer (list_cache=0): the unknown holder of a
# refused key is never remembered there, as on a loaded machine where the
# 20 ms pass before the look that follows the refusal.
lockfs_start_or_bail -o host=hostN -o list_cache=0
N=$MNT

gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
fence_of() { xattr "$1" user.lockfs.fence; }
# excl_soon FILE [MODE CONTENT]: an O_EXCL create succeeds soon: a refusal
# shows the name held for 20 ms (lockfs.conf(5)).
excl_ok() { [[ $(fsop1 excl "$@") == OK ]]; }
excl_soon() { wait_until 3 excl_ok "$@"; }
# cli_hold ID LOCK KEY [WAIT]: run the CLI in the background holding LOCK/KEY
# (--wait WAIT, default 0); its command writes $TINYSTORE_FENCE to
# $TESTDIR/ID.fence, then waits for a line on the FIFO $TESTDIR/ID.go and
# exits 5.  Sets CLI_PID.
cli_hold() {
    local id=$1 lock=$2 key=$3 wait=${4:-0}
    local base=$TESTDIR/$id
    rm -f "$base.go" "$base.fence"
    mkfifo "$base.go"
    "$TS" lock "$STORE" hold "$lock" "$key" --wait "$wait" -- \
        sh -c 'printf "%s\n" "$TINYSTORE_FENCE" >"$1.fence"; read -r _ <"$1.go"; exit 5' _ "$base" \
        </dev/null >"$base.out" 2>&1 &
    CLI_PID=$!
}
# cli_holding ID: its command runs, so the CLI holds the key.
cli_holding() { [[ -s $TESTDIR/$1.fence ]]; }
# cli_end ID PID: let its command end; sets CLI_RC.
cli_end() {
    timeout 10 sh -c 'echo go >"$1"' _ "$TESTDIR/$1.go"
    wait "$2"
    CLI_RC=$?
}

# ---------------------------------------------------------------- the CLI holds

cli_hold x lockfs x.lock
xpid=$CLI_PID
if ok "the CLI holds lockfs/x.lock" wait_until 15 cli_holding x; then
    fx=$(cat "$TESTDIR/x.fence")
    like "$fx" '^[0-9]+$' "the CLI's command got a fence ($fx)"
    is "$(fsop1 excl "$L/x.lock")" EEXIST "O_EXCL create of x.lock: EEXIST while the CLI holds it"
    is "$(fsop1 mkdir "$L/x.lock")" EEXIST "mkdir x.lock: EEXIST"
    : >"$L/tmp.x"
    is "$(fsop1 link "$L/tmp.x" "$L/x.lock")" EEXIST "link() onto x.lock: EEXIST"
    is "$(fsop1 symlink 1 "$L/x.lock")" EEXIST "symlink x.lock: EEXIST"
    is "$(fsop1 rename2 "$L/tmp.x" "$L/x.lock" noreplace)" EEXIST "rename(RENAME_NOREPLACE) onto x.lock: EEXIST"
    rm -f "$L/tmp.x"
    run 20 dotlockfile -l -r 0 "$L/x.lock"
    isnt "$RC" 0 "dotlockfile -l -r 0 x.lock fails while the CLI holds it"
    # lockfs.conf(5): a key held by the command line has no record: it is
    # refused to every mount but not listed; right after a refusal, lstat
    # finds a fresh lock of an unknown holder (liblockfile would give up after
    # six ENOENTs instead of waiting).
    # (once what the earlier refusals left is forgotten, so that the create
    # reaches lockfs; then the lstat follows it within microseconds)
    ok "x.lock looks free once the refusals are forgotten" wait_until 3 gone "$L/x.lock"
    # (the look is that of a fresh refusal, 20 ms: read in the same process)
    is "$(fsop seq excl "$L/x.lock" lstat "$L/x.lock" holder "$L/x.lock")" "EEXIST OK held/" \
        "refused again, and lstat right after finds x.lock, held by an unknown holder"
    nok "the CLI's key is not listed (no holder record)" bash -c 'ls -a "$1" | grep -qx x.lock' _ "$L"
    is "$(status_line x.lock)" "" "x.lock has no .lockfs/status line"
    is "$(fsop1 excl "$O/x.lock")" OK "a mount with another lock_name takes its own x.lock meanwhile"
    # An open with O_CREAT and no O_EXCL (filelock, fasteners, flock(1))
    # opens a held name as on any filesystem, whoever holds it: never
    # EEXIST, which such an open does not answer.
    is "$(fsop1 creat "$N/x.lock")" OK \
        "open(O_WRONLY|O_CREAT) of x.lock on a mount that remembers no refusal: opened, not EEXIST"
    is "$(fsop1 creat "$N/x.lock" 0644 'mine\n')" EPERM "... and a write through such an open answers EPERM: the lock is the CLI's"
    rm -f "$O/x.lock"

    cli_end x "$xpid"
    is "$CLI_RC" 5 "the CLI exits with its command's code (5) after releasing"
    # The CLI releases before it exits: no waiting needed.
    ok "lockfs takes x.lock once the CLI is done" excl_soon "$L/x.lock" 0644 'lockfs\n'
    fence_gt "$(fence_of "$L/x.lock")" "$fx" "lockfs's fence is larger than the CLI's"
    rm -f "$L/x.lock"
else
    kill "$xpid" 2>/dev/null
    wait "$xpid" 2>/dev/null
    diag "$(cat "$TESTDIR/x.out")"
    skip "the CLI never held lockfs/x.lock" 18
fi

# A key in a subdirectory is its path under the mount.
mkdir "$L/sub"
cli_hold s lockfs sub/s.lock
spid=$CLI_PID
if ok "the CLI holds lockfs/sub/s.lock" wait_until 15 cli_holding s; then
    is "$(fsop1 excl "$L/sub/s.lock")" EEXIST "sub/s.lock: EEXIST while the CLI holds key sub/s.lock"
    is "$(fsop1 excl "$L/s.lock")" OK "s.lock at the root is another key: taken"
    rm -f "$L/s.lock"
    cli_end s "$spid"
    is "$CLI_RC" 5 "the CLI holding sub/s.lock exits 5"
    ok "sub/s.lock is lockfs's once the CLI is done" excl_soon "$L/sub/s.lock"
    rm -f "$L/sub/s.lock"
else
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    skip "the CLI never held lockfs/sub/s.lock" 4
fi

# lock_name=other: the CLI on lock "other" excludes that mount only.
cli_hold o other z.lock
opid=$CLI_PID
if ok "the CLI holds other/z.lock" wait_until 15 cli_holding o; then
    is "$(fsop1 excl "$O/z.lock")" EEXIST "the lock_name=other mount: z.lock is EEXIST"
    is "$(fsop1 excl "$L/z.lock")" OK "the lock_name=lockfs mount: z.lock is free"
    rm -f "$L/z.lock"
    cli_end o "$opid"
    is "$CLI_RC" 5 "the CLI holding other/z.lock exits 5"
    ok "the lock_name=other mount takes z.lock once the CLI is done" excl_soon "$O/z.lock"
    rm -f "$O/z.lock"
else
    kill "$opid" 2>/dev/null
    wait "$opid" 2>/dev/null
    skip "the CLI never held other/z.lock" 4
fi

# dotlockfile waits for a key the CLI holds (retrying every 5 s) rather than
# giving up, and takes it once the CLI is done.
cli_hold d lockfs d.lock
dpid=$CLI_PID
if ok "the CLI holds lockfs/d.lock" wait_until 15 cli_holding d; then
    timeout 60 dotlockfile -l -r 2 "$L/d.lock" 2>"$TESTDIR/d.err" &
    tpid=$!
    # Its temporary file (kept across its tries) says it has tried once.
    tried() { compgen -G "$L/.lk*" >/dev/null; }
    ok "dotlockfile tried d.lock" wait_until 10 tried
    ok "dotlockfile is still waiting, not given up" kill -0 "$tpid"
    cli_end d "$dpid"
    wait "$tpid"
    is "$?" 0 "dotlockfile took d.lock once the CLI was done ($(cat "$TESTDIR/d.err"))"
    is "$(xattr "$L/d.lock" user.lockfs.state)" held "lockfs holds d.lock"
    rm -f "$L/d.lock"
else
    kill "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
    skip "the CLI never held lockfs/d.lock" 4
fi

# ---------------------------------------------------------------- lockfs holds

is "$(fsop1 excl "$L/y.lock" 0644 'lockfs\n')" OK "lockfs takes y.lock"
fy=$(fence_of "$L/y.lock")
marker=$TESTDIR/ran
run 20 "$TS" lock "$STORE" hold lockfs y.lock --wait 0 -- sh -c ': >"$1"' _ "$marker"
is "$RC" 1 "the CLI with --wait 0 on lockfs/y.lock exits 1 while lockfs holds it"
like "$ERR" 'key y\.lock is held by another' "it says the key is held by another"
ok "its command did not run" test ! -e "$marker"

t0=$(date +%s%N)
run 20 "$TS" lock "$STORE" hold lockfs y.lock --wait 2s -- sh -c ': >"$1"' _ "$marker"
waited=$(ms_since "$t0")
is "$RC" 1 "the CLI with --wait 2s exits 1 while lockfs holds y.lock"
like "$ERR" 'held by another' "it says the key is held by another"
cmp_ok "$waited" -ge 1900 "it stood in line for its wait (${waited} ms)"
cmp_ok "$waited" -le 10000 "and gave up then (${waited} ms)"
ok "its command did not run" test ! -e "$marker"
is "$(xattr "$L/y.lock" user.lockfs.state)" held "lockfs still holds y.lock"
is "$(fence_of "$L/y.lock")" "$fy" "same fence"
is "$(timeout 10 cat -- "$L/y.lock")" lockfs "same content"

# A CLI that waits in line gets the key when lockfs lets go.
cli_hold w lockfs y.lock 30s
wpid=$CLI_PID
nok "the waiting CLI's command does not run while lockfs holds y.lock" cli_holding w
is "$(fsop1 unlink "$L/y.lock")" OK "lockfs releases y.lock"
if ok "the waiting CLI gets y.lock" wait_until 20 cli_holding w; then
    fence_gt "$(cat "$TESTDIR/w.fence")" "$fy" "its fence is larger than lockfs's"
    is "$(fsop1 excl "$L/y.lock")" EEXIST "lockfs: y.lock is EEXIST while the CLI holds it"
    cli_end w "$wpid"
    is "$CLI_RC" 5 "the CLI that waited exits 5"
else
    kill "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    diag "$(cat "$TESTDIR/w.out")"
    skip "the CLI never got y.lock" 3
fi
ok "lockfs takes y.lock again" excl_soon "$L/y.lock"
rm -f "$L/y.lock"

# And --wait 0 once lockfs has let go: the command runs.
run 20 "$TS" lock "$STORE" hold lockfs y.lock --wait 0 -- sh -c ': >"$1"' _ "$marker"
is "$RC" 0 "the CLI with --wait 0 on the free lockfs/y.lock runs its command, exit 0"
ok "its command ran" test -e "$marker"

done_testing
