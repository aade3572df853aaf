#!/bin/bash
# 19-options.t — lockfs's command line is a libfuse program's: -oKEY as well
# as -o KEY, repeated; -s runs the FUSE loop single-threaded and locks work
# there; -h and -V (with libfuse's version) exit 0; SOURCE MOUNTPOINT with
# the options mount(8) and mount.fuse3 add; every refusal is one line on
# stderr and exit status 1.  lockfsctl check -o splits options as lockfs -o
# does ("\," a comma, "\NNN" octal).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail
NL=$'\n'

# one_line TEXT: TEXT is a single non-empty line.
one_line() { [[ -n $1 && $1 != *"$NL"* ]]; }

# super_opts DIR: the superblock options of the mount at DIR, as the kernel
# shows them in /proc/self/mountinfo (allow_other is one of them).
super_opts() {
    local dir
    dir=$(realpath -- "$1") || return 1
    awk -v d="$dir" '$5 == d { for (i = 7; i <= NF; i++) if ($i == "-") break
        print $(i + 3); exit }' /proc/self/mountinfo
}

# gone PID: a process this script started has exited.
gone() { ! _pid_alive "$1"; }

# has_opt LIST OPT: the comma-separated LIST holds OPT.
has_opt() { [[ ,$1, == *,"$2",* ]]; }

# ---------------------------------------------------------------- -h and -V

run 10 "$LOCKFS_BIN" -h
is "$RC" 0 "-h exits 0"
is "$ERR" "" "-h writes nothing on stderr"
help=$OUT
for o in SOURCE MOUNTPOINT -f -d -s -o -oOPTIONS --config -h --help -V --version; do
    like "$help" "(^|[^-[:alnum:]])$o([^[:alnum:]]|$)" "-h lists $o"
done
like "$help" 'Exit status: 0 .*1 bad usage.*2 the mount failed.*3 the backend' \
    "-h gives the exit codes"
run 10 "$LOCKFS_BIN" --help
is "$RC:$OUT" "0:$help" "--help is -h"

# The libfuse lockfs runs with: the version of the libfuse3.so it loads.
libfuse=$(ldd "$LOCKFS_BIN" | awk '$1 ~ /^libfuse3\.so/ { print $3; exit }')
fusever=$(basename "$(readlink -f -- "$libfuse")")
fusever=${fusever#libfuse3.so.}
run 10 "$LOCKFS_BIN" -V
is "$RC" 0 "-V exits 0"
is "$ERR" "" "-V writes nothing on stderr"
like "$OUT" '^lockfs [0-9]+\.[0-9]+\.[0-9]+'"$NL" "-V: lockfs's version first"
if [[ $fusever =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    like "$OUT" "${NL}FUSE library version ${fusever//./\\.}($NL|$)" \
        "-V: the version of the libfuse it runs with ($fusever)"
else
    fail "-V: cannot tell the version of libfuse3 from '$libfuse' (ldd $LOCKFS_BIN)"
fi
version=$OUT
run 10 "$LOCKFS_BIN" --version
is "$RC:$OUT" "0:$version" "--version is -V"

# ---------------------------------------------------------------- refusals

bad=$TESTDIR/badmnt
mkdir "$bad" "$TESTDIR/badstate"
# refused WHAT ERE ARGS...: lockfs ARGS exits 1 at once with one line on
# stderr matching ERE, and mounts nothing.
refused() {
    local what=$1 ere=$2; shift 2
    run 15 "$LOCKFS_BIN" "$@"
    is "$RC" 1 "$what: exit status 1 (usage)"
    ok "$what: one line on stderr" one_line "$ERR"
    like "$ERR" "$ere" "$what: the error names it ($ERR)"
    nok "$what: nothing mounted" is_fuse_mounted "$bad"
    is_fuse_mounted "$bad" && _unmount_force "$bad"
}
st="state_dir=$TESTDIR/badstate"
refused "an unknown -oxyz=1" "^lockfs: mount option 'xyz=1': unknown option" "$bad" -f -o "$st" -oxyz=1
refused "an unknown -o xyz=1" "^lockfs: mount option 'xyz=1': unknown option" "$bad" -f -o "$st" -o xyz=1
refused "a bad value in -ottl=banana" "'ttl=banana'" "$bad" -f -o "$st" -ottl=banana
refused "an unknown flag -x" "^lockfs: unknown option '-x'" "$bad" -f -o "$st" -x
refused "an unknown --frobnicate" "^lockfs: unknown option '--frobnicate'" "$bad" -f --frobnicate
refused "-o without a value" "^lockfs: -o needs a value" "$bad" -f -o
refused "three words" "^lockfs: too many arguments \('extra'\)" lockfs "$bad" extra -f
refused "no mount point" "^lockfs: no mount point" -f -o "$st"

# ---------------------------------------------------------------- -oKEY

# -oallow_other=no, -oallow_other and -o allow_other after allow_other=no
# (the last one wins): the kernel shows what lockfs asked for.
lockfs_start_or_bail --arg -oallow_other=no
m_no=$MNT
o_no=$(super_opts "$MNT")
nok "-oallow_other=no: the mount has no allow_other ($o_no)" has_opt "$o_no" allow_other
# With it, every word an fstab line may hold: mount(8)'s and systemd's
# are dropped, the kernel's reach it.
fstab_words=rw,nosuid,nodev,defaults,auto,noauto,user,users,nouser,owner,group,_netdev,nofail
fstab_words+=,x-systemd.automount,x-systemd.device-timeout=5s,comment=lockfs-test
lockfs_start_or_bail -o allow_other=no --arg -oallow_other --arg "-o$fstab_words"
m_glued=$MNT pid_glued=$LOCKFS_PID
o_glued=$(super_opts "$MNT")
ok "-oallow_other: the mount has allow_other ($o_glued)" has_opt "$o_glued" allow_other
mopts=$(awk -v d="$(realpath -- "$MNT")" '$5 == d { print $6; exit }' /proc/self/mountinfo)
ok "-o$fstab_words: mounted, with nosuid and nodev ($mopts)" \
    bash -c '[[ ,$1, == *,nosuid,* && ,$1, == *,nodev,* ]]' _ "$mopts"
lockfs_start_or_bail -o allow_other=no --arg -o --arg allow_other
o_spaced=$(super_opts "$MNT")
ok "-o allow_other: the mount has allow_other ($o_spaced)" has_opt "$o_spaced" allow_other
is "$o_glued" "$o_spaced" "-oallow_other and -o allow_other mount alike"
if have_user2; then
    run 10 as_user2 stat -c %a -- "$m_glued"
    is "$RC" 0 "-oallow_other: uid $USER2_UID reaches the mount"
    run 10 as_user2 stat -c %a -- "$m_no"
    isnt "$RC" 0 "-oallow_other=no: uid $USER2_UID is kept out"
    like "$ERR" 'Permission denied' "-oallow_other=no: the kernel answers EACCES"
else
    skip "$(user2_skip_reason)" 3
fi
lockfs_stop "$pid_glued"

# ---------------------------------------------------------------- -s

# fuse_loop_in_main PID: the main thread of PID is in a system call on
# /dev/fuse (read or splice; /proc/PID/syscall names the call's first
# argument, the descriptor).  With -s the FUSE loop runs there; the
# multi-threaded loop leaves it waiting for its workers.
fuse_loop_in_main() {
    local nr fd
    read -r nr fd _ <"/proc/$1/syscall" 2>/dev/null || return 1
    [[ $nr =~ ^[0-9]+$ && $fd =~ ^0x[0-9a-f]+$ ]] || return 1
    ((fd < 65536)) || return 1
    [[ $(readlink -- "/proc/$1/fd/$((fd))" 2>/dev/null) == /dev/fuse ]]
}

lockfs_start_or_bail --arg -s
S=$MNT S_PID=$LOCKFS_PID
if read -r _ </proc/"$S_PID"/syscall 2>/dev/null; then
    ok "-s: the FUSE loop runs in lockfs's main thread" wait_until 5 fuse_loop_in_main "$S_PID"
    lockfs_start_or_bail
    nok "without -s: the main thread leaves the FUSE device to the workers" \
        wait_until 2 fuse_loop_in_main "$LOCKFS_PID"
    lockfs_stop
else
    skip "/proc/$S_PID/syscall cannot be read here (a kernel without it, or ptrace limits)" 2
fi

run 10 bash -c 'set -C; echo $$ > "$1"' _ "$S/a.lock"
is "$RC" 0 "-s: a lock is taken"
is "$(fsop1 excl "$S/a.lock")" EEXIST "-s: a second taker gets EEXIST"
like "$(status_line a.lock "$S")" '^a\.lock state=held ' "-s: .lockfs/status lists it"
is "$(xattr "$S/a.lock" user.lockfs.state)" held "-s: its state attribute says held"
run 10 rm -- "$S/a.lock"
is "$RC" 0 "-s: unlink releases it"
is "$(status_line a.lock "$S")" "" "-s: released"

# Three workers, 20 sections each, on one lock name; a marker on the local
# disk, created with O_EXCL inside each section, catches any overlap.
worker() {
    local id=$1 n tries
    for ((n = 0; n < 20; n++)); do
        tries=0
        until (set -C; : >"$S/w.lock") 2>/dev/null; do
            ((++tries > 5000)) && { echo "worker $id gave up at section $n" >>"$TESTDIR/w.err"; return; }
        done
        (set -C; : >"$TESTDIR/w.mark") 2>/dev/null || echo "overlap: worker $id, section $n" >>"$TESTDIR/w.err"
        rm -f -- "$TESTDIR/w.mark"
        rm -- "$S/w.lock" 2>/dev/null || echo "worker $id: release $n failed" >>"$TESTDIR/w.err"
    done
    echo "$id" >>"$TESTDIR/w.done"
}
: >"$TESTDIR/w.err"
wpids=()
for id in 1 2 3; do
    worker "$id" &
    wpids+=($!)
done
wait "${wpids[@]}"
is "$(<"$TESTDIR/w.err")" "" "-s: 3 workers x 20 sections: no overlap, none gave up"
is "$(grep -c . "$TESTDIR/w.done")" 3 "-s: every worker finished"
if lockfs_stop "$S_PID"; then pass "-s: SIGTERM unmounts"; else fail "-s: SIGTERM unmounts"; fi
is "$LOCKFS_RC" 0 "-s: exit status 0"

# ---------------------------------------------------------------- mount.fuse3

# SOURCE MOUNTPOINT -o ..., as mount(8) starts it for an fstab line of type
# fuse.lockfs: mount.fuse3 adds dev and suid (unless nodev/nosuid) and drops
# _netdev, nofail and noauto; lockfs must take the rest (x-*, comment=,
# noexec, nosuid...).  -o foreground keeps it attached to this script.
mf=$(PATH=/usr/sbin:/sbin:$PATH command -v mount.fuse3)
if [[ -n $mf ]]; then
    smnt=$TESTDIR/srcmnt sstate=$TESTDIR/srcstate
    mkdir "$smnt" "$sstate"
    _lockfs_mnts+=("$smnt")
    o="foreground,state_dir=$sstate,host=$LOCKFS_TEST_HOST${BACKEND_OPTS:+,$BACKEND_OPTS}"
    # mount(8) has no --config: an [ldap] file's keys become options, the
    # commas of their DNs written "\,".
    if [[ -n $BACKEND_CONFIG ]]; then
        while IFS= read -r line; do
            [[ $line == *=* ]] || continue
            k=${line%%=*} v=${line#*=}
            k=${k%% } v=${v# }
            o+=",ldap_$k=${v//,/\\,}"
        done < <(sed -n '/^\[ldap\]/,/^\[/p' "$BACKEND_CONFIG")
    fi
    ((EUID != 0)) && o+=",allow_other"
    o+=",noexec,_netdev,nofail,noauto,x-systemd.automount,comment=lockfs-test"
    env --default-signal=INT,QUIT,TERM,HUP "$mf" "$LOCKFS_BIN#lockfs" "$smnt" -o "$o" \
        </dev/null >"$TESTDIR/mf.log" 2>&1 &
    mfpid=$!
    echo "$mfpid" >>"$TESTDIR/.pids"
    if wait_until 15 _lockfs_ready "$smnt"; then
        pass "mount.fuse3 SOURCE MOUNTPOINT -o (mount(8)'s options): mounted"
        mopts=$(awk -v d="$(realpath -- "$smnt")" '$5 == d { print $6; exit }' /proc/self/mountinfo)
        ok "noexec reached the kernel ($mopts)" has_opt "$mopts" noexec
        run 10 bash -c 'set -C; : > "$1"' _ "$smnt/m.lock"
        like "$(status_line m.lock "$smnt")" '^m\.lock state=held ' "a lock is taken through it"
        if ((EUID == 0)); then run 15 umount -- "$smnt"; else run 15 fusermount3 -u -- "$smnt"; fi
        is "$RC" 0 "it unmounts ($ERR)"
        ok "lockfs exits after the unmount" wait_until 10 gone "$mfpid"
    else
        fail "mount.fuse3 SOURCE MOUNTPOINT -o (mount(8)'s options): mounted"
        diag "$(tail -n 5 "$TESTDIR/mf.log")"
        skip "not mounted" 4
    fi
    wait "$mfpid" 2>/dev/null
else
    skip "mount.fuse3 is not installed (fuse3)" 6
fi

# ---------------------------------------------------------------- lockfsctl check -o

# Both read "\," as a comma and "\NNN" as a byte: the same text is accepted
# by both or refused by both, with the same words.
cstate=$TESTDIR/ctlstate
mkdir "$cstate"
lockfs_start_or_bail -o 'host=a\,b'
run 10 bash -c 'set -C; : > "$1"' _ "$MNT/h.lock"
is "$(xattr "$MNT/h.lock" user.lockfs.host)" "a,b" "lockfs -o 'host=a\\,b': the host is a,b"
run 30 "$CTL" check -o "state_dir=$cstate" -o 'host=a\,b' "$MNT"
is "$RC" 0 "lockfsctl check -o 'host=a\\,b': accepted, exit 0 ($ERR)"
run 30 "$CTL" check "-ostate_dir=$cstate,host=a\\054b" "$MNT"
is "$RC" 0 "lockfsctl check -o'...,host=a\\054b' (glued, octal): accepted ($ERR)"
rm -f -- "$MNT/h.lock"
for text in 'ttl=1\,5s' 'ttl=1\0545s' 'bogu\s=1'; do
    run 15 "$LOCKFS_BIN" "$bad" -f -o "$st" -o "$text"
    lerr=${ERR#lockfs: } lrc=$RC
    run 30 "$CTL" check -o "$st" -o "$text" "$MNT"
    cerr=${ERR#lockfsctl check: error: }
    is "$lrc:$RC" "1:2" "-o '$text': refused by lockfs (1) and by lockfsctl check (2)"
    is "$cerr" "$lerr" "-o '$text': both say the same"
    is_fuse_mounted "$bad" && _unmount_force "$bad"
done

done_testing
