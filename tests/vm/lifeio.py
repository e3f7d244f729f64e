#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Buffered writes to files or a block device, mirrored into shadow copies.

    lifeio.py apply REAL_DIR SHADOW_DIR [--seed N] OP...
    lifeio.py writer REAL_DIR SHADOW_DIR [--seed N] [--pause S] NAME...

Every change made to REAL_DIR/NAME (a file, or a block device such as
/dev + nullb0) is made the same way, right after, to SHADOW_DIR/NAME (a file
on tmpfs, which Linux's writeback and aipu never see). Whatever happens to
the page cache in between (writeback, unlink, truncate, umount, rmmod), the
real copy must end up byte for byte the shadow: compare their checksums
after a sync, a remount, or an O_DIRECT read. Writes are plain buffered
writes (no fsync, no O_SYNC); the data is random.

The shadow's size is the writable size: on a block device only the first
len(shadow) bytes are written, so a small shadow confines the writes to a
region of the device. A NAME of the form REAL@PAGE=SHADOW mirrors REAL from
page PAGE on into SHADOW (two writers can then share a device, each in its
own region, each with its own shadow).

apply runs the OPs in order, in one process (milliseconds apart, so the
pages they dirty are still young when the next OP runs):

    create:NAME:PAGES      new content, PAGES pages, written sequentially
    sparse:NAME:PAGES:N    a PAGES-page file with N random pages written
    rand:NAME:N            N writes of 1..8192 bytes at random offsets
    pages:NAME:N           N whole-page writes at random pages
    seq:NAME:START:PAGES   overwrite PAGES pages from page START
    append:NAME:PAGES      PAGES new pages at the end
    rewrite:NAME           new content over the whole file, same size
    trunc:NAME:BYTES       truncate (shrink or extend) to BYTES
    mmap:NAME:N            N random pages written through a shared mapping
    unlink:NAME            remove the file (and its shadow)
    sleep:SECONDS          wait
    stat:LABEL             print "LABEL key=value ..." from
                           /sys/kernel/aipu/stat (pages_tracked, ...)

writer prints "writer: ready" once SIGTERM stops it cleanly, then loops
over the NAMEs (each kept open) doing random writes, runs, appends and
truncates (the last two on files only, keeping each file under 1024 pages)
until SIGTERM or SIGINT, finishes the operation it is in, and prints
"writer: N operations". It exits 1 on any I/O error.
"""

import argparse
import mmap
import os
import random
import re
import signal
import stat
import sys
import time

PAGE = 4096
MAX_WRITER_PAGES = 1024
STAT = "/sys/kernel/aipu/stat"


class Pair:
    """A real file or device and its shadow, both open read-write."""

    def __init__(self, real_dir, shadow_dir, name, create=False):
        real, base, shadow = parse_name(name)
        self.base = base * PAGE
        self.real_path = os.path.join(real_dir, real)
        self.shadow_path = os.path.join(shadow_dir, shadow)
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0)
        self.real = os.open(self.real_path, flags, 0o644)
        self.shadow = os.open(self.shadow_path, flags, 0o644)
        # A device, or a region of a file: its size is fixed.
        self.fixed = self.base > 0 or stat.S_ISBLK(os.fstat(self.real).st_mode)

    def size(self):
        return os.fstat(self.shadow).st_size

    def write(self, data, off):
        for fd, base, what in (
            (self.real, self.base, self.real_path),
            (self.shadow, 0, self.shadow_path),
        ):
            done = 0
            while done < len(data):
                n = os.pwrite(fd, data[done:], base + off + done)
                if n <= 0:
                    raise OSError(f"short write to {what} at {off + done}")
                done += n

    def truncate(self, size):
        if self.fixed:
            raise ValueError(f"{self.real_path}: cannot truncate a device or region")
        os.ftruncate(self.real, size)
        os.ftruncate(self.shadow, size)

    def close(self):
        os.close(self.real)
        os.close(self.shadow)


def parse_name(name):
    """NAME, or REAL@PAGE=SHADOW: REAL from page PAGE on, mirrored in SHADOW."""
    m = re.fullmatch(r"([^@=]+)@(\d+)=([^@=]+)", name)
    if m:
        return m.group(1), int(m.group(2)), m.group(3)
    return name, 0, name


def pages_of(pair):
    return pair.size() // PAGE


def op_rand(pair, rng, n):
    size = pair.size()
    if size == 0:
        return
    for _ in range(n):
        length = min(rng.randint(1, 2 * PAGE), size)
        off = rng.randrange(0, size - length + 1)
        pair.write(rng.randbytes(length), off)


def op_pages(pair, rng, n):
    npages = pages_of(pair)
    for _ in range(n if npages else 0):
        pair.write(rng.randbytes(PAGE), rng.randrange(npages) * PAGE)


def op_seq(pair, rng, start, npages):
    if pair.fixed:
        npages = max(0, min(npages, pages_of(pair) - start))
    if npages:
        pair.write(rng.randbytes(npages * PAGE), start * PAGE)


def op_mmap(pair, rng, n):
    npages = pages_of(pair)
    if not npages:
        return
    if pair.base:
        raise ValueError(f"{pair.real_path}: mmap with a base offset")
    m = mmap.mmap(pair.real, npages * PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        for _ in range(n):
            p = rng.randrange(npages)
            data = rng.randbytes(PAGE)
            m[p * PAGE : (p + 1) * PAGE] = data
            os.pwrite(pair.shadow, data, p * PAGE)
    finally:
        m.close()


def read_stat():
    vals = {}
    try:
        with open(STAT) as f:
            for line in f:
                k, _, v = line.partition(" ")
                vals[k] = v.strip()
    except OSError as e:
        vals["error"] = e.strerror.replace(" ", "_")
    return vals


def apply_op(real_dir, shadow_dir, rng, spec):
    kind, *args = spec.split(":")
    if kind == "stat":
        v = read_stat()
        keys = ("pages_tracked", "mappings_tracked", "flusher_runs", "pages_written", "error")
        print(args[0] if args else "stat", " ".join(f"{k}={v[k]}" for k in keys if k in v))
        return
    if kind == "sleep":
        time.sleep(float(args[0]))
        return
    if kind == "unlink":
        real, _, shadow = parse_name(args[0])
        os.unlink(os.path.join(real_dir, real))
        os.unlink(os.path.join(shadow_dir, shadow))
        return
    name = args[0]
    nums = [int(a, 0) for a in args[1:]]
    pair = Pair(real_dir, shadow_dir, name, create=kind in ("create", "sparse"))
    try:
        if kind == "create":
            op_seq(pair, rng, 0, nums[0])
        elif kind == "sparse":
            pair.truncate(nums[0] * PAGE)
            op_pages(pair, rng, nums[1])
        elif kind == "rand":
            op_rand(pair, rng, nums[0])
        elif kind == "pages":
            op_pages(pair, rng, nums[0])
        elif kind == "seq":
            op_seq(pair, rng, nums[0], nums[1])
        elif kind == "append":
            op_seq(pair, rng, pages_of(pair) + (1 if pair.size() % PAGE else 0), nums[0])
        elif kind == "rewrite":
            size = pair.size()
            if size:
                pair.write(rng.randbytes(size), 0)
        elif kind == "trunc":
            pair.truncate(nums[0])
        elif kind == "mmap":
            op_mmap(pair, rng, nums[0])
        else:
            raise ValueError(f"unknown operation {spec!r}")
    finally:
        pair.close()


def cmd_apply(args, rng):
    for spec in args.ops:
        try:
            apply_op(args.real_dir, args.shadow_dir, rng, spec)
        except (OSError, ValueError, IndexError) as e:
            print(f"lifeio: {spec}: {e}", file=sys.stderr)
            return 1
    return 0


def writer_step(pair, rng):
    r = rng.random()
    npages = pages_of(pair)
    if pair.fixed or r < 0.7:
        if r < 0.85 or not npages:
            op_rand(pair, rng, rng.randint(1, 16))
        else:
            n = rng.randint(1, 32)
            op_seq(pair, rng, rng.randrange(max(1, npages - n)), n)
    elif r < 0.8:
        op_seq(pair, rng, rng.randrange(max(1, npages)), rng.randint(1, 32))
    elif r < 0.9 and npages < MAX_WRITER_PAGES:
        op_seq(pair, rng, npages, rng.randint(1, 16))
    else:
        # Shrink (to a size that is usually not page aligned) or extend.
        if npages > MAX_WRITER_PAGES // 2 or rng.random() < 0.5:
            pair.truncate(rng.randrange(0, max(1, pair.size())))
        else:
            pair.truncate(pair.size() + rng.randint(1, 64 * PAGE))


def cmd_writer(args, rng):
    stop = []

    def on_signal(signum, frame):
        stop.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # From here a SIGTERM stops it cleanly: the test waits for this line.
    print("writer: ready", flush=True)
    pairs = [Pair(args.real_dir, args.shadow_dir, n) for n in args.names]
    ops = 0
    try:
        while not stop:
            writer_step(rng.choice(pairs), rng)
            ops += 1
            if args.pause:
                time.sleep(args.pause)
    except (OSError, ValueError) as e:
        print(f"lifeio writer: after {ops} operations: {e}", file=sys.stderr)
        return 1
    finally:
        for p in pairs:
            p.close()
    print(f"writer: {ops} operations")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("apply", "writer"):
        s = sub.add_parser(name)
        s.add_argument("real_dir")
        s.add_argument("shadow_dir")
        s.add_argument("--seed", type=int)
        if name == "apply":
            s.add_argument("ops", nargs="+")
        else:
            s.add_argument("--pause", type=float, default=0.02)
            s.add_argument("names", nargs="+")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    if args.cmd == "writer":
        print(f"writer: seed {seed}", flush=True)
        return cmd_writer(args, rng)
    return cmd_apply(args, rng)


if __name__ == "__main__":
    sys.exit(main())
