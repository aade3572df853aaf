#!/usr/bin/python3
"""check.py — the fault suite's checker: reads what the workload, the
nemeses and the mounts recorded under RUN (tests/faults/lib.sh) and decides.

  check.py RUN --ttl SECS [--inspect-ms MS] [--json FILE] [--strict]

Assertions (each a result line, see below):
  * no two critical sections overlapped in time, across all hosts and tools;
  * R.lock's fences grew in grant order (sections sorted by when their work
    began have strictly increasing fences);
  * no host ran a section after its lock was granted elsewhere: no section
    with a smaller fence was still working when one with a larger fence began;
  * every "lost" a mount declared came before the lock was granted elsewhere
    (R.lock: the next section's acquisition; side locks: a prober's grant),
    and a side lock granted to a prober had been declared lost by its owner
    (unless the owner's lockfs was killed meanwhile);
  * inspection (getfattr of fence and state) of a mount's own locks answered
    within --inspect-ms, except while that mount's lockfs was stopped;
  * after a fault on a link or the server, the mounts that lost locks declared
    it within ttl of the fault's start (their last renewal was sent before it;
    a cut link starts when the last of the host's proxies applied it, as its
    log says);
  * a restart of a host's lockfs (restart-holder) kept every lock the host
    held: none was granted to anyone else before its holder let it go, and
    none was declared lost (unless the restart took half a ttl or more).
Each violation is attributed to the nemesis active then (or within ttl + 2 s
after it ended), and printed with the sections, hosts, fences and times.

Output, one item a line, for tests/faults/run to turn into TAP:
  ok<TAB>DESCRIPTION / not ok<TAB>DESCRIPTION / diag<TAB>TEXT / note<TAB>TEXT
"""

import argparse
import bisect
import glob
import json
import os
import re
import sys
from collections import defaultdict

LOST_RE = re.compile(r"^(\d+) lockfs: warning: lost (\S+) \(fence (\d+), held by (\S+?):(-?\d+) ")
BREAK_RE = re.compile(r"^(\d+) lockfs: warning: (.*?) (\S+): held by (\S+) .*with fence (\d+), "
                      r"last heartbeat (-?\d+) s ago; broken by (.*)$")
GRANT_RE = re.compile(r"^(\d+) lockfs: info: granted (\S+) to (\S+?):(-?\d+) .*, fence (\d+)$")
EIO_RE = re.compile(r"^(\d+) lockfs: warning: cannot (take|release) (\S+)")

OUT = []


def emit(kind, text):
    OUT.append(f"{kind}\t{text}")


def ms(ns):
    return ns / 1e6


def fmt_t(ns, t0):
    """A time as seconds into the run."""
    return f"{(ns - t0) / 1e9:.3f}s"


class Section:
    __slots__ = ("id", "host", "tool", "fence", "t_try", "t_acq", "t_ws", "long", "attr_us",
                 "t_we", "how", "t_x", "t_k", "rc", "end_src", "res", "mode")

    def __init__(self, f):
        self.id, self.host, self.tool = f[1], f[2], f[3]
        self.fence = int(f[4]) if f[4].isdigit() else None
        self.t_try, self.t_acq, self.t_ws = int(f[5]), int(f[6]), int(f[7])
        self.long = f[8] == "1"
        self.attr_us = int(f[9]) if len(f) > 9 and f[9].isdigit() else 0
        # The resource (R.lock; flock:F, posix:P for the flock and fcntl
        # workers) and the mode (x exclusive, s shared).
        self.res = f[10] if len(f) > 10 and f[10] else "R.lock"
        self.mode = f[11] if len(f) > 11 and f[11] in ("x", "s") else "x"
        self.t_we = None
        self.how = None
        self.t_x = None
        self.t_k = None  # hold's SIGKILL was seen (K): the command was dead by then
        self.rc = None
        self.end_src = None

    @property
    def end(self):
        if self.t_we is not None:
            return self.t_we
        if self.t_k is not None and (self.t_x is None or self.t_k < self.t_x):
            return self.t_k
        return self.t_x

    def desc(self, t0):
        e = self.end
        return (f"{self.id} ({self.host}, {self.tool}"
                f"{'' if self.res == 'R.lock' else ' ' + self.res + (' shared' if self.mode == 's' else ' exclusive')}"
                f"{', long' if self.long else ''}, fence "
                f"{self.fence if self.fence is not None else '?'}, work {fmt_t(self.t_ws, t0)}.."
                f"{fmt_t(e, t0) if e else '?'}{'' if self.end_src == 'E' else ' [end: ' + str(self.end_src) + ']'}"
                f"{', ended ' + self.how if self.how and self.how != 'ok' else ''})")


class Nemesis:
    def __init__(self, f):
        self.id, self.name, self.target, self.t0, self.detail = f[1], f[2], f[3], int(f[4]), f[5]
        self.base = self.name.split(":")[0]
        self.t1 = None
        self.marks = []

    def label(self, t0):
        return f"#{self.id} {self.name} on {self.target} at {fmt_t(self.t0, t0)}"


def by_label(per):
    """The per-nemesis entries summed by label: runs, counts, worst amounts."""
    out = {}
    for p in per:
        o = out.setdefault(p["name"], {"runs": 0, "sections": 0, "held_at_fault": 0, "lost": 0,
                                       "counts": defaultdict(int), "worst_ms": defaultdict(float),
                                       "fault_to_lost_max_ms": None, "resume_to_lost_max_ms": None,
                                       "inspect_max_ms": None})
        o["runs"] += 1
        for k in ("sections", "held_at_fault", "lost"):
            o[k] += p[k]
        for k, v in p["counts"].items():
            o["counts"][k] += v
        for k, v in p["worst_ms"].items():
            o["worst_ms"][k] = max(o["worst_ms"][k], v)
        for k in ("fault_to_lost_max_ms", "resume_to_lost_max_ms", "inspect_max_ms"):
            if p[k] is not None:
                o[k] = p[k] if o[k] is None else max(o[k], p[k])
    for o in out.values():
        o["counts"] = dict(o["counts"])
        o["worst_ms"] = dict(o["worst_ms"])
    return out


KEY_RES_RE = re.compile(r"^\.lockfs/(flock|posix)(?:-sh)?/(.+?)(?://.*)?$")


def key_res(key):
    """The checker's resource of a lockfs key: .lockfs/flock/F and
    .lockfs/flock-sh/F//ID are flock:F, the posix ones posix:F; a lock
    name is itself."""
    m = KEY_RES_RE.match(key)
    return f"{m.group(1)}:{m.group(2)}" if m else key


def conflict(a, b):
    """Two sections exclude each other: the same resource, not both shared."""
    return a.res == b.res and (a.mode == "x" or b.mode == "x")


def read_tsv(path):
    try:
        with open(path, errors="replace") as fh:
            for line in fh:
                line = line.rstrip("\n")
                if line:
                    yield line.split("\t")
    except FileNotFoundError:
        return


def proxy_modes(run):
    """{host: [[(t_ns, mode), ...] per proxy]}: when each proxy of a host took
    each mode, from its log (proxy.py writes "NS mode M ..." the moment it
    applies a command)."""
    out = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(run, "*.proxy.log"))):
        host = os.path.basename(path).split(".")[0]
        seen = []
        with open(path, errors="replace") as f:
            for line in f:
                p = line.split()
                if len(p) >= 3 and p[1] == "mode" and p[0].isdigit():
                    seen.append((int(p[0]), p[2]))
        out[host].append(seen)
    return out


def cut_start(n, modes):
    """When nemesis N's cut of its host took effect: the last of the host's
    proxies to leave "forward" at or after N began (under load the control
    command reaches a proxy hundreds of ms after the nemesis is logged); N's
    start when a proxy log does not say."""
    if n.base not in ("partition-holder", "reset-holder") or not modes.get(n.target):
        return n.t0
    t_cut = n.t0
    for seen in modes[n.target]:
        t = next((t for t, m in seen if t >= n.t0 and m != "forward" and (n.t1 is None or t <= n.t1)), None)
        if t is None:
            return n.t0
        t_cut = max(t_cut, t)
    return t_cut


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--ttl", type=float, required=True)
    ap.add_argument("--inspect-ms", type=float, default=1000.0)
    ap.add_argument("--renew-reuse", type=float, default=0.0,
                    help="seconds: the backend answers a renewal from one sent up to this "
                         "long before (etcd's one keep-alive per mount, reused for a renew "
                         "interval; its server lease is that much longer): a cut's losses are "
                         "due within ttl plus this")
    ap.add_argument("--json")
    ap.add_argument("--history", help="write the sections as a history of acquire/release operations "
                                      "(one a line, tab-separated: client resource mode op call_ns "
                                      "return_ns fence section) for tests/faults/porcupine")
    ap.add_argument("--strict", action="store_true",
                    help="a violation under a nemesis fails; without it, it is a TODO")
    a = ap.parse_args()
    run = a.run
    ttl_ns = int(a.ttl * 1e9)
    after_ns = ttl_ns + 2_000_000_000  # a fault's effects are its own this long after it

    # ------------------------------------------------------------ load
    sections = {}
    aborted = []
    waits = []  # (wid, t_from, t_to, why): a worker waited for its mount to come back
    hold_x_only = 0
    acq_fail = defaultdict(int)  # (tool-ish wid suffix, rc, message) -> count
    acq_fail_at = []  # (t, host, wid, message), unexpected ones only
    for path in sorted(glob.glob(os.path.join(run, "w.*.log"))):
        xs, ks = {}, {}
        for f in read_tsv(path):
            try:
                if f[0] == "B":
                    sections[f[1]] = Section(f)
                elif f[0] == "E" and f[1] in sections:
                    s = sections[f[1]]
                    s.t_we, s.how, s.end_src = int(f[2]), f[3], "E"
                elif f[0] == "X":
                    xs[f[1]] = (int(f[2]), f[3], f[4] if len(f) > 4 else "")
                elif f[0] == "K":
                    ks[f[1]] = int(f[2])
                elif f[0] == "A":
                    aborted.append((f[1], int(f[2]), f[3]))
                elif f[0] == "W":
                    waits.append((f[1], int(f[2]), int(f[3]), f[4]))
                elif f[0] == "F":
                    msg = f[4] if len(f) > 4 else ""
                    acq_fail[(f[1].split("-")[-1], f[3], msg.split(": ")[-1])] += 1
                    if not re.search(r"Input/output error|Transport endpoint is not connected", msg):
                        acq_fail_at.append((int(f[2]), f[1].split("-")[0], f[1], msg))
            except (IndexError, ValueError):
                emit("diag", f"unreadable record in {os.path.basename(path)}: {f}")
        for i, (t, rc, rel) in xs.items():
            s = sections.get(i)
            if s is None:
                hold_x_only += 1
                continue
            s.t_x, s.rc = t, rc
            if s.t_we is None:
                s.end_src = "X (no E record: the command was killed?)"
        for i, t in ks.items():
            # hold sent SIGKILL before this (its stderr line was read then):
            # a section with no E record ended by then at the latest.
            s = sections.get(i)
            if s is not None and s.t_we is None and (s.t_x is None or t < s.t_x):
                s.t_k = t
                s.end_src = "K (hold's SIGKILL, seen on its stderr; no E record)"
    nemeses = {}
    for f in read_tsv(os.path.join(run, "nemesis.log")):
        if f[0] == "N+":
            nemeses[f[1]] = Nemesis(f)
        elif f[0] == "N-" and f[1] in nemeses:
            nemeses[f[1]].t1 = int(f[2])
        elif f[0] == "N=" and f[1] in nemeses:
            nemeses[f[1]].marks.append((int(f[2]), f[3]))
    nems = sorted(nemeses.values(), key=lambda n: n.t0)
    modes = proxy_modes(run)
    mounts = []  # (host, pid, log, t_start)
    for f in read_tsv(os.path.join(run, "hosts.tsv")):
        mounts.append((f[0], f[1], f[2], int(f[3])))
    lost = []  # (t, host, key, fence, why)
    breaks = []
    eio = defaultdict(int)
    granted_at = {}  # (host, key, fence) -> t of its "granted" log line
    for host, pid, logpath, _ in mounts:
        try:
            fh = open(logpath, errors="replace")
        except FileNotFoundError:
            emit("diag", f"missing lockfs log {logpath} of {host}")
            continue
        with fh:
            for line in fh:
                m = LOST_RE.match(line)
                if m:
                    lost.append((int(m.group(1)), host, m.group(2), int(m.group(3)),
                                 line.split("): ", 1)[-1].strip()))
                    continue
                m = BREAK_RE.match(line)
                if m:
                    breaks.append((int(m.group(1)), host, m.group(3), m.group(4), int(m.group(5)),
                                   int(m.group(6)), m.group(2)))
                    continue
                m = EIO_RE.match(line)
                if m:
                    eio[host] += 1
                    continue
                m = GRANT_RE.match(line)
                if m:
                    granted_at[(host, m.group(2), int(m.group(5)))] = int(m.group(1))
    takes = defaultdict(list)  # side key -> [(t, host, fence, kind)]
    slow_inspect = []  # (t, host, key, us)
    released = defaultdict(list)  # (host, side key) -> times its keeper let it go
    janitor = []  # (t, host, fence, pid)
    for path in glob.glob(os.path.join(run, "k.*.log")):
        host = os.path.basename(path)[2:-4]
        for f in read_tsv(path):
            if f[0] == "T" and f[2].isdigit():
                takes[f[1]].append((int(f[3]), host, int(f[2]), "T"))
            elif f[0] == "Q":
                slow_inspect.append((int(f[2]), host, f[1], int(f[3])))
            elif f[0] == "R":
                released[(host, f[1])].append(int(f[2]))
            elif f[0] == "W":
                waits.append((f[1], int(f[2]), int(f[3]), f[4]))
            elif f[0] == "J":
                janitor.append((int(f[2]), host, f[3], f[4], len(f) > 5 and f[5] == "1",
                                int(f[6]) if len(f) > 6 and f[6].isdigit() else None,
                                f[7] if len(f) > 7 else "lost"))
            elif f[0] == "F":
                pass
    for path in glob.glob(os.path.join(run, "p.*.log")):
        for f in read_tsv(path):
            if f[0] == "G" and f[3].isdigit():
                takes[f[1]].append((int(f[5]), f[2], int(f[3]), "G"))
            elif f[0] == "W":
                waits.append((f[1], int(f[2]), int(f[3]), f[4]))
    for s in sections.values():
        if s.attr_us > a.inspect_ms * 1000:
            slow_inspect.append((s.t_ws, s.host, "R.lock", s.attr_us))

    all_t = [s.t_ws for s in sections.values()] + [n.t0 for n in nems]
    t0 = min(all_t) if all_t else 0
    t_end = max([s.end or s.t_ws for s in sections.values()] + [n.t1 or n.t0 for n in nems] + [t0])

    def nemesis_at(t):
        """The nemesis whose fault (or its aftermath) covers time t."""
        best = None
        for n in nems:
            end = (n.t1 or t_end) + after_ns
            if n.t0 <= t <= end:
                best = n  # the latest one started wins
        return best

    def where(t):
        n = nemesis_at(t)
        if n is None:
            return "no fault active"
        if n.t1 is not None and t > n.t1:
            return f"{n.label(t0)}, {ms(t - n.t1):.0f} ms after it ended"
        return f"during {n.label(t0)}"

    # violations by nemesis name ("" for none)
    viol = defaultdict(list)

    other = defaultdict(list)  # "left" / "slow" -> [text]: not safety, listed apart
    viol_kinds = defaultdict(set)  # nemesis name -> the kinds of its violations

    # Per nemesis id ("" for none): counts of each kind and the worst amount.
    tally = defaultdict(lambda: defaultdict(int))
    worst_amt = defaultdict(lambda: defaultdict(float))

    def add(t, text, cat=None, kind=None, amount_ms=None, nem=None):
        # NEM: the nemesis it belongs to, whenever it happened (else by time).
        n = nem or nemesis_at(t)
        k = n.id if n else ""
        kind = kind or cat
        if kind:
            tally[k][kind] += 1
            if amount_ms is not None:
                worst_amt[k][kind] = max(worst_amt[k][kind], amount_ms)
        w = where(t) if nem is None or nemesis_at(t) is nem else f"{ms(t - nem.t0):.0f} ms after {nem.label(t0)} began"
        if cat:
            other[cat].append(f"{text} [{w}]")
        else:
            viol[n.name if n else ""].append(f"{text} [{w}]")
            viol_kinds[n.name if n else ""].add(kind)

    # ------------------------------------------------------------ sections
    secs = sorted(sections.values(), key=lambda s: s.t_ws)
    no_end = [s for s in secs if s.end is None]
    for s in no_end:
        s.end_src = "none (worker gone): taken as the end of the run"
        s.t_x = t_end
    hosts = sorted({s.host for s in secs})
    by_host = defaultdict(int)
    for s in secs:
        by_host[s.host] += 1

    # Overlaps: every pair whose work intervals intersect.
    overlaps = []
    active = []
    for s in secs:
        active = [p for p in active if p.end > s.t_ws]
        for p in active:
            # Shared sections of one resource may overlap each other, never
            # an exclusive one; different resources never conflict.
            if conflict(p, s):
                overlaps.append((p, s, min(p.end, s.end) - s.t_ws))
        active.append(s)
    # One line per section that others overlapped: a long one may overlap
    # many short ones.
    by_first = defaultdict(list)
    spans = []
    for p, s, ov in overlaps:
        by_first[p.id].append((p, s, ov))
    for pid, lst in by_first.items():
        p = lst[0][0]
        first_s = min((s for _, s, _ in lst), key=lambda s: s.t_ws)
        span = min(p.end, max(s.end for _, s, _ in lst)) - first_s.t_ws
        others = sorted({s.host for _, s, _ in lst})
        spans.append(span)
        if len(lst) == 1:
            add(first_s.t_ws, f"overlap of {ms(lst[0][2]):.1f} ms: {p.desc(t0)} and {first_s.desc(t0)}",
                kind="overlap", amount_ms=ms(lst[0][2]))
        else:
            add(first_s.t_ws, f"overlap for {ms(span):.1f} ms: {p.desc(t0)} was still working while "
                              f"{len(lst)} sections (on {', '.join(others)}) ran, the first "
                              f"{first_s.desc(t0)}", kind="overlap", amount_ms=ms(span))

    # Fence order, in the order the work began.
    # Per resource: an exclusive section's fence is larger than every
    # earlier section's, a shared one's larger than every earlier exclusive
    # one's (shared sections are not ordered among themselves).
    fenced_all = [s for s in secs if s.fence is not None]
    inversions = []
    top_all, top_x = {}, {}  # resource -> the section with the largest fence so far (any, exclusive)
    for s in fenced_all:
        p = top_all.get(s.res) if s.mode == "x" else top_x.get(s.res)
        if p is not None and s.fence <= p.fence:
            inversions.append((p, s))
            add(s.t_ws, f"fence order: {s.desc(t0)} began after {p.desc(t0)} with a fence not larger",
                kind="inversion")
        if s.res not in top_all or s.fence > top_all[s.res].fence:
            top_all[s.res] = s
        if s.mode == "x" and (s.res not in top_x or s.fence > top_x[s.res].fence):
            top_x[s.res] = s
    # R.lock's sections (all exclusive), for what follows.
    fenced = [s for s in fenced_all if s.res == "R.lock"]

    # Stale runs: S still working when a section with a larger fence began
    # (per resource, among its exclusive sections: a shared one working when
    # an exclusive one began is an overlap).
    stale = []
    for res in sorted({s.res for s in fenced_all}):
        by_fence_r = sorted((s for s in fenced_all if s.res == res and s.mode == "x"), key=lambda s: s.fence)
        suffix_min = [None] * len(by_fence_r)
        best = None
        for i in range(len(by_fence_r) - 1, -1, -1):
            suffix_min[i] = best
            s = by_fence_r[i]
            if best is None or s.t_ws < best.t_ws:
                best = s
        for i, s in enumerate(by_fence_r):
            nxt = suffix_min[i]
            # The first later grant of a larger fence; equal fences are inversions.
            if nxt is not None and nxt.fence > s.fence and nxt.t_ws < s.end:
                stale.append((s, nxt, s.end - nxt.t_ws))
                add(nxt.t_ws, f"stale run: {s.desc(t0)} kept working {ms(s.end - nxt.t_ws):.1f} ms after "
                              f"{nxt.desc(t0)} was granted {res}", kind="stale", amount_ms=ms(s.end - nxt.t_ws))
    by_fence = sorted(fenced, key=lambda s: s.fence)
    dup = defaultdict(list)
    for s in fenced_all:
        dup[(s.res, s.fence)].append(s)
    dups = [v for v in dup.values() if len(v) > 1]

    # ------------------------------------------------------------ lost vs granted elsewhere
    late = []
    restarts = defaultdict(list)  # host -> mount start times (after its first)
    first = {}
    for host, pid, logpath, ts in mounts:
        if host in first:
            restarts[host].append(ts)
        else:
            first[host] = ts
    killed = defaultdict(list)  # host -> times its lockfs was killed
    for n in nems:
        if n.base == "kill-holder":
            killed[n.target].append(n.t0)

    def died_between(host, ta, tb):
        return any(ta <= t <= tb for t in killed[host])

    paused = defaultdict(list)  # host -> [(t0, t1)] its lockfs was stopped
    for n in nems:
        if n.base == "pause-holder":
            paused[n.target].append((n.t0, n.t1 or t_end))

    def paused_at(host, t):
        for p0, p1 in paused[host]:
            if p0 <= t <= p1:
                return p1
        return None

    lost_of = defaultdict(list)  # (key, fence) -> [(t, host)]
    for t, host, key, fence, why in lost:
        lost_of[(key, fence)].append((t, host))
        if key_res(key) != key:
            lost_of[(key_res(key), fence)].append((t, host))
    resumed = []  # (host, key, ms from resume to the declaration): a stopped lockfs
    # declares nothing; it must do so at once when it runs again

    def judge_late(key, phost, pfence, t_l, host, fence, t_g, extra=""):
        """A grant to HOST at t_g of KEY that PHOST held with PFENCE, which PHOST
        declared lost at t_l (None: never)."""
        p1 = paused_at(phost, t_g)
        if t_l is not None and t_l <= t_g:
            return
        if p1 is not None and t_l is not None and t_l <= p1 + 1_500_000_000:
            resumed.append((phost, key, t_l - p1))
            return
        late.append((key, phost, pfence, t_l, host, fence, t_g))
        if t_l is None:
            add(t_g, f"no loss declared: {host} was granted {key} (fence {fence}{extra}) at {fmt_t(t_g, t0)} "
                     f"while its holder {phost} (fence {pfence}) never declared it lost", kind="missing_loss")
        else:
            add(t_g, f"late loss: {phost} declared {key} (fence {pfence}) lost at {fmt_t(t_l, t0)}, "
                     f"{ms(t_l - t_g):.0f} ms after {host} was granted it (fence {fence}{extra}) at "
                     f"{fmt_t(t_g, t0)}{' (its lockfs was stopped then, and ran again at ' + fmt_t(p1, t0) + ')' if p1 else ''}",
                kind="late_loss", amount_ms=ms(t_l - t_g))

    # R.lock: a lost declaration later than the next grant.  The next grant
    # is the next larger fence shown to a section; but a fence never shown
    # (LDAP: not yet confirmed, so perhaps from an old block, smaller than
    # the last holder's) says nothing of order: then it is the first section
    # that began after the lost lock's grant was logged.
    fence_keys = [s.fence for s in by_fence]
    shown = set(fence_keys)
    for t, host, key, fence, why in lost:
        if key != "R.lock":
            continue
        tg = granted_at.get((host, key, fence))
        if fence not in shown and tg is not None:
            after = [s for s in by_fence if s.t_acq > tg]
            if not after:
                continue
            nxt = min(after, key=lambda s: s.t_acq)
        else:
            i = bisect.bisect_right(fence_keys, fence)
            if i >= len(by_fence):
                continue
            nxt = by_fence[i]
        judge_late("R.lock", host, fence, t, nxt.host, nxt.fence, nxt.t_acq, f", section {nxt.id}")
    # flock and POSIX locks: a loss declared after the next conflicting
    # section (a larger fence; exclusive, or any after an exclusive one) was
    # granted.
    for t, host, key, fence, why in lost:
        res = key_res(key)
        if res == key:
            continue
        mine = [s for s in fenced_all if s.res == res and s.host == host and s.fence == fence]
        if not mine:
            continue
        s0 = mine[0]
        later = [s for s in fenced_all if s.fence > fence and conflict(s, s0) and s.t_acq > s0.t_acq]
        if not later:
            continue
        nxt = min(later, key=lambda s: s.t_acq)
        judge_late(key, host, fence, t, nxt.host, nxt.fence, nxt.t_acq, f", section {nxt.id}")
    # Side locks: every prober grant against the owner's previous take.
    side_grants = 0
    for key, evs in takes.items():
        evs.sort(key=lambda e: e[2])
        for i, (t, host, fence, kind) in enumerate(evs):
            if kind != "G":
                continue
            side_grants += 1
            prev = evs[i - 1] if i > 0 else None
            if prev is None or prev[3] != "T":
                continue
            pt, phost, pfence, _ = prev
            if died_between(phost, pt, t):
                continue
            if any(pt <= rt <= t for rt in released.get((phost, key), [])):
                continue
            decl = [lt for lt, lh in lost_of.get((key, pfence), []) if lh == phost]
            judge_late(key, phost, pfence, min(decl) if decl else None, host, fence, t)

    # R.lock left lost on a mount by a lockfsctl hold that had exited.
    for t, host, fence, pid, hold, lost_ms, state in janitor:
        since = t - (lost_ms or 0) * 1_000_000
        why = [x for x in acq_fail_at if x[1] == host and since - 2_000_000_000 <= x[0] <= since + 500_000_000]
        who = (f"lockfsctl hold pid {pid}, exited without unlinking it" if hold else
               f"pid {pid}, never unlinked it (no worker held or was taking it: the tool's "
               f"acquisition failed after the grant, so it took it for a failure; with set -C "
               f"that is bash's noclobber path for a name that is not a regular file, i.e. a "
               f"mkdir lock: stat, then open without O_EXCL, which took the freed name, then "
               f"fstat, a regular file, so 'cannot overwrite existing file'"
               f"{'; ' + why[-1][2] + ' at ' + fmt_t(why[-1][0], t0) + ': ' + why[-1][3][-90:] if why else ''})")
        add(t - (lost_ms or 0) * 1_000_000, f"left behind: R.lock (fence {fence}) stayed {state} on {host}"
               f"{' for ' + format(lost_ms / 1000, '.1f') + ' s' if lost_ms is not None else ''} after its holder, "
               f"{who}: nothing on {host} could take R.lock until the keeper unlinked it",
            "left" if hold else "orphan")

    # ------------------------------------------------------------ inspection
    slow = []
    for t, host, key, us in slow_inspect:
        n = nemesis_at(t)
        # A stopped or killed lockfs answers nothing: not an inspection bug.
        if n and n.base in ("pause-holder", "kill-holder", "restart-holder") and n.target == host and \
                n.t0 - 1e9 <= t <= (n.t1 or t_end) + 1e9 + us * 1000:
            continue
        if us > a.inspect_ms * 1000:
            slow.append((t, host, key, us))
            add(t, f"slow inspection: getfattr of {host}'s own {key} took {us / 1000:.0f} ms", "slow",
                amount_ms=us / 1000)

    # ------------------------------------------------------------ per nemesis
    # Which locks each host held at a time t: side locks by its keeper's
    # records, R.lock by the sections.
    side_ev = defaultdict(list)  # (host, key) -> [(t, 'T'|'L'|'R', fence)]
    for key, evs in takes.items():
        for t, host, fence, kind in evs:
            if kind == "T":
                side_ev[(host, key)].append((t, "T", fence))
    for path in glob.glob(os.path.join(run, "k.*.log")):
        host = os.path.basename(path)[2:-4]
        for f in read_tsv(path):
            if f[0] in ("L", "R"):
                side_ev[(host, f[1])].append((int(f[2]), f[0], None))
    for v in side_ev.values():
        v.sort(key=lambda e: e[0])

    by_acq = sorted(secs, key=lambda s: s.t_acq)
    acq_keys = [s.t_acq for s in by_acq]

    def declared_by(host, key, fence, t):
        return any(lt <= t for lt, lh in lost_of.get((key, fence), []) if lh == host)

    def held_at(host, t):
        out = []
        for (h, key), evs in side_ev.items():
            if h != host:
                continue
            cur = t_cur = None
            for et, kind, fence in evs:
                if et > t:
                    break
                cur, t_cur = (fence, et) if kind == "T" else (None, None)
            # A lock its mount had declared lost by T was no longer held
            # then, whatever the keeper had yet to notice; nor one whose
            # lockfs was killed since (kill-holder: its successor starts
            # with a fresh state_dir and has no loss to declare).
            # (Killed before T, not at it: a kill-holder's own moment still
            # sees what it cut.)
            if cur is not None and not declared_by(host, key, cur, t) and \
                    not died_between(host, t_cur, t - 1):
                out.append((key, cur))
        # Sections that began before t, the latest first; none is longer
        # than a minute.
        i = bisect.bisect_right(acq_keys, t)
        while i > 0:
            i -= 1
            s = by_acq[i]
            if s.t_acq < t - 60_000_000_000:
                break
            # R.lock is held until its release returned (an rm is the
            # release); a flock or POSIX lock until its work ended: the
            # unlock follows at once, and lockfs does not declare lost a lock
            # its owner let go while the server did not answer.
            held_until = (s.t_x or s.end or t_end) if s.res == "R.lock" else (s.end or t_end)
            if s.host == host and s.fence is not None and t < held_until and \
                    not declared_by(host, s.res, s.fence, t) and not died_between(host, s.t_acq, t - 1):
                out.append((s.res, s.fence))
        return out

    # ------------------------------------------------------------ restarts
    # restart-holder: lockfs of the target stopped (SIGTERM or kill -9) and
    # started again with its state_dir while it held R.lock (a long section)
    # and its side locks.  Each lock held then must stay the host's until
    # its holder is done with it: R.lock until the holding section's work
    # ended (its release comes after; a grant elsewhere before the end is
    # an overlap too), a side lock until its keeper finds it not held (L)
    # or lets it go (R).
    # A grant of it to anyone else before that is a second holder; a loss
    # declared means the restart did not keep it (excused when the restart
    # took half a ttl or more: the lease may have run out meanwhile).
    def mark_ms(n, word):
        for t, text in n.marks:
            if text.startswith(word + " "):
                try:
                    return float(text.split()[1])
                except (IndexError, ValueError):
                    return None
        return None

    restart_stats = {}  # nemesis id -> dict
    side_l = defaultdict(list)  # (host, side key) -> [(t, state)]: its keeper found it not held
    for path in glob.glob(os.path.join(run, "k.*.log")):
        kh = os.path.basename(path)[2:-4]
        for f in read_tsv(path):
            if f[0] == "L" and len(f) > 3:
                side_l[(kh, f[1])].append((int(f[2]), f[3]))
    refused_re = re.compile(r"^(\d+) lockfs: warning: the record of (\S+) in .* not taken back")
    for n in nems:
        if n.base != "restart-holder":
            continue
        h = n.target
        w_end = (n.t1 or t_end) + after_ns
        serving = mark_ms(n, "serving")
        if serving is None:
            # No new mount (the run said why): its locks are nobody's to keep.
            emit("note", f"{n.label(t0)}: no new lockfs served the mount; its locks not judged")
            continue
        slow_restart = serving >= a.ttl * 500
        # What the new lockfs said it did not take back.
        refused = {}
        new_mounts = sorted((ts, lp) for mh, _, lp, ts in mounts if mh == h and ts >= n.t0)
        if new_mounts:
            try:
                with open(new_mounts[0][1], errors="replace") as fh:
                    for line in fh:
                        m = refused_re.match(line)
                        if m:
                            refused[m.group(2)] = line.split(" ", 1)[1].strip()
            except FileNotFoundError:
                pass
        held = held_at(h, n.t0)
        next_t0 = min((m.t0 for m in nems if m.t0 > n.t0), default=t_end + after_ns)
        st = {"held": len(held), "kept": 0, "granted_elsewhere": 0, "lost": 0, "not_kept": 0,
              "refused": len(refused), "stopped_ms": mark_ms(n, "stopped"), "serving_ms": serving}

        # When the new lockfs served: the time of the mark (its ms count
        # is from the stop, which came after parking the host's workers).
        t_serving = next((t for t, text in n.marks if text.startswith("serving ")), n.t0 + serving * 1e6)

        def hold_stopped_in_time(s):
            # lockfsctl hold stops its command once the lease the mount last
            # reported could run out within a fifth of ttl (ctl_hold.c): a
            # command it stopped before the new lockfs served had a lease
            # that could run out in the gap, counted from the last renewal
            # before the stop -- up to a renew interval (ttl/3, the
            # default) earlier, a quarter of one more on a loaded machine --
            # not from the stop.  What hold promises; nobody was granted it
            # (that is judged apart).
            return (s is not None and s.how == "term" and s.end is not None and s.end < t_serving
                    and serving + a.ttl * 1000 / 3 * 1.25 >= a.ttl * 800)

        def not_kept(t, text, s=None):
            st["not_kept"] += 1
            if slow_restart:
                emit("note", text + f" [{n.label(t0)}: the restart took half a ttl or more, excused]")
            elif hold_stopped_in_time(s):
                emit("note", text + f" [{n.label(t0)}: hold stopped its command before the new lockfs "
                                    f"served, {serving:.0f} ms after the stop: its lease could run out "
                                    f"counted from the last renewal, excused]")
            else:
                add(t, text, kind="restart", nem=n)

        for key, fence in held:
            bad = False
            if key != key_res(key) or ":" in key:
                # A flock or POSIX lock (issue 28): its descriptor is the old
                # mount's; a restart does not keep it (not in the schedules).
                continue
            if key == "R.lock":
                mine = [s for s in secs if s.res == "R.lock" and s.host == h and s.fence == fence and s.t_acq <= n.t0]
                until = max((s.end or t_end) for s in mine) if mine else t_end
                others = [(s.t_acq, s.host, s.fence, f"section {s.id}") for s in secs
                          if s.res == "R.lock" and s.fence != fence and n.t0 <= s.t_acq < until]
                # Its holder rode the restart: a check that failed after it
                # (the lock not taken back, a heartbeat refused) is a lock the
                # restart did not keep.
                for s in mine:
                    # lost, gap (legacy), term (hold stopped its command), or
                    # no end record at all.
                    if s.how != "ok" and n.t0 <= (s.end or t_end) <= w_end:
                        bad = True
                        not_kept(s.end, f"restart did not keep {key} (fence {fence}): its holder's check "
                                        f"failed after the restart, {s.desc(t0)}", s)
            else:
                evs = [t for t, kind, _ in side_ev.get((h, key), []) if kind in ("L", "R") and t > n.t0]
                # Kept until its keeper found it gone or let it go, and no
                # longer than until the next fault began: what that one did
                # to it is that one's (a restart followed by a pause of the
                # same host: the pause's losses are not the restart's).
                until = min(min(evs) if evs else t_end, next_t0)
                others = [(t, th, tf, "a prober") for t, th, tf, kind in takes.get(key, [])
                          if kind == "G" and th != h and n.t0 <= t < until]
                for t, state in side_l.get((h, key), []):
                    if n.t0 < t <= w_end and t <= until:
                        bad = True
                        not_kept(t, f"restart did not keep {key} (fence {fence}): {h}'s keeper found it "
                                    f"{state} at {fmt_t(t, t0)}")
            if key in refused:
                bad = True
                not_kept(n.t0, f"restart did not keep {key} (fence {fence}): {refused[key][:200]}")
            for t, bh, bkey, prev, pfence, age, what in breaks:
                if bkey == key and pfence == fence and n.t0 <= t <= w_end:
                    bad = True
                    not_kept(t, f"restart did not keep {key} (fence {fence}): {bh} {what} it at {fmt_t(t, t0)}")
            decl = [t for t, lh in lost_of.get((key, fence), [])
                    if lh == h and n.t0 <= t <= min(max(until, w_end), next_t0)]
            # After a loss declared (a slow restart), a grant is no second holder.
            others = [o for o in others if not (decl and min(decl) <= o[0])]
            # The first grant is the second holder; later ones add nothing.
            others = sorted(others)[:1]
            for t, th, tf, who in others:
                st["granted_elsewhere"] += 1
                add(t, f"restart let a second holder in: {th} ({who}) was granted {key} (fence {tf}) at "
                       f"{fmt_t(t, t0)} while {h} still held it (fence {fence}) through the restart of its "
                       f"lockfs at {fmt_t(n.t0, t0)}, until {fmt_t(until, t0)}", kind="restart", nem=n)
            if decl:
                st["lost"] += 1
                bad = True
                not_kept(min(decl), f"restart lost a lock: {h} declared {key} (fence {fence}) lost at "
                                    f"{fmt_t(min(decl), t0)}, after the restart of its lockfs at "
                                    f"{fmt_t(n.t0, t0)} (new mount serving {serving:.0f} ms after the stop)")
            if not bad and not others:
                st["kept"] += 1
        restart_stats[n.id] = st

    lock_sec = {(s.res, s.fence): s for s in fenced_all}
    fault_lost = []  # (nemesis, delay_ns from fault start, host, key)
    cut = []  # (nemesis, host, key, fence, delay_ns or None)
    per = []
    for n in nems:
        w_end = (n.t1 or t_end) + after_ns
        affected = sorted(first) if n.target == "server" else [n.target]
        # The locks the affected hosts held when the fault began, and when
        # (if at all, within the fault and ttl + 2 s after it) each was
        # declared lost by its holder.
        held = []
        for h in affected:
            for key, fence in held_at(h, n.t0):
                d = [t for t, lh in lost_of.get((key, fence), []) if lh == h and n.t0 <= t <= w_end]
                held.append((h, key, fence, min(d) if d else None))
        declared = [x for x in held if x[3] is not None]
        delays = [t - n.t0 for h, k, f, t in declared]
        cont_delays = [t - n.t1 for h, k, f, t in declared if n.t1]
        for h, k, f, t in declared:
            fault_lost.append((n, t - n.t0, h, k))
        # A fault that cut hosts off from the server for a whole ttl: each lock
        # they held when it began must be declared lost within ttl of it (its
        # last renewal was sent before).
        t_cut = cut_start(n, modes)
        down = (n.marks[0][0] if n.base == "server-kill" and n.marks else (n.t1 or t_end)) - t_cut
        if n.base in ("partition-holder", "reset-holder", "server-pause", "server-kill") and down >= ttl_ns:
            for h, key, fence, t in held:
                # A lock whose owner let it go before it could be lost has no
                # loss to declare: a flock or POSIX lock once its work ended
                # well (lockfs releases it whenever the server answers), R.lock
                # once its release began, if that release returned 0 (seen
                # once the flock and fcntl holders were hit: the fault then
                # begins while a short section of R.lock may be ending).  An
                # unlink lockfs cannot send lets the lock go, lost to nobody,
                # and may itself return only after the cut: in the etcd long
                # run of session 27 an rm began 74 ms before the cut took
                # effect and returned 0 5.2 s later.
                s_own = lock_sec.get((key, fence))
                if t is None and s_own is not None and s_own.how == "ok":
                    let_go = s_own.end if s_own.res != "R.lock" or s_own.rc == "0" else None
                    if let_go is not None and let_go < n.t0 + ttl_ns:
                        continue
                cut.append((n, h, key, fence, t - t_cut if t is not None else None, t_cut - n.t0))
        insp = [us for t, h, k, us in slow_inspect if n.t0 <= t <= w_end]
        in_win = [s for s in secs if n.t0 <= s.t_ws <= w_end]
        per.append({
            "id": n.id, "name": n.name, "target": n.target, "detail": n.detail,
            "start_s": round((n.t0 - t0) / 1e9, 3),
            "duration_ms": round(ms((n.t1 or t_end) - n.t0)),
            "sections": len(in_win),
            "held_at_fault": len(held),
            "lost": len(declared),
            "fault_to_lost_max_ms": round(ms(max(delays))) if delays else None,
            "resume_to_lost_max_ms": round(ms(max(cont_delays))) if cont_delays else None,
            "violations": sum(1 for x in viol.get(n.name, []) if f"#{n.id} " in x),
            "left_behind": sum(1 for x in other.get("left", []) if f"#{n.id} " in x),
            "counts": dict(tally.get(n.id, {})),
            "worst_ms": {k: round(v, 1) for k, v in worst_amt.get(n.id, {}).items()},
            "inspect_max_ms": round(max(insp) / 1000) if insp else None,
            "restart_ns": (n.marks[0][0] - n.t0) if n.base.startswith("server-kill") and n.marks else None,
            "lockfs_restart": restart_stats.get(n.id),
        })

    # ------------------------------------------------------------ results
    def name_checks(name, label):
        v = viol.get(name, [])
        # Two holders at once (overlap, a stale run, fences out of order)
        # fail always; a loss declared late under a nemesis, what the suite
        # still finds now and then on a loaded machine, is shown, not
        # counted (--strict counts it).
        if v and name and not a.strict and not (viol_kinds[name] & {"overlap", "stale", "inversion", "restart"}):
            emit("todo", f"{label}: no overlap, stale run, fence inversion, late or missing loss "
                         f"({len(v)} found)\x1fa loss declared late or not at all, never two holders: seen "
                         f"now and then on a loaded machine (docs/faults.md); FAULTS_STRICT=1 fails on it")
            for line in v[:40]:
                emit("diag", "  " + line)
        elif v:
            emit("not ok", f"{label}: no overlap, stale run, fence inversion, late or missing loss "
                           f"({len(v)} found)")
            for line in v[:40]:
                emit("diag", "  " + line)
            if len(v) > 40:
                emit("diag", f"  ... and {len(v) - 40} more")
        else:
            emit("ok", f"{label}: no overlap, stale run, fence inversion, late or missing loss")

    emit("note", f"{len(secs)} critical sections on {len(hosts)} hosts "
                 f"({', '.join(f'{h} {by_host[h]}' for h in hosts)}); "
                 f"{sum(1 for s in secs if s.long)} long; {len(aborted)} taken but found not held; "
                 f"{sum(1 for s in secs if s.how and s.how not in ('ok', 'gap'))} ended by a loss "
                 f"(heartbeat failed / hold stopped the command); "
                 f"{sum(1 for s in secs if s.how == 'gap')} ended while their mount was away (unconfirmed); "
                 f"{side_grants} side-lock grants to probers; "
                 f"{len(lost)} lost declarations; {len(breaks)} breaks")
    if len(secs) > 0 and all(by_host[h] > 0 for h in first):
        emit("ok", f"the workload ran: {len(secs)} critical sections on every host")
    else:
        emit("not ok", f"the workload ran on every host ({dict(by_host)}, hosts {sorted(first)})")
    name_checks("", "with no fault active")
    for name in sorted({n.name for n in nems}):
        cnt = sum(1 for n in nems if n.name == name)
        name_checks(name, f"{name} ({cnt}x)")
    for cat, good, bad in (
            ("left", "no lock was left behind, lost or held, on a mount by a holder that cannot know "
                     "it must unlink it", "locks left behind on a mount by a holder that cannot know it "
                     "must unlink it"),
            ("slow", f"inspection of a mount's own locks (getfattr) answered within {a.inspect_ms:g} ms, "
                     f"except while its lockfs was stopped", f"inspections of a mount's own locks slower "
                     f"than {a.inspect_ms:g} ms")):
        v = other.get(cat, [])
        if v:
            emit("not ok", f"{good} ({len(v)} {bad})")
            for line in v[:20]:
                emit("diag", "  " + line)
            if len(v) > 20:
                emit("diag", f"  ... and {len(v) - 20} more")
        else:
            emit("ok", good)
    # A legacy tool's acquisition whose answer was lost (the server died
    # while it answered): the backend's entry stays until its lease or
    # dynamic-entry ttl ends, and lockfs does not yet clean it up.
    orphans = other.get("orphan", [])
    good = "no lock was left behind by a legacy tool's acquisition whose answer was lost"
    if orphans:
        emit("todo", f"{good} ({len(orphans)} left)\x1flockfs does not yet remove an entry whose "
                     f"grant's answer was lost; it lasts until its lease runs out")
        for line in orphans[:20]:
            emit("diag", "  " + line)
    else:
        emit("ok", good)
    emit("note", f"totals: {len(overlaps)} overlapping pairs of sections, in {len(spans)} overlaps "
                 f"(longest {ms(max(spans, default=0)):.1f} ms), {len(stale)} stale runs, "
                 f"{len(inversions)} fence inversions, {len(dups)} fences shown to two sections, "
                 f"{len(late)} late or missing loss declarations, {len(slow)} slow inspections")

    # Lost within ttl of a fault that cut hosts off for a whole ttl.
    if cut:
        due_ns = ttl_ns + int(a.renew_reuse * 1e9)
        within = f"ttl ({a.ttl:g}s)" + (f" + the keep-alive's reuse ({a.renew_reuse:g}s)" if a.renew_reuse else "")
        bad = [c for c in cut if c[4] is None or c[4] > due_ns]
        worst = max((c[4] for c in cut if c[4] is not None), default=0)
        never = [c for c in bad if c[4] is None]
        if bad and not never and not a.strict:
            # Late by a little on a loaded machine: shown (worst in the line),
            # a failure only with --strict.
            emit("todo", f"every lock held when a link or the server was cut for a whole ttl was "
                         f"declared lost within {within}: {len(bad)} of {len(cut)} late, "
                         f"worst {ms(worst):.0f} ms\x1fissue 10 is open: the renew round's tick is "
                         f"late on a loaded machine; FAULTS_STRICT=1 fails on it")
            for n, h, key, fence, d, lag in sorted(bad, key=lambda c: -(c[4] or 1e18))[:20]:
                emit("diag", f"  {h} declared {key} (fence {fence}) lost {ms(d):.0f} ms after {n.label(t0)} "
                             f"cut in{f' ({ms(lag):.0f} ms after it began)' if lag else ''}")
        elif bad:
            emit("not ok", f"every lock held when a link or the server was cut for a whole ttl was "
                           f"declared lost within {within}: {len(bad)} of {len(cut)} late or never")
            for n, h, key, fence, d, lag in sorted(bad, key=lambda c: -(c[4] or 1e18))[:20]:
                emit("diag", f"  {h} {'never declared ' + key + ' (fence ' + str(fence) + ') lost' if d is None else 'declared ' + key + ' (fence ' + str(fence) + ') lost ' + format(ms(d), '.0f') + ' ms'} after {n.label(t0)} "
                             f"cut in{f' ({ms(lag):.0f} ms after it began)' if lag else ''}")
        else:
            emit("ok", f"every lock held when a link or the server was cut for a whole ttl was "
                       f"declared lost within {within}: {len(cut)} locks, worst {ms(worst):.0f} ms")
    if resumed:
        emit("note", f"{len(resumed)} losses declared by a lockfs only after it ran again (it was stopped): "
                     f"at most {max(0, ms(max(r[2] for r in resumed))):.0f} ms after it resumed")
    def restart_note(r):
        if not r:
            return ""
        return (f"; lockfs gone {r['stopped_ms'] if r['stopped_ms'] is not None else '?'} ms and serving "
                f"again {r['serving_ms'] if r['serving_ms'] is not None else '?'} ms after the stop began, "
                f"{r['kept']} of the {r['held']} locks it held kept, {r['granted_elsewhere']} granted "
                f"elsewhere, {r['lost']} declared lost, {r['refused']} not taken back")

    if restart_stats:
        rs = list(restart_stats.values())
        serv = [r["serving_ms"] for r in rs if r["serving_ms"] is not None]
        emit("note", f"lockfs restarts: {len(rs)}; locks held at them {sum(r['held'] for r in rs)}, kept "
                     f"{sum(r['kept'] for r in rs)}, granted elsewhere {sum(r['granted_elsewhere'] for r in rs)}, "
                     f"declared lost {sum(r['lost'] for r in rs)}, not taken back by the new lockfs "
                     f"{sum(r['refused'] for r in rs)}; stop to serving again "
                     f"{min(serv, default=0):.0f}..{max(serv, default=0):.0f} ms")
    if waits:
        by_why = defaultdict(int)
        for w in waits:
            by_why[w[3]] += 1
        emit("note", f"waits for a mount that was away (W: before a take or a release; ride: a long section worked through it): {len(waits)} "
                     f"({', '.join(f'{k} {v}' for k, v in sorted(by_why.items()))}), longest "
                     f"{ms(max(w[2] - w[1] for w in waits)):.0f} ms")
    emit("note", "per nemesis:")
    for p in per:
        emit("note", f"  #{p['id']} {p['name']} on {p['target']} at {p['start_s']}s for {p['duration_ms']} ms: "
                     f"{p['sections']} sections, {p['violations']} violations, {p['lost']} of the "
                     f"{p['held_at_fault']} locks held then declared lost, fault->lost max "
                     f"{p['fault_to_lost_max_ms'] if p['fault_to_lost_max_ms'] is not None else '-'} ms"
                     f"{', resume->lost ' + str(p['resume_to_lost_max_ms']) + ' ms' if p['name'].startswith('pause-holder') and p['resume_to_lost_max_ms'] is not None else ''}"
                     f"{', restart->lost ' + str(round(max(0, p['fault_to_lost_max_ms'] - ms(p['restart_ns'])))) + ' ms' if p.get('restart_ns') is not None and p['fault_to_lost_max_ms'] is not None else ''}"
                     f"{', slowest inspection ' + str(p['inspect_max_ms']) + ' ms' if p['inspect_max_ms'] else ''}"
                     f"{restart_note(p['lockfs_restart'])}")
    for t, host, key, prev, pfence, age, what in breaks[:20]:
        emit("note", f"  break by {host}: {what} {key} of {prev} (fence {pfence}, heartbeat {age} s ago) "
                     f"at {fmt_t(t, t0)} [{where(t)}]")
    if acq_fail:
        emit("note", "acquisitions that failed other than with 'held' (EIO and ENOTCONN are the faults'): " + "; ".join(
            f"{tool} rc {rc} x{c}: {msg[:120]}" for (tool, rc, msg), c in
            sorted(acq_fail.items(), key=lambda x: -x[1])[:8]))
    if eio:
        emit("note", "EIO answers logged: " + ", ".join(f"{h} {c}" for h, c in sorted(eio.items())))
    if no_end:
        emit("diag", f"{len(no_end)} sections had no end record at all (their worker was killed)")

    # Per tool and mode, and how often shared sections overlapped each other
    # (readers that may overlap: the workload shows they did).
    per_tool = defaultdict(lambda: defaultdict(int))
    for s in secs:
        per_tool[s.tool][s.mode] += 1
    shared_pairs = 0
    act = []
    for s in secs:
        if s.mode != "s":
            continue
        act = [p for p in act if p.end > s.t_ws]
        shared_pairs += sum(1 for p in act if p.res == s.res)
        act.append(s)
    emit("note", "sections per tool: " + ", ".join(
        f"{t} {sum(v.values())}" + (f" ({v.get('x', 0)} exclusive, {v.get('s', 0)} shared)" if v.get("s") else "")
        for t, v in sorted(per_tool.items())) + f"; {shared_pairs} pairs of shared sections overlapped")
    if a.history:
        with open(a.history, "w") as fh:
            for s in secs:
                client = s.id.rsplit(".", 1)[0]
                end = s.end if s.end is not None else t_end
                ret = max(end, s.t_x or end)
                fence = s.fence if s.fence is not None else 0
                fh.write(f"{client}\t{s.res}\t{s.mode}\tacquire\t{s.t_try}\t{s.t_ws}\t{fence}\t{s.id}\n")
                fh.write(f"{client}\t{s.res}\t{s.mode}\trelease\t{end}\t{ret}\t0\t{s.id}\n")

    if a.json:
        summary = {
            "per_tool": {t: dict(v) for t, v in per_tool.items()}, "shared_overlapping_pairs": shared_pairs,
            "sections": len(secs), "hosts": dict(by_host), "long_sections": sum(1 for s in secs if s.long),
            "overlapping_pairs": len(overlaps), "overlaps": len(spans),
            "longest_overlap_ms": round(ms(max(spans, default=0)), 1),
            "stale_runs": len(stale), "fence_inversions": len(inversions), "duplicate_fences": len(dups),
            "late_losses": len(late), "slow_inspections": len(slow),
            "max_inspect_ms": round(max((x[3] for x in slow_inspect), default=0) / 1000),
            "lost": len(lost), "breaks": len(breaks), "side_grants": side_grants,
            "fault_to_lost_max_ms": round(ms(max((x[1] for x in fault_lost), default=0))),
            "cut_locks": len(cut),
            "cut_late_or_never": sum(1 for c in cut if c[4] is None or c[4] > ttl_ns),
            "cut_fault_to_lost_max_ms": round(ms(max((c[4] for c in cut if c[4] is not None), default=0))),
            "janitor": len(janitor),
            "gap_sections": sum(1 for s in secs if s.how == "gap"),
            "mount_waits": len(waits),
            "lockfs_restarts": {k: v for k, v in restart_stats.items()},
            "violations_by_nemesis": {k or "none": len(v) for k, v in viol.items()},
            "nemeses": per,
            "no_fault": {"counts": dict(tally.get("", {})),
                         "worst_ms": {k: round(v, 1) for k, v in worst_amt.get("", {}).items()}},
            "by_label": by_label(per),
        }
        with open(a.json, "w") as fh:
            json.dump(summary, fh, indent=1)
    print("\n".join(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
