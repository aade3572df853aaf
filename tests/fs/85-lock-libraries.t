#!/bin/bash
# 85-lock-libraries.t — widely used lock libraries of other languages, from the
# package registries, that speak dot-lock dialects: real clients, driven through
# tests/lib/locklibs/ (one driver per library; protocol and libraries in
# tests/lib/locklibs/README.md).
#
#   flufl.lock (Python)        link of a claim file; lock's mtime = expiry (os.utime)
#   lockfile (Python)          LinkLockFile, MkdirLockFile, SymlinkLockFile
#   proper-lockfile (Node)     mkdir; refresh by fs.utimes(now, now); stale by mtime
#   lockfile (npm)             open "wx" (O_EXCL); stale by ctime
#   File::NFSLock (Perl)       link of a unique file, nlink == 2; stale by mtime
#   LockFile::Simple (Perl)    -f check, then open(">") (no O_EXCL); stamp read back
#   lockfile (Ruby)            link of a unique file, same inode; refresher thread
#
# Two mounts A and B (host=hostA, host=hostB) of one shared backend are two hosts;
# on the local backend A and B are one mount and the checks are across processes.
#   1. A lock the library takes on A is "held" for the same library on B and
#      refused to every shell idiom on B (set -C, ln, ln -s, mkdir); a lock a shell
#      idiom holds on A is "held" for the library on B, and survives it.  What a
#      plain directory answers is measured first: an idiom that is no acquisition
#      there either (ln onto a directory lock creates inside it) is skipped, and
#      lockfs must answer what the plain directory answers.
#   2. Contention: each library on both hosts plus legacy tools (dotlockfile,
#      ln, mkdir, set -C), one lock name per group; every critical section logs
#      S/E lines with its host and times to a log outside the mounts
#      (check-sections.py): no overlap, every worker completes.
#   3. Liveness by the libraries' own rules: a holder on A that refreshes
#      (proper-lockfile stale 10 s / update 5 s, flufl.lock lifetime 10 s refreshed
#      every 3 s, Ruby's refresher every 4 s with max_age 10 s) is not broken by
#      the same library on B waiting 20 s; a holder that dies (SIGKILL) is taken
#      over by B when the library's own rule says so, and not before.
#   4. Many threads: proper-lockfile and npm lockfile (Node's thread pool makes
#      one process's take and release on different threads) in 4 workers on one
#      mount: every release works, every worker completes.
#
# Part 3 runs in the background while part 1 runs (it mostly waits); parts 2 and
# 4 run together.  Every wait is bounded; the whole file takes about a minute.
set -u
TEST_TIMEOUT=400
. "$(dirname "$0")/../lib/mount.sh"
. "$TESTLIB/locklibs/shell-worker.sh"

LL=$TESTLIB/locklibs
SHARED=1
[[ $LOCKFS_BACKEND == local ]] && SHARED=0

lockfs_start_or_bail -o host=hostA
A=$MNT
if ((SHARED)); then
    lockfs_start_or_bail -o host=hostB
    B=$MNT
    WHERE="hostB"
else
    # One mount: "B" is another process on the same mount.
    B=$A
    WHERE="another process on the same mount"
fi
PLAIN=$TESTDIR/plain
mkdir -p "$PLAIN"
OUT=$TESTDIR/out
mkdir -p "$OUT"

# ---------------------------------------------------------------- the libraries

LIBS=(flufl pylink pymkdir pysymlink proper npmlock nfslock lfsimple rubylock)
declare -A DRV=(
    [flufl]="$PYTHON $LL/flufl-lock.py"
    [pylink]="$PYTHON $LL/py-lockfile.py --class link"
    [pymkdir]="$PYTHON $LL/py-lockfile.py --class mkdir"
    [pysymlink]="$PYTHON $LL/py-lockfile.py --class symlink"
    [proper]="node $LL/proper-lockfile.js"
    [npmlock]="node $LL/npm-lockfile.js"
    [nfslock]="perl $LL/file-nfslock.pl"
    [lfsimple]="perl $LL/lockfile-simple.pl"
    [rubylock]="ruby $LL/ruby-lockfile.rb"
)
declare -A LIBNAME=(
    [flufl]="flufl.lock" [pylink]="lockfile LinkLockFile" [pymkdir]="lockfile MkdirLockFile"
    [pysymlink]="lockfile SymlinkLockFile" [proper]="proper-lockfile" [npmlock]="npm lockfile"
    [nfslock]="File::NFSLock" [lfsimple]="LockFile::Simple" [rubylock]="Ruby lockfile"
)
declare -A MISSING=()
for lib in "${LIBS[@]}"; do
    read -ra cmd <<<"${DRV[$lib]}"
    if ! command -v "${cmd[0]}" >/dev/null; then
        MISSING[$lib]="${cmd[0]} is not installed (scripts/setup-debian)"
        continue
    fi
    v=$(timeout 20 "${cmd[@]}" version 2>&1)
    if [[ $? == 0 ]]; then
        note "${LIBNAME[$lib]}: $v"
    else
        v=${v%%$'\n'*}
        MISSING[$lib]="${v#error: } (scripts/setup-debian installs it)"
    fi
done
have() { [[ -z ${MISSING[$1]:-} ]]; }

# drv LIB [OPTS...] LOCK ACTION ARGS...: run the driver in the foreground;
# sets RES (its first output line: got, held or error for "try") and RC.
drv() {
    local lib=$1; shift
    local -a cmd
    read -ra cmd <<<"${DRV[$lib]}"
    timeout -k 3 60 "${cmd[@]}" "$@" >"$OUT/drv.out" 2>>"$OUT/$lib.stderr" </dev/null
    RC=$?
    RES=$(head -n 1 "$OUT/drv.out")
}

# bg_drv TAG LIB [OPTS...] LOCK ACTION ARGS...: the driver in the background,
# its output in $OUT/TAG.out; BG_PID[TAG] is the driver's own pid (exec, no
# timeout in between: part 3 SIGKILLs the library's process itself).  Every
# action is bounded by its own arguments, and finish() kills what overstays.
declare -A BG_PID=()
bg_drv() {
    local tag=$1 lib=$2; shift 2
    local -a cmd
    read -ra cmd <<<"${DRV[$lib]}"
    : >"$OUT/$tag.out"
    (exec "${cmd[@]}" "$@" >"$OUT/$tag.out" 2>"$OUT/$tag.stderr" </dev/null) &
    BG_PID[$tag]=$!
}
all_bg() { local t; for t in "${!BG_PID[@]}"; do printf '%s\n' "${BG_PID[$t]}"; done; }
at_exit 'for p in $(all_bg); do kill -KILL "$p" 2>/dev/null; done'

out_has() { grep -qE "$2" "$OUT/$1.out" 2>/dev/null; }
out_last() { tail -n 1 "$OUT/$1.out" 2>/dev/null; }
# started TAG: the background driver said got / held / error (or exited).
started() { out_has "$1" '^(got|held|error)' || ! _pid_alive "${BG_PID[$1]}"; }
# finish TAG SECS: wait (bounded) for a background driver to exit.
not_alive() { ! _pid_alive "$1"; }
finish() {
    local tag=$1 secs=${2:-15}
    wait_until "$secs" not_alive "${BG_PID[$tag]}" ||
        { diag "$tag still running after ${secs}s; killing it"; kill -KILL "${BG_PID[$tag]}" 2>/dev/null; }
    { wait "${BG_PID[$tag]}"; } 2>/dev/null
}

# seen_on_b NAME: B shows NAME as held by hostA (on local: held at all).
seen_on_b() {
    local line
    line=$(status_line "$1" "$B")
    if ((SHARED)); then [[ $line == *" host=hostA "* ]]; else [[ $line == *"state=held"* ]]; fi
}
gone_on() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }

# ---------------------------------------------------------------- part 3, started first

# Liveness scenarios, all at once on names of their own.  Each: a holder on A
# ("live": refreshing by the library's own timer; "dead": SIGKILLed right after
# taking it), then a waiter on B with the library's own waiting and stale rule.
#   live: the waiter must time out (20 s) and the holder release its own lock;
#   dead: the waiter must get it within [LO, HI] s of the holder's acquisition.
# Entries: TAG LIB HOLDER-OPTS WAITER-OPTS (options joined by @, - for none),
# and for DEAD also LO HI and how the waiter waits (the library's "wait", or
# "poll": a try every 0.5 s).
LIVE=(
    "live-proper proper --stale@10@--update@5 --stale@10"
    "live-flufl flufl --lifetime@10@--refresh@3 --lifetime@10"
    "live-ruby rubylock --max-age@10@--refresh@4 --max-age@10"
)
# proper-lockfile, Ruby, npm lockfile, File::NFSLock, LockFile::Simple: a lock
# whose mtime (ctime for npm) is older than 10 s is stale.  flufl.lock: the
# lock's mtime is its expiry (acquisition + lifetime 10 s), broken 10 s
# (CLOCK_SLOP) after that.  File::NFSLock and LockFile::Simple judge staleness
# only when asked to lock, so their waiter is a loop of tries (poll).
DEAD=(
    "dead-proper proper --stale@10@--update@5 --stale@10 9 30 wait"
    "dead-flufl flufl --lifetime@10 --lifetime@10 18 40 wait"
    "dead-ruby rubylock --max-age@10@--refresh@4 --max-age@10 9 30 wait"
    "dead-npmlock npmlock - --stale@10 9 30 wait"
    "dead-nfslock nfslock - --stale@10 9 30 poll"
    "dead-lfsimple lfsimple - --hold@10 9 30 poll"
)
opts_of() { [[ $1 == - ]] || printf '%s\n' ${1//@/ }; }

declare -A T_GOT=()
live_start() {
    local e tag lib ho wo
    for e in "${LIVE[@]}" "${DEAD[@]}"; do
        read -r tag lib ho wo _ <<<"$e"
        have "$lib" || continue
        mapfile -t hopts < <(opts_of "$ho")
        if [[ $tag == live-* ]]; then
            bg_drv "$tag.A" "$lib" "${hopts[@]}" "$A/$tag.lock" hold 25
        else
            bg_drv "$tag.A" "$lib" "${hopts[@]}" "$A/$tag.lock" hold 150
        fi
    done
    for e in "${LIVE[@]}" "${DEAD[@]}"; do
        read -r tag lib _ <<<"$e"
        have "$lib" || continue
        wait_until 15 started "$tag.A"
        # When the holder said "got": its output's mtime.
        T_GOT[$tag]=$(st %.9Y "$OUT/$tag.A.out")
        if [[ $tag == dead-* ]] && out_has "$tag.A" '^got'; then
            # Reaped at once, so bash has no "Killed" to report later.
            { kill -KILL "${BG_PID[$tag.A]}"; wait "${BG_PID[$tag.A]}"; } 2>/dev/null
        fi
    done
    # The waiters start once B shows the lock (shared backends: the holder
    # record follows the grant by a moment).
    for e in "${LIVE[@]}" "${DEAD[@]}"; do
        read -r tag lib ho wo lo hi how <<<"$e"
        have "$lib" || continue
        out_has "$tag.A" '^got' || continue
        wait_until 5 seen_on_b "$tag.lock" || diag "$tag: $WHERE does not show the lock after 5 s"
        mapfile -t wopts < <(opts_of "$wo")
        if [[ $tag == live-* ]]; then
            bg_drv "$tag.B" "$lib" "${wopts[@]}" "$B/$tag.lock" wait 20
        elif [[ $how == wait ]]; then
            bg_drv "$tag.B" "$lib" "${wopts[@]}" "$B/$tag.lock" wait "$hi"
        else
            poll_try "$tag.B" "$lib" "$B/$tag.lock" "$hi" "${wopts[@]}"
        fi
    done
}

# poll_try TAG LIB LOCK SECS OPTS...: a try every 0.5 s until got, in the
# background, reporting like "wait" does.
poll_try() {
    local tag=$1 lib=$2 lock=$3 secs=$4; shift 4
    local -a cmd
    read -ra cmd <<<"${DRV[$lib]}"
    : >"$OUT/$tag.out"
    (
        t0=$EPOCHREALTIME
        end=$((${t0%.*} + secs))
        while ((${EPOCHREALTIME%.*} < end)); do
            r=$(timeout -k 3 20 "${cmd[@]}" "$@" "$lock" try 2>>"$OUT/$tag.stderr" </dev/null | head -n 1)
            if [[ $r == got ]]; then
                printf 'got after %s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')"
                exit 0
            fi
            [[ $r == held ]] || echo "try: $r" >>"$OUT/$tag.stderr"
            sleep 0.5
        done
        echo "timeout after $secs"
    ) >"$OUT/$tag.out" 2>>"$OUT/$tag.stderr" </dev/null &
    BG_PID[$tag]=$!
}

live_check() {
    local e tag lib ho wo lo hi how r since
    for e in "${LIVE[@]}"; do
        read -r tag lib _ <<<"$e"
        if ! have "$lib"; then
            skip "${MISSING[$lib]}" 3
            continue
        fi
        if ! out_has "$tag.A" '^got'; then
            fail "$tag: ${LIBNAME[$lib]} takes $tag.lock on hostA ($(out_last "$tag.A"))"
            skip "no holder" 2
            continue
        fi
        finish "$tag.B" 40
        finish "$tag.A" 40
        r=$(out_last "$tag.B")
        like "$r" '^timeout' "$tag: ${LIBNAME[$lib]} on $WHERE does not break a live, refreshing holder in 20 s ($r)"
        is "$(out_last "$tag.A")" released "$tag: the holder on hostA releases its own lock after 25 s (no compromise, no steal)"
        ok "$tag: the lock is free for $WHERE afterwards" wait_until 5 gone_on "$B/$tag.lock"
    done
    for e in "${DEAD[@]}"; do
        read -r tag lib ho wo lo hi how <<<"$e"
        if ! have "$lib"; then
            skip "${MISSING[$lib]}" 2
            continue
        fi
        if ! out_has "$tag.A" '^got'; then
            fail "$tag: ${LIBNAME[$lib]} takes $tag.lock on hostA ($(out_last "$tag.A"))"
            skip "no holder" 1
            continue
        fi
        # File::NFSLock also drops the lock of a dead pid of its own host name at
        # once: it opens the lock for writing (which another host's lock allows,
        # as lock libraries that flock open so), and when no live pid is left it
        # unlinks it, a break.  The two "hosts" here share one host name and one
        # pid space, so it may do so on either mount, as on one host it would.
        [[ $lib == nfslock ]] && lo=0
        finish "$tag.B" $((hi + 10))
        r=$(out_last "$tag.B")
        like "$r" '^got after' "$tag: ${LIBNAME[$lib]} on $WHERE takes over from a killed holder ($r)"
        if [[ $r =~ ^got\ after\ ([0-9.]+) ]]; then
            # Seconds from the holder's acquisition to the takeover.
            since=$(awk -v g="${T_GOT[$tag]}" -v s="$(st %.9Y "$OUT/$tag.B.out")" 'BEGIN { printf "%d", s - g }')
            if ((since >= lo && since <= hi)); then
                pass "$tag: ... ${since}s after the acquisition, within the library's rule [$lo, $hi] s"
            else
                fail "$tag: ... ${since}s after the acquisition, outside the library's rule [$lo, $hi] s"
                diag "$(grep -h . "$OUT/$tag.B.stderr" 2>/dev/null | tail -n 5)"
            fi
        else
            fail "$tag: ... no takeover, so no time to check"
            diag "$(grep -h . "$OUT/$tag.B.stderr" 2>/dev/null | tail -n 5)"
        fi
        rm -rf -- "$B/$tag.lock" 2>/dev/null
    done
}

T0=$(now)
live_start

# ---------------------------------------------------------------- part 1

# idiom IDIOM LOCK: one shell acquisition; prints "taken", or "refused: MSG"
# with MSG the text after the last ": " of its first stderr line.
idiom() {
    local how=$1 lock=$2 rc err tmp
    case $how in
    noclobber) err=$(timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$lock" 2>&1) ;;
    ln)
        tmp=$(dirname "$lock")/lntmp.$BASHPID
        echo $$ >"$tmp"
        err=$(timeout 10 ln -- "$tmp" "$lock" 2>&1)
        rc=$?
        rm -f -- "$tmp"
        (exit $rc)
        ;;
    lns) err=$(timeout 10 ln -s "lnstarget" "$lock" 2>&1) ;;
    mkdir) err=$(timeout 10 mkdir -- "$lock" 2>&1) ;;
    esac
    rc=$?
    if ((rc == 0)); then
        echo taken
    else
        err=${err%%$'\n'*}
        echo "refused: ${err##*: }"
    fi
}
# undo_idiom IDIOM LOCK: remove what ln or ln -s that was "taken" made inside
# a directory lock (ln onto a directory creates inside it).
undo_idiom() {
    case $1 in
    ln) rm -f -- "$2/lntmp."* 2>/dev/null ;;
    lns) rm -f -- "$2/lnstarget" 2>/dev/null ;;
    esac
    :
}
shell_hold() { # IDIOM LOCK: a lock held by a shell idiom
    case $1 in
    noclobber) bash -c 'set -C; echo $$ > "$1"' _ "$2" ;;
    mkdir) mkdir -- "$2" ;;
    lns) ln -s 4242 "$2" ;;
    esac
}
shell_release() { if [[ -d $1 && ! -L $1 ]]; then rmdir -- "$1"; else rm -f -- "$1"; fi; }
# shell_intact IDIOM LOCK: the shell lock on A is intact (held by hostA,
# of its kind).
shell_intact() {
    local how=$1 lock=$2 key
    key=$(basename "$lock")
    [[ $(status_line "$key" "$A") == *"state=held"* ]] || return 1
    case $how in
    noclobber) [[ -f $lock && ! -L $lock ]] ;;
    mkdir) [[ -d $lock && ! -L $lock ]] ;;
    lns) [[ $(readlink -- "$lock") == 4242 ]] ;;
    esac
}

FWD_IDIOMS=(noclobber ln lns mkdir)
REV_IDIOMS=(noclobber mkdir lns)
declare -A IDIOM_DESC=([noclobber]="set -C" [ln]="ln" [lns]="ln -s" [mkdir]="mkdir")

# The plain directory's answers for LIB: REF_FWD[idiom] onto LIB's lock and
# REF_REV[idiom] (got/held) of LIB onto the idiom's lock.
declare -A REF_FWD=() REF_REV=()
plain_reference() {
    local lib=$1 how tag=ref-$1
    bg_drv "$tag" "$lib" "$PLAIN/p-$lib.lock" hold 30 "$OUT/$tag.stop"
    wait_until 15 started "$tag"
    if out_has "$tag" '^got'; then
        for how in "${FWD_IDIOMS[@]}"; do
            REF_FWD[$how]=$(idiom "$how" "$PLAIN/p-$lib.lock")
            [[ ${REF_FWD[$how]} == taken ]] && undo_idiom "$how" "$PLAIN/p-$lib.lock"
        done
    else
        for how in "${FWD_IDIOMS[@]}"; do REF_FWD[$how]="no reference: $(out_last "$tag")"; done
    fi
    touch "$OUT/$tag.stop"
    finish "$tag" 15
    rm -rf -- "$PLAIN/p-$lib.lock"
    for how in "${REV_IDIOMS[@]}"; do
        shell_hold "$how" "$PLAIN/r-$lib.lock"
        drv "$lib" "$PLAIN/r-$lib.lock" try
        RES=${RES%% \'*} # an error's message, without the path
        REF_REV[$how]=${RES:-"exit $RC"}
        rm -rf -- "$PLAIN/r-$lib.lock"
    done
}

part1() { # LIB: 14 test points
    local lib=$1 name=c1-$1.lock how r tag=c1-$1
    if ! have "$lib"; then
        skip "${MISSING[$lib]}" 14
        return
    fi
    plain_reference "$lib"
    local L=${LIBNAME[$lib]}
    bg_drv "$tag" "$lib" "$A/$name" hold 60 "$OUT/$tag.stop"
    wait_until 15 started "$tag"
    if ! out_has "$tag" '^got'; then
        fail "$L takes $name on hostA ($(out_last "$tag"))"
        diag "$(tail -n 5 "$OUT/$tag.stderr")"
        skip "no lock to contend for" 13
        touch "$OUT/$tag.stop"
        finish "$tag"
        return
    fi
    pass "$L takes $name on hostA"
    wait_until 5 seen_on_b "$name" || diag "$name: $WHERE does not show hostA's lock after 5 s"
    drv "$lib" "$B/$name" try
    is "$RES" held "$L on $WHERE: $name is held"
    for how in "${FWD_IDIOMS[@]}"; do
        if [[ ${REF_FWD[$how]} != refused:* ]]; then
            skip "on a plain directory ${IDIOM_DESC[$how]} onto a $L lock is no acquisition either (${REF_FWD[$how]})"
            continue
        fi
        r=$(idiom "$how" "$B/$name")
        is "$r" "${REF_FWD[$how]}" "${IDIOM_DESC[$how]} on $WHERE onto $L's lock: as on a plain directory"
        if [[ $r == taken ]]; then
            # Whatever it made on B: an entry inside the lock, or a lock of B's own.
            undo_idiom "$how" "$B/$name"
            [[ $how == noclobber || $how == mkdir ]] && shell_release "$B/$name" 2>/dev/null
        fi
    done
    touch "$OUT/$tag.stop"
    finish "$tag"
    is "$(out_last "$tag")" released "$L on hostA releases its lock, still its own"
    ok "... and $WHERE sees $name free" wait_until 5 gone_on "$B/$name"
    # The other way round: shell idioms hold on A, the library tries on B.
    for how in "${REV_IDIOMS[@]}"; do
        shell_hold "$how" "$A/$name"
        wait_until 5 seen_on_b "$name" || diag "$name (${IDIOM_DESC[$how]}): $WHERE does not show hostA's lock after 5 s"
        if [[ ${REF_REV[$how]} != held ]]; then
            skip "on a plain directory $L does not honour a lock made by ${IDIOM_DESC[$how]} either (${REF_REV[$how]})" 2
        else
            drv "$lib" "$B/$name" try
            is "$RES" held "$L on $WHERE: a lock held by ${IDIOM_DESC[$how]} on hostA is held"
            ok "... and hostA's ${IDIOM_DESC[$how]} lock is intact" shell_intact "$how" "$A/$name"
        fi
        shell_release "$A/$name" 2>/dev/null
        wait_until 5 gone_on "$B/$name" || diag "$name: still there for $WHERE after hostA released it"
        [[ -e $B/$name || -L $B/$name ]] && rm -rf -- "${B:?}/$name"
    done
}

for lib in "${LIBS[@]}"; do part1 "$lib"; done
note "part 1 done at +$(($(now) - T0))s"

live_check
note "part 3 done at +$(($(now) - T0))s"

# ---------------------------------------------------------------- parts 2 and 4

# shell_worker: tests/lib/locklibs/shell-worker.sh.

# A group: one lock name, workers "ID:MOUNT:KIND" (KIND a library, or
# sh-ln / sh-noclobber / sh-mkdir / sh-dotlockfile).
declare -A GROUP_WORKERS=() GROUP_N=()
group_start() { # GROUP N DEADLINE WORKER...
    local g=$1 n=$2 deadline=$3 w id m kind host mnt
    shift 3
    GROUP_WORKERS[$g]="$*"
    GROUP_N[$g]=$n
    : >"$OUT/$g.log"
    for w in "$@"; do
        IFS=: read -r id m kind <<<"$w"
        if [[ $m == A ]]; then host=hostA mnt=$A; else host=hostB mnt=$B; fi
        if [[ $kind == sh-* ]]; then
            shell_worker "$id" "$host" "$mnt" "${kind#sh-}" "$g.lock" "$n" "$OUT/$g.log" "$deadline" \
                >"$OUT/$g.$id.out" 2>"$OUT/$g.$id.stderr" </dev/null &
            BG_PID[$g.$id]=$!
        else
            bg_drv "$g.$id" "$kind" "$mnt/$g.lock" contend "$n" "$OUT/$g.log" "$id" "$host" "$deadline"
        fi
    done
}
group_check() { # GROUP DESC: 4 test points
    local g=$1 desc=$2 w id m kind r incomplete=() errs=0 verdict
    for w in ${GROUP_WORKERS[$g]}; do
        IFS=: read -r id m kind <<<"$w"
        finish "$g.$id" 60
        r=$(out_last "$g.$id")
        if [[ $r =~ ^done\ ([0-9]+)\ ([0-9]+)\ ([0-9]+)$ ]]; then
            ((BASH_REMATCH[1] < BASH_REMATCH[2])) && incomplete+=("$id($kind)=${BASH_REMATCH[1]}/${BASH_REMATCH[2]}")
            errs=$((errs + BASH_REMATCH[3]))
        else
            incomplete+=("$id($kind)='${r:-no result}'")
        fi
        [[ -s $OUT/$g.$id.stderr ]] && diag "$g.$id ($kind) stderr: $(sort "$OUT/$g.$id.stderr" | uniq -c | head -n 5)"
    done
    verdict=$("$PYTHON" "$LL/check-sections.py" "$OUT/$g.log")
    note "$g: $verdict"
    like "$verdict" ' interleaved=0 overlaps=0 ' "$desc: no two critical sections overlapped"
    is "${incomplete[*]}" "" "$desc: every worker completed its ${GROUP_N[$g]} sections"
    # (What they saw goes in the point's name: the diagnostics above may be cut.)
    local seen=""
    ((errs)) && seen=" ($(cat "$OUT/$g".*.stderr 2>/dev/null | grep . | head -n 1 | cut -c1-160))"
    is "$errs" 0 "$desc: no worker saw an error other than 'held'$seen"
    ok "$desc: the lock is free at the end" wait_until 2 gone_on "$A/$g.lock"
}

N2=12
DL2=$(($(now) + 30))
declare -a GROUPS2=()
# Which legacy tools join which library: dotlockfile removes a dangling symlink
# lock (its rule), so the group with symlink locks has ln and mkdir instead;
# LockFile::Simple's check-then-create is a race with any other process of its
# uid on one mount (on any file system), so it contends only across hosts.
add_group() { # GROUP DESC LIB... -- WORKER...
    local g=$1 desc=$2 l
    shift 2
    local -a libs=()
    while [[ $1 != -- ]]; do libs+=("$1"); shift; done
    shift
    for l in "${libs[@]}"; do
        if ! have "$l"; then
            GROUPS2+=("$g|$desc|${MISSING[$l]}")
            return
        fi
    done
    group_start "$g" "$N2" "$DL2" "$@"
    GROUPS2+=("$g|$desc|")
}
add_group c2-flufl "flufl.lock + dotlockfile" flufl -- \
    fA:A:flufl fB:B:flufl dA:A:sh-dotlockfile dB:B:sh-dotlockfile
add_group c2-pylockfile "lockfile Link/Mkdir/Symlink + ln, mkdir" pylink pymkdir pysymlink -- \
    lA:A:pylink sB:B:pysymlink mB:B:pymkdir nB:B:sh-ln kA:A:sh-mkdir
# (proper-lockfile and mkdir are directory locks: liblockfile's exit 8
# against one is its own race, a refusal: SW_DIR_LOCKERS, shell-worker.sh.)
SW_DIR_LOCKERS=1 add_group c2-proper "proper-lockfile + dotlockfile, mkdir" proper -- \
    pA:A:proper pB:B:proper dB:B:sh-dotlockfile kA:A:sh-mkdir
add_group c2-npmlock "npm lockfile + dotlockfile, set -C" npmlock -- \
    nA:A:npmlock nB:B:npmlock dA:A:sh-dotlockfile cB:B:sh-noclobber
add_group c2-nfslock "File::NFSLock + dotlockfile, ln" nfslock -- \
    fA:A:nfslock fB:B:nfslock dA:A:sh-dotlockfile nB:B:sh-ln
if ((SHARED)); then
    add_group c2-lfsimple "LockFile::Simple, across hosts" lfsimple -- \
        sA:A:lfsimple sB:B:lfsimple
fi
add_group c2-ruby "Ruby lockfile + dotlockfile, set -C" rubylock -- \
    rA:A:rubylock rB:B:rubylock dB:B:sh-dotlockfile cA:A:sh-noclobber

# Part 4, at the same time: four workers of one library on one mount.
N4=15
DL4=$(($(now) + 30))
declare -a GROUPS4=()
for l in proper npmlock; do
    if have "$l"; then
        group_start "c4-$l" "$N4" "$DL4" w1:A:$l w2:A:$l w3:A:$l w4:A:$l
        GROUPS4+=("c4-$l|${LIBNAME[$l]}, 4 workers on one mount (Node's thread pool)|")
    else
        GROUPS4+=("c4-$l|${LIBNAME[$l]}|${MISSING[$l]}")
    fi
done

for e in "${GROUPS2[@]}" "${GROUPS4[@]}"; do
    IFS='|' read -r g desc why <<<"$e"
    if [[ -n $why ]]; then
        skip "$desc: $why" 4
    else
        group_check "$g" "$desc"
    fi
done
((SHARED)) || skip "LockFile::Simple contention: its check-then-create (no O_EXCL) races with any other process of its uid on one mount, on any file system; it contends only across hosts" 4
note "parts 2 and 4 done at +$(($(now) - T0))s"

held_at_end() { timeout 10 cat -- "$1/.lockfs/status" | grep ' state=held '; }
# A lock broken through B is lost on A at A's next renewal (ttl/3, 10 s with
# the defaults, plus network_timeout), not at once: flufl.lock's waiter breaks
# its lock only ~20 s in, a moment before this point.
none_held() { [[ -z $(held_at_end "$1") ]]; }
((SHARED)) && wait_until 20 none_held "$A"
is "$(held_at_end "$A")" "" "no lock held on hostA at the end"
((SHARED)) && is "$(held_at_end "$B")" "" "no lock held on hostB at the end"

done_testing
