#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Dirty pages fast, between two O_DIRECT marker writes.

    dirty.py TARGET --first-page F --count N [--stride S]
             [--marker PATH:OFFSET] [--end-marker PATH:OFFSET] [--max-ms MS]

Writes one 4 KiB O_DIRECT block at each marker (the start marker before,
the end marker after), and in between N buffered 4 KiB writes (no fsync) to
TARGET at pages F, F+S, F+2S, ... (page = 4096 bytes; S defaults to 2, so
the pages are not adjacent and cannot be merged into one request).

One process does all of it, so the pages are dirtied within milliseconds of
the marker; a loop of dd commands would take seconds under QEMU/TCG.  Exits
1 if dirtying took longer than --max-ms (default 200), since a timing test
that relies on it would be meaningless.
"""

import argparse
import mmap
import os
import sys
import time

PAGE = 4096


def direct_write(spec, fill):
    path, _, off = spec.rpartition(":")
    if not path:
        raise ValueError(f"marker {spec!r}: use PATH:BYTE_OFFSET")
    off = int(off, 0)
    if off % PAGE:
        raise ValueError(f"marker offset {off} is not a multiple of {PAGE}")
    buf = mmap.mmap(-1, PAGE)  # page aligned, as O_DIRECT needs
    buf.write(bytes([fill]) * PAGE)
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    try:
        if os.pwrite(fd, buf, off) != PAGE:
            raise OSError(f"short O_DIRECT write to {path}")
    finally:
        os.close(fd)
        buf.close()


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("target", help="file or block device to dirty")
    p.add_argument("--first-page", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--stride", type=int, default=2, help="in pages (default 2)")
    p.add_argument("--marker", help="PATH:BYTE_OFFSET, written before")
    p.add_argument("--end-marker", help="PATH:BYTE_OFFSET, written after")
    p.add_argument("--max-ms", type=float, default=200.0)
    p.add_argument("--fill", type=lambda s: int(s, 0), default=0xA5)
    args = p.parse_args(argv)
    if args.count < 1 or args.stride < 1 or args.first_page < 0:
        p.error("--count and --stride must be positive, --first-page >= 0")

    data = bytes([args.fill]) * PAGE
    if args.marker:
        direct_write(args.marker, 0x4D)
    start = time.monotonic()
    fd = os.open(args.target, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for i in range(args.count):
            off = (args.first_page + i * args.stride) * PAGE
            if os.pwrite(fd, data, off) != PAGE:
                raise OSError(f"short write at {off}")
    finally:
        os.close(fd)
    took_ms = (time.monotonic() - start) * 1000
    if args.end_marker:
        direct_write(args.end_marker, 0x45)
    print(
        f"dirtied {args.count} pages of {args.target} "
        f"(pages {args.first_page}..{args.first_page + (args.count - 1) * args.stride}"
        f" step {args.stride}) in {took_ms:.1f} ms"
    )
    if took_ms > args.max_ms:
        print(
            f"dirty.py: dirtying took {took_ms:.0f} ms > {args.max_ms:g} ms",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
