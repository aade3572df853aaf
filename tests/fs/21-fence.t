#!/bin/bash
# 21-fence.t — the fence grows strictly with every acquisition of a lock,
# whatever primitive takes it, and keeps growing across restarts of lockfs
# with the same state_dir: after a clean SIGTERM and after a SIGKILL (the
# counter must be durable before the grant is answered).  A lock held
# across either restart is taken back with its fence.
set -u
. "$(dirname "$0")/../lib/mount.sh"

state=$TESTDIR/state-fence
mkdir "$state"
lockfs_start_or_bail --state "$state"
mnt=$MNT
L=$MNT

fence() { xattr "$L/$1" user.lockfs.fence; }
take_ln() { echo x >"$L/t" && timeout 10 ln -- "$L/t" "$L/$1" && rm -f "$L/t"; }
take_noclobber() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/$1"; }
take_mkdir() { timeout 10 mkdir -- "$L/$1"; }
take_symlink() { timeout 10 ln -s 1 "$L/$1"; }
take_dotlockfile() { timeout 10 dotlockfile -l -r 0 "$L/$1"; }
release() { timeout 10 rm -rf -- "$L/$1"; }

prev=0
for how in ln noclobber mkdir symlink dotlockfile ln noclobber; do
    if take_$how X.lock; then
        f=$(info_field X.lock fence)
        if [[ $how == symlink ]]; then
            # Linux refuses user.* xattrs on symlinks before lockfs sees the call.
            is "$(status_field "$(status_line X.lock)" fence)" "$f" "$how: status fence equals .lockfs fence"
        else
            is "$(fence X.lock)" "$f" "$how: xattr fence equals .lockfs fence"
        fi
        fence_gt "$f" "$prev" "$how: fence grows"
        prev=${f:-$prev}
        release X.lock
    else
        fail "$how: take X.lock"
        skip "no lock to read a fence from" 1
    fi
done

# Many quick cycles: strictly increasing every time.
bad=0 last=$prev
for i in $(seq 1 30); do
    take_noclobber X.lock || { bad=$((bad + 1)); continue; }
    f=$(fence X.lock)
    [[ $f =~ ^[0-9]+$ ]] && fence_greater "$f" "$last" || bad=$((bad + 1))
    last=${f:-$last}
    release X.lock
done
is "$bad" 0 "30 more acquisitions: every fence larger than the one before (last $last)"
prev=$last

# A lock held across SIGTERM is its holder's: the next lockfs of the mount
# takes it back with its fence (45-restart.t), and the counter survives.
take_noclobber X.lock
fh=$(fence X.lock)
fence_gt "$fh" "$prev" "fence before restart"
prev=${fh:-$prev}
if lockfs_stop; then pass "SIGTERM stops lockfs"; else fail "SIGTERM stops lockfs"; fi
is "$LOCKFS_RC" 0 "exit status 0"
lockfs_start_or_bail --mnt "$mnt" --state "$state"
is "$(fence X.lock)" "$fh" "X.lock was taken back after the SIGTERM, with its fence"
release X.lock
take_noclobber X.lock
f=$(fence X.lock)
fence_gt "$f" "$prev" "first fence after a clean restart with the same state_dir"
prev=${f:-$prev}
release X.lock
take_mkdir Y.lock
f=$(fence Y.lock)
like "$f" '^[0-9]+$' "another lock after restart has a fence ($f)"
release Y.lock

# Crash: SIGKILL right after an acquisition, then restart with the same
# state_dir: the lock is taken back too (the record is written before the
# grant is answered).  A shared backend's lease outlives a killed mount
# whose record is not taken back (another state_dir) for ttl, and not less,
# then the lock is free.
if [[ $LOCKFS_BACKEND != local ]]; then
    lockfs_stop
    lockfs_start_or_bail --mnt "$mnt" --state "$state" -o ttl=4s -o network_timeout=1s
fi
take_ln X.lock
fk=$(fence X.lock)
fence_gt "$fk" "$prev" "fence just before SIGKILL"
prev=${fk:-$prev}
kill_mount() {
    kill -KILL "$LOCKFS_PID"
    { wait "$LOCKFS_PID"; } 2>/dev/null # braces: silence bash's "Killed" job report
    _unmount_force "$mnt"
    wait_until 10 bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$mnt"
}
kill_mount
lockfs_start_or_bail --mnt "$mnt" --state "$state" -o ttl=4s -o network_timeout=1s
is "$(fence X.lock)" "$fk" "X.lock was taken back after the SIGKILL, with its fence"
release X.lock
if [[ $LOCKFS_BACKEND != local ]]; then
    # tinystore's holder writes the record that shows a lock to other mounts
    # 50 ms after the grant (docs/backends.md): wait for it, so that the lstat
    # after the restart can see what the killed mount's lease still holds.
    ts_record_of_x() {
        "$TINYSTORE_BIN" kv "$TINYSTORE_STORE" list lockfs-holders lockfs --json 2>/dev/null |
            grep -q '"key":"X\.lock"'
    }
    take_ln X.lock
    fk=$(fence X.lock)
    prev=${fk:-$prev}
    [[ $LOCKFS_BACKEND != tinystore ]] || wait_until 5 ts_record_of_x ||
        diag "no holder record of X.lock after 5 s"
    t_kill=$(date +%s%N)
    kill_mount
    lockfs_start_or_bail --mnt "$mnt" --state "$state-other"
    is "$(fsop1 lstat "$L/X.lock")" OK "X.lock is still held by the killed mount's lease"
    x_gone() { [[ $(fsop1 lstat "$L/X.lock") == ENOENT ]]; }
    ok "X.lock is freed once the lease runs out" wait_until 15 x_gone
    freed_ms=$((($(date +%s%N) - t_kill) / 1000000))
    # renewed at most ttl/3 before the kill: not freed before ttl - ttl/3
    cmp_ok "$freed_ms" -ge 2600 "not before the lease ran out (ttl 4 s): freed after ${freed_ms} ms"
    lockfs_stop
    lockfs_start_or_bail --mnt "$mnt" --state "$state"
fi
if take_noclobber X.lock; then
    fence_gt "$(fence X.lock)" "$prev" "first fence after SIGKILL and restart with the same state_dir"
else
    fail "take X.lock after SIGKILL and restart"
fi

# LDAP confirms a fence before it is shown (docs/backends.md): one it could
# not confirm may come from a block older than another host's since, so
# .lockfs/ shows it as the fence xattr does, not at all, until it is
# confirmed.  The server is paused between the grant and the first look.
# The renew thread confirms a lock's fence 100 ms after its grant by itself;
# on a loaded machine it may do so before the pause: then the fence xattr
# answers while the server is paused (a confirmed fence needs no call), and
# the lock is taken again, up to 5 times.
if [[ $LOCKFS_BACKEND == ldap ]]; then
    release X.lock
    lockfs_stop
    lockfs_start_or_bail --mnt "$mnt" --state "$state" -o network_timeout=1s
    unconfirmed=0
    for ((try = 1; try <= 5 && !unconfirmed; try++)); do
        take_noclobber U.lock || break
        backend_server_pause
        if [[ -z $(fence U.lock) ]]; then
            unconfirmed=1
            line=$(status_line U.lock)
            text=$(timeout 10 cat -- "$L/.lockfs/U.lock")
        fi
        backend_server_resume
        ((unconfirmed)) || release U.lock
    done
    if ok "ldap: U.lock held with its fence not yet confirmed, the server paused (try $((try - 1)))" \
        test "$unconfirmed" = 1; then
        is "$(status_field "$line" state)" held "ldap, server paused: .lockfs/status shows U.lock held"
        is "$(status_field "$line" fence)" "" "ldap, server paused: .lockfs/status shows no fence not yet confirmed"
        like "$text" $'(^|\n)state: held' "ldap, server paused: .lockfs/U.lock shows it held"
        unlike "$text" $'(^|\n)fence: [0-9]' "ldap, server paused: .lockfs/U.lock shows no fence not yet confirmed"
        # The connection given up on in the pause comes back first.
        fence_shown() { f=$(fence U.lock) && [[ -n $f ]]; }
        f=
        ok "ldap: the fence is confirmed once the server answers" wait_until 20 fence_shown
        is "$(status_field "$(status_line U.lock)" fence)" "$f" "ldap: .lockfs/status then shows it"
        is "$(info_field U.lock fence)" "$f" "ldap: .lockfs/U.lock then shows it"
        release U.lock
    else
        skip "no unconfirmed fence to look at" 7
    fi
fi

done_testing
