#!/bin/bash
# 70-lockfsctl-check.t — lockfsctl check [--config FILE] [MOUNT]: validates a
# configuration (naming file, line and key), reaches the local backend's
# state_dir and fence files, reports clock skew, and warns about locks held
# past stale_after with a suggestion to run lockfsctl unlock.  Exit codes:
# 0 ok, 1 warnings, 2 errors, 64 usage.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

lockfs_start_or_bail
L=$MNT
C=$TESTDIR/conf
mkdir "$C"

# check_conf NAME LINES...: write $C/NAME.conf.
check_conf() {
    local name=$1; shift
    printf '%s\n' "$@" >"$C/$name.conf"
}

# A good configuration: the mount's own state_dir and backend.
backend_lines=()
if [[ $LOCKFS_BACKEND != local ]]; then
    backend_lines=("backend=$LOCKFS_BACKEND")
    for kv in ${BACKEND_OPTS//,/ }; do
        [[ $kv == tinystore_dir=* ]] && tinystore_line=${kv#tinystore_}
        [[ $kv == etcd_endpoints=* ]] && etcd_line=${kv#etcd_}
    done
fi
check_conf good '[lockfs]' "state_dir=$LOCKFS_STATE" 'ttl=30s' 'stale_after=300s' "${backend_lines[@]}"
[[ -n $BACKEND_CONFIG ]] && cat "$BACKEND_CONFIG" >>"$C/good.conf"
[[ -n ${tinystore_line:-} ]] && printf '[tinystore]\n%s\n' "$tinystore_line" >>"$C/good.conf"
[[ -n ${etcd_line:-} ]] && printf '[etcd]\n%s\n' "$etcd_line" >>"$C/good.conf"
run 60 "$CTL" check --config "$C/good.conf" "$L"
is "$RC" 0 "a good configuration and a mount without old locks: exit 0 ($ERR)"
like "$OUT" "config $C/good.conf: ok" "the configuration is reported ok"
if [[ $LOCKFS_BACKEND == local ]]; then
    like "$OUT" "backend local: state_dir $LOCKFS_STATE is writable; 1 fence state file parses" \
        "the state_dir is writable and the mount's fence state file parses"
    like "$OUT" 'clock skew: none \(local backend\)' "clock skew: none for the local backend"
else
    like "$OUT" "backend $LOCKFS_BACKEND: reached in [0-9]+ ms; 0 locks held" \
        "the $LOCKFS_BACKEND server is reached"
    if [[ $LOCKFS_BACKEND == ldap ]]; then
        like "$OUT" "clock: this host's clock is [0-9.]+ s (behind|ahead of) the ldap server's \(\+/- [0-9.]+ s\); max_clock_offset 5m" \
            "the offset to the ldap server's clock is reported"
    elif [[ $LOCKFS_BACKEND == etcd ]]; then
        like "$OUT" "clock: this host's clock is [0-9.]+ s (behind|ahead of) the etcd server's \(\+/- [0-9.]+ s\); no bound" \
            "the offset to the etcd cluster's clock is reported"
    else
        like "$OUT" 'clock skew: judged per lock' "clock skew is judged per lock"
    fi
fi
like "$OUT" "mount $L: 0 locks held" "the mount is checked"
like "$OUT" 'check: ok' "summary: ok"
is "$ERR" '' "nothing on stderr"

# Bad configurations: exit 2, one line naming file:line and the key.
check_conf order '[lockfs]' 'ttl=30s' 'stale_after=20s'
run 20 "$CTL" check --config "$C/order.conf" "$L"
is "$RC" 2 "stale_after shorter than ttl: exit 2"
like "$ERR" "$C/order\\.conf:3: .*stale_after" "the error names file:line and the key ($ERR)"
is "$(grep -c . <<<"$ERR")" 1 "in one line"

check_conf renew '[lockfs]' 'ttl=30s' 'renew_interval=40s'
run 20 "$CTL" check --config "$C/renew.conf" "$L"
is "$RC" 2 "renew_interval not shorter than ttl: exit 2"
like "$ERR" "$C/renew\\.conf:3: .*renew_interval" "the error names file:line and renew_interval"

check_conf net '[lockfs]' '# network timeouts' 'network_timeout=30s'
run 20 "$CTL" check --config "$C/net.conf" "$L"
is "$RC" 2 "network_timeout not shorter than ttl: exit 2"
like "$ERR" "$C/net\\.conf:3: .*network_timeout" "the error names file:line and network_timeout"

check_conf never '[lockfs]' "state_dir=$LOCKFS_STATE" 'stale_after=0'
run 20 "$CTL" check --config "$C/never.conf" "$L"
is "$RC" 0 "stale_after=0 (never) is valid: exit 0"

check_conf dur '[lockfs]' 'ttl=soon'
run 20 "$CTL" check --config "$C/dur.conf"
is "$RC" 2 "a value that is not a duration: exit 2"
like "$ERR" "$C/dur\\.conf:2: .*ttl" "the error names file:line and ttl"

check_conf unknown '[lockfs]' 'ttl=30s' 'colour=blue'
run 20 "$CTL" check --config "$C/unknown.conf"
is "$RC" 2 "an unknown key: exit 2"
like "$ERR" "$C/unknown\\.conf:3: .*colour" "the error names file:line and the key"

run 20 "$CTL" check --config "$C/missing.conf"
is "$RC" 2 "a missing file: exit 2"
like "$ERR" "missing\\.conf" "the error names the file"

run 20 "$CTL" check --config "$C/good.conf" -o ttl=500ms "$L"
is "$RC" 2 "a bad mount option given with -o: exit 2"
like "$ERR" "ttl=500ms" "the error names the option"

# The backend: an unusable state_dir, and a fence state file that does not parse.
: >"$C/afile"
check_conf notdir '[lockfs]' "state_dir=$C/afile"
run 20 "$CTL" check --config "$C/notdir.conf" "$L"
is "$RC" 2 "a state_dir that is a file: exit 2"
like "$ERR" "state_dir $C/afile is not a directory" "the error names the state_dir"

mkdir "$C/badstate"
printf 'not a fence file\n' >"$C/badstate/local%2Fsomewhere.fence"
check_conf badstate '[lockfs]' "state_dir=$C/badstate"
run 20 "$CTL" check --config "$C/badstate.conf" "$L"
is "$RC" 2 "a fence state file that does not parse: exit 2"
like "$ERR" "local%2Fsomewhere\\.fence is not a lockfs fence state file; restore it from backup" \
    "the error names the file and what to do"

check_conf fresh '[lockfs]' "state_dir=$C/not-yet/state"
run 20 "$CTL" check --config "$C/fresh.conf" "$L"
is "$RC" 0 "a state_dir that lockfs can create: exit 0"
like "$OUT" "does not exist yet; lockfs creates it" "and says lockfs will create it"

if ((EUID != 0)); then
    mkdir -m 0555 "$C/ro"
    check_conf ro '[lockfs]' "state_dir=$C/ro"
    run 20 "$CTL" check --config "$C/ro.conf" "$L"
    is "$RC" 2 "a read-only state_dir: exit 2"
    like "$ERR" "state_dir $C/ro is not writable" "the error says it is not writable"
    chmod 0755 "$C/ro"
else
    skip "root writes to any directory; the unprivileged run checks a read-only state_dir" 2
fi

# A mount that is not one.
mkdir "$TESTDIR/plain"
run 20 "$CTL" check --config "$C/good.conf" "$TESTDIR/plain"
is "$RC" 2 "a MOUNT that is not a lockfs mount: exit 2"
like "$ERR" "not a lockfs mount" "saying so"

# A lock held past stale_after: a warning, exit 1, and the unlock suggestion.
# The configuration checked has a short stale_after; the mount's own is the
# default, so lockfs itself leaves the lock alone.
bash -c 'set -C; echo $$ > "$1"' _ "$L/old.lock"
check_conf short '[lockfs]' "state_dir=$LOCKFS_STATE" 'ttl=1s' 'network_timeout=500ms' \
    'heartbeat_min_interval=500ms' 'stale_after=2s'
sleep 3
run 20 "$CTL" check --config "$C/short.conf" "$L"
is "$RC" 1 "a lock without heartbeat past stale_after: exit 1 (warnings)"
like "$ERR" "warning: $L/old\\.lock: held by $LOCKFS_TEST_HOST:[0-9]+ .*past stale_after 2s.*lockfsctl unlock $L/old\\.lock" \
    "the warning names the lock, its holder, stale_after and suggests lockfsctl unlock"
like "$OUT" 'check: 1 warning' "summary: 1 warning"
run 20 "$CTL" check --config "$C/good.conf" "$L"
is "$RC" 0 "the same lock within the default stale_after: exit 0"
timeout 10 touch "$L/old.lock"
run 20 "$CTL" check --config "$C/short.conf" "$L"
is "$RC" 0 "after a heartbeat the lock is fresh again: exit 0"
rm -f "$L/old.lock"

# Usage.
run 10 "$CTL" check --bogus
is "$RC" 64 "an unknown option: exit 64"
run 10 "$CTL" check --config
is "$RC" 64 "--config without a file: exit 64"
run 10 "$CTL" check --help
is "$RC" 0 "--help: exit 0"
like "$OUT" '0 ok, 1 warnings, 2 errors, 64 usage' "--help documents the exit codes"

done_testing
