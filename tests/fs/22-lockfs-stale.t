#!/bin/bash
# 22-lockfs-stale.t — lockfs's own stale rule: a lock whose last heartbeat
# (utimensat NULL, explicit times not in the past, or write — not touch -d
# with a time gone by, which only sets the displayed mtime) is older than
# stale_after is broken when its name is next looked
# up, and the break is logged.  Heartbeated locks survive.  stale_after=0
# never breaks.  Mounted with ttl=1s,stale_after=2s.
set -u
. "$(dirname "$0")/../lib/mount.sh"

# heartbeat_min_interval well below stale_after, so that rate-limiting of
# heartbeats cannot be what decides staleness here.
# network_timeout: lockfs validates network_timeout < ttl for every backend.
lockfs_start_or_bail -o ttl=1s,stale_after=2s,heartbeat_min_interval=200ms,network_timeout=500ms
L=$MNT

exists() { [[ $(fsop1 lstat "$1") == OK ]]; }
# take NAME: link a fresh temporary file onto NAME (one inode per lock).
take() { echo x >"$L/.t.$1.tmp" && timeout 10 ln -- "$L/.t.$1.tmp" "$L/$1" && rm -f -- "$L/.t.$1.tmp"; }

# 1. No heartbeat: present before 2 s, gone on lookup after.
ok "take a.lock" take a.lock
ta=$(now)
fa=$(xattr "$L/a.lock" user.lockfs.fence)
ok "a.lock present right after acquisition" exists "$L/a.lock"
wait_clock_past $((ta + 3))   # > stale_after (2 s) plus a second of rounding
nlog=$(wc -l <"$LOCKFS_LOG")
is "$(fsop1 lstat "$L/a.lock")" ENOENT "a.lock (no heartbeat) is gone on lookup after stale_after"
is "$(status_line a.lock)" "" "a.lock is not in status any more"
ok "the stale break is logged (naming a.lock)" \
    bash -c 'tail -n +$(($2 + 1)) "$1" | grep -qF "a.lock"' _ "$LOCKFS_LOG" "$nlog"
run 10 bash -c 'set -C; echo $$ > "$1"' _ "$L/a.lock"
is "$RC" 0 "a.lock can be taken again"
fence_gt "$(xattr "$L/a.lock" user.lockfs.fence)" "$fa" "the new a.lock is a new acquisition"
rm -f "$L/a.lock"

# 2. A contender's acquisition breaks the stale lock and wins.
ok "take b.lock" take b.lock
tb=$(now)
fb=$(xattr "$L/b.lock" user.lockfs.fence)
wait_clock_past $((tb + 3))
echo y >"$L/t2"
is "$(fsop link "$L/t2" "$L/b.lock")" OK "link() onto the stale b.lock breaks it and succeeds"
is "$(timeout 10 cat -- "$L/b.lock")" y "b.lock now has the contender's content"
fence_gt "$(xattr "$L/b.lock" user.lockfs.fence)" "$fb" "the contender's b.lock has a larger fence"
rm -f "$L/b.lock" "$L/t2"

# 2b. Many contenders at once on a stale lock: exactly one wins.
for round in 1 2; do
    ok "take r.lock (round $round)" take r.lock
    tr=$(now)
    wait_clock_past $((tr + 3))
    is "$(fsop race 24 "$L/r.lock")" "EEXIST=23 OK=1" "race $round on a stale lock: one winner, 23 x EEXIST"
    timeout 10 rm -rf -- "$L/r.lock"
done

# 3. Heartbeats keep locks alive for 3 x stale_after: touch (open+futimens),
#    utimensat(path, NULL) and write.
ok "take h1.lock" take h1.lock
ok "take h2.lock" take h2.lock
ok "take h3.lock" take h3.lock
f1=$(xattr "$L/h1.lock" user.lockfs.fence)
f2=$(xattr "$L/h2.lock" user.lockfs.fence)
f3=$(xattr "$L/h3.lock" user.lockfs.fence)
# touch -d with a time gone by is NOT a heartbeat: d.lock only gets its
# displayed mtime set.  (Explicit times of now are: lock libraries refresh
# with utimes(now, now); 81-cross-host.t.)
ok "take d.lock" take d.lock
th=$(now)
missing=0 dmissing_at='' prev_ms='' maxgap=0
while (($(now) < th + 6)); do
    # The longest time between two rounds of heartbeats: on a machine so
    # loaded that it exceeds stale_after, the locks went stale rightly.
    t_ms=$(date +%s%3N)
    [[ -z $prev_ms ]] || (( t_ms - prev_ms <= maxgap )) || maxgap=$((t_ms - prev_ms))
    prev_ms=$t_ms
    timeout 5 touch -- "$L/h1.lock"
    fsop utime "$L/h2.lock" >/dev/null
    fsop write "$L/h3.lock" 'x' append >/dev/null
    timeout 5 touch -c -d "@$(($(now) - 60))" -- "$L/d.lock" 2>/dev/null
    for n in h1 h2 h3; do exists "$L/$n.lock" || missing=$((missing + 1)); done
    sleep 0.5
done
note "heartbeat rounds at most $maxgap ms apart"
if ((missing && maxgap >= 1900)); then
    skip "heartbeats were up to $maxgap ms apart (the machine stalled), not within stale_after (2 s): staleness was right" 4
else
    is "$missing" 0 "locks heartbeated every 0.5 s never went stale during 6 s (3 x stale_after)"
    is "$(xattr "$L/h1.lock" user.lockfs.fence)" "$f1" "h1.lock (touch) is still the same acquisition"
    is "$(xattr "$L/h2.lock" user.lockfs.fence)" "$f2" "h2.lock (utimensat NULL) is still the same acquisition"
    is "$(xattr "$L/h3.lock" user.lockfs.fence)" "$f3" "h3.lock (write) is still the same acquisition"
fi
is "$(fsop1 lstat "$L/d.lock")" ENOENT "d.lock, 'touched' only with touch -d of a minute ago, went stale"

# 4. stale_after=0 never breaks.
lockfs_start_or_bail -o ttl=1s,stale_after=0,network_timeout=500ms
L=$MNT
ok "take n.lock" take n.lock
tn=$(now)
wait_clock_past $((tn + 4))
is "$(fsop1 lstat "$L/n.lock")" OK "stale_after=0: a lock without heartbeats survives"

done_testing
