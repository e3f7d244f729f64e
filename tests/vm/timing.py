#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Timing summaries of a block trace for aipu's VM tests (uses blkevents.py).

timing.py first  --trace F --marker-sector S --sectors R
    seconds from the marker write to the first dispatch (D) of a write
    to the sectors R; exit 1 if there is none.
timing.py bursts --trace F --sectors R [--gap 0.5] [--marker-sector S]
    group the dispatches of writes to R into bursts (a gap longer than
    --gap seconds starts a new one) and print one line per burst:
    "START WIDTH WRITES" (START relative to the marker if given), then
    "bursts N".
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blkevents  # noqa: E402


def dispatches(args):
    events = blkevents.read_events(args.trace)
    ranges = blkevents.parse_ranges(args.sectors)
    t0 = 0.0
    if args.marker_sector is not None:
        t0, _ = blkevents.marker_time(events, args.marker_sector)
        if t0 is None:
            raise SystemExit(f"timing.py: no marker write at sector {args.marker_sector}")
    times = sorted(e.time for e in blkevents.writes_to(events, ranges, actions="D"))
    return [t - t0 for t in times]


def cmd_first(args):
    times = dispatches(args)
    if not times:
        print("timing.py: no write to those sectors", file=sys.stderr)
        return 1
    print(f"{times[0]:.4f}")
    return 0


def cmd_times(args):
    for t in dispatches(args):
        print(f"{t:.4f}")
    return 0


def cmd_bursts(args):
    times = dispatches(args)
    bursts = []
    for t in times:
        if bursts and t - bursts[-1][-1] <= args.gap:
            bursts[-1].append(t)
        else:
            bursts.append([t])
    for b in bursts:
        print(f"{b[0]:.4f} {b[-1] - b[0]:.4f} {len(b)}")
    print(f"bursts {len(bursts)}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("first", "times", "bursts"):
        sp = sub.add_parser(name)
        sp.add_argument("--trace", required=True)
        sp.add_argument("--sectors", required=True)
        sp.add_argument("--marker-sector", type=int, required=name != "bursts")
        if name == "bursts":
            sp.add_argument("--gap", type=float, default=0.5)
    args = p.parse_args(argv)
    return {"first": cmd_first, "times": cmd_times, "bursts": cmd_bursts}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
