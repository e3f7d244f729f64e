#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables and a plot for the in-guest scale benchmark (bench/scale/guest-run.sh).

    guest_report.py DIR

DIR holds env.txt (the host's side) and guest/ (what bench/scale/guest.sh
wrote: results.txt, env.txt, two/<row>-<n>.table, ...).  Writes
DIR/summary.md, DIR/summary.json and DIR/plots/guest-scale.png, and prints
summary.md's tables on stdout.

Ratios pair the rows of one trial (the same boot, run back to back):
random, aipu's write rate over none's; tree, none's extraction time over
aipu's (a throughput ratio too).  Tracking overhead = 1 - ratio.
"""

import json
import math
import os
import sys

import numpy as np

TARGET_OVERHEAD = 0.03
TARGET_BYTES = 16


def read_kv(path, sep=None):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if sep:
                k, _, v = line.partition(sep)
                out[k.strip()] = v.strip()
            else:
                k, _, v = line.partition(" ")
                out[k] = v
    return out


def read_results(path):
    """{phase: {row: {trial: {key: value}}}} from results.txt."""
    res = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) != 5:
                continue
            phase, row, trial, key, val = p
            try:
                v = float(val)
            except ValueError:
                continue
            res.setdefault(phase, {}).setdefault(row, {}).setdefault(int(trial), {})[key] = v
    return res


def read_table(path):
    """Per-page delays (s) of pagetrace.py analyze --table; None = not written."""
    delays = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            p = line.split()
            if len(p) == 5:
                delays.append(None if p[4] == "-" else float(p[4]))
    return delays


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    a = np.array(xs)
    return {
        "n": len(xs),
        "median": float(np.median(a)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
        "min": float(a.min()),
    }


def fmt(v, nd=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def pair_ratios(phase, key, invert):
    """Per trial: (trial, none, aipu, ratio) for the trials with both rows."""
    rows = []
    none, aipu = phase.get("none", {}), phase.get("aipu", {})
    for t in sorted(set(none) & set(aipu)):
        a, b = none[t].get(key), aipu[t].get(key)
        if not a or not b:
            continue
        rows.append((t, a, b, a / b if invert else b / a))
    return rows


def aipu_memory(trial):
    """Bytes per tracked page, two ways, and per page dirtied."""
    pages = trial.get("pages_tracked") or 0
    dirtied = trial.get("nr_dirtied") or 0
    runs = trial.get("runs_tracked") or 0
    mem = trial.get("mem_bytes")
    slab_active = sum(v for k, v in trial.items() if k.endswith("_bytes_active"))
    slab_pages = sum(v for k, v in trial.items() if k.endswith("_bytes_slabs"))
    div = lambda a, b: (a / b) if (a is not None and b) else None  # noqa: E731
    return {
        "pages_tracked": pages,
        "runs_tracked": runs,
        "mappings_tracked": trial.get("mappings_tracked"),
        "pages_dirtied": dirtied,
        "mem_bytes": mem,
        "slab_bytes_active": slab_active,
        "slab_bytes_slabs": slab_pages,
        "B_per_tracked_page_mem": div(mem, pages),
        "B_per_tracked_page_slab": div(slab_active, pages),
        "B_per_tracked_page_slab_pages": div(slab_pages, pages),
        "B_per_dirtied_page_mem": div(mem, dirtied),
        "B_per_run_mem": div(mem, runs),
        "fallbacks": trial.get("fallbacks"),
        "lock_hold_max_ns": trial.get("lock_hold_max_ns"),
        "removed_lock_hold_max_ns": trial.get("removed_lock_hold_max_ns"),
    }


# A metric's results.txt key and unit; "wall", the guest's clock, is the rest.
METRICS = {"cpu": ("host_cpu_s", "host CPU s"), "gcpu": ("cpu_s", "tar CPU s")}


def throughput_section(name, res, metric, md, summary):
    """One table of none against aipu for phase NAME.

    metric "cpu": QEMU's CPU time on the host between the marks (the work
    the guest did); "wall": the guest's own clock (random: randwrite's write
    rate; tree: tar's time).  Throughput = pages dirtied / time.
    """
    phase = res.get(name, {})
    key, unit = METRICS.get(metric, ("write_s" if name == "random" else "wall_s", "guest s"))
    pairs = pair_ratios(phase, key, True)
    out = {"metric": metric, "key": key, "trials": [], "ratio": None}
    if not pairs:
        md.append("(no figures)")
        return out
    md.append(
        f"| trial | none {unit} | aipu {unit} | none pages/s | aipu pages/s "
        "| µs a page (none / aipu / extra) | ratio aipu/none | overhead "
        "| host wait s (none / aipu) | pages written meanwhile (none / aipu) |"
    )
    md.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t, a, b, r in pairs:
        pn, pa = phase["none"][t], phase["aipu"][t]
        n_none = pn.get("nr_dirtied") or 0
        n_aipu = pa.get("nr_dirtied") or 0
        us_n = 1e6 * a / n_none if n_none else None
        us_a = 1e6 * b / n_aipu if n_aipu else None
        extra = us_a - us_n if us_n is not None and us_a is not None else None
        tr = {
            "trial": t,
            "none_s": a,
            "aipu_s": b,
            "none_pages_per_s": n_none / a,
            "aipu_pages_per_s": n_aipu / b,
            "ratio": r,
            "overhead": 1 - r,
            "us_per_page_none": us_n,
            "us_per_page_aipu": us_a,
            "extra_us_per_page": extra,
            "host_wait_s_none": pn.get("host_wait_s"),
            "host_wait_s_aipu": pa.get("host_wait_s"),
            "nr_written_none": pn.get("nr_written"),
            "nr_written_aipu": pa.get("nr_written"),
            "nr_dirtied_none": n_none,
            "nr_dirtied_aipu": n_aipu,
        }
        # Ratio of throughputs (pages / s); the rows dirty the same pages,
        # give or take file-system metadata.
        if n_none and n_aipu:
            tr["ratio"] = r = (n_aipu / b) / (n_none / a)
            tr["overhead"] = 1 - r
        out["trials"].append(tr)
        md.append(
            f"| {t} | {a:.2f} | {b:.2f} | {fmt(tr['none_pages_per_s'], 0)} "
            f"| {fmt(tr['aipu_pages_per_s'], 0)} | {fmt(us_n, 1)} / {fmt(us_a, 1)} / "
            f"{fmt(extra, 1)} | {r:.3f} | {100 * (1 - r):.1f} % "
            f"| {fmt(tr['host_wait_s_none'], 1)} / {fmt(tr['host_wait_s_aipu'], 1)} "
            f"| {fmt(tr['nr_written_none'], 0)} / {fmt(tr['nr_written_aipu'], 0)} |"
        )
    rs = [tr["ratio"] for tr in out["trials"]]
    med = float(np.median(rs))
    mean = float(np.mean(rs))
    se = float(np.std(rs, ddof=1) / np.sqrt(len(rs))) if len(rs) > 1 else None
    out["ratio"] = {
        "median": med,
        "min": min(rs),
        "max": max(rs),
        "n": len(rs),
        "mean": mean,
        "stderr": se,
    }
    out["overhead_median"] = 1 - med
    out["meets_3pct"] = (1 - med) <= TARGET_OVERHEAD
    md.append("")
    md.append(
        f"Throughput ratio aipu/none ({unit}): median **{med:.3f}** "
        f"(range {min(rs):.3f}-{max(rs):.3f}, {len(rs)} trials; mean {mean:.3f}"
        + (f" ± {2 * se:.3f}, two standard errors" if se is not None else "")
        + "): tracking overhead "
        f"{100 * (1 - med):.1f} % (target at most {100 * TARGET_OVERHEAD:.0f} %: "
        f"{'met' if out['meets_3pct'] else 'NOT met'})."
    )
    summary.setdefault(name, {})[metric] = out
    return out


def throughput_section_both(name, res, md, summary, icount=False):
    md.append(
        "By QEMU's CPU time on the host between the guest's marks (the work the guest "
        "did, whatever else ran on the host):"
    )
    md.append("")
    throughput_section(name, res, "cpu", md, summary)
    md.append("")
    if icount:
        md.append(
            "By the guest's own clock, which under QEMU's icount counts emulated "
            "instructions (1 ns each) while the vCPU runs: **the measure to read**, "
            "a ratio of instruction counts, not of the host's CPU time ('guest s' = "
            "10^9 instructions, 'µs a page' thousands of instructions a page; each "
            "byte of a `rep movsb`, the kernel's copy of a write's data, counts as one, "
            "so the extra per page is the figure that carries over, not the ratio):"
        )
    else:
        md.append(
            "By the guest's own clock (includes the time QEMU's threads waited for a "
            "host CPU: 'host wait s'):"
        )
    md.append("")
    throughput_section(name, res, "wall", md, summary)
    if any("cpu_s" in d for row in res.get(name, {}).values() for d in row.values()):
        md.append("")
        md.append(
            "By tar's own CPU time in the guest (user + system, aipu's probe included; "
            "without the waits the guest's clock has"
            + (
                ", which under icount are jumps to the next timer, not instructions: "
                "**the measure to read for the tree**"
                if icount
                else ""
            )
            + "):"
        )
        md.append("")
        throughput_section(name, res, "gcpu", md, summary)


def read_host_cpu(path, res):
    """Add host_cpu_s, host_wait_s, host_wall_s per (phase, row, trial)."""
    if not os.path.exists(path):
        return
    begin = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) != 7:
                continue
            what, phase, row, trial = p[0], p[1], p[2], int(p[3])
            wall, run, wait = (float(x) for x in p[4:7])
            if what == "begin":
                begin[(phase, row, trial)] = (wall, run, wait)
            elif what == "end" and (phase, row, trial) in begin:
                w0, r0, q0 = begin.pop((phase, row, trial))
                d = res.setdefault(phase, {}).setdefault(row, {}).setdefault(trial, {})
                d["host_wall_s"] = wall - w0
                d["host_cpu_s"] = run - r0
                d["host_wait_s"] = wait - q0


def memory_section(name, res, md, summary):
    aipu = res.get(name, {}).get("aipu", {})
    if not aipu:
        return
    md.append(
        "| trial | pages dirtied | pages tracked | runs | files | mem_bytes | B/page (mem_bytes) "
        "| B/page (slab objects) | B/page (slab pages) | B/page dirtied | B/run "
        "| lock_hold_max_ns | after removal |"
    )
    md.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    mem = []
    for t in sorted(aipu):
        m = aipu_memory(aipu[t])
        m["trial"] = t
        mem.append(m)
        md.append(
            f"| {t} | {fmt(m['pages_dirtied'], 0)} | {fmt(m['pages_tracked'], 0)} "
            f"| {fmt(m['runs_tracked'], 0)} | {fmt(m['mappings_tracked'], 0)} "
            f"| {fmt(m['mem_bytes'], 0)} | {fmt(m['B_per_tracked_page_mem'], 1)} "
            f"| {fmt(m['B_per_tracked_page_slab'], 1)} | {fmt(m['B_per_tracked_page_slab_pages'], 1)} "
            f"| {fmt(m['B_per_dirtied_page_mem'], 1)} | {fmt(m['B_per_run_mem'], 1)} "
            f"| {fmt(m['lock_hold_max_ns'], 0)} | {fmt(m['removed_lock_hold_max_ns'], 0)} |"
        )
    summary.setdefault(name, {})["memory"] = mem
    summary[name]["lock_hold_max_ns"] = [m["lock_hold_max_ns"] for m in mem]
    summary[name]["removed_lock_hold_max_ns"] = [m["removed_lock_hold_max_ns"] for m in mem]


def calib_section(d, md, summary):
    """bench/scale's table 1 on the host and in the guest: TCG's factor."""
    rows = {}
    for side, sub in (("host", "host-calib"), ("guest", os.path.join("guest", "calib"))):
        # pages.json since bench/scale times the log-based queue; runs.json before.
        path = os.path.join(d, sub, "pages.json")
        if not os.path.exists(path):
            path = os.path.join(d, sub, "runs.json")
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            for r in json.load(f)["rows"]:
                key = (r["pattern_name"], r["n"])
                rows.setdefault(key, {})[side] = r["ns"]["median"]
    md.append(
        "| pattern (bench/scale table 1, --quick) | N pages | host median ns "
        "| guest (TCG) median ns | guest / host |"
    )
    md.append("|---|---:|---:|---:|---:|")
    out = []
    for (pat, n), v in rows.items():
        h, g = v.get("host"), v.get("guest")
        f = g / h if h and g else None
        out.append({"pattern": pat, "n": n, "host_ns": h, "guest_ns": g, "factor": f})
        md.append(f"| {pat} | {n:,} | {fmt(h, 0)} | {fmt(g, 0)} | {fmt(f, 1)} |")
    summary["calib"] = out


def two_section(gdir, res, md, summary):
    two = res.get("two", {})
    if not two:
        return None
    out = {}
    md.append(
        "| row | trial | fast pages written | median s | p99 s | max s | min s "
        "| slow device's pages still tracked after | lock_hold_max_ns |"
    )
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    delays_by_row = {}
    for row in ("linux", "aipu"):
        allv = []
        for t in sorted(two.get(row, {})):
            path = os.path.join(gdir, "two", f"{row}-{t}.table")
            if not os.path.exists(path):
                continue
            d = read_table(path)
            s = stats(d)
            allv.extend(x for x in d if x is not None)
            r = two[row][t]
            lock = r.get("lock_hold_max_ns") if row == "aipu" else None
            md.append(
                f"| {row} | {t} | {sum(1 for x in d if x is not None)}/{len(d)} "
                f"| {fmt(s and s['median'])} | {fmt(s and s['p99'])} | {fmt(s and s['max'])} "
                f"| {fmt(s and s['min'])} | {fmt(r.get('slow_tracked_after'), 0)} | {fmt(lock, 0)} |"
            )
            out.setdefault(row, {"trials": []})["trials"].append(
                {
                    "trial": t,
                    "delay_s": s,
                    "unwritten": sum(1 for x in d if x is None),
                    "slow_tracked_after": r.get("slow_tracked_after"),
                    "lock_hold_max_ns": r.get("lock_hold_max_ns"),
                }
            )
        if allv:
            out[row]["all"] = stats(allv)
            delays_by_row[row] = allv
    md.append("")
    for row, label in (("linux", "Linux's writeback"), ("aipu", "aipu")):
        s = out.get(row, {}).get("all")
        if s:
            md.append(
                f"- {label}, all trials: {s['n']} pages, write minus first-dirty time median "
                f"{s['median']:.3f} s, p99 {s['p99']:.3f} s, max {s['max']:.3f} s."
            )
    summary["two"] = out
    return delays_by_row


def look_section(gdir, md, summary):
    """The handover's look: one row per L-M (loop devices, M of them mounted)."""
    rows = {}
    with open(os.path.join(gdir, "results.txt"), encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) != 5 or p[0] != "look":
                continue
            r = rows.setdefault(p[1], {"look_us": []})
            if p[3] == "look_us":
                r["look_us"].append(float(p[4]))
            else:
                r[p[3]] = p[4]
    if not rows:
        return
    md.append(
        "## The handover's look (src/handover.c): its time against the block devices "
        "and super blocks it walks"
    )
    md.append("")
    md.append(
        "One page of a loop device dirtied before `insmod` (Linux's expiry 30 s, so Linux "
        "holds it throughout: its dirty inodes on the loop device's bdi before the load and "
        "after the row), aipu loaded with `policy=aipu handover_ms=1000`: a look runs "
        "once a second. Each look timed by ftrace's function_graph tracer (look_fn, depth "
        "1). Emulated time under TCG, including any wait for a super block's s_umount."
    )
    md.append("")
    md.append(
        "| loop devices | of them mounted (ext2) | block devices | mounts | looks "
        "| median µs | p99 µs | max µs | handover_waiting | Linux's dirty inodes before / after |"
    )
    md.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def key(name):
        a, _, b = name.partition("-")
        return (int(a), int(b or 0)) if a.isdigit() and b.isdigit() else (1 << 30, 0)

    out = {}
    for name in sorted(rows, key=key):
        r = rows[name]
        st = stats(r["look_us"])
        loops, _, mounted = name.partition("-")
        md.append(
            f"| {loops} | {mounted} | {r.get('block_devices', '-')} | {r.get('mounts', '-')} "
            f"| {len(r['look_us'])} | {fmt(st and st['median'], 1)} | {fmt(st and st['p99'], 1)} "
            f"| {fmt(st and st['max'], 1)} | {r.get('handover_waiting', '-')} "
            f"| {r.get('before_loop_dirty_inodes', '-')} / {r.get('after_loop_dirty_inodes', '-')} |"
        )
        out[name] = {"look_us": st, **{k: v for k, v in r.items() if k != "look_us"}}
    summary["look"] = out


def plot(dirpath, summary, delays_by_row):
    has = [
        summary.get(n, {}).get(m, {}).get("trials")
        for n in ("random", "tree")
        for m in ("cpu", "wall")
    ]
    if not any(has) and not delays_by_row:
        return None  # only a look (or nothing plotted): no figure
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("guest_report.py: no matplotlib: no plot", file=sys.stderr)
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, name in ((axes[0], "random"), (axes[1], "tree")):
        sec = summary.get(name, {})
        metric = "cpu" if sec.get("cpu", {}).get("trials") else "wall"
        tr = sec.get(metric, {}).get("trials", [])
        if not tr:
            ax.set_visible(False)
            continue
        x = np.arange(len(tr))
        ax.bar(x - 0.2, [t["none_pages_per_s"] for t in tr], 0.4, label="none (no module)")
        ax.bar(x + 0.2, [t["aipu_pages_per_s"] for t in tr], 0.4, label="aipu (policy kernel)")
        for i, t in enumerate(tr):
            ax.annotate(
                f"{t['ratio']:.3f}",
                (i, max(t["none_pages_per_s"], t["aipu_pages_per_s"])),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax.set_xticks(x, [f"trial {t['trial']}" for t in tr])
        per = "host CPU s" if metric == "cpu" else "guest s"
        ax.set_ylabel(f"pages dirtied per {per}")
        ax.set_title(f"{name}: ratio aipu/none per trial")
        ax.legend(fontsize=8, loc="lower right")
    ax = axes[2]
    if delays_by_row:
        for row, label in (
            ("linux", "Linux writeback (3 s expiry)"),
            ("aipu", "aipu (max_age 3 s)"),
        ):
            v = sorted(delays_by_row.get(row, []))
            if v:
                ax.plot(v, np.arange(1, len(v) + 1) / len(v), label=label)
        ax.set_xlabel("fast device: write (D) minus first-dirty time, s")
        ax.set_ylabel("fraction of pages")
        ax.set_title("two devices, the slow one backlogged")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    else:
        ax.set_visible(False)
    fig.tight_layout()
    os.makedirs(os.path.join(dirpath, "plots"), exist_ok=True)
    path = os.path.join(dirpath, "plots", "guest-scale.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    d = argv[0]
    gdir = os.path.join(d, "guest")
    host = read_kv(os.path.join(d, "env.txt"), sep=":")
    genv = read_kv(os.path.join(gdir, "env.txt"))
    res = read_results(os.path.join(gdir, "results.txt"))
    read_host_cpu(os.path.join(gdir, "host-cpu.txt"), res)
    summary = {"host": host, "guest": genv}
    md = []
    md.append(f"# Scale benchmark in a guest: {genv.get('kernel', '?')}")
    md.append("")
    md.append(
        f"Produced by `{host.get('command', '?')}`, {host.get('date', '?')}, commit "
        f"{host.get('commit', '?')} (module sources differ from it: "
        f"{host.get('module sources differ from the commit', '?')}). QEMU TCG"
        f"{' with icount (shift=0, sleep=on)' if 'icount' in host else ''}, "
        f"{genv.get('cpus', '?')} vCPUs, {int(genv.get('mem_kb', 0) or 0) // 1024} MiB; "
        f"host {host.get('host CPU', '?')}, load average before {host.get('load before', '?')}, "
        f"after {host.get('load after', '?')}. The host was shared with other engineers' builds "
        "and VMs; the rows alternate within each trial (none first on odd trials), so both "
        "see the same load."
    )
    md.append("")
    md.append(
        "Rows: `none` = aipu not loaded; `aipu` = aipu.ko loaded for the trial with "
        "`policy=kernel max_age_ms=3600000 handover_ms=0` (it timestamps and tracks every "
        "page and writes none, so the difference is the tracking alone). Dirty limits raised "
        f"({genv.get('vm.dirty_bytes', '?')} B, background {genv.get('vm.dirty_background_bytes', '?')} B, "
        f"bdi min_ratio {genv.get('bdi_min_ratio', '?')}), periodic writeback off: "
        "'pages written meanwhile' (/proc/vmstat nr_written) shows what was written anyway."
    )
    md.append("")
    md.append(
        f"## Random writes: every 4-KiB page of a cached {genv.get('random_mib', '?')}-MiB "
        "file once (randwrite.c: pwrite, shuffled order, no fsync)"
    )
    md.append("")
    icount = "icount" in host
    summary["icount"] = icount
    throughput_section_both("random", res, md, summary, icount)
    md.append("")
    memory_section("random", res, md, summary)
    md.append("")
    tar_mb = float(genv.get("tar_bytes", 0) or 0) / 1e6
    md.append(
        f"## Extracting the tree: {genv.get('tar_members', '?')} members, {tar_mb:.0f} MB "
        "(uncompressed tar on a tmpfs) onto ext4"
    )
    md.append("")
    throughput_section_both("tree", res, md, summary, icount)
    md.append("")
    memory_section("tree", res, md, summary)
    md.append("")
    # Sections of phases that ran (--icount runs neither calib nor two).
    if os.path.isdir(os.path.join(d, "host-calib")):
        md.append("## What TCG makes of aipu's own code: bench/scale in user space, host and guest")
        md.append("")
        md.append(
            "The same bench/scale binary (table 1: the module's own queue code, compiled for "
            "user space, one page a transition) run natively on the host and in the guest, to "
            "scale the extra time per page above: the kernel's probe adds the tracepoint call, "
            "RCU, the device lookup and slab allocations to this."
        )
        md.append("")
        calib_section(d, md, summary)
        md.append("")
    delays = {}
    if "two" in res:
        md.append(
            "## Two devices: the fast device's write time minus its pages' first-dirty time, "
            "while the slow one holds a backlog"
        )
        md.append("")
        md.append(
            f"Slow: {genv.get('two_slow', '?')}; fast: {genv.get('two_fast', '?')} (4.5 s later). "
            "Expiry 3 s, period 1 s for both rows: `linux` = Linux's writeback "
            "(dirty_expire_centisecs 300, dirty_writeback_centisecs 100, aipu loaded with policy "
            "kernel); `aipu` = policy aipu, max_age_ms 3000, period_ms 1000."
        )
        md.append("")
        delays = two_section(gdir, res, md, summary)
        md.append("")
    md.append(
        "lock_hold_max_ns is the guest's own measurement (local_clock() around each hold of "
        "a device lock, interrupts off) under TCG"
        + (
            ", with icount a count of instructions, not a time"
            if icount
            else ", where every instruction is emulated: it is several times what the same "
            "code takes on hardware (bench/scale's host figures)"
        )
        + "."
    )
    look_section(gdir, md, summary)
    p = plot(d, summary, delays)
    if p:
        md.append("")
        md.append(f"![guest scale](plots/{os.path.basename(p)})")
    text = "\n".join(md) + "\n"
    with open(os.path.join(d, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(d, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
