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
               one clock; Node has no wall clock finer than a millisecond,
               so its workers add their monotonic clock to an offset
               measured at a millisecond's turn, good to some microseconds
               — the log order above has no such error);
  bad          lines that do not parse;
  span         seconds from the first entry to the last exit.
Exit status 0 when interleaved, overlaps and bad are all 0.  Otherwise the
first violations are shown on standard error, each with the log lines around
it, so that a failure in CI (which keeps no files) says what happened.
"""

import sys

TOLERANCE_NS = 2_000_000


SHOW = 3  # violations shown, each with CONTEXT log lines either side
CONTEXT = 3


def show(lines, i, why):
    print('check-sections: %s, at log line %d:' % (why, i + 1), file=sys.stderr)
    for j in range(max(0, i - CONTEXT), min(len(lines), i + CONTEXT + 1)):
        print('  %s %5d  %s' % ('>' if j == i else ' ', j + 1, lines[j].rstrip()), file=sys.stderr)


def main(path):
    sections, interleaved, bad = [], 0, 0
    hosts = set()
    open_ = None
    shown = 0
    with open(path) as f:
        lines = f.readlines()
    for i, line in enumerate(lines):
        p = line.split()
        if len(p) != 5 or p[0] not in ('S', 'E') or not p[4].isdigit():
            bad += 1
            if shown < SHOW:
                shown += 1
                show(lines, i, 'a line that does not parse')
            continue
        kind, host, wid, k, ns = p[0], p[1], p[2], p[3], int(p[4])
        key = (host, wid, k)
        hosts.add(host)
        if kind == 'S':
            if open_ is not None:
                interleaved += 1
                if shown < SHOW:
                    shown += 1
                    show(lines, i, 'a section began while another was open')
            open_ = (key, ns, i)
        else:
            if open_ is None or open_[0] != key:
                interleaved += 1
                if shown < SHOW:
                    shown += 1
                    show(lines, i, 'an end that closes no open section of its own')
            else:
                sections.append((open_[1], ns, key, open_[2]))
            open_ = None
    if open_ is not None:
        interleaved += 1
        if shown < SHOW:
            shown += 1
            show(lines, open_[2], 'a section never ended')
    # Intervals: sorted by start, each must end before the next starts.
    sections.sort()
    overlaps = 0
    end_max = None
    for s, e, _, i in sections:
        if end_max is not None and s + TOLERANCE_NS <= end_max:
            overlaps += 1
            if shown < SHOW:
                shown += 1
                show(lines, i, 'a section began %.3f ms before an earlier one ended'
                     % ((end_max - s) / 1e6))
        end_max = e if end_max is None else max(end_max, e)
    span = (max(e for _, e, _, _ in sections) - sections[0][0]) / 1e9 if sections else 0
    print('sections=%d interleaved=%d overlaps=%d hosts=%s bad=%d span=%.1fs' % (
        len(sections), interleaved, overlaps, ','.join(sorted(hosts)) or '-', bad, span))
    return 0 if interleaved == 0 and overlaps == 0 and bad == 0 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
