#!/bin/bash
# 72-install.t — meson install puts both programs (lockfs also in bin, for
# mount.fuse3's PATH), the three man pages, the examples and the systemd unit
# (Type=notify, with the configured sbindir) in place; an fstab line mounts
# lockfs through mount(8) and mount.fuse3 (lockfs detaches), and umount
# releases its locks and stops it.
set -u
. "$(dirname "$0")/../lib/mount.sh"

build=$(cd "$(dirname "$LOCKFS_BIN")/.." && pwd)
if ((EUID != 0)); then
    skip "mount(8) with an fstab file and meson install need root; the suite runs as uid $EUID" 23
    done_testing
fi

# meson install into a staging directory.
if [[ -f $build/build.ninja ]] && command -v meson >/dev/null; then
    dest=$TESTDIR/dest
    run 300 meson install -C "$build" --no-rebuild --destdir "$dest"
    is "$RC" 0 "meson install --destdir succeeds"
    prefix=$(meson introspect --buildoptions "$build" |
        "$PYTHON" -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
    for f in sbin/lockfs bin/lockfsctl share/man/man8/lockfs.8 share/man/man5/lockfs.conf.5 \
        share/man/man1/lockfsctl.1 share/doc/lockfs/examples/lockfs.conf \
        share/doc/lockfs/examples/lockfs.fstab share/doc/lockfs/examples/var-lock-shared.mount \
        share/bash-completion/completions/lockfsctl; do
        ok "installed: $prefix/$f" test -e "$dest$prefix/$f"
    done
    ok "installed lockfs runs" "$dest$prefix/sbin/lockfs" --version
    is "$(readlink "$dest$prefix/bin/lockfs")" ../sbin/lockfs "bin/lockfs links to sbin/lockfs"
    mapfile -t units < <(find "$dest" -name 'lockfs@.service')
    is "${#units[@]}" 1 "one lockfs@.service installed (${units[*]})"
    unit=${units[0]:-/nonexistent}
    like "${unit#"$dest"}" 'systemd/system/lockfs@\.service$' "in systemd's unit directory"
    ok "Type=notify" grep -qx 'Type=notify' "$unit"
    ok "ExecStart runs the installed $prefix/sbin/lockfs" \
        grep -q "^ExecStart=$prefix/sbin/lockfs %f -f " "$unit"
else
    skip "no meson build directory beside $LOCKFS_BIN (the staged copy of the suite)" 15
    unit=''
fi

# The systemd units parse (systemd-analyze verify; no man pages installed here).
examples=$(cd "$TESTLIB/../../examples" 2>/dev/null && pwd)
if command -v systemd-analyze >/dev/null && [[ -n $examples && -f $unit ]]; then
    units=$TESTDIR/units
    mkdir -p "$units"
    cp "$examples/var-lock-shared.mount" "$units/"
    # verify wants ExecStart's program to exist: point it at the one built
    sed "s#^ExecStart=[^ ]*#ExecStart=$LOCKFS_BIN#" "$unit" >"$units/lockfs@var-lock-shared.service"
    for u in var-lock-shared.mount lockfs@var-lock-shared.service; do
        run 60 systemd-analyze verify --man=no "$units/$u"
        is "$RC" 0 "systemd-analyze verify $u ($ERR)"
    done
else
    skip "systemd-analyze, examples/ or the installed unit missing" 2
fi

# The fstab form, through mount(8).  mount(8) resets PATH, so the line names
# the program before '#' (the form examples/lockfs.fstab gives for lockfs
# installed off the PATH).
mnt=$TESTDIR/fstab-mnt
state=$TESTDIR/fstab-state
mkdir -p "$mnt" "$state"
fstab=$TESTDIR/fstab
printf '%s#lockfs %s fuse state_dir=%s,host=%s,allow_other 0 0\n' \
    "$LOCKFS_BIN" "$mnt" "$state" "$LOCKFS_TEST_HOST" >"$fstab"
run 30 mount -T "$fstab" "$mnt"
is "$RC" 0 "mount -T FSTAB MOUNTPOINT mounts lockfs ($ERR)"
if is_fuse_mounted "$mnt"; then
    pass "the mount point is a FUSE mount"
    pid=$(pgrep -f -- "^$LOCKFS_BIN lockfs $mnt" | head -n 1)
    printf '%s\n' "${pid:-}" >>"$TESTDIR/.pids"
    timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$mnt/f.lock"
    like "$(status_line f.lock "$mnt")" '^f\.lock state=held' \
        "a lock can be taken through it"
    run 30 umount "$mnt"
    is "$RC" 0 "umount"
    ok "lockfs stops after umount" wait_until 10 bash -c '! kill -0 "$1" 2>/dev/null' _ "${pid:-0}"
    nok "nothing mounted" is_fuse_mounted "$mnt"
else
    fail "the mount point is a FUSE mount"
    skip "not mounted" 4
fi

done_testing
