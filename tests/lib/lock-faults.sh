# tests/lib/lock-faults.sh — what becomes of a lock held through hostA when
# the backend's server stops, and when hostA's lockfs is stopped (SIGSTOP)
# or killed (-9) while hostB waits: the scenarios 40-flock.t (flock(2)) and
# 41-posix-locks.t (fcntl(2) record locks) share, written once.
#
# Sourced after mount.sh, once hostA (A, A_PID, LOG_A; EVENTS: its notify
# events) and hostB (B, LOG_B) are mounted.  The test says how its kind of
# lock is held and asked for:
#   LF_KEY          the lock's name in .lockfs/status (.lockfs/flock/job)
#   LF_WAITER       what waits on hostB, for the TAP points (flock, F_SETLKW)
#   LF_SAY[...]     the test's words for its other TAP points (each scenario
#                   says which it reads)
#   lf_hold WHICH   start hostA's holder for scenario WHICH (lost, stop,
#                   kill); success once it holds the lock; LF_PID its pid
#   lf_next         the holder makes its next lock call (without waiting)
#   lf_answer       REPLY: that call's answer (EIO, OK, ...), once it came
#   lf_b_wait FILE  hostB waits for the lock, then writes the time it got it
#                   (date +%s%N) to FILE (run in the background here)
# Each scenario leaves its holder for the test to end, and what hostB or
# hostA takes next to the test too.

declare -gA LF_SAY=()

# lf_state: hostA's state of the lock in .lockfs/status (held, lost, ...).
lf_state() { status_field "$(status_line "$LF_KEY" "$A")" state; }
lf_is_lost() { [[ $(lf_state) == lost ]]; }

# lock_fault_lost: the server stopped until hostA declares the held lock
# lost; resumed, the holder's next lock call answers EIO, and the loss is
# logged and notified.  Says LF_SAY[lost_held], [lost_declared], [lost_eio].
lock_fault_lost() {
    local fence re=${LF_KEY//./\\.}
    lf_hold lost
    is "$(lf_state)" held "${LF_SAY[lost_held]}"
    fence=$(status_field "$(status_line "$LF_KEY" "$A")" fence)
    backend_server_pause
    ok "${LF_SAY[lost_declared]}" wait_until 10 lf_is_lost
    backend_server_resume
    lf_next
    lf_answer
    is "$REPLY" EIO "${LF_SAY[lost_eio]}"
    ok "... logged as lost" log_has "lost $re" "$LOG_A"
    ok "... and notified (LOCKFS_EVENT=lost, its key and fence)" \
        wait_until 10 grep -qx "lost $re $fence" "$EVENTS"
}

# lock_fault_stopped: hostA's lockfs stopped (SIGSTOP, as a stalled VM)
# while its holder keeps the lock and hostB waits: hostB is granted it only
# once hostA's lease could have run out; the holder's next lock call, made
# while hostA is stopped, answers EIO once hostA runs again.  Leaves hostA
# running.  Says LF_SAY[stop_hold], [stop_waits], [stop_eio].
lock_fault_stopped() {
    local bp t_stop after
    ok "${LF_SAY[stop_hold]}" lf_hold stop
    lf_b_wait "$TESTDIR/b3.got" &
    bp=$!
    t_stop=$(date +%s%N)
    kill -STOP "$A_PID"
    wait "$bp"
    is "$?" 0 "hostA's lockfs stopped: hostB's waiting $LF_WAITER is granted"
    after=$((($(cat "$TESTDIR/b3.got") - t_stop) / 1000000))
    cmp_ok "$after" -ge 1900 "... no sooner than hostA's lease could run out (${after} ms after the stop, ttl 3 s)"
    # The call is made while hostA is stopped: its request waits in the kernel's
    # queue and is read the moment hostA runs, as a stalled host's would be.
    lf_next
    ok "${LF_SAY[stop_waits]}" wait_until 5 in_fuse_wait "$LF_PID"
    kill -CONT "$A_PID"
    lf_answer
    is "$REPLY" EIO "${LF_SAY[stop_eio]}"
}

# lock_fault_killed: the holder's lockfs killed (-9) while hostB waits:
# hostB is granted the lock once hostA's lease could have run out (ttl 3 s),
# not before.  Says LF_SAY[kill_hold], and LF_SAY[kill_why] (may be empty)
# after "its lease could run out".
lock_fault_killed() {
    local bp t_kill after
    ok "${LF_SAY[kill_hold]}" lf_hold kill
    lf_b_wait "$TESTDIR/b2.got" &
    bp=$!
    t_kill=$(date +%s%N)
    kill -9 "$A_PID"
    wait "$bp"
    is "$?" 0 "hostA's lockfs killed: hostB's waiting $LF_WAITER is granted"
    after=$((($(cat "$TESTDIR/b2.got") - t_kill) / 1000000))
    cmp_ok "$after" -ge 1900 "... no sooner than its lease could run out${LF_SAY[kill_why]} (${after} ms after the kill, ttl 3 s)"
    cmp_ok "$after" -lt 15000 "... and not much later"
    ((after < 1900)) && diag "hostA: $(grep -F "${LF_KEY#.lockfs/}" "$LOG_A" | tail -n 8)" &&
        diag "hostB: $(grep -F "${LF_KEY#.lockfs/}" "$LOG_B" | tail -n 8)"
    return 0
}
