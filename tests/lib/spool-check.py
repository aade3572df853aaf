#!/usr/bin/python3
"""spool-check.py DELIVERED MBOX... — every message a deliverer says it
delivered (one id a line in DELIVERED) is in exactly one of the MBOX files
(what movemail moved out, what is left in the spool), exactly once and whole;
nothing else is there.  Prints one summary line; exit 1 on any fault, with
the first faults on stderr."""
import re
import sys

delivered = [l.strip() for l in open(sys.argv[1]) if l.strip()]
want = set(delivered)
seen = {}
faults = []
for path in sys.argv[2:]:
    try:
        text = open(path, encoding="latin-1").read()
    except FileNotFoundError:
        continue
    # mbox: a message starts at a "From " line at the start of the file or
    # after a blank line.
    msgs = re.split(r"(?:^|\n\n)(?=From )", text)
    for m in msgs:
        if not m.strip():
            continue
        h = re.match(r"From (\S+)@spool ", m)
        if not h:
            faults.append(f"{path}: not a message: {m[:60]!r}")
            continue
        mid = h.group(1)
        body = [l for l in m.split("\n") if l.startswith(mid + " ")]
        whole = (
            f"Message-Id: <{mid}@spool>" in m
            and len(body) == 20
            and all(l == f"{mid} line {i}" for i, l in enumerate(body))
            and f"END {mid}" in m
        )
        if not whole:
            faults.append(f"{path}: torn message {mid}")
        seen[mid] = seen.get(mid, 0) + 1
dups = [m for m, c in seen.items() if c > 1]
lost = sorted(want - set(seen))
extra = sorted(set(seen) - want)
faults += [f"duplicated {m}" for m in dups] + [f"lost {m}" for m in lost]
faults += [f"never delivered, yet there: {m}" for m in extra]
print(
    f"delivered={len(delivered)} found={sum(seen.values())} lost={len(lost)} "
    f"duplicated={len(dups)} extra={len(extra)} faults={len(faults)}"
)
for f in faults[:20]:
    print(f, file=sys.stderr)
sys.exit(1 if faults or len(want) != len(delivered) else 0)
