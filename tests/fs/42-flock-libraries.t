#!/bin/bash
# 42-flock-libraries.t — the lock libraries that use flock(2) and POSIX
# record locks, not dot-locks, on two hosts (hostA, hostB: two mounts of one
# backend; on the local backend, processes of one mount), under contention,
# and a mixed workload of flock, fcntl and dot-lock users on one name.
#
#   filelock (PyPI filelock, Debian python3-filelock)   flock, O_RDWR|O_CREAT|O_TRUNC;
#                                   three threads a process, each its own FileLock
#   portalocker (python3-portalocker)                   flock, open(LOCK, 'a')
#   fasteners InterProcessLock (python3-fasteners)      fcntl.lockf, open(LOCK, 'a')
#   a hand-written fcntl.lockf script                   os.open(O_RDWR|O_CREAT)
#   flock(1) -n (util-linux)                            flock, O_RDONLY|O_CREAT
#   dotlockfile, bash set -C                            dot-locks
#
# Each library's users open the lock name with O_CREAT, so on a free name
# their open takes the dot-lock, which goes with the flock or POSIX lock
# taken through that open at its last close (docs/design.md): nothing may be
# left behind.  Three groups, each on its own name, every worker logging its
# critical sections (S/E lines, check-sections.py):
#   1. flock users (filelock, portalocker, flock(1)) on both hosts: one log;
#   2. POSIX users (fasteners, lockf) on both hosts: one log;
#   3. all of them and dot-lock users on ONE name, m.lock: flocks exclude
#      flocks, POSIX locks POSIX locks, dot-locks dot-locks (the three are
#      independent, docs/design.md), so each kind logs to its own file, and
#      none of the three may overlap.
# Then every worker finished its sections with no error other than "held",
# and no lock of any kind is left on either host.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"
. "$TESTLIB/locklibs/shell-worker.sh"

LL=$TESTLIB/locklibs
DRV="$LL/flock-libs.py"
command -v dotlockfile >/dev/null || skip_all "dotlockfile is not installed (scripts/setup-debian installs liblockfile-bin)"
for lib in filelock portalocker fasteners lockf; do
    v=$(timeout 20 "$PYTHON" "$DRV" "$lib" /dev/null version 2>&1) ||
        skip_all "${v#error: } (scripts/setup-debian installs python3-filelock, python3-portalocker and python3-fasteners)"
    note "$v"
done
note "$(flock --version 2>&1 | head -n 1)"

lockfs_start_or_bail -o host=hostA
A=$MNT
if [[ $LOCKFS_BACKEND != local ]]; then
    lockfs_start_or_bail -o host=hostB
    B=$MNT
else
    B=$A # one mount: "hostB" is other processes on it
fi
OUT=$TESTDIR/out
mkdir -p "$OUT"

N=12                      # sections per worker (per thread)
DEADLINE=$(($(date +%s) + 90))

# flock_worker ID HOST LOCK N LOG: flock(1) -n around a logged section.
flock_worker() {
    local id=$1 host=$2 lk=$3 n=$4 log=$5 done=0 errs=0 rc
    while ((done < n && $(date +%s) < DEADLINE)); do
        timeout 20 flock -n -E 75 "$lk" bash -c '
            t=$EPOCHREALTIME; echo "S $1 $2 $3 ${t/./}000" >>"$4"
            sleep 0.00$((RANDOM % 4 + 1))
            t=$EPOCHREALTIME; echo "E $1 $2 $3 ${t/./}000" >>"$4"' _ "$host" "$id" $((done + 1)) "$log"
        rc=$?
        case $rc in
        0) done=$((done + 1)) ;;
        75) ;; # held
        *) errs=$((errs + 1)); echo "flock exit $rc" >&2 ;;
        esac
        sleep 0.00$((RANDOM % 8 + 1))
    done
    echo "done $done $n $errs"
}

# dot-lock tools: shell_worker (tests/lib/locklibs/shell-worker.sh).

# start ID HOST(A|B) KIND LOCKNAME LOG [THREADS]: one worker in the background.
declare -a WORKERS=()
start() {
    local id=$1 h=$2 kind=$3 name=$4 log=$5 threads=${6:-1} m host
    if [[ $h == A ]]; then m=$A host=hostA; else m=$B host=hostB; fi
    case $kind in
    flock1) flock_worker "$id" "$host" "$m/$name" "$N" "$log" ;;
    dotlockfile | noclobber) shell_worker "$id" "$host" "$m" "$kind" "$name" "$N" "$log" "$DEADLINE" "$OUT/$id.held" ;;
    *) timeout -k 3 120 "$PYTHON" "$DRV" "$kind" "$m/$name" contend "$N" "$log" "$id" "$host" "$DEADLINE" "$threads" ;;
    esac >"$OUT/$id.out" 2>"$OUT/$id.err" </dev/null &
    WORKERS+=("$id:$kind:$threads:$!")
}

: >"$OUT/f.log" >"$OUT/p.log" >"$OUT/m-flock.log" >"$OUT/m-posix.log" >"$OUT/m-dot.log"
# 1. flock users on f.lock
start f1 A filelock f.lock "$OUT/f.log" 3
start f2 B filelock f.lock "$OUT/f.log" 3
start f3 A portalocker f.lock "$OUT/f.log"
start f4 B portalocker f.lock "$OUT/f.log"
start f5 A flock1 f.lock "$OUT/f.log"
start f6 B flock1 f.lock "$OUT/f.log"
# 2. POSIX users on p.lock
start p1 A fasteners p.lock "$OUT/p.log"
start p2 B fasteners p.lock "$OUT/p.log"
start p3 A lockf p.lock "$OUT/p.log"
start p4 B lockf p.lock "$OUT/p.log"
# 3. every kind on m.lock
start m1 A filelock m.lock "$OUT/m-flock.log" 2
start m2 B flock1 m.lock "$OUT/m-flock.log"
start m3 A fasteners m.lock "$OUT/m-posix.log"
start m4 B lockf m.lock "$OUT/m-posix.log"
start m5 A dotlockfile m.lock "$OUT/m-dot.log"
start m6 B noclobber m.lock "$OUT/m-dot.log"

incomplete=() errs=0
for w in "${WORKERS[@]}"; do
    IFS=: read -r id kind threads pid <<<"$w"
    # Each worker ends by DEADLINE; one still running 30 s later is killed.
    until ! kill -0 "$pid" 2>/dev/null || (($(date +%s) > DEADLINE + 30)); do sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    r=$(tail -n 1 "$OUT/$id.out" 2>/dev/null)
    if [[ $r =~ ^done\ ([0-9]+)\ ([0-9]+)\ ([0-9]+)$ ]]; then
        ((BASH_REMATCH[1] < BASH_REMATCH[2])) && incomplete+=("$id($kind)=${BASH_REMATCH[1]}/${BASH_REMATCH[2]}")
        errs=$((errs + BASH_REMATCH[3]))
    else
        incomplete+=("$id($kind)='${r:-no result}'")
    fi
    [[ -s $OUT/$id.err ]] && diag "$id ($kind) stderr: $(sort "$OUT/$id.err" | uniq -c | head -n 5)"
done

for g in f:"flock users (filelock x3 threads, portalocker, flock(1)) on f.lock" \
    p:"POSIX users (fasteners, fcntl.lockf) on p.lock" \
    m-flock:"m.lock, all kinds at once: its flock users (filelock x2 threads, flock(1))" \
    m-posix:"m.lock, all kinds at once: its POSIX users (fasteners, lockf)" \
    m-dot:"m.lock, all kinds at once: its dot-lock users (dotlockfile, set -C)"; do
    log=${g%%:*} desc=${g#*:}
    verdict=$("$PYTHON" "$LL/check-sections.py" "$OUT/$log.log" 2>"$OUT/$log.check")
    note "$log: $verdict"
    like "$verdict" ' interleaved=0 overlaps=0 ' "$desc: no two critical sections overlapped, on either host"
    [[ -s $OUT/$log.check ]] && diag "$(head -n 20 "$OUT/$log.check")"
done
is "${incomplete[*]}" "" "every worker (and thread) completed its $N sections"
is "$errs" 0 "no worker saw an error other than 'held'"
ok "nothing is left held on hostA: no flock, POSIX lock or dot-lock" wait_until 5 status_empty "$A"
ok "... nor on hostB" wait_until 5 status_empty "$B"
ok "... and no lock name is left: f.lock, p.lock, m.lock" \
    wait_until 5 bash -c '! ls -A "$1" | grep -q .' _ "$A"
done_testing
