# shellcheck shell=bash
# tests/lib/spool.sh — one mail spool seen by two hosts through lockfs.
#
# spool_two_hosts: make $SPOOL (2775, group $SPOOL_GRP) and mount lockfs
# over two views of it, host=hA at $A and host=hB at $B, passthrough.
#   - as root: two bind mounts of the spool, a lockfs over each (the case of
#     /var/mail on two NFS clients);
#   - unprivileged (no bind mounts): hA's lockfs over the spool itself and
#     hB's stacked over hA's, so hB's ordinary files go through hA's mount
#     to the disk while its lock names stay its own; hA's mount is reached
#     through a descriptor taken before hB's covered it ($A is
#     /proc/$$/fd/N, which every process of the suite's uid may follow).
# $SPOOL_DISK is the disk itself, past both mounts.
# Needs mount.sh loaded.

spool_two_hosts() {
    SPOOL=$TESTDIR/spool
    mkdir -p "$SPOOL"
    if ((EUID == 0)); then
        SPOOL_GRP=$(getent group mail | cut -d: -f3)
        [[ -n $SPOOL_GRP ]] || skip_all "no group mail"
    else
        SPOOL_GRP=$(id -g)
    fi
    chgrp "$SPOOL_GRP" "$SPOOL" && chmod 2775 "$SPOOL" || BAIL_OUT "cannot make $SPOOL 2775"
    exec {_spool_disk_fd}<"$SPOOL"
    SPOOL_DISK=/proc/$$/fd/$_spool_disk_fd
    if ((EUID == 0)); then
        local h
        for h in hA hB; do
            mkdir -p "$TESTDIR/$h"
            mount --bind "$SPOOL" "$TESTDIR/$h" || BAIL_OUT "mount --bind $SPOOL $TESTDIR/$h"
            at_exit "umount -l '$TESTDIR/$h' 2>/dev/null"
        done
        lockfs_start_or_bail --mnt "$TESTDIR/hA" -o host=hA,passthrough=yes
        A=$MNT A_PID=$LOCKFS_PID A_LOG=$LOCKFS_LOG
        lockfs_start_or_bail --mnt "$TESTDIR/hB" -o host=hB,passthrough=yes
        B=$MNT B_PID=$LOCKFS_PID B_LOG=$LOCKFS_LOG
        SPOOL_HOW="two lockfs mounts over two bind mounts of one spool"
    else
        lockfs_start_or_bail --mnt "$SPOOL" -o host=hA,passthrough=yes
        A_PID=$LOCKFS_PID A_LOG=$LOCKFS_LOG
        exec {_spool_a_fd}<"$SPOOL"
        A=/proc/$$/fd/$_spool_a_fd
        lockfs_start_or_bail --mnt "$SPOOL" -o host=hB,passthrough=yes
        B=$MNT B_PID=$LOCKFS_PID B_LOG=$LOCKFS_LOG
        SPOOL_HOW="hB's lockfs stacked over hA's over the spool (no bind mounts unprivileged)"
    fi
}
