#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-page dirtying and write timing, for the stage, pace and max_batch tests.

    pagetrace.py dirty TARGET --first-page F --count N [--stride S]
                 [--interval-ms I] --marker PATH:OFFSET --log FILE
        One 4 KiB O_DIRECT write at the marker, then N buffered 4 KiB writes
        (no fsync) to pages F, F+S, ... of TARGET, page i at i*I ms after the
        marker write returned (I = 0: as fast as possible).  FILE gets one line
        a page, "PAGE BEFORE_MS AFTER_MS": the time just before and just after
        that page's write, in ms from the marker's return, and a line
        "# base-epoch-us US": the marker's return on the wall clock (bash's
        EPOCHREALTIME), no later than the first page's dirtying.  With
        --end-marker, one more O_DIRECT write there after the last page,
        logged as "# end-marker BEFORE_MS".

    pagetrace.py analyze --trace T --marker-sector M --log FILE
                 [--base-sector B] [--window-ms W] [--burst-gap-ms G] [--lead N]
                 [--late-ms L] [--table OUT]
        Page P of the log covers sectors B+8P .. B+8P+7 of the traced device.
        t0 is the marker write's completion in the trace (blkevents.py).  A
        page's dirty time is taken as t0 + BEFORE_MS, which is never later than
        the true one (the marker completed before its write returned), so a
        delay measured from it is never too short.  Prints "name value" lines,
        times in microseconds:

          pages, written       pages in the log; pages with a dispatched write
          writes               dispatched write requests touching the pages
          order_ok             1 if the pages' first dispatches follow dirty order
          order_bad            the first page dispatched before an older one (or -)
          min_gap_q_us, min_gap_d_us
                               smallest interval between consecutive pages'
                               first queue (Q) / dispatch (D) events, in dirty
                               order, leaving out the first --lead pages
          max_gap_d_us         the largest such interval of dispatches
          min_delay_us, max_delay_us, max_delay_page
                               first dispatch minus dirty time
          late_q               with --late-ms L: pages first queued (Q) more
                               than L ms after their dirty time
          span_us              last first-dispatch minus first first-dispatch
          max_in_window        most first dispatches inside any W ms window
          bursts, max_burst    dispatches grouped where gaps exceed G ms

    pagetrace.py window --trace T --marker-sector M --end-marker-sector E
                 --log FILE --lo LO --hi HI [--tolerance S]
                 [--base-sector B | --filefrag OUT]
        Each page of the log on its own: every write (Q and D) to its sectors
        lies within [dirty + LO - S, dirty + HI] s, and a dispatch (D) covers
        them all.  The blktrace clock and the log's differ by an offset known
        to lie between the marker's completion (before the marker's write
        returned) and the end marker's first queue event less its BEFORE_MS
        (after it began): each edge takes the side that never fails a page
        written in time, so the check does not depend on how long the
        dirtying took.  Pages of a file are found with --filefrag (saved
        "filefrag -v FILE" output: page P is the file's page P).  Exit 1 if a
        page is early, late or not written.

    pagetrace.py rewrite FILE --pages N --seconds S --state OUT [--hot H]
        Rewrite pages of FILE (which must hold N pages written by "fill")
        at random for S seconds: read the page, check it holds the version
        last written, write version + 1 (readahead off: POSIX_FADV_RANDOM;
        with --drain, an munmap after each write drains this CPU's LRU-add
        batch, so no page stays pinned there).  With probability H (default 0.9)
        the page is one of the first N/2 ("hot"), else of the rest ("cold").
        OUT gets "PAGE VERSION" lines.  Exit 1 if a read saw another version
        (a dirty page was dropped: its data was lost).

    pagetrace.py fill FILE --pages N
        Write version 0 of N pages (buffered).

    fill, rewrite and verify take --first-page F: their page 0 is page F of
    FILE (a block device, say); FILE is created if it does not exist.

    pagetrace.py cached FILE [--first-page F --count N]
        The number of FILE's pages (or of pages F .. F+N-1) in the page
        cache (mmap + mincore), then the first 32 of their indexes; with
        --list, every cached index instead, one a line.

    pagetrace.py flags PATH...
        Per file or block device, how many of its cached pages are dirty or
        under writeback, and the first 16 dirty indexes (root: the frames'
        flags in /proc/kpageflags; nothing is read in), for a failure dump.

    pagetrace.py verify FILE --state OUT
        Read FILE and check every page holds the version in OUT; exit 1 if not.

Stdlib only; one process does the timing-critical work, since a loop of
commands is far too slow under QEMU/TCG.
"""

import argparse
import ctypes
import mmap
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blkevents  # noqa: E402

PAGE = 4096
SECTORS = PAGE // 512


def _direct_write(spec):
    path, _, off = spec.rpartition(":")
    if not path:
        raise ValueError(f"marker {spec!r}: use PATH:BYTE_OFFSET")
    off = int(off, 0)
    if off % PAGE:
        raise ValueError(f"marker offset {off} is not a multiple of {PAGE}")
    buf = mmap.mmap(-1, PAGE)
    buf.write(b"M" * PAGE)
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    try:
        if os.pwrite(fd, buf, off) != PAGE:
            raise OSError(f"short O_DIRECT write to {path}")
    finally:
        os.close(fd)
        buf.close()


def cmd_dirty(args):
    pages = [args.first_page + i * args.stride for i in range(args.count)]
    data = b"\xa5" * PAGE
    fd = os.open(args.target, os.O_WRONLY | os.O_CREAT, 0o644)
    rows = []
    try:
        _direct_write(args.marker)
        base = time.monotonic()
        base_epoch_us = time.time_ns() // 1000
        for i, page in enumerate(pages):
            due = base + i * args.interval_ms / 1000.0
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            before = time.monotonic()
            if os.pwrite(fd, data, page * PAGE) != PAGE:
                raise OSError(f"short write at page {page}")
            after = time.monotonic()
            rows.append((page, (before - base) * 1000, (after - base) * 1000, before - due))
        if args.end_marker:
            end_before = (time.monotonic() - base) * 1000
            _direct_write(args.end_marker)
    finally:
        os.close(fd)
    with open(args.log, "w", encoding="utf-8") as f:
        f.write(f"# base-epoch-us {base_epoch_us}\n")
        for page, before, after, _ in rows:
            f.write(f"{page} {before:.3f} {after:.3f}\n")
        if args.end_marker:
            f.write(f"# end-marker {end_before:.3f}\n")
    lag = max(r[3] for r in rows) * 1000
    print(
        f"dirtied {len(rows)} pages of {args.target} (pages {pages[0]}..{pages[-1]} "
        f"step {args.stride}) over {rows[-1][2]:.1f} ms, every {args.interval_ms:g} ms "
        f"(worst lag behind schedule {lag:.1f} ms)"
    )
    return 0


def read_log(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] != "#":
                rows.append((int(parts[0]), float(parts[1]) / 1000, float(parts[2]) / 1000))
    if not rows:
        raise ValueError(f"{path}: no pages")
    return rows


def read_end_marker(path):
    """BEFORE of the log's end marker, in seconds, or None."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts[:2] == ["#", "end-marker"] and len(parts) == 3:
                return float(parts[2]) / 1000
    return None


def first_time(hits, action):
    """Time of the first of `hits` (time order) of kind `action`, or None."""
    return next((e.time for e in hits if e.action == action), None)


def max_in_window(times, width):
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] > width:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def bursts(times, gap):
    groups = []
    for t in times:
        if groups and t - groups[-1][-1] <= gap:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def analyze(events, log, marker_sector, base_sector=0, window=0.1, gap=0.3, lead=0, late=None):
    """(metrics dict, per-page table rows) for the question "analyze" answers."""
    t0, _ = blkevents.marker_time(events, marker_sector)
    if t0 is None:
        raise ValueError(f"no write to marker sector {marker_sector} in the trace")
    rows = []
    writes = blkevents.SectorIndex(events, "QD")
    for page, before, _after in log:
        first = base_sector + page * SECTORS
        hits = [e for e in writes.touching([(first, first + SECTORS - 1)]) if e.time >= t0]
        rows.append(
            (
                page,
                t0 + before,
                first_time(hits, blkevents.QUEUE),
                first_time(hits, blkevents.DISPATCH),
            )
        )
    us = lambda s: int(round(s * 1e6))  # noqa: E731
    m = {"pages": len(rows), "written": sum(1 for r in rows if r[3] is not None)}
    ranges = blkevents.parse_ranges(
        ",".join(f"{base_sector + r[0] * SECTORS}+{SECTORS}" for r in rows)
    )
    dispatches = sorted(
        e.time
        for e in blkevents.writes_to(events, ranges, actions="D")
        if e.time >= t0 and not e.overlaps(marker_sector, marker_sector)
    )
    m["writes"] = len(dispatches)
    # Dirty order: the log's order (one process wrote them in that order).
    done = [r for r in rows if r[3] is not None]
    bad = next((b for a, b in zip(done, done[1:]) if b[3] < a[3]), None)
    m["order_ok"] = 0 if bad else 1
    m["order_bad"] = bad[0] if bad else "-"
    later = [r for r in rows[lead:] if r[3] is not None]
    gaps_q = [
        b[2] - a[2] for a, b in zip(later, later[1:]) if a[2] is not None and b[2] is not None
    ]
    gaps_d = [b[3] - a[3] for a, b in zip(later, later[1:])]
    m["min_gap_q_us"] = us(min(gaps_q)) if gaps_q else -1
    m["min_gap_d_us"] = us(min(gaps_d)) if gaps_d else -1
    m["max_gap_d_us"] = us(max(gaps_d)) if gaps_d else -1
    delays = [(r[3] - r[1], r[0]) for r in done]
    m["min_delay_us"] = us(min(delays)[0]) if delays else -1
    m["max_delay_us"] = us(max(delays)[0]) if delays else -1
    m["max_delay_page"] = max(delays)[1] if delays else "-"
    if late is not None:
        m["late_q"] = sum(1 for r in rows if r[2] is not None and r[2] - r[1] > late)
    firsts = sorted(r[3] for r in done)
    m["span_us"] = us(firsts[-1] - firsts[0]) if firsts else -1
    m["max_in_window"] = max_in_window(firsts, window)
    groups = bursts(dispatches, gap)
    m["bursts"] = len(groups)
    m["max_burst"] = max((len(g) for g in groups), default=0)
    table = [
        (
            page,
            dirty - t0,
            None if q is None else q - t0,
            None if d is None else d - t0,
            None if d is None else d - dirty,
        )
        for page, dirty, q, d in rows
    ]
    return m, table, [(g[0] - t0, g[-1] - g[0], len(g)) for g in groups]


def page_sectors(page, base_sector=0, extents=None):
    """Sector ranges [(first, last)] of a page: of the device at base_sector,
    or of a file from filefrag's (block size, extents); [] if a hole."""
    if extents is None:
        first = base_sector + page * SECTORS
        return [(first, first + SECTORS - 1)]
    bsize, exts = extents
    per = bsize // 512
    out = []
    for blk in range(page * PAGE // bsize, ((page + 1) * PAGE - 1) // bsize + 1):
        for logical, physical, n in exts:
            if logical <= blk < logical + n:
                first = (physical + blk - logical) * per
                out.append((first, first + per - 1))
    if len(out) < -(-PAGE // bsize):
        return []  # a hole, or partly one: not all of the page was written
    return blkevents.parse_ranges(",".join(f"{a}-{b}" for a, b in out))


def window(
    events,
    log,
    marker_sector,
    end_sector,
    end_before,
    lo,
    hi,
    tolerance=0.0,
    base_sector=0,
    extents=None,
):
    """(ok, explanation, per-page rows) for the question "window" answers."""
    t0, _ = blkevents.marker_time(events, marker_sector)
    if t0 is None:
        return False, f"no write to marker sector {marker_sector} in the trace", []
    tq, _ = blkevents.marker_time(events, end_sector, actions="Q")
    if tq is None:
        return False, f"no queue event for end marker sector {end_sector} in the trace", []
    late_base = tq - end_before
    if late_base < t0:
        return (
            False,
            (
                f"the end marker was queued {tq - t0:.6f} s after the marker but logged "
                f"{end_before:.6f} s after it: trace and log do not match"
            ),
            [],
        )
    markers = [(marker_sector, marker_sector), (end_sector, end_sector)]
    writes = blkevents.SectorIndex(events, "QD", markers)
    rows, bad, missing = [], [], []
    for page, before, after in log:
        ranges = page_sectors(page, base_sector, extents)
        if not ranges:
            missing.append((page, "no blocks allocated"))
            continue
        lo_t, hi_t = t0 + before + lo - tolerance, late_base + after + hi
        hits = writes.touching(ranges)
        if blkevents.uncovered(hits, ranges, blkevents.DISPATCH):
            missing.append((page, f"sectors {blkevents.format_ranges(ranges)} not all written"))
            continue
        first, last = min(e.time for e in hits), max(e.time for e in hits)
        rows.append((page, first - (t0 + before), last - (late_base + after)))
        if first < lo_t:
            bad.append(f"page {page} early: {first - (t0 + before):.3f} s after its dirtying")
        elif last > hi_t:
            bad.append(f"page {page} late: {last - (late_base + after):.3f} s after its dirtying")
    span = (
        f"{len(log)} pages, dirtied over {log[-1][2] - log[0][1]:.3f} s, clock offset "
        f"known to {late_base - t0:.3f} s"
    )
    if rows:
        span += (
            f"; writes {min(r[1] for r in rows):.3f}..{max(r[2] for r in rows):.3f} s "
            f"after their pages' dirtying"
        )
    if missing or bad:
        what = [f"page {p}: {why}" for p, why in missing[:4]] + bad[:4]
        n = len(missing) + len(bad)
        return (
            False,
            (
                f"{n} page(s) outside [dirty+{lo:g}, dirty+{hi:g}] s or not written: "
                f"{'; '.join(what)}{' ...' if n > 8 else ''}; {span}"
            ),
            rows,
        )
    return True, f"every page written within [dirty+{lo:g}, dirty+{hi:g}] s: {span}", rows


def cmd_window(args):
    events = blkevents.read_events(args.trace)
    end_before = read_end_marker(args.log)
    if end_before is None:
        raise ValueError(f"{args.log}: no end marker (pagetrace.py dirty --end-marker)")
    extents = None
    if args.filefrag:
        with open(args.filefrag, encoding="utf-8") as f:
            extents = blkevents.filefrag_extents(f.read())
    ok, why, _ = window(
        events,
        read_log(args.log),
        args.marker_sector,
        args.end_marker_sector,
        end_before,
        args.lo,
        args.hi,
        args.tolerance,
        args.base_sector,
        extents,
    )
    print(("ok: " if ok else "FAILED: ") + why)
    return 0 if ok else 1


def cmd_analyze(args):
    events = blkevents.read_events(args.trace)
    m, table, groups = analyze(
        events,
        read_log(args.log),
        args.marker_sector,
        args.base_sector,
        args.window_ms / 1000,
        args.burst_gap_ms / 1000,
        args.lead,
        None if args.late_ms is None else args.late_ms / 1000,
    )
    if args.table:
        fmt = lambda v: "-" if v is None else f"{v:.6f}"  # noqa: E731
        with open(args.table, "w", encoding="utf-8") as f:
            f.write("# page dirty Q D delay (s, from t0; delay = D - dirty)\n")
            for page, *times in table:
                f.write(f"{page} " + " ".join(fmt(v) for v in times) + "\n")
            f.write("# bursts: start width writes\n")
            for start, width, n in groups:
                f.write(f"# burst {start:.4f} {width:.4f} {n}\n")
    for k, v in m.items():
        print(f"{k} {v}")
    return 0


def _page_bytes(page, version):
    return struct.pack("<QQ", page, version) * (PAGE // 16)


def _open(path, flags):
    """Open a file (created if missing) or a block device."""
    if not os.path.exists(path):
        flags |= os.O_CREAT
    return os.open(path, flags, 0o644)


def cmd_fill(args):
    fd = _open(args.file, os.O_WRONLY)
    try:
        for p in range(args.pages):
            os.pwrite(fd, _page_bytes(p, 0), (args.first_page + p) * PAGE)
    finally:
        os.close(fd)
    return 0


def _check_page(data, page):
    """The version a page holds, or None if it is not a whole page of ours."""
    if len(data) != PAGE:
        return None
    p, v = struct.unpack_from("<QQ", data)
    return v if p == page and data == _page_bytes(page, v) else None


def cmd_rewrite(args):
    rng = random.Random(args.seed)
    version = [0] * args.pages
    hot = max(1, args.pages // 2)
    bad, ops = [], 0
    fd = os.open(args.file, os.O_RDWR)
    # No readahead: a page comes into the cache only when this loop reads it
    # (and then writes it), so every cached page is one aipu must write.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    base = args.first_page * PAGE
    end = time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            if rng.random() < args.hot or hot == args.pages:
                p = rng.randrange(hot)
            else:
                p = rng.randrange(hot, args.pages)
            got = _check_page(os.pread(fd, PAGE, base + p * PAGE), p)
            if got != version[p]:
                bad.append((p, version[p], got))
            version[p] += 1
            os.pwrite(fd, _page_bytes(p, version[p]), base + p * PAGE)
            if args.drain:
                # munmap drains this CPU's LRU-add batch, which holds a
                # reference on a page just read in and would keep it from
                # being dropped.
                mmap.mmap(-1, PAGE).close()
            ops += 1
            if args.sleep_ms:
                time.sleep(args.sleep_ms / 1000)
    finally:
        os.close(fd)
    with open(args.state, "w", encoding="utf-8") as f:
        for p, v in enumerate(version):
            f.write(f"{p} {v}\n")
    print(
        f"rewrote {ops} pages in {args.seconds:g} s (hot pages up to version "
        f"{max(version[:hot])}, cold up to {max(version[hot:], default=0)}); "
        f"{len(bad)} read(s) saw a wrong version"
    )
    for p, want, got in bad[:10]:
        print(f"page {p}: read version {got}, last written {want}")
    return 1 if bad else 0


def cached_pages(path, first=0, count=None):
    """Indexes of the pages of `path` in the page cache (mmap + mincore),
    of all of a file or of pages [first, first + count)."""
    if count is None:
        size = os.path.getsize(path) - first * PAGE
        if size <= 0:
            return []
    else:
        size = count * PAGE
    return [first + i for i, _ in _mapped_cached(path, first, size)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return libc


def _mapped_cached(path, first, size):
    """(offset in pages, address) of each cached page of `path`'s bytes
    [first * PAGE, first * PAGE + size), while they are mapped (mmap +
    mincore: nothing is read in)."""
    npages = (size + PAGE - 1) // PAGE
    libc = _libc()
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, first * PAGE)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path} failed")
        try:
            vec = ctypes.create_string_buffer(npages)
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path} failed")
            cached = vec.raw
            for i in range(npages):
                if cached[i] & 1:
                    yield i, addr + i * PAGE
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


KPF_DIRTY, KPF_WRITEBACK = 4, 8  # Documentation/admin-guide/mm/pagemap.rst


def _frame_flags(pagemap, kflags, addr):
    """The flags of the frame mapped at `addr`, or None if none is."""
    pagemap.seek(addr // PAGE * 8)
    (entry,) = struct.unpack("<Q", pagemap.read(8))
    if not entry >> 63:
        return None
    kflags.seek((entry & ((1 << 55) - 1)) * 8)
    return struct.unpack("<Q", kflags.read(8))[0]


def dirty_pages(path):
    """(dirty, under writeback) page indexes of `path`'s cache, a file or a
    block device (root: /proc/self/pagemap's frames, /proc/kpageflags)."""
    dirty, wb = [], []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)  # getsize() is 0 for a device
    finally:
        os.close(fd)
    chunk = 16384 * PAGE
    with open("/proc/self/pagemap", "rb") as pagemap, open("/proc/kpageflags", "rb") as kflags:
        for off in range(0, size, chunk):
            for i, addr in _mapped_cached(path, off // PAGE, min(chunk, size - off)):
                ctypes.string_at(addr, 1)  # map it: cached, nothing read
                flags = _frame_flags(pagemap, kflags, addr)
                if flags is None:
                    continue
                if flags >> KPF_DIRTY & 1:
                    dirty.append(off // PAGE + i)
                if flags >> KPF_WRITEBACK & 1:
                    wb.append(off // PAGE + i)
    return dirty, wb


def cmd_flags(args):
    for path in args.paths:
        dirty, wb = dirty_pages(path)
        print(f"{path}: {len(dirty)} dirty, {len(wb)} under writeback; dirty at {dirty[:16]}")
    return 0


def cmd_cached(args):
    pages = cached_pages(args.file, args.first_page, args.count)
    if args.list:
        for p in pages:
            print(p)
        return 0
    shown = " ".join(str(p) for p in pages[:32]) + (" ..." if len(pages) > 32 else "")
    print(f"{len(pages)} {shown}".rstrip())
    return 0


def cmd_verify(args):
    want = {}
    with open(args.state, encoding="utf-8") as f:
        for line in f:
            p, v = line.split()
            want[int(p)] = int(v)
    bad = []
    with open(args.file, "rb") as f:
        for p in sorted(want):
            f.seek((args.first_page + p) * PAGE)
            got = _check_page(f.read(PAGE), p)
            if got != want[p]:
                bad.append((p, want[p], got))
    print(f"{len(want) - len(bad)} of {len(want)} pages hold their last version")
    for p, w, g in bad[:10]:
        print(f"page {p}: holds version {g}, last written {w}")
    return 1 if bad else 0


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    sp = sub.add_parser("dirty")
    sp.add_argument("target")
    sp.add_argument("--first-page", type=int, required=True)
    sp.add_argument("--count", type=int, required=True)
    sp.add_argument("--stride", type=int, default=2)
    sp.add_argument("--interval-ms", type=float, default=0.0)
    sp.add_argument("--marker", required=True, help="PATH:BYTE_OFFSET")
    sp.add_argument("--end-marker", help="PATH:BYTE_OFFSET, written after the last page")
    sp.add_argument("--log", required=True)

    sp = sub.add_parser("window")
    sp.add_argument("--trace", required=True)
    sp.add_argument("--marker-sector", type=int, required=True)
    sp.add_argument("--end-marker-sector", type=int, required=True)
    sp.add_argument("--log", required=True)
    sp.add_argument("--lo", type=float, required=True, help="seconds after a page's dirtying")
    sp.add_argument("--hi", type=float, required=True, help="seconds after a page's dirtying")
    sp.add_argument("--tolerance", type=float, default=0.0, help="slack below lo, seconds")
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--base-sector", type=int, default=0)
    g.add_argument("--filefrag", help="saved filefrag -v output of the dirtied file")

    sp = sub.add_parser("analyze")
    sp.add_argument("--trace", required=True)
    sp.add_argument("--marker-sector", type=int, required=True)
    sp.add_argument("--log", required=True)
    sp.add_argument("--base-sector", type=int, default=0)
    sp.add_argument("--window-ms", type=float, default=100.0)
    sp.add_argument("--burst-gap-ms", type=float, default=300.0)
    sp.add_argument("--table", help="write the per-page times here")
    sp.add_argument(
        "--lead", type=int, default=0, help="leave the first N pages out of the gap metrics"
    )
    sp.add_argument("--late-ms", type=float, help="count pages queued later than this (late_q)")

    sp = sub.add_parser("fill")
    sp.add_argument("file")
    sp.add_argument("--first-page", type=int, default=0, help="page 0 is this page of FILE")
    sp.add_argument("--pages", type=int, required=True)

    sp = sub.add_parser("rewrite")
    sp.add_argument("file")
    sp.add_argument("--first-page", type=int, default=0, help="page 0 is this page of FILE")
    sp.add_argument("--pages", type=int, required=True)
    sp.add_argument("--seconds", type=float, required=True)
    sp.add_argument("--state", required=True)
    sp.add_argument("--hot", type=float, default=0.9)
    sp.add_argument("--sleep-ms", type=float, default=2.0)
    sp.add_argument("--seed", type=int, default=1)
    sp.add_argument(
        "--drain", action="store_true", help="munmap after each write (drains the LRU batch)"
    )

    sp = sub.add_parser("cached")
    sp.add_argument("file")
    sp.add_argument("--first-page", type=int, default=0)
    sp.add_argument("--count", type=int, help="pages (default: to the end of the file)")
    sp.add_argument("--list", action="store_true", help="print every cached index, one a line")

    sp = sub.add_parser("flags")
    sp.add_argument("paths", nargs="+", help="files or block devices (root)")

    sp = sub.add_parser("verify")
    sp.add_argument("file")
    sp.add_argument("--first-page", type=int, default=0, help="page 0 is this page of FILE")
    sp.add_argument("--state", required=True)

    args = p.parse_args(argv)
    if args.cmd == "dirty" and (args.count < 1 or args.stride < 1 or args.first_page < 0):
        p.error("--count and --stride must be positive, --first-page >= 0")
    try:
        return {
            "dirty": cmd_dirty,
            "analyze": cmd_analyze,
            "window": cmd_window,
            "fill": cmd_fill,
            "rewrite": cmd_rewrite,
            "verify": cmd_verify,
            "cached": cmd_cached,
            "flags": cmd_flags,
        }[args.cmd](args)
    except (OSError, ValueError) as exc:
        print(f"pagetrace: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
