#!/bin/bash
# 71-notify.t — every break and every lock lockfs expires runs the notify
# command exactly once, with the lock, holder, breaker and fence in its
# environment; a slow or failing notifier never delays or breaks locking.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

events=$TESTDIR/events
notifier=$TESTDIR/notify.sh
# One line per run: event, lock, fence, holder, breaker.  A lock named
# slow.lock makes the notifier take 5 s; fail.lock makes it fail.
cat >"$notifier" <<'EOF2'
#!/bin/sh
printf '%s|%s|%s|%s|%s\n' "$LOCKFS_EVENT" "$LOCKFS_LOCK" "$LOCKFS_FENCE" \
    "$LOCKFS_HOLDER" "$LOCKFS_BREAKER" >>"$EVENTS"
case $LOCKFS_LOCK in
slow.lock) sleep 5 ;;
fail.lock) exit 3 ;;
esac
EOF2
chmod 755 "$notifier"
: >"$events"
chmod 666 "$events"
export EVENTS=$events
lockfs_start_or_bail -o "notify=$notifier" -o ttl=1s -o network_timeout=500ms \
    -o heartbeat_min_interval=100ms -o stale_after=2s
L=$MNT

take() { timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/$1"; }
count() { grep -c "^$1|$2|" "$events"; }
# The notifier runs one event at a time in order: once a later event's line
# is there, every earlier event has run.
sentinel_n=0
settle() {
    sentinel_n=$((sentinel_n + 1))
    local s=sentinel$sentinel_n.lock
    take "$s" && printf '%s\n' "$s" >"$L/.lockfs/break"
    wait_until 20 grep -q "^break|$s|" "$events"
}

# A break by request (lockfsctl unlock --yes): one notification.
take a.lock
fa=$(info_field a.lock fence)
run 20 "$CTL" unlock --yes "$L/a.lock"
is "$RC" 0 "lockfsctl unlock --yes breaks a.lock"
ok "the notifier ran for the break" wait_until 20 grep -q "^break|a.lock|" "$events"
settle
is "$(count break a.lock)" 1 "exactly one notification for one break"
line=$(grep "^break|a.lock|" "$events")
like "$line" "^break\\|a\\.lock\\|$fa\\|" "it names the lock and its fence ($line)"
like "$line" "uid=$EUID" "it names the holder's uid"
like "${line##*|}" "uid=$EUID" "it names the breaker"

# A break by unlink from another uid (root pass only).
if have_user2; then
    as_user2 bash -c 'set -C; echo $$ > "$1"' _ "$L/b.lock"
    run 10 rm -f "$L/b.lock"
    is "$RC" 0 "root breaks another user's lock by unlink"
    settle
    is "$(count break b.lock)" 1 "exactly one notification for a break by unlink"
    like "$(grep "^break|b.lock|" "$events")" "uid=$USER2_UID .*\\|.*uid=0" "holder and breaker named"
else
    skip "$(user2_skip_reason)" 2
    skip "$(user2_skip_reason)" 1
fi

# A release by the holder is not a break: no notification.
take c.lock
rm -f "$L/c.lock"
settle
is "$(count break c.lock)" 0 "a release by its holder notifies nothing"

# lockfs expires a lock with no heartbeat past stale_after: one notification.
take d.lock
wait_clock_past $(($(date +%s) + 3))
run 10 stat "$L/d.lock"
isnt "$RC" 0 "d.lock is expired on lookup after stale_after"
settle
is "$(count break d.lock)" 1 "exactly one notification for an expiry"

# A slow notifier does not delay locking.
take slow.lock
printf 'slow.lock\n' >"$L/.lockfs/break"
t0=$(date +%s%N)
take slow.lock
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
ok "slow.lock is taken again while its notifier runs" test -e "$L/slow.lock"
cmp_ok "$ms" -lt 1000 "taking it took ${ms} ms, not the notifier's 5 s"

# A failing notifier breaks nothing; its failure is logged.
take fail.lock
printf 'fail.lock\n' >"$L/.lockfs/break"
ok "the failing notifier ran" wait_until 20 grep -q "^break|fail.lock|" "$events"
ok "its failure is logged" wait_until 20 log_has 'notify command failed'
take fail.lock
is "$?" 0 "fail.lock can be taken again"

done_testing
