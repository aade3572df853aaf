#!/bin/bash
# 31-lost-holder-new-holder.t — a holder whose lock was lost while it read
# its fence by path is not shown the next holder's lock and fence (issue 28).
#
# The etcd long run of session 27: a worker was granted R.lock, its mount's
# lockfs was stopped (a VM stall) before the worker's `getfattr -n
# user.lockfs.fence R.lock` was answered, the lease ran out, another host
# was granted the name, and the getfattr -- answered once lockfs ran again
# and had declared the loss -- printed the other host's fence.  A fenced
# resource accepts that token: the lost holder would go on as the holder.
#
# Here hostP's holder is a shell that takes p.lock with `set -C` and then
# reads its fence by path with getfattr, as the dot-lock idioms do; hostP's
# lockfs is stopped between the two, with the getfattr waiting for it, until
# hostQ holds p.lock.  The holder's family (the shell and its children) must
# get no fence; any other process of hostP is shown hostQ's lock as it is.
set -u
TEST_TIMEOUT=120
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] ||
    skip_all "the local backend's locks live in one lockfs process: no other host can take them"

opts=(-o ttl=3s -o renew_interval=500ms -o network_timeout=1s)
lockfs_start_or_bail -o host=hostP "${opts[@]}"
P=$MNT LOG_P=$LOCKFS_LOG PID_P=$LOCKFS_PID
lockfs_start_or_bail -o host=hostQ "${opts[@]}"
Q=$MNT

T=$(mktemp -d)
at_exit "kill -CONT $PID_P 2>/dev/null; rm -rf -- '$T'"

# The holder: a shell that takes the lock (set -C); once told, getfattr (its
# child) reads the fence by path.  Every wait is bounded.  It is started
# apart from this test (its parent gone, it is adopted), as a cron job
# would be: the lost holder's family is the process that took the lock, its
# parent and their descendants, and this test is to ask as another process
# of the host.
( setsid bash -c '
    echo "$$" >"$2/pid"
    set -C
    echo "$$" >"$1/p.lock" || exit 1
    : >"$2/taken"
    for ((i = 0; i < 300; i++)); do [[ -e $2/go ]] && break; sleep 0.1; done
    getfattr -h --absolute-names --only-values -n user.lockfs.fence -- "$1/p.lock" >"$2/fence" 2>"$2/err"
    echo $? >"$2/rc"
    # Once the test has seen what it needs, the family asks again: a
    # listing, and the fence by path through timeout(1) (a grandchild).
    for ((i = 0; i < 300; i++)); do [[ -e $2/again ]] && break; sleep 0.1; done
    ls -1 -- "$1" >"$2/ls" 2>&1
    timeout 10 getfattr -h --absolute-names --only-values -n user.lockfs.fence -- "$1/p.lock" >"$2/fence2" 2>"$2/err2"
    : >"$2/done"
' holder "$P" "$T" </dev/null >/dev/null 2>&1 & )

ok "hostP's holder takes p.lock (set -C)" wait_until 10 test -e "$T/taken"
HOLDER=$(cat "$T/pid")
at_exit "kill $HOLDER 2>/dev/null"
fp=$(xattr "$P/p.lock" user.lockfs.fence)
like "$fp" '^[0-9]+$' "p.lock has a fence ($fp)"

kill -STOP "$PID_P"
: >"$T/go"
ok "the holder's getfattr waits for the stopped lockfs" wait_until 10 in_fuse_wait "$HOLDER"
# hostP renews no more: the backend lets the lease run out (ttl 3 s).
ok "hostQ takes p.lock while hostP is stopped" wait_until 20 takes "$Q/p.lock"
fq=$(xattr "$Q/p.lock" user.lockfs.fence)
fence_gt "$fq" "$fp" "hostQ's p.lock has a larger fence"
kill -CONT "$PID_P"

ok "the holder's getfattr returns" wait_until 15 test -e "$T/rc"
ok "hostP declared p.lock lost" wait_until 5 log_has 'lost p\.lock' "$LOG_P"
got=$(cat "$T/fence" 2>/dev/null)
isnt "$got" "$fq" "the lost holder is not shown hostQ's fence by path"
is "$got" "" "the lost holder reads no fence ($(head -c 200 "$T/err" 2>/dev/null))"

# Anyone else on hostP is shown the name as it is: hostQ's lock.
ok "another process of hostP sees p.lock held by hostQ" wait_until 5 held_by "$P" p.lock hostQ "$fq"
is "$(xattr "$P/p.lock" user.lockfs.fence)" "$fq" "another process of hostP reads hostQ's fence"
like "$(ls -1 -- "$P")" '(^|'$'\n'')p\.lock($|'$'\n'')' "another process of hostP lists p.lock"

# The holder's family asks again, the loss declared and the name hostQ's
# (the etcd run's getfattr came after the mount had declared the loss on
# resuming): the name is gone for it, in a listing too (a listing never
# names what lookup denies: ls -l would show '?').
# Asked while hostP's backend was unreachable lately, lookups of a lost
# name answer ENOENT at once (30-server-outage.t); here it answers, as it did
# in the etcd run.
reachable() { grep -Eq '^lockfs_backend_reachable(\{[^}]*\})? 1$' "$P/.lockfs/metrics"; }
ok "hostP's backend answers" wait_until 10 reachable
: >"$T/again"
ok "the holder's shell asked again" wait_until 15 test -e "$T/done"
unlike "$(cat "$T/ls")" '(^|'$'\n'')p\.lock($|'$'\n'')' "the holder's shell does not list p.lock ($(tr '\n' ' ' <"$T/ls"))"
is "$(cat "$T/fence2")" "" "the holder's shell, asking again through timeout(1), reads no fence ($(head -c 200 "$T/err2"))"
is "$(xattr "$Q/p.lock" user.lockfs.state)" held "hostQ still holds p.lock"
is "$(fsop1 unlink "$Q/p.lock")" OK "hostQ releases p.lock"

done_testing
