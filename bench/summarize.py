#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print the demo's comparison table from the JSON files bench/workload.py wrote.

Usage: summarize.py DIR [--timeline] [--json OUT]

DIR holds one <row>.json per row (as written by scripts/demo-guest.sh; a row
is POLICY[:KNOB=VALUE,...], with ':' and ',' written '+' in the file name)
and optionally env.txt, whose "rows" line gives their order. Prints one line
per row: reads, mean/p99/max read latency, when the worst read started, the
disk writes during the run (plus those the final sync needed), the pages
aipu wrote (its stat file, read at the end of the run), and the row's worst
read as a fraction of kernel's and of pu's. Then whether the demo's claims
hold (CLAIMS, per disk model: on the strict-FIFO fifo94, Linux's and pu's
worst reads last seconds, and aipu's is a small fraction of theirs; a
fraction is not decided when aipu's reads already exceeded it before it
wrote anything), paced vs unpaced aipu, and aipu's counters per row. --timeline adds, per row, the
worst read of every 5-second window and the disk writes in it.

Exit status: 0, or 1 if no result file was found or a run reported errors.
"""

import argparse
import glob
import json
import os
import sys

WINDOW_S = 5.0
# The demo's claims per disk model (env.txt's disk_model; results from
# before it had one are the throttle's): the least worst read that Linux's
# (row kernel) and pu's must reach, so that the model shows the paper's
# effect, and for each aipu row the largest fraction of the lesser of
# Linux's and pu's worst reads that its worst read may be.
# fifo94's come from the benchmark's full run on that model (2026-11-23,
# 6.1, six 45-s trials a row, docs/results.md): worst reads Linux 4.5-5.0 s
# (every trial above 4.2 s), pu 4.7 s, paced aipu 68 ms (0.014 of Linux's),
# unpaced aipu 369 ms (0.074-0.082). The limits leave room for one trial
# under TCG on a host doing other work: 1 s against 4.2, 0.05 against 0.014,
# 0.1 against 0.082 (the benchmark's own claim for unpaced aipu).
# The throttle's are the demo's claims of before: at 60 IOPS Linux's burst
# delays reads by ~0.3 s (2026-11-23 demo: 301 ms; aipu 45, paced 47).
CLAIMS = {
    "fifo94": {"seconds_ms": 1000.0, "rows": (("aipu", 0.05), ("aipu:pace=0", 0.1))},
    "throttle": {"seconds_ms": None, "rows": (("aipu", 0.25),)},
}
QUIET_S = 29.0
# Rows of the old demo, before rows had knobs (policy name = file name).
LEGACY_ORDER = ("none", "kernel", "pu", "aipu")
# aipu's counters worth a line per row; those that stay 0 are left out.
STAT_KEYS = (
    "pages_dirtied",
    "pages_written",
    "pages_clean",
    "pages_retried",
    "pages_late",
    "pages_staged",
    "pages_purged",
    "pages_not_purged",
    "pages_deferred",
    "fallbacks",
    "flusher_runs",
)


def file_name(row):
    return row.replace(":", "+").replace(",", "+") + ".json"


def display(row):
    """aipu:write_alloc=purge,pace=1 -> 'aipu write_alloc=purge pace=1'."""
    return row.replace(":", " ").replace(",", " ")


def read_env(dirpath):
    path = os.path.join(dirpath, "env.txt")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)


def load(dirpath, env):
    """{row: run} in the demo's order: env.txt's rows, else what is there."""
    rows = (env.get("rows") or env.get("policies") or "").split()
    runs = {}
    for row in rows:
        path = os.path.join(dirpath, file_name(row))
        if os.path.exists(path):
            with open(path) as f:
                runs[row] = json.load(f)
    if runs:
        return runs
    paths = sorted(glob.glob(os.path.join(dirpath, "*.json")))
    found = {}
    for path in paths:
        if os.path.basename(path) == "summary.json":
            continue
        with open(path) as f:
            run = json.load(f)
        if isinstance(run, dict) and "reads" in run:
            found[run.get("label") or os.path.basename(path)[:-5]] = run
    legacy = [r for r in LEGACY_ORDER if r in found]
    return {r: found[r] for r in legacy + sorted(set(found) - set(legacy))}


def parse_stat(text):
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return out


def table(rows, header):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmts = ["{:<%d}" % widths[0]] + ["{:>%d}" % w for w in widths[1:]]
    line = " | ".join(fmts)
    lines = [line.format(*header), "-+-".join("-" * w for w in widths)]
    lines += [line.format(*r) for r in rows]
    return "\n".join(lines)


def timeline(run):
    dur = run["config"]["duration_s"]
    nwin = int(-(-dur // WINDOW_S))
    worst = [0.0] * nwin
    for t, ms in run["series"]["reads"]:
        i = min(int(t // WINDOW_S), nwin - 1)
        worst[i] = max(worst[i], ms)
    writes = [0] * nwin
    samples = run["series"]["disk"]
    for prev, cur in zip(samples, samples[1:]):
        i = min(int(cur[0] // WINDOW_S), nwin - 1)
        writes[i] += cur[2] - prev[2]
    return worst, writes


def max_ms(run):
    return run["reads"].get("max_ms", 0.0)


def fraction(num, den):
    return num / den if den else float("nan")


def model_line(env):
    nq = env.get("hw_queues", "?")
    asked = env.get("hw_queues_asked", "")
    if asked == "auto":
        queues = f"{nq} request queues, one per CPU (virtio_blk's default): stalls vary run to run"
    elif nq == "1":
        queues = "one request queue (virtio_blk num_request_queues=1)"
    else:
        queues = f"{nq} request queues"
    if disk_model(env) == "fifo94":
        disk = "fifo94, a strict FIFO: nbdkit serves one request at a time in arrival order, 16 ms added"
    else:
        disk = f"throttle, QEMU's I/O throttle at {env.get('iops', '60')} IOPS"
    return (
        f"disk model {disk}; {queues}, {env.get('nr_requests', '?')} tags, "
        f"scheduler {env.get('scheduler', '?')}, "
        f"wbt_lat_usec {env.get('wbt_lat_usec', '?')}, bdi min_ratio {env.get('min_ratio', '?')}"
    )


def disk_model(env):
    """fifo94 or throttle (results from before disk_model was recorded)."""
    return env.get("disk_model") or "throttle"


def worst_before(run, t_s):
    return max((ms for t, ms in run["series"]["reads"] if t < t_s), default=0.0)


def fmt_read(ms):
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def claim(runs, summary, model="throttle"):
    """The demo's claims for disk model MODEL (CLAIMS): verdicts and evidence.

    Before QUIET_S none of kernel, pu and aipu has written a page (aipu's
    and pu's first writes come at 30 s, Linux's at 30-35 s): the worst read
    then is the harness's own noise (TCG, the host, Python), a floor under
    every row's max. When an aipu row's own floor is already above its
    limit, its max says nothing about its writes and the run cannot decide.
    """
    spec = CLAIMS.get(model, CLAIMS["throttle"])
    need = ("kernel", "pu")
    missing = [r for r in need if r not in runs]
    if missing:
        return (
            f"claims not checked: they need the rows kernel and pu ({', '.join(missing)} missing)"
        )
    k, p = max_ms(runs["kernel"]), max_ms(runs["pu"])
    lines, out = [], []
    if spec["seconds_ms"] is not None:
        low = spec["seconds_ms"]
        verdict = "HOLDS" if min(k, p) >= low else "DOES NOT HOLD"
        out.append({"claim": "linux_pu_seconds", "limit_ms": low, "verdict": verdict})
        lines.append(
            f"claim (the {model} model shows the paper's effect: Linux's and pu's worst reads "
            f">= {fmt_read(low)}): {verdict}: kernel {fmt_read(k)}, pu {fmt_read(p)}"
        )
    for row, frac in spec["rows"]:
        if row not in runs:
            lines.append(f"claim on {display(row)} not checked: the demo ran no row {row}")
            continue
        a = max_ms(runs[row])
        limit = frac * min(k, p)
        floor = worst_before(runs[row], QUIET_S)
        if a <= limit:
            verdict = "HOLDS"
        elif floor > limit:
            verdict = (
                f"NOT DECIDED ({display(row)}'s reads exceeded the limit before it wrote anything)"
            )
        else:
            verdict = "DOES NOT HOLD"
        out.append(
            {
                "claim": "max_read_fraction",
                "row": row,
                "fraction": frac,
                "limit_ms": round(limit, 3),
                "max_ms": round(a, 3),
                "over_kernel_max": round(fraction(a, k), 4),
                "over_pu_max": round(fraction(a, p), 4),
                "worst_read_before_quiet_ms": round(floor, 3),
                "verdict": verdict.split(" (")[0],
            }
        )
        lines.append(
            f"claim ({display(row)}'s worst read <= {frac:g} x kernel's and pu's, here "
            f"{fmt_read(limit)}): {verdict}: {fmt_read(a)} = {fraction(a, k):.3f} x kernel's, "
            f"{fraction(a, p):.3f} x pu's"
        )
        at = runs[row]["reads"].get("max_at_s", 0.0)
        if at < QUIET_S:
            lines.append(
                f"  {display(row)}'s worst read came at {at:.1f} s, before it had written anything"
            )
    floors = {r: worst_before(runs[r], QUIET_S) for r in runs}
    lines.append(
        f"  before {QUIET_S:.0f} s, when no update policy had written yet, the worst reads were "
        + ", ".join(f"{display(r)} {v:.0f} ms" for r, v in floors.items())
        + " (the harness's own noise: a busy host raises it)"
    )
    summary["claims"] = {"model": model, "checks": out}
    return "\n".join(lines)


def pace_lines(runs):
    """aipu with the module's defaults (row aipu; pace=1 by default since
    2026-11-25) against rows that set pace explicitly."""
    knobbed = [
        r
        for r in runs
        if r.startswith("aipu:")
        and any(k in ("pace=0", "pace=1") for k in r.split(":", 1)[1].split(","))
    ]
    if "aipu" not in runs or not knobbed:
        return []
    lines = ["aipu's defaults vs pace set explicitly (read latency, ms):"]

    def name(row):
        return "aipu (defaults)" if row == "aipu" else display(row)

    for row in ["aipu"] + knobbed:
        r = runs[row]["reads"]
        lines.append(
            f"  {name(row):<24} mean {r.get('mean_ms', 0):6.1f}  p99 {r.get('p99_ms', 0):6.1f}  "
            f"max {r.get('max_ms', 0):6.0f}  ({r.get('over_100ms', 0)} reads > 100 ms)"
        )
    base = max_ms(runs["aipu"])
    for row in knobbed:
        lines.append(
            f"  {display(row)}: worst read {fraction(max_ms(runs[row]), base):.2f} x aipu's (defaults)"
        )
    # What pacing costs: pages past the bound, and flusher passes.
    for row in ["aipu"] + knobbed:
        st = parse_stat(runs[row].get("attach", {}).get("stat"))
        if st:
            lines.append(
                f"  {name(row)}: {st.get('pages_late', '?')} of {st.get('pages_written', '?')} "
                f"pages written later than max_age_ms + period_ms, "
                f"{st.get('flusher_runs', '?')} flusher passes"
            )
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description="Summarize the aipu demo's results.")
    ap.add_argument("dir", help="directory with the rows' <row>.json files")
    ap.add_argument("--timeline", action="store_true", help="per-5-s worst read and disk writes")
    ap.add_argument("--json", help="also write the summary as JSON to this file")
    args = ap.parse_args(argv)

    if not os.path.isdir(args.dir):
        print(
            f"summarize: {args.dir} is not a directory: give the demo's output directory.",
            file=sys.stderr,
        )
        return 1
    env = read_env(args.dir)
    runs = load(args.dir, env)
    if not runs:
        print(
            f"summarize: no result files (<row>.json) in {args.dir}: did the demo run?",
            file=sys.stderr,
        )
        return 1

    if env:
        print(
            f"kernel {env.get('kernel', '?')}, {env.get('rate_per_s', '?')} random pages "
            f"dirtied/s for {env.get('duration_s', '?')} s a row, max_age_ms "
            f"{env.get('max_age_ms', '?')}, pu_interval_ms {env.get('pu_interval_ms', '?')}"
        )
        print(model_line(env))
        if "host_before" in env:
            print(f"host: before {env['host_before']}; after {env.get('host_after', '?')}")
        print()

    header = (
        "row",
        "reads",
        "mean ms",
        "p99 ms",
        "max ms",
        "max at s",
        "disk writes",
        "+ at sync",
        "aipu wrote",
        "max/kernel",
        "max/pu",
    )
    kmax = max_ms(runs["kernel"]) if "kernel" in runs else None
    pmax = max_ms(runs["pu"]) if "pu" in runs else None
    rows = []
    summary = {"rows": {}}
    status = 0
    for name, run in runs.items():
        r = run["reads"]
        d = run.get("disk", {})
        st = parse_stat(run.get("attach", {}).get("stat"))
        rk = fraction(max_ms(run), kmax) if kmax is not None else None
        rp = fraction(max_ms(run), pmax) if pmax is not None else None
        rows.append(
            (
                display(name),
                r.get("count", 0),
                f"{r.get('mean_ms', 0):.1f}",
                f"{r.get('p99_ms', 0):.1f}",
                f"{r.get('max_ms', 0):.0f}",
                f"{r.get('max_at_s', 0):.1f}",
                d.get("write_ios", "?"),
                d.get("write_ios_sync", "?"),
                st.get("pages_written", "-"),
                "-" if rk is None else f"{rk:.2f}",
                "-" if rp is None else f"{rp:.2f}",
            )
        )
        summary["rows"][name] = {
            "reads": r,
            "pages_dirtied": run["writes"]["done"],
            "disk": d,
            "module": st,
            "max_over_kernel_max": None if rk is None else round(rk, 4),
            "max_over_pu_max": None if rp is None else round(rp, 4),
        }
        if run.get("errors"):
            print(
                f"summarize: {name}: errors during the run: {'; '.join(run['errors'])}",
                file=sys.stderr,
            )
            status = 1
        w = run["writes"]
        if w["done"] != w["planned"]:
            print(
                f"summarize: {name}: the writer made {w['done']} of {w['planned']} writes",
                file=sys.stderr,
            )
    print(table(rows, header))
    print()
    print(claim(runs, summary, disk_model(env)))
    pace = pace_lines(runs)
    if pace:
        print()
        print("\n".join(pace))

    notes = []
    for name, run in runs.items():
        st = summary["rows"][name]["module"]
        if st:
            shown = [f"{k} {st[k]}" for k in STAT_KEYS if st.get(k)]
            notes.append(f"  {display(name)}: " + (", ".join(shown) or "all counters 0"))
    if notes:
        print()
        print("aipu's counters at the end of each row (before the final sync):")
        print("\n".join(notes))

    if args.timeline:
        width = max(len(display(n)) for n in runs)
        print()
        print(f"worst read (ms) / disk writes per {WINDOW_S:.0f}-s window:")
        for name, run in runs.items():
            worst, writes = timeline(run)
            print(f"  {display(name):>{width}} " + " ".join(f"{w:>5.0f}" for w in worst))
            print(f"  {'':>{width}} " + " ".join(f"{w:>5d}" for w in writes))
        n = max(len(timeline(run)[0]) for run in runs.values())
        print(f"  {'t (s)':>{width}} " + " ".join(f"{i * WINDOW_S:>5.0f}" for i in range(n)))

    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
