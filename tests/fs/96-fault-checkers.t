#!/bin/bash
# 96-fault-checkers.t — the fault suite's two checkers (tests/faults/check.py
# and Porcupine, tests/faults/porcupine) catch a planted overlap and a planted
# fence inversion, and pass a good history: tests/faults/checkers.t.  It
# needs no mount and no server, so it runs once, in the local backend's
# passes (LOCKFS_FAULT_CHECKERS=1 runs it with any backend).
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [[ ${LOCKFS_BACKEND:-local} != local && ${LOCKFS_FAULT_CHECKERS:-0} != 1 ]]; then
    echo "1..0 # SKIP runs with the local backend only (no server needed; LOCKFS_FAULT_CHECKERS=1 runs it here)"
    exit 0
fi
exec "$here/../faults/checkers.t"
