#!/bin/bash
# 78-demo.t — scripts/demo stays off the host.  setup-debian's demo package set
# is a part of the test set without slapd, cargo or the mail tools; neither
# scripts/demo nor `setup-debian --demo` runs systemctl, useradd and the like or
# changes /etc; the demo's tour runs with the real tools, exits 0 and leaves no
# mount, no lockfs and no directory behind (as root, as a user with allow_other,
# and as a user without user_allow_other).
set -u
. "$(dirname "$0")/../lib/mount.sh"

[[ $LOCKFS_BACKEND == local ]] ||
    skip_all "scripts/demo runs the local backend whatever the suite's; it is tested in the local pass"

demo=$REPO_TOP/scripts/demo
setup=$REPO_TOP/scripts/setup-debian
[[ -x $demo && -x $setup ]] || BAIL_OUT "scripts/demo or scripts/setup-debian missing under $REPO_TOP"

# ---- the package sets
demo_set=$("$setup" --list demo)
test_set=$("$setup" --list test)
ok "setup-debian --list demo lists packages" test -n "$demo_set"
extra=$(comm -23 <(sort -u <<<"$demo_set") <(sort -u <<<"$test_set"))
is "$extra" "" "the demo set is a part of the test set"
for p in slapd ldap-utils etcd-server cargo rustc npm procmail mutt mailutils; do
    nok "the demo set leaves out $p" grep -qx -- "$p" <<<"$demo_set"
done
for p in meson ninja-build pkg-config libfuse3-dev fuse3 libglib2.0-dev libmsgpack-dev \
    liblockfile-bin lockfile-progs attr; do
    ok "the demo set has $p" grep -qx -- "$p" <<<"$demo_set"
done
ok "the demo set has an LDAP -dev package (lockfs links libldap)" grep -Eqx 'libldap2?-dev' <<<"$demo_set"

# ---- scripts/demo, read: its code (comments dropped) never changes the host
code=$(grep -vE '^[[:space:]]*#' "$demo")
# (lines that only echo a message may name a command for the user to run)
forbidden=$(grep -vE '^[[:space:]]*echo ' <<<"$code" |
    grep -nEw 'systemctl|service|useradd|adduser|usermod|groupadd|cargo|npm|apt-get|apt|install-tinystore|install-lock-libraries|modprobe|mknod')
is "$forbidden" "" "scripts/demo calls no service manager, user tool, apt-get or cargo"
writes_etc=$(grep -nE '(>>?[[:space:]]*|\b(tee|cp|mv|install|ln|rm|mkdir|touch|chmod|chown|truncate)\b[^|;&]*[[:space:]]|\bsed[[:space:]]+-i[^|;&]*[[:space:]])"?/etc' <<<"$code")
is "$writes_etc" "" "scripts/demo writes nothing under /etc"
setup_calls=$(grep -E 'setup-debian' <<<"$code")
like "$setup_calls" 'setup-debian --demo' "scripts/demo runs setup-debian --demo"
is "$(grep -v 'setup-debian --demo' <<<"$setup_calls")" "" "scripts/demo runs setup-debian only with --demo"

# Commands on the PATH that would change the host: each records its call and
# does nothing.  apt-get is recorded apart: installing the demo set is allowed.
shims=$TESTDIR/shims
mkdir -p "$shims"
for c in systemctl service useradd adduser usermod groupadd modprobe mknod cargo npm; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/forbidden"\n' "$c" "$TESTDIR" >"$shims/$c"
done
printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt"\n' "$TESTDIR" >"$shims/apt-get"
chmod 0755 "$shims"/*
: >"$TESTDIR/forbidden"
chmod 0666 "$TESTDIR/forbidden" # the unprivileged runs below record too

# host_state: what the demo must not change.
host_state() {
    md5sum /etc/fuse.conf /etc/passwd /etc/group 2>&1
    stat -c '%n %a' /dev/fuse
}
before=$(host_state)

# ---- setup-debian --demo, run (root: it re-runs itself with sudo otherwise)
if ((EUID == 0)); then
    run 300 env PATH="$shims:$PATH" bash -x "$setup" --demo
    is "$RC" 0 "setup-debian --demo succeeds ($(tail -n 1 <<<"$ERR"))"
    [[ ! -s $TESTDIR/apt ]] || diag "setup-debian --demo installed: $(cat "$TESTDIR/apt")"
    trace=$(grep '^+' <<<"$ERR")
    unlike "$trace" 'install-tinystore|install-lock-libraries|useradd|systemctl|fuse\.conf|/dev/fuse' \
        "setup-debian --demo stops after the packages (no tinystore, users, slapd, fuse.conf)"
else
    skip "setup-debian needs root (it re-runs itself with sudo); the suite runs as uid $EUID" 2
fi

# ---- the tour, run
# demo_ok LABEL LOG RC: the tour's output shows what it claims.
demo_ok() {
    local label=$1 log=$2 rc=$3
    is "$rc" 0 "$label: scripts/demo exits 0 ($(grep '^demo:' "$log" | head -n 3 | tr '\n' ' '))"
    ok "$label: the lock is held, fence 1, in .lockfs/status" \
        grep -Eq '^  demo\.lock state=held fence=1 ' "$log"
    ok "$label: the xattrs show the fence" grep -q '^  user\.lockfs\.fence="1"' "$log"
    ok "$label: a held lock refuses ln" grep -q 'File exists' "$log"
    ok "$label: lockfsctl hold gives the command a fence" grep -Eq '^  job runs with fence [0-9]+$' "$log"
    ok "$label: lockfs logged the unmount" grep -q 'unmounted ' "$log"
}
# nothing_left LABEL DIR: no mount, no lockfs and no file of the demo under DIR.
nothing_left() {
    local label=$1 dir=$2
    left=$(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)
    is "$left" "" "$label: nothing stays mounted under the demo's TMPDIR"
    nok "$label: no lockfs of the demo runs" pgrep -f -- "lockfs $dir/"
    is "$(ls -A "$dir")" "" "$label: the demo removed its directory"
}

dtmp=$TESTDIR/demo-tmp
mkdir -p "$dtmp"
run 120 env PATH="$shims:$PATH" TMPDIR="$dtmp" "$demo" --no-setup
printf '%s\n%s\n' "$OUT" "$ERR" >"$TESTDIR/demo.log"
diag "scripts/demo --no-setup as uid $EUID took ${ELAPSED_MS} ms"
demo_ok "uid $EUID" "$TESTDIR/demo.log" "$RC"
if ((EUID == 0)); then
    ok "as root: dotlockfile ran (allow_other by default)" grep -q '^\$ dotlockfile -l' "$TESTDIR/demo.log"
elif grep -qx '[[:space:]]*user_allow_other[[:space:]]*' /etc/fuse.conf 2>/dev/null; then
    ok "as a user with user_allow_other: dotlockfile ran" grep -q '^\$ dotlockfile -l' "$TESTDIR/demo.log"
else
    ok "as a user without user_allow_other: dotlockfile skipped, saying why" \
        grep -q 'dotlockfile is skipped' "$TESTDIR/demo.log"
fi
nothing_left "uid $EUID" "$dtmp"

# As a user for whom /etc/fuse.conf has no user_allow_other: a private mount
# namespace hides it (the host's file is untouched), and the tour goes without
# the setgid tools.  The user gets a copy of what the demo needs (the tree may
# live where that user cannot read).
user=${LOCKFS_TEST_USER:-}
if ((EUID != 0)); then
    skip "a user without user_allow_other needs root to set up; the suite runs as uid $EUID" 9
elif [[ -z $user ]] || ! id -u "$user" >/dev/null 2>&1; then
    skip "no test user (LOCKFS_TEST_USER) to run the demo as" 9
elif ! command -v unshare >/dev/null; then
    skip "unshare (util-linux) is missing" 9
else
    tree=$TESTDIR/tree
    mkdir -p "$tree/scripts" "$tree/build/src" "$TESTDIR/utmp"
    cp -p "$demo" "$tree/scripts/"
    cp -p "$LOCKFS_BIN" "$tree/build/src/lockfs"
    cp -p "${LOCKFSCTL_BIN:-$(dirname "$LOCKFS_BIN")/lockfsctl}" "$tree/build/src/lockfsctl"
    chmod -R a+rX "$tree"
    chown "$user:" "$TESTDIR/utmp"
    printf '# user_allow_other hidden by 78-demo.t\n' >"$TESTDIR/fuse.conf"
    run 120 unshare -m --propagation private sh -c \
        'mount --bind "$1" /etc/fuse.conf && exec runuser -u "$2" -- env PATH="$3" TMPDIR="$4" "$5" --no-setup' \
        _ "$TESTDIR/fuse.conf" "$user" "$shims:$PATH" "$TESTDIR/utmp" "$tree/scripts/demo"
    printf '%s\n%s\n' "$OUT" "$ERR" >"$TESTDIR/demo-user.log"
    is "$RC" 0 "$user without user_allow_other: scripts/demo exits 0 ($(grep '^demo:' "$TESTDIR/demo-user.log" | head -n 3 | tr '\n' ' '))"
    ok "$user without user_allow_other: dotlockfile skipped, saying why" \
        grep -q 'dotlockfile is skipped: it runs setgid mail' "$TESTDIR/demo-user.log"
    ok "$user without user_allow_other: the lock is held, fence 1" \
        grep -Eq '^  demo\.lock state=held fence=1 ' "$TESTDIR/demo-user.log"
    ok "$user without user_allow_other: lockfile-create found mbox.lock held" \
        grep -q 'exceeded maximum number of lock attempts' "$TESTDIR/demo-user.log"
    ok "$user without user_allow_other: the xattrs show the fence" \
        grep -q '^  user\.lockfs\.fence="1"' "$TESTDIR/demo-user.log"
    ok "$user without user_allow_other: lockfs logged the unmount" \
        grep -q 'unmounted ' "$TESTDIR/demo-user.log"
    nothing_left "$user" "$TESTDIR/utmp"
fi

is "$(cat "$TESTDIR/forbidden")" "" "no run called systemctl, service, useradd, adduser, usermod, groupadd, modprobe, mknod, cargo or npm"
is "$(host_state)" "$before" "/etc/fuse.conf, /etc/passwd, /etc/group and /dev/fuse's mode are unchanged"

done_testing
