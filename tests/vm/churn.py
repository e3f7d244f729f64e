#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A churn worker for the stress test: every kind of change a page can see.

    churn.py files REAL_DIR SHADOW_DIR [--seed N] [--files K] [--pause S]
    churn.py device DEV SHADOW_DIR --first-page P --pages N [--seed N] [--pause S]

Like lifeio.py (whose Pair it uses), every change made to a real file is
made right after to a shadow copy on tmpfs, so that after a sync and a
remount (or an O_DIRECT read of a device) the real copy must be byte for
byte the shadow. One worker owns its files: run one worker per directory,
or per region of a device.

files keeps K files (f0, f1, ...) in REAL_DIR, starting from what the
shadow directory holds (so a worker stopped for an umount can be started
again on the same files), and loops over random operations on them:
buffered writes (random, whole pages, runs, appends), truncates, writes
through a shared mapping, O_DIRECT writes of whole pages (the kernel
writes back and drops the cached pages first), fsync and fdatasync, rename,
and unlink followed by a new file of the same name.

device writes to pages [P, P + N) of a block device: buffered writes,
O_DIRECT writes of whole pages, fsync. Its shadow is SHADOW_DIR/DEVNAME.

Both print "churn: seed N, ready" once a signal would be handled, then run
until SIGTERM or SIGINT, finish the operation they are in, print
"churn: N operations" and the count of each kind, and exit 0; 1 on any I/O
error (the shadow could then differ from the real copy: the test fails).
"""

import argparse
import collections
import mmap
import os
import random
import signal
import sys
import time

import lifeio

PAGE = lifeio.PAGE
MAX_PAGES = 512


def direct_write(pair, rng, npages_max=8):
    """Whole pages, page aligned, through O_DIRECT (an aligned buffer)."""
    size = pair.size()
    npages = (size + PAGE - 1) // PAGE
    if not npages:
        return
    n = rng.randint(1, min(npages_max, npages))
    first = rng.randrange(0, npages - n + 1)
    data = rng.randbytes(n * PAGE)
    buf = mmap.mmap(-1, n * PAGE)
    try:
        buf.write(data)
        fd = os.open(pair.real_path, os.O_WRONLY | os.O_DIRECT)
        try:
            done = os.pwritev(fd, [buf], pair.base + first * PAGE)
        finally:
            os.close(fd)
    finally:
        buf.close()
    if done != n * PAGE:
        raise OSError(f"short O_DIRECT write to {pair.real_path}: {done} of {n * PAGE}")
    os.pwrite(pair.shadow, data, first * PAGE)


class Files:
    """K files in a directory, with their shadows."""

    def __init__(self, real_dir, shadow_dir, nfiles, rng):
        self.real_dir, self.shadow_dir, self.rng = real_dir, shadow_dir, rng
        self.names = [f"f{i}" for i in range(nfiles)]
        self.pairs = {}
        for name in self.names:
            fresh = not os.path.exists(os.path.join(shadow_dir, name))
            self.pairs[name] = lifeio.Pair(real_dir, shadow_dir, name, create=fresh)
            if fresh:
                lifeio.op_seq(self.pairs[name], rng, 0, rng.randint(1, 64))

    def close(self):
        for p in self.pairs.values():
            p.close()

    def rename(self, name):
        """Move the file away and back: two renames, the inode kept."""
        pair = self.pairs[name]
        for d in (self.real_dir, self.shadow_dir):
            os.rename(os.path.join(d, name), os.path.join(d, name + ".r"))
        for d in (self.real_dir, self.shadow_dir):
            os.rename(os.path.join(d, name + ".r"), os.path.join(d, name))
        return pair

    def recreate(self, name):
        """Unlink with dirty pages, then a new file of the same name."""
        self.pairs.pop(name).close()
        os.unlink(os.path.join(self.real_dir, name))
        os.unlink(os.path.join(self.shadow_dir, name))
        self.pairs[name] = lifeio.Pair(self.real_dir, self.shadow_dir, name, create=True)
        lifeio.op_seq(self.pairs[name], self.rng, 0, self.rng.randint(1, 64))

    def step(self, counts):
        rng = self.rng
        name = rng.choice(self.names)
        pair = self.pairs[name]
        r = rng.random()
        if r < 0.45:
            kind = "buffered"
            if pair.size() // PAGE > MAX_PAGES:
                pair.truncate(rng.randrange(0, MAX_PAGES * PAGE))
            else:
                lifeio.writer_step(pair, rng)
        elif r < 0.60:
            kind = "mmap"
            lifeio.op_mmap(pair, rng, rng.randint(1, 16))
        elif r < 0.72:
            kind = "direct"
            direct_write(pair, rng)
        elif r < 0.80:
            kind = "fsync"
            (os.fsync if rng.random() < 0.5 else os.fdatasync)(pair.real)
        elif r < 0.90:
            kind = "rename"
            self.rename(name)
        else:
            kind = "recreate"
            self.recreate(name)
        counts[kind] += 1


class Device:
    """A region of a block device, with its shadow."""

    def __init__(self, dev, shadow_dir, first, npages, rng):
        self.rng = rng
        shadow = os.path.basename(dev) + f".{first}"
        path = os.path.join(shadow_dir, shadow)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.truncate(npages * PAGE)
        self.pair = lifeio.Pair(
            os.path.dirname(dev), shadow_dir, f"{os.path.basename(dev)}@{first}={shadow}"
        )

    def close(self):
        self.pair.close()

    def step(self, counts):
        r = self.rng.random()
        if r < 0.7:
            kind = "buffered"
            lifeio.op_rand(self.pair, self.rng, self.rng.randint(1, 16))
        elif r < 0.9:
            kind = "direct"
            direct_write(self.pair, self.rng)
        else:
            kind = "fsync"
            os.fsync(self.pair.real)
        counts[kind] += 1


def run(target, pause, label, stop):
    counts = collections.Counter()
    ops = 0
    try:
        while not stop:
            target.step(counts)
            ops += 1
            if pause:
                time.sleep(pause)
    except (OSError, ValueError) as e:
        print(f"churn {label}: after {ops} operations: {e}", file=sys.stderr)
        return 1
    finally:
        target.close()
    print(f"churn: {ops} operations ({' '.join(f'{k}={v}' for k, v in sorted(counts.items()))})")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("files")
    f.add_argument("real_dir")
    f.add_argument("shadow_dir")
    f.add_argument("--files", type=int, default=4)
    d = sub.add_parser("device")
    d.add_argument("dev")
    d.add_argument("shadow_dir")
    d.add_argument("--first-page", type=int, required=True)
    d.add_argument("--pages", type=int, required=True)
    for s in (f, d):
        s.add_argument("--seed", type=int)
        s.add_argument("--pause", type=float, default=0.01)
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    # Before saying "ready": a SIGTERM from then on ends the loop cleanly.
    stop = []
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
    signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
    print(f"churn: seed {seed}, ready", flush=True)
    try:
        if args.cmd == "files":
            target = Files(args.real_dir, args.shadow_dir, args.files, rng)
            label = args.real_dir
        else:
            target = Device(args.dev, args.shadow_dir, args.first_page, args.pages, rng)
            label = args.dev
    except OSError as e:
        print(f"churn: cannot start: {e}", file=sys.stderr)
        return 1
    return run(target, args.pause, label, stop)


if __name__ == "__main__":
    sys.exit(main())
