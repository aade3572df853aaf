#!/bin/bash
# 74-hold-flock-flags.t — lockfsctl hold speaks flock(1): -n/--nonblock,
# -w/--wait SECS (flock's seconds, fractions, and lockfs durations; -w 0 is
# -n), -E/--conflict-exit-code N, -c 'shell command' (run by /bin/sh -c, in
# flock's "LOCK -c CMD" order too), "LOCK CMD ARGS" without --, and
# --verbose (waiting, holding with the fence, released, on stderr).  Its
# own exit codes do not collide with the command's: 1 (or -E N) held by
# another, 64 usage, 69 the lock could not be tried, 75 lost, 124 held past
# --max-hold; otherwise the command's status (128+N for signal N).
#
# On a shared backend (tinystore, ldap) "host A" holds through its own mount
# and host B's hold runs through another mount of the same backend; on the
# local backend both are processes on one mount.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

lockfs_start_or_bail -o host=hostA
A=$MNT
if [[ $LOCKFS_BACKEND == local ]]; then
    B=$A
    note "local backend: hostA and hostB are two processes on one mount"
else
    lockfs_start_or_bail -o host=hostB
    B=$MNT
fi
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$1"; }
M=$TESTDIR/marker
lines() { grep -c . <<<"$1"; }

# ---------------------------------------------------------------- -c and the command
run 20 "$CTL" hold "$B/c.lock" -c 'exit 7'
is "$RC" 7 "LOCK -c 'exit 7': the shell command's status passes through (7)"
is "$ERR" '' "nothing on stderr without --verbose"
ok "the lock is released after" gone "$B/c.lock"
run 20 "$CTL" hold -c 'exit 4' "$B/c.lock"
is "$RC" 4 "-c CMD before LOCK works too (4)"
run 20 "$CTL" hold --command='exit 1' "$B/c.lock"
is "$RC" 1 "--command=TEXT; the command's own exit 1 is 1"
run 20 env SHELL=/bin/false "$CTL" hold "$B/c.lock" -c 'echo "$0|$LOCKFS_FENCE"; echo two words'
is "$RC" 0 "-c runs its text with /bin/sh, not \$SHELL"
like "$(sed -n 1p <<<"$OUT")" '^/bin/sh\|[0-9]+$' "the shell is /bin/sh and sees the fence in LOCKFS_FENCE ($(sed -n 1p <<<"$OUT"))"
is "$(sed -n 2p <<<"$OUT")" 'two words' "the whole text is one shell command"
run 20 "$CTL" hold "$B/c.lock" -c 'kill -TERM $$'
is "$RC" 143 "a shell command killed by SIGTERM: 128+15"
ok "released after it was killed" gone "$B/c.lock"
run 20 "$CTL" hold "$B/c.lock" printf '%s|' a 'b c'
is "$RC:$OUT" '0:a|b c|' "LOCK CMD ARGS without --: CMD gets its arguments as given"
run 20 "$CTL" hold "$B/c.lock" -- sh -c 'exit 3'
is "$RC" 3 "LOCK -- CMD still works (3)"

# ---------------------------------------------------------------- held by another
take "$A/f.lock"
hpid=$(info_field f.lock pid "$A")
# tinystore writes the holder record 50 ms after the grant (docs/backends.md):
# the lines below name the holder, so wait until host B sees it.
b_sees_a() { [[ $(status_line f.lock "$B") == *" pid=$hpid "* ]]; }
ok "host B sees host A's f.lock" wait_until 10 b_sees_a

run 20 "$CTL" hold -n "$B/f.lock" -c "touch '$M'"
is "$RC" 1 "-n on a lock another holds: exit 1 (flock's conflict code)"
cmp_ok "$ELAPSED_MS" -lt 1000 "-n fails at once ($ELAPSED_MS ms)"
is "$(lines "$ERR")" 1 "one line on stderr"
like "$ERR" "^lockfsctl hold: $B/f\\.lock is held by [^ ]+:$hpid \\(user " "it names the lock and its holder ($ERR)"
ok "the command never ran" test ! -e "$M"
run 20 "$CTL" hold --nonblock "$B/f.lock" touch "$M"
is "$RC" 1 "--nonblock: exit 1"
run 20 "$CTL" hold --nb "$B/f.lock" touch "$M"
is "$RC" 1 "--nb (flock's alias): exit 1"
run 20 "$CTL" hold -w 0 "$B/f.lock" touch "$M"
is "$RC" 1 "-w 0 is -n: exit 1"
cmp_ok "$ELAPSED_MS" -lt 1000 "-w 0 does not wait ($ELAPSED_MS ms)"
run 20 "$CTL" hold -n -w 5 "$B/f.lock" touch "$M"
is "$RC" 1 "-n with -w 5: exit 1"
cmp_ok "$ELAPSED_MS" -lt 1000 "-n wins over -w, as in flock ($ELAPSED_MS ms)"
ok "the command never ran" test ! -e "$M"

run 20 "$CTL" hold -w 1 "$B/f.lock" touch "$M"
is "$RC" 1 "-w 1 on a lock held throughout: exit 1"
cmp_ok "$ELAPSED_MS" -ge 900 "it waited about 1 s ($ELAPSED_MS ms)"
cmp_ok "$ELAPSED_MS" -lt 3000 "and not much longer"
like "$ERR" "is held by .*waited 1s\\)$" "the line says how long it waited"
run 20 "$CTL" hold -w 0.5 "$B/f.lock" touch "$M"
is "$RC" 1 "-w 0.5 (flock's fractional seconds): exit 1"
cmp_ok "$ELAPSED_MS" -ge 400 "it waited about 0.5 s ($ELAPSED_MS ms)"
cmp_ok "$ELAPSED_MS" -lt 2500 "and not much longer"
run 20 "$CTL" hold --timeout=.3 "$B/f.lock" touch "$M"
is "$RC" 1 "--timeout=.3 (flock's alias and spelling): exit 1"
cmp_ok "$ELAPSED_MS" -ge 250 "it waited about 0.3 s ($ELAPSED_MS ms)"
run 20 "$CTL" hold --wait 700ms "$B/f.lock" touch "$M"
is "$RC" 1 "--wait 700ms (a duration, as before): exit 1"
cmp_ok "$ELAPSED_MS" -ge 600 "it waited about 0.7 s ($ELAPSED_MS ms)"
ok "the command never ran" test ! -e "$M"

run 20 "$CTL" hold -n -E 42 "$B/f.lock" touch "$M"
is "$RC" 42 "-n -E 42: exit 42"
run 20 "$CTL" hold -nE42 "$B/f.lock" touch "$M"
is "$RC" 42 "-nE42 (bundled, as getopt takes them): exit 42"
run 20 "$CTL" hold -w 0.3 --conflict-exit-code 9 "$B/f.lock" touch "$M"
is "$RC" 9 "-w 0.3 --conflict-exit-code 9: exit 9 when the wait runs out"
run 20 "$CTL" hold -n --conflict-exit-code=0 "$B/f.lock" touch "$M"
is "$RC" 0 "--conflict-exit-code=0: exit 0"
ok "and still the command never ran" test ! -e "$M"

run 20 "$CTL" hold --verbose -w 0.5 "$B/f.lock" touch "$M"
is "$RC" 1 "--verbose -w 0.5 on a held lock: exit 1"
is "$(lines "$ERR")" 2 "two lines on stderr"
like "$(sed -n 1p <<<"$ERR")" "^lockfsctl hold: waiting for $B/f\\.lock, held by [^ ]+:$hpid \\(user [^)]*\\), up to 500ms$" \
    "--verbose: the first says it waits, for whom and how long"
like "$(sed -n 2p <<<"$ERR")" "^lockfsctl hold: $B/f\\.lock is held by " "the second that it is still held"

# Released by host A once host B's hold says it waits: B then gets it.
WOUT=$TESTDIR/wait.out WERR=$TESTDIR/wait.err
: >"$WOUT"
: >"$WERR"
timeout -k 3 20 "$CTL" hold --verbose -w 10 "$B/f.lock" -c 'echo "$LOCKFS_FENCE"' \
    >"$WOUT" 2>"$WERR" </dev/null &
hp=$!
ok "-w 10 on a held lock: host B's hold says it waits" \
    wait_until 10 grep -q '^lockfsctl hold: waiting for' "$WERR"
is "$(cat "$WOUT")" "" "... and has not run its command while host A holds the lock"
t_rel=$(date +%s%N)
rm -f "$A/f.lock"
wait "$hp"
RC=$?
ELAPSED_MS=$((($(date +%s%N) - t_rel) / 1000000))
OUT=$(cat "$WOUT") ERR=$(cat "$WERR")
is "$RC" 0 "-w 10 on a lock released meanwhile: exit 0"
cmp_ok "$ELAPSED_MS" -lt 6000 "it took the lock soon after the release ($ELAPSED_MS ms)"
fence=$OUT
is "$(lines "$ERR")" 3 "--verbose: three lines on stderr"
like "$(sed -n 1p <<<"$ERR")" "^lockfsctl hold: waiting for $B/f\\.lock, held by " "waiting..."
like "$(sed -n 2p <<<"$ERR")" "^lockfsctl hold: holding $B/f\\.lock \\(fence $fence\\), got in [0-9]+\\.[0-9]{3} s; running echo \"\\\$LOCKFS_FENCE\"$" \
    "...holding, with the fence the command got ($fence) and the time it took..."
is "$(sed -n 3p <<<"$ERR")" "lockfsctl hold: released $B/f.lock" "...released"
ok "released" gone "$B/f.lock"

run 20 "$CTL" hold --verbose "$B/v.lock" true
is "$RC" 0 "--verbose on a free lock: exit 0"
is "$(lines "$ERR")" 2 "two lines: holding, released"
like "$ERR" "^lockfsctl hold: holding $B/v\\.lock \\(fence [0-9]+\\), got in 0\\.[0-9]{3} s; running true"$'\n'"lockfsctl hold: released $B/v\\.lock$" \
    "holding (fence), released ($ERR)"

P=$TESTDIR/plain
mkdir "$P"
run 20 "$CTL" hold --verbose "$P/p.lock" -c 'exit 5'
is "$RC" 5 "plain directory, -c 'exit 5': exit 5"
like "$(sed -n 1p <<<"$ERR")" "^lockfsctl hold: holding $P/p\\.lock \\(a plain dot-lock, no fence\\)" "--verbose in a plain directory: no fence"
echo 4000000 >"$P/q.lock"
run 20 "$CTL" hold -n -E 33 "$P/q.lock" touch "$M"
is "$RC" 33 "plain directory, held, -n -E 33: exit 33"
ok "the command never ran" test ! -e "$M"

# ---------------------------------------------------------------- lost, max-hold
start_hold() {
    rm -f "$TESTDIR/cmd.pid"
    HERR=$TESTDIR/hold.err
    timeout -k 3 40 "$CTL" hold "$@" -c 'echo $$ > "$PIDF"; exec sleep 60' 2>"$HERR" &
    HP=$!
    wait_until 10 test -s "$TESTDIR/cmd.pid" || diag "the held command did not start"
}
end_hold() {
    wait_until "$1" bash -c '! kill -0 "$1" 2>/dev/null' _ "$HP"
    wait "$HP"
    HRC=$?
}
export PIDF=$TESTDIR/cmd.pid
start_hold "$B/l.lock"
run 10 "$CTL" unlock --yes "$B/l.lock"
is "$RC" 0 "the held lock is broken with lockfsctl unlock --yes"
end_hold 10
is "$HRC" 75 "a lock lost while the command ran: exit 75, not 1 nor the command's status"
like "$(cat "$HERR")" "the lock $B/l\\.lock was lost .*so the command was stopped" "the line says it was lost"

start_hold --max-hold 1s "$B/m.lock"
end_hold 10
is "$HRC" 124 "held past --max-hold: exit 124 (timeout(1)'s code)"
like "$(cat "$HERR")" "held past --max-hold 1s, so the command was stopped$" "the line says so"
ok "the lock was released" gone "$B/m.lock"

# ---------------------------------------------------------------- could not be tried
run 20 "$CTL" hold "$TESTDIR/no-such-dir/x.lock" touch "$M"
is "$RC" 69 "a lock in a directory that does not exist: exit 69"
like "$ERR" 'cannot reach the directory' "saying so"
run 20 "$CTL" hold -n "$B/notalock" touch "$M"
is "$RC" 69 "a name in the mount that is not a lock name: exit 69"
ok "the command never ran" test ! -e "$M"

# ---------------------------------------------------------------- usage
for bad in "-E 256" "-E x" "-w soon" "--wait=-1"; do
    # shellcheck disable=SC2086 # the option and its value, split on purpose
    run 10 "$CTL" hold $bad "$B/u.lock" true
    is "$RC" 64 "hold $bad: exit 64"
done
run 10 "$CTL" hold "$B/u.lock" -c 'true' extra
is "$RC" 64 "-c with words after it: exit 64"
like "$ERR" "-c takes the whole command as one word" "saying -c takes one word"
run 10 "$CTL" hold "$B/u.lock" -c
is "$RC" 64 "-c without its value: exit 64"
run 10 "$CTL" hold -c x -c y "$B/u.lock"
is "$RC" 64 "-c twice: exit 64"
run 10 "$CTL" hold -n "$B/u.lock"
is "$RC" 64 "no command: exit 64"
ok "nothing was taken by the usage errors" gone "$B/u.lock"
run 10 "$CTL" hold --help
is "$RC" 0 "--help: exit 0"
for w in '-n, --nonblock' '-w, --wait SECS' '-E, --conflict-exit-code N' '-c, --command' '--verbose' \
    '--ttl D' '--max-hold D' ' 64 usage' ' 69 ' ' 75 ' '124 ' '1 (or -E N)'; do
    like "$OUT" "$(sed 's/[][().*+?^$|\\]/\\&/g' <<<"$w")" "--help shows '$w'"
done

# lockfsctl(1) documents every option and exit code --help lists.  (Pass 2
# runs from a copy of the tests without docs/.)
MAN=$REPO_TOP/docs/man/lockfsctl.1
if [[ -r $MAN ]]; then
    help=$OUT
    for o in $(grep -oE -- '--[a-z][a-z-]+' <<<"$help" | sort -u); do
        ok "lockfsctl.1 documents $o" grep -qF -- "${o//-/\\-}" "$MAN"
    done
    for c in $(grep -oE '\b(1|64|69|75|124|126|127)\b' <<<"$(sed -n '/^Exit status/,$p' <<<"$help")" | sort -u); do
        ok "lockfsctl.1's hold section lists exit code $c" \
            bash -c 'sed -n "/^\.SS hold/,/^\.SH/p" "$1" | grep -qE "^\.(B|BR) (.* )?$2( |$)"' _ "$MAN" "$c"
    done
else
    skip "docs/man/lockfsctl.1 is not beside this test ($MAN): the tests were copied without docs/"
fi

done_testing
