#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plots and key figures for one run of the scale benchmark (bench/scale/).

Usage: report.py RESULTS_DIR [--no-plots]

RESULTS_DIR holds what bench/scale/scale wrote there: noise.json, pages.json,
files.json, threads.json, holds.json, evict.json, steady.json, memory.json,
criterion.json and meta.json (any may be missing when scale ran with --only).
Writes into RESULTS_DIR/plots/:

  pages.png    ns per transition against pages dirtied (median solid, p99
               dashed), one line per pattern, the per-file cap, log axes
  files.png    ns per transition against tracked files, log axes
  holds.png    the flusher's longest holds against the backlog (p99.9 and
               max of phase 1, take, hand-back, end of pass, rmmod, probe),
               one panel per backlog, the 50 us line and the control's
               (a fixed 10 us computation) p99.9 and max, log axes
  evict.png    eviction of one file: p99.9 and max hold against its pages
  threads.png  transitions a second, one thread against two
  steady.png   files phase 1 looks at per extent written against the files,
               one line per set-up, the 1.05 target

and prints the key figures as markdown on stdout.
"""

import argparse
import json
import sys
from pathlib import Path

TARGET_US = 50  # issue 14: the longest interrupts-off section, host CPU
STEADY_TARGET = 1.05  # issue 14: files looked at per extent written
NAMES = (
    "meta",
    "noise",
    "pages",
    "files",
    "threads",
    "holds",
    "evict",
    "steady",
    "memory",
    "criterion",
    "repeat",
    "criterion_repeat",
    "first_touch",
)
HOLDS = (
    ("scan", "phase 1"),
    ("take", "take"),
    ("handback", "hand-back"),
    ("end_pass", "end of pass"),
    ("forget", "rmmod"),
    ("probe", "probe"),
)


def load(d, name):
    p = d / f"{name}.json"
    if not p.exists():
        return None
    with p.open() as f:
        return json.load(f)


def us(ns):
    return ns / 1000.0


def median(v):
    """The lower median, as stats.c's median_of()."""
    return sorted(v)[(len(v) - 1) // 2]


def control(data):
    """The fixed ~10 us computation's worst p99.9 and max in ns, or None."""
    noise = data.get("noise")
    rows = [r for r in noise["rows"] if r["target_ns"] >= 10000] if noise else []
    if not rows:
        return None
    return max(r["hold"]["p999"] for r in rows), max(r["hold"]["max"] for r in rows)


def pair(h):
    """'p99.9 / max' of one timed set, in us."""
    return f"{us(h['p999']):.1f} / {us(h['max']):.1f} us"


def key_pages(data, out):
    pages = data.get("pages")
    if not pages:
        return
    for r in pages["rows"]:
        if r["pattern"] in ("random_one", "random_spread") and r["n"] in (1000, 1000000, 10000000):
            out.append(
                f"- {r['pattern_name']}, N = {r['n']:,}: median {r['ns']['median']:.0f} ns, "
                f"p99 {r['ns']['p99']:.0f} ns, p99.9 {r['ns']['p999']:.0f} ns a transition; "
                f"{r['pages_tracked']:,} pages tracked one by one, "
                f"{r['pages_by_fallback']:,} bounded by fallback ({r['fallbacks']} fallbacks, "
                f"{r['files']} files)"
            )


def key_files(data, out):
    files = data.get("files")
    if not files:
        return
    for r in files["rows"]:
        if r["files"] in (1, 100000, 1000000):
            out.append(
                f"- {r['files']:,} files: median {r['ns']['median']:.0f} ns, p99 "
                f"{r['ns']['p99']:.0f} ns a transition (a new page of a random file); "
                f"first page of a file median {r['create_ns']['median']:.0f} ns"
            )


def key_threads(data, out):
    thr = data.get("threads")
    if not thr:
        return
    parts = [
        f"{r['name']} {r['per_s_median'] / 1e6:.2f} M/s "
        f"({median(r['cpu_ns_per_transition']):.0f} CPU-ns a transition, "
        f"{median(r['cpus_busy']):.2f} CPUs busy)"
        for r in thr["rows"]
    ]
    out.append("- transitions a second (median of rounds): " + "; ".join(parts))


def key_holds(data, out):
    holds = data.get("holds")
    if holds:
        for r in holds["rows"]:
            if r["n"] < 1000000:
                continue
            parts = [f"{name} {pair(r[k])}" for k, name in HOLDS]
            out.append(
                f"- holds (p99.9 / max), backlog {r['n']:,} pages, {r['backlog_name']}: "
                + ", ".join(parts)
                + f"; phase 1 in one hold {us(median(r['one_hold_cpu'])):,.0f} us CPU"
            )
            if "dirty_end_pass_longest_cpu" in r:
                out.append(
                    f"- the same backlog, every page still dirty after its write: "
                    f"hand-back {pair(r['dirty_handback'])}, **end of pass: longest hold "
                    f"{us(r['dirty_end_pass_longest_wall']):,.0f} us wall, "
                    f"{us(r['dirty_end_pass_longest_cpu']):,.0f} us CPU** (a file's retries "
                    f"count against the hold's budget)"
                )
    if holds and holds.get("cut_slot"):
        parts = [
            f"{r['files']:,} files {us(median(r['last_hold'])):,.1f} us" for r in holds["cut_slot"]
        ]
        out.append(
            "- phase 1 with its cutoff inside a slot, the hold that finishes the slot "
            "(the not-due files spliced back; median of rounds): " + ", ".join(parts)
        )
    evict = data.get("evict")
    if evict:
        for r in evict["rows"]:
            if r["n"] == 1000000:
                out.append(
                    f"- eviction of one file, {r['pattern_name']}, N = {r['n']:,} "
                    f"({r['pages_tracked']:,} pages tracked, {r['objects']:,} objects): "
                    f"holds {pair(r['batched'])}; in one hold "
                    f"{us(median(r['one_hold_cpu'])):,.0f} us CPU"
                )
                for k, what in (("shrink", "the shrinker"), ("park", "an umount's park")):
                    if k in r:
                        out.append(f"- the same file freed by {what}: holds {pair(r[k])}")


def key_criterion_repeat(data, out):
    c = data.get("criterion_repeat")
    if not c:
        return
    yes = {True: "met", False: "NOT met"}
    out.append(
        f"- **criterion by each hold's least of {c['repeats']} readings over the same "
        f"backlog (table 8): {yes[c['met']]}** ({us(c['worst_least_ns']):.1f} us, "
        f"{c['worst_least_what']}); control: {us(c['control_10us_least_max_ns']):.1f} us "
        f"for 10 us of work, {us(c['control_40us_least_max_ns']):.1f} us for 40 us; by the "
        f"holds' medians the worst is {us(c['worst_median_ns']):.1f} us "
        f"({c['worst_median_what']})"
    )


def key_first_touch(data, out):
    f = data.get("first_touch")
    if not f:
        return
    rows = f["rows"]
    over = ", ".join(str(r["over_20us"]) for r in rows)
    medians = ", ".join("%.1f" % us(r["median"]) for r in rows)
    worst = max(us(r["max"]) for r in rows)
    out.append(
        f"- the host's first touch of memory idle {rows[0]['idle_s']:.1f} s (table 0b, not "
        f"aipu's code): {over} of {rows[0]['pages']} 2-MiB pages over 20 us, medians "
        f"{medians} us, max {worst:,.0f} us"
    )


def key_criterion(data, out):
    key_first_touch(data, out)
    key_criterion_repeat(data, out)
    c = data.get("criterion")
    if not c:
        return
    yes = {True: "met", False: "NOT met"}
    noise = (
        "the max is disturbed by host noise (the control's own max is over 50 us)"
        if c["max_disturbed_by_noise"]
        else "the control's max stays under 50 us"
    )
    out.append(
        f"- **criterion, 1,000,000 pages tracked, longest interrupts-off section <= 50 us: "
        f"by p99.9 {yes[c['met_p999']]}** ({us(c['worst_p999_ns']):.1f} us, "
        f"{c['worst_p999_what']}); **by max {yes[c['met_max']]}** "
        f"({us(c['worst_max_ns']):.1f} us, {c['worst_max_what']}); control (10 us of work): "
        f"p99.9 {us(c['control_p999_ns']):.1f} us, max {us(c['control_max_ns']):.1f} us: "
        f"{noise}; for reference the worst p99 is {us(c['worst_p99_ns']):.1f} us "
        f"({c['worst_p99_what']}; the control's p99 {us(c['control_p99_ns']):.1f} us)"
    )
    if c.get("cut_slot_10k_max_ns"):
        out.append(
            f"- not counted above: phase 1's hold that finishes a slot its cutoff cuts, "
            f"{us(c['cut_slot_10k_max_ns']):,.1f} us with 10,000 files in the slot, "
            f"{us(c['cut_slot_100k_max_ns']):,.1f} us with 100,000"
        )
    if c.get("dirty_end_pass_cpu_ns"):
        out.append(
            f"- not counted above: a pass that puts every page back, its end of pass holds "
            f"the lock {us(c['dirty_end_pass_wall_ns']):,.0f} us (wall), "
            f"{us(c['dirty_end_pass_cpu_ns']):,.0f} us (CPU)"
        )


def key_memory(data, out):
    mem = data.get("memory")
    if not mem:
        return
    want = (
        "random pages, one file, N = 100,000",
        "random pages, one file, N = 1,000,000",
        "random pages, files of <= 262,144 pages, N = 10,000,000",
        "random pages, sparse (a 512-page live chunk each), N = 100,000",
        "sequential, 1,024 pages a jiffy, N = 1,000,000",
        "sequential, a page a jiffy, N = 1,000,000",
        "files of 4 pages, in address order, N = 100,000",
        "files of 4 pages, in address order, N = 1,000,000",
    )
    for r in mem["rows"]:
        if r["state"] in want:
            out.append(
                f"- bytes a page, {r['state']}: {r['bytes_per_tracked_page_queue']:.2f} B "
                f"a tracked page for the queue, {r['bytes_per_tracked_page']:.2f} B with "
                f"trackers, {r['bytes_per_dirtied_page']:.2f} B a dirtied page"
            )


def key_steady(data, out):
    st = data.get("steady")
    if not st:
        return
    rows = [r for r in st["rows"] if r["config"] == "module"]
    if rows:
        parts = [f"{r['files']:,} files {r['per_extent_written']:.3f}" for r in rows]
        verdict = (
            "MORE than the 1.05 target"
            if st["module_worst"] > STEADY_TARGET
            else "within the 1.05 target"
        )
        out.append(
            "- steady state, files phase 1 looks at per extent written (the module's "
            "slots, paced): " + ", ".join(parts) + f": worst {st['module_worst']:.3f}, {verdict}"
        )
    others = {}
    for r in st["rows"]:
        if r["config"] != "module":
            others.setdefault(r["name"], []).append(r["per_extent_written"])
    for name, v in others.items():
        out.append(f"- steady state, {name}: worst {max(v):.3f}")


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
        out.append("- the host's noise (the control, table 0): " + "; ".join(parts))
    for f in (key_pages, key_files, key_threads, key_holds, key_criterion, key_memory, key_steady):
        f(data, out)
    return out


def frame(ax, xlabel, ylabel, title, legend_size=8):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=legend_size)
    ax.grid(True, which="both", alpha=0.3)


def save(fig, plots, name):
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(plots / name, dpi=120)
    plt.close(fig)
    return name


def hold_lines(ax, data):
    """The 50 us target and the control's p99.9 and max."""
    ax.axhline(TARGET_US, color="red", lw=1, ls=":", label=f"{TARGET_US} us target")
    c = control(data)
    if c:
        ax.axhline(us(c[0]), color="black", lw=0.8, ls="--", label="control (10 us work): p99.9")
        ax.axhline(us(c[1]), color="black", lw=0.8, ls="-.", label="control: max")


def plot_pages(data, plots):
    import matplotlib.pyplot as plt

    pages = data["pages"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    names = {}
    for r in pages["rows"]:
        names.setdefault(r["pattern"], (r["pattern_name"], []))[1].append(r)
    for i, (name, rows) in enumerate(names.values()):
        x = [r["n"] for r in rows]
        ax.plot(x, [r["ns"]["median"] for r in rows], "o-", color=f"C{i}", label=name)
        ax.plot(x, [r["ns"]["p99"] for r in rows], "x--", color=f"C{i}")
    cap = pages.get("bytes_max", 4 << 20) // 8
    ax.axvline(cap, color="grey", lw=0.8, ls=":", label="a file's cap (bytes_max / 8 B)")
    frame(
        ax,
        "pages dirtied (N)",
        "ns per clean->dirty transition",
        "Cost per transition (median solid, p99 dashed)",
        7,
    )
    return save(fig, plots, "pages.png")


def plot_files(data, plots):
    import matplotlib.pyplot as plt

    rows = data["files"]["rows"]
    x = [r["files"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(x, [r["ns"]["median"] for r in rows], "o-", color="C0", label="new page, median")
    ax.plot(x, [r["ns"]["p99"] for r in rows], "x--", color="C0", label="new page, p99")
    ax.plot(
        x, [r["create_ns"]["median"] for r in rows], "s-", color="C1", label="first page, median"
    )
    ax.plot(x, [r["create_ns"]["p99"] for r in rows], "+--", color="C1", label="first page, p99")
    frame(ax, "tracked files", "ns per transition", "Cost per transition against tracked files")
    return save(fig, plots, "files.png")


def plot_holds(data, plots):
    import matplotlib.pyplot as plt

    rows = data["holds"]["rows"]
    backlogs = {}
    for r in rows:
        backlogs.setdefault(r["backlog"], (r["backlog_name"], []))[1].append(r)
    fig, axes = plt.subplots(1, len(backlogs), figsize=(5.2 * len(backlogs), 4.8), squeeze=False)
    for ax, (name, rs) in zip(axes[0], backlogs.values()):
        x = [r["n"] for r in rs]
        for i, (k, label) in enumerate(HOLDS):
            ax.plot(
                x, [us(max(r[k]["max"], 1)) for r in rs], "o-", color=f"C{i}", label=f"{label} max"
            )
            ax.plot(x, [us(max(r[k]["p999"], 1)) for r in rs], "x--", color=f"C{i}")
        if "dirty_end_pass_longest_cpu" in rs[0]:
            ax.plot(
                x,
                [us(max(r["dirty_end_pass_longest_cpu"], 1)) for r in rs],
                "s-",
                color="C9",
                label="end of pass, all put back: longest, CPU",
            )
        hold_lines(ax, data)
        frame(
            ax, "backlog: pages dirtied", "lock hold, us", f"{name}\n(max solid, p99.9 dashed)", 6
        )
    return save(fig, plots, "holds.png")


def plot_evict(data, plots):
    import matplotlib.pyplot as plt

    rows = data["evict"]["rows"]
    pats = {}
    for r in rows:
        pats.setdefault(r["pattern"], (r["pattern_name"], []))[1].append(r)
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for i, (name, rs) in enumerate(pats.values()):
        x = [r["n"] for r in rs]
        ax.plot(x, [us(r["batched"]["max"]) for r in rs], "o-", color=f"C{i}", label=f"{name}: max")
        ax.plot(x, [us(r["batched"]["p999"]) for r in rs], "x--", color=f"C{i}", label="p99.9")
        ax.plot(
            x,
            [us(median(r["one_hold_cpu"])) for r in rs],
            "s:",
            color=f"C{i}",
            label="one hold, CPU",
        )
    hold_lines(ax, data)
    frame(
        ax,
        "pages dirtied in the file",
        "lock hold, us",
        f"Evicting one file ({data['evict']['kill_batch']} objects a hold)",
        6,
    )
    return save(fig, plots, "evict.png")


def plot_repeat(data, plots):
    """Table 8: each set's longest least-of-five reading against the backlog."""
    import matplotlib.pyplot as plt

    rows = data["repeat"]["rows"]
    sets = {}
    for r in rows:
        if r["n"]:
            sets.setdefault(r["what"], []).append(r)
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for i, (name, rs) in enumerate(sets.items()):
        x = [r["n"] for r in rs]
        ax.plot(
            x,
            [us(max(r["least"]["max"], 1)) for r in rs],
            marker="o",
            color=f"C{i % 10}",
            ls=("-", "--", ":")[i // 10 % 3],
            lw=0.9,
            label=name[:60],
        )
    ax.axhline(TARGET_US, color="red", lw=1, ls=":", label=f"{TARGET_US} us target")
    for r in rows:
        if not r["n"]:
            ax.axhline(
                us(r["least"]["max"]),
                color="black",
                lw=0.8,
                ls="--",
                label=f"{r['what']}: least, max",
            )
    frame(
        ax,
        "backlog, pages",
        "longest hold, least of its readings, us",
        f"Each hold timed {data['repeat']['repeats']} times over the same backlog",
        5,
    )
    ax.legend(fontsize=5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, plots, "repeat.png")


def plot_threads(data, plots):
    import matplotlib.pyplot as plt

    rows = data["threads"]["rows"]
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [r["name"].replace(" (", "\n(") for r in rows]
    ax.bar(range(len(rows)), [r["per_s_median"] / 1e6 for r in rows], color="C0", alpha=0.6)
    for i, r in enumerate(rows):
        ax.plot([i] * len(r["per_s_rounds"]), [v / 1e6 for v in r["per_s_rounds"]], "k.")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("million transitions a second")
    ax.set_title("One thread against two (bars: median of rounds; dots: rounds)", fontsize=10)
    return save(fig, plots, "threads.png")


def plot_steady(data, plots):
    import matplotlib.pyplot as plt

    cfgs = {}
    for r in data["steady"]["rows"]:
        cfgs.setdefault(r["name"], []).append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, rs) in enumerate(cfgs.items()):
        ax.plot(
            [r["files"] for r in rs],
            [r["per_extent_written"] for r in rs],
            "o-",
            color=f"C{i}",
            label=f"{name} ({rs[0]['slot_jiffies']} jiffies)",
        )
    ax.axhline(STEADY_TARGET, color="red", lw=1, ls=":", label=f"{STEADY_TARGET} target")
    ax.set_xscale("log")
    ax.set_xlabel("files")
    ax.set_ylabel("files looked at per extent written")
    ax.set_title("Phase 1 in the steady state", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, plots, "steady.png")


PLOTS = (
    ("pages", plot_pages),
    ("files", plot_files),
    ("holds", plot_holds),
    ("evict", plot_evict),
    ("threads", plot_threads),
    ("steady", plot_steady),
    ("repeat", plot_repeat),
)


def plot_all(data, plots):
    import matplotlib

    matplotlib.use("Agg")
    plots.mkdir(parents=True, exist_ok=True)
    return [f(data, plots) for name, f in PLOTS if data.get(name)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    data = {n: load(args.dir, n) for n in NAMES}
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
