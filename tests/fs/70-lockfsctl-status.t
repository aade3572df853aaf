#!/bin/bash
# 70-lockfsctl-status.t — lockfsctl status [--json] [MOUNT]: every lock of a
# mount, one a line, with holder (host:pid, user, command), age, heartbeat,
# fence and state; the same as JSON; every lockfs mount without MOUNT; exit 2
# for something that is not a lockfs mount, 64 for bad usage.
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

lockfs_start_or_bail
L=$MNT
me_user=$(id -un)

run 10 "$CTL" status "$L"
is "$RC" 0 "status of a mount without locks exits 0"
like "$OUT" "no locks held in $L" "and says there are none"

run 10 "$CTL" status --json "$L"
is "$RC" 0 "status --json without locks exits 0"
is "$($PYTHON -c 'import json,sys; d=json.loads(sys.argv[1]); print(len(d["locks"]), d["mounts"])' "$OUT" 2>&1)" \
    "0 ['$L']" "--json: no locks, the mount listed"

# Three locks taken three ways, one in a subdirectory, one with a space.
bash -c 'set -C; echo $$ > "$1"' _ "$L/a.lock"
mkdir "$L/sub" && timeout 10 ln -s whatever "$L/sub/b c.lock"
timeout 10 mkdir "$L/d.lock"
fa=$(xattr "$L/a.lock" user.lockfs.fence)
pa=$(info_field a.lock pid)

run 10 "$CTL" status "$L"
is "$RC" 0 "status exits 0"
is "$(grep -c . <<<"$OUT")" 4 "a header and one line per lock"
like "$(head -n1 <<<"$OUT")" '^LOCK +STATE +FENCE +HOLDER +USER +AGE +HEARTBEAT +COMMAND$' "header names the columns"
line=$(grep -F "$L/a.lock " <<<"$OUT")
like "$line" "^$L/a\\.lock +held +$fa +$LOCKFS_TEST_HOST:$pa +$me_user +[0-9]+s +[0-9]+s ago +bash" \
    "a.lock: path, state, fence, host:pid, user, age, heartbeat, command ($line)"
like "$OUT" "$L/sub/b\\\\040c\\.lock +held" "a key with a space is escaped as \\040 and keeps its subdirectory"
like "$OUT" "$L/d\\.lock +held .* mkdir" "a mkdir lock is listed with its command"

run 10 "$CTL" status --json "$L"
is "$RC" 0 "status --json exits 0"
check=$($PYTHON - "$OUT" "$L" "$fa" "$pa" "$LOCKFS_TEST_HOST" "$me_user" "$(id -u)" "$LOCKFS_BACKEND" <<'EOF' 2>&1
import json, sys
out, mnt, fence, pid, host, user, uid, backend = sys.argv[1:]
d = json.loads(out)
locks = {l["key"]: l for l in d["locks"]}
assert sorted(locks) == ["a.lock", "d.lock", "sub/b c.lock"], sorted(locks)
a = locks["a.lock"]
want = dict(mount=mnt, lock=mnt + "/a.lock", state="held", fence=fence, pid=int(pid),
            host=host, user=user, uid=int(uid), backend=backend)
for k, v in want.items():
    assert a[k] == v, (k, a[k], v)
for k in ("age_s", "heartbeat_age_s", "gid"):
    assert isinstance(a[k], int) and a[k] >= 0, (k, a[k])
for k in ("acquired", "heartbeat"):
    assert a[k].endswith("Z") and "T" in a[k], (k, a[k])
assert "bash" in a["command"], a["command"]
assert "lease_left_ms" in a
assert locks["sub/b c.lock"]["lock"] == mnt + "/sub/b c.lock"
print("ok")
EOF
)
is "$check" ok "--json: every field of every lock, keys unescaped"

# Without MOUNT: every lockfs mount (others may exist; ours must be there).
run 10 "$CTL" status
# Exit 2 would only say another mount on this machine could not be read.
if [[ $RC == 0 || ($RC == 2 && $ERR != *"$L"*) ]]; then
    pass "status without MOUNT succeeds for this mount (exit $RC)"
else
    fail "status without MOUNT succeeds for this mount (exit $RC: $ERR)"
fi
like "$OUT" "$L/a\\.lock +held" "status without MOUNT lists this mount's locks"
run 10 "$CTL" status --json
((RC == 0)) || diag "status --json without MOUNT: exit $RC: $ERR"
is "$($PYTHON -c 'import json,sys; d=json.loads(sys.argv[1]); print(sys.argv[2] in d["mounts"], any(l["lock"] == sys.argv[2] + "/a.lock" for l in d["locks"]))' "$OUT" "$L" 2>&1)" \
    "True True" "status --json without MOUNT includes this mount and its locks"

# A stale lock shows as stale: a second mount with a short stale_after.
lockfs_start_or_bail -o ttl=1s,network_timeout=500ms,heartbeat_min_interval=500ms,stale_after=2s
S=$MNT
bash -c 'set -C; echo $$ > "$1"' _ "$S/s.lock"
sleep 3
run 10 "$CTL" status "$S"
like "$OUT" "$S/s\\.lock +stale " "a lock without heartbeat past stale_after shows as stale"
# (with a shared backend both mounts see each other's locks: let it go)
rm -f "$S/s.lock"

# Errors and usage.
mkdir -p "$TESTDIR/plain"
run 10 "$CTL" status "$TESTDIR/plain"
is "$RC" 2 "status of a plain directory exits 2"
is "$(grep -c . <<<"$ERR")" 1 "with one line"
like "$ERR" "not a lockfs mount" "saying it is not a lockfs mount"
run 10 "$CTL" status --bogus
is "$RC" 64 "an unknown option exits 64"
run 10 "$CTL" bogus
is "$RC" 64 "an unknown command exits 64"
run 10 "$CTL"
is "$RC" 64 "no command exits 64"
run 10 "$CTL" status --help
is "$RC" 0 "status --help exits 0"
like "$OUT" 'usage: lockfsctl status' "and prints the usage"

# Released locks disappear from the listing.
rm -f "$L/a.lock" "$L/sub/b c.lock"
rmdir "$L/d.lock"
run 10 "$CTL" status "$L"
like "$OUT" "no locks held" "after release, no locks are listed ($OUT)"

done_testing
