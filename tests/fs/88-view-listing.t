#!/bin/bash
# 88-view-listing.t — a listing never names what lookup denies: while hA
# takes and lets go of lock names as fast as it can, `ls -la` on hB never
# shows a name as `-????????? ? ? ?` (readdir named it, and the lstat that
# followed answered ENOENT): issue 28, one view of a lock at every moment.
#
# How it happened: readdir lists hA's locks from the backend and keeps the
# answer for list_cache (200 ms); ls then lstat()s every name in the order
# listed, and other hosts' locks come last.  In a directory of a few thousand
# names (a mail spool) ls reaches them after list_cache: the lookup asks the
# backend again and finds a lock hA let go meanwhile free.  Now the process
# that reads a listing is shown what it listed while it reads (lockfs(8),
# list_cache).  hB's directory holds 3000 ordinary files for that.
set -u
TEST_TIMEOUT=200
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] || skip_all "the local backend is one host's; two mounts share nothing"

lockfs_start_or_bail -o host=hA
A=$MNT
lockfs_start_or_bail -o host=hB
B=$MNT
SECS=${LISTING_SECS:-8}
for ((i = 0; i < ${FILLER:-3000}; i++)); do : >"$B/f$i"; done

# hA: take and let go of n0..n7.lock in turn, holding each for 0-60 ms
# (some let go before tinystore writes a record, most after), until told.
churn() {
    timeout -k 3 $((SECS + 20)) "$PYTHON" - "$A" "$SECS" <<'EOF'
import os, random, sys, time
a, secs = sys.argv[1], float(sys.argv[2])
t0, n = time.monotonic(), 0
while time.monotonic() - t0 < secs:
    p = os.path.join(a, "n%d.lock" % (n % 8))
    try:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError as e:
        print("take", p, e, file=sys.stderr)
        continue
    time.sleep(random.choice((0, 0.01, 0.03, 0.06, 0.08)))
    os.unlink(p)
    n += 1
print(n)
EOF
}

# hB: ls -la in a loop for as long; print every line with a '?' in it.
lister() {
    local deadline=$((EPOCHSECONDS + SECS)) n=0
    while ((EPOCHSECONDS < deadline)); do
        timeout 10 ls -la -- "$B" 2>&1 | grep -F '?'
        n=$((n + 1))
    done
    echo "listings $n" >&2
}

churn >"$TESTDIR/churn.out" 2>"$TESTDIR/churn.err" &
pids=($!)
for ((k = 1; k < ${LISTERS:-1}; k++)); do lister >"$TESTDIR/lister$k.out" 2>&1 & pids+=($!); done
bad=$(lister 2>"$TESTDIR/lister.err")
wait "${pids[@]}"
cat -- "$TESTDIR"/lister?.out 2>/dev/null
note "hA took and let go $(cat "$TESTDIR/churn.out") times; hB $(cat "$TESTDIR/lister.err")"
[[ -s $TESTDIR/churn.err ]] && diag "churn: $(head -n 5 "$TESTDIR/churn.err")"
cmp_ok "$(cat "$TESTDIR/churn.out")" -gt 20 "hA took and let go of its locks many times"
is "$bad" "" "hB's ls -la never listed a name its lstat denied (no '?' line)"

done_testing
