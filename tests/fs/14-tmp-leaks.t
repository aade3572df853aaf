#!/bin/bash
# 14-tmp-leaks.t — legacy-clients.md §8.15: after lock, refused lock and
# unlock with every tool, the directory holds nothing but the mailbox base
# file: no .lk*, _*.HOST, NAME.HOST.PID, NAME.PID.TIME.HOST, mu*, E??????.
# Tmp files are ordinary files; if lockfs mishandled their create, link or
# unlink (e.g. treated them as lock events), they would stay behind.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT/leaks
mkdir -m 1777 "$L" || BAIL_OUT "mkdir $L failed"
: >"$L/mbox"

# cycle NAME LOCK-CMD... -- HELD-RC -- UNLOCK-CMD...
cycle() {
    local name=$1; shift
    local -a lockc=() unlockc=()
    while [[ $1 != -- ]]; do lockc+=("$1"); shift; done; shift
    local held=$1; shift 2
    unlockc=("$@")
    run 20 "${lockc[@]}"
    is "$RC" 0 "$name: lock ($ERR)"
    run 20 "${lockc[@]}"
    is "$RC" "$held" "$name: refused while held"
    run 20 "${unlockc[@]}"
    is "$RC" 0 "$name: unlock ($ERR)"
    is "$(tmp_leaks "$L")" "" "$name: no temporary files left"
}

cycle dotlockfile dotlockfile -l -r 0 "$L/mbox.lock" -- 4 -- dotlockfile -u "$L/mbox.lock"
cycle lockfile-progs lockfile-create --retry 0 "$L/mbox" -- 4 -- lockfile-remove "$L/mbox"
cycle procmail lockfile -r 0 "$L/mbox.lock" -- 73 -- rm -f "$L/mbox.lock"
cycle mutt_dotlock mutt_dotlock -r 0 "$L/mbox" -- 3 -- mutt_dotlock -u "$L/mbox"
cycle mailutils dotlock.mailutils --no-config -r 1 "$L/mbox" -- 3 -- dotlock.mailutils --no-config -u "$L/mbox"
# dotlock -p writes its own (soon dead) pid, so a second -p would steal the
# lock by design (§2.6 caveat): lock and unlock only.
run 20 dotlock.mailutils --no-config -p "$L/mbox"
is "$RC" 0 "mailutils -p: lock"
run 20 dotlock.mailutils --no-config -u "$L/mbox"
is "$RC" 0 "mailutils -p: unlock"
is "$(tmp_leaks "$L")" "" "mailutils -p: no temporary files left"

# A stale break by each liblockfile tool, then release.
printf '0\n' >"$L/mbox.lock"
timeout 10 touch -d '10 min ago' -- "$L/mbox.lock"
run 10 dotlockfile -l -r 0 "$L/mbox.lock"
is "$RC" 0 "dotlockfile breaks a stale lock"
run 10 dotlockfile -u "$L/mbox.lock"
is "$(tmp_leaks "$L")" "" "stale break: no temporary files left"

is "$(timeout 10 ls -A -- "$L")" mbox "only the mailbox base file remains"
is "$(timeout 10 cat -- "$MNT/.lockfs/status")" "" "no lock held"

done_testing
