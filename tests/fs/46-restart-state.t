#!/bin/bash
# 46-restart-state.t — what a restart of lockfs reads, and the gap (issue 25).
#
# The record of a mount's locks (STATE_DIR/mount*.locks) is read by the next
# lockfs of the mount: a corrupt one, one of another host or backend with
# locks in it, or one a running lockfs holds is refused with one line naming
# the file and what to do, and left as it was; a torn last line (a full
# disk) is skipped.  The gap: a lock name created on the disk under the
# mount point while no lockfs was mounted is taken for its owner when free,
# or reported as a conflict (log, notify) when held -- never ignored.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"

A=$TESTDIR/A
STATE=$TESTDIR/state
mkdir -p "$A" "$STATE"
EVENTS=$TESTDIR/events
NOTIFY=$(notify_recorder "$EVENTS")
start_a() { lockfs_start --mnt "$A" --state "$STATE" -o host=hostA -o "notify=$NOTIFY" "$@"; }
record() { ls "$STATE"/mount*.locks; }

# ---- the gap ----
start_a || BAIL_OUT "cannot mount"
ok "hostA takes held.lock" takes "$A/held.lock" holder
held_fence=$(info_field held.lock fence "$A")
lockfs_stop
# While nothing is mounted, tools on this host write under the mount point.
printf '4242\n' >"$A/gap.lock"
chown "${LOCKFS_TEST_USER}:" "$A/gap.lock" 2>/dev/null || true
gap_uid=$(stat -c %u "$A/gap.lock")
printf 'late\n' >"$A/held.lock"
start_a || BAIL_OUT "cannot mount again"
is "$(status_field "$(status_line gap.lock "$A")" state)" held "gap.lock, made under the mount point meanwhile, is held"
is "$(status_field "$(status_line gap.lock "$A")" uid)" "$gap_uid" "for the owner of the file"
is "$(cat "$A/gap.lock")" 4242 "with the file's content"
ok "its taking is logged" log_has "gap.lock was created on the disk under .* taken for its owner"
is "$(status_field "$(status_line held.lock "$A")" state)" held "held.lock is still held"
is "$(info_field held.lock fence "$A")" "$held_fence" "held.lock keeps its fence ($held_fence)"
is "$(cat "$A/held.lock")" holder "held.lock keeps its holder's content, not the file's"
ok "held.lock's file is reported as a conflict" log_has "held.lock was created on the disk .* this mount's holder held it"
ok "and notified" grep -q '^conflict held.lock' "$EVENTS"
ok "gap.lock is released by its owner's rm" rm "$A/gap.lock"
lockfs_stop
is "$(ls -A "$A" | tr '\n' ' ')" "held.lock " "underneath: gap.lock was removed once taken, held.lock's file left"
rm -f "$A/held.lock"

if [[ $LOCKFS_BACKEND != local ]]; then
    # Held by another host: a conflict, and the other host keeps it.
    lockfs_start_or_bail -o host=hostB
    B=$MNT
    ok "hostB takes other.lock" takes "$B/other.lock"
    printf 'mine\n' >"$A/other.lock"
    start_a || BAIL_OUT "cannot mount again"
    ok "other.lock on the disk is a conflict (hostB holds it)" \
        log_has "other.lock was created on the disk .* another holder has the name"
    is "$(fsop1 excl "$B/other.lock")" EEXIST "hostB still holds other.lock"
    lockfs_stop
    rm -f "$A/other.lock"
fi

# ---- bad records ----
start_a || BAIL_OUT "cannot mount"
ok "hostA takes kept.lock" takes "$A/kept.lock"
lockfs_stop
f=$(record)
ok "the record names kept.lock" grep -q '^G [0-9]* kept.lock ' "$f"
cp "$f" "$TESTDIR/good"

# A second lockfs of the mount point while one runs: refused.
start_a || BAIL_OUT "cannot mount"
A_OPTS=$LOCKFS_OPTS # what start_a gave lockfs (the backend's options too)
# lockfs_a [OPTS]: A_CMD, hostA's lockfs command line with OPTS added.
lockfs_a() { A_CMD=("$LOCKFS_BIN" "$A" -f -o "$A_OPTS${1:+,$1}" ${BACKEND_CONFIG:+--config "$BACKEND_CONFIG"}); }
lockfs_a network_timeout=1s
run 30 "${A_CMD[@]}"
is "$RC" 3 "a second lockfs on the same record: exit 3"
like "$ERR" "$f is in use by another lockfs of this mount point" "the error names the file"
is "$(printf '%s\n' "$ERR" | grep -c .)" 1 "one line"
is "$(status_field "$(status_line kept.lock "$A")" state)" held "the first one still holds kept.lock"
lockfs_stop

refused() { # DESC PATTERN: lockfs refuses the record as it is now, and leaves it
    local before
    before=$(md5sum <"$f")
    lockfs_a
    run 30 "${A_CMD[@]}"
    is "$RC" 3 "$1: exit 3"
    like "$ERR" "$2" "$1: the error says what is wrong"
    like "$ERR" "$f" "$1: and names the file"
    is "$(printf '%s\n' "$ERR" | grep -v '^lockfs: info: ' | grep -c .)" 1 "$1: one line (besides info lines)" || diag "$ERR"
    is "$(md5sum <"$f")" "$before" "$1: the file is left as it was"
    nok "$1: nothing mounted" is_fuse_mounted "$A"
}
printf 'not a lock record\n' >"$f"
refused "not a record" "is not a lockfs lock record file"
cp "$TESTDIR/good" "$f"
printf 'G 9 bad.lock 12 local\n' >>"$f"
refused "a short record line" "a lock record that does not parse|not a lockfs lock record line"
cp "$TESTDIR/good" "$f"
sed -i 's/^host .*/host hostZ/' "$f"
refused "another host's record" "records [0-9]+ locks? of host 'hostZ', not 'hostA'"
cp "$TESTDIR/good" "$f"
sed -i 's/^backend .*/backend nosuch/' "$f"
refused "another backend's record" "records [0-9]+ locks? of backend 'nosuch'"
cp "$TESTDIR/good" "$f"
sed -i 's/^server .*/server elsewhere/' "$f"
refused "another server's record" "records [0-9]+ locks? of server 'elsewhere'"

# A torn last line (the disk filled up mid-write): what it began is skipped.
cp "$TESTDIR/good" "$f"
printf 'G 77 torn.lock 5' >>"$f"
start_a || BAIL_OUT "a torn last line must not keep lockfs from starting"
is "$(status_field "$(status_line kept.lock "$A")" state)" held "torn last line: kept.lock taken back"
is "$(status_line torn.lock "$A")" "" "torn last line: nothing of it is held"
rm -f "$A/kept.lock"
lockfs_stop

# state_dir cannot be written: refused with a one-line message, nothing mounted.
if ((EUID != 0)); then
    ro=$TESTDIR/ro-state
    mkdir -p "$ro"
    chmod 0555 "$ro"
    lockfs_a "state_dir=$ro"
    run 30 "${A_CMD[@]}"
    is "$RC" 3 "read-only state_dir: exit 3"
    like "$ERR" "$ro/mount" "read-only state_dir: the error names the file"
    is "$(printf '%s\n' "$ERR" | grep -c .)" 1 "read-only state_dir: one line"
    nok "read-only state_dir: nothing mounted" is_fuse_mounted "$A"
fi

done_testing
