#!/bin/bash
# 74-metrics.t — .lockfs/metrics: a read-only file in the Prometheus text
# exposition format (lockfs(8) METRICS), parsed by prometheus_client's own
# parser and checked strictly (tests/lib/promcheck.py), whose counters count
# exactly what this test does: grants, releases, a break through
# .lockfs/break, heartbeats sent and held back by heartbeat_min_interval; the
# gauge of locks held; a backend call latency histogram whose counts are the
# calls made.  On shared backends also: a refusal the backend makes (tinystore:
# a key its own CLI holds), renewals, and an outage (SIGSTOP of the server):
# an acquisition answers EIO and counts as an error, renewals fail, the lease
# is lost, the backend shows unreachable, and reachable again once it answers.
set -u
. "$(dirname "$0")/../lib/mount.sh"

PROM=$TESTLIB/promcheck.py
"$PYTHON" -c 'import prometheus_client' 2>/dev/null ||
    skip_all "python3-prometheus-client is not installed (apt-get install python3-prometheus-client; scripts/setup-debian does)"

# heartbeat_min_interval far beyond the test: every touch after a grant is
# held back, so the counts are exact; ttl long enough that no renewal runs
# on this mount while it is counted.
lockfs_start_or_bail -o heartbeat_min_interval=100s,ttl=200s,stale_after=600s
L=$MNT

# m SAMPLE...: the values, after the whole file has passed the checks.
m() {
    timeout 10 cat -- "$L/.lockfs/metrics" >"$TESTDIR/metrics.txt" || return 1
    "$PYTHON" "$PROM" "$TESTDIR/metrics.txt" "$@"
}
val() { m "$1" 2>"$TESTDIR/prom.err" || diag "$(cat "$TESTDIR/prom.err")"; }
acq() { val "lockfs_acquisitions_total{result=\"$1\"}"; }
calls() { val "lockfs_backend_call_duration_seconds_count{op=\"$1\"}"; }

ok "metrics parse as Prometheus text on a fresh mount" m
is "$(st %a "$L/.lockfs/metrics")" 444 ".lockfs/metrics is read-only (0444)"
run 5 bash -c 'echo x >"$1"' _ "$L/.lockfs/metrics"
isnt "$RC" 0 "writing .lockfs/metrics fails"
like "$(timeout 10 ls -A "$L/.lockfs")" metrics ".lockfs/ lists metrics"
is "$(acq granted)" 0 "fresh: no grant"
is "$(val lockfs_locks_held)" 0 "fresh: no lock held"
is "$(val lockfs_backend_reachable)" 1 "fresh: the backend is reachable"
is "$(val "lockfs_info{backend=\"$LOCKFS_BACKEND\"}")" 1 "lockfs_info names the backend ($LOCKFS_BACKEND)"
is "$(val "lockfs_info{mount=\"$L\"}")" 1 "every sample carries mount=\"$L\""

# Grants: O_EXCL with content (the write is a heartbeat with content: sent
# at once) and mkdir (no content).
run 10 bash -c 'set -C; echo $$ >"$1"' _ "$L/a.lock"
is "$RC" 0 "take a.lock (O_EXCL, then a write)"
run 10 mkdir "$L/d.lock"
is "$RC" 0 "take d.lock (mkdir)"
is "$(acq granted)" 2 "two grants counted"
is "$(val lockfs_locks_held)" 2 "two locks held"
is "$(calls acquire)" 2 "two acquire calls timed"
is "$(val lockfs_heartbeats_sent_total)" 1 "a.lock's content was sent: one heartbeat"
is "$(val lockfs_heartbeats_skipped_total)" 0 "nothing held back yet"

# Touches within heartbeat_min_interval: held back, not sent.
run 10 touch -c "$L/d.lock"
run 10 touch -c "$L/d.lock"
is "$(val lockfs_heartbeats_skipped_total)" 2 "two touches held back by heartbeat_min_interval"
is "$(val lockfs_heartbeats_sent_total)" 1 "none of them sent"
is "$(calls heartbeat)" 1 "one heartbeat call timed"

# A release and a break.
run 10 rm -f "$L/a.lock"
is "$RC" 0 "release a.lock"
is "$(val lockfs_releases_total)" 1 "one release counted"
is "$(calls release)" 1 "one release call timed"
run 10 bash -c 'printf "d.lock\n" >"$1"' _ "$L/.lockfs/break"
is "$RC" 0 "break d.lock through .lockfs/break"
is "$(val 'lockfs_breaks_total{reason="request"}')" 1 "one break at a request counted"
is "$(val 'lockfs_breaks_total{reason="stale"}')" 0 "no stale break"
is "$(calls break)" 1 "one break call timed"
is "$(val lockfs_locks_held)" 0 "no lock held any more"
is "$(val lockfs_releases_total)" 1 "a break is no release"
is "$(acq held)" 0 "no refusal counted"
is "$(acq error)" 0 "no backend error counted"
is "$(val lockfs_losses_total)" 0 "no loss"
is "$(val lockfs_renewals_total)" 0 "no renewal within ttl/3 (200 s)"
is "$(val lockfs_backend_reachable)" 1 "still reachable"
sum=$(val 'lockfs_backend_call_duration_seconds_sum{op="acquire"}')
like "$sum" '^[0-9.e-]+$' "acquire latency sum is a number ($sum)"

if [[ $LOCKFS_BACKEND == local ]]; then
    skip "refusals, renewals and outages need a shared backend; this run tests local" 17
    done_testing
    exit 0
fi

# A refusal the backend makes: tinystore's own CLI holds a key lockfs cannot
# see a holder record of, so the lookup finds it free and the create asks.
if [[ $LOCKFS_BACKEND == tinystore ]]; then
    rm -f "$TESTDIR/go" "$TESTDIR/held"
    mkfifo "$TESTDIR/go"
    "$TINYSTORE_BIN" lock "$TINYSTORE_STORE" hold lockfs x.lock --wait 0 -- \
        sh -c ': >"$1/held"; read -r _ <"$1/go"' _ "$TESTDIR" </dev/null >"$TESTDIR/cli.out" 2>&1 &
    cli=$!
    if wait_until 10 test -e "$TESTDIR/held"; then
        is "$(fsop1 excl "$L/x.lock")" EEXIST "x.lock, held by tinystore's CLI: EEXIST"
        is "$(acq held)" 1 "the refusal is counted as held"
    else
        fail "tinystore's CLI did not take x.lock: $(cat "$TESTDIR/cli.out")"
        skip "no CLI lock" 1
    fi
    timeout 10 sh -c 'echo go >"$1"' _ "$TESTDIR/go"
    wait "$cli"
else
    skip "a refusal that reaches the backend needs a lock with no holder record (tinystore's CLI)" 2
fi

# Renewals and an outage, on a mount of its own with a short lease.
# list_cache long: a name released here stays free for lookups, so an
# acquisition of it during the outage reaches the backend (any other name's
# lookup fails first, with EIO, and is no acquisition).
lockfs_start_or_bail -o ttl=3s,network_timeout=1s,list_cache=60s
R=$MNT
rmv() { timeout 10 cat -- "$R/.lockfs/metrics" >"$TESTDIR/r.txt" && "$PYTHON" "$PROM" "$TESTDIR/r.txt" "$@"; }
rm_ge() { local v; v=$(rmv "$1") && (($(printf '%.0f' "$v") >= $2)); }
run 10 mkdir "$R/r.lock"
is "$RC" 0 "take r.lock (ttl 3 s)"
ok "renewals are counted (2 within 10 s)" wait_until 10 rm_ge lockfs_renewals_total 2
age=$(rmv lockfs_last_renewal_age_seconds)
ok "the last renewal is younger than ttl ($age s)" awk -v a="$age" 'BEGIN { exit !(a >= 0 && a < 3) }'
is "$(rmv lockfs_renewal_failures_total)" 0 "no renewal failed"
run 10 mkdir "$R/y.lock"
run 10 rmdir "$R/y.lock"
is "$RC" 0 "take and release y.lock"
is "$(rmv 'lockfs_backend_call_failures_total{op="get"}')" 0 "no backend call failed yet"
backend_server_pause
ok "with the server stopped, the lease is lost (counted)" wait_until 10 rm_ge lockfs_losses_total 1
ok "a renewal failed (counted)" wait_until 10 rm_ge lockfs_renewal_failures_total 1
is "$(fsop1 excl "$R/y.lock")" EIO "an acquisition with the server stopped answers EIO"
is "$(rmv 'lockfs_acquisitions_total{result="error"}')" 1 "it is counted as a backend error"
is "$(rmv lockfs_backend_reachable)" 0 "the backend shows unreachable"
is "$(rmv 'lockfs_backend_call_failures_total{op="acquire"}')" 1 "the failed acquire call is counted"
ok "so is the failed renewal call" rm_ge 'lockfs_backend_call_failures_total{op="renew"}' 1
backend_server_resume
# The first call may still meet the reconnection's StartTLS timing out on a
# loaded machine (EIO); within 10 s one is answered.
end=$(($(now) + 10))
r=$(fsop1 excl "$R/z.lock")
while [[ $r == EIO ]] && (($(now) < end)); do
    sleep 0.2
    r=$(fsop1 excl "$R/z.lock")
done
is "$r" OK "the server answers again: z.lock is granted"
is "$(rmv lockfs_backend_reachable)" 1 "the backend shows reachable again"
ok "the whole file still parses" rmv

done_testing
