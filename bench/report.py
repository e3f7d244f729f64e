#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables, claim verdicts and plots for one run of the benchmark suite.

Usage: report.py RESULTS_DIR [--no-plots]

RESULTS_DIR is what scripts/bench.sh writes for one kernel: env.txt (kernel,
QEMU and fio versions, commit, mode, date) and, per device model, MODEL/
with env.txt (the model's and the matrix's settings), probe.json (workload.py
probe: the disk's service time, one I/O at a time) and
MODEL/WORKLOAD/ROWFILE/trial<N>.json: workload.py run for random, bursty and
rewrite, apps.py db for db, apps.py files (plus fio's JSON in
trial<N>.fio.json) for overhead; trial<N>.writes.gz beside them lists the
write requests the disk queued (blktrace: "t_s sector sectors command").

Writes into RESULTS_DIR, whatever is missing:

  summary.md    the versions; per model its disk settings and measured
                service time, then a table per workload, one line per row
                (policy and knobs): read response (mean, std. dev., p99, max
                and its ratio to pu's and to Linux's), disk writes, aipu's
                counters; db's elapsed time and writes; the overhead check's
                throughput relative to no module. Then the claims' verdicts
                and the list of plots. Also printed on stdout.
  summary.json  the same numbers: {"env", "models": {MODEL: {"env", "probe",
                "workloads": {WORKLOAD: {ROW: aggregates}}}}, "claims",
                "plots", "errors"}.
  plots/        PNGs, unless --no-plots:
                MODEL-WORKLOAD-mean-std.png  mean vs std. dev. of read response,
                                             a point per trial (Mogul's Figs 1-2)
                MODEL-WORKLOAD-hist.png      read response in log2 buckets (Figs 3-4)
                MODEL-WORKLOAD-bursts.png    pages written by burst size, CDF (Fig 7)
                MODEL-WORKLOAD-timeline.png  reads and writes completed each second
                MODEL-WORKLOAD-age.png       age of the pages aipu wrote
                MODEL-rewrite-writes.png     disk writes per row vs pages dirtied
                                             (Table 4)
                MODEL-db-table.png           db elapsed time and disk writes
                MODEL-overhead.png           throughput relative to no module

Exit status: 0; 1 if no result file was found or a trial reported errors
(everything is written all the same).

Standard library only, but for the plots: they import matplotlib (Agg).
"""

import argparse
import gzip
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from summarize import display, parse_stat, read_env  # noqa: E402

MODEL_ORDER = ("fifo94", "hdd", "ssd")
READ_WORKLOADS = ("random", "bursty", "rewrite")
WORKLOAD_ORDER = READ_WORKLOADS + ("db", "overhead")
TRIAL_RE = re.compile(r"trial(\d+)\.json")
FIO_RE = re.compile(r"trial(\d+)\.fio\.json")
WRITES_RE = re.compile(r"trial(\d+)\.writes\.gz")
# aipu's flusher queues a period's aged pages once a period_ms (1000 ms by
# default), while Linux's and pu's flush-alls queue hundreds of requests
# at once, then the rest a few at a time as the disk queue's tags free up
# (seen on fifo94: 256 at once, then groups of 4-12 up to ~0.3 s apart): a
# 500-ms gap splits the former and keeps the latter whole. Paced aipu
# queues one page every few tens of ms, which this rule sees as one long
# burst: its spacing is in the timeline plot.
BURST_GAP_S = 0.5
# The command name bench-guest.sh gives the marker reads in writes.gz.
MARKER = "@marker"
SECTORS_PER_PAGE = 8
CLAIM_MODEL = "fifo94"
CLAIM_WORKLOAD = "random"
CLAIM_MAX_FRACTION = 0.1
CLAIM_SCAN_LIMIT = 1.1
# aipu's counters kept in summary.json (means over trials).
STAT_KEYS = (
    "pages_dirtied",
    "pages_written",
    "entries_scanned",
    "pages_late",
    "pages_deferred",
    "pages_purged",
    "pages_staged",
    "fallbacks",
    "flusher_runs",
)
# Fixed colours for the rows every run has, so that plots of different runs
# compare at a glance; other rows take the rest in order of appearance.
ROW_COLOURS = {"none": "#7f7f7f", "kernel": "#000000", "pu": "#d62728", "aipu": "#1f77b4"}
OTHER_COLOURS = (
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#aec7e8",
    "#98df8a",
    "#c5b0d5",
)
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")


def warn(msg):
    print(f"report: {msg}", file=sys.stderr)


# ---------------------------------------------------------------- numbers


def mean(values):
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def maximum(values):
    return max((v for v in values if v is not None), default=None)


def ratio(num, den):
    return num / den if num is not None and den else None


def log2_bucket(ms):
    """Bucket 0 holds [0, 1) ms, bucket k >= 1 holds [2^(k-1), 2^k) ms."""
    if ms < 1.0:
        return 0
    return math.frexp(ms)[1]


def bucket_label(k):
    return "<1" if k == 0 else f"{2 ** (k - 1)}-{2**k}"


def log2_histogram(values_ms):
    """Counts per log2_bucket, from bucket 0 up to the largest value's."""
    counts = []
    for v in values_ms:
        k = log2_bucket(v)
        if k >= len(counts):
            counts.extend([0] * (k + 1 - len(counts)))
        counts[k] += 1
    return counts


def burst_sizes(requests, gap_s=BURST_GAP_S):
    """Pages per burst: REQUESTS are (t_s, pages); a burst is a maximal run
    of requests each queued less than GAP_S after the one before."""
    sizes = []
    last = None
    for t, pages in sorted(requests):
        if last is None or t - last >= gap_s:
            sizes.append(0.0)
        sizes[-1] += pages
        last = t
    return sizes


def cumulative_pages(sizes):
    """(burst sizes ascending, fraction of all pages written in bursts of at
    most that size): the curve of Mogul's Figure 7."""
    xs = sorted(sizes)
    total = sum(xs)
    ys = []
    acc = 0.0
    for s in xs:
        acc += s
        ys.append(acc / total if total else 0.0)
    return xs, ys


def weighted_median(sizes):
    """The burst size that half of the pages written came in bursts of at most."""
    for x, y in zip(*cumulative_pages(sizes)):
        if y >= 0.5:
            return x
    return None


def per_second(samples, fields):
    """Reads and writes completed in each whole second, from the sampler's
    cumulative disk counters: (read counts, write counts), index = second."""
    it = fields.index("t_s") if "t_s" in fields else 0
    ir = fields.index("read_ios") if "read_ios" in fields else 1
    iw = fields.index("write_ios") if "write_ios" in fields else 2
    if len(samples) < 2:
        return [], []
    n = int(math.ceil(samples[-1][it])) or 1
    reads, writes = [0] * n, [0] * n
    for prev, cur in zip(samples, samples[1:]):
        k = min(int(cur[it]), n - 1)
        reads[k] += cur[ir] - prev[ir]
        writes[k] += cur[iw] - prev[iw]
    return reads, writes


def parse_hist(text):
    """aipu's "low high count" lines (the last "low - count") -> counts by bucket."""
    counts = []
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            counts.append(int(parts[2]))
    return counts


def rounded(obj):
    """OBJ with its floats rounded to 4 decimals, for a readable summary.json."""
    if isinstance(obj, float):
        return round(obj, 4)
    if isinstance(obj, dict):
        return {k: rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rounded(v) for v in obj]
    return obj


def add_lists(a, b):
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


# ---------------------------------------------------------------- input


def ordered(names, first):
    """NAMES: those in FIRST in FIRST's order, then the others sorted."""
    head = [n for n in dict.fromkeys(first) if n in names]
    return head + sorted(set(names) - set(head))


def subdirs(path):
    try:
        names = os.listdir(path)
    except OSError:
        return []
    return [n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(path, n))]


def row_file(row):
    return row.replace(":", "+").replace(",", "+")


def row_name(rowfile):
    """The row a directory stands for when env.txt does not list it: the
    first '+' was the ':' after the policy, the others were ','."""
    return rowfile.replace("+", ":", 1).replace("+", ",")


def model_dirs(root):
    return ordered([d for d in subdirs(root) if d != "plots"], MODEL_ORDER)


def workload_dirs(model_dir, menv):
    """Workloads found or promised by env.txt, in the suite's order."""
    found = subdirs(model_dir)
    listed = menv.get("workloads", "").split()
    return ordered(set(found) | set(listed), WORKLOAD_ORDER + tuple(listed))


def listed_rows(menv, workload):
    key = "overhead_rows" if workload == "overhead" and "overhead_rows" in menv else "rows"
    return menv.get(key, "").split()


def expected_trials(menv, workload):
    key = "trials" if workload == "random" or "trials_other" not in menv else "trials_other"
    try:
        return int(menv.get(key, "0"))
    except ValueError:
        return 0


def row_dirs(wl_dir, listed):
    """{row: directory}, env.txt's rows first (those absent on disk left
    out: the row did not run there), then unlisted ones sorted."""
    by_file = {row_file(r): r for r in listed}
    found = {by_file.get(d) or row_name(d): os.path.join(wl_dir, d) for d in subdirs(wl_dir)}
    return {r: found[r] for r in ordered(found, listed)}


def numbered(row_dir, pattern):
    """{N: path} of the files in ROW_DIR whose names match PATTERN."""
    out = {}
    for name in os.listdir(row_dir):
        m = pattern.fullmatch(name)
        if m:
            out[int(m.group(1))] = os.path.join(row_dir, name)
    return out


def load_json(path):
    """The JSON in PATH, or None (with a warning) if it cannot be read.
    fio may print warnings before its JSON: those are skipped."""
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text[text.index("{") :])
    except (OSError, ValueError) as exc:
        warn(f"{path}: unreadable, counted as missing: {exc}")
        return None


def read_writes(path):
    """(t_s, pages) per write request in a trial<N>.writes.gz file.

    Lines whose command is MARKER are the workload's reads at the run's
    start and end: with both, only the writes between them are kept (not
    the final sync's), timed from the first."""
    out, marks = [], []
    try:
        with gzip.open(path, "rt") as f:
            for line in f:
                parts = line.split()
                try:
                    t, pages = float(parts[0]), int(parts[2]) / SECTORS_PER_PAGE
                except (IndexError, ValueError):
                    continue
                if parts[3:4] == [MARKER]:
                    marks.append(t)
                else:
                    out.append((t, pages))
    except (OSError, EOFError) as exc:
        warn(f"{path}: unreadable: {exc}")
    if len(marks) >= 2:
        start, end = marks[0], marks[1]
        out = [(t - start, p) for t, p in out if start <= t <= end]
    return out


def load_row(row_dir, expected):
    """One row of one workload: its trials, fio results, bursts, and the
    trial numbers up to EXPECTED (or the highest found) with no result."""
    loaded = {n: load_json(p) for n, p in sorted(numbered(row_dir, TRIAL_RE).items())}
    fio = {n: load_json(p) for n, p in sorted(numbered(row_dir, FIO_RE).items())}
    trials = {n: t for n, t in loaded.items() if isinstance(t, dict)}
    fio = {n: t for n, t in fio.items() if isinstance(t, dict)}
    present = set(trials) | set(fio)
    top = max([expected, *present], default=0)
    bursts = []
    for _, path in sorted(numbered(row_dir, WRITES_RE).items()):
        bursts += burst_sizes(read_writes(path))
    return {
        "dir": row_dir,
        "trials": trials,
        "fio": fio,
        "missing": [n for n in range(1, top + 1) if n not in present],
        "bursts": bursts,
    }


def trial_errors(where, data):
    return [
        f"{where}/trial{n}: {e}" for n, t in data["trials"].items() for e in t.get("errors") or []
    ]


# ---------------------------------------------------------------- aggregates


def read_aggregates(trials):
    reads = [t.get("reads") or {} for t in trials]
    maxima = [r.get("max_ms") for r in reads]
    return {
        "reads": sum(r.get("count", 0) for r in reads),
        "mean_ms": mean(r.get("mean_ms") for r in reads),
        "stddev_ms": mean(r.get("stddev_ms") for r in reads),
        "p99_ms": median(r.get("p99_ms") for r in reads),
        "max_ms": maximum(maxima),
        "median_max_ms": median(maxima),
    }


def disk_aggregates(trials):
    disks = [t.get("disk") or {} for t in trials]
    return {
        "disk_writes": mean(d.get("write_ios") for d in disks),
        "sync_writes": mean(d.get("write_ios_sync") for d in disks),
        "flusher_cpu_ms": mean(t.get("flusher_cpu_ms") for t in trials),
    }


def aipu_aggregates(trials):
    """aipu's counters (means over the trials that have them), and pages
    scanned per page written over all of them; None if aipu was not loaded."""
    stats = [parse_stat((t.get("attach") or {}).get("stat")) for t in trials]
    stats = [s for s in stats if s]
    if not stats:
        return None
    out = {k: mean(s.get(k) for s in stats) for k in STAT_KEYS}
    scanned = sum(s.get("entries_scanned", 0) for s in stats)
    written = sum(s.get("pages_written", 0) for s in stats)
    out.update(
        {
            "trials": len(stats),
            "entries_scanned_total": scanned,
            "pages_written_total": written,
            "scanned_per_written_total": ratio(scanned, written),
            "scanned_per_written": ratio(scanned, written),
            "scan_from_s": None,
        }
    )
    out.update(steady_scan(trials) or {})
    return out


def steady_scan(trials):
    """Entries scanned per page written after the --snapshot-at time
    (max_age in), when every trial has the snapshot: the flusher's steady
    state. Before it, each pass examines the oldest entry, finds it young
    and writes nothing, which says nothing about the scan's cost per page."""
    scanned = written = 0
    start = []
    for t in trials:
        snap = t.get("attach_at") or {}
        first = parse_stat((snap.get("files") or {}).get("stat"))
        last = parse_stat((t.get("attach") or {}).get("stat"))
        if not first or not last:
            return None
        scanned += last.get("entries_scanned", 0) - first.get("entries_scanned", 0)
        written += last.get("pages_written", 0) - first.get("pages_written", 0)
        start.append(snap.get("t_s", 0))
    return {
        "entries_scanned_steady": scanned,
        "pages_written_steady": written,
        "scanned_per_written": ratio(scanned, written),
        "scan_from_s": min(start),
    }


def rewrite_aggregates(trials):
    """Pages dirtied (write() calls) and disk writes, run + sync, per call."""
    calls = [(t.get("writes") or {}).get("done") for t in trials]
    disk = [t.get("disk") or {} for t in trials]
    total = [d.get("write_ios", 0) + d.get("write_ios_sync", 0) for d in disk]
    return {
        "pages_dirtied": mean(calls),
        "distinct_pages": mean((t.get("config") or {}).get("distinct_pages") for t in trials),
        "disk_writes_per_call": ratio(sum(total), sum(c or 0 for c in calls)),
    }


def burst_aggregates(sizes):
    if not sizes:
        return None
    return {
        "bursts": len(sizes),
        "pages": sum(sizes),
        "max_pages": max(sizes),
        "median_page_burst": weighted_median(sizes),
    }


def read_row(data, workload):
    trials = list(data["trials"].values())
    agg = {"trials": len(trials), "missing_trials": data["missing"]}
    if not trials:
        return agg
    agg.update(read_aggregates(trials))
    agg.update(disk_aggregates(trials))
    if workload == "rewrite":
        agg.update(rewrite_aggregates(trials))
    agg["aipu"] = aipu_aggregates(trials)
    agg["write_bursts"] = burst_aggregates(data["bursts"])
    return agg


def db_row(data, workload):
    trials = list(data["trials"].values())
    agg = {"trials": len(trials), "missing_trials": data["missing"]}
    if not trials:
        return agg
    agg["elapsed_s"] = mean(t.get("elapsed_s") for t in trials)
    agg["tps"] = mean((t.get("work") or {}).get("tps") for t in trials)
    agg["transactions"] = mean((t.get("work") or {}).get("transactions") for t in trials)
    agg.update(disk_aggregates(trials))
    if agg["transactions"] and agg.get("disk_writes") is not None:
        total = agg["disk_writes"] + (agg.get("sync_writes") or 0)
        agg["writes_per_1000"] = 1000.0 * total / agg["transactions"]
    agg["aipu"] = aipu_aggregates(trials)
    agg["write_bursts"] = burst_aggregates(data["bursts"])
    return agg


def fio_mib_s(fio):
    try:
        return fio["jobs"][0]["write"]["bw_bytes"] / 2**20
    except (KeyError, IndexError, TypeError):
        return None


def overhead_row(data, workload):
    present = set(data["trials"]) | set(data["fio"])
    return {
        "trials": len(present),
        "missing_trials": data["missing"],
        "seq_write_mib_s": mean(fio_mib_s(f) for f in data["fio"].values()),
        "files_per_s": mean(
            (t.get("work") or {}).get("ops_per_s") for t in data["trials"].values()
        ),
    }


def linux_row(cell):
    """The row standing for Linux's own writeback: kernel, else none."""
    for row in ("kernel", "none"):
        if (cell.get(row) or {}).get("max_ms") is not None:
            return row
    return None


def add_read_ratios(cell):
    pu_max = (cell.get("pu") or {}).get("max_ms")
    linux = linux_row(cell)
    linux_max = cell[linux]["max_ms"] if linux else None
    for agg in cell.values():
        agg["max_over_pu"] = ratio(agg.get("max_ms"), pu_max)
        agg["linux_row"] = linux
        agg["max_over_linux"] = ratio(agg.get("max_ms"), linux_max)


def add_overhead_ratios(cell):
    base = cell.get("none") or {}
    for agg in cell.values():
        agg["seq_write_vs_none"] = ratio(agg.get("seq_write_mib_s"), base.get("seq_write_mib_s"))
        agg["files_vs_none"] = ratio(agg.get("files_per_s"), base.get("files_per_s"))


def kind(workload):
    if workload in READ_WORKLOADS:
        return "reads"
    return workload if workload in ("db", "overhead") else None


def aggregate_cell(workload, rows):
    """{row: aggregates} for one model x workload, from {row: load_row()}."""
    k = kind(workload)
    per_row = {"reads": read_row, "db": db_row, "overhead": overhead_row}[k]
    cell = {row: per_row(data, workload) for row, data in rows.items()}
    if k == "reads":
        add_read_ratios(cell)
    elif k == "overhead":
        add_overhead_ratios(cell)
    return cell


# ---------------------------------------------------------------- claims


def claim_cell(summary):
    model = summary["models"].get(CLAIM_MODEL) or {}
    return (model.get("workloads") or {}).get(CLAIM_WORKLOAD) or {}


def verdict(value, limit):
    if value is None:
        return "NOT CHECKED"
    return "HOLDS" if value <= limit else "DOES NOT HOLD"


def max_claim(cell, other, ident, who):
    """aipu's max read against row OTHER's (WHO): at most CLAIM_MAX_FRACTION of it."""
    a = (cell.get("aipu") or {}).get("max_ms")
    b = (cell.get(other) or {}).get("max_ms") if other else None
    return {
        "id": ident,
        "claim": f"on {CLAIM_MODEL}/{CLAIM_WORKLOAD}, aipu's max read <= "
        f"{CLAIM_MAX_FRACTION:g} x {who} max read",
        "verdict": verdict(ratio(a, b), CLAIM_MAX_FRACTION),
        "aipu_max_ms": a,
        "other_row": other,
        "other_max_ms": b,
        "value": ratio(a, b),
        "limit": CLAIM_MAX_FRACTION,
    }


def scan_claim(cell):
    st = (cell.get("aipu") or {}).get("aipu") or {}
    value = st.get("scanned_per_written")
    return {
        "id": "scanned_per_written",
        "claim": f"on {CLAIM_MODEL}/{CLAIM_WORKLOAD}, aipu scans <= {CLAIM_SCAN_LIMIT:g} "
        "entries per page it writes",
        "verdict": verdict(value, CLAIM_SCAN_LIMIT),
        "entries_scanned": st.get("entries_scanned_steady", st.get("entries_scanned_total")),
        "pages_written": st.get("pages_written_steady", st.get("pages_written_total")),
        "from_s": st.get("scan_from_s"),
        "total": st.get("scanned_per_written_total"),
        "value": value,
        "limit": CLAIM_SCAN_LIMIT,
    }


def claims(summary):
    cell = claim_cell(summary)
    out = [
        max_claim(cell, "pu", "max_read_vs_pu", "pu's"),
        max_claim(cell, linux_row(cell), "max_read_vs_linux", "Linux's own (row kernel, or none)"),
        scan_claim(cell),
    ]
    if CLAIM_MODEL not in summary["models"]:
        for c in out:
            c["no_model"] = True
    return out


def claim_line(c):
    if c["verdict"] == "NOT CHECKED" and c.get("no_model"):
        evidence = f"this run has no {CLAIM_MODEL} results (the claims are about that model)"
    elif c["verdict"] == "NOT CHECKED":
        evidence = "the rows or counters it needs are missing"
    elif c["id"] == "scanned_per_written":
        evidence = (
            f"{c['entries_scanned']} entries scanned / {c['pages_written']} pages written "
            f"= {c['value']:.3f}"
        )
        if c.get("from_s") is not None:
            evidence += (
                f" from {c['from_s']:.0f} s into the runs, when pages first came of age "
                f"({c['total']:.3f} over whole runs, with the passes that found nothing aged)"
            )
    else:
        evidence = (
            f"aipu {fmt_ms(c['aipu_max_ms'])} ms / {c['other_row']} "
            f"{fmt_ms(c['other_max_ms'])} ms = {c['value']:.3f}"
        )
    return f"- **{c['verdict']}**: {c['claim']}: {evidence}"


# ---------------------------------------------------------------- tables


def fmt_ms(x):
    """Three significant digits or so: 1234, 123, 12.3, 1.23."""
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def fmt_count(x):
    return "-" if x is None else f"{x:.0f}"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.3f}" if x < 10 else f"{x:.1f}"


def fmt_trials(agg):
    missing = agg.get("missing_trials") or []
    if not agg.get("trials"):
        return "missing"
    if missing:
        return f"{agg['trials']} (trial {', '.join(map(str, missing))} missing)"
    return str(agg["trials"])


def md_table(header, lines):
    """A Markdown table: the first column left-aligned, the others right."""
    out = ["| " + " | ".join(header) + " |", "|:--" + "|--:" * (len(header) - 1) + "|"]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def aipu_cells(agg):
    st = agg.get("aipu") or {}
    return [
        fmt_count(st.get("pages_written")),
        fmt_ratio(st.get("scanned_per_written")),
        fmt_count(st.get("pages_late")),
        fmt_count(agg.get("flusher_cpu_ms")),
    ]


AIPU_HEADER = ["aipu wrote", "scanned/written", "late", "flusher CPU ms"]


def read_table(workload, cell):
    linux = next((a["linux_row"] for a in cell.values() if a.get("linux_row")), "kernel")
    header = ["row", "trials", "reads", "mean ms", "std ms", "p99 ms", "max ms", "median max ms"]
    header += ["max/pu", f"max/{linux}", "disk writes", "+ sync"]
    if workload == "rewrite":
        header += ["pages dirtied", "disk writes/write()"]
    lines = []
    for row, a in cell.items():
        line = [display(row), fmt_trials(a), fmt_count(a.get("reads"))]
        line += [fmt_ms(a.get(k)) for k in ("mean_ms", "stddev_ms", "p99_ms", "max_ms")]
        line += [fmt_ms(a.get("median_max_ms")), fmt_ratio(a.get("max_over_pu"))]
        line += [fmt_ratio(a.get("max_over_linux")), fmt_count(a.get("disk_writes"))]
        line += [fmt_count(a.get("sync_writes"))]
        if workload == "rewrite":
            line += [fmt_count(a.get("pages_dirtied")), fmt_ratio(a.get("disk_writes_per_call"))]
        lines.append(line + aipu_cells(a))
    return md_table(header + AIPU_HEADER, lines)


def db_table(cell):
    header = ["row", "trials", "elapsed s", "transactions", "transactions/s", "disk writes"]
    header += ["+ sync", "writes / 1000 tx"]
    lines = []
    for row, a in cell.items():
        line = [display(row), fmt_trials(a), fmt_ms(a.get("elapsed_s"))]
        line += [fmt_count(a.get("transactions")), fmt_count(a.get("tps"))]
        line += [fmt_count(a.get("disk_writes")), fmt_count(a.get("sync_writes"))]
        line += [fmt_ms(a.get("writes_per_1000"))]
        lines.append(line + aipu_cells(a))
    return md_table(header + AIPU_HEADER, lines)


def overhead_table(cell):
    header = ["row", "trials", "seq. write MiB/s", "vs none", "small files/s", "vs none"]
    lines = [
        [
            display(row),
            fmt_trials(a),
            fmt_ms(a.get("seq_write_mib_s")),
            fmt_ratio(a.get("seq_write_vs_none")),
            fmt_count(a.get("files_per_s")),
            fmt_ratio(a.get("files_vs_none")),
        ]
        for row, a in cell.items()
    ]
    return md_table(header, lines)


def cell_table(workload, cell):
    if not cell:
        return "missing: no row has results."
    k = kind(workload)
    if k == "reads":
        return read_table(workload, cell)
    return db_table(cell) if k == "db" else overhead_table(cell)


def disk_desc(menv):
    """The host's side of the model, from env.txt's disk (vm.sh's --disk):
    fifo:IOPS[:BPS] (QEMU's throttle) or serial:MS[:BPS] (nbdkit, strict FIFO);
    or host:DEV, a real disk (bench.sh --host)."""
    parts = menv.get("disk", "").split(":")
    kind, arg = parts[0], parts[1] if len(parts) > 1 else "?"
    if kind == "host":
        size = menv.get("device_size_bytes", "")
        size = f"{int(size) / 2**30:.0f} GiB, " if size.isdigit() else ""
        rot = {"1": "rotational", "0": "not rotational"}.get(menv.get("rotational", ""), "")
        what = ", ".join(x for x in (menv.get("device_model", "").strip(), size + rot) if x)
        return f"the real disk {arg} on the machine itself, no VM ({what or 'model unknown'})"
    bps = parts[2] if len(parts) > 2 else "0"
    cap = "no bandwidth cap"
    if bps.isdigit() and bps != "0":
        cap = f"at most {int(bps) / 2**20:.0f} MiB/s"
    if kind == "serial":
        return f"a strict FIFO (nbdkit, one request at a time, {arg} ms added to each), {cap}"
    return f"QEMU's throttle at {arg} IOPS (reads and writes alternate), {cap}"


def model_line(model, menv, probe):
    g = menv.get
    line = (
        f"**{model}**: {disk_desc(menv)}; "
        f"{'' if g('host_mode') == '1' else 'guest '}scheduler {g('scheduler', '?')}, "
        f"wbt_lat_usec {g('wbt_lat_usec', '?')}, {g('hw_queues', '?')} hardware queue(s) "
        f"of {g('nr_requests', '?')} requests. "
    )
    if not probe:
        return line + "Service time: not measured (no probe.json)."
    r, w = probe.get("read") or {}, probe.get("write") or {}
    return line + (
        f"Service time, one I/O at a time: read mean {fmt_ms(r.get('mean_ms'))} ms, "
        f"p99 {fmt_ms(r.get('p99_ms'))} ms; write mean {fmt_ms(w.get('mean_ms'))} ms, "
        f"p99 {fmt_ms(w.get('p99_ms'))} ms."
    )


def run_line(menv):
    g = menv.get
    mem = g("mem_total_kb", "")
    mem = f", guest memory {int(mem) >> 10} MiB" if mem.isdigit() else ""
    return (
        f"Runs: {g('trials', '?')} trials of random ({g('trials_other', g('trials', '?'))} of "
        f"the others), {g('duration_s', '?')} s at {g('rate_per_s', '?')} pages/s"
        f"{' (chosen from the probe: a third of the disk busy with writes)' if g('rate_auto') == '1' else ''}; "
        f"max_age_ms {g('max_age_ms', '?')}, pu_interval_ms {g('pu_interval_ms', '?')}, "
        f"dirty_expire_centisecs {g('dirty_expire_centisecs', '?')}, "
        f"dirty_writeback_centisecs {g('dirty_writeback_centisecs', '?')}, "
        f"bdi min_ratio {g('min_ratio', '?')}{mem}."
    )


def version(env, key, prefix):
    """env.txt's KEY without the tool's own name ('fio-3.33' -> '3.33')."""
    value = env.get(key, "?")
    return value[len(prefix) :] if value.startswith(prefix) else value


def header_lines(env):
    g = env.get
    qemu = version(env, "qemu", "QEMU emulator version ")
    return [
        "# aipu benchmark report",
        "",
        f"kernel {g('kernel', '?')}; QEMU {qemu}; fio {version(env, 'fio', 'fio-')}; "
        f"commit {g('commit', '?')}; mode {g('mode', '?')}; date {g('date', '?')}.",
        "",
        "Rows: `none` loads no module (Linux's own writeback), `kernel` loads aipu "
        "with Linux's policy, the others name aipu's policy and knobs. Read times are "
        "O_DIRECT 4 KiB reads during the write load: mean and std. dev. are means over "
        "trials, p99 the median over trials, max the max over trials (and the median of "
        "the trials' maxima); disk writes are means over trials, during the run and then "
        "for the final sync; aipu's columns are from its stat file (pages written per "
        "trial, entries scanned per page written over all trials (from max_age into the "
        "runs on, when they have that snapshot: the flusher's steady state), pages "
        "written late), "
        "and its flusher thread's CPU time.",
    ]


# ---------------------------------------------------------------- plots


def row_styles(rows):
    """{row: (colour, marker)}, the same for a row in every plot of the run."""
    styles = {}
    others = 0
    for i, row in enumerate(dict.fromkeys(rows)):
        colour = ROW_COLOURS.get(row)
        if colour is None:
            colour = OTHER_COLOURS[others % len(OTHER_COLOURS)]
            others += 1
        styles[row] = (colour, MARKERS[i % len(MARKERS)])
    return styles


def trial_points(data):
    """(mean, std. dev.) of read response in ms, one per trial that has them."""
    reads = [t.get("reads") or {} for t in data["trials"].values()]
    return [(r["mean_ms"], r["stddev_ms"]) for r in reads if "stddev_ms" in r and "mean_ms" in r]


def pooled_reads(data):
    """Every read's response time (ms) in all the row's trials."""
    series = [(t.get("series") or {}).get("reads") or [] for t in data["trials"].values()]
    return [ms for s in series for _, ms in s]


def pooled_age_hist(data):
    """aipu's age_hist summed over the row's trials (pages by age bucket)."""
    total = []
    for t in data["trials"].values():
        total = add_lists(total, parse_hist((t.get("attach") or {}).get("age_hist")))
    return total


def first_trial_rates(data):
    """per_second() of the row's first trial: trials differ in when their
    bursts come, so averaging them would smear the bursts out."""
    if not data["trials"]:
        return [], []
    s = data["trials"][min(data["trials"])].get("series") or {}
    return per_second(s.get("disk") or [], s.get("disk_fields") or [])


def spread_over(values, factor=10.0):
    vals = [v for v in values if v and v > 0]
    return bool(vals) and max(vals) > factor * min(vals)


class Plots:
    """Draws the PNGs into RESULTS_DIR/plots and lists what it wrote."""

    def __init__(self, root, kernel, rows):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker

        self.plt = plt
        # Tick labels 0.5, 1, 2, 4 rather than 2^-1, 2^0, ...
        self.plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
        self.dir = os.path.join(root, "plots")
        os.makedirs(self.dir, exist_ok=True)
        self.kernel = kernel
        self.styles = row_styles(rows)
        self.written = []

    def figure(self, nrows=1, ncols=1, height=5.0, sharex=False):
        fig, axes = self.plt.subplots(
            nrows, ncols, figsize=(8, height), dpi=100, sharex=sharex, squeeze=False
        )
        return fig, axes

    def title(self, model, workload, what):
        return f"{what}\nmodel {model}, workload {workload}, kernel {self.kernel}"

    def save(self, fig, name, what):
        fig.tight_layout()
        fig.savefig(os.path.join(self.dir, name))
        self.plt.close(fig)
        self.written.append((f"plots/{name}", what))

    def colour(self, row):
        return self.styles.get(row, ("#333333", "o"))[0]

    def finish(self, fig, ax, title, name, what):
        """Title, grid and legend of a one-panel plot, then save it."""
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        self.save(fig, name, what)

    def cell(self, model, workload, rows, cell):
        """Every plot of one model x workload; rows is {row: load_row()}."""
        k = kind(workload)
        if k == "reads":
            self.mean_std(model, workload, rows)
            self.hist(model, workload, rows)
            self.timeline(model, workload, rows)
        if k in ("reads", "db"):
            self.bursts(model, workload, rows)
            self.age(model, workload, rows)
        if workload == "rewrite":
            self.rewrite_writes(model, cell)
        if k == "db":
            self.db_bars(model, cell)
        if k == "overhead":
            self.overhead(model, cell)

    def mean_std(self, model, workload, rows):
        points = {row: trial_points(d) for row, d in rows.items()}
        points = {row: p for row, p in points.items() if p}
        if not points:
            return
        fig, axes = self.figure()
        ax = axes[0][0]
        for row, pts in points.items():
            colour, marker = self.styles.get(row, ("#333333", "o"))
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, color=colour, marker=marker, s=40, label=display(row))
        every = [p for pts in points.values() for p in pts]
        if spread_over([x for x, _ in every]):
            ax.set_xscale("log")
        if spread_over([y for _, y in every]):
            ax.set_yscale("log")
        ax.set_xlabel("mean read response time (ms)")
        ax.set_ylabel("standard deviation of read response time (ms)")
        title = self.title(model, workload, "Read response: mean vs std. dev., one per trial")
        name = f"{model}-{workload}-mean-std.png"
        self.finish(fig, ax, title, name, "read response, mean vs std. dev.")

    def hist(self, model, workload, rows):
        hists = {}
        for row, d in rows.items():
            values = pooled_reads(d)
            if values:
                hists[row] = [c / len(values) for c in log2_histogram(values)]
        if not hists:
            return
        nb = max(len(h) for h in hists.values())
        fig, axes = self.figure()
        ax = axes[0][0]
        for row, fr in hists.items():
            # Empty buckets are left as gaps: a log axis has no 0.
            ys = [f if f > 0 else float("nan") for f in fr]
            ax.step(
                range(len(ys) + 1),
                ys + ys[-1:],
                where="post",
                color=self.colour(row),
                linewidth=1.8,
                label=display(row),
            )
        ax.set_yscale("log")
        ax.set_xticks([k + 0.5 for k in range(nb)])
        ax.set_xticklabels([bucket_label(k) for k in range(nb)], rotation=45, fontsize=8)
        ax.set_xlim(0, nb)
        ax.set_xlabel("read response time (ms, power-of-two buckets)")
        ax.set_ylabel("fraction of reads (log scale)")
        title = self.title(model, workload, "Read response histogram, all trials")
        name = f"{model}-{workload}-hist.png"
        self.finish(fig, ax, title, name, "read response histogram, log2 buckets")

    def bursts(self, model, workload, rows):
        curves = {row: cumulative_pages(d["bursts"]) for row, d in rows.items() if d["bursts"]}
        if not curves:
            return
        fig, axes = self.figure()
        ax = axes[0][0]
        for row, (xs, ys) in curves.items():
            ax.step(
                [xs[0]] + xs,
                [0.0] + ys,
                where="post",
                color=self.colour(row),
                linewidth=1.8,
                label=display(row),
            )
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"burst size (pages queued with gaps < {BURST_GAP_S * 1000:.0f} ms)")
        ax.set_ylabel("cumulative fraction of pages written")
        title = self.title(model, workload, "Pages written, by size of their burst")
        name = f"{model}-{workload}-bursts.png"
        self.finish(fig, ax, title, name, "pages written by burst size, CDF")

    def timeline(self, model, workload, rows):
        series = {row: first_trial_rates(d) for row, d in rows.items()}
        series = {row: rates for row, rates in series.items() if rates[0]}
        if not series:
            return
        n = len(series)
        fig, axes = self.figure(nrows=n, height=max(5.0, 1.3 * n + 1.0), sharex=True)
        for ax, (row, (reads, writes)) in zip(axes[:, 0], series.items()):
            edges = range(len(reads) + 1)
            ax.stairs(reads, edges, color="#1f77b4", label="reads")
            ax.stairs(writes, edges, color="#ff7f0e", label="writes")
            ax.text(
                0.01,
                0.85,
                display(row),
                transform=ax.transAxes,
                fontsize=9,
                fontweight="bold",
                color=self.colour(row),
            )
            ax.set_ylabel("I/Os per s")
            ax.grid(True, alpha=0.3)
        axes[0][0].legend(fontsize=8, loc="upper right")
        axes[-1][0].set_xlabel("time since the run started (s)")
        axes[0][0].set_title(
            self.title(model, workload, "Disk I/Os completed per second, first trial")
        )
        self.save(fig, f"{model}-{workload}-timeline.png", "reads and writes completed per second")

    def age(self, model, workload, rows):
        hists = {row: pooled_age_hist(d) for row, d in rows.items()}
        hists = {row: [c / sum(h) for c in h] for row, h in hists.items() if sum(h)}
        if not hists:
            return
        used = [k for h in hists.values() for k, c in enumerate(h) if c]
        lo, hi = min(used), max(used) + 1
        # Bucket k holds ages [2^(k-1), 2^k) ms; bucket 0 (age 0) is drawn at [0.5, 1) ms.
        edges = [2 ** (k - 1) / 1000 for k in range(lo, hi + 1)]
        fig, axes = self.figure()
        ax = axes[0][0]
        for row, h in hists.items():
            vals = (h + [0.0] * hi)[lo:hi]
            ax.stairs(vals, edges, color=self.colour(row), linewidth=1.8, label=display(row))
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(self.plain)
        ax.set_xlabel("age of the page when aipu wrote it (s, power-of-two buckets)")
        ax.set_ylabel("fraction of the pages aipu wrote")
        title = self.title(model, workload, "Age of pages at write, all trials")
        self.finish(fig, ax, title, f"{model}-{workload}-age.png", "age of the pages aipu wrote")

    def bars(self, ax, cell, run_key, sync_key):
        rows = [r for r, a in cell.items() if a.get(run_key) is not None]
        run = [cell[r][run_key] for r in rows]
        sync = [cell[r].get(sync_key) or 0 for r in rows]
        colours = [self.colour(r) for r in rows]
        ax.bar(range(len(rows)), run, color=colours, label="during the run")
        ax.bar(
            range(len(rows)),
            sync,
            bottom=run,
            color=colours,
            alpha=0.4,
            hatch="//",
            label="at the final sync",
        )
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([display(r) for r in rows], rotation=30, ha="right", fontsize=8)
        return rows

    def rewrite_writes(self, model, cell):
        if not any(a.get("disk_writes") is not None for a in cell.values()):
            return
        fig, axes = self.figure()
        ax = axes[0][0]
        self.bars(ax, cell, "disk_writes", "sync_writes")
        calls = mean(a.get("pages_dirtied") for a in cell.values())
        distinct = mean(a.get("distinct_pages") for a in cell.values())
        if calls:
            ax.axhline(
                calls, color="#555555", linestyle="--", label="pages dirtied (write() calls)"
            )
        if distinct:
            ax.axhline(distinct, color="#555555", linestyle=":", label="distinct pages dirtied")
        ax.set_ylabel("disk write requests per trial (mean)")
        ax.set_title(self.title(model, "rewrite", "Disk writes vs pages dirtied"))
        ax.grid(True, axis="y", alpha=0.3)
        # Headroom, so that the legend covers no bar.
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
        ax.legend(fontsize=8, ncol=2, loc="upper center")
        self.save(fig, f"{model}-rewrite-writes.png", "disk writes per row vs pages dirtied")

    def db_bars(self, model, cell):
        if not any(a.get("elapsed_s") is not None for a in cell.values()):
            return
        fig, axes = self.figure(ncols=2)
        left, right = axes[0]
        rows = [r for r, a in cell.items() if a.get("elapsed_s") is not None]
        left.bar(
            range(len(rows)),
            [cell[r]["elapsed_s"] for r in rows],
            color=[self.colour(r) for r in rows],
        )
        left.set_xticks(range(len(rows)))
        left.set_xticklabels([display(r) for r in rows], rotation=30, ha="right", fontsize=8)
        left.set_ylabel("elapsed time (s, mean over trials)")
        self.bars(right, cell, "disk_writes", "sync_writes")
        right.set_ylabel("disk write requests (mean over trials)")
        right.legend(fontsize=8)
        fig.suptitle(self.title(model, "db", "SQLite TPC-B-like transactions"))
        self.save(fig, f"{model}-db-table.png", "db elapsed time and disk writes")

    def overhead(self, model, cell):
        rows = [r for r, a in cell.items() if a.get("seq_write_vs_none") or a.get("files_vs_none")]
        if not rows:
            return
        fig, axes = self.figure()
        ax = axes[0][0]
        width = 0.8 / len(rows)
        metrics = (
            ("seq_write_vs_none", "seq_write_mib_s", "MiB/s"),
            ("files_vs_none", "files_per_s", "files/s"),
        )
        for i, row in enumerate(rows):
            xs = [m + (i - (len(rows) - 1) / 2) * width for m in range(len(metrics))]
            ys = [cell[row].get(key) or 0 for key, _, _ in metrics]
            ax.bar(xs, ys, width, color=self.colour(row), label=display(row))
            values = [cell[row].get(abs_key) for _, abs_key, _ in metrics]
            units = [unit for _, _, unit in metrics]
            label_bars(ax, xs, ys, values, units)
        ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(metrics)))
        ax.set_xticklabels(["sequential buffered write (fio)", "small-file create/write/delete"])
        ax.set_ylabel("throughput relative to row none (none = 1)")
        ax.set_ylim(0, max(1.2, ax.get_ylim()[1] * 1.1))
        ax.set_title(self.title(model, "overhead", "Throughput relative to no module"))
        ax.legend(fontsize=8)
        self.save(fig, f"{model}-overhead.png", "throughput relative to no module")


def label_bars(ax, xs, ys, values, units):
    """Write each bar's ratio and absolute value inside its top."""
    for x, y, value, unit in zip(xs, ys, values, units):
        # A bar too short for three lines of text is left unlabelled.
        if value is not None and y > 0.2:
            text = f"{y:.2f}\n{value:.0f}\n{unit}"
            ax.text(x, y - 0.03, text, ha="center", va="top", fontsize=7, color="white")


def open_plots(root, kernel, rows):
    """A Plots, or None (with a warning) when matplotlib cannot be imported."""
    try:
        return Plots(root, kernel, rows)
    except ImportError as exc:
        warn(f"no plots: {exc} (run with /usr/bin/python3, or give --no-plots)")
        return None


# ---------------------------------------------------------------- main


def discover(root):
    """[(model, env, probe, [(workload, {row: dir})])] with nothing loaded yet."""
    out = []
    for model in model_dirs(root):
        mdir = os.path.join(root, model)
        menv = read_env(mdir)
        probe_path = os.path.join(mdir, "probe.json")
        probe = load_json(probe_path) if os.path.exists(probe_path) else None
        cells = []
        for wl in workload_dirs(mdir, menv):
            cells.append((wl, row_dirs(os.path.join(mdir, wl), listed_rows(menv, wl))))
        out.append((model, menv, probe, cells))
    return out


def all_rows(layout):
    return [row for _, _, _, cells in layout for _, rows in cells for row in rows]


def model_section(model, menv, probe, cells, plots, state):
    """summary.md's lines for one model; fills state's summary and errors."""
    lines = [f"## {model}", "", model_line(model, menv, probe), "", run_line(menv)]
    workloads = {}
    for wl, dirs in cells:
        lines += ["", f"### {model} / {wl}", ""]
        if kind(wl) is None:
            lines.append("not summarized: report.py does not know this workload.")
            continue
        if not dirs:
            lines.append("missing: no results.")
            continue
        rows = {row: load_row(d, expected_trials(menv, wl)) for row, d in dirs.items()}
        for row, data in rows.items():
            state["files"] += len(data["trials"]) + len(data["fio"])
            state["errors"] += trial_errors(f"{model}/{wl}/{row}", data)
        cell = aggregate_cell(wl, rows)
        workloads[wl] = cell
        lines.append(cell_table(wl, cell))
        if plots:
            plots.cell(model, wl, rows, cell)
    state["summary"]["models"][model] = {"env": menv, "probe": probe, "workloads": workloads}
    return lines


def plots_lines(plots, no_plots):
    lines = ["## Plots", ""]
    if no_plots:
        return lines + ["not drawn (--no-plots)."]
    if plots is None:
        return lines + ["not drawn: matplotlib could not be imported."]
    if not plots.written:
        return lines + ["none: no data to plot."]
    return lines + [f"- `{path}`: {what}" for path, what in plots.written]


def build(root, no_plots):
    """(summary.md text, summary dict, exit status) for RESULTS_DIR ROOT."""
    env = read_env(root)
    layout = discover(root)
    plots = None if no_plots else open_plots(root, env.get("kernel", "?"), all_rows(layout))
    state = {"summary": {"env": env, "models": {}}, "errors": [], "files": 0}
    lines = header_lines(env)
    for model, menv, probe, cells in layout:
        lines += [""] + model_section(model, menv, probe, cells, plots, state)
    summary = state["summary"]
    summary["claims"] = claims(summary)
    lines += ["", "## Claims", ""] + [claim_line(c) for c in summary["claims"]]
    if state["errors"]:
        lines += ["", "## Errors", ""] + [f"- {e}" for e in state["errors"]]
    lines += [""] + plots_lines(plots, no_plots)
    summary["plots"] = [path for path, _ in plots.written] if plots else []
    summary["errors"] = state["errors"]
    status = 0
    if state["files"] == 0:
        warn(f"no result file (MODEL/WORKLOAD/ROW/trial<N>.json) under {root}")
        status = 1
    for e in state["errors"]:
        warn(f"errors during a run: {e}")
        status = 1
    return "\n".join(lines) + "\n", summary, status


def main(argv=None):
    ap = argparse.ArgumentParser(description="Tables and plots for one benchmark run.")
    ap.add_argument("results_dir", metavar="RESULTS_DIR", help="one run: env.txt and MODEL/ dirs")
    ap.add_argument("--no-plots", action="store_true", help="write the tables only")
    args = ap.parse_args(argv)
    root = args.results_dir
    if not os.path.isdir(root):
        warn(f"{root} is not a directory: give the directory scripts/bench.sh wrote.")
        return 1
    text, summary, status = build(root, args.no_plots)
    with open(os.path.join(root, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(root, "summary.json"), "w") as f:
        json.dump(rounded(summary), f, indent=1)
        f.write("\n")
    sys.stdout.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
