# shellcheck shell=bash
# tests/lib/tap.sh — minimal TAP producer for the lockfs filesystem tests.
#
# Source it from a bash test script.  Functions:
#   plan N                     declare the number of tests up front (optional)
#   ok DESC CMD [ARG...]       pass when CMD exits 0 (CMD's stdout is discarded)
#   nok DESC CMD [ARG...]      pass when CMD exits non-zero
#   pass DESC / fail DESC      unconditional result (fail: with a reason in DESC)
#   todo_fail DESC REASON      a known, open failure: "not ok ... # TODO REASON"
#   is GOT EXPECTED DESC       string equality
#   isnt GOT UNEXPECTED DESC   string inequality
#   like GOT ERE DESC          GOT matches the extended regular expression
#   unlike GOT ERE DESC
#   cmp_ok A OP B DESC         integer comparison, OP one of -eq -ne -lt -le -gt -ge
#   skip REASON [COUNT]        "ok N # SKIP REASON", COUNT times; REASON is mandatory
#   diag MSG... / note MSG...  comments on stderr / stdout
#   BAIL_OUT REASON            stop the whole run
#   at_exit CMD                register cleanup code (run in reverse order at exit)
#   done_testing               print the plan if none was declared, exit with the
#                              failure count
#
# Guard rails, because a lock test that passes vacuously is worse than none:
#   - a script that runs no test at all fails (done_testing emits "not ok");
#   - a script that exits before done_testing fails (exit status 255);
#   - a skip without a reason is a failure;
#   - a declared plan that does not match the count is a failure.

[[ -n ${_TAP_SH_LOADED:-} ]] && return 0
_TAP_SH_LOADED=1

_tap_n=0            # tests emitted
_tap_failed=0       # tests failed
_tap_skipped=0      # tests skipped
_tap_planned=''     # declared plan, if any
_tap_done=0         # done_testing reached
_tap_atexit=()      # cleanup commands
_tap_late_failure=0 # set by cleanup: something failed after the last test point

# Description text must stay on one line and must not start a directive.
_tap_clean() {
    local s=${1//$'\n'/\\n}
    s=${s//$'\r'/\\r}
    s=${s//'#'/'\#'}
    printf '%s' "$s"
}

# Where the assertion was written: the first frame outside this file.
_tap_where() {
    local i=1 src line
    while :; do
        src=${BASH_SOURCE[$i]:-}
        line=${BASH_LINENO[$((i - 1))]:-}
        [[ -z $src ]] && { printf 'unknown'; return; }
        if [[ $src != "${BASH_SOURCE[0]}" ]]; then
            printf '%s line %s' "$src" "$line"
            return
        fi
        i=$((i + 1))
    done
}

# _tap_result 0|1 DESC [DIRECTIVE]
_tap_result() {
    local good=$1 desc=$2 directive=${3:-}
    _tap_n=$((_tap_n + 1))
    local line
    if ((good == 0)); then
        line="ok $_tap_n - $(_tap_clean "$desc")"
    else
        line="not ok $_tap_n - $(_tap_clean "$desc")"
        _tap_failed=$((_tap_failed + 1))
    fi
    [[ -n $directive ]] && line+=" # $directive"
    printf '%s\n' "$line"
    if ((good != 0)); then
        diag "  Failed test '$desc'"
        diag "  at $(_tap_where)"
    fi
    return "$good"
}

plan() {
    [[ $1 =~ ^[0-9]+$ ]] || BAIL_OUT "plan: not a number: $1"
    _tap_planned=$1
    printf '1..%s\n' "$1"
}

diag() {
    local l
    while IFS= read -r l; do printf '# %s\n' "$l" >&2; done <<<"$*"
}

note() {
    local l
    while IFS= read -r l; do printf '# %s\n' "$l"; done <<<"$*"
}

pass() { _tap_result 0 "$1"; }
# todo_fail DESC REASON: a known failure, still open: "not ok # TODO REASON",
# shown (prove lists it as a TODO) but not counted as failed.
todo_fail() {
    [[ -n ${2:-} ]] || { fail "todo_fail without a reason: $1"; return 1; }
    _tap_n=$((_tap_n + 1))
    printf 'not ok %s - %s # TODO %s\n' "$_tap_n" "$(_tap_clean "$1")" "$(_tap_clean "$2")"
}
fail() { _tap_result 1 "$1"; }

ok() {
    local desc=$1; shift
    (($#)) || { fail "$desc (ok called without a command)"; return 1; }
    # The command's stdout must not leak into the TAP stream.
    "$@" >/dev/null
    local rc=$?
    ((rc == 0)) && { pass "$desc"; return 0; }
    fail "$desc"
    diag "  command: $*"
    diag "  exit status: $rc"
    return 1
}

nok() {
    local desc=$1; shift
    (($#)) || { fail "$desc (nok called without a command)"; return 1; }
    "$@" >/dev/null
    local rc=$?
    ((rc != 0)) && { pass "$desc"; return 0; }
    fail "$desc"
    diag "  command: $*"
    diag "  unexpectedly succeeded"
    return 1
}

is() {
    if [[ $1 == "$2" ]]; then pass "$3"; return 0; fi
    fail "$3"
    diag "         got: '$1'"
    diag "    expected: '$2'"
    return 1
}

isnt() {
    if [[ $1 != "$2" ]]; then pass "$3"; return 0; fi
    fail "$3"
    diag "         got: '$1'"
    diag "    expected: anything else"
    return 1
}

like() {
    if [[ $1 =~ $2 ]]; then pass "$3"; return 0; fi
    fail "$3"
    diag "                  '$1'"
    diag "    doesn't match '$2'"
    return 1
}

unlike() {
    if ! [[ $1 =~ $2 ]]; then pass "$3"; return 0; fi
    fail "$3"
    diag "                  '$1'"
    diag "          matches '$2'"
    return 1
}

cmp_ok() {
    local a=$1 op=$2 b=$3 desc=$4
    if ! [[ $a =~ ^-?[0-9]+$ && $b =~ ^-?[0-9]+$ ]]; then
        fail "$desc"
        diag "  not integers: '$a' $op '$b'"
        return 1
    fi
    case $op in
        -eq | -ne | -lt | -le | -gt | -ge) ;;
        *) fail "$desc"; diag "  bad operator $op"; return 1 ;;
    esac
    if [ "$a" "$op" "$b" ]; then pass "$desc"; return 0; fi
    fail "$desc"
    diag "    $a"
    diag "        $op"
    diag "    $b"
    return 1
}

skip() {
    local reason=${1:-} count=${2:-1} i
    if [[ -z $reason ]]; then
        fail "skip called without a reason"
        return 1
    fi
    for ((i = 0; i < count; i++)); do
        _tap_n=$((_tap_n + 1))
        _tap_skipped=$((_tap_skipped + 1))
        printf 'ok %s # SKIP %s\n' "$_tap_n" "$(_tap_clean "$reason")"
    done
}

BAIL_OUT() {
    printf 'Bail out! %s\n' "$(_tap_clean "$*")"
    _tap_done=1
    exit 255
}

at_exit() { _tap_atexit+=("$1"); }

_tap_run_atexit() {
    local i
    for ((i = ${#_tap_atexit[@]} - 1; i >= 0; i--)); do
        eval "${_tap_atexit[$i]}" || :
    done
    _tap_atexit=()
}

# Exit trap: cleanup first, then make an unfinished script fail loudly.
_tap_on_exit() {
    local rc=$?
    trap - EXIT
    _tap_run_atexit
    if ((_tap_late_failure && rc == 0)); then
        printf '# a failure found in cleanup (see above): exit status 1\n' >&2
        rc=1
    fi
    if ((_tap_done == 0)); then
        printf '# test script exited with status %s before done_testing (%s tests run)\n' \
            "$rc" "$_tap_n" >&2
        exit 255
    fi
    exit "$rc"
}
trap _tap_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

done_testing() {
    if ((_tap_n == 0)); then
        # Nothing ran: that is never a pass.
        _tap_result 1 "at least one test ran (none did)"
    fi
    if [[ -z $_tap_planned ]]; then
        printf '1..%s\n' "$_tap_n"
    elif ((_tap_planned != _tap_n)); then
        diag "planned $_tap_planned tests but ran $_tap_n"
        _tap_failed=$((_tap_failed + 1))
    fi
    ((_tap_failed > 0)) && diag "failed $_tap_failed of $_tap_n tests"
    ((_tap_skipped > 0)) && note "skipped $_tap_skipped of $_tap_n tests"
    _tap_done=1
    local rc=$_tap_failed
    ((rc > 254)) && rc=254
    exit "$rc"
}
