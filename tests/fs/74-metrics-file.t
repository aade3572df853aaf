#!/bin/bash
# 74-metrics-file.t — metrics_file=PATH (lockfs.conf(5), issue 29): lockfs
# writes what .lockfs/metrics shows to PATH, for node_exporter's textfile
# collector: at start, every renew interval, and once more at a clean exit;
# each time whole, through a temporary file beside it renamed over it, none
# of which is left behind.  A path it cannot write is one warning in the log
# until a write works again (then a new failure warns again), and the mount
# goes on; a relative path, or one inside the mount, is refused at start with
# one line and exit status 1.
set -u
. "$(dirname "$0")/../lib/mount.sh"

PROM=$TESTLIB/promcheck.py
"$PYTHON" -c 'import prometheus_client' 2>/dev/null ||
    skip_all "python3-prometheus-client is not installed (apt-get install python3-prometheus-client; scripts/setup-debian does)"

NL=$'\n'
# fval FILE SAMPLE: SAMPLE's value in FILE, which must pass promcheck whole.
fval() { "$PYTHON" "$PROM" "$1" "$2" 2>/dev/null; }
# vval MNT SAMPLE: the same in MNT's .lockfs/metrics.
vval() { timeout 10 cat -- "$1/.lockfs/metrics" >"$TESTDIR/view.txt" && fval "$TESTDIR/view.txt" "$2"; }
# shows FILE SAMPLE VALUE: FILE has SAMPLE at VALUE.
shows() { [[ $(fval "$1" "$2") == "$3" ]]; }
# holds_only DIR NAME...: DIR holds these names and no other (no temp file).
holds_only() { [[ $(ls -A -- "$1" | tr '\n' ' ') == "$(printf '%s ' "${@:2}")" ]]; }
one_line() { [[ -n $1 && $1 != *"$NL"* ]]; }
# Lines of the log that say the metrics file could not be written.
warnings() { grep -c "warning: cannot write metrics_file $1:" "$LOCKFS_LOG"; }
tries() { (($(grep -c "debug: metrics_file $1: still cannot write" "$LOCKFS_LOG") >= $2)); }
warned_times() { (($(warnings "$1") == $2)); }

# The textfile directory; a renew interval of 300 ms keeps the file fresh.
out=$TESTDIR/textfile
mkdir "$out"
P=$out/lockfs.prom
fast=ttl=3s,renew_interval=300ms,network_timeout=1s

# ---------------------------------------------------------------- written, and kept up to date

lockfs_start_or_bail -o "$fast,metrics_file=$P"
A=$MNT A_PID=$LOCKFS_PID
ok "the file is written at start" wait_until 10 test -s "$P"
ok "it is Prometheus text (promcheck)" "$PYTHON" "$PROM" "$P"
is "$(fval "$P" "lockfs_info{mount=\"$A\"}")" 1 "its samples carry mount=\"$A\""
is "$(fval "$P" lockfs_locks_held)" 0 "no lock held yet"

run 10 bash -c 'set -C; : >"$1"' _ "$A/x.lock"
is "$RC" 0 "take x.lock (set -C: O_EXCL)"
is "$(vval "$A" lockfs_locks_held)" 1 ".lockfs/metrics shows one lock held"
ok "the file shows it within a renew interval or so" wait_until 10 shows "$P" lockfs_locks_held 1
is "$(fval "$P" lockfs_locks_held)" "$(vval "$A" lockfs_locks_held)" \
    "lockfs_locks_held: the file says what .lockfs/metrics says"
g='lockfs_acquisitions_total{result="granted"}'
is "$(fval "$P" "$g")" "$(vval "$A" "$g")" "$g: the file says what .lockfs/metrics says"
run 10 rm -- "$A/x.lock"
is "$RC" 0 "release x.lock"
ok "the file is updated after the release" wait_until 10 shows "$P" lockfs_locks_held 0
is "$(fval "$P" lockfs_releases_total)" 1 "it counts the release"
# A write in flight has its temporary file for a moment: one left behind
# would stay.
ok "no temporary file stays beside it" wait_until 5 holds_only "$out" lockfs.prom
lockfs_stop "$A_PID"
is "$LOCKFS_RC" 0 "the mount stops cleanly"
ok "nothing but the file is left in its directory" holds_only "$out" lockfs.prom

# ---------------------------------------------------------------- once more at exit

# ttl 120 s: the renew interval is 40 s, so between the start and the exit
# nothing but those two writes the file.
E=$out/exit.prom
lockfs_start_or_bail -o "ttl=120s,metrics_file=$E"
ok "written at start (renew interval 40 s)" wait_until 10 test -s "$E"
run 10 mkdir "$MNT/e.lock"
is "$RC" 0 "take e.lock (mkdir)"
is "$(fval "$E" lockfs_locks_held)" 0 "the file is not written again before the renew interval"
lockfs_stop
is "$LOCKFS_RC" 0 "SIGTERM: a clean exit"
is "$(fval "$E" lockfs_locks_held)" 1 "written once more at the exit: e.lock held"
is "$(fval "$E" "$g")" 1 "... and its grant counted"
ok "no temporary file left" holds_only "$out" exit.prom lockfs.prom

# ---------------------------------------------------------------- a path that cannot be written

# A directory that is not there: as root too (CAP_DAC_OVERRIDE writes
# anywhere that exists).  log_level=debug shows each try that fails.
gone=$TESTDIR/absent
B=$gone/lockfs.prom
lockfs_start_or_bail -o "$fast,log_level=debug,metrics_file=$B"
C=$MNT C_PID=$LOCKFS_PID
ok "a path it cannot write: a warning naming it and the error" \
    wait_until 10 log_has "warning: cannot write metrics_file $B: .*No such file or directory"
ok "it keeps trying every renew interval (3 more tries)" wait_until 10 tries "$B" 3
is "$(warnings "$B")" 1 "one warning, not one per try"
run 10 bash -c 'set -C; echo $$ >"$1"' _ "$C/y.lock"
is "$RC" 0 "the mount works: take y.lock"
is "$(vval "$C" lockfs_locks_held)" 1 "its .lockfs/metrics shows it held"
run 10 rm -- "$C/y.lock"
is "$RC" 0 "release y.lock"
ok "lockfs is still running" _pid_alive "$C_PID"
mkdir "$gone"
ok "once the directory is there, the file is written" wait_until 10 test -s "$B"
ok "and the log says so" log_has "info: metrics_file $B: written again"
is "$(fval "$B" lockfs_releases_total)" 1 "it shows the mount's release"
mv -- "$gone" "$gone.moved"
ok "a new failure after that warns again, once" wait_until 10 warned_times "$B" 2
lockfs_stop "$C_PID"
is "$LOCKFS_RC" 0 "the mount stops cleanly"

# ---------------------------------------------------------------- refused at start

bad=$TESTDIR/badmnt
mkdir "$bad" "$TESTDIR/badstate"
st="state_dir=$TESTDIR/badstate"
# refused WHAT ERE ARGS...: lockfs ARGS exits 1 with one line on stderr
# matching ERE, and mounts nothing.
refused() {
    local what=$1 ere=$2; shift 2
    run 15 "$LOCKFS_BIN" "$@"
    is "$RC" 1 "$what: exit status 1"
    ok "$what: one line on stderr" one_line "$ERR"
    like "$ERR" "$ere" "$what: the error names the key and what to do ($ERR)"
    nok "$what: nothing mounted" is_fuse_mounted "$bad"
    is_fuse_mounted "$bad" && _unmount_force "$bad"
}
refused "-o metrics_file=lockfs.prom" \
    "^lockfs: mount option 'metrics_file=lockfs\.prom': 'lockfs\.prom' is not an absolute path; write one starting with /$" \
    "$bad" -f -o "$st,metrics_file=lockfs.prom"
conf=$TESTDIR/rel.conf
printf '[lockfs]\nmetrics_file = textfile/lockfs.prom\n' >"$conf"
refused "metrics_file = textfile/lockfs.prom in a file" \
    "^lockfs: $conf:2: key 'metrics_file' in \[lockfs\]: 'textfile/lockfs\.prom' is not an absolute path; write one starting with /$" \
    "$bad" -f -o "$st" --config "$conf"
# Written from the daemon itself, a file in its own mount would wait for
# an answer only the daemon can give (at start, before it answers).
refused "metrics_file inside the mount point" \
    "^lockfs: metrics_file $bad/m\.prom is inside the mount point $(realpath -- "$bad"); .*outside" \
    "$bad" -f -o "$st,metrics_file=$bad/m.prom"

done_testing
