# shellcheck shell=bash
# tests/faults/lib.sh — simulated hosts, their links, the workload and the
# nemeses of the fault-injection suite (tests/faults/run; README.md here).
#
# Sourced after tests/lib/mount.sh (which gives TESTDIR, lockfs_start,
# cleanup at exit and the watchdog).  Every host is one lockfs mount with its
# own -o host=NAME, reaching the one server through a proxy.py of its own, so
# its link can be cut alone; its lockfs runs under tests/faults/lockfs-host
# (time-stamped log, optionally libfaketime).
#
#   faults_setup BACKEND          start the server (tinystore over TCP with a token,
#                                 or slapd), RUN=$TESTDIR/run
#   host_start NAME TOOLS         proxy + mount at $TESTDIR/NAME; TOOLS its workers'
#   host_mount NAME               (re)mount it (after kill-holder, restart-holder)
#   workload_start                workers, side-lock keepers and probers on every host
#   workload_start_host NAME      the same for one host (the fresh host hf)
#   workload_stop                 ask them to stop, wait (bounded), then kill
#   nemesis NAME [ARGS]           one fault, logged in $RUN/nemesis.log, then settle
#   park_host NAME                keep NAME's workers off its mount (while replaced)
#   faults_unfreeze               at exit: continue, mend, unskew everything
#
# Logs (all outside the mounts, under $RUN):
#   w.WID.log   B/E/X/A/F records of one worker's critical sections (check.py)
#   k.HOST.log  T/L/Q/R/J records of one host's keeper of its side locks
#   p.HOST.log  G records of one host's prober of the other hosts' side locks
#   nemesis.log N+/N=/N- records: which fault, on whom, when
#   hosts.tsv   host, lockfs pid, its log, start time (one line per mount)
#   state.HOST/ HOST's state_dir: every lockfs of HOST uses it, so a restart
#               takes back what the previous one held (kill-holder gives the
#               new lockfs a fresh one: a lockfs replaced without its record)
#   HOST.clock  HOST's libfaketime offset; HOST.conf its backend configuration;
#   HOST.ctl    its proxy's control socket; HOST.proxy.log what its proxy did
#               (etcd: one proxy per cluster member, HOST.N.ctl, HOST.N.proxy.log)
# Times are wall-clock nanoseconds (bash's EPOCHREALTIME, stamp.py): one
# machine, one clock, so sections of different hosts compare directly.

FAULTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export FAULTS_DIR PYTHON
PROXY=$FAULTS_DIR/proxy.py

# The lease and the network timeout every mount gets (short, so faults past
# the lease fit in a CI budget); the lost deadline is 0.8 ttl.
FAULTS_TTL_S=${FAULTS_TTL_S:-3}
FAULTS_NET_TIMEOUT=${FAULTS_NET_TIMEOUT:-1s}
FAULTS_HOSTS=${FAULTS_HOSTS:-h1 h2 h3}
FAULTS_SIDE_LOCKS=${FAULTS_SIDE_LOCKS:-3}
# Critical sections: short ones last SHORT_MIN..SHORT_MAX ms; a long one
# (asked for by a nemesis, to straddle its fault) LONG_MS, heart-beating
# every STEP_MS.
FAULTS_SHORT_MIN_MS=${FAULTS_SHORT_MIN_MS:-5}
FAULTS_SHORT_MAX_MS=${FAULTS_SHORT_MAX_MS:-40}
FAULTS_STEP_MS=${FAULTS_STEP_MS:-100}
FAULTS_LONG_MS=${FAULTS_LONG_MS:-$((FAULTS_TTL_S * 3000))}
FAULTS_MAX_PER_WORKER=${FAULTS_MAX_PER_WORKER:-1000000}
# The gap: while a host's lockfs is away (stopped, or killed and not yet
# replaced) its mount point is a dead mount (ENOTCONN) or a plain directory.
# A worker waits up to MOUNT_WAIT_MS for it to come back before it takes a
# lock or lets one go there (never creating under a plain directory); a long
# section whose heartbeat fails because the mount is away goes on working
# (as a job does whose lock helper failed) for at most GAP_MS, until the
# mount answers again and shows its fence held, or the section ends.
FAULTS_MOUNT_WAIT_MS=${FAULTS_MOUNT_WAIT_MS:-20000}
FAULTS_GAP_MS=${FAULTS_GAP_MS:-$((FAULTS_TTL_S * 500))}
# The tools each host's workers use, by host position (cycled).
# hold is lockfsctl hold --ttl (the mount's ttl), holdd lockfsctl hold with
# its default --ttl (30 s).  No mkdir beside set -C on one name: bash's
# noclobber path for a name that is a directory (stat, then open without
# O_EXCL, which takes the name freed meanwhile, then "cannot overwrite
# existing file") leaves a file behind on any file system, a lock here;
# mkdir locks are driven across hosts by 80, 81 and 85.
# flock and fcntl (issue 28) lock files of their own (F, P), exclusive or
# shared: every host runs both.
FAULTS_TOOLSETS=${FAULTS_TOOLSETS:-"setc,ln,dotlockfile,hold,flock,fcntl dotlockfile,setc,ln,holdd,flock,fcntl ln,dotlockfile,setc,hold,flock,fcntl"}

FAULTS_FAKETIME_LIB=${FAULTS_FAKETIME_LIB:-}
if [[ -z $FAULTS_FAKETIME_LIB ]]; then
    for _f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
        /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
        [[ -r $_f ]] && { FAULTS_FAKETIME_LIB=$_f; break; }
    done
fi
export FAULTS_FAKETIME_LIB

declare -A H_PID=() H_LOG=() H_PROXY_PID=() H_PORT=() H_TOOLS=() H_WIDS=() H_STATE=()
declare -a FAULTS_HOST_LIST=() _faults_bg=()
FAULTS_NEMESIS_SEQ=0

now_ns() { local t=${EPOCHREALTIME/./}; printf '%s000' "$t"; }

# ---------------------------------------------------------------- the server

faults_setup() {
    FAULTS_BACKEND=$1
    # No loop of the workload runs past this (the watchdog's own deadline).
    FAULTS_DEADLINE=$((EPOCHSECONDS + ${TEST_TIMEOUT:-300} + 30))
    export FAULTS_DEADLINE
    RUN=$TESTDIR/run
    mkdir -p "$RUN"
    mkfifo "$RUN/nap.fifo"
    : >"$RUN/nemesis.log"
    : >"$RUN/hosts.tsv"
    export RUN
    case $FAULTS_BACKEND in
    tinystore)
        # shellcheck source=../lib/tinystore.sh
        . "$TESTLIB/tinystore.sh"
        local rc=0
        TS_DIR=$(mktemp -d /tmp/lkfts.XXXXXX) || BAIL_OUT "mktemp for the tinystore server failed"
        tinystore_start "$TS_DIR" tcp >/dev/null 2>"$RUN/server.err" || rc=$?
        if ((rc == 77)); then
            rm -rf -- "$TS_DIR"
            skip_all "no tinystore server: $(head -n 1 "$RUN/server.err")"
        elif ((rc != 0)); then
            BAIL_OUT "cannot start a tinystore server: $(head -n 3 "$RUN/server.err")"
        fi
        SERVER_PORT=${TINYSTORE_ENDPOINT##*:}
        ;;
    ldap)
        local why facts
        why=$(bash "$TESTLIB/slapd.sh" check 2>&1) || skip_all "no slapd: $why"
        SLAPD_TOP=$(mktemp -d /tmp/lkfsd.XXXXXX) || BAIL_OUT "mktemp for slapd failed"
        facts=$(bash "$TESTLIB/slapd.sh" start "$SLAPD_TOP/slapd" --watch $$ 2>"$RUN/server.err") ||
            BAIL_OUT "cannot start slapd: $(head -n 3 "$RUN/server.err")"
        eval "$facts"
        SERVER_PORT=$SLAPD_PORT
        ;;
    etcd)
        # The server is the cluster: three members, each host reaching each
        # through a proxy of its own (a partition cuts all three).
        local why facts i
        why=$(bash "$TESTLIB/etcd.sh" check 2>&1) || skip_all "no etcd: $why"
        ETCD_TOP=$(mktemp -d /tmp/lkfet.XXXXXX) || BAIL_OUT "mktemp for etcd failed"
        facts=$(bash "$TESTLIB/etcd.sh" start "$ETCD_TOP" --watch $$ 2>"$RUN/server.err") ||
            BAIL_OUT "cannot start an etcd cluster: $(tail -n 3 "$RUN/server.err")"
        eval "$facts"
        SERVER_PORTS=()
        for i in 0 1 2; do
            local ep=ETCD_ENDPOINT_$i
            SERVER_PORTS+=("${!ep##*:}")
        done
        ;;
    *) BAIL_OUT "faults: backend $FAULTS_BACKEND has no server (tinystore, ldap or etcd)" ;;
    esac
    [[ $FAULTS_BACKEND == etcd ]] || SERVER_PORTS=("$SERVER_PORT")
    # mount.sh's cleanup stops the mounts first, then runs this.
    _backend_stop=faults_teardown
    # Should this shell be killed outright (the watchdog's SIGKILL), its
    # traps never run: the proxies and slapd watch it themselves, and this
    # watches it for the tinystore server.
    (
        while kill -0 $$ 2>/dev/null && ((EPOCHSECONDS < FAULTS_DEADLINE + 120)); do sleep 1; done
        for p in $(server_pid); do _is_ours "$p" serve && kill -KILL "$p"; done
    ) </dev/null >/dev/null 2>&1 &
}

# The server's pids, one a line (etcd: every running member's).
server_pid() {
    case $FAULTS_BACKEND in
    tinystore) cat "$TS_DIR/pid" 2>/dev/null ;;
    ldap) cat "$SLAPD_TOP/slapd/slapd.pid" 2>/dev/null ;;
    etcd)
        local i
        for i in 0 1 2; do cat "$ETCD_TOP/m$i/pid" 2>/dev/null; done
        ;;
    esac
}

server_restart() {
    case $FAULTS_BACKEND in
    tinystore) tinystore_restart "$TS_DIR" >/dev/null 2>>"$RUN/server.err" ;;
    ldap) bash "$TESTLIB/slapd.sh" restart "$SLAPD_TOP/slapd" >/dev/null 2>>"$RUN/server.err" ;;
    etcd) bash "$TESTLIB/etcd.sh" restart "$ETCD_TOP" >/dev/null 2>>"$RUN/server.err" ;;
    esac
}

# kill -9 and wait (bounded) until it is gone.
server_kill9() {
    local pids pid i
    pids=$(server_pid)
    [[ -n $pids ]] || return 1
    for pid in $pids; do
        kill -KILL "$pid" 2>/dev/null
        # tinystore's server is a job of this shell: reap it here, quietly.
        wait "$pid" 2>/dev/null
    done
    for ((i = 0; i < 100; i++)); do
        for pid in $pids; do
            kill -0 "$pid" 2>/dev/null && { sleep 0.05; continue 2; }
        done
        return 0
    done
    return 1
}

faults_teardown() {
    local h p
    for h in "${FAULTS_HOST_LIST[@]}"; do
        for p in ${H_PROXY_PID[$h]:-}; do
            _is_ours "$p" proxy.py && kill "$p" 2>/dev/null
        done
    done
    case ${FAULTS_BACKEND:-} in
    tinystore)
        [[ -n ${TS_DIR:-} ]] && { tinystore_stop "$TS_DIR" >/dev/null 2>&1; rm -rf -- "$TS_DIR"; } ;;
    ldap)
        [[ -n ${SLAPD_TOP:-} ]] && {
            bash "$TESTLIB/slapd.sh" stop "$SLAPD_TOP/slapd" >/dev/null 2>&1
            rm -rf -- "$SLAPD_TOP"
        } ;;
    etcd)
        [[ -n ${ETCD_TOP:-} ]] && {
            bash "$TESTLIB/etcd.sh" stop "$ETCD_TOP" >/dev/null 2>&1
            rm -rf -- "$ETCD_TOP"
        } ;;
    esac
    for h in "${FAULTS_HOST_LIST[@]}"; do
        for p in ${H_PROXY_PID[$h]:-}; do wait "$p" 2>/dev/null; done
    done
}

# Before mount.sh's cleanup: nothing may stay stopped, cut or skewed, and the
# workload must not outlive the run.
faults_unfreeze() {
    local h p
    touch "$RUN/stop" 2>/dev/null
    for h in "${FAULTS_HOST_LIST[@]}"; do
        _is_ours "${H_PID[$h]:-}" lockfs && kill -CONT "${H_PID[$h]}" 2>/dev/null
        printf '+0s\n' >"$RUN/$h.clock" 2>/dev/null
        proxy_ctl "$h" forward >/dev/null 2>&1
    done
    for p in $(server_pid); do kill -CONT "$p" 2>/dev/null; done
    # Workers are subshells of this script: the same command line.
    for p in "${_faults_bg[@]}"; do _is_ours "$p" faults/run && kill "$p" 2>/dev/null; done
    for p in "${_faults_bg[@]}"; do wait "$p" 2>/dev/null; done
    _faults_bg=()
}

# ---------------------------------------------------------------- hosts

# A host's proxies: HOST with one server, HOST.N with several (etcd).
_proxy_names() { # HOST
    local n
    if ((${#SERVER_PORTS[@]} == 1)); then printf '%s\n' "$1"; return; fi
    for n in "${!SERVER_PORTS[@]}"; do printf '%s\n' "$1.$n"; done
}

# Every proxy of HOST, the same command at once (proxy.py ctl); fails when
# any failed.
proxy_ctl() { # HOST COMMAND...
    local h=$1 p socks=''
    shift
    for p in $(_proxy_names "$h"); do socks+="${socks:+,}$RUN/$p.ctl"; done
    timeout -k 2 10 "$PYTHON" "$PROXY" ctl "$socks" "$@"
}

_proxy_start() { # HOST
    local h=$1 i n=0 p
    H_PROXY_PID[$h]='' H_PORT[$h]=''
    for p in $(_proxy_names "$h"); do
        rm -f "$RUN/$p.port"
        "$PYTHON" "$PROXY" serve --upstream "127.0.0.1:${SERVER_PORTS[n]}" --control "$RUN/$p.ctl" \
            --port-file "$RUN/$p.port" --log "$RUN/$p.proxy.log" --watch $$ \
            --deadline "$((TEST_TIMEOUT + 120))" </dev/null >>"$RUN/$p.proxy.out" 2>&1 &
        H_PROXY_PID[$h]+="$! "
        for ((i = 0; i < 100; i++)); do
            [[ -s $RUN/$p.port ]] && break
            kill -0 "$!" 2>/dev/null || break
            sleep 0.05
        done
        if [[ ! -s $RUN/$p.port ]]; then
            diag "the proxy $p of $h did not start: $(tail -n 5 "$RUN/$p.proxy.out")"
            return 1
        fi
        H_PORT[$h]+="$(<"$RUN/$p.port") "
        n=$((n + 1))
    done
}

# The backend's part of a host's configuration: the server through its proxy.
_host_config() { # HOST
    local h=$1 port=${H_PORT[$1]} f=$RUN/$1.conf
    case $FAULTS_BACKEND in
    tinystore)
        printf '[tinystore]\nendpoint = tcp://127.0.0.1:%s\ntoken_file = %s\n' \
            "$port" "$TINYSTORE_TOKEN_FILE" >"$f" ;;
    etcd)
        local p eps=''
        for p in ${H_PORT[$h]}; do eps+="${eps:+,}http://127.0.0.1:$p"; done
        printf '[etcd]\nendpoints = %s\n' "$eps" >"$f" ;;
    ldap)
        printf '[ldap]\nuri = ldap://127.0.0.1:%s\nbind_dn = %s\npassword_file = %s\nca_file = %s\nbase = ou=locks,%s\n' \
            "$port" "$SLAPD_USERDN" "$SLAPD_USERPW_FILE" "$SLAPD_CA" "$SLAPD_SUFFIX" >"$f" ;;
    esac
    printf '%s' "$f"
}

# host_mount HOST: (re)mount HOST's lockfs at $TESTDIR/HOST through its proxy,
# with HOST's state_dir (H_STATE): a lockfs of the same mount point, host and
# state_dir takes back what the previous one held.
host_mount() {
    local h=$1 mnt=$TESTDIR/$1 rc
    # (A dead mount there, after restart-holder:kill, answers ENOTCONN.)
    mkdir -p "$mnt" 2>/dev/null
    [[ -e $RUN/$h.clock ]] || printf '+0s\n' >"$RUN/$h.clock"
    local save_bin=$LOCKFS_BIN
    export FAULTS_LOCKFS=$FAULTS_REAL_LOCKFS
    if [[ -n $FAULTS_FAKETIME_LIB ]]; then
        export FAULTS_CLOCK_FILE=$RUN/$h.clock
    else
        unset FAULTS_CLOCK_FILE
    fi
    BACKEND_OPTS="backend=$FAULTS_BACKEND"
    BACKEND_CONFIG=$(_host_config "$h")
    LOCKFS_BIN=$FAULTS_DIR/lockfs-host
    [[ -n ${H_STATE[$h]:-} ]] || H_STATE[$h]=$TESTDIR/state.$h
    mkdir -p "${H_STATE[$h]}"
    lockfs_start --mnt "$mnt" --state "${H_STATE[$h]}" -o host="$h" -o ttl="${FAULTS_TTL_S}s" \
        -o network_timeout="$FAULTS_NET_TIMEOUT" ${FAULTS_MOUNT_OPTS:+-o "$FAULTS_MOUNT_OPTS"}
    rc=$?
    LOCKFS_BIN=$save_bin
    unset FAULTS_CLOCK_FILE
    ((rc == 0)) || return 1
    H_PID[$h]=$LOCKFS_PID
    H_LOG[$h]=$LOCKFS_LOG
    printf '%s\t%s\t%s\t%s\n' "$h" "$LOCKFS_PID" "$LOCKFS_LOG" "$(now_ns)" >>"$RUN/hosts.tsv"
}

host_start() { # HOST TOOLS(comma-separated)
    local h=$1
    FAULTS_HOST_LIST+=("$h")
    H_TOOLS[$h]=$2
    _proxy_start "$h" || return 1
    host_mount "$h"
}

# _is_ours PID WORD: PID is alive and its command line has WORD.  pid_max is
# 32768 here and the workload forks hundreds of processes a second: a pid
# saved a minute ago may be another program's now, another test's even.
_is_ours() {
    [[ -n $1 && -r /proc/$1/cmdline ]] && [[ $(tr '\0' ' ' </proc/"$1"/cmdline 2>/dev/null) == *"$2"* ]]
}

# _forget_lockfs PID: a lockfs this file has waited for (killed, or stopped)
# leaves mount.sh's lists, so that its cleanup and watchdog never signal that
# pid again, when it may be someone else's.
_forget_lockfs() {
    local p=$1 i
    for i in "${!_lockfs_pids[@]}"; do
        [[ ${_lockfs_pids[$i]} == "$p" ]] && unset '_lockfs_pids[i]'
    done
    _lockfs_pids=("${_lockfs_pids[@]}")
    grep -vx -- "$p" "$TESTDIR/.pids" >"$TESTDIR/.pids.new" 2>/dev/null
    mv -f -- "$TESTDIR/.pids.new" "$TESTDIR/.pids"
}

# The lockfs of HOST is gone (kill -9): lazily unmount what is left.
host_unmount_dead() {
    local h=$1
    wait "${H_PID[$h]}" 2>/dev/null
    _forget_lockfs "${H_PID[$h]}"
    _unmount_force "$TESTDIR/$h"
}

host_healthy() { # HOST: its mount answers
    timeout 5 cat -- "$TESTDIR/$1/.lockfs/status" >/dev/null 2>&1
}

# ---------------------------------------------------------------- the workload

# nap MS: sleep without a fork (read from a FIFO nobody writes).
nap() {
    local s
    printf -v s '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
    read -r -t "$s" -u "$NAPFD" _
    return 0
}

# _lockfs_attrs PATH: sets A_FENCE, A_STATE, A_PID and A_HOST (the holder's)
# and A_HOLD (1: the holder is lockfsctl) from one getfattr, and A_US (how long it took, in microseconds).  Non-zero when the
# attributes are unreadable.
_lockfs_attrs() {
    local t0 out re_f='user\.lockfs\.fence="([0-9]+)"' re_s='user\.lockfs\.state="([a-z]+)"'
    local re_p='user\.lockfs\.pid="([0-9]+)"' re_h='user\.lockfs\.host="([^"]*)"'
    t0=${EPOCHREALTIME/./}
    out=$(getfattr -h --absolute-names -d -m '^user\.lockfs\.(fence|state|pid|host|command)$' -- "$1" 2>/dev/null)
    A_US=$((${EPOCHREALTIME/./} - t0))
    A_FENCE='' A_STATE='' A_PID='' A_HOST=''
    [[ $out =~ $re_f ]] && A_FENCE=${BASH_REMATCH[1]}
    [[ $out =~ $re_s ]] && A_STATE=${BASH_REMATCH[1]}
    [[ $out =~ $re_p ]] && A_PID=${BASH_REMATCH[1]}
    [[ $out =~ $re_h ]] && A_HOST=${BASH_REMATCH[1]}
    A_HOLD=0
    [[ $out == *'user.lockfs.command="'*lockfsctl* ]] && A_HOLD=1
    [[ -n $A_FENCE && -n $A_STATE ]]
}

# _want_long HOST TOOL: a nemesis asked this host (or this tool on it) for a
# section that straddles its fault; claims the request.
_want_long() {
    local f
    for f in "$RUN/want-long.$1.$2" "$RUN/want-long.$1"; do
        [[ -e $f ]] || continue
        rm -f -- "$f" 2>/dev/null
        return 0
    done
    return 1
}

# Parking: while a host's dead mount is replaced (kill-holder), its mount
# point is a plain directory for a moment, where the tools would "lock"
# happily.  The nemesis creates $RUN/park.HOST (holding its number); every
# worker of HOST acknowledges in $RUN/parked.WID at the top of its loop and
# waits there until the file is gone.  Until then they see the dead mount
# (ENOTCONN), as a host whose lockfs crashed would.
_park() { # HOST WID
    [[ -e $RUN/park.$1 ]] || return 1
    local g
    read -r g <"$RUN/park.$1" 2>/dev/null
    printf '%s\n' "$g" >|"$RUN/parked.$2.tmp" && mv -f "$RUN/parked.$2.tmp" "$RUN/parked.$2"
    while [[ -e $RUN/park.$1 && ! -e $RUN/stop ]] && ((EPOCHSECONDS < FAULTS_DEADLINE)); do nap 50; done
    return 0
}

# The gap (restart-holder, kill-holder): while HOST's lockfs is away its
# mount point is a dead mount, answering ENOTCONN to everything, or, after a
# clean stop and until the next lockfs mounts, a plain directory, where
# `set -C`, `ln`, `mkdir` and `dotlockfile` would create a real file that
# the next mount hides: a "lock" nobody else sees.  So a worker, like a
# careful tool, looks before it takes or lets go: the mount answers when its
# .lockfs/status is there (no fork; ENOTCONN and a plain directory both say
# no).  That look and the create are two calls: a stop between them still
# lands on the plain directory, which is why restart-holder also parks the
# host's workers (docs/faults.md, "the gap").
_mount_up() { [[ -e $1/.lockfs/status ]]; }

# _mount_wait MNT LOG WID [release]: 0 once MNT answers; 1 when it did not
# within MOUNT_WAIT_MS, or when the run is asked to stop, or the host to
# park (the caller goes back to its loop's top) -- for a release, unless WID
# is the worker the park leaves alone (park.HOST.except: restart-holder's
# holder, whose lock the next mount takes back; kill-holder waits for every
# worker before it mounts again).  A wait is recorded in LOG:
# W wid t_from t_to up|timeout|park|stop.
_mount_wait() {
    local m=$1 log=$2 wid=$3 rel=${4:-} t0 h=${1##*/} i why=timeout
    _mount_up "$m" && return 0
    t0=${EPOCHREALTIME/./}
    for ((i = 0; i < FAULTS_MOUNT_WAIT_MS / 50; i++)); do
        nap 50
        if _mount_up "$m"; then why=up; break; fi
        [[ -e $RUN/stop ]] && { why=stop; break; }
        if [[ -e $RUN/park.$h ]] && [[ -z $rel || $(cat "$RUN/park.$h.except" 2>/dev/null) != "$wid" ]]; then
            why=park
            break
        fi
    done
    printf 'W\t%s\t%s000\t%s000\t%s\n' "$wid" "$t0" "${EPOCHREALTIME/./}" "$why" >>"$log"
    [[ $why == up ]]
}

# Turns: a mount that just released a lock sees its name free at once, while
# the other mounts trust what they were told for list_cache (200 ms), so one
# host would keep the lock to itself.  A host takes up to TURN_MAX (random)
# sections in a row, then its workers wait while another host takes a turn
# (or 2 s pass: the others may be cut off).  $RUN/turn: host count quota t_us.
FAULTS_TURN_MAX=${FAULTS_TURN_MAX:-8}
export FAULTS_TURN_MAX
_turn_wait() { # HOST: should this host's workers let others go first?
    local th tc tq tl
    read -r th tc tq tl <"$RUN/turn" 2>/dev/null || return 1
    [[ $th == "$1" ]] && ((tc >= tq && ${EPOCHREALTIME/./} - tl < 2000000))
}
_turn_take() { # HOST: a section of HOST began
    local th='' tc=0 tq=0 tl
    read -r th tc tq tl <"$RUN/turn" 2>/dev/null
    if [[ $th == "$1" ]]; then
        tc=$((tc + 1))
    else
        th=$1 tc=1 tq=$((RANDOM % FAULTS_TURN_MAX + 1))
    fi
    printf '%s %s %s %s\n' "$th" "$tc" "$tq" "${EPOCHREALTIME/./}" >|"$RUN/turn"
}

# _beat LOCK FENCE ERR: a long section's heartbeat (touch -c, by path) and
# its check (the fence is still FENCE); errors to ERR.
_beat() {
    touch -c -- "$1" 2>>"$3" &&
        [[ $(getfattr -h --absolute-names --only-values -n user.lockfs.fence -- "$1" 2>/dev/null) == "$2" ]]
}

# A legacy-tool worker: take R.lock with TOOL, check it (fence and state, as a
# careful client would), work, release.  Records (tab-separated):
#   B id host tool fence t_try t_acq t_work_start long
#   E id t_work_end how          how: ok | lost (a heartbeat failed)
#   A id t reason                acquired, but the check said it is not ours
#   X id t rc release-result
# The work of a long section is STEP_MS steps, each after a heartbeat (touch)
# that succeeded: when one fails the work ended when it was called.
legacy_worker() { # WID HOST TOOL
    local wid=$1 h=$2 tool=$3
    local m=$TESTDIR/$2 log=$RUN/w.$1.log err=$RUN/w.$1.err
    local lk=$m/R.lock tmp=$m/.tmp.$1 seq=0 id rc t_try t_acq t_ws t_we t_chk how long dur left e msg gap
    exec {NAPFD}<>"$RUN/nap.fifo"
    [[ $tool == setc ]] && set -C
    while ((seq < FAULTS_MAX_PER_WORKER && EPOCHSECONDS < FAULTS_DEADLINE)); do
        [[ -e $RUN/stop ]] && break
        _park "$h" "$wid" && continue
        _mount_wait "$m" "$log" "$wid" || continue
        if _turn_wait "$h"; then
            nap $((RANDOM % 100 + 50))
            continue
        fi
        t_try=${EPOCHREALTIME/./}
        case $tool in
        setc) { printf '%s\n' "$BASHPID" >"$lk"; } 2>|"$err.acq" ;;
        ln)
            # A fresh temp file each time, as the tools make one: linked,
            # its mtime is the lock's, and liblockfile (dotlockfile) takes
            # a lock whose mtime is 5 minutes old for stale and unlinks it.
            { printf '%s\n' "$BASHPID" >|"$tmp"; } 2>/dev/null
            ln -T -- "$tmp" "$lk" 2>|"$err.acq"
            ;;
        mkdir) mkdir -- "$lk" 2>|"$err.acq" ;;
        dotlockfile) dotlockfile -l -r 0 "$lk" 2>|"$err.acq" ;;
        esac
        rc=$?
        if ((rc != 0)); then
            # Held (EEXIST) is the common answer; anything else is kept.
            msg=''
            read -r msg <"$err.acq" 2>/dev/null
            case $tool:$rc:$msg in
            *"File exists"* | *"cannot overwrite existing file"* | *"Is a directory"* | dotlockfile:4:*) ;;
            *) printf 'F\t%s\t%s000\t%s\t%s\n' "$wid" "${EPOCHREALTIME/./}" "$rc" "${msg//$'\t'/ }" >>"$log" ;;
            esac
            nap $((RANDOM % 25 + 5))
            continue
        fi
        t_acq=${EPOCHREALTIME/./}
        seq=$((seq + 1))
        id=$wid.$seq
        printf '%s acq\n' "$h" >|"$RUN/cur.$wid"
        _lockfs_attrs "$lk"
        printf '%s %s\n' "$h" "${A_FENCE:-?}" >|"$RUN/cur.$wid"
        if [[ -z $A_FENCE || $A_STATE != held ]]; then
            printf 'A\t%s\t%s000\tstate=%s,fence=%s,getfattr_us=%s\n' "$id" "${EPOCHREALTIME/./}" \
                "${A_STATE:-?}" "${A_FENCE:-?}" "$A_US" >>"$log"
        else
            t_ws=${EPOCHREALTIME/./}
            long=0
            if _want_long "$h" "$tool"; then
                long=1
                printf '%s\n' "$id" >|"$RUN/holding.$h"
            fi
            printf 'B\t%s\t%s\t%s\t%s\t%s000\t%s000\t%s000\t%s\t%s\n' "$id" "$h" "$tool" "$A_FENCE" \
                "$t_try" "$t_acq" "$t_ws" "$long" "$A_US" >>"$log"
            _turn_take "$h"
            how=ok
            if ((long)); then
                left=$FAULTS_LONG_MS gap=''
                while ((left > 0)); do
                    nap "$FAULTS_STEP_MS"
                    left=$((left - FAULTS_STEP_MS))
                    t_chk=${EPOCHREALTIME/./}
                    # A heartbeat by path, then the fence, as a careful
                    # client does: by path, a touch also succeeds on the
                    # lock another process of this uid took here since.
                    # A check that failed while the mount answers again is
                    # made once more at once: the first may have looked at
                    # the plain directory just before the next lockfs
                    # mounted (touch -c succeeds there, the fence is not).
                    if _beat "$lk" "$A_FENCE" "$err" ||
                        { _mount_up "$m" && _beat "$lk" "$A_FENCE" "$err"; }; then
                        # Back, and still ours: the section rode the gap.
                        [[ -n $gap ]] && printf 'W\t%s\t%s000\t%s000\tride\n' "$wid" "$gap" "$t_chk" >>"$log"
                        gap=''
                        continue
                    fi
                    # The mount is away (its lockfs restarting: ENOTCONN,
                    # or a plain directory, where touch -c does nothing and
                    # succeeds): the job's work goes on, unconfirmed, for
                    # at most GAP_MS, until the mount answers again.  Its
                    # interval includes the gap: if the lock was let go
                    # meanwhile, another holder overlaps it.
                    if ! _mount_up "$m"; then
                        [[ -n $gap ]] || gap=$t_chk
                        (((t_chk - gap) / 1000 < FAULTS_GAP_MS)) && continue
                        how=gap
                        break
                    fi
                    how=lost
                    break
                done
                # Ended unconfirmed (the mount still away when its work
                # was done): "gap", neither confirmed nor known lost.
                [[ $how == ok && -n $gap ]] && how=gap
                if [[ $how == lost ]]; then t_we=$t_chk; else t_we=${EPOCHREALTIME/./}; fi
            else
                dur=$((FAULTS_SHORT_MIN_MS + RANDOM % (FAULTS_SHORT_MAX_MS - FAULTS_SHORT_MIN_MS + 1)))
                nap "$dur"
                t_we=${EPOCHREALTIME/./}
            fi
            printf 'E\t%s\t%s000\t%s\n' "$id" "$t_we" "$how" >>"$log"
            ((long)) && rm -f -- "$RUN/holding.$h"
        fi
        # Release.  Only an EIO is retried (the backend did not answer, the
        # lock is still ours): after a loss one unlink answers ENOENT, and a
        # second could break the next holder's lock.  Through the mount:
        # while it is away an rm on the plain directory would succeed and
        # let go of nothing, and the next lockfs would take the lock back
        # for a holder that is gone (bounded wait; then tried anyway).
        _mount_wait "$m" "$log" "$wid" release
        for ((e = 0; e < 40; e++)); do
            case $tool in
            setc | ln) rm -f -- "$lk" 2>|"$err.rel" ;;
            mkdir) rmdir -- "$lk" 2>|"$err.rel" ;;
            dotlockfile) dotlockfile -u "$lk" 2>|"$err.rel" ;;
            esac
            rc=$?
            ((rc == 0)) && break
            grep -q 'Input/output error' "$err.rel" || break
            nap 250
        done
        printf 'X\t%s\t%s000\t%s\t%s\n' "$id" "${EPOCHREALTIME/./}" "$rc" \
            "$( ((rc == 0)) || head -c 200 "$err.rel" | tr '\n\t' '  ')" >>"$log"
        : >|"$RUN/cur.$wid"
        nap $((RANDOM % 10 + 1))
    done
}

# A lockfsctl hold worker: the section is tests/faults/section, run by hold
# (it writes B and E; E how=term when hold stopped it); this writes X when
# hold returned.  An attempt that did not get the lock writes X only.
# hold --verbose's stderr: kept in ERR; its SIGKILL line makes a K record in LOG.
_hold_stderr() { # ID LOG ERR
    local l
    while IFS= read -r l; do
        [[ $l == *"stopped the command with SIGKILL"* ]] &&
            printf 'K\t%s\t%s000\n' "$1" "${EPOCHREALTIME/./}" >>"$2"
        [[ $l == *": holding "* || $l == *": released "* ]] || printf '%s\n' "$l" >>"$3"
    done
}

hold_worker() { # WID HOST TOOL (hold: --ttl the mount's ttl; holdd: hold's default --ttl)
    local wid=$1 h=$2 tool=${3:-hold} m=$TESTDIR/$2 log=$RUN/w.$1.log err=$RUN/w.$1.err
    local lk=$m/R.lock seq=0 id rc t_try
    local -a ttl=(--ttl "${FAULTS_HOLD_TTL:-${FAULTS_TTL_S}s}")
    [[ $tool == holdd ]] && ttl=()
    exec {NAPFD}<>"$RUN/nap.fifo"
    while ((seq < FAULTS_MAX_PER_WORKER && EPOCHSECONDS < FAULTS_DEADLINE)); do
        [[ -e $RUN/stop ]] && break
        _park "$h" "$wid" && continue
        # hold would say "69: the lock could not be tried" on a dead mount,
        # and create under a plain directory.
        _mount_wait "$m" "$log" "$wid" || continue
        if _turn_wait "$h"; then
            nap $((RANDOM % 100 + 50))
            continue
        fi
        seq=$((seq + 1))
        id=$wid.$seq
        t_try=${EPOCHREALTIME/./}
        # --verbose: hold says when it sends SIGKILL; a section killed so writes no
        # E, and its K record (when that line was read) bounds its end.
        FAULTS_ID=$id FAULTS_HOSTNAME=$h FAULTS_T_TRY=${t_try}000 FAULTS_LOG=$log FAULTS_TOOL=$tool \
            "$CTL" hold --verbose --wait 2s "${ttl[@]}" "$lk" -- \
            "$FAULTS_DIR/section" 2> >(_hold_stderr "$id" "$log" "$err")
        rc=$?
        printf 'X\t%s\t%s000\t%s\t\n' "$id" "${EPOCHREALTIME/./}" "$rc" >>"$log"
        # A section hold killed (SIGKILL, its margin after SIGTERM) may die
        # between its E record and removing its holding file; left, settle
        # would wait for a "long section still running" for ever (the etcd
        # long run: h3-12-hold.2108, six recoveries failed after it).
        [[ $(cat "$RUN/holding.$h" 2>/dev/null) == "$id" ]] && rm -f -- "$RUN/holding.$h"
        nap $((RANDOM % 20 + 5))
    done
}
export FAULTS_SHORT_MIN_MS FAULTS_SHORT_MAX_MS FAULTS_LONG_MS

# The files the flock and fcntl workers lock (one each, in every mount):
# flock(2) and fcntl(2) locks are independent locks in lockfs (keys
# .lockfs/flock/F and .lockfs/posix/P), so each file is one resource of the
# checker (flock:F, posix:P), beside R.lock.
FAULTS_FLOCK_FILE=${FAULTS_FLOCK_FILE:-F}
# Between two of their sections a flock or fcntl worker waits this long.
FAULTS_LOCKF_PAUSE_MIN_MS=${FAULTS_LOCKF_PAUSE_MIN_MS:-100}
FAULTS_LOCKF_PAUSE_MAX_MS=${FAULTS_LOCKF_PAUSE_MAX_MS:-300}
FAULTS_POSIX_FILE=${FAULTS_POSIX_FILE:-P}

# _ph COMMAND...: one command to this worker's posix-holder.py, its answer in
# PH_ANS.  Bounded (a stopped lockfs holds a call as long as the stop: up to
# ttl + 2 s in the schedules); a helper that does not answer is killed (its
# lock goes with it) and started again, and the answer is "ERR HELPER".
_ph_start() {
    coproc PH { exec "$PYTHON" "$FAULTS_DIR/posix-holder.py" 2>>"$PH_ERR"; }
}
_ph() {
    PH_ANS=''
    if [[ -z ${PH_PID:-} ]] || ! kill -0 "$PH_PID" 2>/dev/null; then _ph_start; fi
    printf '%s\n' "$*" >&"${PH[1]}" 2>/dev/null && read -r -t 30 PH_ANS <&"${PH[0]}"
    if [[ -z $PH_ANS ]]; then
        kill -KILL "$PH_PID" 2>/dev/null
        wait "$PH_PID" 2>/dev/null
        _ph_start
        PH_ANS='ERR HELPER'
    fi
    [[ $PH_ANS == OK* ]]
}

# A flock or fcntl worker (issue 28): takes the file of its kind (flock: F
# with flock(1) on a descriptor of the worker's shell; fcntl: P with
# posix-holder.py, fcntl.lockf, i.e. F_SETLK / F_SETLKW), exclusive or
# shared at random, each take either at once (-n, F_SETLK) or waiting up to
# a second (flock -w 1, F_SETLKW ended by a timer).  A take is followed by a
# read of the fence lockfs shows for it (user.lockfs.flock.fence or
# user.lockfs.posix.fence: the holder's own, confirmed); without one the
# section is not begun (A).  Records as legacy_worker's, with two more
# fields on B: the resource (flock:F, posix:P) and the mode (x exclusive, s
# shared).  A long section (asked for by a nemesis with want-long.HOST.TOOL:
# only this tool's request, so the nemeses of R.lock keep hitting R.lock)
# heart-beats every STEP_MS by asking for the same lock again on the same
# descriptor (a no-op while held; lockfs answers EIO to the owner's next
# flock or fcntl call once the lock is lost) and reading the fence again;
# the first failure ends the work when that heartbeat was called ("lost").
# No riding a gap: the descriptor belongs to the mount that went away, and
# the next lockfs does not take a flock or POSIX lock back.
lockf_worker() { # WID HOST TOOL (flock | fcntl)
    local wid=$1 h=$2 tool=$3 m=$TESTDIR/$2 log=$RUN/w.$1.log err=$RUN/w.$1.err
    local f res xattr seq=0 id rc t_try t_acq t_ws t_we t_chk how long dur left mode wait fd='' fence msg us
    local PH_ERR=$err PH_ANS='' fw
    exec {NAPFD}<>"$RUN/nap.fifo"
    if [[ $tool == flock ]]; then
        f=$m/$FAULTS_FLOCK_FILE res=flock:$FAULTS_FLOCK_FILE xattr=user.lockfs.flock.fence
    else
        f=$m/$FAULTS_POSIX_FILE res=posix:$FAULTS_POSIX_FILE xattr=user.lockfs.posix.fence
        _ph_start
    fi
    while ((seq < FAULTS_MAX_PER_WORKER && EPOCHSECONDS < FAULTS_DEADLINE)); do
        [[ -e $RUN/stop ]] && break
        _park "$h" "$wid" && continue
        _mount_wait "$m" "$log" "$wid" || continue
        mode=x
        ((RANDOM % 2)) && mode=s
        wait=nb
        ((RANDOM % 2)) && wait=1000
        t_try=${EPOCHREALTIME/./}
        fence='' rc=0 msg=''
        if [[ $tool == flock ]]; then
            if exec {fd}<>"$f"; then
                fw=(-n)
                [[ $wait == nb ]] || fw=(-w 1)
                flock "-$mode" "${fw[@]}" "$fd" 2>|"$err.acq"
                rc=$?
                read -r msg <"$err.acq" 2>/dev/null
            else
                rc=2 msg="open: cannot open $f" fd=''
            fi 2>|"$err.acq"
            ((rc == 0)) || { [[ -n $fd ]] && exec {fd}>&-; fd=''; }
        else
            _ph take "$f" "$([[ $mode == x ]] && echo wr || echo rd)" "$wait"
            rc=$?
            msg=${PH_ANS#ERR }
            [[ $PH_ANS == OK* ]] && fence=${PH_ANS#OK }
        fi
        if ((rc != 0)); then
            # Held (flock: exit 1 and nothing said; fcntl: EAGAIN, EACCES,
            # the timer) is the common answer; anything else is kept.
            case $tool:$rc:$msg in
            flock:1: | *EAGAIN* | *EACCES* | *TIMEOUT*) ;;
            *) printf 'F\t%s\t%s000\t%s\t%s\n' "$wid" "${EPOCHREALTIME/./}" "$rc" "${msg//$'\t'/ }" >>"$log" ;;
            esac
            nap $((RANDOM % 25 + 5))
            continue
        fi
        t_acq=${EPOCHREALTIME/./}
        seq=$((seq + 1))
        id=$wid.$seq
        us=0
        if [[ $tool == flock ]]; then
            fence=$(getfattr -h --absolute-names --only-values -n "$xattr" -- "$f" 2>/dev/null)
            us=$((${EPOCHREALTIME/./} - t_acq))
        fi
        if [[ ! $fence =~ ^[0-9]+$ ]]; then
            printf 'A\t%s\t%s000\tno %s (%s)\n' "$id" "${EPOCHREALTIME/./}" "$xattr" "${fence:-unreadable}" >>"$log"
        else
            t_ws=${EPOCHREALTIME/./}
            long=0
            if [[ -e $RUN/want-long.$h.$tool ]] && rm -f -- "$RUN/want-long.$h.$tool" 2>/dev/null; then
                long=1
                printf '%s\n' "$id" >|"$RUN/holding.$h"
            fi
            printf 'B\t%s\t%s\t%s\t%s\t%s000\t%s000\t%s000\t%s\t%s\t%s\t%s\n' "$id" "$h" "$tool" "$fence" \
                "$t_try" "$t_acq" "$t_ws" "$long" "$us" "$res" "$mode" >>"$log"
            how=ok
            if ((long)); then
                left=$FAULTS_LONG_MS
                while ((left > 0)); do
                    nap "$FAULTS_STEP_MS"
                    left=$((left - FAULTS_STEP_MS))
                    t_chk=${EPOCHREALTIME/./}
                    if [[ $tool == flock ]]; then
                        flock "-$mode" -n "$fd" 2>>"$err" &&
                            [[ $(getfattr -h --absolute-names --only-values -n "$xattr" -- "$f" 2>/dev/null) == "$fence" ]] &&
                            continue
                    else
                        _ph check && [[ ${PH_ANS#OK } == "$fence" ]] && continue
                    fi
                    how=lost
                    break
                done
                if [[ $how == lost ]]; then t_we=$t_chk; else t_we=${EPOCHREALTIME/./}; fi
            else
                dur=$((FAULTS_SHORT_MIN_MS + RANDOM % (FAULTS_SHORT_MAX_MS - FAULTS_SHORT_MIN_MS + 1)))
                nap "$dur"
                t_we=${EPOCHREALTIME/./}
            fi
            printf 'E\t%s\t%s000\t%s\n' "$id" "$t_we" "$how" >>"$log"
            ((long)) && rm -f -- "$RUN/holding.$h"
        fi
        # Release: unlock, then close (the close lets it go too; after a
        # loss the unlock answers EIO and the close drops the descriptor).
        if [[ $tool == flock ]]; then
            flock -u "$fd" 2>|"$err.rel"
            rc=$?
            exec {fd}>&-
            fd=''
            msg=$( ((rc == 0)) || head -c 200 "$err.rel" | tr '\n\t' '  ')
        else
            _ph release
            rc=$?
            msg=$( ((rc == 0)) || printf '%s' "$PH_ANS")
        fi
        printf 'X\t%s\t%s000\t%s\t%s\n' "$id" "${EPOCHREALTIME/./}" "$rc" "$msg" >>"$log"
        # Let the other hosts in (the mount that let go sees the file free at
        # once), and keep these two workers from crowding out the rest: at
        # 10-60 ms they ran 10,000 of 15,000 sections of a short run on
        # tinystore, and the hosts were slow to recover after the faults.
        nap $((FAULTS_LOCKF_PAUSE_MIN_MS + RANDOM % (FAULTS_LOCKF_PAUSE_MAX_MS - FAULTS_LOCKF_PAUSE_MIN_MS + 1)))
    done
    [[ $tool == fcntl ]] && _ph quit
}

# _left_behind HOST FENCE PID HOLD MS: R.lock, taken through HOST's mount with
# FENCE and seen (lost or held) for MS, has no holder left that could still
# unlink it: a lockfsctl hold whose process is gone, or (after 5 s) no worker
# of HOST that is taking it or holds FENCE (cur.WID: "HOST acq" while taking,
# "HOST FENCE" while held).
_left_behind() { # HOST FENCE PID HOLD MS STATE
    local h=$1 f=$2 pid=$3 hold=$4 ms=$5 state=${6:-lost} c
    local orphan_ms=$((FAULTS_TTL_S * 2000 + 2000)) killed=0
    if ((hold)); then
        [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null || return 1
        # Taken through a lockfs killed since (kill-holder): the lease is the
        # dead process's, and the contract keeps it until it runs out, never
        # earlier than ttl after its last renewal (LDAP's dds: up to twice).
        # Shown held by this host after the hold stopped for a loss (or let
        # go of it on a release the backend did not answer): the mount's lost
        # lease, which it releases once ttl has passed since its last renewal
        # that succeeded and the backend answers (an orphan: design.md).
        [[ -s $RUN/killed.$h ]] && killed=$(<"$RUN/killed.$h")
        if (((${EPOCHREALTIME/./} - killed) / 1000 < orphan_ms)) || [[ $state == held ]]; then
            ((ms >= orphan_ms))
        else
            ((ms >= 1000))
        fi
        return
    fi
    # A grant whose answer the server's death cut off is the backend's
    # alone, this mount never learnt of it: it lasts until its lease runs
    # out (LDAP's dds entries live up to twice ttl).  Longer is left behind.
    ((ms >= orphan_ms)) || return 1
    for c in "$RUN"/cur.*; do
        [[ -s $c ]] || continue
        case $(<"$c") in "$h acq" | "$h $f") return 1 ;; esac
    done
    return 0
}

# The keeper of HOST's side locks side-HOST-N.lock: takes them, checks every
# 300 ms that they are still its own (fence and state, timed: inspection must
# not wait on a hung renewal), heart-beats them every 20 s (stale_after), and
# when one is lost unlinks it once and takes it again.  A lock it took whose
# fence it could not read at once it reads again each round (it is its own:
# a create of it would be refused).  Records:
#   T key fence t          taken
#   L key t state fence    found not held (lost, gone, or another's)
#   Q key t getfattr_us    a check that took longer than 300 ms
#   R key t                let go at the end of the run
#   J R.lock t fence pid hold ms state   R.lock was left (lost, or held) on
#                          this mount by a holder that will never unlink it (a
#                          lockfsctl hold that is gone; or a tool whose
#                          acquisition failed after the grant, so that it never
#                          knew it held it): the keeper unlinks it once (when
#                          lost, ENOENT: that only drops the name), or nothing
#                          could take R.lock again
keeper() { # HOST
    local h=$1 m=$TESTDIR/$1 log=$RUN/k.$1.log i k n t beat=0 lost_fence='' lost_since=0 away
    local -A fence=()
    exec {NAPFD}<>"$RUN/nap.fifo"
    set -C
    for ((i = 1; i <= FAULTS_SIDE_LOCKS; i++)); do fence[side-$h-$i.lock]=''; done
    while [[ ! -e $RUN/stop ]] && ((EPOCHSECONDS < FAULTS_DEADLINE)); do
        _park "$h" "keeper-$h" && continue
        # Its locks are the mount's while lockfs is away (a restart takes
        # them back): no verdict, and no take under a plain directory.
        _mount_wait "$m" "$log" "keeper-$h" || continue
        n=0 away=0
        t=${EPOCHREALTIME/./}
        for k in "${!fence[@]}"; do
            if [[ ${fence[$k]} == '?' ]]; then
                # Taken, its fence not read yet (below): read it now.
                _lockfs_attrs "$m/$k"
                if [[ $A_STATE == held && $A_HOST == "$h" ]]; then
                    fence[$k]=$A_FENCE
                    printf 'T\t%s\t%s\t%s000\n' "$k" "$A_FENCE" "${EPOCHREALTIME/./}" >>"$log"
                    n=$((n + 1))
                    continue
                elif [[ $A_STATE == lost && $A_HOST == "$h" ]]; then
                    rm -f -- "$m/$k" 2>/dev/null # ours, lost before we knew its fence
                    fence[$k]=''
                    continue
                elif [[ -n $A_STATE ]]; then
                    fence[$k]='' # another's now
                    continue
                fi
                # Still unreadable: a create tells whether the name is there
                # (refused: it still is, and stays '?').
            fi
            if [[ -z ${fence[$k]} || ${fence[$k]} == '?' ]]; then
                _mount_up "$m" || { away=1; break; }
                { printf '%s\n' "$BASHPID" >"$m/$k"; } 2>/dev/null || continue
                if _lockfs_attrs "$m/$k" && [[ $A_STATE == held ]]; then
                    fence[$k]=$A_FENCE
                    printf 'T\t%s\t%s\t%s000\n' "$k" "$A_FENCE" "${EPOCHREALTIME/./}" >>"$log"
                    n=$((n + 1))
                else
                    # Taken, but its fence could not be read yet (a fresh LDAP
                    # fence is confirmed at the first look, and the server may
                    # not answer just after a fault): ours all the same, and
                    # every create of it would now be refused.  Read it again
                    # next round.
                    fence[$k]='?'
                fi
                continue
            fi
            _lockfs_attrs "$m/$k"
            # Timed only when it answered of our own lock: once lost, the
            # name is the backend's, and looking it up waits on the server.
            ((A_US > 300000)) && [[ $A_FENCE == "${fence[$k]}" ]] &&
                printf 'Q\t%s\t%s000\t%s\n' "$k" "${EPOCHREALTIME/./}" "$A_US" >>"$log"
            if [[ $A_STATE == held && $A_FENCE == "${fence[$k]}" ]]; then
                n=$((n + 1))
                continue
            fi
            # Unreadable because the mount went away meanwhile: no verdict.
            [[ -z $A_STATE ]] && ! _mount_up "$m" && { away=1; break; }
            printf 'L\t%s\t%s000\t%s\t%s\n' "$k" "${EPOCHREALTIME/./}" "${A_STATE:-gone}" "${A_FENCE:-}" >>"$log"
            # Ours but lost: one unlink drops it (ENOENT).  Another's: leave it.
            [[ $A_STATE == lost && $A_FENCE == "${fence[$k]}" ]] && rm -f -- "$m/$k" 2>/dev/null
            fence[$k]=''
        done
        if ((away)); then
            nap 50
            continue
        fi
        if _lockfs_attrs "$m/R.lock" && [[ $A_HOST == "$h" && ($A_STATE == lost || $A_STATE == held) ]]; then
            # Timed from when it was first seen so (held, or lost) with this fence.
            [[ $A_FENCE:$A_STATE == "$lost_fence" ]] || { lost_fence=$A_FENCE:$A_STATE lost_since=$t; }
            if _left_behind "$h" "$A_FENCE" "$A_PID" "$A_HOLD" $(((t - lost_since) / 1000)) "$A_STATE"; then
                printf 'J\tR.lock\t%s000\t%s\t%s\t%s\t%s\t%s\n' "${EPOCHREALTIME/./}" "$A_FENCE" "$A_PID" \
                    "$((A_HOLD ? 1 : 0))" "$(((t - lost_since) / 1000))" "$A_STATE" >>"$log"
                if [[ -d $m/R.lock ]]; then rmdir -- "$m/R.lock"; else rm -f -- "$m/R.lock"; fi 2>/dev/null
                lost_fence=''
            fi
        else
            lost_fence=''
        fi
        # With when this round began: settle believes only a round begun
        # after the fault ended (one begun before may have been answered by
        # a mount that had not yet declared what it lost).
        printf '%s %s\n' "$n" "$t" >|"$RUN/keeper.$h"
        if ((t / 1000000 - beat >= 20)); then
            beat=$((t / 1000000))
            for k in "${!fence[@]}"; do
                [[ -n ${fence[$k]} ]] && touch -c -- "$m/$k" 2>/dev/null
            done
        fi
        nap 300
    done
    # Let them go: another run on this backend must not find them.
    for k in "${!fence[@]}"; do
        [[ -n ${fence[$k]} ]] || continue
        [[ ${fence[$k]} == '?' ]] || printf 'R\t%s\t%s000\n' "$k" "${EPOCHREALTIME/./}" >>"$log"
        rm -f -- "$m/$k" 2>/dev/null
    done
}

# The prober of HOST: every 200 ms it tries to take every other host's side
# locks; one it gets it records and lets go at once.  Record:
#   G key taker fence t_try t_acq state
prober() { # HOST OTHER...
    local h=$1 m=$TESTDIR/$1 log=$RUN/p.$1.log o i k t_try t_acq
    local -A next=()
    shift
    exec {NAPFD}<>"$RUN/nap.fifo"
    set -C
    while [[ ! -e $RUN/stop ]] && ((EPOCHSECONDS < FAULTS_DEADLINE)); do
        _park "$h" "prober-$h" && continue
        _mount_wait "$m" "$log" "prober-$h" || continue
        for o in "$@"; do
            for ((i = 1; i <= FAULTS_SIDE_LOCKS; i++)); do
                k=side-$o-$i.lock
                t_try=${EPOCHREALTIME/./}
                # After a grant, leave the key to its owner for a while: this
                # mount sees it free at once, the owner's only after list_cache.
                ((t_try < ${next[$k]:-0})) && continue
                _mount_up "$m" || break 2
                { printf '%s\n' "$BASHPID" >"$m/$k"; } 2>/dev/null || continue
                next[$k]=$((t_try + 3000000))
                t_acq=${EPOCHREALTIME/./}
                _lockfs_attrs "$m/$k"
                printf 'G\t%s\t%s\t%s\t%s000\t%s000\t%s\n' "$k" "$h" "$A_FENCE" "$t_try" "$t_acq" "$A_STATE" >>"$log"
                rm -f -- "$m/$k" 2>/dev/null
            done
        done
        nap 200
    done
}

_bg() { "$@" </dev/null >/dev/null 2>>"$RUN/workload.err" & _faults_bg+=($!); }

_faults_wseq=0
# workload_start_host HOST: its keeper, its prober (of the hosts started
# before it) and one worker per tool of H_TOOLS[HOST].
workload_start_host() {
    local h=$1 o tool others=()
    for o in "${FAULTS_HOST_LIST[@]}"; do [[ $o == "$h" ]] || others+=("$o"); done
    _bg keeper "$h"
    _bg prober "$h" "${others[@]}"
    H_WIDS[$h]="keeper-$h prober-$h"
    for tool in ${H_TOOLS[$h]//,/ }; do
        _faults_wseq=$((_faults_wseq + 1))
        case $tool in
        dotlockfile) command -v dotlockfile >/dev/null || tool=setc ;;
        esac
        H_WIDS[$h]+=" $h-$_faults_wseq-$tool"
        case $tool in
        hold | holdd) _bg hold_worker "$h-$_faults_wseq-$tool" "$h" "$tool" ;;
        setc | ln | mkdir | dotlockfile) _bg legacy_worker "$h-$_faults_wseq-$tool" "$h" "$tool" ;;
        flock | fcntl) _bg lockf_worker "$h-$_faults_wseq-$tool" "$h" "$tool" ;;
        *) BAIL_OUT "faults: unknown tool $tool" ;;
        esac
    done
}

workload_start() {
    local h
    rm -f "$RUN/stop"
    for h in "${FAULTS_HOST_LIST[@]}"; do workload_start_host "$h"; done
}

# Stop asking for locks; a section running finishes (a long one may take
# LONG_MS); whatever is still there after that is killed.
workload_stop() {
    local p deadline
    touch "$RUN/stop"
    deadline=$(($(date +%s) + FAULTS_LONG_MS / 1000 + 15))
    for p in "${_faults_bg[@]}"; do
        while _is_ours "$p" faults/run && (($(date +%s) < deadline)); do sleep 0.1; done
        _is_ours "$p" faults/run && { diag "workload process $p did not stop; killing it"; kill -KILL "$p" 2>/dev/null; }
        wait "$p" 2>/dev/null
    done
    _faults_bg=()
}

sections_so_far() { cat "$RUN"/w.*.log 2>/dev/null | grep -c '^B'; }

# ---------------------------------------------------------------- nemeses

_nem_begin() { # NAME TARGET DETAIL
    FAULTS_NEMESIS_SEQ=$((FAULTS_NEMESIS_SEQ + 1))
    NEM_ID=$FAULTS_NEMESIS_SEQ
    printf 'N+\t%s\t%s\t%s\t%s\t%s\n' "$NEM_ID" "$1" "$2" "$(now_ns)" "$3" >>"$RUN/nemesis.log"
    note "nemesis $NEM_ID: $1 on $2 ($3)"
}
_nem_mark() { printf 'N=\t%s\t%s\t%s\n' "$NEM_ID" "$(now_ns)" "$1" >>"$RUN/nemesis.log"; }
_nem_end() { printf 'N-\t%s\t%s\n' "$NEM_ID" "$(now_ns)" >>"$RUN/nemesis.log"; }

# sleep_s SECS: a bounded sleep that accepts fractions.
sleep_s() { sleep "$1"; }

# pick_holder [TOOL]: ask a random host (or a host with TOOL) for a long
# section and wait until it holds R.lock in one; sets HOLDER (the host) or
# returns 1 after 20 s.
pick_holder() {
    local tool=${1:-} h hs=() i
    for h in "${FAULTS_HOST_LIST[@]}"; do
        [[ -z $tool || ,${H_TOOLS[$h]}, == *",$tool,"* ]] && hs+=("$h")
    done
    ((${#hs[@]})) || return 1
    h=${hs[RANDOM % ${#hs[@]}]}
    rm -f "$RUN"/want-long.* "$RUN/holding.$h"
    if [[ -n $tool ]]; then touch "$RUN/want-long.$h.$tool"; else touch "$RUN/want-long.$h"; fi
    for ((i = 0; i < 200; i++)); do
        if [[ -s $RUN/holding.$h ]]; then
            HOLDER=$h
            HOLDER_SECTION=$(<"$RUN/holding.$h")
            return 0
        fi
        sleep 0.1
    done
    rm -f "$RUN"/want-long.*
    diag "no section on $h${tool:+ with $tool} took R.lock within 20 s"
    # Why: who holds R.lock by $h's mount, whose turn it is, where each of
    # $h's workers stands (cur.WID: "HOST acq" while taking, "HOST FENCE"
    # while holding), and the last lines of its lockfs log.
    local line w
    line=$(timeout 5 awk '$1 == "R.lock"' "$TESTDIR/$h/.lockfs/status" 2>&1)
    diag "  R.lock by $h's mount: ${line:-not held}; turn: $(cat "$RUN/turn" 2>/dev/null)"
    for w in ${H_WIDS[$h]}; do
        diag "  $w: $(cat "$RUN/cur.$w" 2>/dev/null || echo 'no cur file')$([[ -e $RUN/park.$h ]] && echo ', host parked')"
    done
    [[ -n ${H_LOG[$h]:-} ]] && diag "$(tail -n 5 "${H_LOG[$h]}" 2>/dev/null)"
    return 1
}

# park_host HOST: ask HOST's workers to stay off its mount and wait (10 s at
# most) until every one of them has said so.
# A worker parks at the top of its loop: the bound is the longest a worker
# may lawfully take between two tops -- a long section, then its release
# retried on EIO (40 x 250 ms), then 5 s to spare.  It was 10 s, less than
# that, and a worker of hf was once called stuck with no call on its mount
# running (a set -C worker's own create is not one ps can name).
# Each call asks with a token of its own: server-kill-fresh parks hf before
# its nemesis begins, and a token reused from an earlier park would find
# the workers "parked" while they run.
# EXCEPT: a worker not waited for (restart-holder's holder, in its long
# section through the restart; it parks when its section is over).
park_host() { # HOST [EXCEPT]
    local h=$1 except=${2:-} w i left tenths=$(((FAULTS_LONG_MS + 10000 + 5000) / 100)) tok=${NEM_ID:-0}.${EPOCHREALTIME/./}
    # By rename: a worker reading it mid-write would park with an empty
    # token and never be counted (seen once in the etcd long run).
    printf '%s\n' "$except" >"$RUN/park.$h.except"
    printf '%s\n' "$tok" >"$RUN/park.$h.tmp" && mv -f "$RUN/park.$h.tmp" "$RUN/park.$h"
    for ((i = 0; i < tenths; i++)); do
        left=''
        for w in ${H_WIDS[$h]}; do
            [[ $w == "$except" || $(cat "$RUN/parked.$w" 2>/dev/null) == "$tok" ]] || left+=" $w"
        done
        [[ -z $left ]] && return 0
        sleep 0.1
    done
    diag "  not parked after $((tenths / 10)) s:$left"
    # Where each stands: its section (cur: "HOST acq" or "HOST FENCE"), its
    # last records and the last errors of its tool.
    for w in $left; do
        diag "    $w: cur '$(cat "$RUN/cur.$w" 2>/dev/null)'; last records: $(tail -n 3 "$RUN/w.$w.log" 2>/dev/null | tr '\n\t' '; ')"
        diag "    $w: acquisition: $(head -c 200 "$RUN/w.$w.err.acq" 2>/dev/null | tr '\n' ' '); release: $(head -c 200 "$RUN/w.$w.err.rel" 2>/dev/null | tr '\n' ' ')"
    done
    # What they wait in: the calls on the mount still running.
    ps -eo pid,stat,wchan:24,etimes,args 2>/dev/null | grep -F -- "$TESTDIR/$h/" | grep -v grep |
        head -10 | while IFS= read -r l; do diag "    $l"; done
    return 1
}

other_host() { # HOST: another host, at random
    local o hs=()
    for o in "${FAULTS_HOST_LIST[@]}"; do [[ $o == "$1" ]] || hs+=("$o"); done
    printf '%s' "${hs[RANDOM % ${#hs[@]}]}"
}

# settle: every mount answers, the keepers hold all their side locks again
# and no long section runs.  Bounded; fails the nemesis when not reached.
settle() {
    local what=$1 deadline=$(($(date +%s) + FAULTS_LONG_MS / 1000 + 4 * FAULTS_TTL_S + 10)) h ok
    local since=${EPOCHREALTIME/./} held began
    while :; do
        ok=1
        for h in "${FAULTS_HOST_LIST[@]}"; do
            read -r held began 2>/dev/null <"$RUN/keeper.$h" || held=''
            [[ $held == "$FAULTS_SIDE_LOCKS" ]] && ((${began:-0} > since)) || ok=0
            [[ -e $RUN/holding.$h ]] && ok=0
        done
        ((ok)) && return 0
        if (($(date +%s) >= deadline)); then
            local rdesc="after $what: the hosts recovered (all side locks held again, no section stuck) within $((FAULTS_LONG_MS / 1000 + 4 * FAULTS_TTL_S + 10)) s"
            # Seen on a loaded machine (two suites at once), not understood
            # yet: shown as a TODO, a failure with FAULTS_STRICT=1.
            if [[ ${FAULTS_STRICT:-0} == 1 ]]; then
                fail "$rdesc"
            else
                todo_fail "$rdesc" "issue 10 is open: slow recovery seen on a loaded machine; FAULTS_STRICT=1 fails on it"
            fi
            local now=${EPOCHREALTIME/./}
            for h in "${FAULTS_HOST_LIST[@]}"; do
                read -r held began 2>/dev/null <"$RUN/keeper.$h" || held='' began=0
                diag "  $h: side locks held ${held:-?}/$FAULTS_SIDE_LOCKS, its keeper's last round began $(((now - ${began:-0}) / 1000)) ms ago$([[ -e $RUN/holding.$h ]] && echo ", long section $(cat "$RUN/holding.$h") still running")"
            done
            # A keeper (or section) that does not come back waits in a call
            # on its mount: which, and in what.
            ps -eo pid,stat,wchan:24,etimes,args 2>/dev/null | grep -F -- "$TESTDIR/" | grep -v -e grep -e 'lockfs-host' \
                -e "lockfs $TESTDIR" -e proxy.py -e faults/run | awk '$4 >= 2' | head -10 |
                while IFS= read -r l; do diag "    $l"; done
            rm -f "$RUN"/want-long.*
            return 1
        fi
        sleep 0.2
    done
}

# nemesis NAME [ARG]: one fault against the running workload.
#   pause-holder [SECS] [TOOL]  SIGSTOP the holder's lockfs (default ttl + 2 s)
#   partition-holder [SECS] [both|c2s|s2c] [TOOL]   its proxy drops (silent)
#   reset-holder [SECS] [TOOL]  its proxy resets every connection and refuses
#                               (TOOL: whose section; flock and fcntl hold F, P)
#   delay-holder [MS] [SECS]    its proxy delays every chunk
#   skew-contender [OFFSET] [SECS]   a host other than the holder runs OFFSET off
#   skew-holder [OFFSET] [SECS]      the holder's lockfs runs OFFSET off
#   kill-holder [DOWN_SECS]     kill -9 the holder's lockfs, remount after DOWN
#                               (a fresh state_dir: nothing is taken back)
#   restart-holder [clean|kill] [TOOL]   restart the holder's lockfs with its
#                               state_dir while it holds: SIGTERM, or kill -9
#                               (the new lockfs unmounts the dead mount)
#   server-pause [SECS]         SIGSTOP the server
#   server-kill [DOWN_SECS]     kill -9 the server, restart it after DOWN
#   server-kill-fresh           kill -9, restart at once, and a fresh mount (hf)
#                               tries to take every lock right away
#   quiet [SECS]                no fault: the workload alone (default 10 s)
nemesis() {
    local name=$1 tool='' secs label=$1
    shift
    local ttl=$FAULTS_TTL_S
    case $name in
    quiet)
        # No fault: the workload runs on its own for SECS.
        sleep_s "${1:-10}"
        return
        ;;
    pause-holder)
        secs=${1:-$((ttl + 2))}; tool=${2:-}
        label=$name${tool:+:$tool}
        pick_holder "$tool" || { fail "$label: no holder to pause"; return; }
        _nem_begin "$label" "$HOLDER" "SIGSTOP of its lockfs for ${secs}s, section $HOLDER_SECTION${tool:+ ($tool)}"
        kill -STOP "${H_PID[$HOLDER]}"
        sleep_s "$secs"
        kill -CONT "${H_PID[$HOLDER]}"
        _nem_end
        ;;
    partition-holder)
        secs=${1:-$((ttl + 2))}
        local dir=${2:-both}
        label=$name:$dir${3:+:$3}
        pick_holder "${3:-}" || { fail "$label: no holder to cut off"; return; }
        _nem_begin "$label" "$HOLDER" "proxy drop $dir for ${secs}s, section $HOLDER_SECTION"
        proxy_ctl "$HOLDER" drop "$dir" >/dev/null || diag "proxy of $HOLDER: drop failed"
        sleep_s "$secs"
        proxy_ctl "$HOLDER" forward >/dev/null || diag "proxy of $HOLDER: forward failed"
        _nem_end
        ;;
    reset-holder)
        secs=${1:-$((ttl + 1))}
        label=$name${2:+:$2}
        pick_holder "${2:-}" || { fail "$label: no holder to reset"; return; }
        _nem_begin "$label" "$HOLDER" "proxy reset, refusing for ${secs}s, section $HOLDER_SECTION"
        proxy_ctl "$HOLDER" reset >/dev/null || diag "proxy of $HOLDER: reset failed"
        sleep_s "$secs"
        proxy_ctl "$HOLDER" forward >/dev/null || diag "proxy of $HOLDER: forward failed"
        _nem_end
        ;;
    delay-holder)
        local ms=${1:-300}
        secs=${2:-$((ttl + 2))}
        pick_holder || { fail "$name: no holder to slow down"; return; }
        label=$name:${ms}ms
        _nem_begin "$label" "$HOLDER" "proxy delay ${ms} ms each way for ${secs}s, section $HOLDER_SECTION"
        proxy_ctl "$HOLDER" delay "$ms" >/dev/null || diag "proxy of $HOLDER: delay failed"
        sleep_s "$secs"
        proxy_ctl "$HOLDER" forward >/dev/null || diag "proxy of $HOLDER: forward failed"
        _nem_end
        ;;
    skew-contender | skew-holder)
        local off=${1:-} target
        [[ -n $FAULTS_FAKETIME_LIB ]] || { skip "$name: libfaketime is not installed (apt-get install libfaketime)"; return; }
        secs=${2:-$((ttl + 2))}
        pick_holder || { fail "$name: no holder"; return; }
        if [[ $name == skew-contender ]]; then
            off=${off:-+40s}
            target=$(other_host "$HOLDER")
        else
            off=${off:--40s}
            target=$HOLDER
        fi
        label=$name:$off
        _nem_begin "$label" "$target" "clock $off for ${secs}s (libfaketime; monotonic untouched), R.lock held by $HOLDER section $HOLDER_SECTION"
        printf '%s\n' "$off" >"$RUN/$target.clock"
        sleep_s "$secs"
        printf '+0s\n' >"$RUN/$target.clock"
        # libfaketime re-reads the file every second.
        sleep_s 1.2
        _nem_end
        ;;
    kill-holder)
        secs=${1:-1}
        pick_holder "${2:-}" || { fail "$name: no holder to kill"; return; }
        label=$name:down=${secs}s
        _nem_begin "$label" "$HOLDER" "kill -9 of its lockfs, remount after ${secs}s, section $HOLDER_SECTION"
        printf '%s\n' "${EPOCHREALTIME/./}" >"$RUN/killed.$HOLDER" # for _left_behind
        kill -KILL "${H_PID[$HOLDER]}"
        wait "${H_PID[$HOLDER]}" 2>/dev/null
        # The dead mount stays (ENOTCONN to all) for DOWN_SECS.
        sleep_s "$secs"
        park_host "$HOLDER" || fail "$label: the workers of $HOLDER stopped using its dead mount"
        _nem_mark remount
        host_unmount_dead "$HOLDER"
        # A fresh state_dir: a lockfs replaced without its record (what
        # restart-holder:kill keeps), so its leases run out at the backend.
        H_STATE[$HOLDER]=$TESTDIR/state.$HOLDER.$NEM_ID
        host_mount "$HOLDER" || fail "$label: remount $HOLDER"
        rm -f "$RUN/park.$HOLDER"
        _nem_end
        ;;
    restart-holder)
        # Issue 25: a restart of lockfs keeps every lock.  The holder's
        # lockfs is restarted while one of its workers is in a long section
        # of R.lock and its keeper holds its side locks, with the same mount
        # point, host, options and state_dir: "clean" as systemctl restart
        # does it (SIGTERM, wait for the exit, mount again), "kill" as
        # Restart=on-failure after a crash (kill -9, then mount again: the
        # new lockfs must unmount the dead mount itself; nothing here does).
        # The holder goes on working through the gap (legacy_worker) and
        # lets go through the new mount; the other hosts keep taking R.lock
        # and probing the side locks.  The host's other workers are parked
        # first: in the gap its mount point is a plain directory, where a
        # take would create a real file (docs/faults.md, "the gap").
        local how=${1:-clean} pid t_stop legacy=() w
        tool=${2:-}
        case $how in clean | kill) ;; *) BAIL_OUT "faults: restart-holder clean or kill, not $how" ;; esac
        if [[ -z $tool ]]; then
            # A legacy tool (hold and holdd by name: lockfsctl hold rides a
            # restart since e7bbaa9, and took it for a loss before).
            for w in setc ln dotlockfile mkdir; do
                [[ ,${FAULTS_TOOLSETS// /,}, == *",$w,"* ]] && legacy+=("$w")
            done
            tool=${legacy[RANDOM % ${#legacy[@]}]}
        fi
        label=$name:$how
        pick_holder "$tool" || { fail "$label: no holder to restart"; return; }
        _nem_begin "$label" "$HOLDER" "$([[ $how == clean ]] && echo 'SIGTERM' || echo 'kill -9') of its lockfs and a new one on the same mount point and state_dir, section $HOLDER_SECTION ($tool) holding"
        park_host "$HOLDER" "${HOLDER_SECTION%.*}" || fail "$label: the workers of $HOLDER other than the holder parked"
        _nem_mark parked
        pid=${H_PID[$HOLDER]}
        t_stop=${EPOCHREALTIME/./}
        if [[ $how == clean ]]; then
            # lockfs_stop: SIGTERM, a bounded wait for the exit; it fails
            # when lockfs left its mount behind.
            lockfs_stop "$pid" TERM >/dev/null || diag "$label: lockfs of $HOLDER did not stop cleanly (${LOCKFS_RC:-?})"
        else
            kill -KILL "$pid"
            wait "$pid" 2>/dev/null
        fi
        _forget_lockfs "$pid"
        _nem_mark "stopped $(((${EPOCHREALTIME/./} - t_stop) / 1000)) ms"
        if host_mount "$HOLDER"; then
            _nem_mark "serving $(((${EPOCHREALTIME/./} - t_stop) / 1000)) ms"
        else
            fail "$label: mount $HOLDER again"
        fi
        local mounts
        mounts=$(grep -c " $TESTDIR/$HOLDER fuse" /proc/self/mounts)
        [[ $mounts == 1 ]] || fail "$label: one mount on $HOLDER's mount point after the restart ($mounts)"
        rm -f "$RUN/park.$HOLDER"
        _nem_end
        ;;
    server-pause)
        secs=${1:-$((ttl + 1))}
        local sp
        sp=$(server_pid)
        pick_holder || diag "$name: no long section"
        label=$name:${secs}s
        _nem_begin "$label" server "SIGSTOP of the $FAULTS_BACKEND server for ${secs}s${HOLDER_SECTION:+, R.lock held by $HOLDER section $HOLDER_SECTION}"
        kill -STOP $sp
        sleep_s "$secs"
        kill -CONT $sp
        _nem_end
        ;;
    server-kill-fresh)
        # tinystore forgets its leases when it restarts.  A host takes a new
        # lock K just before the kill (so that no holder record of it exists
        # yet); right after the restart a mount that connects for the first
        # time (host hf, a new lockfs process each time) tries to take K
        # every 10 ms: it must not be granted K before K's holder declared it
        # lost.  Records: T in the holder's k.HOST.log, G in p.hf.log.
        label=$name
        if [[ -z ${H_PID[hf]:-} ]]; then
            host_start hf setc,ln || { fail "$label: start the fresh host hf"; return; }
            workload_start_host hf
            sleep_s 2
        fi
        local th k t_try t_acq i deadline
        th=${FAULTS_HOST_LIST[RANDOM % (${#FAULTS_HOST_LIST[@]} - 1)]}
        park_host hf || fail "$label: the workers of hf stopped using its mount"
        if lockfs_stop "${H_PID[hf]}" >/dev/null 2>&1; then _forget_lockfs "${H_PID[hf]}"; else host_unmount_dead hf; fi
        _nem_begin "$label" server "$th takes K, then kill -9 of the $FAULTS_BACKEND server, restart at once, and a fresh mount (hf) tries to take K"
        k=fresh-$NEM_ID.lock
        if (set -C; printf '%s\n' "$$" >"$TESTDIR/$th/$k") 2>/dev/null && _lockfs_attrs "$TESTDIR/$th/$k"; then
            printf 'T\t%s\t%s\t%s000\n' "$k" "$A_FENCE" "${EPOCHREALTIME/./}" >>"$RUN/k.$th.log"
        else
            diag "$label: $th could not take $k"
        fi
        server_kill9 || diag "$name: the server did not die"
        server_restart || { fail "$label: restart the $FAULTS_BACKEND server: $(tail -n 3 "$RUN/server.err")"; _nem_end; return; }
        _nem_mark restart
        host_mount hf || fail "$label: mount the fresh host hf"
        _nem_mark "fresh mount"
        deadline=$(($(date +%s%N) + 2 * ttl * 1000000000))
        for ((i = 0; i < 1000; i++)); do
            t_try=${EPOCHREALTIME/./}
            if (set -C; printf '%s\n' "$$" >"$TESTDIR/hf/$k") 2>/dev/null; then
                t_acq=${EPOCHREALTIME/./}
                _lockfs_attrs "$TESTDIR/hf/$k"
                printf 'G\t%s\thf\t%s\t%s000\t%s000\t%s\n' "$k" "$A_FENCE" "$t_try" "$t_acq" "$A_STATE" >>"$RUN/p.hf.log"
                rm -f -- "$TESTDIR/hf/$k"
                break
            fi
            (($(date +%s%N) >= deadline)) && break
            sleep 0.01
        done
        ((i < 1000)) && _nem_mark "hf took $k"
        printf 'R\t%s\t%s000\n' "$k" "${EPOCHREALTIME/./}" >>"$RUN/k.$th.log"
        rm -f -- "$TESTDIR/$th/$k" 2>/dev/null
        rm -f "$RUN/park.hf"
        _nem_end
        ;;
    server-kill)
        secs=${1:-0}
        pick_holder || diag "$name: no long section"
        label=$name:down=${secs}s
        _nem_begin "$label" server "kill -9 of the $FAULTS_BACKEND server, restart after ${secs}s${HOLDER_SECTION:+, R.lock held by $HOLDER section $HOLDER_SECTION}"
        server_kill9 || diag "$name: the server did not die"
        sleep_s "$secs"
        _nem_mark restart
        server_restart || { fail "$name: restart the $FAULTS_BACKEND server: $(tail -n 3 "$RUN/server.err")"; _nem_end; return; }
        _nem_end
        ;;
    *) BAIL_OUT "faults: unknown nemesis $name" ;;
    esac
    HOLDER_SECTION=''
    settle "$label"
}
