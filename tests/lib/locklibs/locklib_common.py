"""locklib_common.py — the driver protocol shared by the Python lock-library
drivers in this directory (see README.md here for the protocol).

A driver supplies three callables for its library:
    attempt()  one non-blocking acquisition by the library's own call:
               True (got it) or False (the library's "held" answer);
               anything else raises
    release()  the library's release; returns None, or a string saying why
               the library says the lock was no longer ours
    wait(secs) the library's own waiting acquisition, bounded by secs:
               True or False (timed out)
and optionally refresh() (the library's refresh, called every --refresh s
while holding).
"""

import os
import random
import sys
import time


def say(*words):
    print(*words, flush=True)


def log_line(fd, *fields):
    # One write(2) per line on an O_APPEND descriptor: the log is a linear
    # history of every section of every worker.
    os.write(fd, (' '.join(str(f) for f in fields) + '\n').encode())

def contend(attempt, release, n, fd, wid, host, deadline):
    """Up to N critical sections before the epoch second DEADLINE: a
    non-blocking attempt(), a short random back-off while held; each section
    logs "S HOST WID K NS" and "E HOST WID K NS" to FD (log_line), then
    release().  Returns (sections done, errors): an exception from attempt()
    or a reason from release() is an error."""
    done = errs = 0
    backoff = 0.004
    while done < n and time.time() < deadline:
        try:
            got = attempt()
        except Exception as e:  # an answer other than "held"
            errs += 1
            sys.stderr.write('attempt: %s: %s\n' % (type(e).__name__, e))
            got = False
            time.sleep(0.05)
        if not got:
            time.sleep(random.uniform(backoff / 2, backoff))
            backoff = min(backoff * 2, 0.128)
            continue
        backoff = 0.004
        done += 1
        log_line(fd, 'S', host, wid, done, time.time_ns())
        time.sleep(random.uniform(0.001, 0.004))
        log_line(fd, 'E', host, wid, done, time.time_ns())
        why = release()
        if why:
            errs += 1
            sys.stderr.write('release: %s\n' % why)
        time.sleep(random.uniform(0.002, 0.008))
    return done, errs



def main(argv, attempt, release, wait, refresh=None, refresh_every=None):
    if len(argv) < 1:
        say('error: usage: ACTION [ARGS]')
        return 2
    action, args = argv[0], argv[1:]
    try:
        if action == 'try':
            if not attempt():
                say('held')
                return 1
            say('got')
            why = release()
            if why:
                say('lost:', why)
                return 3
            say('released')
            return 0
        if action == 'hold':
            secs = float(args[0])
            stop = args[1] if len(args) > 1 else None
            if not attempt():
                say('held')
                return 1
            say('got')
            t0 = time.monotonic()
            next_refresh = t0 + refresh_every if refresh and refresh_every else None
            while time.monotonic() - t0 < secs:
                if stop and os.path.exists(stop):
                    break
                if next_refresh is not None and time.monotonic() >= next_refresh:
                    refresh()
                    next_refresh += refresh_every
                time.sleep(0.05)
            why = release()
            if why:
                say('lost:', why)
                return 3
            say('released')
            return 0
        if action == 'wait':
            secs = float(args[0])
            t0 = time.monotonic()
            got = wait(secs)
            dt = time.monotonic() - t0
            if not got:
                say('timeout after %.2f' % dt)
                return 1
            say('got after %.2f' % dt)
            why = release()
            if why:
                say('lost:', why)
                return 3
            return 0
        if action == 'contend':
            n, logpath, wid, host, deadline = int(args[0]), args[1], args[2], args[3], float(args[4])
            fd = os.open(logpath, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            done, errs = contend(attempt, release, n, fd, wid, host, deadline)
            say('done', done, n, errs)
            return 0 if done == n and errs == 0 else 1
        say('error: unknown action', action)
        return 2
    except Exception as e:
        say('error: %s: %s' % (type(e).__name__, e))
        return 2
