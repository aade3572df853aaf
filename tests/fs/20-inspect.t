#!/bin/bash
# 20-inspect.t — lockfs's inspection view: .lockfs/status (one line per
# lock: KEY state= fence= host= pid= uid= user= age= heartbeat_age= command=), the
# per-lock file .lockfs/REL ("key: value" lines) and the user.lockfs.*
# extended attributes on the lock file.  All three must agree with each
# other and with the process that took the lock.
set -u
. "$(dirname "$0")/../lib/mount.sh"

# heartbeat_min_interval=1s: the heartbeat below is 3 s after acquisition;
# with the 5 s default it could legitimately be rate-limited.
lockfs_start_or_bail -o heartbeat_min_interval=1s
L=$MNT
me_uid=$(id -u); me_gid=$(id -g); me_user=$(id -un)
iso_re='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|\+00:00|\+0000)$'

t0=$(now)
run 10 bash -c 'set -C; echo $$ > "$1" && echo $$' _ "$L/a.lock"
t1=$(now)
is "$RC" 0 "bash (pid $OUT) takes a.lock with noclobber"
P=$OUT

# status
line=$(status_line a.lock)
like "$line" '^a\.lock state=held fence=[0-9]+ host=[^ ]+ pid=[0-9]+ uid=[0-9]+ user=[^ ]+ age=[0-9]+ heartbeat_age=[0-9]+ command=[^ ]*$' \
    "status line has the documented fields in order ($line)"
F=$(status_field "$line" fence)
is "$(status_field "$line" state)" held "status: state=held"
like "${F:-0}" '^[1-9][0-9]*$' "status: fence is a positive number ($F)"
is "$(status_field "$line" host)" "$LOCKFS_TEST_HOST" "status: host is the configured host"
is "$(status_field "$line" pid)" "$P" "status: pid is the creating process"
is "$(status_field "$line" uid)" "$me_uid" "status: uid"
is "$(status_field "$line" user)" "$me_user" "status: user"
cmp_ok "$(status_field "$line" age)" -le 3 "status: age is small"
cmp_ok "$(status_field "$line" heartbeat_age)" -le 3 "status: heartbeat_age is small"
is "$(timeout 10 cat -- "$L/.lockfs/status" | grep -c .)" 1 "status has exactly one line for one lock"

# per-lock file
ok ".lockfs/a.lock is readable" timeout 10 cat -- "$L/.lockfs/a.lock"
is "$(info_field a.lock lock)" a.lock ".lockfs/a.lock: lock"
is "$(info_field a.lock state)" held ".lockfs/a.lock: state"
is "$(info_field a.lock fence)" "$F" ".lockfs/a.lock: fence matches status"
is "$(info_field a.lock host)" "$LOCKFS_TEST_HOST" ".lockfs/a.lock: host"
is "$(info_field a.lock pid)" "$P" ".lockfs/a.lock: pid"
is "$(info_field a.lock uid)" "$me_uid" ".lockfs/a.lock: uid"
is "$(info_field a.lock gid)" "$me_gid" ".lockfs/a.lock: gid"
is "$(info_field a.lock user)" "$me_user" ".lockfs/a.lock: user"
like "$(info_field a.lock command)" 'bash' ".lockfs/a.lock: command names bash"
acq=$(info_field a.lock acquired)
like "$acq" "$iso_re" ".lockfs/a.lock: acquired is ISO 8601 UTC ($acq)"
acq_s=$(date -u -d "$acq" +%s 2>/dev/null || echo 0)
cmp_ok "$acq_s" -ge $((t0 - 1)) ".lockfs/a.lock: acquired not before the create"
cmp_ok "$acq_s" -le $((t1 + 1)) ".lockfs/a.lock: acquired not after the create"
like "$(info_field a.lock heartbeat)" "$iso_re" ".lockfs/a.lock: heartbeat is ISO 8601 UTC"
like "$(info_field a.lock age)" '^[0-9]+$' ".lockfs/a.lock: age in seconds"
like "$(info_field a.lock heartbeat_age)" '^[0-9]+$' ".lockfs/a.lock: heartbeat_age in seconds"
is "$(info_field a.lock backend)" "$LOCKFS_BACKEND" ".lockfs/a.lock: backend is $LOCKFS_BACKEND"

# xattrs
is "$(xattr "$L/a.lock" user.lockfs.fence)" "$F" "xattr fence matches status"
is "$(xattr "$L/a.lock" user.lockfs.state)" held "xattr state"
is "$(xattr "$L/a.lock" user.lockfs.host)" "$LOCKFS_TEST_HOST" "xattr host"
is "$(xattr "$L/a.lock" user.lockfs.pid)" "$P" "xattr pid"
is "$(xattr "$L/a.lock" user.lockfs.user)" "$me_user" "xattr user"
like "$(xattr "$L/a.lock" user.lockfs.command)" 'bash' "xattr command"
a=$(xattr "$L/a.lock" user.lockfs.acquired)
like "$a" '^[0-9]+$' "xattr acquired is unix seconds ($a)"
cmp_ok "${a:-0}" -ge $((t0 - 1)) "xattr acquired within the create window (lower bound)"
cmp_ok "${a:-0}" -le $((t1 + 1)) "xattr acquired within the create window (upper bound)"
is "$a" "$acq_s" "xattr acquired equals .lockfs acquired"
like "$(xattr "$L/a.lock" user.lockfs.heartbeat)" '^[0-9]+$' "xattr heartbeat is unix seconds"
is "$(xattr "$L/a.lock" user.lockfs.holder)" "$LOCKFS_TEST_HOST:$P" "xattr holder is host:pid"
names=$(fsop listxattr "$L/a.lock")
for n in fence state host pid user command acquired heartbeat holder; do
    like " $names " " user\.lockfs\.$n( |$)" "listxattr names user.lockfs.$n"
done

# heartbeat: ages grow, a touch resets heartbeat_age but not age or fence.
wait_clock_past $((t1 + 2))
line=$(status_line a.lock)
cmp_ok "$(status_field "$line" heartbeat_age)" -ge 2 "heartbeat_age grows without heartbeats"
hb0=$(xattr "$L/a.lock" user.lockfs.heartbeat)
t2=$(now)
run 10 touch "$L/a.lock"
is "$RC" 0 "holder touches a.lock"
line=$(status_line a.lock)
cmp_ok "$(status_field "$line" heartbeat_age)" -le 1 "touch resets heartbeat_age"
cmp_ok "$(status_field "$line" age)" -ge 2 "touch does not reset age"
is "$(status_field "$line" fence)" "$F" "touch does not change the fence"
cmp_ok "$(xattr "$L/a.lock" user.lockfs.heartbeat)" -ge "$t2" "xattr heartbeat moved to now"
cmp_ok "$(date -u -d "$(info_field a.lock heartbeat)" +%s 2>/dev/null || echo 0)" -ge "$t2" ".lockfs/a.lock heartbeat moved to now"
cmp_ok "$(info_field a.lock heartbeat_age)" -le 1 ".lockfs/a.lock heartbeat_age reset"

# Subdirectory key; ordinary and temp files are not locks.
mkdir -p "$L/sub/deeper"
echo t >"$L/sub/deeper/t"
run 10 ln -- "$L/sub/deeper/t" "$L/sub/deeper/b.lock"
is "$RC" 0 "lock in a subdirectory taken by ln"
like "$(status_line sub/deeper/b.lock)" '^sub/deeper/b\.lock state=held ' "status key is the path relative to the root"
is "$(info_field sub/deeper/b.lock lock)" sub/deeper/b.lock ".lockfs/sub/deeper/b.lock: lock is the relative path"
: >"$L/.lk12345host"; : >"$L/plain"
is "$(timeout 10 cat -- "$L/.lockfs/status" | grep -c .)" 2 "status lists the two locks and nothing else"
is "$(fsop1 getxattr "$L/plain" user.lockfs.fence)" ENODATA "an ordinary file has no user.lockfs.fence"

# Only user attributes exist: the others are "not supported", so `ls -l`
# (which remembers that per device) stops asking after the first name,
# instead of two round trips for every name of the mount.
# (The kernel answers ENODATA itself for trusted.* to all but root.)
xs="security.selinux system.posix_acl_access"
((EUID == 0)) && xs+=" trusted.x"
for f in sub/deeper/b.lock plain; do
    for x in $xs; do
        is "$(fsop1 getxattr "$L/$f" "$x")" ENOTSUP "$f: $x is not supported (ENOTSUP)"
    done
done
like "$(timeout 10 getfattr --absolute-names -d -- "$L/sub/deeper/b.lock" 2>&1)" 'user\.lockfs\.fence=' \
    "... while getfattr -d still shows user.lockfs.* of a lock"
for i in $(seq 1 40); do : >"$L/sub/n$i"; done
if command -v strace >/dev/null; then
    run 30 strace -f -qq -c -e trace=getxattr,lgetxattr -o "$TESTDIR/ls.strace" ls -l -- "$L/sub"
    asked=$(awk '$NF ~ /getxattr$/ { n += $4 } END { print n + 0 }' "$TESTDIR/ls.strace")
    cmp_ok "$asked" -le 4 "ls -l of 41 names asked for attributes $asked times, not twice per name"
else
    skip "strace is not installed (scripts/setup-debian installs it)" 1
fi
rm -f "$L"/sub/n*

# After release the lock vanishes from every view.
run 10 rm -f "$L/a.lock"
is "$(status_line a.lock)" "" "released a.lock is not in status"
nok ".lockfs/a.lock can no longer be read" bash -c 'timeout 10 cat -- "$1" 2>/dev/null' _ "$L/.lockfs/a.lock"
is "$(fsop1 lstat "$L/.lockfs/a.lock")" ENOENT ".lockfs/a.lock: ENOENT"

done_testing
