#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Timing questions about a block trace, for aipu's VM tests.

Input: the text lib.sh's blktrace_stop writes, one event a line,
produced by ``blkparse -f "%T.%9t %a %d %S %n %p %C\\n"``:

    TIME ACTION RWBS SECTOR NSECTORS PID COMM

(blkparse's default output format is accepted too.)  TIME is in seconds
from the start of the trace, SECTOR and NSECTORS in 512-byte sectors.

A test marks t0 with a 4 KiB O_DIRECT write to a sector nothing else writes
(the "marker"), right before it dirties pages; optionally a second marker
right after (the "end marker").  The questions:

  marker   when did the marker write happen?
  writes   which writes touched these sectors, and when (relative to t0)?
  window   did every write to these sectors happen within [t0+lo, t0+hi],
           and was every sector of them written?  Exit 0 yes, 1 no, with a
           one-line explanation either way; 2 for bad input.
  sectors  the sectors a file occupies (from ``filefrag -v``), as ranges.
  json     the events as a JSON list.

Sector ranges are written "A-B" (inclusive) or "A+N" (N sectors from A),
several separated by commas, or "@FILE" for a file of such ranges.
"""

import argparse
import bisect
import json
import re
import subprocess
import sys

# ACTION codes blkparse prints (see blkparse(1)).
QUEUE, DISPATCH, COMPLETE = "Q", "D", "C"

_CUSTOM = re.compile(
    r"^\s*(?P<time>\d+\.\d+)\s+(?P<action>[A-Za-z]{1,2})\s+(?P<rwbs>[A-Z]+)\s+"
    r"(?P<sector>\d+)\s+(?P<nsect>\d+)(?:\s+(?P<pid>\d+))?(?:\s+(?P<comm>.*))?$"
)
_DEFAULT = re.compile(
    r"^\s*\d+,\d+\s+\d+\s+\d+\s+(?P<time>\d+\.\d+)\s+(?P<pid>\d+)\s+"
    r"(?P<action>[A-Za-z]{1,2})\s+(?P<rwbs>[A-Z]+)\s+(?P<sector>\d+)\s+\+\s+"
    r"(?P<nsect>\d+)(?:\s+\[(?P<comm>.*)\])?"
)


class Event:
    """One blktrace event."""

    __slots__ = ("time", "action", "rwbs", "sector", "nsect", "pid", "comm")

    def __init__(self, time, action, rwbs, sector, nsect, pid=0, comm=""):
        self.time = time
        self.action = action
        self.rwbs = rwbs
        self.sector = sector
        self.nsect = nsect
        self.pid = pid
        self.comm = comm

    @property
    def end(self):
        """First sector after the event's extent."""
        return self.sector + self.nsect

    @property
    def is_write(self):
        return "W" in self.rwbs and "D" not in self.rwbs

    def overlaps(self, first, last):
        """True if the event touches a sector in [first, last]."""
        return self.nsect > 0 and self.sector <= last and self.end > first

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return (
            f"{self.time:.6f} {self.action} {self.rwbs} "
            f"{self.sector}+{self.nsect} [{self.comm}]"
        )


def parse_events(lines):
    """Events from blkparse output lines; lines that are not events are skipped."""
    events = []
    for line in lines:
        m = _CUSTOM.match(line) or _DEFAULT.match(line)
        if not m:
            continue
        events.append(
            Event(
                float(m.group("time")),
                m.group("action"),
                m.group("rwbs"),
                int(m.group("sector")),
                int(m.group("nsect")),
                int(m.group("pid") or 0),
                (m.group("comm") or "").strip(),
            )
        )
    events.sort(key=lambda e: e.time)
    return events


def read_events(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_events(f)


def parse_ranges(text):
    """[(first, last), ...] from "A-B,C+N,..." or "@file"; sorted, merged."""
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as f:
            text = ",".join(f.read().split())
    ranges = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"(\d+)(?:([-+])(\d+))?", part)
        if not m:
            raise ValueError(f"bad sector range {part!r}: use A-B or A+N")
        first = int(m.group(1))
        if m.group(2) == "-":
            last = int(m.group(3))
        elif m.group(2) == "+":
            if int(m.group(3)) == 0:
                raise ValueError(f"empty sector range {part!r}")
            last = first + int(m.group(3)) - 1
        else:
            last = first
        if last < first:
            raise ValueError(f"sector range {part!r} ends before it starts")
        ranges.append((first, last))
    if not ranges:
        raise ValueError("no sector ranges given")
    ranges.sort()
    merged = [ranges[0]]
    for first, last in ranges[1:]:
        if first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def format_ranges(ranges):
    return ",".join(f"{a}-{b}" for a, b in ranges)


def marker_time(events, sector, actions="CDQ", which="first"):
    """Time of the marker write at `sector`.

    `actions` lists the event kinds to use, in order of preference: the
    first kind present for a write covering `sector` wins.  With several
    such writes, `which` picks the first or the last one.
    """
    for action in actions:
        times = [
            e.time
            for e in events
            if e.action == action and e.is_write and e.overlaps(sector, sector)
        ]
        if times:
            return (times[0] if which == "first" else times[-1]), action
    return None, None


class SectorIndex:
    """Write events of the given kinds, not touching `exclude`, by first sector.

    Tests ask, for each of thousands of pages, which writes touch it;
    scanning every event per page cost t_shrink minutes under TCG (2,000
    pages by 10,000 events).  An event starting at s with n sectors touches
    [first, last] only if first - n < s <= last, so a bisection over the
    starts, widened by the longest extent, finds every candidate.
    """

    def __init__(self, events, actions, exclude=()):
        self.events = sorted(
            (
                (i, e)
                for i, e in enumerate(events)
                if e.action in actions
                and e.is_write
                and not any(e.overlaps(a, b) for a, b in exclude)
            ),
            key=lambda ie: ie[1].sector,
        )
        self.starts = [e.sector for _, e in self.events]
        self.longest = max((e.nsect for _, e in self.events), default=0)

    def touching(self, ranges):
        """The events touching any of `ranges`, each once, in their input order
        (time order for parse_events' lists)."""
        found = {}
        for first, last in ranges:
            lo = bisect.bisect_right(self.starts, first - self.longest)
            hi = bisect.bisect_right(self.starts, last)
            for i, e in self.events[lo:hi]:
                if e.overlaps(first, last):
                    found[i] = e
        return [found[i] for i in sorted(found)]


def writes_to(events, ranges, actions="QD"):
    """Write events of the given kinds that touch any of `ranges`."""
    return SectorIndex(events, actions).touching(ranges)


def uncovered(events, ranges, action=DISPATCH):
    """Parts of `ranges` that no write event of kind `action` covered."""
    extents = sorted((e.sector, e.end - 1) for e in events if e.action == action and e.is_write)
    missing = []
    for first, last in ranges:
        pos = first
        for a, b in extents:
            if b < pos:
                continue
            if a > last:
                break
            if a > pos:
                missing.append((pos, min(a - 1, last)))
            pos = max(pos, b + 1)
            if pos > last:
                break
        if pos <= last:
            missing.append((pos, last))
    return missing


def check_window(
    events,
    marker_sector,
    ranges,
    lo,
    hi,
    tolerance=0.0,
    actions="QD",
    end_marker_sector=None,
    require_all=True,
):
    """(ok, explanation) for the question "window" answers."""
    t0, t0_action = marker_time(events, marker_sector)
    if t0 is None:
        return False, f"no write to marker sector {marker_sector} in the trace"
    t_end, end_action = t0, t0_action
    if end_marker_sector is not None:
        t_end, end_action = marker_time(events, end_marker_sector, actions="QDC")
        if t_end is None:
            return False, f"no write to end marker sector {end_marker_sector}"
        if t_end < t0:
            return False, "the end marker was written before the marker"
    hits = [
        e
        for e in writes_to(events, ranges, actions)
        if not e.overlaps(marker_sector, marker_sector)
        and (end_marker_sector is None or not e.overlaps(end_marker_sector, end_marker_sector))
    ]
    if not hits:
        return False, (
            f"no write ({'/'.join(actions)}) to sectors {format_ranges(ranges)} "
            f"in the trace (t0={t0:.6f} from {t0_action})"
        )
    first = min(e.time for e in hits)
    last = max(e.time for e in hits)
    span = (
        f"{len(hits)} {'/'.join(actions)} events at t0+{first - t0:.3f}" f"..t0+{last - t0:.3f} s"
    )
    if end_marker_sector is not None:
        span += f" (end marker at t0+{t_end - t0:.3f} s)"
    early = [e for e in hits if e.time < t0 + lo - tolerance]
    if early:
        e = early[0]
        return False, (
            f"{len(early)} write event(s) before t0+{lo:g} s: first "
            f"{e.action} {e.sector}+{e.nsect} at t0+{e.time - t0:.3f} s; {span}"
        )
    late = [e for e in hits if e.time > t_end + hi]
    if late:
        e = late[-1]
        ref = "end marker" if end_marker_sector is not None else "t0"
        return False, (
            f"{len(late)} write event(s) after {ref}+{hi:g} s: last "
            f"{e.action} {e.sector}+{e.nsect} at {ref}+{e.time - t_end:.3f} s; {span}"
        )
    if require_all:
        missing = uncovered(hits, ranges, DISPATCH if DISPATCH in actions else actions[0])
        if missing:
            n = sum(b - a + 1 for a, b in missing)
            return False, (
                f"{n} sector(s) never written: {format_ranges(missing[:8])}"
                f"{' ...' if len(missing) > 8 else ''}; {span}"
            )
    return True, f"all writes within [t0+{lo:g}, t0+{hi:g}] s: {span}"


def filefrag_extents(text):
    """(block size, [(logical block, physical block, blocks)]) of a file
    from ``filefrag -v`` output."""
    m = re.search(r"\((\d+) blocks? of (\d+) bytes\)", text) or re.search(
        r"blocksize of (\d+)", text
    )
    if not m:
        raise ValueError("cannot find the block size in the filefrag output")
    bsize = int(m.group(m.lastindex))
    if bsize % 512:
        raise ValueError(f"block size {bsize} is not a multiple of 512")
    extents = []
    ext = re.compile(r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):")
    for line in text.splitlines():
        m = ext.match(line)
        if m:
            la, lb, pa, pb = (int(g) for g in m.groups())
            if pb - pa != lb - la:
                raise ValueError(f"filefrag extent with unequal lengths: {line.strip()}")
            extents.append((la, pa, pb - pa + 1))
    if not extents:
        raise ValueError("the filefrag output lists no extent (is the file allocated?)")
    return bsize, extents


def filefrag_ranges(text):
    """Sector ranges of a file from ``filefrag -v`` output."""
    bsize, extents = filefrag_extents(text)
    per = bsize // 512
    return [(p * per, (p + n) * per - 1) for _, p, n in extents]


def filefrag_text(path):
    """``filefrag -v`` output for a file."""
    return subprocess.run(
        ["filefrag", "-v", path], check=True, capture_output=True, text=True
    ).stdout


def _cmd_marker(args, events):
    t, action = marker_time(events, args.marker_sector, args.actions, args.which)
    if t is None:
        print(f"no write to sector {args.marker_sector}", file=sys.stderr)
        return 1
    print(f"{t:.9f} {action}")
    return 0


def _cmd_writes(args, events):
    t0 = 0.0
    if args.marker_sector is not None:
        t0, _ = marker_time(events, args.marker_sector)
        if t0 is None:
            print(f"no write to marker sector {args.marker_sector}", file=sys.stderr)
            return 1
    for e in writes_to(events, parse_ranges(args.sectors), args.actions):
        print(f"{e.time - t0:.6f} {e.action} {e.rwbs} {e.sector} {e.nsect} {e.comm}")
    return 0


def _cmd_window(args, events):
    ok, why = check_window(
        events,
        args.marker_sector,
        parse_ranges(args.sectors),
        args.lo,
        args.hi,
        args.tolerance,
        args.actions,
        args.end_marker_sector,
        not args.allow_missing,
    )
    print(("ok: " if ok else "FAILED: ") + why)
    return 0 if ok else 1


def _cmd_json(args, events):
    json.dump([e.as_dict() for e in events], sys.stdout, indent=args.indent)
    print()
    return 0


def _cmd_sectors(args):
    if args.filefrag:
        with open(args.filefrag, encoding="utf-8") as f:
            text = f.read()
    else:
        text = filefrag_text(args.file)
    print(format_ranges(filefrag_ranges(text)))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    def trace_arg(sp):
        sp.add_argument("--trace", required=True, help="event list from blktrace_stop")

    sp = sub.add_parser("marker", help="time of the marker write")
    trace_arg(sp)
    sp.add_argument("--marker-sector", type=int, required=True)
    sp.add_argument("--actions", default="CDQ", help="event kinds, preferred first")
    sp.add_argument("--which", choices=("first", "last"), default="first")

    sp = sub.add_parser("writes", help="writes to sector ranges")
    trace_arg(sp)
    sp.add_argument("--sectors", required=True, help="A-B,C+N,... or @FILE")
    sp.add_argument("--marker-sector", type=int, help="print times relative to it")
    sp.add_argument("--actions", default="D")

    sp = sub.add_parser("window", help="all writes within [t0+lo, t0+hi]?")
    trace_arg(sp)
    sp.add_argument("--marker-sector", type=int, required=True)
    sp.add_argument(
        "--end-marker-sector",
        type=int,
        help="a second marker written after the pages were dirtied: hi counts from it",
    )
    sp.add_argument("--sectors", required=True, help="A-B,C+N,... or @FILE")
    sp.add_argument("--lo", type=float, required=True, help="seconds after t0")
    sp.add_argument("--hi", type=float, required=True, help="seconds after t0")
    sp.add_argument("--tolerance", type=float, default=0.0, help="slack below lo, seconds")
    sp.add_argument("--actions", default="QD", help="event kinds that must lie in the window")
    sp.add_argument(
        "--allow-missing",
        action="store_true",
        help="do not require every sector to be written",
    )

    sp = sub.add_parser("json", help="the events as JSON")
    trace_arg(sp)
    sp.add_argument("--indent", type=int, default=None)

    sp = sub.add_parser("sectors", help="sector ranges of a file (filefrag -v)")
    g = sp.add_mutually_exclusive_group(required=True)
    g.add_argument("--file", help="run filefrag -v on this file")
    g.add_argument("--filefrag", help="a saved filefrag -v output")

    args = p.parse_args(argv)
    try:
        if args.cmd == "sectors":
            return _cmd_sectors(args)
        events = read_events(args.trace)
        return {
            "marker": _cmd_marker,
            "writes": _cmd_writes,
            "window": _cmd_window,
            "json": _cmd_json,
        }[args.cmd](args, events)
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"blkevents: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
