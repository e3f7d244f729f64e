#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plots and key figures for one run of the scale benchmark (bench/scale/).

Usage: report.py RESULTS_DIR [--no-plots]

RESULTS_DIR holds what bench/scale/scale wrote there: noise.json, runs.json,
files.json, threads.json, scan.json, kill.json, requeue.json, memory.json and
meta.json (any may be missing when scale ran with --only). Writes into RESULTS_DIR/plots/:

  runs.png     ns per transition against pages dirtied in one file (median
               solid, p99 dashed), one line per pattern, log axes
  files.png    ns per transition against tracked files, log axes
  holds.png    phase 1's longest lock hold against the backlog, batched and
               in one hold, and phase 2's take, log axes, the 50 us line and
               the host's noise (the longest hold of a fixed 10 us computation)
  kill.png     eviction's longest hold against the file's runs, log axes
  threads.png  transitions a second, one thread against two
  requeue.png  phase 2's track_requeue() of a whole-file run: one hold
               against the file's runs, log axes, the 50 us line

and prints the key figures as markdown on stdout.
"""

import argparse
import json
import sys
from pathlib import Path

TARGET_US = 50  # issue 14: the longest interrupts-off section, host CPU


def load(d, name):
    p = d / f"{name}.json"
    if not p.exists():
        return None
    with p.open() as f:
        return json.load(f)


def us(ns):
    return ns / 1000.0


def median(v):
    """The lower median, as scale.c's median_of()."""
    return sorted(v)[(len(v) - 1) // 2]


def noise_max(data):
    """The longest hold of the fixed ~10 us computation (table 0), or None."""
    noise = data.get("noise")
    if not noise:
        return None
    rows = [r for r in noise["rows"] if r["target_ns"] >= 10000]
    return max((r["hold"]["max"] for r in rows), default=None)


def key_figures(data):
    """Markdown lines: the numbers the issue asks for, from the JSON."""
    out = ["## Key figures", ""]
    noise = data.get("noise")
    if noise:
        parts = [
            f"{r['when']}, {r['target_ns'] / 1000:.0f} us of work: p99.9 "
            f"{us(r['hold']['p999']):.1f} us, max {us(r['hold']['max']):.1f} us"
            for r in noise["rows"]
        ]
        out.append(
            "- the host's noise (holds of a fixed computation, table 0): " + "; ".join(parts)
        )
    runs = data.get("runs")
    if runs:
        for r in runs["rows"]:
            if r["n"] in (1000000, 10000000) and r["pattern"] in (
                "random_one",
                "random_spread",
            ):
                out.append(
                    f"- {r['pattern_name']}, N = {r['n']:,}: median "
                    f"{r['ns']['median']:.0f} ns, p99 {r['ns']['p99']:.0f} ns a "
                    f"transition ({r['runs_tracked']:,} runs tracked, "
                    f"{r['fallbacks']:,} fallbacks)"
                )
    files = data.get("files")
    if files:
        for r in files["rows"]:
            if r["files"] == max(x["files"] for x in files["rows"]):
                out.append(
                    f"- {r['files']:,} files: median {r['ns']['median']:.0f} ns, "
                    f"p99 {r['ns']['p99']:.0f} ns a transition (new page of a "
                    f"random file); first page of a file median "
                    f"{r['create_ns']['median']:.0f} ns"
                )
    thr = data.get("threads")
    if thr:
        parts = [
            f"{r['name']} {r['per_s_median'] / 1e6:.2f} M/s "
            f"({median(r['cpu_ns_per_transition']):.0f} CPU-ns a transition, "
            f"{median(r['cpus_busy']):.2f} CPUs busy)"
            for r in thr["rows"]
        ]
        out.append("- transitions a second (median of rounds): " + "; ".join(parts))
    scan = data.get("scan")
    if scan:
        for r in scan["rows"]:
            if r["n"] >= 1000000:
                one = median(r["one_hold_cpu"])
                out.append(
                    f"- phase 1, backlog {r['n']:,} ({r['layout']}): longest "
                    f"batched hold {us(r['batched']['max']):.1f} us (p99 "
                    f"{us(r['batched']['p99']):.2f} us); in one hold "
                    f"{us(one):,.0f} us CPU; phase 2 take max "
                    f"{us(r['take']['max']):.1f} us"
                )
        a = scan.get("absorb")
        if a:
            out.append(
                f"- phase 2 take folding {a['absorb_max']} neighbours: median "
                f"{us(a['take']['median']):.1f} us, max {us(a['take']['max']):.1f} us"
            )
    kill = data.get("kill")
    if kill:
        r = max(kill["rows"], key=lambda x: x["n"])
        one = median(r["one_hold_cpu"])
        out.append(
            f"- eviction of a file with {r['n']:,} runs: longest batched hold "
            f"{us(r['batched']['max']):.1f} us (p99 {us(r['batched']['p99']):.1f} "
            f"us); in one hold {us(one):,.0f} us CPU"
        )
    rq = data.get("requeue")
    if rq:
        for case in ("gaps", "covered"):
            rows = [r for r in rq["rows"] if r["case"] == case]
            if rows:
                r = max(rows, key=lambda x: x["n"])
                out.append(
                    f"- NOT BATCHED: track_requeue() of a whole-file run over one "
                    f"extent ({case}), file of {r['n']:,} runs: one hold "
                    f"{us(min(r['wall'])):,.0f} us wall, {us(median(r['cpu'])):,.0f} us CPU "
                    f"({r['made']:,} runs made)"
                )
    mem = data.get("memory")
    if mem:
        out.append(
            f"- sizeof(struct aipu_run) = {mem['sizeof_run']} B, a tracker "
            f"as allocated {mem['sizeof_mapping']} B: random single pages "
            f"cost {mem['sizeof_run']} B a page against the 16 B target"
        )
    return out


def finish_hold_plot(fig, ax, data, xlabel, title, path, legend_size):
    """The lock-hold plots' common frame: target and noise lines, log axes."""
    import matplotlib.pyplot as plt

    ax.axhline(TARGET_US, color="grey", lw=0.8, ls=":", label=f"{TARGET_US} us")
    nm = noise_max(data)
    if nm:
        ax.axhline(us(nm), color="black", lw=0.8, ls="-.", label="host noise: max of 10 us work")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("lock hold, us")
    ax.set_title(title)
    ax.legend(fontsize=legend_size)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def plot_all(data, plots):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots.mkdir(parents=True, exist_ok=True)
    made = []

    runs = data.get("runs")
    if runs:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        names = {}
        for r in runs["rows"]:
            names.setdefault(r["pattern"], (r["pattern_name"], []))[1].append(r)
        for i, (_, (name, rows)) in enumerate(names.items()):
            x = [r["n"] for r in rows]
            color = f"C{i}"
            ax.plot(x, [r["ns"]["median"] for r in rows], "o-", color=color, label=name)
            ax.plot(x, [r["ns"]["p99"] for r in rows], "x--", color=color)
        ax.axvline(
            data["meta"]["runs_per_tracker_max"] if data.get("meta") else 65536,
            color="grey",
            lw=0.8,
            ls=":",
            label="AIPU_RUNS_PER_TRACKER_MAX",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("pages dirtied (random: runs requested)")
        ax.set_ylabel("ns per clean->dirty transition")
        ax.set_title("Cost per transition against runs (median solid, p99 dashed)")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(plots / "runs.png", dpi=120)
        plt.close(fig)
        made.append("runs.png")

    files = data.get("files")
    if files:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        rows = files["rows"]
        x = [r["files"] for r in rows]
        ax.plot(x, [r["ns"]["median"] for r in rows], "o-", color="C0", label="new page, median")
        ax.plot(x, [r["ns"]["p99"] for r in rows], "x--", color="C0", label="new page, p99")
        ax.plot(
            x,
            [r["create_ns"]["median"] for r in rows],
            "s-",
            color="C1",
            label="first page of a file, median",
        )
        ax.plot(
            x,
            [r["create_ns"]["p99"] for r in rows],
            "+--",
            color="C1",
            label="first page of a file, p99",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tracked files")
        ax.set_ylabel("ns per transition")
        ax.set_title("Cost per transition against tracked files (hash stand-in)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(plots / "files.png", dpi=120)
        plt.close(fig)
        made.append("files.png")

    scan = data.get("scan")
    if scan:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for i, layout in enumerate(("in order", "scattered")):
            rows = [r for r in scan["rows"] if r["layout"] == layout]
            if not rows:
                continue
            x = [r["n"] for r in rows]
            ls = "-" if i == 0 else "--"
            ax.plot(
                x,
                [us(r["batched"]["max"]) for r in rows],
                "o" + ls,
                color="C0",
                label=f"phase 1 batched, max ({layout})",
            )
            ax.plot(
                x,
                [us(r["batched"]["p99"]) for r in rows],
                "x" + ls,
                color="C2",
                label=f"phase 1 batched, p99 ({layout})",
            )
            ax.plot(
                x,
                [us(median(r["one_hold_cpu"])) for r in rows],
                "s" + ls,
                color="C3",
                label=f"phase 1 in one hold, CPU ({layout})",
            )
            ax.plot(
                x,
                [us(r["take"]["max"]) for r in rows],
                "^" + ls,
                color="C1",
                label=f"phase 2 take, max ({layout})",
            )
        made.append(
            finish_hold_plot(
                fig,
                ax,
                data,
                "backlog: due pages (one-page runs)",
                f"Phase 1 hold against the backlog (budget {scan['scan_batch']})",
                plots / "holds.png",
                6.5,
            )
        )

    kill = data.get("kill")
    if kill:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        rows = kill["rows"]
        x = [r["n"] for r in rows]
        ax.plot(x, [us(r["batched"]["max"]) for r in rows], "o-", label="batched, max")
        ax.plot(x, [us(r["batched"]["p99"]) for r in rows], "x-", label="batched, p99")
        ax.plot(
            x,
            [us(median(r["one_hold_cpu"])) for r in rows],
            "s-",
            label="one hold, CPU",
        )
        made.append(
            finish_hold_plot(
                fig,
                ax,
                data,
                "runs of the evicted file",
                f"Eviction hold against the file's runs (budget {kill['kill_batch']})",
                plots / "kill.png",
                8,
            )
        )

    rq = data.get("requeue")
    if rq:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for i, case in enumerate(("gaps", "covered")):
            rows = [r for r in rq["rows"] if r["case"] == case]
            if not rows:
                continue
            x = [r["n"] for r in rows]
            ax.plot(
                x,
                [us(median(r["cpu"])) for r in rows],
                "o-",
                color=f"C{i}",
                label=f"{case}: {rows[0]['case_name']}",
            )
        ax.axhline(TARGET_US, color="grey", lw=0.8, ls=":", label=f"{TARGET_US} us")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("runs of the file")
        ax.set_ylabel("one lock hold, us (CPU time, median of rounds)")
        ax.set_title("Not batched: track_requeue() of a whole-file run, one extent")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(plots / "requeue.png", dpi=120)
        plt.close(fig)
        made.append("requeue.png")

    thr = data.get("threads")
    if thr:
        fig, ax = plt.subplots(figsize=(7, 4))
        rows = thr["rows"]
        labels = [r["name"].replace(" (", "\n(") for r in rows]
        ax.bar(range(len(rows)), [r["per_s_median"] / 1e6 for r in rows], color="C0", alpha=0.6)
        for i, r in enumerate(rows):
            ax.plot([i] * len(r["per_s_rounds"]), [v / 1e6 for v in r["per_s_rounds"]], "k.")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("million transitions a second")
        ax.set_title("One thread against two (bars: median of rounds; dots: rounds)")
        fig.tight_layout()
        fig.savefig(plots / "threads.png", dpi=120)
        plt.close(fig)
        made.append("threads.png")
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    names = ("meta", "noise", "runs", "files", "threads", "scan", "kill", "requeue", "memory")
    data = {n: load(args.dir, n) for n in names}
    data = {k: v for k, v in data.items() if v is not None}
    if len(data) <= 1:
        print(f"report.py: no results in {args.dir}", file=sys.stderr)
        return 1
    lines = key_figures(data)
    if not args.no_plots:
        made = plot_all(data, args.dir / "plots")
        lines += ["", "Plots: " + ", ".join(f"[{m}](plots/{m})" for m in made)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
