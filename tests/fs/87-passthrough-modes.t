#!/bin/bash
# 87-passthrough-modes.t — files, directories, symlinks and fifos made
# through passthrough get exactly the mode, owner and group the disk itself
# gives: the caller's umask (not lockfs's on top of it), the group and setgid
# bit of a setgid directory, and a directory's default ACL (which replaces
# the umask).  Each is compared with the same made in a plain directory side
# by side, by the same user with the same umask.
#
# The spool is 2775 with a group the creating user is in: as root, the second
# test user (nobody) with the supplementary group mail; unprivileged, the
# suite's own user with its own group.  lockfs itself runs with umask 022
# (mount.sh's), the case of a root shell or systemd.
set -u
. "$(dirname "$0")/../lib/mount.sh"

if ((EUID == 0)); then
    have_user2 || skip_all "$(user2_skip_reason)"
    GRP=$(getent group mail | cut -d: -f3)
    [[ -n $GRP ]] || skip_all "no group mail"
    WHO=(setpriv --reuid="$USER2_UID" --regid="$USER2_GID" --groups="$GRP" --)
else
    GRP=$(id -g)
    WHO=(env)
fi

PLAIN=$TESTDIR/plain
SPOOL=$TESTDIR/spool
for d in "$PLAIN" "$SPOOL"; do
    mkdir -p "$d/acl" "$d/u007" "$d/u022" "$d/u077"
    chgrp "$GRP" "$d" "$d"/*
    chmod 2775 "$d" "$d"/*
done

# A default ACL (u::rwx g::rwx o::r-x, mask rwx) on acl/, written as the
# binary xattr: the acl package's setfacl is not needed.
set_default_acl() {
    "$PYTHON" - "$1" <<'EOF'
import os, struct, sys
ents = [(0x01, 7), (0x04, 7), (0x10, 7), (0x20, 5)]
val = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xFFFFFFFF) for t, p in ents)
os.setxattr(sys.argv[1], "system.posix_acl_default", val)
EOF
}
HAVE_ACL=1
for d in "$PLAIN/acl" "$SPOOL/acl"; do
    set_default_acl "$d" 2>"$TESTDIR/acl.err" || HAVE_ACL=0
done

# The disk underneath, seen past the mount: a descriptor taken before it.
exec 9<"$SPOOL"
DISK=/proc/$$/fd/9
lockfs_start_or_bail --mnt "$SPOOL" -o passthrough=yes
M=$MNT

# make DIR UMASK: as the user, with UMASK, make a file, a directory, a file
# and a directory inside that, a symlink and a fifo in DIR.
make_all() {
    timeout 20 "${WHO[@]}" bash -c '
        umask "$2" && cd "$1" &&
        echo hi >box && mkdir d && echo x >d/f && mkdir d/e &&
        ln -s box sl && mkfifo ff' _ "$1" "$2"
}
NAMES=(box d d/f d/e sl ff)

# What stat shows of NAME under DIR: type and mode, owner, group.
modes() { (cd "$1" && timeout 10 stat -c '%n %A %U %G' -- "${NAMES[@]}" 2>&1); }

for um in 007 022 077; do
    make_all "$PLAIN/u$um" "$um"
    is "$?" 0 "umask $um: made everything in the plain directory"
    make_all "$M/u$um" "$um"
    is "$?" 0 "umask $um: made everything through lockfs"
    want=$(modes "$PLAIN/u$um")
    is "$(modes "$M/u$um")" "$want" "umask $um: modes, owners, groups through lockfs are the plain directory's"
    is "$(modes "$DISK/u$um")" "$want" "umask $um: ... and so on the disk underneath"
done
# The case of the issue, spelt out: a mailbox made by umask 007 in the setgid
# spool is group-writable and of the spool's group.
is "$(st '%a %g' "$DISK/u007/box")" "660 $GRP" "umask 007: the mailbox is 0660 of the spool's group"
is "$(st '%a %g' "$DISK/u007/d")" "2770 $GRP" "umask 007: a directory is 2770 of the spool's group"

if ((HAVE_ACL)); then
    make_all "$PLAIN/acl" 077
    make_all "$M/acl" 077
    want=$(modes "$PLAIN/acl")
    like "$want" 'box -rw-rw-r--' "default ACL: the plain directory ignores the umask (077) for the ACL"
    is "$(modes "$M/acl")" "$want" "default ACL: what lockfs makes is the plain directory's"
    is "$(modes "$DISK/acl")" "$want" "default ACL: ... and so on the disk underneath"
else
    skip "no default ACLs on $TESTDIR's filesystem: $(cat "$TESTDIR/acl.err")" 3
fi

# Devices (root only: mknod of one needs CAP_MKNOD): root under umask 027
# makes /dev/null's twin in both; lock names and memory directories refuse.
if ((EUID == 0)); then
    dev() { (umask 027 && cd "$1" && mknod nul c 1 3 && stat -c '%n %A %U %G %t:%T' nul) 2>&1; }
    want=$(dev "$PLAIN/u007")
    like "$want" '^nul crw-r----- root ' "a device in the plain directory: crw-r-----"
    is "$(dev "$M/u007")" "$want" "a device made through lockfs is the plain directory's"
    run 10 mknod "$M/u007/dev.lock" c 1 3
    like "$ERR" 'not permitted' "a device as a lock name: EPERM"
else
    skip "mknod of a device needs root" 3
fi

# Lock names stay in memory: their mode is the caller's umask applied, as
# before (the kernel no longer masks it for lockfs).
run 10 "${WHO[@]}" bash -c 'umask 027; set -C; echo $$ >"$1"' _ "$M/u007/box.lock"
is "$RC" 0 "a lock name taken by set -C under umask 027"
is "$(st %a "$M/u007/box.lock")" 640 "... is 0640 (0666 less the caller's umask)"
run 10 "${WHO[@]}" bash -c 'umask 027; mkdir "$1"' _ "$M/u007/dir.lock"
is "$(st %a "$M/u007/dir.lock")" 2750 "a lock name taken by mkdir under umask 027 is 2750 (setgid directory)"
rm -rf "$M/u007/box.lock" "$M/u007/dir.lock"

lockfs_stop
is "$LOCKFS_RC" 0 "lockfs exits 0"
is "$(modes "$SPOOL/u007")" "$(modes "$PLAIN/u007")" "after unmount the disk holds what the plain directory does"
done_testing
