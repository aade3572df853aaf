#!/usr/bin/python3
"""table.py — the figures of fault runs as a Markdown table, one row per
nemesis (by label) and backend, from check.py's JSON summaries.

  table.py summary-tinystore.json summary-ldap.json

A file's backend is taken from its name (summary-BACKEND.json), else its
position.  Columns: runs of the nemesis; critical sections that began during
it or within ttl + 2 s after; overlaps (count / longest ms); stale runs;
late or missing loss declarations (count / worst ms late); locks left
behind; of the locks held when it began, how many were declared lost; the
longest time from the fault's start (and, for a pause, from the resume) to a
declaration."""

import json
import os
import re
import sys


def cell(counts, worst, kind):
    n = counts.get(kind, 0)
    if not n:
        return "0"
    w = worst.get(kind)
    return f"{n} / {w:.0f} ms" if w else str(n)


def merge_label(a, b):
    out = dict(a)
    for k in ("runs", "sections", "held_at_fault", "lost"):
        if isinstance(a.get(k), int) and isinstance(b.get(k), int):
            out[k] = a[k] + b[k]
    out["counts"] = dict(a.get("counts", {}))
    for k, v in b.get("counts", {}).items():
        out["counts"][k] = out["counts"].get(k, 0) + v
    out["worst_ms"] = dict(a.get("worst_ms", {}))
    for k, v in b.get("worst_ms", {}).items():
        out["worst_ms"][k] = max(out["worst_ms"].get(k, 0), v)
    for k in ("fault_to_lost_max_ms", "resume_to_lost_max_ms", "inspect_max_ms"):
        xs = [x for x in (a.get(k), b.get(k)) if x is not None]
        out[k] = max(xs) if xs else None
    return out


def merge(a, b):
    """Two runs' summaries as one (a long run made of several)."""
    out = dict(a)
    for k in ("sections", "overlaps", "overlapping_pairs", "stale_runs", "fence_inversions",
              "late_losses", "janitor", "cut_locks", "cut_late_or_never", "lost", "breaks"):
        out[k] = a.get(k, 0) + b.get(k, 0)
    for k in ("longest_overlap_ms", "fault_to_lost_max_ms", "cut_fault_to_lost_max_ms"):
        out[k] = max(a.get(k, 0), b.get(k, 0))
    labels = dict(a.get("by_label", {}))
    for k, v in b.get("by_label", {}).items():
        labels[k] = merge_label(labels[k], v) if k in labels else v
    out["by_label"] = labels
    out["no_fault"] = merge_label(a.get("no_fault", {}), b.get("no_fault", {}))
    return out


def main():
    rows = []
    by_backend = {}
    for i, path in enumerate(sys.argv[1:]):
        m = re.search(r"summary-([a-z]+)[^/]*\.json$", path)
        backend = m.group(1) if m else f"#{i + 1}"
        with open(path) as fh:
            j = json.load(fh)
        by_backend[backend] = merge(by_backend[backend], j) if backend in by_backend else j
    totals = list(by_backend.items())
    for backend, j in totals:
        labels = dict(j.get("by_label", {}))
        labels["(no fault)"] = dict(j.get("no_fault", {}), runs="-", sections="-", held_at_fault=0,
                                    lost=0, fault_to_lost_max_ms=None, resume_to_lost_max_ms=None)
        for label in sorted(labels):
            o = labels[label]
            c, w = o.get("counts", {}), o.get("worst_ms", {})
            late = c.get("late_loss", 0) + c.get("missing_loss", 0)
            f2l = o.get("fault_to_lost_max_ms")
            r2l = o.get("resume_to_lost_max_ms")
            rows.append([backend, label, str(o.get("runs")), str(o.get("sections")),
                         cell(c, w, "overlap"), cell(c, w, "stale"),
                         (f"{late} / {w.get('late_loss', 0):.0f} ms" if c.get("late_loss") else str(late)),
                         str(c.get("left", 0)),
                         f"{o.get('lost', 0)}/{o.get('held_at_fault', 0)}" if o.get("held_at_fault") else "-",
                         "-" if f2l is None else f"{f2l}" + ("" if r2l is None or not label.startswith("pause")
                                                             else f" ({max(r2l, 0)} after resume)")])
    head = ["backend", "nemesis", "runs", "sections", "overlaps", "stale runs", "late/missing losses",
            "left behind", "lost/held", "fault→lost max ms"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    for backend, j in totals:
        print(f"- {backend}: {j['sections']} sections, {j.get('overlaps', 0)} overlaps "
              f"({j.get('overlapping_pairs', 0)} pairs, longest {j.get('longest_overlap_ms', 0)} ms), "
              f"{j['stale_runs']} stale runs, {j['fence_inversions']} fence inversions, "
              f"{j['late_losses']} late or missing losses, {j.get('janitor', 0)} locks left behind, "
              f"longest fault-to-lost {j['fault_to_lost_max_ms']} ms, "
              f"locks cut for a ttl declared late or never {j.get('cut_late_or_never', 0)} of "
              f"{j.get('cut_locks', 0)} (worst {j.get('cut_fault_to_lost_max_ms', 0)} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
