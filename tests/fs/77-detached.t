#!/bin/bash
# 77-detached.t — lockfs as mount(8), fstab lines and systemd start it.
# Detached (no -f) it exits only once mounted, with the status -f would have
# given otherwise; its notify thread and its backend's connections work, as
# they are made after it detaches; READY=1 reaches $NOTIFY_SOCKET once the
# mount exists, with STATUS (and MAINPID from a detaching lockfs), STATUS
# follows the lock count, and STOPPING=1 comes at shutdown.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"

take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$1"; }
# ms since $1 (date +%s%N)

# ---- systemd's notification socket, mounted as this pass mounts (-f, or
# detached through mount(8) in scripts/test's detached pass).
# A short directory: the socket's path must fit in sockaddr_un.
sockdir=$(mktemp -d /tmp/lksn.XXXXXX) || BAIL_OUT "mktemp for the notify socket failed"
at_exit 'rm -rf -- "$sockdir"'
sock=$sockdir/notify
got=$TESTDIR/notify.got
: >"$got"
sdmnt=$TESTDIR/sd
mkdir -p "$sdmnt"
"$PYTHON" "$TESTLIB/notifysock.py" "$sock" "$sdmnt" "$got" 120 &
listener=$!
wait_until 10 test -S "$sock" || BAIL_OUT "tests/lib/notifysock.py did not bind $sock"
NOTIFY_SOCKET=$sock lockfs_start_or_bail --mnt "$sdmnt"
ready() { grep -q 'READY=1' "$got"; }
ok "READY=1 arrives on NOTIFY_SOCKET" wait_until 10 ready
line=$(grep 'READY=1' "$got" | head -n 1)
is "$(grep -c 'READY=1' "$got")" 1 "READY=1 is sent once"
like "$line" ' mounted=1 ' "the mount existed when READY=1 arrived ($line)"
real=$(realpath "$sdmnt")
like "$line" "STATUS=$real: backend $LOCKFS_BACKEND, 0 locks held(\\||\$)" \
    "STATUS names the mount, its backend and the lock count"
sender=${line#pid=}
sender=${sender%% *}
if [[ $line == *MAINPID=* ]]; then
    mainpid=${line#*MAINPID=}
    mainpid=${mainpid%%|*}
    is "$mainpid" "$LOCKFS_PID" "detached: MAINPID is the daemon's pid"
    isnt "$sender" "$LOCKFS_PID" "detached: READY=1 comes from the parent, the unit's main pid"
else
    is "$sender" "$LOCKFS_PID" "foreground: READY=1 comes from lockfs itself"
    pass "foreground: no MAINPID (the main pid does not change)"
fi
take "$sdmnt/s.lock"
one_lock() { grep -q 'STATUS=.* 1 lock held' "$got"; }
ok "STATUS follows the lock count (1 lock held)" wait_until 10 one_lock
lockfs_stop
is "$LOCKFS_RC" 0 "lockfs exits 0 after SIGTERM"
wait "$listener"
stopping=$(grep 'STOPPING=1' "$got")
like "$stopping" 'STATUS=.*: stopping, backend .*, 1 lock held' \
    "STOPPING=1 at shutdown, with the locks it is letting go ($stopping)"

# ---- A detaching lockfs that cannot start says why and exits with the
# status lockfs -f has for it, leaving nothing behind.
mkdir -p "$TESTDIR/badmnt" "$TESTDIR/badstate"
run 30 "$PYTHON" "$TESTLIB/detach.py" "$TESTDIR/bad" -- "$LOCKFS_BIN" "$TESTDIR/badmnt" \
    -o "state_dir=$TESTDIR/badstate,backend=tinystore,tinystore_dir=$TESTDIR/no-such-store"
is "$(cat "$TESTDIR/bad.mount")" 3 "a backend that cannot be set up: exit status 3"
like "$ERR" 'no-such-store is not a directory' "its error is on stderr ($ERR)"
is "$(cat "$TESTDIR/bad.pid")" 0 "no daemon is left running"
nok "nothing is mounted" is_fuse_mounted "$TESTDIR/badmnt"
run 30 "$PYTHON" "$TESTLIB/detach.py" "$TESTDIR/bad2" -- "$LOCKFS_BIN" "$TESTDIR/no-such-dir" \
    -o "state_dir=$TESTDIR/badstate"
is "$(cat "$TESTDIR/bad2.mount")" 2 "a mount point that does not exist: exit status 2"
like "$ERR" 'cannot use mount point' "its error is on stderr ($ERR)"
is "$(cat "$TESTDIR/bad2.pid")" 0 "no daemon is left running"

# ---- The type fstab lines use: mount.fuse3 runs "lockfs SOURCE MOUNTPOINT
# -o OPTIONS" from PATH for fuse.lockfs (mount(8) itself calls it with no
# PATH, so /bin/sh's default one applies; see lockfs(8)).
mkdir -p "$TESTDIR/bin" "$TESTDIR/typed" "$TESTDIR/typedstate"
ln -s "$LOCKFS_BIN" "$TESTDIR/bin/lockfs"
o="state_dir=$TESTDIR/typedstate,host=$LOCKFS_TEST_HOST,log_file=$TESTDIR/typed.log"
((EUID != 0)) && o+=",allow_other"
# detach.py stays until the daemon it adopts exits.
env PATH="$TESTDIR/bin:/usr/bin:/bin" "$PYTHON" "$TESTLIB/detach.py" "$TESTDIR/typed" -- \
    /sbin/mount.fuse3 lockfs "$TESTDIR/typed" -t fuse.lockfs -o "$o" \
    </dev/null >"$TESTDIR/typed.err" 2>&1 &
wait_until 30 test -e "$TESTDIR/typed.pid"
is "$(cat "$TESTDIR/typed.mount" 2>/dev/null)" 0 \
    "mount.fuse3 -t fuse.lockfs finds lockfs on PATH and mounts ($(<"$TESTDIR/typed.err"))"
typed_pid=$(cat "$TESTDIR/typed.pid")
printf '%s\n' "$typed_pid" >>"$TESTDIR/.pids"
if is_fuse_mounted "$TESTDIR/typed"; then
    pass "fuse.lockfs is mounted"
    take "$TESTDIR/typed/t.lock"
    like "$(status_line t.lock "$TESTDIR/typed")" '^t\.lock state=held' "a lock is taken through it"
    if ((EUID == 0)); then run 30 umount "$TESTDIR/typed"; else run 30 fusermount3 -u "$TESTDIR/typed"; fi
    is "$RC" 0 "unmounted ($ERR)"
    ok "the daemon exits after the unmount" wait_until 15 test -e "$TESTDIR/typed.rc"
    is "$(cat "$TESTDIR/typed.rc" 2>/dev/null)" 0 "with status 0"
    ok "its log went to log_file" grep -q '1 lock left to its holder: the next lockfs of' "$TESTDIR/typed.log"
else
    fail "fuse.lockfs is mounted"
    skip "not mounted" 5
fi

# ---- A "user" fstab line, mounted by an ordinary user through the setuid
# mount(8), finds lockfs in /usr/local/bin (where meson install links it)
# on the PATH mount(8) leaves mount.fuse3.  In a mount namespace of its own,
# so that neither /etc/fstab nor /usr/local/bin changes for anyone else.
if ! have_user2; then
    skip "$(user2_skip_reason)" 5
elif ! command -v unshare >/dev/null; then
    skip "unshare(1) is missing (util-linux)" 5
else
    um=$TESTDIR/usermnt
    mkdir -p "$um" "$TESTDIR/userstate" "$TESTDIR/ubin"
    chown "$USER2_UID:$USER2_GID" "$um" "$TESTDIR/userstate"
    : >"$TESTDIR/user.log"
    chown "$USER2_UID:$USER2_GID" "$TESTDIR/user.log"
    # A copy the second uid can run wherever the build tree lives.
    cp "$LOCKFS_BIN" "$TESTDIR/ubin/lockfs"
    chmod 755 "$TESTDIR/ubin/lockfs"
    printf 'lockfs %s fuse.lockfs user,noauto,allow_other,state_dir=%s,host=%s,log_file=%s 0 0\n' \
        "$um" "$TESTDIR/userstate" "$LOCKFS_TEST_HOST" "$TESTDIR/user.log" >"$TESTDIR/fstab"
    cat >"$TESTDIR/userns.sh" <<'EOF2'
# In a private mount namespace: our fstab, lockfs in /usr/local/bin, then
# the second uid mounts, takes a lock, reads it back and unmounts.
set -u
um=$1 fstab=$2 bin=$3
shift 3
mount -t tmpfs -o mode=0755 tmpfs /usr/local/bin || exit 90
ln -s "$bin" /usr/local/bin/lockfs || exit 91
mount --bind "$fstab" /etc/fstab || exit 92
"$@" mount "$um"
echo "mount=$?"
grep -q " $um " /proc/self/mountinfo && echo mounted=1
"$@" bash -c 'set -C; echo $$ > "$1/u.lock" && cat "$1/.lockfs/status"' _ "$um"
"$@" umount "$um"
echo "umount=$?"
EOF2
    run 60 unshare -m --propagation private bash "$TESTDIR/userns.sh" "$um" "$TESTDIR/fstab" \
        "$TESTDIR/ubin/lockfs" "${AS_USER2[@]}"
    like "$OUT" 'mount=0' "uid $USER2_UID mounts the fstab line with mount(8) ($ERR)"
    like "$OUT" 'mounted=1' "the fuse.lockfs mount is there"
    like "$OUT" '(^|'$'\n'')u\.lock state=held' "a lock is taken through it"
    like "$OUT" 'umount=0' "uid $USER2_UID unmounts it with umount(8)"
    ok "lockfs ran as uid $USER2_UID and stopped at the unmount" \
        wait_until 10 grep -q '1 lock left to its holder: the next lockfs of' "$TESTDIR/user.log"
fi

# ---- Detached, notify= runs its command (the notify thread is made after
# the fork).  The notifier names its file itself: mount(8) passes no
# environment of ours on to lockfs's children for certain.
events=$TESTDIR/events
: >"$events"
chmod 666 "$events"
notifier=$TESTDIR/notify.sh
printf '#!/bin/sh\nprintf "%%s|%%s|\\n" "$LOCKFS_EVENT" "$LOCKFS_LOCK" >>%s\n' "$events" >"$notifier"
chmod 755 "$notifier"
LOCKFS_TEST_DETACHED=1 lockfs_start_or_bail -o "notify=$notifier" -o ttl=2s \
    -o network_timeout=500ms -o heartbeat_min_interval=100ms -o stale_after=3s
D=$MNT
take "$D/a.lock"
printf 'a.lock\n' >"$D/.lockfs/break"
ok "detached: a break by request runs the notify command" \
    wait_until 10 grep -q '^break|a.lock|' "$events"
take "$D/old.lock"
t=$(($(date +%s) + 4))
wait_clock_past "$t"
run 10 stat "$D/old.lock"
isnt "$RC" 0 "detached: old.lock is expired on lookup after stale_after"
ok "detached: the stale break runs the notify command" \
    wait_until 10 grep -q '^break|old.lock|' "$events"
lockfs_stop
is "$LOCKFS_RC" 0 "detached: exit status 0 after SIGTERM"

# ---- Shared backends: a lock taken on a detached mount shows on another
# within about a second, and the detached mount stops promptly.  tinystore
# over TLS: GIO's connection, handshake and holder records run on GLib's
# worker threads, which a fork after they started would have left behind.
if [[ $LOCKFS_BACKEND == local ]]; then
    skip "one host's backend: nothing to see from another mount" 5
    done_testing
fi
saved_opts=$BACKEND_OPTS
if [[ $LOCKFS_BACKEND == tinystore ]]; then
    tls_dir=$sockdir/ts # short: the store's socket path must fit in sockaddr_un
    mkdir -p "$tls_dir"
    facts=$(bash "$TESTLIB/tinystore.sh" start "$tls_dir" tls 2>"$TESTDIR/tls.err") ||
        BAIL_OUT "cannot start a tinystore server on TLS: $(head -n 3 "$TESTDIR/tls.err")"
    at_exit 'bash "$TESTLIB/tinystore.sh" stop "$tls_dir" >/dev/null 2>&1'
    ep=$(sed -n 's/^TINYSTORE_ENDPOINT=//p' <<<"$facts")
    tok=$(sed -n 's/^TINYSTORE_TOKEN_FILE=//p' <<<"$facts")
    ca=$(sed -n 's/^TINYSTORE_CA_FILE=//p' <<<"$facts")
    BACKEND_OPTS="backend=tinystore,tinystore_endpoint=$ep,tinystore_token_file=$tok,tinystore_ca_file=$ca"
fi
LOCKFS_TEST_DETACHED=1 lockfs_start_or_bail -o host=hostA
A=$MNT A_PID=$LOCKFS_PID
lockfs_start_or_bail -o host=hostB
B=$MNT B_PID=$LOCKFS_PID
BACKEND_OPTS=$saved_opts
take "$A/x.lock"
t0=$(date +%s%N)
b_sees() { [[ $(fsop1 lstat "$B/x.lock") == OK ]]; }
wait_until 10 b_sees
ms=$(ms_since "$t0")
ok "hostB sees the lock taken on the detached hostA" b_sees
cmp_ok "$ms" -lt 1500 "within about a second (${ms} ms)"
like "$(status_line x.lock "$B")" ' host=hostA ' "hostB shows hostA's holder record"
t0=$(date +%s%N)
lockfs_stop "$A_PID"
is "$LOCKFS_RC" 0 "the detached mount stops with status 0"
ms=$(ms_since "$t0")
cmp_ok "$ms" -lt 5000 "and promptly (${ms} ms)"
lockfs_stop "$B_PID" # before its server goes, at exit

done_testing
