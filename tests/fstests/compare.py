#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare fstests results without and with aipu (scripts/fstests.sh).

Reads the test list and each half's results.txt ("test result seconds
klog" a line, written by tests/fstests/fstests-guest.sh), prints one line
a test (result without aipu, with aipu, and a mark where they differ), then
the differences, then "N passed, N failed". A test fails when it passes
without aipu but fails, times out or is not run with aipu, when it has no
result with aipu (the guest died or stopped before it), or when its kernel log has a bad line (tests/vm/dmesg-bad.ere) only
with aipu; the kernel log after a half's last test counts as the test
"end". --table appends one Markdown row to a report.
"""

import argparse
import sys
from pathlib import Path

BAD = {"fail", "timeout", "notrun", "missing"}


def read_results(half: Path) -> dict[str, tuple[str, int, str]]:
    """Map each test to (result, seconds, klog) from HALF/results.txt."""
    res: dict[str, tuple[str, int, str]] = {}
    f = half / "results.txt"
    if not f.exists():
        return res
    for line in f.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].isdigit():
            res[parts[0]] = (parts[1], int(parts[2]), parts[3])
    return res


def end_log_bad(half: Path) -> bool:
    """True if the kernel log after the half's last test had a bad line."""
    f = half / "klog-bad.txt"
    if not f.exists():
        return False
    return any(line.startswith(("end:", "rmmod:")) for line in f.read_text().splitlines())


def label(r: tuple[str, int, str] | None) -> str:
    if r is None:
        return "missing"
    return r[0] + ("+klog" if r[2] == "bad" else "")


def counts(res: dict[str, tuple[str, int, str]], tests: list[str]) -> str:
    c = {"pass": 0, "fail": 0, "notrun": 0}
    for t in tests:
        r = res.get(t, ("missing", 0, "ok"))[0]
        key = "fail" if r in ("fail", "timeout", "missing") else r
        c[key] = c.get(key, 0) + 1
    secs = sum(res[t][1] for t in tests if t in res)
    return f"{c['pass']} / {c['fail']} / {c['notrun']} ({secs} s)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=Path, required=True, help="the test list, one a line")
    ap.add_argument("--without", type=Path, required=True, help="the half without aipu")
    ap.add_argument("--with", dest="with_", type=Path, required=True, help="the half with aipu")
    ap.add_argument("--label", default="", help="kernel and fs, for the table")
    ap.add_argument("--secs", type=int, default=0, help="the boot's wall time, for the table")
    ap.add_argument("--table", type=Path, help="append a Markdown row to this file")
    a = ap.parse_args()

    tests = [t for t in a.tests.read_text().split() if t]
    wo = read_results(a.without)
    wi = read_results(a.with_)
    failures: list[str] = []
    differ: list[str] = []
    width = max([len(t) for t in tests] + [4])
    print(f"{'test':<{width}}  {'without aipu':<14}  {'with aipu':<14}")
    for t in tests:
        lo, li = label(wo.get(t)), label(wi.get(t))
        mark = ""
        if lo != li:
            differ.append(t)
            mark = "  <- differs"
        o_bad = wo.get(t, ("missing", 0, "ok"))
        i_bad = wi.get(t, ("missing", 0, "ok"))
        result_only_aipu = (i_bad[0] in BAD and o_bad[0] not in BAD) or i_bad[0] == "missing"
        klog_only_aipu = i_bad[2] == "bad" and o_bad[2] != "bad"
        if result_only_aipu or klog_only_aipu:
            failures.append(t)
            mark = "  <- FAIL: " + ("no result with aipu" if li == "missing" else "only with aipu")
        print(f"{t:<{width}}  {lo:<14}  {li:<14}{mark}")
    if end_log_bad(a.with_) and not end_log_bad(a.without):
        failures.append("end")
        print("end: the kernel log after the last test with aipu (or its rmmod) has bad lines")
    print()
    print(f"without aipu (pass / fail / not run): {counts(wo, tests)}")
    print(f"with aipu    (pass / fail / not run): {counts(wi, tests)}")
    print("results differ: " + (" ".join(differ) if differ else "none"))
    print("fail only with aipu: " + (" ".join(failures) if failures else "none"))
    if a.table:
        with a.table.open("a") as f:
            kernel, _, fs = a.label.partition(" ")
            f.write(
                f"| {kernel} | {fs} | {len(tests)} | {counts(wo, tests)} | {counts(wi, tests)} "
                f"| {' '.join(differ) or 'none'} | {a.secs} s |\n"
            )
    print(f"{len(tests) - len([t for t in failures if t != 'end'])} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
