#!/bin/bash
# 90-contention.t — legacy-clients.md §8.12: mutual exclusion between mixed
# tools.  Many workers of different tools guard one name, X.lock (the
# mailbox tools lock base X, so X exists as a file), for thousands of
# critical sections in total.  The overlap detector lives on the local disk,
# outside the system under test:
#   - every section appends "S id n" on entry and "E id n" on exit to a log
#     opened O_APPEND (one write per line, so the log is a linear history);
#     any interleaving of two sections is an overlap;
#   - inside, a marker is created with noclobber (O_EXCL) and removed; if it
#     already exists another section is inside too.
# Expect 0 overlaps, every worker finishing all its iterations, and no
# errno other than EEXIST reaching a tool (procmail would say 69, mailutils
# 1 or 4, ln/mkdir/dash something other than "File exists").
#
# Tool choice: every tool runs in its fail-fast mode (-r 0 / -r 1) inside a
# worker loop with a short random back-off, because their own retry sleeps
# are >= 1 s.  One procmail worker uses its own blocking loop (-1 -r -1) to
# cover that path; it gets few iterations.  ln -s is left out: liblockfile
# judges a dangling symlink lock invalid and removes it (a tool rule, not a
# lockfs bug); ln runs with -T so that a directory lock (mkdir worker) is
# not "joined" by linking into it.
#
# Two phases.  Phase 1: file locks from every tool.  Phase 2 adds mkdir
# workers (directory locks) and drops bash: bash's noclobber, when stat()
# says "not a regular file", opens with O_CREAT but without O_EXCL; if the
# directory lock is released in between, bash creates X.lock, notices the
# "replaced file", closes it and reports failure — an orphaned lock made by
# bash itself.  dash re-checks with fstat and never creates, so it stays.
#
# liblockfile (dotlockfile, lockfile-create) has a race of its own with
# directory locks: when its stale check's stat() finds the name free (the
# holder let go), it calls the lock invalid and unlinks the name; a mkdir
# lock taken in between makes that unlink EISDIR, and it exits 8
# (L_RMSTALE), leaving its .lk temp file.  It does the same on tmpfs once its
# stat calls are slowed by 3 ms (strace -e inject=...:delay_exit=3000: 128
# of 1002 tries).  In phase 2 an exit 8 counts as "held", and each must
# have left exactly one .lk file, which the phase checks and removes.
set -u
TEST_TIMEOUT=400
. "$(dirname "$0")/../lib/mount.sh"

# Hard bounds for the workers of each phase (the whole file stays < ~3 min).
PHASE1_SECS=${CONTENTION_PHASE1_SECS:-100}
PHASE2_SECS=${CONTENTION_PHASE2_SECS:-60}
MAX_BACKOFF_MS=256

lockfs_start_or_bail
L=$MNT
LK=$L/X.lock
BASE=$L/X
: >"$BASE"
MARK=$TESTDIR/marker
mkfifo "$TESTDIR/fifo"

# ---------------------------------------------------------------- worker side

# nap MS: sleep MS/2 .. MS milliseconds (MS < 1000) without forking: a
# read with a timeout on a fifo that never delivers.
nap() {
    local ms=$(($1 / 2 + RANDOM % ($1 / 2 + 1)))
    ((ms > 0)) || ms=1
    read -r -t "0.$(printf '%03d' "$ms")" -u "$NAPFD" _ || :
}

# section ID N: the critical section.
section() {
    echo "S $1 $2" >>"$LOG"
    set -C
    if { echo "$1" >"$MARK"; } 2>/dev/null; then
        set +C
        rm -f "$MARK"
    else
        set +C
        echo "O $1 $2" >>"$LOG"
    fi
    echo "E $1 $2" >>"$LOG"
}

# worker ID KIND ITERATIONS: loop acquire / section / release.
#   acquire_KIND: 0 = got it, 1 = held (EEXIST), 2 = anything else.
worker() {
    local id=$1 kind=$2 n=$3 done=0 errs=0 tries=0 r backoff=4
    exec {NAPFD}<>"$TESTDIR/fifo"
    local tmp=$L/.w$id.tmp
    [[ $kind == ln ]] && : >"$tmp"
    while ((done < n)) && (($(date +%s) < DEADLINE)); do
        tries=$((tries + 1))
        acquire_"$kind" "$id" "$tmp"
        r=$?
        if ((r == 0)); then
            done=$((done + 1))
            section "$id" "$done"
            release_"$kind" "$id" || { errs=$((errs + 1)); echo "release rc $? ($kind)" >>"$RES/$id.err"; }
            backoff=4
            nap 8   # let someone else in before trying again
        else
            ((r == 1)) || errs=$((errs + 1))
            # Exponential back-off: failed attempts of the exec'ed tools
            # cost CPU that the holder needs.
            nap "$backoff"
            ((backoff < MAX_BACKOFF_MS)) && backoff=$((backoff * 2))
        fi
    done
    [[ $kind == ln ]] && rm -f "$tmp"
    echo "$id $kind $done $n $errs $tries" >"$RES/$id.result"
}

# rc_map HELD_RC RC ID KIND: map a tool's exit status to 0 (got it), 1 (held)
# or 2 (anything else, logged: that is an errno other than EEXIST).
rc_map() {
    local held=$1 rc=$2 id=$3 kind=$4
    ((rc == 0)) && return 0
    ((rc == held)) && return 1
    echo "acquire rc $rc ($kind)" >>"$RES/$id.err"
    return 2
}

acquire_ln() { ln -T -- "$2" "$LK" 2>>"$RES/$1.stderr"; rc_map 1 $? "$1" ln; }
release_ln() { rm -f -- "$LK"; }

acquire_bash() {
    local r
    set -C
    { echo $$ >"$LK"; } 2>>"$RES/$1.stderr"
    r=$?
    set +C
    rc_map 1 $r "$1" bash
}
release_bash() { rm -f -- "$LK"; }

acquire_dash() { dash -c 'set -C; echo $$ > "$1"' _ "$LK" 2>>"$RES/$1.stderr"; rc_map 2 $? "$1" dash; }
release_dash() { rm -f -- "$LK"; }

acquire_mkdir() { mkdir -- "$LK" 2>>"$RES/$1.stderr"; rc_map 1 $? "$1" mkdir; }
release_mkdir() { rmdir -- "$LK"; }

# rmstale RC ID: liblockfile's exit 8 against a directory lock (above), in
# phase 2 only: recorded, and "held".
rmstale() {
    ((RMSTALE_OK && $1 == 8)) || return "$1"
    echo x >>"$RES/$2.rmstale"
    return 4
}

acquire_dotlockfile() {
    timeout 30 dotlockfile -l -r 0 "$LK" 2>>"$RES/$1.stderr"
    rmstale $? "$1"
    rc_map 4 $? "$1" dotlockfile
}
release_dotlockfile() { timeout 30 dotlockfile -u "$LK"; }

acquire_lockfilecreate() {
    timeout 30 lockfile-create --retry 0 --lock-name "$LK" 2>>"$RES/$1.stderr"
    rmstale $? "$1"
    rc_map 4 $? "$1" lockfile-create
}
release_lockfilecreate() { timeout 30 lockfile-remove --lock-name "$LK"; }

acquire_procmail() { timeout 30 lockfile -r 0 "$LK" 2>>"$RES/$1.stderr"; rc_map 73 $? "$1" procmail; }
release_procmail() { rm -f -- "$LK"; }

# procmail's own blocking loop (1 s sleeps, forever, bounded by timeout).
acquire_procmailblock() {
    timeout $((DEADLINE - $(date +%s) + 1)) lockfile -1 -r -1 "$LK" 2>>"$RES/$1.stderr"
    rc_map 124 $? "$1" procmail-block
}
release_procmailblock() { rm -f -- "$LK"; }

acquire_mutt() { timeout 30 mutt_dotlock -r 0 "$BASE" 2>>"$RES/$1.stderr"; rc_map 3 $? "$1" mutt_dotlock; }
release_mutt() { timeout 30 mutt_dotlock -u "$BASE"; }

acquire_mailutils() {
    timeout 30 dotlock.mailutils --no-config -r 1 "$BASE" 2>>"$RES/$1.stderr"
    rc_map 3 $? "$1" dotlock.mailutils
}
release_mailutils() { timeout 30 dotlock.mailutils --no-config -u "$BASE"; }

# ---------------------------------------------------------------- run

# run_phase NAME SECS WORKER... : WORKER is id:kind:iterations (kind "py"
# for the python O_EXCL worker).  Runs all workers concurrently against
# X.lock and then checks the history.
run_phase() {
    local phase=$1 secs=$2; shift 2
    local -a workers=("$@") pids=()
    local w id kind n total=0
    RES=$TESTDIR/results.$phase
    LOG=$TESTDIR/sections.$phase.log
    mkdir "$RES"
    : >"$LOG"
    for w in "${workers[@]}"; do total=$((total + ${w##*:})); done

    local start
    start=$(date +%s)
    DEADLINE=$((start + secs))
    for w in "${workers[@]}"; do
        IFS=: read -r id kind n <<<"$w"
        if [[ $kind == py ]]; then
            (
                r=$(timeout $((secs + 10)) "$PYTHON" "$TESTLIB/fsop.py" contend "$LK" "$MARK" "$LOG" "$id" "$n" "$DEADLINE")
                read -r _ d _ _ <<<"$r"
                echo "$id python ${d:-0} $n 0 ?" >"$RES/$id.result"
            ) </dev/null >/dev/null 2>"$RES/$id.worker-stderr" &
        else
            worker "$id" "$kind" "$n" </dev/null >/dev/null 2>"$RES/$id.worker-stderr" &
        fi
        pids+=($!)
        ALL_PIDS+=($!)
    done
    local p
    for p in "${pids[@]}"; do wait "$p"; done
    local elapsed=$(($(date +%s) - start))
    note "$phase: ${#workers[@]} workers, $total planned sections, ${elapsed}s"

    # The history: S/E must alternate with matching ids.
    local sections interleaved marker_overlaps
    read -r sections interleaved marker_overlaps < <(awk '
        $1 == "S" { s++; if (open != "") bad++; open = $2 " " $3 }
        $1 == "E" { if (open != $2 " " $3) bad++; open = "" }
        $1 == "O" { o++ }
        END { print s + 0, bad + 0, o + 0 }' "$LOG")
    is "$interleaved" 0 "$phase: no two critical sections interleaved ($sections sections)"
    is "$marker_overlaps" 0 "$phase: the in-section marker never existed already"

    local incomplete=0 errors=0 f d e tries
    for f in "$RES"/*.result; do
        [[ -e $f ]] || continue
        read -r id kind d n e tries <"$f"
        note "  $id ($kind): $d/$n sections, $e errors, $tries attempts"
        ((d < n)) && { incomplete=$((incomplete + 1)); diag "$phase: worker $id ($kind) completed only $d of $n sections"; }
        errors=$((errors + e))
    done
    is "$(find "$RES" -name '*.result' | wc -l)" "${#workers[@]}" "$phase: every worker reported"
    is "$incomplete" 0 "$phase: every worker completed all its iterations within ${secs}s"
    is "$sections" "$total" "$phase: the log holds all $total planned sections"
    is "$errors" 0 "$phase: no tool saw an error other than 'held'"
    compgen -G "$RES/*.err" >/dev/null && diag "$(cat "$RES"/*.err | sort | uniq -c)"

    # stderr of the shell primitives: only "exists"-type messages.
    local odd
    odd=$(cat "$RES"/ln*.stderr "$RES"/mkdir*.stderr "$RES"/bash*.stderr /dev/null 2>/dev/null |
        grep -v -e 'File exists' -e 'cannot overwrite existing file' | sort | uniq -c)
    is "$odd" "" "$phase: ln/mkdir/bash failed only with 'File exists'"
    # dash opens a non-regular X.lock (a directory lock) without O_CREAT:
    # "Is a directory", or ENOENT ("No such file") if it was released in between;
    # or, not being root, EACCES if procmail's lockfile took it in between
    # (its lock files are mode 0444, and dash opens O_WRONLY what it stat'ed).
    local perm=()
    ((EUID != 0)) && perm=(-e 'Permission denied')
    odd=$(cat "$RES"/dash*.stderr /dev/null 2>/dev/null |
        grep -v -e 'File exists' -e 'Is a directory' -e 'No such file' "${perm[@]}" | sort | uniq -c)
    is "$odd" "" "$phase: dash failed only with 'File exists' (or a directory lock)"
    odd=$(cat "$RES"/procmail*.stderr /dev/null 2>/dev/null | grep -v -e 'Sorry, giving up' | sort | uniq -c)
    is "$odd" "" "$phase: procmail lockfile said nothing but 'Sorry, giving up'"
    is "$(cat "$RES"/*.worker-stderr 2>/dev/null)" "" "$phase: the worker shells reported no errors"

    is "$(fsop1 lstat "$LK")" ENOENT "$phase: X.lock is free at the end"
    is "$(timeout 10 cat -- "$L/.lockfs/status")" "" "$phase: no lock held at the end"
    local rmstale lk
    rmstale=$(cat "$RES"/*.rmstale /dev/null 2>/dev/null | wc -l)
    if ((RMSTALE_OK)); then
        lk=$(tmp_leaks "$L" | grep -c '^\.lk')
        note "$phase: liblockfile's own race with a directory lock (exit 8): $rmstale times"
        is "$lk" "$rmstale" "$phase: each liblockfile exit 8 left its one .lk temp file, and no other did"
        (cd "$L" && rm -f -- .lk*)
    fi
    is "$(tmp_leaks "$L")" "" "$phase: no temporary files left by any tool"
    cmp_ok "$elapsed" -le $((secs + 15)) "$phase: stayed within its time bound (${elapsed}s)"
    GRAND_TOTAL=$((GRAND_TOTAL + sections))
}

declare -a ALL_PIDS=()
at_exit 'for p in "${ALL_PIDS[@]}"; do kill "$p" 2>/dev/null; done'
GRAND_TOTAL=0
T0=$(date +%s)

# Cheap in-process workers carry most of the volume; every exec'ed tool
# still gets dozens of sections against all the others.
RMSTALE_OK=0
run_phase files "$PHASE1_SECS" \
    bash1:bash:300 bash2:bash:300 \
    ln1:ln:200 ln2:ln:200 \
    dash1:dash:100 \
    dotlockfile1:dotlockfile:80 \
    lockfilecreate1:lockfilecreate:80 \
    procmail1:procmail:80 \
    mutt1:mutt:80 \
    mailutils1:mailutils:80 \
    procmailblock1:procmailblock:3 \
    py1:py:500 py2:py:500

RMSTALE_OK=1
run_phase dirs "$PHASE2_SECS" \
    mkdir1:mkdir:200 mkdir2:mkdir:200 \
    ln1:ln:100 \
    dash1:dash:60 \
    dotlockfile1:dotlockfile:40 \
    lockfilecreate1:lockfilecreate:40 \
    procmail1:procmail:40 \
    mutt1:mutt:40 \
    mailutils1:mailutils:40 \
    py1:py:200

cmp_ok "$GRAND_TOTAL" -ge 3000 "at least 3000 critical sections in total ($GRAND_TOTAL)"
note "contention test took $(($(date +%s) - T0))s"

done_testing
