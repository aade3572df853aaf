#!/bin/bash
# tests/faults/checkers.t — both checkers of the fault suite catch what they
# are there to catch (issue 28): check.py and Porcupine (porcupine/, a
# linearizability checker against a mutex with fences, readers-writer for
# shared locks) are fed hand-made records, as the workers write them, of
#   * a good history: R.lock handed over, two shared flocks of F overlapping
#     each other, then an exclusive one;
#   * two exclusive sections of R.lock that overlap;
#   * an exclusive flock that overlaps a shared one;
#   * a fence that goes backwards on R.lock;
#   * an exclusive flock whose fence is below an earlier shared one's;
# and each must pass the first and fail the others; and check.py times a
# cut link from when the host's proxy applied it, asks no loss of an
# R.lock whose release began before the cut, nor of a lock whose lockfs was
# killed before the cut, and excuses a restart under which lockfsctl hold
# stopped its command in time.  Needs no mount and no
# server; Porcupine's points SKIP (saying why) without Go or its module.
# Run by tests/fs/96-fault-checkers.t.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/tap.sh
. "$here/../lib/tap.sh"
PYTHON=${PYTHON:-/usr/bin/python3}
top=$(mktemp -d "${TMPDIR:-/tmp}/lockfs-checkers.XXXXXX") || BAIL_OUT "mktemp failed"
at_exit "rm -rf -- '$top'"

T=1700000000000000000
ms() { echo $((T + $1 * 1000000)); } # ms into the history, as ns

# sec RUN WID ID HOST TOOL FENCE TRY_MS START_MS END_MS [RES MODE]: one
# section's B, E and X records in RUN/w.WID.log.
sec() {
    local run=$1 wid=$2 id=$3 h=$4 tool=$5 fence=$6 try=$7 ws=$8 we=$9 res=${10:-} mode=${11:-}
    printf 'B\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t0\t100%s\n' "$id" "$h" "$tool" "$fence" "$(ms "$try")" \
        "$(ms "$ws")" "$(ms "$ws")" "${res:+$'\t'$res$'\t'$mode}" >>"$run/w.$wid.log"
    printf 'E\t%s\t%s\tok\n' "$id" "$(ms "$we")" >>"$run/w.$wid.log"
    printf 'X\t%s\t%s\t0\t\n' "$id" "$(ms $((we + 5)))" >>"$run/w.$wid.log"
}

# history NAME OVERRIDES...: the good history, with one line changed by
# each "ID:FIELD=VALUE" (fence, ws, we).
history() {
    local run=$top/$1 id wid h tool fence try ws we res mode o
    shift
    mkdir -p "$run"
    : >"$run/nemesis.log"
    : >"$run/hosts.tsv"
    while read -r id wid h tool fence try ws we res mode; do
        for o in "$@"; do
            [[ ${o%%:*} == "$id" ]] || continue
            o=${o#*:}
            case ${o%%=*} in
            fence) fence=${o#*=} ;;
            ws) ws=${o#*=} ;;
            we) we=${o#*=} ;;
            esac
        done
        [[ $res == - ]] && res='' mode=''
        sec "$run" "$wid" "$id" "$h" "$tool" "$fence" "$try" "$ws" "$we" "$res" "$mode"
    done <<'H'
h1-1-setc.1 h1-1-setc h1 setc 10 90 100 200 - -
h2-2-ln.1 h2-2-ln h2 ln 11 150 300 400 - -
h1-3-flock.1 h1-3-flock h1 flock 20 90 100 300 flock:F s
h2-4-flock.1 h2-4-flock h2 flock 21 140 150 350 flock:F s
h3-5-flock.1 h3-5-flock h3 flock 22 200 400 450 flock:F x
h3-6-setc.1 h3-6-setc h3 setc 12 420 500 600 - -
H
    printf '%s' "$run"
}

porc='' porc_skip=''
porc=$("$here/porcupine/build" 2>&1)
case $? in
0) ;;
77) porc_skip=$porc porc='' ;;
*) porc_skip='' ;;
esac

# judge NAME WANT(pass|fail) WHAT RUN
judge() {
    local name=$1 want=$2 what=$3 run=$4 out verdict rc
    out=$("$PYTHON" "$here/check.py" "$run" --ttl 3 --history "$run/history.tsv" 2>&1)
    verdict=$(printf '%s\n' "$out" | awk -F'\t' '$2 ~ /^with no fault active:/ { print $1 }')
    if [[ $want == pass ]]; then
        is "$verdict" ok "check.py passes $what"
    else
        is "$verdict" "not ok" "check.py fails $what"
        like "$(printf '%s\n' "$out" | grep -E '^diag' | head -n 3)" "$5" "... saying so ($5)"
    fi
    [[ $verdict == ok || $verdict == "not ok" ]] || diag "$out"
    if [[ -n $porc ]]; then
        "$porc" "$run/history.tsv" >"$run/porcupine.out" 2>&1
        rc=$?
        if [[ $want == pass ]]; then
            is "$rc" 0 "Porcupine passes $what"
        else
            is "$rc" 1 "Porcupine fails $what (not linearizable)"
        fi
        ((rc == 0 || rc == 1)) || diag "$(cat "$run/porcupine.out")"
        [[ $want == fail ]] && like "$(grep -F "${6:-R.lock}:" "$run/porcupine.out")" "^${6:-R.lock}: .*NOT linearizable" \
            "... on ${6:-R.lock}"
    elif [[ -n $porc_skip ]]; then
        skip "Porcupine on $what: $porc_skip"
    else
        fail "Porcupine on $what: cannot build tests/faults/porcupine: $porc"
    fi
}

run=$(history good)
judge good pass "a good history (R.lock handed over, shared flocks overlapping each other, then an exclusive one)" "$run"
is "$(wc -l <"$run/history.tsv")" 12 "check.py wrote the history: an acquire and a release per section"
like "$(head -n 1 "$run/history.tsv")" $'^h1-1-setc\tR\\.lock\tx\tacquire\t[0-9]+\t[0-9]+\t10\th1-1-setc\\.1$' \
    "... as client, resource, mode, op, call, return, fence, section"

judge overlap fail "two exclusive sections of R.lock that overlap" "$(history overlap h2-2-ln.1:ws=150)" 'overlap'
judge shared-x fail "an exclusive flock that overlaps a shared one" "$(history shared-x h3-5-flock.1:ws=320)" \
    'overlap' flock:F
judge inversion fail "a fence that goes backwards on R.lock" "$(history inversion h2-2-ln.1:fence=9)" 'fence order'
judge shared-inv fail "an exclusive flock whose fence is below an earlier shared one's" \
    "$(history shared-inv h3-5-flock.1:fence=19)" 'fence order' flock:F
# Shared ones need not be in fence order among themselves.
judge shared-order pass "two shared flocks whose fences are out of order with each other" \
    "$(history shared-order h2-4-flock.1:fence=19)"
# A cut link is timed from when the host's proxy applied it, as its log
# says, not from when the nemesis was logged: under load the control command
# reached a proxy 732 ms late in a long run, and a loss declared 2.36 s into
# the cut was counted 3.09 s "late".  cutrun NAME APPLIED_MS LOST_MS: the good
# history, and h1's long section of R.lock (fence 30) from 950 ms while a
# reset-holder on h1 runs from 1000 to 6000 ms; h1's lockfs declares the lock
# lost at LOST_MS and the section ends by the loss; its proxy applied the reset
# at APPLIED_MS (none: no proxy log).
cutrun() {
    local run
    run=$(history "$1")
    printf 'B\th1-7-setc.1\th1\tsetc\t30\t%s\t%s\t%s\t0\t100\n' "$(ms 940)" "$(ms 950)" "$(ms 950)" >>"$run/w.h1-7-setc.log"
    printf 'E\th1-7-setc.1\t%s\tlost\n' "$(ms $(($3 + 5)))" >>"$run/w.h1-7-setc.log"
    printf 'X\th1-7-setc.1\t%s\t1\t\n' "$(ms $(($3 + 10)))" >>"$run/w.h1-7-setc.log"
    printf 'N+\t1\treset-holder\th1\t%s\tproxy reset, refusing for 5s\nN-\t1\t%s\n' "$(ms 1000)" "$(ms 6000)" >"$run/nemesis.log"
    printf '%s lockfs: warning: lost R.lock (fence 30, held by h1:4242 uid 0): its lease could not be renewed in time\n' \
        "$(ms "$3")" >"$run/lockfs.h1.log"
    printf 'h1\t4242\t%s\t%s\n' "$run/lockfs.h1.log" "$(ms 0)" >"$run/hosts.tsv"
    [[ -n $2 ]] && printf '%s mode forward delay_ms=0\n%s reset 3 connections\n%s mode reset delay_ms=0\n%s mode forward delay_ms=0\n' \
        "$(ms 0)" "$(ms "$2")" "$(ms "$2")" "$(ms 6001)" >"$run/h1.proxy.log"
    "$PYTHON" "$here/check.py" "$run" --ttl 3 --strict 2>&1 | grep -F 'cut for a whole ttl'
}
like "$(cutrun cut-late-proxy 1732 4090)" $'^ok\t.*1 locks, worst 2358 ms' \
    "check.py times a cut from when the proxy applied it: lost 2.36 s into it, 3.09 s after the nemesis began, is in time"
like "$(cutrun cut-late-lost 1732 4900)" $'^not ok\t.*1 of 1 late' "... and still fails a loss declared 3.17 s into the cut"
like "$(cutrun cut-no-log '' 4090)" $'^not ok\t.*1 of 1 late' "... and, without a proxy log, times it from the nemesis: 3.09 s is late"
# R.lock let go as a cut began: its rm began before the cut took effect and
# returned 0 only after it (lockfs lets go of a lock whose unlink it cannot
# send; there is no loss to declare).  The old rule waited for the rm's
# return within ttl and counted the lock as "never declared lost".
run=$(history cut-release)
printf 'B\th1-7-setc.1\th1\tsetc\t30\t%s\t%s\t%s\t0\t100\n' "$(ms 700)" "$(ms 710)" "$(ms 710)" >>"$run/w.h1-7-setc.log"
printf 'E\th1-7-setc.1\t%s\tok\n' "$(ms 950)" >>"$run/w.h1-7-setc.log"
printf 'X\th1-7-setc.1\t%s\t0\t\n' "$(ms 6200)" >>"$run/w.h1-7-setc.log"
printf 'N+\t1\tpartition-holder:both\th1\t%s\tproxy drop both for 5s\nN-\t1\t%s\n' "$(ms 900)" "$(ms 6000)" >"$run/nemesis.log"
: >"$run/lockfs.h1.log"
printf 'h1\t4242\t%s\t%s\n' "$run/lockfs.h1.log" "$(ms 0)" >"$run/hosts.tsv"
printf '%s mode drop delay_ms=0\n%s mode forward delay_ms=0\n' "$(ms 1020)" "$(ms 6001)" >"$run/h1.proxy.log"
out=$("$PYTHON" "$here/check.py" "$run" --ttl 3 --strict 2>&1)
like "$out" $'(^|\n)ok\twith no fault active:' "check.py judged the cut-release history" || diag "$out"
unlike "$(printf '%s\n' "$out" | grep -F 'cut for a whole ttl')" '^not ok' \
    "check.py: R.lock whose rm began before a cut and returned 0 after it has no loss to declare"
# A restart of lockfs under a lockfsctl hold section (issue 28): hold stops
# its command when the lease the mount last reported could run out (within a
# fifth of ttl), and a restart can take that long counted from the last
# renewal before the stop though not from the stop (the etcd long run: the
# new lockfs served 1,463 ms after the SIGTERM, hold stopped its command 113
# ms before that).  restartrun NAME SERVING_MS TERM_MS: h1's hold section of
# R.lock (fence 30) from 900 ms; a restart-holder:clean of h1 from 1000 ms,
# its lockfs stopped at 1900 ms and the new one serving SERVING_MS after
# that; hold stopped the command at TERM_MS.
restartrun() {
    local run
    run=$(history "$1")
    printf 'B	h1-7-holdd.1	h1	holdd	30	%s	%s	%s	1	100
' "$(ms 890)" "$(ms 900)" "$(ms 900)" >>"$run/w.h1-7-holdd.log"
    printf 'E	h1-7-holdd.1	%s	term
' "$(ms "$3")" >>"$run/w.h1-7-holdd.log"
    printf 'X	h1-7-holdd.1	%s	143	
' "$(ms $(($3 + 10)))" >>"$run/w.h1-7-holdd.log"
    {
        printf 'N+	1	restart-holder:clean	h1	%s	SIGTERM of its lockfs
' "$(ms 1000)"
        printf 'N=	1	%s	parked
' "$(ms 1900)"
        printf 'N=	1	%s	stopped 580 ms
' "$(ms 2480)"
        printf 'N=	1	%s	serving %s ms
' "$(ms $((1900 + $2)))" "$2"
        printf 'N-	1	%s
' "$(ms $((1910 + $2)))"
    } >"$run/nemesis.log"
    : >"$run/lockfs.h1.log"
    printf 'h1	4242	%s	%s
' "$run/lockfs.h1.log" "$(ms 0)" >"$run/hosts.tsv"
    "$PYTHON" "$here/check.py" "$run" --ttl 3 --strict 2>&1 | grep -E $'^(ok|not ok)\trestart-holder'
}
like "$(restartrun restart-hold-late 1463 3250)" $'^ok\t' \
    "check.py: hold stopping its command 113 ms before a restarted lockfs served, 1.46 s after the stop, is what hold promises"
like "$(restartrun restart-hold-early 400 2200)" $'^not ok\t' \
    "... but a restart serving 400 ms after the stop, with hold's command stopped before, did not keep the lock"
# A lock held by a lockfs that kill-holder killed is gone with it: the next
# lockfs of that host starts with a fresh state_dir and has no loss to
# declare when a later fault cuts the host off (the LDAP short schedule, here:
# a reset-holder of h3 1.4 s after its kill-holder, and "h3 never declared
# side-h3-1.lock lost").  killcut NAME KILL(yes|no): h1's keeper takes
# side-h1-1.lock (fence 40) at 500 ms; with KILL a kill-holder of h1 from
# 1000 to 2000 ms; a reset-holder of h1 from 2500 to 7500 ms; no loss declared.
killcut() {
    local run
    run=$(history "$1")
    printf 'T\tside-h1-1.lock\t40\t%s\n' "$(ms 500)" >"$run/k.h1.log"
    {
        [[ $2 == yes ]] && printf 'N+\t1\tkill-holder\th1\t%s\tkill -9 of its lockfs\nN-\t1\t%s\n' "$(ms 1000)" "$(ms 2000)"
        printf 'N+\t2\treset-holder\th1\t%s\tproxy reset, refusing for 5s\nN-\t2\t%s\n' "$(ms 2500)" "$(ms 7500)"
    } >"$run/nemesis.log"
    : >"$run/lockfs.h1.log"
    printf 'h1\t4242\t%s\t%s\n' "$run/lockfs.h1.log" "$(ms 0)" >"$run/hosts.tsv"
    "$PYTHON" "$here/check.py" "$run" --ttl 3 --strict 2>&1
}
out=$(killcut kill-cut yes)
like "$out" $'(^|\n)ok\twith no fault active:' "check.py judged the kill-cut history" || diag "$out"
unlike "$(printf '%s\n' "$out" | grep -F 'cut for a whole ttl')" '^not ok' \
    "check.py asks no loss, at a later cut, of a lock whose lockfs was killed since it was taken"
like "$(killcut nokill-cut no | grep -F 'cut for a whole ttl')" $'^not ok\t.*1 of 1 late or never' \
    "... but does of the same lock when its lockfs lived"
done_testing
