#!/usr/bin/python3
"""promcheck.py FILE [SAMPLE...] — check that FILE is Prometheus text
exposition format and print the value of each SAMPLE, one a line.

FILE is parsed with prometheus_client's own parser (Debian's
python3-prometheus-client; exit 77 without it), and checked more strictly
than that parser does: every family has one # HELP and one # TYPE line before
its samples, counters' samples end in _total, no sample repeats, and each
histogram's buckets are cumulative, end with le="+Inf" and equal _count.

SAMPLE is NAME or NAME{label="value",...}: the one sample of that name whose
labels include those given (mount="..." need not be); none or several is an
error (exit 1).  Values print as integers when they are whole.
"""
import re
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("python3-prometheus-client is not installed (apt-get install python3-prometheus-client)",
          file=sys.stderr)
    sys.exit(77)


def die(msg):
    print(f"promcheck: {msg}", file=sys.stderr)
    sys.exit(1)


def strict(text):
    if not text.endswith("\n"):
        die("the file does not end with a newline")
    seen_help, seen_type, types = set(), set(), {}
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$", line)
        if m:
            kind, name, rest = m.groups()
            target = seen_help if kind == "HELP" else seen_type
            if name in target:
                die(f"line {n}: a second # {kind} for {name}")
            target.add(name)
            if kind == "TYPE":
                if rest not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    die(f"line {n}: unknown type {rest}")
                if name in seen_type and name not in seen_help:
                    die(f"line {n}: # TYPE {name} before its # HELP")
                types[name] = rest
            continue
        if line.startswith("#") or not line:
            die(f"line {n}: neither HELP, TYPE nor a sample: {line!r}")
        name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        fam = name if name in types else base if types.get(base) == "histogram" else None
        if fam is None:
            fam = re.sub(r"_total$", "", name)
            if types.get(name) is None and types.get(fam) is None:
                die(f"line {n}: sample {name} has no # TYPE line before it")
        if fam not in seen_help:
            die(f"line {n}: sample {name} has no # HELP line before it")
        if types.get(fam) == "counter" and not name.endswith("_total"):
            die(f"line {n}: counter sample {name} does not end in _total")


def labels_key(labels):
    return tuple(sorted(labels.items()))


def main():
    if len(sys.argv) < 2:
        die("usage: promcheck.py FILE [SAMPLE...]")
    text = open(sys.argv[1], encoding="utf-8").read()
    strict(text)
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and others
        die(f"prometheus_client cannot parse it: {e}")
    samples = []
    seen = set()
    for f in families:
        if f.type == "counter" and not f.name + "_total" in {s.name for s in f.samples}:
            die(f"counter {f.name} has no _total sample")
        for s in f.samples:
            k = (s.name, labels_key(s.labels))
            if k in seen:
                die(f"sample {s.name}{s.labels} repeats")
            seen.add(k)
            samples.append(s)
        if f.type == "histogram":
            series = {}
            for s in f.samples:
                rest = {k: v for k, v in s.labels.items() if k != "le"}
                series.setdefault(labels_key(rest), []).append(s)
            for key, ss in series.items():
                buckets = [s for s in ss if s.name.endswith("_bucket")]
                count = [s.value for s in ss if s.name.endswith("_count")]
                les = [float(s.labels["le"]) for s in buckets]
                vals = [s.value for s in buckets]
                if les != sorted(les) or not les or les[-1] != float("inf"):
                    die(f"histogram {f.name}{dict(key)}: buckets not ascending to +Inf")
                if vals != sorted(vals):
                    die(f"histogram {f.name}{dict(key)}: buckets not cumulative")
                if count != [vals[-1]]:
                    die(f"histogram {f.name}{dict(key)}: _count {count} is not the +Inf bucket {vals[-1]}")
    for want in sys.argv[2:]:
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$", want)
        if not m:
            die(f"bad SAMPLE {want!r}")
        name, lab = m.group(1), m.group(2) or ""
        need = dict(re.findall(r'([a-zA-Z_]+)="([^"]*)"', lab))
        hits = [s for s in samples
                if s.name == name and all(s.labels.get(k) == v for k, v in need.items())]
        if len(hits) != 1:
            die(f"{want}: {len(hits)} samples match, not 1")
        v = hits[0].value
        print(int(v) if v == int(v) else v)


main()
