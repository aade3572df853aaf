#!/bin/bash
# 79-package.t — debian/ builds the Debian package: `dpkg-buildpackage -b -us -uc`
# (DEB_BUILD_OPTIONS=nocheck) in a copy of the tree under $TESTDIR, as an
# unprivileged user (Rules-Requires-Root: no), never writing into the tree.  The
# package holds both programs, the man pages, the examples and everything else
# `meson install` installs, owned by root, and nothing of the tests or benchmarks;
# it depends on fuse3, glib-networking and the libraries the programs link; its
# programs, unpacked into a throw-away root, report the meson version and mount;
# the changelog's version is meson's; lintian finds no error (warnings are shown).
set -u
. "$(dirname "$0")/../lib/mount.sh"

[[ $LOCKFS_BACKEND == local ]] ||
    skip_all "the package does not depend on the backend; it is built in the local pass"
top=$REPO_TOP
[[ -f $top/debian/control && -f $top/meson.build ]] ||
    skip_all "no source tree with debian/ at $top (the unprivileged pass runs from a copy of tests/)"
command -v dpkg-buildpackage >/dev/null ||
    skip_all "dpkg-buildpackage is missing (dpkg-dev; scripts/setup-debian installs it)"
command -v dh >/dev/null || skip_all "dh is missing (debhelper; scripts/setup-debian installs it)"

meson_version=$(sed -n "s/^[[:space:]]*version:[[:space:]]*'\([^']*\)'.*/\1/p" "$top/meson.build" | head -n 1)
changelog_version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
is "$changelog_version" "$meson_version" "debian/changelog's version is meson.build's project version"

build_deps=$(sed -n '/^Build-Depends:/,/^[A-Z][A-Za-z-]*:/p' "$top/debian/control")

# ---- a copy of the tree: what git tracks and does not ignore (so not build/), or
# without git everything but build directories and .git
pkg=$TESTDIR/pkg
src=$pkg/lockfs-$meson_version
mkdir -p "$src"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$top" && git ls-files -z --cached --others --exclude-standard |
        tar -c --null --no-recursion --ignore-failed-read -T - 2>/dev/null) | tar -x -C "$src"
else
    tar -C "$top" --exclude=./build --exclude='./build-*' --exclude='./obj-*' --exclude=./.git -c . |
        tar -x -C "$src"
fi
ok "the copy has debian/rules" test -x "$src/debian/rules"
# tree_state: what the build could have written into the tree or beside it (where
# dpkg-buildpackage puts packages), to show it wrote into neither.
marker=$TESTDIR/before-build
touch "$marker"
tree_state() {
    git -C "$top" status --porcelain --ignored 2>/dev/null
    find "$top" \( -path "$top/build" -o -path "$top/build-*" -o -path "$top/.git" \) -prune \
        -o -newer "$marker" -print
    ls -d "$top"/../lockfs_"$meson_version"_* "$top"/../lockfs-dbgsym_"$meson_version"_* 2>/dev/null
}
tree_before=$(tree_state)

# As the test user when there is one: the build needs no root.
builder=()
user=${LOCKFS_TEST_USER:-}
if ((EUID == 0)) && [[ -n $user ]] && id -u "$user" >/dev/null 2>&1; then
    mkdir -p "$pkg/home" "$pkg/tmp"
    chown -R "$user:" "$pkg"
    builder=(runuser -u "$user" -- env HOME="$pkg/home" TMPDIR="$pkg/tmp")
    note "building as $user"
fi
t0=$(date +%s)
run 900 "${builder[@]}" env -C "$src" DEB_BUILD_OPTIONS="nocheck parallel=2" \
    dpkg-buildpackage -b -us -uc
printf '%s\n%s\n' "$OUT" "$ERR" >"$TESTDIR/build.log"
diag "dpkg-buildpackage took $(($(date +%s) - t0)) s"
is "$RC" 0 "dpkg-buildpackage -b -us -uc succeeds"
((RC == 0)) || diag "$(tail -n 30 "$TESTDIR/build.log")"
is "$(tree_state)" "$tree_before" "the build wrote nothing into the tree ($top)"

arch=$(dpkg --print-architecture)
deb=$pkg/lockfs_${meson_version}_$arch.deb
changes=$pkg/lockfs_${meson_version}_$arch.changes
if ((RC != 0)) || [[ ! -s $deb ]]; then
    fail "the package $deb was built"
    done_testing
fi
pass "the package $(basename "$deb") was built"

# ---- contents
contents=$(dpkg -c "$deb")
paths=$(awk '{ print $6 }' <<<"$contents" | sed 's#^\./#/#; s#/$##')
ok "lockfs is in /usr/sbin or /usr/bin" grep -Eqx '/usr/s?bin/lockfs' <<<"$paths"
for f in /usr/bin/lockfsctl /usr/share/man/man8/lockfs.8.gz /usr/share/man/man5/lockfs.conf.5.gz \
    /usr/share/man/man1/lockfsctl.1.gz /usr/share/doc/lockfs/copyright \
    /usr/share/doc/lockfs/examples/lockfs.conf /usr/share/doc/lockfs/examples/lockfs.fstab \
    /usr/share/bash-completion/completions/lockfsctl; do
    ok "the package has $f" grep -qxF -- "$f" <<<"$paths"
done
# Whatever meson installs (units, helpers, future files), the package has it
# (dh_compress may have added .gz).
installed=$(meson introspect --installed "$src"/obj-* 2>/dev/null |
    "$PYTHON" -c 'import json,sys; print("\n".join(sorted(json.load(sys.stdin).values())))')
if [[ -n $installed ]]; then
    missing=
    while IFS= read -r f; do
        grep -qxF -- "$f" <<<"$paths" || grep -qxF -- "$f.gz" <<<"$paths" || missing+=" $f"
    done <<<"$installed"
    is "$missing" "" "the package has all $(wc -l <<<"$installed") files meson installs"
else
    fail "meson introspect --installed lists what meson installed (build directory $src/obj-*)"
fi
# Every library meson found (pkg-config) comes from a package that debian/control
# build-depends on and that setup-debian's demo set installs (itself, or as a
# dependency of one of its packages, e.g. libldap2-dev's libldap-dev): else the
# package builds here but not on a clean host, and neither does the demo.
# with_deps PKG...: the packages and what each (installed) depends on, one a line.
with_deps() {
    printf '%s\n' "$@"
    dpkg-query -W -f='${Depends}\n' "$@" 2>/dev/null | tr ',|' '\n\n' |
        sed 's/([^)]*)//g; s/:any//; s/[[:space:]]//g' | grep -v '^$'
}
demo_closure=$(with_deps $("$top/scripts/setup-debian" --list demo))
build_closure=$(with_deps $(sed 's/^Build-Depends://; s/([^)]*)//g; s/\[[^]]*\]//g; s/<[^>]*>//g' <<<"$build_deps" |
    grep -v '^[A-Z][A-Za-z-]*:' | tr ',|' '\n\n' | sed 's/[[:space:]]//g' | grep -v '^$'))
meson_deps=$(meson introspect --dependencies "$src"/obj-* 2>/dev/null |
    "$PYTHON" -c 'import json,sys; print("\n".join(d["name"] for d in json.load(sys.stdin)))')
ok "meson introspect lists the libraries meson found" test -n "$meson_deps"
for d in $meson_deps; do
    pc=$(pkg-config --path "$d" 2>/dev/null) || continue # threads: no .pc
    owner=$(dpkg -S "$pc" 2>/dev/null | head -n 1 | cut -d: -f1)
    if [[ -z $owner ]]; then
        fail "a package owns $pc (meson's dependency $d)"
        continue
    fi
    ok "debian/control's Build-Depends bring $owner (meson's $d)" grep -qxF -- "$owner" <<<"$build_closure"
    # systemd's .pc only says where the unit goes, and meson does without it
    # (examples/meson.build): the demo need not install systemd.
    [[ $d == systemd ]] && continue
    ok "setup-debian's demo set brings $owner (meson's $d)" grep -qxF -- "$owner" <<<"$demo_closure"
done
is "$(grep -E 'test_|noopfs|lockbench|/usr/local|/obj-' <<<"$paths")" "" \
    "no test, benchmark or /usr/local file in the package"
is "$(awk '$2 != "root/root"' <<<"$contents")" "" "every file is owned by root/root"

depends=$(dpkg-deb -f "$deb" Depends)
note "Depends: $depends"
for d in fuse3 glib-networking libfuse3-3 'libglib2\.0-0' 'libldap-2\.[0-9]+-[0-9]' libmsgpackc2; do
    like "$depends" "(^|, )$d( |,|$)" "the package depends on $d"
done

# ---- the programs, unpacked into a throw-away root
root=$TESTDIR/root
mkdir -p "$root"
run 60 dpkg -x "$deb" "$root"
is "$RC" 0 "dpkg -x unpacks the package ($ERR)"
lockfs=$(find "$root/usr/sbin" "$root/usr/bin" -name lockfs -type f 2>/dev/null | head -n 1)
lockfsctl=$root/usr/bin/lockfsctl
run 10 "${lockfs:-/nonexistent}" -V
is "${OUT%%$'\n'*}" "lockfs $meson_version" "the unpacked lockfs -V reports the version (its first line)"
like "$OUT" 'FUSE library version 3\.' "... and the libfuse it runs with"
run 10 "${lockfs:-/nonexistent}" --help
is "$RC" 0 "the unpacked lockfs --help exits 0"
like "$OUT" 'MOUNTPOINT' "lockfs --help shows the usage"
run 10 "$lockfsctl" --version
is "$OUT" "lockfsctl $meson_version" "the unpacked lockfsctl --version reports the version"
run 10 "$lockfsctl" --help
is "$RC" 0 "the unpacked lockfsctl --help exits 0"
# It mounts and locks like the one the suite built.
if [[ -n $lockfs ]] && LOCKFS_BIN=$lockfs lockfs_start; then
    pass "the unpacked lockfs mounts"
    timeout 10 bash -c 'set -C; echo $$ > "$1"' _ "$MNT/p.lock"
    like "$(status_line p.lock "$MNT")" '^p\.lock state=held' "a lock is taken through it"
    lockfs_stop
    is "$LOCKFS_RC" 0 "it stops on SIGTERM with status 0"
else
    fail "the unpacked lockfs mounts"
    skip "not mounted" 2
fi

# ---- lintian: errors fail, warnings are reported
if command -v lintian >/dev/null; then
    run 300 "${builder[@]}" lintian --fail-on error "$changes"
    while IFS= read -r l; do
        [[ $l == W:* ]] && diag "lintian: $l"
    done <<<"$OUT"
    errors=$(grep '^E:' <<<"$OUT")
    is "$errors" "" "lintian reports no error"
    is "$RC" 0 "lintian --fail-on error exits 0 ($(tail -n 1 <<<"$ERR"))"
else
    skip "lintian is missing (scripts/setup-debian installs it)" 2
fi

done_testing
