# shellcheck shell=bash
# tests/lib/mount.sh — start, stop and inspect real lockfs mounts for the
# filesystem tests, plus the helpers every test file shares.
#
# Sourcing it:
#   - loads tap.sh;
#   - makes a fresh private directory $TESTDIR (mktemp -d under ${TMPDIR:-/tmp})
#     and registers cleanup: stop every lockfs this script started, unmount
#     anything left, remove $TESTDIR (kept with LOCKFS_TEST_KEEP=1);
#   - bails out when $LOCKFS_BIN is missing or FUSE is unusable: a suite that
#     cannot mount must fail, not pass by skipping everything;
#   - starts a watchdog (TEST_TIMEOUT seconds, default 300) that kills the
#     daemons and the script, so a hung FUSE request cannot hang the run.
#
# Mount helpers:
#   lockfs_start [--mnt DIR] [--state DIR] [--mounted-only] [--faketime OFFSET]
#                [-o KEY=VAL[,...]]... [--arg ARG]...
#       sets MNT, LOCKFS_PID, LOCKFS_LOG, LOCKFS_STATE; returns non-zero (with
#       the daemon's log as diagnostics) when the mount does not come up.
#       The mount is up once .lockfs/status can be read; with --mounted-only,
#       once the kernel shows it mounted (for a backend whose server does not
#       answer, where reading .lockfs/status waits for it).  --faketime: the
#       daemon's wall clock runs OFFSET off ("+40s", "-4m": libfaketime's
#       FAKETIME), its monotonic clocks left alone; see faketime_or_skip.
#       --arg ARG: ARG goes on lockfs's command line as it is, after the rest
#       (-s, -oKEY: the forms lockfs_start itself does not write).
#   faketime_or_skip      FAKETIME_LIB, libfaketime's path; skip_all without it
#   with_faketime OFFSET CMD...   run CMD with its wall clock OFFSET off
#   lockfs_stop [PID] [SIGNAL]    stop (default: the current one, SIGTERM);
#       sets LOCKFS_RC to its exit status; returns non-zero if it did not exit
#       and unmount within the deadline (then it is killed and lazily unmounted).
#   is_fuse_mounted DIR
#
# Detached mounts (LOCKFS_TEST_DETACHED=1, scripts/test's detached pass):
# lockfs_start mounts the way mount(8) does for an fstab line, and lockfs
# detaches (no -f): as root through mount(8) itself ("mount -t fuse -o OPTS
# LOCKFS_BIN#lockfs MNT", the fstab form for a program off the PATH, which
# mount(8) drops), as a user through mount.fuse3 run directly (a "user" fstab
# line would need /etc/fstab edited), with --faketime by running lockfs
# without -f (mount(8) would not pass LD_PRELOAD on).  BACKEND_CONFIG becomes
# -o options (mount(8) has no --config), log_file= sends the daemon's log to
# LOCKFS_LOG, and tests/lib/detach.py, a child subreaper, adopts the daemon:
# LOCKFS_PID is the daemon's own pid and lockfs_stop's LOCKFS_RC its status.
#
# Other helpers: run, as_user2/have_user2, wait_until, st, status_line,
# status_field, info_field, xattr, tmp_leaks, log_has, backend_server_pid,
# backend_server_pause/backend_server_resume (the whole cluster on etcd).

[[ -n ${_MOUNT_SH_LOADED:-} ]] && return 0
_MOUNT_SH_LOADED=1

set -u
umask 022
# Tool messages ("File exists") and ls order are matched literally.
export LC_ALL=C

TESTLIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tap.sh
. "$TESTLIB/tap.sh"

REPO_TOP=$(cd "$TESTLIB/../.." && pwd)
LOCKFS_BIN=${LOCKFS_BIN:-$REPO_TOP/build/src/lockfs}
# /usr/bin/python3 on purpose: a pyenv shim under /root is not reachable by
# the unprivileged users the suite switches to.
PYTHON=${PYTHON:-/usr/bin/python3}
LOCKFS_TEST_HOST=${LOCKFS_TEST_HOST:-lockfs-testhost}
LOCKFS_TEST_USER2=${LOCKFS_TEST_USER2:-nobody}
HOSTNAME_SHORT=$(uname -n)
HOSTNAME_SHORT=${HOSTNAME_SHORT%%.*}

_lockfs_seq=0
declare -a _lockfs_pids=()
declare -A _lockfs_mnt_of=() _lockfs_log_of=()
# Detached mounts: the detach.py that adopted the daemon, and its files' stem.
declare -A _lockfs_adopter_of=() _lockfs_stem_of=()
declare -a _lockfs_mnts=()
declare -a _faketime_holders=()

# ---------------------------------------------------------------- preconditions

_mount_preflight() {
    [[ -x $LOCKFS_BIN ]] ||
        BAIL_OUT "lockfs binary not found or not executable: $LOCKFS_BIN (build it: meson setup build && ninja -C build, or set LOCKFS_BIN)"
    [[ -c /dev/fuse && -r /dev/fuse && -w /dev/fuse ]] ||
        BAIL_OUT "/dev/fuse missing or not read-writable by uid $EUID (the setup script makes it 0666)"
    [[ -x $PYTHON ]] || BAIL_OUT "python3 not found at $PYTHON (set PYTHON)"
    if ((EUID != 0)); then
        command -v fusermount3 >/dev/null || BAIL_OUT "fusermount3 missing (apt-get install fuse3)"
        grep -qx '[[:space:]]*user_allow_other[[:space:]]*' /etc/fuse.conf 2>/dev/null ||
            BAIL_OUT "user_allow_other is not enabled in /etc/fuse.conf; the unprivileged run mounts with allow_other (setgid-mail tools need it)"
    fi
}

_mount_make_testdir() {
    local base=${TMPDIR:-/tmp} name
    name=$(basename "$0")
    name=${name%.t}
    TESTDIR=$(mktemp -d "$base/lockfs-$name.XXXXXX") || BAIL_OUT "mktemp -d under $base failed"
    # Other uids (as_user2) must be able to reach the mount points inside.
    chmod 0755 "$TESTDIR"
    : >"$TESTDIR/.pids"
}

# ---------------------------------------------------------------- small helpers

# run SECS CMD...: run CMD under timeout; sets RC, OUT, ERR, ELAPSED_MS.
# "run SECS as_user2 CMD..." runs it as the second uid.
run() {
    local secs=$1; shift
    if [[ ${1:-} == as_user2 ]]; then
        shift
        if ! have_user2; then
            RC=77 OUT='' ERR="skip: $(user2_skip_reason)" ELAPSED_MS=0
            return 77
        fi
        set -- "${AS_USER2[@]}" "$@"
    fi
    local t0 t1
    t0=$(date +%s%N)
    timeout -k 3 "$secs" "$@" >"$TESTDIR/.run.out" 2>"$TESTDIR/.run.err" </dev/null
    RC=$?
    t1=$(date +%s%N)
    ELAPSED_MS=$(((t1 - t0) / 1000000))
    OUT=$(<"$TESTDIR/.run.out")
    ERR=$(<"$TESTDIR/.run.err")
    ((RC == 124)) && diag "timed out after ${secs}s: $*"
    return 0
}

# fsop SYSCALL ARGS...: one system call through tests/lib/fsop.py; prints OK or
# the errno name.
fsop() { timeout -k 3 20 "$PYTHON" "$TESTLIB/fsop.py" "$@"; }

# The first word of fsop's answer (OK / EEXIST / ...).
fsop1() {
    local r
    r=$(fsop "$@")
    printf '%s' "${r%% *}"
}

# st FORMAT PATH: stat -c with a timeout (a hung FUSE call must not hang us).
st() { timeout -k 3 10 stat -c "$1" -- "$2"; }
# in_fuse_wait PID: a child of PID waits for the answer of a FUSE request (a
# stopped mount's): its wchan says so.
in_fuse_wait() {
    local c
    for c in $(pgrep -P "$1"); do
        [[ $(cat "/proc/$c/wchan" 2>/dev/null) == request_wait_answer ]] && return 0
    done
    return 1
}

# wait_until SECS CMD...: poll CMD every 0.1 s until it succeeds; 1 on timeout.
wait_until() {
    local secs=$1; shift
    local deadline=$(($(date +%s%N) + secs * 1000000000))
    while :; do
        "$@" && return 0
        (($(date +%s%N) >= deadline)) && return 1
        sleep 0.1
    done
}

# wait_clock_past EPOCH: wait until the wall clock's second is beyond EPOCH
# (used where a test needs time to pass, e.g. to see ctime move).
wait_clock_past() {
    while (($(date +%s) <= $1)); do sleep 0.05; done
}

now() { date +%s; }

# tmp_leaks DIR: names left behind by the legacy tools' temporary files
# (legacy-clients.md §8.15): liblockfile .lk*, procmail _*, mutt
# NAME.host.pid, mailutils NAME.pid.time.host, movemail mu??????,
# Emacs E??????.
tmp_leaks() {
    local dir=$1 n
    while IFS= read -r n; do
        case $n in
            .lk*) printf '%s\n' "$n" ;;
            _*) printf '%s\n' "$n" ;;
            mu??????) printf '%s\n' "$n" ;;
            E??????) printf '%s\n' "$n" ;;
            *."$HOSTNAME_SHORT".[0-9]*) printf '%s\n' "$n" ;;
            *)
                [[ $n =~ \.[0-9]+\.[0-9]+\.[^/]+$ ]] && printf '%s\n' "$n"
                ;;
        esac
    done < <(timeout 10 ls -A -- "$dir")
}

# ---------------------------------------------------------------- second uid

if id -u "$LOCKFS_TEST_USER2" >/dev/null 2>&1; then
    USER2_UID=$(id -u "$LOCKFS_TEST_USER2")
    USER2_GID=$(id -g "$LOCKFS_TEST_USER2")
else
    USER2_UID='' USER2_GID=''
fi
AS_USER2=(setpriv --reuid="$USER2_UID" --regid="$USER2_GID" --clear-groups --)

user2_skip_reason() {
    if ((EUID != 0)); then
        printf 'switching to a second uid needs root; the suite runs as uid %s' "$EUID"
    elif [[ -z $USER2_UID ]]; then
        printf 'second test user %s does not exist (set LOCKFS_TEST_USER2)' "$LOCKFS_TEST_USER2"
    elif [[ $USER2_UID == "$EUID" ]]; then
        printf 'second test user %s has the suite'"'"'s own uid' "$LOCKFS_TEST_USER2"
    fi
}

have_user2() { [[ -z $(user2_skip_reason) ]]; }

# as_user2 CMD...: run CMD as the second uid; "skip" (status 77) when the
# suite cannot switch uids.
as_user2() {
    if ! have_user2; then
        printf 'skip: %s\n' "$(user2_skip_reason)" >&2
        return 77
    fi
    "${AS_USER2[@]}" "$@"
}

# ---------------------------------------------------------------- mounts

# is_fuse_mounted DIR: DIR is a mount point of a fuse filesystem, according to
# the kernel (no FUSE request involved).
is_fuse_mounted() {
    local dir
    dir=$(realpath -- "$1" 2>/dev/null) || dir=$1
    awk -v d="$dir" '
        { mp = $5; gsub(/\\040/, " ", mp); gsub(/\\011/, "\t", mp); gsub(/\\134/, "\\", mp)
          fs = ""; for (i = 7; i <= NF; i++) if ($i == "-") { fs = $(i + 1); break }
          if (mp == d && fs ~ /^fuse/) found = 1 }
        END { exit !found }' /proc/self/mountinfo
}

is_mounted_any() {
    local dir
    dir=$(realpath -- "$1" 2>/dev/null) || dir=$1
    awk -v d="$dir" '{ if ($5 == d) found = 1 } END { exit !found }' /proc/self/mountinfo
}

# A process we started has exited (a zombie counts as exited: kill -0 would
# still succeed on it).
_pid_alive() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    [[ ${s%% *} != Z ]]
}

# PID is still the lockfs this file started for MNT: its command line names
# MNT.  A pid this file has waited for may belong to any other process a
# moment later (pid_max is 32768 on many machines, and the tests fork a lot),
# and signalling it would hit another test's process, or another run's.
_is_lockfs_of() {
    local pid=$1 mnt=$2 cmd real
    [[ -n $mnt && -r /proc/$pid/cmdline ]] || return 1
    cmd=$(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)
    # mount(8) hands the helper the canonical path.
    real=$(realpath -m -- "$mnt")
    [[ " $cmd " == *" $mnt "* || " $cmd " == *" $real "* ]]
}

# _lockfs_reap PID: wait for lockfs PID, which has exited or is about to;
# its exit status is then in $?.  A detached daemon is not our child: the
# detach.py that adopted it has its status.
_lockfs_reap() {
    local pid=$1 stem=${_lockfs_stem_of[$1]:-} rc
    if [[ -z $stem ]]; then
        wait "$pid" 2>/dev/null
        return
    fi
    wait "${_lockfs_adopter_of[$pid]}" 2>/dev/null
    rc=$(cat "$stem.rc" 2>/dev/null) || rc=255
    [[ $rc =~ ^[0-9]+$ ]] || rc=255
    return "$rc"
}

# _config_as_options FILE: a key file's keys as -o options ("group_key=value";
# [lockfs] keys bare), "," and "\" escaped as lockfs -o reads them.
_config_as_options() {
    local line group='' key val out=''
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line#"${line%%[![:space:]]*}"}
        [[ -z $line || $line == '#'* ]] && continue
        if [[ $line =~ ^\[(.*)\]$ ]]; then
            group=${BASH_REMATCH[1]}
            continue
        fi
        key=${line%%=*} val=${line#*=}
        key=${key%"${key##*[![:space:]]}"}
        val=${val#"${val%%[![:space:]]*}"}
        val=${val//\\/\\\\}
        val=${val//,/\\,}
        [[ $group == lockfs ]] || key=${group}_$key
        out+=${out:+,}$key=$val
    done <"$1"
    printf '%s' "$out"
}

# _lockfs_start_detached MNT OPTIONS [VAR=VALUE...]: start a detaching
# lockfs (see the header); sets LOCKFS_PID.  Fails, with diagnostics, when
# the mount command fails or leaves no daemon.
_lockfs_start_detached() {
    local mnt=$1 o=$2 stem=$TESTDIR/.detach$_lockfs_seq rc
    shift 2
    local -a cmd
    [[ -n $BACKEND_CONFIG ]] && o="$(_config_as_options "$BACKEND_CONFIG"),$o"
    o+=",log_file=$LOCKFS_LOG"
    if (($#)); then
        cmd=(env "$@" "$LOCKFS_BIN" lockfs "$mnt" -o "$o")
    elif ((EUID == 0)); then
        cmd=(mount -t fuse -o "$o" "$LOCKFS_BIN#lockfs" "$mnt")
    else
        cmd=(/sbin/mount.fuse3 "$LOCKFS_BIN#lockfs" "$mnt" -o "$o")
    fi
    LOCKFS_CMD="${cmd[*]}"
    env --default-signal=INT,QUIT,TERM,HUP "$PYTHON" "$TESTLIB/detach.py" "$stem" -- "${cmd[@]}" \
        </dev/null >>"$LOCKFS_LOG" 2>&1 &
    local adopter=$!
    local deadline=$(($(date +%s) + ${LOCKFS_MOUNT_TIMEOUT:-15}))
    until [[ -e $stem.pid ]]; do
        if ! _pid_alive "$adopter" || (($(date +%s) >= deadline)); then
            diag "no answer from the mount command after ${LOCKFS_MOUNT_TIMEOUT:-15}s: $LOCKFS_CMD"
            diag "$(tail -n 20 "$LOCKFS_LOG")"
            kill "$adopter" 2>/dev/null
            return 1
        fi
        sleep 0.05
    done
    rc=$(<"$stem.mount")
    LOCKFS_PID=$(<"$stem.pid")
    if [[ $rc != 0 || $LOCKFS_PID == 0 ]]; then
        wait "$adopter" 2>/dev/null
        diag "the mount command exited with status $rc${LOCKFS_PID/#0/ and left no daemon}: $LOCKFS_CMD"
        diag "$(tail -n 20 "$LOCKFS_LOG")"
        return 1
    fi
    _lockfs_adopter_of[$LOCKFS_PID]=$adopter
    _lockfs_stem_of[$LOCKFS_PID]=$stem
}

# _lockfs_mounted MNT: the mount lockfs_start made is there.  Stacked over a
# live lockfs (tests/lib/spool.sh), that one's mount would look ready at
# once and the test's first calls reach it: then the new mount is the one
# whose device is not that one's ($_lockfs_dev_below, set only when a live
# lockfs answered at MNT before the start).  Over a dead mount, which the new
# lockfs unmounts, or none, any FUSE mount is the new one (and the device
# could not tell: a dead mount's attributes may still be cached, and its
# device number is free again for the next mount).
_lockfs_mounted() {
    local dev
    is_fuse_mounted "$1" || return 1
    [[ -z $_lockfs_dev_below ]] && return 0
    dev=$(timeout 5 stat -c %d -- "$1" 2>/dev/null) && [[ $dev != "$_lockfs_dev_below" ]]
}

_lockfs_ready() {
    _lockfs_mounted "$1" && timeout 5 cat -- "$1/.lockfs/status" >/dev/null 2>&1
}

lockfs_start() {
    local mnt='' state='' o ready=_lockfs_ready fake=''
    local -a pre=()
    local -a opts=() args=()
    while (($#)); do
        case $1 in
            --mnt) mnt=$2; shift 2 ;;
            --state) state=$2; shift 2 ;;
            --mounted-only) ready=is_fuse_mounted; shift ;;
            --faketime) fake=$2; shift 2 ;;
            -o) opts+=("$2"); shift 2 ;;
            --arg) args+=("$2"); shift 2 ;;
            *) BAIL_OUT "lockfs_start: unknown argument $1" ;;
        esac
    done
    _lockfs_seq=$((_lockfs_seq + 1))
    if [[ -z $mnt ]]; then
        mnt=$TESTDIR/mnt$_lockfs_seq
        mkdir -p "$mnt"
    fi
    if [[ -z $state ]]; then
        # Always a fresh state_dir: the fence counter must never leak between tests.
        state=$TESTDIR/state$_lockfs_seq
        mkdir -p "$state"
    fi
    o="state_dir=$state,host=$LOCKFS_TEST_HOST${BACKEND_OPTS:+,$BACKEND_OPTS}"
    # Unprivileged mounts need allow_other explicitly: the setgid-mail tools
    # run with a gid the kernel would otherwise refuse, and so do other uids.
    ((EUID != 0)) && o+=",allow_other"
    local x
    for x in "${opts[@]}"; do o+=",$x"; done
    LOCKFS_LOG=$TESTDIR/lockfs$_lockfs_seq.log
    _lockfs_dev_below=
    if timeout 5 cat -- "$mnt/.lockfs/status" >/dev/null 2>&1; then
        _lockfs_dev_below=$(timeout 5 stat -c %d -- "$mnt" 2>/dev/null)
    fi
    # env --default-signal: bash starts background jobs with SIGINT ignored,
    # and libfuse leaves an ignored signal ignored; the daemon must see
    # SIGINT/SIGTERM as a terminal would deliver them.
    if [[ -n $fake ]]; then
        [[ -n ${FAKETIME_LIB:-} ]] || faketime_lib >/dev/null ||
            BAIL_OUT "lockfs_start --faketime: no libfaketime (call faketime_or_skip first)"
        pre=("FAKETIME=$fake" FAKETIME_DONT_FAKE_MONOTONIC=1 "LD_PRELOAD=$FAKETIME_LIB")
        _faketime_shared || return 1
        pre+=("FAKETIME_SHARED=$FAKETIME_SHARED")
    fi
    if [[ ${LOCKFS_TEST_DETACHED:-0} == 1 && ${#args[@]} -eq 0 ]]; then
        : >"$LOCKFS_LOG"
        _lockfs_start_detached "$mnt" "$o" "${pre[@]}" || return 1
    else
        # (--arg words are for lockfs's own command line: always -f.)
        LOCKFS_CMD="$LOCKFS_BIN $mnt -f -o $o${args[*]:+ ${args[*]}}"
        env --default-signal=INT,QUIT,TERM,HUP "${pre[@]}" "$LOCKFS_BIN" "$mnt" -f -o "$o" \
            ${BACKEND_CONFIG:+--config "$BACKEND_CONFIG"} "${args[@]}" \
            </dev/null >"$LOCKFS_LOG" 2>&1 &
        LOCKFS_PID=$!
    fi
    MNT=$mnt
    LOCKFS_STATE=$state
    LOCKFS_OPTS=$o
    _lockfs_pids+=("$LOCKFS_PID")
    _lockfs_mnt_of[$LOCKFS_PID]=$mnt
    _lockfs_log_of[$LOCKFS_PID]=$LOCKFS_LOG
    _lockfs_mnts+=("$mnt")
    printf '%s\n' "$LOCKFS_PID" >>"$TESTDIR/.pids"

    local deadline=$(($(date +%s) + ${LOCKFS_MOUNT_TIMEOUT:-15}))
    while :; do
        "$ready" "$mnt" && return 0
        if ! _pid_alive "$LOCKFS_PID"; then
            _lockfs_reap "$LOCKFS_PID"
            diag "lockfs exited with status $? before the mount was ready: $LOCKFS_CMD"
            diag "$(tail -n 20 "$LOCKFS_LOG")"
            return 1
        fi
        if (($(date +%s) >= deadline)); then
            diag "lockfs mount at $mnt not ready after ${LOCKFS_MOUNT_TIMEOUT:-15}s"
            diag "$(tail -n 20 "$LOCKFS_LOG")"
            return 1
        fi
        sleep 0.05
    done
}

# faketime_lib: set FAKETIME_LIB to libfaketime.so.1 (Debian's faketime
# package), print it; 1 when it is not installed.
faketime_lib() {
    local f
    for f in ${FAKETIME_LIB:-} /usr/lib/*/faketime/libfaketime.so.1 \
        /usr/lib/faketime/libfaketime.so.1 /usr/local/lib/faketime/libfaketime.so.1; do
        if [[ -r $f ]]; then
            FAKETIME_LIB=$f
            printf '%s\n' "$f"
            return 0
        fi
    done
    return 1
}

# _faketime_shared: sets FAKETIME_SHARED to a semaphore and shared memory
# of libfaketime's that a process of this test owns, for one mount.
# libfaketime keeps a faked clock's state there: the first process under
# it creates them, its children find them by FAKETIME_SHARED, and the
# creator removes them when it exits.  A detaching lockfs's first process
# is the parent that exits once the mount is up, so the daemon's notify
# command found them gone ("sem_open failed") and died; a lockfs killed -9
# leaves them in /dev/shm.  This test's own holder creates them, and the
# cleanup removes them.
_faketime_shared() {
    local holder i
    # As long as the test may run (its watchdog's TEST_TIMEOUT), and a minute.
    env FAKETIME=+0s "LD_PRELOAD=$FAKETIME_LIB" sleep $((${TEST_TIMEOUT:-300} + 60)) </dev/null >/dev/null 2>&1 &
    holder=$!
    _faketime_holders+=("$holder")
    for ((i = 0; i < 100; i++)); do
        if [[ -e /dev/shm/faketime_shm_$holder && -e /dev/shm/sem.faketime_sem_$holder ]]; then
            FAKETIME_SHARED="/faketime_sem_$holder /faketime_shm_$holder"
            return 0
        fi
        sleep 0.05
    done
    diag "libfaketime made no shared memory for its holder (pid $holder) within 5 s"
    return 1
}

_faketime_cleanup() {
    local pid
    for pid in "${_faketime_holders[@]}"; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        rm -f "/dev/shm/faketime_shm_$pid" "/dev/shm/sem.faketime_sem_$pid"
    done
}

# faketime_or_skip: this file needs a faked wall clock.
faketime_or_skip() {
    faketime_lib >/dev/null ||
        skip_all "libfaketime is not installed (apt-get install faketime)"
    # A fake clock must show, and the monotonic one must not move with it.
    local t
    t=$(with_faketime +1d date +%s) || t=0
    (( t > $(date +%s) + 80000 )) ||
        skip_all "libfaketime ($FAKETIME_LIB) does not fake the clock here"
}

# with_faketime OFFSET CMD...: CMD with its wall clock OFFSET off.
with_faketime() {
    local off=$1; shift
    env "FAKETIME=$off" FAKETIME_DONT_FAKE_MONOTONIC=1 "LD_PRELOAD=$FAKETIME_LIB" "$@"
}

# lockfs_start_or_bail ARGS...: for a mount the rest of the file depends on;
# if it does not come up, this file fails and stops (other files still run).
lockfs_start_or_bail() {
    lockfs_start "$@" && return 0
    fail "mount lockfs ($*); see diagnostics above"
    diag "stopping this test file: everything after depends on that mount"
    done_testing
}

_unmount_force() {
    local mnt=$1
    if ((EUID == 0)); then
        umount -l -- "$mnt" 2>/dev/null || fusermount3 -u -z -- "$mnt" 2>/dev/null
    else
        fusermount3 -u -z -- "$mnt" 2>/dev/null
    fi
}

lockfs_stop() {
    local pid=${1:-$LOCKFS_PID} sig=${2:-TERM}
    local mnt=${_lockfs_mnt_of[$pid]:-}
    LOCKFS_RC=''
    if ! _pid_alive "$pid" || ! _is_lockfs_of "$pid" "$mnt"; then
        _lockfs_reap "$pid"
        LOCKFS_RC=$?
        diag "lockfs (pid $pid) had already exited with status $LOCKFS_RC"
        [[ -n $mnt ]] && is_mounted_any "$mnt" && _unmount_force "$mnt"
        return 1
    fi
    kill -s "$sig" "$pid"
    local deadline=$(($(date +%s) + ${LOCKFS_STOP_TIMEOUT:-15}))
    while _pid_alive "$pid"; do
        if (($(date +%s) >= deadline)); then
            diag "lockfs (pid $pid) still running ${LOCKFS_STOP_TIMEOUT:-15}s after SIG$sig; killing it"
            kill -KILL "$pid" 2>/dev/null
            _lockfs_reap "$pid"
            LOCKFS_RC=timeout
            [[ -n $mnt ]] && _unmount_force "$mnt"
            return 1
        fi
        sleep 0.05
    done
    _lockfs_reap "$pid"
    LOCKFS_RC=$?
    if [[ -n $mnt ]] && is_mounted_any "$mnt"; then
        diag "lockfs exited ($LOCKFS_RC) but $mnt is still mounted"
        _unmount_force "$mnt"
        return 1
    fi
    return 0
}

# A ThreadSanitizer build (scripts/test --tsan) writes its reports to the
# daemon's stderr, its log, and goes on: the daemons are all stopped here, so
# every report is in; one fails the file (its exit status), with the report.
_tsan_check_logs() {
    local pid log n
    for pid in "${_lockfs_pids[@]}"; do
        log=${_lockfs_log_of[$pid]:-}
        [[ -n $log && -s $log ]] || continue
        n=$(grep -c 'WARNING: ThreadSanitizer' "$log") || continue
        diag "lockfs (pid $pid): $n ThreadSanitizer report(s) in $log:"
        diag "$(grep -A 30 'WARNING: ThreadSanitizer' "$log" | head -n 200)"
        _tap_late_failure=1
    done
}

_mount_cleanup() {
    local pid mnt
    # Keep the daemons' logs visible when something failed: they hold the
    # daemon's side of every failure.
    if ((_tap_failed > 0)); then
        for pid in "${_lockfs_pids[@]}"; do
            [[ -s ${_lockfs_log_of[$pid]} ]] || continue
            diag "---- last lines of lockfs log ${_lockfs_log_of[$pid]} (pid $pid):"
            diag "$(tail -n 25 "${_lockfs_log_of[$pid]}")"
        done
    fi
    for pid in "${_lockfs_pids[@]}"; do
        { _pid_alive "$pid" && _is_lockfs_of "$pid" "${_lockfs_mnt_of[$pid]:-}"; } ||
            { _lockfs_reap "$pid"; continue; }
        lockfs_stop "$pid" TERM >/dev/null 2>&1 || :
    done
    for mnt in "${_lockfs_mnts[@]}"; do
        is_mounted_any "$mnt" && _unmount_force "$mnt"
    done
    _tsan_check_logs
    _faketime_cleanup
    eval "$_backend_stop"
    if _keeping_testdir; then
        diag "keeping $TESTDIR"
        return
    fi
    # Never rm -rf into something still mounted (a passthrough mount would
    # forward the deletes to the backing directory).
    if grep -qF " $TESTDIR/" /proc/self/mountinfo; then
        diag "not removing $TESTDIR: something below it is still mounted"
        return
    fi
    chmod -R u+rwX "$TESTDIR" 2>/dev/null
    rm -rf -- "$TESTDIR"
}

# ---------------------------------------------------------------- watchdog

_mount_watchdog() {
    local secs=${TEST_TIMEOUT:-300} main=$$ pidfile=$TESTDIR/.pids
    (
        trap - EXIT INT HUP
        sp=''
        # Reap the sleep too, or it lingers as a zombie of init.
        trap '[[ -n $sp ]] && { kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null; }; exit 0' TERM
        sleep "$secs" </dev/null >/dev/null 2>&1 &
        sp=$!
        wait "$sp"
        printf 'not ok - watchdog: %s still running after %ss; killing lockfs and the test\n' "$0" "$secs"
        # Killing the daemons aborts their FUSE connections, which unblocks
        # any request the test is stuck in.
        while read -r p; do
            [[ $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null) == *lockfs* ]] && kill -KILL "$p" 2>/dev/null
        done <"$pidfile"
        kill -TERM "$main" 2>/dev/null
        sleep 5
        kill -KILL "$main" 2>/dev/null
    ) &
    _watchdog_pid=$!
    at_exit 'kill "$_watchdog_pid" 2>/dev/null'
}

# ---------------------------------------------------------------- inspection

# status_escape KEY: KEY as .lockfs/status prints it (src/common/view_format.h;
# tests/lib/viewfmt.py for anything beyond printable ASCII and the space).
status_escape() {
    local s=$1
    if [[ $s == *[!\ -~]* ]]; then
        "$PYTHON" "$TESTLIB/viewfmt.py" escape "$s"
        return
    fi
    s=${s//\\/\\134}
    s=${s// /\\040}
    printf '%s' "$s"
}

# status_line KEY [MNT]: the .lockfs/status line of KEY (escaped match on the
# first field), empty when absent.
status_line() {
    local key mnt=${2:-$MNT}
    key=$(status_escape "$1")
    timeout 10 cat -- "$mnt/.lockfs/status" | awk -v k="$key" '
        { split($0, f, " "); if (f[1] == k) { print; exit } }'
}

# notify_recorder EVENTS: prints the path of a notify command that appends
# "EVENT LOCK FENCE" to EVENTS (made empty, writable by every test user) for
# each event.
notify_recorder() {
    local cmd=$TESTDIR/notify-recorder.sh
    printf '#!/bin/sh\necho "$LOCKFS_EVENT $LOCKFS_LOCK $LOCKFS_FENCE" >>"%s"\n' "$1" >"$cmd"
    chmod 755 "$cmd"
    : >"$1"
    chmod 666 "$1"
    printf '%s\n' "$cmd"
}

# status_field LINE NAME: the value of NAME=VALUE in a status line.
status_field() {
    local f
    for f in $1; do
        [[ $f == "$2="* ]] && { printf '%s' "${f#*=}"; return 0; }
    done
    return 1
}

# info_field RELPATH KEY [MNT]: "key: value" from .lockfs/RELPATH.
info_field() {
    local mnt=${3:-$MNT}
    timeout 10 cat -- "$mnt/.lockfs/$1" | awk -v k="$2" '
        { i = index($0, ": "); if (i > 0 && substr($0, 1, i - 1) == k) { print substr($0, i + 2); exit } }'
}

# xattr FILE NAME: the value of extended attribute NAME (empty on error).
# -h: never follow a symlink lock to its target.  (The kernel itself refuses
# user.* attributes on symlinks, so symlink locks have them only in .lockfs/.)
xattr() {
    timeout 10 getfattr -h --absolute-names --only-values -n "$2" -- "$1" 2>/dev/null
}

# fence_greater A B: A > B as decimal numbers of any length (tinystore's
# fences are 128-bit, past bash arithmetic).
fence_greater() {
    local a=${1#"${1%%[!0]*}"} b=${2#"${2%%[!0]*}"}
    ((${#a} != ${#b})) && { ((${#a} > ${#b})); return; }
    [[ $a > $b ]]
}

# fence_gt NEW OLD DESC: both are fences (decimal) and NEW > OLD.
fence_gt() {
    if [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]]; then
        if fence_greater "$1" "$2"; then
            pass "$3 (fence $2 -> $1)"
        else
            fail "$3 (fence $2 -> $1)"
        fi
    else
        fail "$3 (fences not readable: new '$1', old '$2')"
    fi
}

# held_by MNT KEY HOST [FENCE]: MNT's .lockfs/status shows KEY held by HOST
# (with FENCE): what MNT's host believes, from the backend's list.
held_by() {
    local line
    line=$(status_line "$2" "$1")
    [[ $(status_field "$line" state) == held && $(status_field "$line" host) == "$3" ]] || return 1
    [[ -z ${4:-} || $(status_field "$line" fence) == "$4" ]]
}

# takes PATH [CONTENT]: an O_EXCL create of PATH succeeds (the lock taken).
takes() { [[ $(fsop1 excl "$1" 0644 "${2:-}") == OK ]]; }

# log_has ERE [LOG]: the daemon log has a line matching ERE.
log_has() { grep -Eq -- "$1" "${2:-$LOCKFS_LOG}"; }

# ms_since T0: milliseconds since T0 (date +%s%N).
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# status_empty MNT: .lockfs/status lists no lock (bounded read).
status_empty() { [[ -z $(timeout 10 cat -- "$1/.lockfs/status") ]]; }
# count_sections LOG: "SECTIONS INTERLEAVED" of a log of "S who n" / "E who n"
# lines (one writer at a time would give "N 0").
count_sections() {
    awk '$1 == "S" { s++; if (open != "") bad++; open = $2 " " $3 }
         $1 == "E" { if (open != $2 " " $3) bad++; open = "" }
         END { print s + 0, bad + 0 }' "$1"
}
# timed SYSCALL ARGS...: fsop1 with the time it took: sets R and MS.
timed() {
    local t0
    t0=$(date +%s%N)
    R=$(fsop1 "$@")
    MS=$(ms_since "$t0")
}
# state_of PATH: its user.lockfs.state (through a descriptor's /proc path:
# the mount's own view, no backend call).
state_of() { timeout 10 getfattr --absolute-names --only-values -n user.lockfs.state -- "$1" 2>/dev/null; }

# ---------------------------------------------------------------- backends

# skip_all REASON: this file does not apply (to this backend, or here).
skip_all() {
    printf '1..0 # SKIP %s\n' "$(_tap_clean "$*")"
    _tap_done=1
    exit 0
}

# backend_server_pid: the pid of this file's tinystore server, slapd or etcd member m0.
backend_server_pid() {
    case $LOCKFS_BACKEND in
    tinystore) cat "$TS_DIR/pid" ;;
    ldap) cat "$SLAPD_TOP/slapd/slapd.pid" ;;
    etcd) cat "$ETCD_TOP/m0/pid" ;; # one member of three
    *) return 1 ;;
    esac
}

# backend_server_pause / backend_server_resume: the server hangs (SIGSTOP) /
# goes on (SIGCONT); on etcd every member of the cluster, which is "the
# server" (one member paused is a failover, not an outage).
backend_server_pause() { _backend_server_signal STOP; }
backend_server_resume() { _backend_server_signal CONT; }
_backend_server_signal() {
    if [[ $LOCKFS_BACKEND == etcd ]]; then
        # shellcheck disable=SC2046 # one pid a file
        kill "-$1" $(cat "$ETCD_TOP"/m[0-2]/pid 2>/dev/null)
    else
        kill "-$1" "$(backend_server_pid)"
    fi
}

# blocked_in_fuse PID: PID is waiting for an answer from a FUSE daemon.
blocked_in_fuse() {
    [[ $(cat "/proc/$1/wchan" 2>/dev/null) == *request_wait_answer* ]]
}

# local_backend_only WHAT: skip the whole file on other backends.
local_backend_only() {
    [[ $LOCKFS_BACKEND == local ]] || skip_all "$* is the local backend's; this run tests $LOCKFS_BACKEND"
}

# The suite runs once per backend (scripts/test, LOCKFS_BACKENDS): every
# mount of a file uses one server of that backend, started here on loopback.
LOCKFS_BACKEND=${LOCKFS_BACKEND:-local}
BACKEND_OPTS=
BACKEND_CONFIG=
_backend_stop=:
_backend_start() {
    case $LOCKFS_BACKEND in
    local) ;;
    tinystore)
        # shellcheck source=tinystore.sh
        . "$TESTLIB/tinystore.sh"
        local rc=0
        # The store's socket path must fit in sockaddr_un (108 bytes), which
        # $TESTDIR under the runner's per-file TMPDIR may not: a short one.
        TS_DIR=$(mktemp -d /tmp/lkts.XXXXXX) || BAIL_OUT "mktemp for the tinystore server failed"
        tinystore_start "$TS_DIR" >/dev/null 2>"$TESTDIR/.backend.err" || rc=$?
        if ((rc == 77)); then
            rm -rf -- "$TS_DIR"
            skip_all "no tinystore server: $(head -n 1 "$TESTDIR/.backend.err")"
        elif ((rc != 0)); then
            BAIL_OUT "cannot start a tinystore server: $(head -n 3 "$TESTDIR/.backend.err")"
        fi
        BACKEND_OPTS="backend=tinystore,tinystore_dir=$TINYSTORE_STORE"
        _backend_stop="tinystore_stop \"\$TS_DIR\" >/dev/null 2>&1; rm -rf -- \"\$TS_DIR\""
        ;;
    ldap)
        local why facts
        why=$(bash "$TESTLIB/slapd.sh" check 2>&1) || skip_all "no slapd: $why"
        # A short directory: its ldapi socket path must fit in sockaddr_un.
        SLAPD_TOP=$(mktemp -d /tmp/lksd.XXXXXX) || BAIL_OUT "mktemp for slapd failed"
        facts=$(bash "$TESTLIB/slapd.sh" start "$SLAPD_TOP/slapd" --watch $$ 2>"$TESTDIR/.backend.err") ||
            BAIL_OUT "cannot start slapd: $(head -n 3 "$TESTDIR/.backend.err")"
        eval "$facts"
        # DNs hold commas, which mount options cannot: the [ldap] keys go in a file.
        BACKEND_CONFIG=$TESTDIR/ldap.conf
        printf '[ldap]\nuri = %s\nbind_dn = %s\npassword_file = %s\nca_file = %s\nbase = ou=locks,%s\n' \
            "$SLAPD_URI" "$SLAPD_USERDN" "$SLAPD_USERPW_FILE" "$SLAPD_CA" "$SLAPD_SUFFIX" \
            >"$BACKEND_CONFIG"
        # LOCKFS_TEST_LDAP_SESSIONS=no: each lock renewed by itself (the old way).
        [[ -n ${LOCKFS_TEST_LDAP_SESSIONS:-} ]] &&
            printf 'sessions = %s\n' "$LOCKFS_TEST_LDAP_SESSIONS" >>"$BACKEND_CONFIG"
        BACKEND_OPTS="backend=ldap"
        _backend_stop="bash \"\$TESTLIB/slapd.sh\" stop \"\$SLAPD_TOP/slapd\" >/dev/null 2>&1; rm -rf -- \"\$SLAPD_TOP\""
        ;;
    etcd)
        # A 3-member cluster on loopback (tests/lib/etcd.sh); endpoints are
        # separated by ';' in a mount option, which splits at commas.
        local rc=0 facts
        ETCD_TOP=$(mktemp -d /tmp/lket.XXXXXX) || BAIL_OUT "mktemp for etcd failed"
        facts=$(bash "$TESTLIB/etcd.sh" start "$ETCD_TOP" --watch $$ 2>"$TESTDIR/.backend.err") || rc=$?
        if ((rc == 77)); then
            rm -rf -- "$ETCD_TOP"
            skip_all "no etcd: $(head -n 1 "$TESTDIR/.backend.err")"
        elif ((rc != 0)); then
            BAIL_OUT "cannot start an etcd cluster: $(head -n 3 "$TESTDIR/.backend.err")"
        fi
        eval "$facts"
        BACKEND_OPTS="backend=etcd,etcd_endpoints=${ETCD_ENDPOINTS//,/;}"
        _backend_stop="bash \"\$TESTLIB/etcd.sh\" stop \"\$ETCD_TOP\" >/dev/null 2>&1; _keep_etcd_logs; rm -rf -- \"\$ETCD_TOP\""
        ;;
    *) BAIL_OUT "unknown LOCKFS_BACKEND '$LOCKFS_BACKEND' (local, tinystore, ldap, etcd)" ;;
    esac
}

# _keeping_testdir: the cleanup keeps $TESTDIR (LOCKFS_TEST_KEEP, or
# LOCKFS_TEST_KEEP_FAILED after a failure).
_keeping_testdir() { [[ -n ${LOCKFS_TEST_KEEP:-} ]] || ((_tap_failed > 0 && ${LOCKFS_TEST_KEEP_FAILED:-0})); }

# _keep_etcd_logs: when the test directory is kept, the members' logs go
# with it (the cluster's own directory is removed).
_keep_etcd_logs() {
    local m
    _keeping_testdir || return 0
    for m in "$ETCD_TOP"/m*; do
        [[ -f $m/log ]] && cp -- "$m/log" "$TESTDIR/etcd-${m##*/}.log"
    done
    return 0
}

# ---------------------------------------------------------------- init

_mount_preflight
_mount_make_testdir
at_exit _mount_cleanup
_mount_watchdog
cd "$TESTDIR" || BAIL_OUT "cannot cd to $TESTDIR"
_backend_start

# lockfsctl_or_bail: CTL, the lockfsctl under test.
lockfsctl_or_bail() {
    CTL=${LOCKFSCTL_BIN:-$REPO_TOP/build/src/lockfsctl}
    [[ -x $CTL ]] || BAIL_OUT "lockfsctl not found or not executable: $CTL (build it, or set LOCKFSCTL_BIN)"
}
