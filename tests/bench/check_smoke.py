#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check what `scripts/bench.sh --smoke` left in its results directory.

Usage: check_smoke.py DIR [BENCH_EXIT_STATUS] [--model fifo94|host]

The smoke run is one cell per row (kernel and aipu) of the random workload
on the fifo94 model (or, with --model host, on the real disk of
`scripts/bench.sh --host --smoke`, tests/bench/host.sh). It passes when every part of the suite did its job:
the guest measured the model's service time, each row's workload ran and
recorded reads, blktrace recorded the disk's writes, aipu (and only aipu)
wrote pages under policy aipu and none under policy kernel, and the report
wrote its tables and plots. Prints one PASS/FAIL line a check and
"N passed, N failed"; exit status 1 if any failed.
"""

import gzip
import json
import os
import sys

WORKLOAD = "random"
ROWS = ("kernel", "aipu")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        print(f"{'PASS' if ok else 'FAIL'}: {what}" + (f" ({detail})" if detail else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def stat_of(run):
    out = {}
    for line in (run.get("attach", {}).get("stat") or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def writers(path):
    """Number of queued writes per command in a trial's writes.gz."""
    out = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                out[parts[3]] = out.get(parts[3], 0) + 1
    return out


def read_env(path):
    try:
        with open(path) as f:
            return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)
    except OSError:
        return {}


def check_probe(c, mdir, model):
    probe = load_json(os.path.join(mdir, "probe.json")) or {}
    mean = probe.get("read", {}).get("mean_ms", 0)
    if model == "fifo94":
        # fifo94 adds 16 ms to each request (about 18-20 ms in all under
        # TCG); anything from 5 to 100 ms says the model is there and the
        # probe measured it.
        c.check(5 <= mean <= 100, "the model's read service time was measured", f"{mean} ms")
        return
    # A real disk: any time at all, but one was measured.
    wmean = probe.get("write", {}).get("mean_ms", 0)
    c.check(
        0 < mean < 1000 and 0 < wmean < 1000,
        "the disk's read and write service times were measured",
        f"read {mean} ms, write {wmean} ms",
    )
    env = read_env(os.path.join(mdir, "env.txt"))
    rate = env.get("rate_per_s", "")
    c.check(
        env.get("rate_auto") == "1" and rate.isdigit() and int(rate) >= 1,
        "the write rate was chosen from the measured write time",
        f"rate_auto {env.get('rate_auto')}, rate_per_s {rate}",
    )
    c.check(
        env.get("host_mode") == "1" and env.get("disk", "").startswith("host:"),
        "the results say they come from a real disk, not a VM model",
        f"disk {env.get('disk')}",
    )


def check_row(c, mdir, row):
    run = load_json(os.path.join(mdir, WORKLOAD, row, "trial1.json"))
    if not c.check(run is not None, f"{row}: the workload wrote its result"):
        return
    c.check(
        not run.get("errors"), f"{row}: the workload reported no errors", str(run.get("errors"))
    )
    reads = run.get("reads", {}).get("count", 0)
    c.check(reads > 100, f"{row}: the reader completed reads", f"{reads}")
    wpath = os.path.join(mdir, WORKLOAD, row, "trial1.writes.gz")
    if not c.check(os.path.exists(wpath), f"{row}: blktrace's writes were kept"):
        return
    by = writers(wpath)
    c.check(sum(by.values()) > 0, f"{row}: blktrace saw writes", str(by))
    written = stat_of(run).get("pages_written", -1)
    if row == "aipu":
        c.check(by.get("aipu", 0) > 0, "aipu: the aipu thread queued writes", str(by))
        c.check(written > 0, "aipu: stat pages_written moved", f"{written}")
    else:
        c.check("aipu" not in by, "kernel: the aipu thread queued no write", str(by))
        c.check(written == 0, "kernel: stat pages_written stayed 0", f"{written}")


def check_report(c, rdir):
    path = os.path.join(rdir, "summary.md")
    text = open(path).read() if os.path.exists(path) else ""
    c.check(all(r in text for r in ROWS), "the report's summary.md has both rows")
    c.check(load_json(os.path.join(rdir, "summary.json")) is not None, "summary.json is JSON")
    pdir = os.path.join(rdir, "plots")
    pngs = [p for p in os.listdir(pdir) if p.endswith(".png")] if os.path.isdir(pdir) else []
    ok = bool(pngs) and all(os.path.getsize(os.path.join(pdir, p)) > 1000 for p in pngs)
    c.check(ok, "the report drew its plots", f"{len(pngs)} PNG files")


def main(argv):
    args, model = list(argv[1:]), "fifo94"
    if "--model" in args:
        i = args.index("--model")
        model = args[i + 1] if i + 1 < len(args) else ""
        del args[i : i + 2]
    if (
        model not in ("fifo94", "host")
        or len(args) not in (1, 2)
        or (len(args) == 2 and not args[1].isdigit())
    ):
        print("usage: check_smoke.py RESULTS_DIR [BENCH_EXIT_STATUS] [--model fifo94|host]")
        return 2
    c = Checks()
    if len(args) == 2:
        c.check(args[1] == "0", "scripts/bench.sh --smoke exited 0", f"status {args[1]}")
    if not c.check(os.path.isdir(args[0]), "the results directory exists", args[0]):
        print(f"{c.passed} passed, {c.failed} failed")
        return 1
    mdir = os.path.join(args[0], model)
    check_probe(c, mdir, model)
    for row in ROWS:
        check_row(c, mdir, row)
    check_report(c, args[0])
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
