#!/bin/bash
# 27-names.t — lock names are bytes: spaces, tabs, newlines, backslashes,
# UTF-8, control bytes and a 255-byte name all work as locks (held =>
# EEXIST, listed in readdir and .lockfs/status with the documented escapes,
# readable in .lockfs/, release by unlink); 256+ bytes is ENAMETOOLONG for
# every primitive.  Only names ending in the suffix are locks, and the
# suffix option changes it.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT
echo t >"$L/tmp"

# status_has NAME: a status line for NAME exists, with the documented escapes
# (space, tab, newline, backslash) — other control bytes accepted raw or as
# \ooo octal.
status_has() { [[ $(fsop statushas "$L/.lockfs/status" "$1") == OK ]]; }

check_name() {
    local label=$1 n=$2
    local p=$L/$n
    is "$(fsop1 excl "$p" 0644 'x')" OK "$label: create takes the lock"
    is "$(fsop1 excl "$p")" EEXIST "$label: held => O_EXCL EEXIST"
    is "$(fsop link "$L/tmp" "$p")" EEXIST "$label: held => link EEXIST"
    is "$(fsop inlist "$L" "$n")" OK "$label: listed by readdir"
    ok "$label: listed in .lockfs/status (escaped)" status_has "$n"
    like "$(timeout 10 cat -- "$L/.lockfs/$n" 2>&1)" 'state: held' "$label: .lockfs/NAME readable"
    like "$(xattr "$p" user.lockfs.fence)" '^[0-9]+$' "$label: user.lockfs.fence readable"
    is "$(fsop unlink "$p")" OK "$label: unlink releases"
    nok "$label: gone from .lockfs/status" status_has "$n"
    is "$(fsop link "$L/tmp" "$p")" OK "$label: link takes it again"
    is "$(fsop unlink "$p")" OK "$label: unlink again"
}

check_name "space" 'with space.lock'
check_name "tab" $'tab\there.lock'
check_name "newline" $'new\nline.lock'
check_name "backslash" 'back\slash.lock'
check_name "UTF-8" 'ünïcødé-锁.lock'
check_name "control bytes" $'ctl\001\002\033\177.lock'
check_name "leading dash" '-dash.lock'
check_name "255 bytes" "$(printf 'n%.0s' $(seq 250)).lock"
check_name "255 bytes of UTF-8" "$(printf 'é%.0s' $(seq 125)).lock"

# Exact escapes in status.
run 10 bash -c 'set -C; : > "$1"' _ "$L/sp a"$'\t'"b"$'\n'"c\\d.lock"
is "$RC" 0 "lock with space, tab, newline and backslash"
like "$(timeout 10 cat -- "$L/.lockfs/status")" '^sp\\040a\\011b\\012c\\134d\.lock state=held ' "status escapes them as \\040 \\011 \\012 \\134"
fsop unlink "$L/sp a"$'\t'"b"$'\n'"c\\d.lock" >/dev/null

# Too long: 256 and 300 bytes.
for len in 256 300; do
    n="$(printf 'n%.0s' $(seq $((len - 5)))).lock"
    is "$(fsop1 excl "$L/$n")" ENAMETOOLONG "$len-byte lock name: open(O_CREAT|O_EXCL) -> ENAMETOOLONG"
    is "$(fsop link "$L/tmp" "$L/$n")" ENAMETOOLONG "$len-byte lock name: link -> ENAMETOOLONG"
    is "$(fsop mkdir "$L/$n")" ENAMETOOLONG "$len-byte lock name: mkdir -> ENAMETOOLONG"
    is "$(fsop symlink x "$L/$n")" ENAMETOOLONG "$len-byte lock name: symlink -> ENAMETOOLONG"
    is "$(fsop rename2 "$L/tmp" "$L/$n" noreplace)" ENAMETOOLONG "$len-byte lock name: renameat2 -> ENAMETOOLONG"
    is "$(fsop1 lstat "$L/$n")" ENAMETOOLONG "$len-byte lock name: lstat -> ENAMETOOLONG"
done
n="$(printf 'o%.0s' $(seq 256))"
is "$(fsop1 excl "$L/$n")" ENAMETOOLONG "256-byte ordinary name: ENAMETOOLONG"
is "$(timeout 10 cat -- "$L/.lockfs/status")" "" "nothing was left held by the refused names"

# Only the suffix makes a lock.
for n in 'x.lock~' 'x.LOCK' 'x.lock.tmp' 'xlock' '.lk12345host'; do
    fsop excl "$L/$n" >/dev/null
    nok "'$n' is an ordinary file, not a lock" status_has "$n"
done

# suffix=.lck
lockfs_start_or_bail -o suffix=.lck
run 10 bash -c 'set -C; : > "$1"' _ "$MNT/a.lck"
is "$RC" 0 "suffix=.lck: a.lck created"
like "$(status_line a.lck)" '^a\.lck state=held ' "suffix=.lck: a.lck is a lock"
run 10 bash -c 'set -C; : > "$1"' _ "$MNT/a.lock"
is "$(status_line a.lock)" "" "suffix=.lck: a.lock is an ordinary file"

done_testing
