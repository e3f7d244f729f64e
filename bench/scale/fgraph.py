#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Sum an ftrace function_graph trace by function and depth.

    fgraph.py TRACE

TRACE is /sys/kernel/tracing/trace after a function_graph run (bench/scale/
guest.sh's profile phase enters it at aipu's probe_dirty_folio). Prints a
Markdown table, one row per call path, as a tree (the heaviest callee
first): its calls,
mean time a call, and that mean less what the tracer itself costs: the
tracer adds about the same time to every traced call (its entry and return
hooks), measured here as the mean time of __rcu_read_lock, which does
almost nothing, and a call's time includes that cost once for itself and
once for every traced call beneath it.

A caller's row still carries part of the tracer's cost for each callee
(the hooks' work outside the callee's own timestamps), so trust the
callees' rows more than their caller's: the caller's true cost is what the
same workload measures untraced, with and without the module.

Under QEMU TCG the times are emulated time: use them as shares, not as
what the code costs on hardware.
"""

import re
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*(\d+)\)\s*[+!#*@$]?\s*(?:([\d.]+) us)?\s*\|(\s*)(.*?)\s*$")
BASELINE = "__rcu_read_lock"


def name_of(text):
    """probe_dirty_folio [aipu]() { -> probe_dirty_folio"""
    return text.rstrip("{;").strip().split(" ")[0].removesuffix("()")


def parse(lines):
    """Per call path (root first): [calls, total us, traced calls beneath]."""
    acc = defaultdict(lambda: [0, 0.0, 0])
    stacks = defaultdict(list)  # cpu -> [[name, traced calls beneath]]
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        cpu, dur, indent, text = m.groups()
        depth = max(len(indent) - 2, 0) // 2
        stack = stacks[cpu]
        if text.endswith("{"):
            del stack[depth:]
            stack.append([name_of(text), 0])
            continue
        if text.startswith("}"):
            if len(stack) <= depth or dur is None:
                continue
            name, beneath = stack[depth]
        elif text.endswith(";") and dur is not None:
            name, beneath = name_of(text), 0
        else:
            continue
        del stack[depth:]
        a = acc[tuple(f[0] for f in stack) + (name,)]
        a[0] += 1
        a[1] += float(dur)
        a[2] += beneath
        for frame in stack:
            frame[1] += 1
    return acc


def tree_order(acc):
    """Paths depth first, the heaviest sibling first."""

    def key(path):
        return [(-acc[path[: i + 1]][1], n) for i, n in enumerate(path)]

    return sorted((p for p in acc if p[:-1] in acc or len(p) == 1), key=key)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fgraph.py TRACE (a function_graph trace)")
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        acc = parse(f)
    if not acc:
        sys.exit(f"fgraph.py: no function_graph lines in {sys.argv[1]}")
    base = [a for p, a in acc.items() if p[-1] == BASELINE and a[0]]
    calls = sum(a[0] for a in base)
    cost = sum(a[1] for a in base) / calls if calls else 0.0
    print(
        f"# function_graph: tracer cost {cost:.2f} us a traced call "
        f"(mean of {BASELINE}{'' if base else ': not traced, taken as 0'})"
    )
    print("| function | calls | mean us | mean less tracer us |")
    print("|---|---:|---:|---:|")
    for path in tree_order(acc):
        n, total, beneath = acc[path]
        mean = total / n
        net = mean - cost * (1 + beneath / n)
        print(f"| {'. ' * (len(path) - 1)}{path[-1]} | {n} | {mean:.2f} | {net:.2f} |")


if __name__ == "__main__":
    main()
