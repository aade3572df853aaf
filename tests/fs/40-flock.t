#!/bin/bash
# 40-flock.t — flock(2) on a lockfs mount is a backend lock: exclusive and
# shared, across every mount of the backend, released at LOCK_UN or the last
# close of its open file description; a blocking flock waits without tying
# up the mount and a signal ends the wait; flock(1) on a lock name leaves
# nothing behind.  With a shared backend, two mounts (hostA, hostB) are two
# hosts, and a killed or stopped holder's flock is granted elsewhere only once its lease
# could have run out.  Clients: flock(1) (util-linux), python's fcntl.flock
# from several threads, 20 waiting flock(1) processes on one mount and 100
# on two.
set -u
TEST_TIMEOUT=300
. "$(dirname "$0")/../lib/mount.sh"

EVENTS=$TESTDIR/events # hostA's notify events
lockfs_start_or_bail -o host=hostA -o ttl=3s -o network_timeout=1s -o "notify=$(notify_recorder "$EVENTS")"
A=$MNT A_PID=$LOCKFS_PID LOG_A=$LOCKFS_LOG
SHARED=0
[[ $LOCKFS_BACKEND != local ]] && SHARED=1

# flk ARGS...: flock(1), bounded.  rc in RC.
flk() { timeout -k 2 30 flock "$@"; RC=$?; }
alive() { kill -0 "$1" 2>/dev/null; }
status_has() { grep -q -- "$2" <(timeout 10 cat -- "$1/.lockfs/status"); }
# The kernel sends an open file description's release (which lets its flock
# go) after the last close has returned: what follows a close waits for it
# (wait_until ... status_empty).
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
# started FILE: the background holder wrote FILE (it holds the lock).
started() { [[ -s $1 ]]; }

# ---------------------------------------------------------------- one mount

timeout 10 touch "$A/job"
flk -n "$A/job" true
is "$RC" 0 "flock -n on a free file: taken (exit 0)"
flock -n "$A/job" -c "flock -n \"$A/job\" true; echo \$? >\"$TESTDIR/inner\"; timeout 10 cat \"$A/.lockfs/status\" >\"$TESTDIR/st1\""
is "$(cat "$TESTDIR/inner")" 1 "a second flock -n while it is held: refused (exit 1)"
like "$(cat "$TESTDIR/st1")" '^\.lockfs/flock/job state=held fence=[0-9]+ host=hostA ' \
    ".lockfs/status lists the flock, held by hostA"
ok "let go when flock(1) ended: nothing held" wait_until 5 status_empty "$A"
# The holder reads its flock's fence on the file it locked, as LOCKFS_FENCE
# hands on a lock name's.
# lockfsctl status lists it with its kind, holder and fence too.
lockfsctl_or_bail
flock -n "$A/job" -c "getfattr --absolute-names --only-values -n user.lockfs.flock.fence \"$A/job\" >\"$TESTDIR/ff\"; timeout 10 cat \"$A/.lockfs/status\" >\"$TESTDIR/st1\"; timeout 10 \"$CTL\" status \"$A\" >\"$TESTDIR/ctl1\" 2>&1"
ff=$(cat "$TESTDIR/ff")
like "$ff" '^[0-9]+$' "the holder reads user.lockfs.flock.fence on the file it locked ($ff)"
like "$(cat "$TESTDIR/st1")" "^\.lockfs/flock/job state=held fence=$ff " "... the fence .lockfs/status shows"
like "$(cat "$TESTDIR/ctl1")" "/\.lockfs/flock/job +held +$ff +hostA:" "... and lockfsctl status: the flock, held, its fence and holder"
no_flock_fence() { [[ $(fsop1 getxattr "$1" user.lockfs.flock.fence) == ENODATA ]]; }
ok "... and none once it let go" wait_until 5 no_flock_fence "$A/job"

# Shared holders admit each other and exclude an exclusive one.
flock -s -n "$A/job" -c "flock -s -n \"$A/job\" true; echo \$? >\"$TESTDIR/sh2\"; flock -x -n \"$A/job\" true; echo \$? >\"$TESTDIR/ex2\""
is "$(cat "$TESTDIR/sh2")" 0 "two shared flocks at once: both taken"
is "$(cat "$TESTDIR/ex2")" 1 "an exclusive one while shared is held: refused"
flock -x -n "$A/job" -c "flock -s -n \"$A/job\" true; echo \$? >\"$TESTDIR/sh3\""
is "$(cat "$TESTDIR/sh3")" 1 "a shared one while exclusive is held: refused"

# Blocking: the waiter gets the lock once the holder lets go, not before.
rm -f "$TESTDIR/h1"
flock "$A/job" -c "echo x >\"$TESTDIR/h1\"; sleep 1.5; date +%s%N >\"$TESTDIR/h1.end\"" &
hp=$!
wait_until 10 started "$TESTDIR/h1"
flk "$A/job" -c "date +%s%N >\"$TESTDIR/w1.got\""
wait "$hp"
is "$RC" 0 "a blocking flock waits and gets the lock"
cmp_ok "$(cat "$TESTDIR/w1.got")" -ge "$(cat "$TESTDIR/h1.end")" "... after the holder's command ended"

# -w (SIGALRM) and SIGINT end a wait at once, and the mount keeps answering.
rm -f "$TESTDIR/h2"
flock "$A/job" -c "echo x >\"$TESTDIR/h2\"; sleep 4" &
hp=$!
wait_until 10 started "$TESTDIR/h2"
t0=$(date +%s%N)
flk -w 0.5 "$A/job" true
ms=$(ms_since "$t0")
is "$RC" 1 "flock -w 0.5 on a held file: timed out (exit 1)"
cmp_ok "$ms" -lt 2500 "... after about half a second (${ms} ms)"
t0=$(date +%s%N)
timeout -s INT 0.5 flock "$A/job" true
RC=$? ms=$(ms_since "$t0")
is "$RC" 124 "SIGINT ends a blocking flock"
cmp_ok "$ms" -lt 2500 "... at once (${ms} ms)"
is "$(fsop1 lstat "$A/job")" OK "the mount answers meanwhile"
wait "$hp"
ok "free again once the holder ended" wait_until 5 flock -n "$A/job" true

# flock(1) on a lock name: its open (O_CREAT) takes the dot-lock, which goes
# with the flock; nothing is held once the command ends.
flk "$A/run.lock" -c "echo \$\$ >/dev/null"
is "$RC" 0 "flock(1) on run.lock runs its command"
ok "... and leaves no run.lock behind" wait_until 5 gone "$A/run.lock"
ok "... nor any lock" wait_until 5 status_empty "$A"
# A lock name that exists already (a dot-lock someone holds) stays as it is.
timeout 10 bash -c 'set -C; echo $$ >"$1"' _ "$A/held.lock"
fh=$(xattr "$A/held.lock" user.lockfs.fence)
flk -n "$A/held.lock" true
is "$RC" 0 "flock(1) on a held dot-lock's name: the flock is its own lock"
is "$(xattr "$A/held.lock" user.lockfs.fence)" "$fh" "... and the dot-lock is left as it was"
rm -f "$A/held.lock"

# python: fcntl.flock from threads of one process (each its own open file
# description), conversions, and the last close letting go.
cat >"$TESTDIR/pyflock.py" <<'EOF'
import fcntl, os, sys, threading, time
path, log = sys.argv[1], sys.argv[2]
out = []
def worker(i):
    for n in range(10):
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        with open(log, 'a') as f:
            f.write('S %d %d\n' % (i, n)); f.flush()
            time.sleep(0.002)
            f.write('E %d %d\n' % (i, n))
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in ts: t.start()
for t in ts: t.join()
# Conversions: shared -> exclusive -> shared, then a close lets go.
def conversions():
  fd = os.open(path, os.O_RDWR)
  fcntl.flock(fd, fcntl.LOCK_SH)
  fd2 = os.open(path, os.O_RDWR)
  fcntl.flock(fd2, fcntl.LOCK_SH | fcntl.LOCK_NB)
  out.append('sh+sh ok')
  try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      out.append('ex over sh: taken')
  except BlockingIOError:
      out.append('ex over sh: refused')
  fcntl.flock(fd2, fcntl.LOCK_UN)
  fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  out.append('ex ok')
  try:
      fcntl.flock(fd2, fcntl.LOCK_SH | fcntl.LOCK_NB)
      out.append('sh over ex: taken')
  except BlockingIOError:
      out.append('sh over ex: refused')
  fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
  fcntl.flock(fd2, fcntl.LOCK_SH | fcntl.LOCK_NB)
  out.append('down to sh ok')
  os.close(fd); os.close(fd2)
  # The kernel sends the last close's release to lockfs after close()
  # returns: free a moment later, not at once.
  fd = os.open(path, os.O_RDWR)
  end = time.monotonic() + 3
  while True:
      try:
          fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
          break
      except BlockingIOError:
          if time.monotonic() > end:
              raise
          time.sleep(0.01)
  out.append('after close: ex ok')
  os.close(fd)
try:
    conversions()
except Exception as e:
    out.append('%s: %s' % (type(e).__name__, e))
print('; '.join(out))
EOF
: >"$TESTDIR/py.log"
r=$(timeout -k 2 60 "$PYTHON" "$TESTDIR/pyflock.py" "$A/job" "$TESTDIR/py.log" 2>&1)
is "$r" "sh+sh ok; ex over sh: refused; ex ok; sh over ex: refused; down to sh ok; after close: ex ok" \
    "python fcntl.flock: shared, exclusive, conversions, the last close"
is "$(count_sections "$TESTDIR/py.log")" "40 0" "4 threads x 10 exclusive flocks: 40 sections, none interleaved"

# Waiting processes on one file, more than the mount has workers (16): every
# one gets it in turn, the mount still answers meanwhile.  100 on the local
# backend, its only mount; 20 on a shared one, where 100 on two mounts follow.
NW=100
((SHARED)) && NW=20
: >"$TESTDIR/many.log"
pids=()
for i in $(seq 1 $NW); do
    timeout -k 2 90 flock "$A/job" -c "echo S $i 1 >>\"$TESTDIR/many.log\"; sleep 0.01; echo E $i 1 >>\"$TESTDIR/many.log\"" &
    pids+=($!)
done
t0=$(date +%s%N)
# stat(1), not a python helper: the time is the mount's, not an interpreter's
# start among the waiters' own.
st %F "$A/job" >/dev/null
is "$?" 0 "with $NW flock(1) waiting, the mount answers"
cmp_ok "$(ms_since "$t0")" -lt 2000 "... at once"
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
is "$fails" 0 "$NW waiters: every one got the lock"
is "$(count_sections "$TESTDIR/many.log")" "$NW 0" "... one at a time"
ok "nothing held at the end" wait_until 5 status_empty "$A"

if ((!SHARED)); then
    done_testing
    exit 0
fi

# ---------------------------------------------------------------- two hosts

lockfs_start_or_bail -o host=hostB -o ttl=3s -o network_timeout=1s
B=$MNT LOG_B=$LOCKFS_LOG
timeout 10 touch "$B/job"
rm -f "$TESTDIR/a1"
flock "$A/job" -c "echo x >\"$TESTDIR/a1\"; sleep 2; date +%s%N >\"$TESTDIR/a1.end\"" &
ap=$!
wait_until 10 started "$TESTDIR/a1"
flk -n "$B/job" true
is "$RC" 1 "hostB: flock -n on the file hostA holds: refused"
like "$(xattr "$A/job" user.lockfs.flock.fence)" '^[0-9]+$' "hostA shows the fence of the flock held through it"
ok "... hostB none: it holds no flock of the file" no_flock_fence "$B/job"
flk "$B/job" -c "date +%s%N >\"$TESTDIR/b1.got\""
wait "$ap"
is "$RC" 0 "hostB: a blocking flock gets it once hostA let go"
handoff=$((($(cat "$TESTDIR/b1.got") - $(cat "$TESTDIR/a1.end")) / 1000000))
cmp_ok "$handoff" -ge 0 "... after hostA's command ended"
cmp_ok "$handoff" -lt 1500 "... within a polling round and a round trip (${handoff} ms)"

flock -s "$A/job" -c "flock -s -n \"$B/job\" true; echo \$? >\"$TESTDIR/xsh\"; flock -x -n \"$B/job\" true; echo \$? >\"$TESTDIR/xex\""
is "$(cat "$TESTDIR/xsh")" 0 "shared on hostA, then on hostB: both taken"
is "$(cat "$TESTDIR/xex")" 1 "hostB exclusive while hostA holds shared: refused"

# Shared requests made at the same moment on both hosts all get in: one
# request's look at the exclusive key is not taken for an exclusive holder
# by another (tinystore's look takes that key for a round trip).
rm -f "$TESTDIR/shgo"
: >"$TESTDIR/shmany"
pids=()
for i in $(seq 1 20); do
    m=$A
    ((i % 2)) && m=$B
    timeout -k 2 30 flock -s -n "$m/job" -c "echo in >>\"$TESTDIR/shmany\"; for _ in \$(seq 1 200); do [ -e \"$TESTDIR/shgo\" ] && break; sleep 0.05; done" &
    pids+=($!)
done
all_in() { [[ $(grep -c in "$TESTDIR/shmany") == 20 ]]; }
ok "20 shared flock -n at once on two hosts: every one taken" wait_until 10 all_in
flk -x -n "$B/job" true
is "$RC" 1 "... and an exclusive one meanwhile refused"
touch "$TESTDIR/shgo"
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
is "$failed" 0 "... and none of them failed"
ok "... all let go" wait_until 5 status_empty "$A"

# 100 waiters on one file, half on each host: every one gets it in turn, and
# both mounts answer meanwhile (no waiter keeps a FUSE worker).
: >"$TESTDIR/hundred.log"
pids=()
for i in $(seq 1 100); do
    m=$A
    ((i % 2)) && m=$B
    timeout -k 2 120 flock "$m/job" -c "echo S $i 1 >>\"$TESTDIR/hundred.log\"; sleep 0.01; echo E $i 1 >>\"$TESTDIR/hundred.log\"" &
    pids+=($!)
done
t0=$(date +%s%N)
st %F "$A/job" >/dev/null && st %F "$B/job" >/dev/null
is "$?" 0 "with 100 flock(1) waiting, both mounts answer"
cmp_ok "$(ms_since "$t0")" -lt 3000 "... at once"
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
t_all=$(ms_since "$t0")
is "$fails" 0 "100 waiters on two hosts: every one got the lock (${t_all} ms in all)"
is "$(count_sections "$TESTDIR/hundred.log")" "100 0" "... one at a time"
both_empty() { status_empty "$A" && status_empty "$B"; }
ok "nothing held on either host at the end" wait_until 10 both_empty
# etcd's watch, and tinystore's hold that stands in line for the key, have
# hostB's waiters tried as the lock is let go on hostA (LDAP's waiters poll):
# lockfs_lock_waits_woken_total says which it was.  Counted over the
# hand-overs so far: at any one, a poll may come first.
woken() { timeout 10 cat -- "$1/.lockfs/metrics" | awk '$1 ~ /^lockfs_lock_waits_woken_total/ { print $2 }'; }
case $LOCKFS_BACKEND in
etcd) cmp_ok "$(woken "$B")" -ge 1 "hostB's waiters were woken by etcd's watch (lockfs_lock_waits_woken_total)" ;;
tinystore) cmp_ok "$(woken "$B")" -ge 1 "hostB's waiters were woken by its hold standing in line (lockfs_lock_waits_woken_total)" ;;
*) is "$(woken "$B")" 0 "$LOCKFS_BACKEND has no watch: hostB's waiters polled (lockfs_lock_waits_woken_total 0)" ;;
esac

# flock(1) on a lock name, both hosts: they exclude each other, and nothing
# is left on either once both ended.
: >"$TESTDIR/ln.log"
pids=()
for h in A B; do
    m=$A
    [[ $h == B ]] && m=$B
    (for i in 1 2 3 4 5; do
        timeout -k 2 30 flock "$m/cron.lock" -c "echo S $h $i >>\"$TESTDIR/ln.log\"; sleep 0.1; echo E $h $i >>\"$TESTDIR/ln.log\"" \
            2>>"$TESTDIR/ln.err"
    done) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
is "$(count_sections "$TESTDIR/ln.log")" "10 0" "flock(1) on cron.lock from both hosts: 10 sections, none interleaved"
is "$(cat "$TESTDIR/ln.err")" "" "... and flock(1) said nothing"
ok "no cron.lock left on either host" wait_until 5 bash -c '[[ $("$1" "$2" lstat "$3"):$("$1" "$2" lstat "$4") == ENOENT:ENOENT ]]' _ \
    "$PYTHON" "$TESTLIB/fsop.py" "$A/cron.lock" "$B/cron.lock"

# Two python workers per host, each open anew for every section (a new open
# file description each time: the kernel may give it the address of one
# whose release lockfs has not seen yet), 25 sections each.
: >"$TESTDIR/x.log"
pids=()
for m in "$A" "$B" "$A" "$B"; do
    timeout -k 2 120 "$PYTHON" - "$m/job" "$TESTDIR/x.log" <<'EOF' &
import fcntl, os, sys, time
path, log = sys.argv[1], sys.argv[2]
for n in range(25):
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    with open(log, 'a') as f:
        f.write('S %d %d\n' % (os.getpid(), n)); f.flush()
        time.sleep(0.003)
        f.write('E %d %d\n' % (os.getpid(), n))
    os.close(fd)
EOF
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
is "$(count_sections "$TESTDIR/x.log")" "100 0" "python on both hosts, a new open for each flock: 100 sections, none interleaved"

# The faults a held lock goes through on two hosts (tests/lib/lock-faults.sh),
# held with flock(2): lostflock.py holds job on hostA until told (a line
# through the fifo go) to make its next flock call, and prints its answer.
cat >"$TESTDIR/lostflock.py" <<'EOF'
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print('held', flush=True)
sys.stdin.readline()
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print('OK', flush=True)
except OSError as e:
    print(errno.errorcode[e.errno], flush=True)
EOF
mkfifo "$TESTDIR/go"
. "$TESTLIB/lock-faults.sh"
LF_KEY=.lockfs/flock/job LF_WAITER=flock
LF_SAY=(
    [lost_held]="a lost flock: hostA holds it"
    [lost_declared]="a lost flock: hostA declares it lost while the server is stopped"
    [lost_eio]="... and its holder's next flock call answers EIO"
    [stop_hold]="hostA's holder takes the flock again"
    [stop_waits]="... its holder's next flock call waits on the stopped mount"
    [stop_eio]="... and once hostA runs again, its holder's next flock call answers EIO"
    [kill_hold]="hostA's flock(1) holds job"
    [kill_why]=": ttl less a renew interval"
)
lf_hold() {
    case $1 in
    lost | stop)
        local rc=0
        exec {gofd}<>"$TESTDIR/go"
        LF_OUT=$TESTDIR/$1.out
        timeout -k 2 60 "$PYTHON" "$TESTDIR/lostflock.py" "$A/job" <"$TESTDIR/go" >"$LF_OUT" 2>&1 &
        LF_PID=$!
        wait_until 10 grep -q held "$LF_OUT" || rc=1
        [[ $1 == stop ]] && lost_before=$(grep -c "lost \.lockfs/flock/job" "$LOG_A")
        return $rc
        ;;
    kill)
        rm -f "$TESTDIR/a2"
        flock "$A/job" -c "echo \$\$ >\"$TESTDIR/a2\"; exec sleep 60" &
        LF_PID=$!
        wait_until 10 started "$TESTDIR/a2"
        ;;
    esac
}
lf_next() { echo go >&"$gofd"; }
lf_answer() {
    wait "$LF_PID"
    REPLY=$(tail -n 1 "$LF_OUT")
}
lf_b_wait() { flock "$B/job" -c "date +%s%N >\"$1\""; }

# A flock whose lease is lost (the server stopped until hostA declares it
# lost): its holder's next flock call answers EIO, and the loss is logged.
lock_fault_lost
exec {gofd}>&-
ok "... and hostB takes it" wait_until 10 flock -n "$B/job" true
# Just back, the server may still be slow to answer hostA (EIO): once it does,
# hostA takes it too.
ok "... and so does hostA, once the server answers it" wait_until 10 flock -n "$A/job" true

# hostA's lockfs stopped (SIGSTOP, as a stalled VM) while its holder keeps a
# flock and hostB waits: hostB is granted it only once hostA's lease could
# have run out, and when hostA runs again, before anything else it declares
# the flock lost: its holder's next flock call answers EIO.
lock_fault_stopped
lost_again() { (($(grep -c "lost \.lockfs/flock/job" "$LOG_A") > lost_before)); }
ok "... as hostA declared it lost" wait_until 10 lost_again
exec {gofd}>&-
ok "... and hostA takes it once hostB let go" wait_until 10 flock -n "$A/job" true

# The holder's lockfs killed (-9) while hostB waits: hostB is granted the
# flock once hostA's lease could have run out (ttl 3 s), not before.
lock_fault_killed
kill "$(cat "$TESTDIR/a2")" "$LF_PID" 2>/dev/null
done_testing
