#!/usr/bin/python3
"""check-sections.py LOG — the verdict on a contention log.

Every critical section appended "S HOST ID K NS" on entry and "E HOST ID K NS"
on exit (one write(2) each, O_APPEND, on a local disk outside the mounts), so
the log is a linear history.  Prints one line:

    sections=N interleaved=I overlaps=O hosts=H1,H2 bad=B span=Ss

  interleaved  an S while another section was open, or an E that does not
               close the open section (order in the log);
  overlaps     pairs of sections whose [S, E] times intersect by more than
               2 ms (wall-clock nanoseconds, all workers on this machine's
               one clock; Node has no wall clock finer than its process's
               time origin, whose estimate differs between processes by up
               to a millisecond — the log order above has no such error);
  bad          lines that do not parse;
  span         seconds from the first entry to the last exit.
Exit status 0 when interleaved, overlaps and bad are all 0.
"""

import sys

TOLERANCE_NS = 2_000_000


def main(path):
    sections, interleaved, bad = [], 0, 0
    hosts = set()
    open_ = None
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 5 or p[0] not in ('S', 'E') or not p[4].isdigit():
                bad += 1
                continue
            kind, host, wid, k, ns = p[0], p[1], p[2], p[3], int(p[4])
            key = (host, wid, k)
            hosts.add(host)
            if kind == 'S':
                if open_ is not None:
                    interleaved += 1
                open_ = (key, ns)
            else:
                if open_ is None or open_[0] != key:
                    interleaved += 1
                else:
                    sections.append((open_[1], ns, key))
                open_ = None
    if open_ is not None:
        interleaved += 1
    # Intervals: sorted by start, each must end before the next starts.
    sections.sort()
    overlaps = 0
    end_max = None
    for s, e, _ in sections:
        if end_max is not None and s + TOLERANCE_NS <= end_max:
            overlaps += 1
        end_max = e if end_max is None else max(end_max, e)
    span = (max(e for _, e, _ in sections) - sections[0][0]) / 1e9 if sections else 0
    print('sections=%d interleaved=%d overlaps=%d hosts=%s bad=%d span=%.1fs' % (
        len(sections), interleaved, overlaps, ','.join(sorted(hosts)) or '-', bad, span))
    return 0 if interleaved == 0 and overlaps == 0 and bad == 0 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
