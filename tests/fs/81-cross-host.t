#!/bin/bash
# 81-cross-host.t — what another host sees and does (CONTRACT §3, §4, §5).
#
# 1. The acquisition matrix: a lock taken on hostA by each idiom (link of a
#    temp file, O_EXCL create, plain O_CREAT of a free name, symlink, mkdir,
#    RENAME_NOREPLACE) is refused on hostB by every idiom (EEXIST), and the
#    shell's ln -s, ln, set -C and mkdir on hostB say "held".  Where a
#    plain disk answers otherwise too (ln -s onto a directory makes a link
#    inside it), hostB answers as a plain directory does.
# 2. One view: hostB shows hostA's lock as hostA's mount does — a symlink
#    with its target (never resolving to the mount root), a directory as a
#    directory, content and size, mode, and the times the holder set.
# 3. Heartbeats by explicit times: a holder refreshing with utimes(now, now)
#    every S/2 is never older than S for a client judging mtime on hostB.
# 4. A process is its thread group: mkdir and rmdir from different threads
#    of one process release the lock (4 such processes contending).
# 5. A lost lock leaves the namespace: hostA paused past ttl, hostB takes
#    and lets go; on hostA the name is free again at once.
# 6. What others may not do: a non-holder's O_TRUNC (EPERM, content kept);
#    rmdir of a directory with a lock in it (ENOTEMPTY); a directory renamed
#    while a lock is being taken in it keeps name and key together.
# 7. The same over a disk (passthrough): a disk-backed lock's O_TRUNC by
#    another uid, rmdir of a disk directory with a lock in it, and a setgid
#    directory's group for files made through the mount.
# Parts 1-3 and 5 need two hosts (shared backends); 4, 6 and 7 run everywhere.
set -u
TEST_TIMEOUT=600
. "$(dirname "$0")/../lib/mount.sh"

LOCKLIB=$TESTLIB/locklib.py
shared=0
[[ $LOCKFS_BACKEND != local ]] && shared=1

if ((shared)); then
    lockfs_start_or_bail -o host=hostA
    A=$MNT
    lockfs_start_or_bail -o host=hostB
    B=$MNT
else
    lockfs_start_or_bail
    A=$MNT
    B=''
fi

# B shows NAME held by hostA (tinystore writes the holder record 50 ms after
# the grant; exclusion never waits for it).
b_shows() { [[ $(status_line "$1" "$B") == *" host=hostA "* ]]; }
held_on_a() { [[ $(status_field "$(status_line "$1" "$A")" state) == held ]]; }

# ---------------------------------------------------------------- 1. matrix

# take IDIOM PATH: take PATH on its mount by IDIOM; prints OK or the errno.
take() {
    local idiom=$1 p=$2 dir tmp
    dir=$(dirname "$p")
    tmp=$dir/.tmp.$idiom.$$
    case $idiom in
    link) printf '%s\n' $$ >"$tmp" && fsop1 link "$tmp" "$p"; rm -f "$tmp" ;;
    excl) fsop1 excl "$p" 0644 "$$\n" ;;
    creat) fsop1 creat "$p" 0644 "$$\n" ;;
    symlink) fsop1 symlink "$$" "$p" ;;
    mkdir) fsop1 mkdir "$p" ;;
    rename) printf '%s\n' $$ >"$tmp" && fsop1 rename2 "$tmp" "$p" noreplace; rm -f "$tmp" ;;
    esac
}

release() {
    if [[ -d $1 && ! -L $1 ]]; then rmdir -- "$1"; else rm -f -- "$1"; fi
}

holders=(link excl creat symlink mkdir rename)
contenders=(link excl symlink mkdir rename)
if ((shared)); then
    for h in "${holders[@]}"; do
        L=m-$h.lock
        is "$(take "$h" "$A/$L")" OK "matrix: hostA takes $L by $h"
        ok "matrix: hostB sees $L held by hostA" wait_until 5 b_shows "$L"
        for c in "${contenders[@]}"; do
            is "$(take "$c" "$B/$L")" EEXIST "matrix: $h-held $L: hostB's $c answers EEXIST"
        done
        run 10 bash -c 'set -C; echo $$ > "$1"' _ "$B/$L"
        # bash opens a name that is not a regular file without O_EXCL: a
        # directory answers EISDIR, as on any disk.
        like "$ERR" 'cannot overwrite existing file|Is a directory' "matrix: $h-held $L: hostB's set -C says held"
        : >"$B/.t.ln"
        run 10 ln -T -- "$B/.t.ln" "$B/$L"
        like "$ERR" 'File exists' "matrix: $h-held $L: hostB's ln says File exists"
        rm -f "$B/.t.ln"
        run 10 mkdir -- "$B/$L"
        like "$ERR" 'File exists' "matrix: $h-held $L: hostB's mkdir says File exists"
        run 10 ln -s -- "$$" "$B/$L"
        if [[ $h == mkdir ]]; then
            # ln -s onto a directory makes the link inside it, on any disk.
            mkdir "$TESTDIR/plain.lock"
            (cd "$TESTDIR" && ln -s -- "$$" plain.lock) 2>/dev/null
            plain_rc=$?
            is "$RC" "$plain_rc" "matrix: mkdir-held $L: hostB's ln -s answers as on a plain directory ($plain_rc)"
            rm -rf -- "$TESTDIR/plain.lock"
        else
            like "$ERR" 'File exists' "matrix: $h-held $L: hostB's ln -s says File exists"
            isnt "$RC" 0 "matrix: $h-held $L: hostB's ln -s fails"
        fi
        ok "matrix: $h-held $L still held by hostA" held_on_a "$L"
        release "$A/$L"
    done
else
    skip "the local backend is one host's: the cross-host matrix needs a shared backend" 1
fi

# ---------------------------------------------------------------- 2. one view

if ((shared)); then
    fsop1 symlink 4242 "$A/sym.lock" >/dev/null
    ok "view: hostB sees sym.lock" wait_until 5 b_shows sym.lock
    is "$(timeout 10 readlink -- "$B/sym.lock")" 4242 "view: hostB readlinks the holder's target"
    is "$(st %s "$B/sym.lock" 2>/dev/null)" 4 "view: hostB's symlink size is its target's length"
    is "$(fsop1 stat "$B/sym.lock")" ENOENT "view: hostB's symlink does not resolve to the mount root"
    rm -f "$A/sym.lock"

    mkdir "$A/dir.lock"
    ok "view: hostB sees dir.lock" wait_until 5 b_shows dir.lock
    is "$(st %F "$B/dir.lock")" directory "view: a directory lock is a directory on hostB"
    rmdir "$A/dir.lock"

    fsop1 excl "$A/f.lock" 0444 "1234\n" >/dev/null
    ok "view: hostB sees f.lock" wait_until 5 b_shows f.lock
    is "$(timeout 10 cat -- "$B/f.lock")" 1234 "view: hostB reads the holder's bytes"
    is "$(st %s "$B/f.lock")" 5 "view: ... and its size"
    is "$(st %a "$B/f.lock")" 444 "view: ... and its mode"
    is "$(st %u "$B/f.lock")" "$(id -u)" "view: ... and its owner"
    # A time the holder set (touch -d): shown on hostB within
    # heartbeat_min_interval (2 s) + list_cache, not a heartbeat.
    touch -d '2020-02-02 02:02:02 UTC' "$A/f.lock"
    want=$(st %Y "$A/f.lock")
    b_mtime_is() { [[ $(st %Y "$B/f.lock") == "$1" ]]; }
    ok "view: hostB shows the mtime the holder set ($want)" wait_until 5 b_mtime_is "$want"
    chmod 0640 "$A/f.lock"
    b_mode_is() { [[ $(st %a "$B/f.lock") == "$1" ]]; }
    ok "view: hostB shows the mode the holder set" wait_until 5 b_mode_is 640
    # utimes with explicit current times is a heartbeat: mtime moves there.
    t=$(($(date +%s) + 1))
    $PYTHON -c 'import os, sys; os.utime(sys.argv[1], (float(sys.argv[2]),) * 2)' "$A/f.lock" "$t"
    ok "view: hostB shows a heartbeat by explicit times" wait_until 5 b_mtime_is "$t"
    hb=$(xattr "$A/f.lock" user.lockfs.heartbeat)
    cmp_ok "$hb" -ge $((t - 3)) "view: lockfs counts utimes(now, now) as a heartbeat"
    rm -f "$A/f.lock"
else
    skip "the local backend is one host's: another host's view needs a shared backend" 1
fi

# ---------------------------------------------------------------- 3. explicit-time heartbeats

if ((shared)); then
    # A holder that refreshes every 5 s (S/2) with utimes(now, now); a client
    # on hostB that would break the lock once its mtime is 10 s (S) old.
    $PYTHON "$LOCKLIB" refresh "$A/r.lock" 24 5 >"$TESTDIR/refresh.out" 2>&1 &
    rpid=$!
    ok "refresh: hostB sees r.lock" wait_until 5 b_shows r.lock
    run 40 "$PYTHON" "$LOCKLIB" judge "$B/r.lock" 20 10
    wait "$rpid"
    like "$(cat "$TESTDIR/refresh.out")" '^OK refreshes=[4-9]' "refresh: the holder refreshed and released"
    like "$OUT" '^OK checks=[1-9][0-9]* ' "refresh: hostB judged r.lock ($OUT)"
    like "$OUT" ' stale=0 ' "refresh: hostB never saw a refreshed lock older than 10 s"
else
    skip "the local backend is one host's: the refresh across hosts needs a shared backend" 3
fi

# ---------------------------------------------------------------- 4. thread groups

# Four processes, each taking and releasing by mkdir and rmdir on different
# threads of its pool, contending on one name (on both hosts when shared).
pids=()
for i in 1 2 3 4; do
    m=$A
    ((shared && i % 2 == 0)) && m=$B
    $PYTHON "$LOCKLIB" threads "$m/t.lock" 25 4 >"$TESTDIR/threads.$i" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for i in 1 2 3 4; do
    is "$(cat "$TESTDIR/threads.$i")" "OK cycles=25" "threads: worker $i released every lock it took on another thread"
done
is "$(fsop1 lstat "$A/t.lock")" ENOENT "threads: t.lock is free at the end"

# ---------------------------------------------------------------- 5. lost, then taken again

if ((shared)); then
    lockfs_start_or_bail -o host=hostP -o ttl=3s -o network_timeout=1s
    P=$MNT
    pid_p=$LOCKFS_PID
    is "$(take excl "$P/w.lock")" OK "lost: hostP takes w.lock"
    ok "lost: hostB sees it" wait_until 5 bash -c '[[ $(timeout 10 stat -c %n -- "$1" 2>/dev/null) ]]' _ "$B/w.lock"
    kill -STOP "$pid_p"
    b_takes() { [[ $(take excl "$B/w.lock") == OK ]]; }
    got=0
    wait_until 20 b_takes && got=1
    kill -CONT "$pid_p"
    is "$got" 1 "lost: hostB takes w.lock once hostP's lease ran out"
    rm -f "$B/w.lock"
    # On hostP the name is the backend's again at once: free.
    is "$(take excl "$P/w.lock")" OK "lost: hostP takes w.lock again at once"
    is "$(xattr "$P/w.lock" user.lockfs.state)" held "lost: hostP holds it (state held)"
    is "$(fsop1 unlink "$P/w.lock")" OK "lost: hostP releases it"
    ok "lost: hostP logged the loss" log_has 'lost w\.lock' "$LOCKFS_LOG"
else
    skip "the local backend has no lease to lose" 6
fi

# ---------------------------------------------------------------- 6. what others may not do

# no_trunc_by_others LOCK CONTENT WHAT: another uid's O_TRUNC of a held lock
# answers EPERM and leaves CONTENT.
no_trunc_by_others() {
    chmod 0666 "$1" # writable by all: only lockfs stands in the way
    if have_user2; then
        run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" write "$1" x trunc
        is "$OUT" EPERM "$3: another uid's O_TRUNC of a held lock answers EPERM"
    else
        skip "$(user2_skip_reason)" 1
    fi
    is "$(timeout 10 cat -- "$1")" "$2" "$3: the lock's content is unchanged"
    rm -f "$1"
}

# no_rmdir_with_lock DIR WHAT: rmdir of a directory with a lock in it
# answers ENOTEMPTY; once the lock is gone it works.
no_rmdir_with_lock() {
    mkdir "$1"
    : >"$1/.t"
    fsop1 link "$1/.t" "$1/x.lock" >/dev/null
    rm -f "$1/.t"
    is "$(fsop1 rmdir "$1")" ENOTEMPTY "$2: rmdir of a directory holding a lock: ENOTEMPTY"
    ok "$2: ... and the lock is still there" test -e "$1/x.lock"
    rm -f "$1/x.lock"
    is "$(fsop1 rmdir "$1")" OK "$2: rmdir once the lock is gone"
}

fsop1 excl "$A/o.lock" 0644 "9999\n" >/dev/null
no_trunc_by_others "$A/o.lock" 9999 others
no_rmdir_with_lock "$A/sub" others

# A directory renamed while a lock is taken in it: wherever the lock ends
# up, its name and its key agree.  The server is paused so the acquisition
# waits on it while the rename comes.
if ((shared)); then
    mkdir "$A/d1"
    backend_server_pause
    $PYTHON "$TESTLIB/fsop.py" mkdir "$A/d1/k.lock" >"$TESTDIR/acq.out" 2>&1 &
    apid=$!
    ok "others: the acquisition waits on the paused server" wait_until 5 blocked_in_fuse "$apid"
    $PYTHON "$TESTLIB/fsop.py" rename "$A/d1" "$A/d2" >"$TESTDIR/ren.out" 2>&1 &
    rnpid=$!
    ren_settled() { blocked_in_fuse "$rnpid" || [[ -s $TESTDIR/ren.out ]]; }
    wait_until 5 ren_settled
    backend_server_resume
    wait "$apid" "$rnpid"
    note "acquisition: $(cat "$TESTDIR/acq.out"); rename: $(cat "$TESTDIR/ren.out")"
    key_ok=1
    while IFS= read -r line; do
        k=${line%% *}
        [[ $k == *k.lock ]] || continue
        [[ -d $A/$k ]] || key_ok=0
    done < <(timeout 10 cat -- "$A/.lockfs/status")
    is "$key_ok" 1 "others: a lock taken while its directory was renamed is found at its key"
    if [[ $(cat "$TESTDIR/ren.out") == OK ]]; then
        nok "others: no lock left under the old name" test -e "$A/d1/k.lock"
    else
        is "$(cat "$TESTDIR/ren.out")" EXDEV "others: the rename of a directory holding a lock: EXDEV"
    fi
    rmdir "$A/d1/k.lock" "$A/d2/k.lock" 2>/dev/null
    rmdir "$A/d1" "$A/d2" 2>/dev/null
else
    skip "the local backend answers at once: nothing to rename during" 3
fi

# ---------------------------------------------------------------- 7. over a disk (passthrough)

# Mounted over a directory that holds files (a mail spool): the same rules
# for names that live on that disk.
D=$TESTDIR/spool
mkdir -p "$D"
echo mail >"$D/inbox"
chmod 0777 "$D"
lockfs_start_or_bail --mnt "$D" -o passthrough=yes
S=$MNT

# A lock whose node is a disk file (a file renamed onto the lock name).
printf '4321\n' >"$S/f.tmp"
is "$(fsop1 rename "$S/f.tmp" "$S/disk.lock")" OK "disk: a disk file renamed onto disk.lock takes it"
no_trunc_by_others "$S/disk.lock" 4321 "disk (a disk-backed lock)"
# rmdir of a directory on the disk with a lock in it.
no_rmdir_with_lock "$S/sub" "disk (a directory on the disk)"

# A setgid directory (Debian's /var/mail is 2775 root:mail): a file made
# through the mount takes the directory's group, as on the disk itself.
if ((EUID != 0)); then
    skip "lockfs running unprivileged sets no group: the kernel's setgid rule applies as on any disk" 1
elif ! have_user2; then
    skip "$(user2_skip_reason)" 1
else
    grp=$(getent group mail | cut -d: -f3)
    grp=${grp:-8}
    mkdir "$S/mail"
    chgrp "$grp" "$D/mail"
    chmod 2777 "$D/mail"
    run 10 as_user2 "$PYTHON" "$TESTLIB/fsop.py" creat "$S/mail/user2" 0600
    is "$(st %g "$D/mail/user2")" "$grp" "disk: a file made by another uid in a setgid directory has its group"
    rm -rf -- "$S/mail"
fi

done_testing
