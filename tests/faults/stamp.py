#!/usr/bin/python3
"""stamp.py — copy stdin to stdout line by line, each line prefixed with the
wall-clock time it was read, in nanoseconds since the epoch ("NS LINE").

lockfs logs under -f without timestamps; the fault checker needs to know
when a mount declared a lock lost.  The stamp is this process's clock, the
real one: a host whose lockfs runs under faketime is still logged on the
test's single timeline.  Exits at end of input."""

import sys
import time


def main():
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    for line in inp:
        out.write(b"%d %s" % (time.time_ns(), line if line.endswith(b"\n") else line + b"\n"))
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
