#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The demo's plot: per row, read latency over time and writes dispatched per second.

Usage: demo_plot.py DIR [--out PNG]

DIR is the demo's output directory (scripts/demo.sh): env.txt, and per row
<row>.json (bench/workload.py run) and <row>.writes.gz (the disk's write
requests as blktrace saw them dispatched, with the workload's marker reads
at the run's start and end; scripts/guest-lib.sh, blk_stop). Draws one
panel per row, the rows stacked on one time axis (seconds since the run's
start): every read's latency as a dot (left axis, log scale) and the write
requests dispatched to the disk in each second as steps (right axis). A row
without its writes.gz shows the writes the disk completed each second
instead (bench/workload.py's disk samples), and says so.

Writes PNG (default DIR/demo.png) and prints its path. Exit status 1 if
DIR holds no row's results or matplotlib is missing.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report import per_second, read_writes  # noqa: E402
from summarize import display, file_name, load, read_env  # noqa: E402


def warn(msg):
    print(f"demo_plot: {msg}", file=sys.stderr)


def dispatched_per_second(path, seconds):
    """Write requests dispatched in each whole second of the run, from a
    writes.gz (None if there is none)."""
    if not os.path.exists(path):
        return None
    counts = [0] * seconds
    for t, _ in read_writes(path):
        if 0 <= t < seconds:
            counts[int(t)] += 1
    return counts


def row_series(dirpath, row, run):
    """(read times, read ms, writes per second, what the writes are)."""
    reads = (run.get("series") or {}).get("reads") or []
    seconds = int(math.ceil(run.get("config", {}).get("duration_s", 0) or 1))
    gz = os.path.join(dirpath, file_name(row)[: -len(".json")] + ".writes.gz")
    writes = dispatched_per_second(gz, seconds)
    what = "writes dispatched per s"
    if writes is None:
        s = run.get("series") or {}
        writes = per_second(s.get("disk") or [], s.get("disk_fields") or [])[1]
        what = "writes completed per s (no blktrace)"
    return [t for t, _ in reads], [ms for _, ms in reads], writes, what


def title(env):
    g = env.get
    model = g("disk_model", "throttle")
    return (
        f"aipu demo: read latency and writes dispatched, per update policy\n"
        f"kernel {g('kernel', '?')}, disk model {model}, {g('rate_per_s', '?')} random "
        f"pages dirtied/s, max_age {g('max_age_ms', '?')} ms; {g('date', '')} "
        f"commit {g('commit', '?')}"
    )


def draw(dirpath, out):
    env = read_env(dirpath)
    runs = load(dirpath, env)
    if not runs:
        warn(f"{dirpath}: no <row>.json result files: did the demo run?")
        return 1
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        warn(f"cannot draw the plot: {exc} (install python3-matplotlib)")
        return 1

    series = {row: row_series(dirpath, row, run) for row, run in runs.items()}
    top_ms = max((max(ms, default=1.0) for _, ms, _, _ in series.values()), default=1.0)
    top_w = max((max(w, default=1) for _, _, w, _ in series.values()), default=1)
    dur = max(run.get("config", {}).get("duration_s", 0) or 0 for run in runs.values()) or 1
    n = len(series)
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.7 * n + 1.2), dpi=100, sharex=True, squeeze=False)
    for ax, (row, (ts, ms, writes, what)) in zip(axes[:, 0], series.items()):
        wax = ax.twinx()
        wax.stairs(writes, range(len(writes) + 1), color="#ff7f0e", fill=True, alpha=0.35)
        wax.set_ylim(0, top_w * 1.15)
        wax.set_ylabel(what.replace(" per s", "/s").replace(" (no blktrace)", "*"), fontsize=7)
        wax.tick_params(labelsize=7)
        ax.set_zorder(wax.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.scatter(ts, ms, s=2, color="#1f77b4", linewidths=0)
        ax.set_yscale("log")
        ax.set_ylim(1, top_ms * 2)
        ax.set_xlim(0, dur)
        ax.set_ylabel("read ms", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
        r = runs[row].get("reads") or {}
        worst = r.get("max_ms", 0.0)
        label = (
            f"{display(row)}: worst read {worst / 1000:.2f} s"
            if worst >= 1000
            else (f"{display(row)}: worst read {worst:.0f} ms")
        )
        ax.text(0.005, 0.84, label, transform=ax.transAxes, fontsize=9, fontweight="bold")
    axes[-1][0].set_xlabel("seconds since the row's run started")
    axes[0][0].set_title(title(env), fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    print(out)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="Draw the aipu demo's plot.")
    ap.add_argument("dir", help="the demo's output directory")
    ap.add_argument("--out", help="PNG to write (default DIR/demo.png)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dir):
        warn(f"{args.dir} is not a directory: give the demo's output directory.")
        return 1
    return draw(args.dir, args.out or os.path.join(args.dir, "demo.png"))


if __name__ == "__main__":
    sys.exit(main())
