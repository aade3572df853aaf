#!/bin/bash
# 95-faults.t — the fault-injection suite's short schedule (tests/faults/run,
# tests/faults/README.md) on the shared backend of this run: three simulated
# hosts, each with its own proxy to the server, a workload of legacy tools and
# lockfsctl hold on one lock and of flock(1) and fcntl holders (exclusive and
# shared) on two files, and nemeses (a stopped lockfs, a cut or reset
# link, a skewed clock, a killed, restarted or stopped server, a killed
# lockfs, a lockfs restarted with SIGTERM and with kill -9 while its locks
# are held); the checker fails on any two critical sections that overlapped,
# fences out of order, a loss declared after the lock was granted elsewhere,
# a lock a restart of lockfs did not keep, and the other rules listed there;
# Porcupine checks the same history as a mutex with fences (SKIP without Go).
# About 2 minutes per backend and pass.
# LOCKFS_FAULTS=0 skips it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
case ${LOCKFS_BACKEND:-local} in
local)
    echo "1..0 # SKIP the fault suite needs a shared backend: the local backend has no server or link to fault"
    exit 0
    ;;
esac
if [[ ${LOCKFS_FAULTS:-1} == 0 ]]; then
    echo "1..0 # SKIP LOCKFS_FAULTS=0"
    exit 0
fi
exec "$here/../faults/run" --backend "$LOCKFS_BACKEND"
