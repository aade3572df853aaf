#!/bin/bash
# 45-restart.t — a restart of lockfs keeps every lock (issue 25).  A lock
# belongs to the program that took it, not to the lockfs process: on hostA
# one lock is held by each idiom (dotlockfile, lockfile-create, set -C,
# O_EXCL, ln, ln -s, mkdir), then hostA's lockfs is restarted three ways --
# SIGTERM then mount (systemctl restart), kill -9 then mount (a crash under
# Restart=on-failure), fusermount3 -u then mount.  Throughout, a contender
# (on hostB, a second mount of the same backend; on the local backend a
# second process on hostA once the mount is back) is refused every lock;
# after each restart every lock shows the same fence, content, owner and
# mode, its holder's heartbeat works, and at the end its release through
# the new mount lets the contender in.  A flock(1) holder and an fcntl(2)
# holder keep their locks through the restarts (orphaned: their
# descriptors die with the old mount) until they exit.  On a shared backend, a restart
# slower than ttl: the lock runs out at ttl, never earlier, and the new
# lockfs declares it lost instead of showing it held.
set -u
TEST_TIMEOUT=600
. "$(dirname "$0")/../lib/mount.sh"

SHARED=0
[[ $LOCKFS_BACKEND == local ]] || SHARED=1
A=$TESTDIR/A
STATE_A=$TESTDIR/stateA
mkdir -p "$A" "$STATE_A"
# network_timeout: a restart must not wait long for a lockfs that is gone.
start_a() { lockfs_start --mnt "$A" --state "$STATE_A" -o host=hostA "$@"; }
start_a || BAIL_OUT "cannot mount hostA"
PID_A=$LOCKFS_PID
LOG_A=$LOCKFS_LOG
if ((SHARED)); then
    lockfs_start_or_bail -o host=hostB
    B=$MNT
else
    B=$A # the second job runs on the same host
fi

# One lock per idiom, each held by a process that stays (a job's shell).
IDIOMS=(dotlockfile lockfile-create setC excl ln symlink mkdir)
name_of() { printf '%s.lock' "$1"; }
take() { # IDIOM: take its lock on A
    local p=$A/$(name_of "$1")
    case $1 in
    dotlockfile) dotlockfile -l -r 0 "$p" ;;
    lockfile-create) lockfile-create --retry 0 "$A/lockfile-create" ;;
    setC) bash -c 'set -C; echo "$$" > "$1"' _ "$p" ;;
    excl) [[ $(fsop1 excl "$p" 0644 "excl-holder") == OK ]] ;;
    ln) printf 'ln-holder\n' >"$A/ln.tmp" && ln "$A/ln.tmp" "$p" && rm "$A/ln.tmp" ;;
    symlink) ln -s "symlink-holder" "$p" ;;
    mkdir) mkdir "$p" ;;
    esac
}
beat() { # IDIOM: its holder's heartbeat through A (never a new take: -c)
    local p=$A/$(name_of "$1")
    case $1 in
    dotlockfile) dotlockfile -t "$p" ;;
    lockfile-create) lockfile-touch --oneshot "$A/lockfile-create" ;;
    symlink) touch -c -h "$p" ;;
    *) touch -c "$p" ;;
    esac && [[ -e $p || -L $p ]]
}
release() { # IDIOM: its holder lets go through A
    local p=$A/$(name_of "$1")
    case $1 in
    dotlockfile) dotlockfile -u "$p" ;;
    lockfile-create) lockfile-remove "$A/lockfile-create" ;;
    mkdir) rmdir "$p" ;;
    *) rm "$p" ;;
    esac
}
# What a lock shows: fence, content, owner and mode.
shows() { # IDIOM
    local p=$A/$(name_of "$1") c
    if [[ $1 == symlink ]]; then c=$(readlink "$p"); elif [[ $1 == mkdir ]]; then c=dir; else c=$(cat "$p"); fi
    printf '%s|%s|%s\n' "$(info_field "$(name_of "$1")" fence "$A")" "$c" "$(st '%u:%g:%a:%F' "$p")"
}
# A contender's try (O_EXCL create, on B): prints OK when it got the lock,
# which it then lets go.
contend() { # NAME
    local r
    r=$(fsop1 excl "$B/$1" 0644 contender)
    [[ $r == OK ]] && rm -f "$B/$1"
    printf '%s' "$r"
}

declare -A before=()
for i in "${IDIOMS[@]}"; do
    ok "hostA: $i takes $(name_of "$i")" take "$i"
    before[$i]=$(shows "$i")
done

# A flock(1) holder and an fcntl(2)/lockf(3) holder on hostA: their
# descriptors die with each old mount (libfuse cannot hand a FUSE
# connection over), but their locks stay held while they run.
FIFO=$TESTDIR/flock.go
mkfifo "$FIFO"
flock -n "$A/fl" -c "timeout 300 cat '$FIFO' >/dev/null" &
FLPID=$!
fl_state() { status_field "$(status_line .lockfs/flock/fl "$A")" state; }
fl_held() { [[ $(fl_state) == held ]]; }
fl_orphaned() { [[ $(fl_state) == orphaned && $(status_field "$(status_line .lockfs/flock/fl "$A")" pid) == "$FLPID" ]]; }
ok "hostA: flock(1) holds fl" wait_until 10 fl_held
: >"$A/pf"
coproc PL { exec "$PYTHON" "$TESTLIB/posix-lock.py" "$A/pf"; }
echo "lock wr 0 0" >&"${PL[1]}"
read -r -t 10 pl_answer <&"${PL[0]}"
is "${pl_answer:-}" OK "hostA: an fcntl(2) holder locks pf"
# Contenders: flock -n (exit 1 when held) and an fcntl F_SETLK of their own.
flock_contend() { flock -n "$B/fl" true; }
posix_contend() { "$PYTHON" - "$B/pf" <<'PY'
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
PY
}

# A contender on hostB tries every lock in a bounded loop while hostA's
# lockfs restarts; every grant it gets is written down.
GRANTS=$TESTDIR/grants
TRIES=$TESTDIR/tries
tries_past() { (($(cat "$TRIES") > $1)); }
contender_loop() { # STOPFILE
    local n=0 i r
    while [[ ! -e $1 ]] && ((n < 3000)); do
        for i in "${IDIOMS[@]}"; do
            r=$(contend "$(name_of "$i")")
            [[ $r == OK ]] && echo "$i" >>"$GRANTS"
        done
        flock_contend && echo flock >>"$GRANTS"
        n=$((n + 1))
        echo "$n" >"$TRIES"
    done
}

# restart WAY: restart hostA's lockfs; sets PID_A.  kill: nobody unmounts
# the dead mount; the new lockfs must cope, as under Restart=on-failure.
restart() {
    case $1 in
    term) lockfs_stop "$PID_A" TERM || return 1 ;;
    kill)
        kill -KILL "$PID_A"
        wait_until 10 eval '! _pid_alive "$PID_A"' || return 1
        _lockfs_reap "$PID_A"
        ;;
    umount)
        if ((EUID == 0)); then umount "$A"; else fusermount3 -u "$A"; fi || return 1
        wait_until 15 eval '! _pid_alive "$PID_A"' || return 1
        _lockfs_reap "$PID_A"
        ;;
    esac
    start_a || return 1
    PID_A=$LOCKFS_PID
    LOG_A=$LOCKFS_LOG
}

for way in term kill umount; do
    : >"$GRANTS"
    stop=$TESTDIR/stop.$way
    if ((SHARED)); then
        echo 0 >"$TRIES"
        contender_loop "$stop" &
        cpid=$!
        # A round is done before the restart begins...
        wait_until 30 tries_past 0
    fi
    t0=$(date +%s%N)
    restart "$way" # (not under ok: it runs its command in a subshell)
    is "$?" 0 "restart by $way: hostA's lockfs is back"
    diag "restart by $way: $(ms_since "$t0") ms until the new mount served"
    is "$(grep -c " $A fuse" /proc/self/mounts)" 1 "restart by $way: one mount on hostA's mount point"
    if ((SHARED)); then
        # ...and another begins and ends after it.
        n0=$(cat "$TRIES")
        wait_until 30 tries_past $((n0 + 1))
        touch "$stop"
        wait "$cpid"
        cmp_ok "$(cat "$TRIES")" -ge $((n0 + 2)) "restart by $way: the contender tried every lock before, during and after it"
    else
        for i in "${IDIOMS[@]}"; do
            r=$(contend "$(name_of "$i")")
            [[ $r == OK ]] && echo "$i" >>"$GRANTS"
        done
    fi
    flock_contend && echo flock >>"$GRANTS"
    [[ $(posix_contend) == OK ]] && echo posix >>"$GRANTS"
    is "$(sort -u "$GRANTS" | tr '\n' ' ')" "" "restart by $way: the contender got no lock"
    ok "restart by $way: the flock(1) holder still runs" kill -0 "$FLPID"
    ok "restart by $way: its flock is shown orphaned, with its pid (kept until it exits)" wait_until 10 fl_orphaned
    ok "restart by $way: the log says the locks were taken back" \
        log_has "took back $((${#IDIOMS[@]} + 2)) locks of the previous lockfs" "$LOG_A"
    for i in "${IDIOMS[@]}"; do
        is "$(shows "$i")" "${before[$i]}" "restart by $way: $i's lock shows the same fence, content, owner, mode"
        is "$(info_field "$(name_of "$i")" state "$A")" held "restart by $way: $i's lock is held"
        ok "restart by $way: $i's holder heartbeats through the new mount" beat "$i"
    done
done

# The flock(1) and fcntl holders end: their locks go, and the contender
# gets them.
echo go >"$FIFO"
wait "$FLPID"
is "$?" 0 "the flock(1) holder's command ran to its end"
ok "then the contender gets fl" wait_until 10 flock_contend
pl_pid=$PL_PID
echo quit >&"${PL[1]}"
wait "$pl_pid" 2>/dev/null
posix_free() { [[ $(posix_contend) == OK ]]; }
ok "the fcntl holder exits: the contender gets pf" wait_until 10 posix_free

# Releases through the new mount let the contender in.
for i in "${IDIOMS[@]}"; do
    ok "$i's holder releases through the new mount" release "$i"
    got() { [[ $(contend "$(name_of "$1")") == OK ]]; }
    ok "then the contender gets $(name_of "$i")" wait_until 10 got "$i"
done

# Nothing left held: a restart now takes nothing back.
restart term
is "$?" 0 "restart with nothing held"
ok "the record is empty" bash -c '! grep -q "^G " "$1"/mount*.locks' _ "$STATE_A"

if ((SHARED)); then
    # A restart slower than ttl.  The lease runs out at ttl after its last
    # renewal, never earlier; the new lockfs then shows it lost, not held.
    lockfs_stop "$PID_A"
    lockfs_start --mnt "$A" --state "$STATE_A" -o host=hostA,ttl=4s,renew_interval=1s,network_timeout=1s ||
        BAIL_OUT "cannot mount hostA with ttl=4s"
    PID_A=$LOCKFS_PID
    ok "hostA takes slow.lock (ttl 4 s)" takes "$A/slow.lock"
    lockfs_stop "$PID_A"
    t0=$(date +%s%N)
    early=0
    while (($(ms_since "$t0") < 2500)); do
        [[ $(contend slow.lock) == OK ]] && early=1
        sleep 0.2
    done
    is "$early" 0 "hostA stopped: hostB is refused slow.lock for at least 2.5 s of its 4 s ttl"
    got_slow() { [[ $(contend slow.lock) == OK ]]; }
    ok "once ttl has passed hostB gets it" wait_until 20 got_slow
    start_a -o ttl=4s,renew_interval=1s,network_timeout=1s || BAIL_OUT "cannot mount hostA again"
    PID_A=$LOCKFS_PID
    ok "the new lockfs says slow.lock was lost" log_has "lost slow.lock" "$LOCKFS_LOG"
    is "$(status_field "$(status_line slow.lock "$A")" state)" lost "hostA's status shows slow.lock lost"
    is "$(fsop1 lstat "$A/slow.lock")" ENOENT "and not held: the name is free on hostA"
fi

done_testing
