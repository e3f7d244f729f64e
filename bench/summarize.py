#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print the demo's comparison table from the JSON files bench/workload.py wrote.

Usage: summarize.py DIR [--timeline] [--json OUT]

DIR holds <policy>.json for some of none, kernel, pu, aipu (as written by
scripts/demo-guest.sh), and optionally env.txt. Prints one row per policy:
reads, mean/p99/max read latency, when the worst read started, and the disk
writes during the run (plus those the final sync needed), then the ratio of
aipu's worst read to the others'. --timeline adds, per policy, the worst
read of every 5-second window and the disk writes in it.

Exit status: 0, or 1 if no result file was found or a run reported errors.
"""

import argparse
import json
import os
import sys

ORDER = ("none", "kernel", "pu", "aipu")
WINDOW_S = 5.0


def load(dirpath):
    runs = {}
    for name in ORDER:
        path = os.path.join(dirpath, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                runs[name] = json.load(f)
    return runs


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
    fmt = " | ".join("{:>%d}" % w for w in widths)
    lines = [fmt.format(*header), "-+-".join("-" * w for w in widths)]
    lines += [fmt.format(*r) for r in rows]
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


def main(argv=None):
    ap = argparse.ArgumentParser(description="Summarize the aipu demo's results.")
    ap.add_argument("dir", help="directory with <policy>.json files")
    ap.add_argument("--timeline", action="store_true", help="per-5-s worst read and disk writes")
    ap.add_argument("--json", help="also write the summary as JSON to this file")
    args = ap.parse_args(argv)

    if not os.path.isdir(args.dir):
        print(
            f"summarize: {args.dir} is not a directory: give the demo's output directory.",
            file=sys.stderr,
        )
        return 1
    runs = load(args.dir)
    if not runs:
        print(
            f"summarize: no {', '.join(n + '.json' for n in ORDER)} in {args.dir}: did the demo run?",
            file=sys.stderr,
        )
        return 1

    env = os.path.join(args.dir, "env.txt")
    if os.path.exists(env):
        with open(env) as f:
            kv = dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)
        print(
            f"kernel {kv.get('kernel', '?')}, {kv.get('rate_per_s', '?')} random pages dirtied/s "
            f"for {kv.get('duration_s', '?')} s, FIFO disk (scheduler {kv.get('scheduler', '?')}, "
            f"wbt_lat_usec {kv.get('wbt_lat_usec', '?')}), max_age_ms {kv.get('max_age_ms', '?')}, "
            f"pu_interval_ms {kv.get('pu_interval_ms', '?')}"
        )
        print()

    header = (
        "policy",
        "reads",
        "mean ms",
        "p99 ms",
        "max ms",
        "max at s",
        "reads >1s",
        "pages dirtied",
        "disk writes",
        "+ at sync",
    )
    rows = []
    summary = {}
    status = 0
    for name, run in runs.items():
        r = run["reads"]
        d = run.get("disk", {})
        rows.append(
            (
                name,
                r.get("count", 0),
                f"{r.get('mean_ms', 0):.1f}",
                f"{r.get('p99_ms', 0):.1f}",
                f"{r.get('max_ms', 0):.0f}",
                f"{r.get('max_at_s', 0):.1f}",
                r.get("over_1s", 0),
                run["writes"]["done"],
                d.get("write_ios", "?"),
                d.get("write_ios_sync", "?"),
            )
        )
        summary[name] = {
            "reads": r,
            "pages_dirtied": run["writes"]["done"],
            "disk": d,
            "module": parse_stat(run.get("attach", {}).get("stat")),
        }
        if run.get("errors"):
            print(
                f"summarize: {name}: errors during the run: {'; '.join(run['errors'])}",
                file=sys.stderr,
            )
            status = 1
    print(table(rows, header))

    notes = []
    for name in runs:
        st = summary[name]["module"]
        if st:
            keys = ("pages_written", "flusher_runs", "fallbacks", "pages_retried")
            notes.append(
                f"  {name}: aipu stat " + ", ".join(f"{k} {st[k]}" for k in keys if k in st)
            )
    if notes:
        print()
        print("\n".join(notes))

    if "aipu" in runs:
        amax = runs["aipu"]["reads"].get("max_ms", 0)
        print()
        for other in ("kernel", "pu", "none"):
            if other in runs:
                omax = runs[other]["reads"].get("max_ms", 0)
                ratio = amax / omax if omax else float("nan")
                summary.setdefault("ratios", {})[f"aipu_max_over_{other}_max"] = round(ratio, 4)
                print(
                    f"aipu's worst read is {ratio:.3f} of {other}'s "
                    f"({amax:.0f} ms vs {omax:.0f} ms, {omax / amax if amax else float('inf'):.0f}x lower)"
                )

    if args.timeline:
        print()
        print(f"worst read (ms) / disk writes per {WINDOW_S:.0f}-s window:")
        for name, run in runs.items():
            worst, writes = timeline(run)
            print(f"  {name:>6} " + " ".join(f"{w:>5.0f}" for w in worst))
            print(f"  {'':>6} " + " ".join(f"{w:>5d}" for w in writes))
        first = next(iter(runs.values()))
        n = len(timeline(first)[0])
        print(f"  {'t (s)':>6} " + " ".join(f"{i * WINDOW_S:>5.0f}" for i in range(n)))

    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
