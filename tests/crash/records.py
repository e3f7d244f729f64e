#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Records for the crash-bound test: write them in the guest, judge the disk
from the host.

    records.py prepare FILE SLOTS EXTENTS_OUT
    records.py write FILE LOG --rate R --run-min S --run-max S [--seed N]
    records.py check IMAGE EXTENTS LOG --bound-ms MS [--json OUT]

A record is one 4 KiB page of FILE: a header (magic, slot, sequence
number, the guest's CLOCK_MONOTONIC time of the write in ns), a payload made
from them, and a CRC32 of it all, so a torn or stale page is told apart from
the version that should be there.

prepare writes SLOTS records of sequence 0 (real blocks, not unwritten
extents, so later overwrites go straight to their blocks), fsyncs, and
stores FILE's physical extents (FIEMAP) in EXTENTS_OUT: the host then reads
the records straight from the disk image, as an O_DIRECT read would.

write overwrites random slots at RATE records/s with buffered writes (no
fsync), and after each write() returns appends "w SLOT SEQ T_NS" to LOG (a
file on the host, through 9p). After a random run time in [run-min,
run-max] s it appends "reset T_NS" and hard-resets the guest (sysrq b: no
sync, no unmount).

check finds, for every slot, the newest version written more than
BOUND_MS before the reset: the disk must hold that version or a newer one.
It prints one line: records checked, violations, and the age at the reset
of the oldest write that did not reach the disk (lost ones include
those inside the bound, which may be lost). Exit status 1 on a violation.
"""

import argparse
import fcntl
import json
import os
import random
import struct
import sys
import time
import zlib

PAGE = 4096
MAGIC = b"AIPUREC1"
HEAD = struct.Struct("<8sIQQ")  # magic, slot, seq, t_ns
FS_IOC_FIEMAP = 0xC020660B
FIEMAP_HEAD = struct.Struct("=QQLLLL")  # start, length, flags, mapped, count, reserved
FIEMAP_EXTENT = struct.Struct(
    "=QQQQQLLLL"
)  # logical, physical, length, 2 reserved, flags, 3 reserved


def record(slot, seq, t_ns):
    head = HEAD.pack(MAGIC, slot, seq, t_ns)
    unit = head + struct.pack("<Q", (seq * 2654435761 + slot) & (2**64 - 1))
    body = (unit * (PAGE // len(unit) + 1))[: PAGE - 4]
    return body + struct.pack("<I", zlib.crc32(body))


def parse(page):
    """(slot, seq, t_ns) of a valid record, or None."""
    if len(page) != PAGE or zlib.crc32(page[:-4]) != struct.unpack("<I", page[-4:])[0]:
        return None
    magic, slot, seq, t_ns = HEAD.unpack_from(page)
    return (slot, seq, t_ns) if magic == MAGIC else None


def fiemap(fd, size):
    """[(logical, physical, length)] in bytes."""
    out, start, count = [], 0, 64
    while start < size:
        buf = bytearray(FIEMAP_HEAD.size + count * FIEMAP_EXTENT.size)
        FIEMAP_HEAD.pack_into(buf, 0, start, size - start, 1, 0, count, 0)  # FIEMAP_FLAG_SYNC
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
        mapped = FIEMAP_HEAD.unpack_from(buf)[3]
        if not mapped:
            break
        for i in range(mapped):
            e = FIEMAP_EXTENT.unpack_from(buf, FIEMAP_HEAD.size + i * FIEMAP_EXTENT.size)
            logical, physical, length, flags = e[0], e[1], e[2], e[5]
            if flags & 0x800:  # FIEMAP_EXTENT_UNWRITTEN
                sys.exit("records: FILE has unwritten extents: prepare must write it.")
            out.append((logical, physical, length))
            start = logical + length
            if flags & 1:  # FIEMAP_EXTENT_LAST
                return out
    return out


def cmd_prepare(args):
    fd = os.open(args.file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for slot in range(args.slots):
        os.write(fd, record(slot, 0, 0))
    os.fsync(fd)
    os.close(fd)
    os.sync()
    fd = os.open(args.file, os.O_RDONLY)
    ext = fiemap(fd, args.slots * PAGE)
    os.close(fd)
    if sum(e[2] for e in ext) < args.slots * PAGE:
        sys.exit("records: the extents do not cover the file.")
    with open(args.extents, "w") as f:
        json.dump({"slots": args.slots, "extents": ext}, f)
    return 0


def cmd_write(args):
    rng = random.Random(args.seed)
    size = os.path.getsize(args.file)
    slots = size // PAGE
    run = rng.uniform(args.run_min, args.run_max)
    fd = os.open(args.file, os.O_WRONLY)
    log = open(args.log, "w", buffering=1)
    seq, start = 0, time.monotonic()
    step = 1.0 / args.rate
    nxt = start
    while time.monotonic() - start < run:
        seq += 1
        slot = rng.randrange(slots)
        t_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        os.pwrite(fd, record(slot, seq, t_ns), slot * PAGE)
        log.write(f"w {slot} {seq} {t_ns}\n")
        nxt += step
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    log.write(f"reset {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}\n")
    log.flush()
    os.fsync(log.fileno())
    with open("/proc/sysrq-trigger", "w") as f:
        f.write("b")
    time.sleep(30)
    sys.exit("records: the guest did not reset.")


def read_disk(image, ext):
    """{slot: (seq, t_ns) or None} as the disk holds them."""
    out = {}
    with open(image, "rb") as f:
        for logical, physical, length in ext["extents"]:
            f.seek(physical)
            data = f.read(length)
            for off in range(0, length, PAGE):
                slot = (logical + off) // PAGE
                if slot >= ext["slots"]:
                    continue
                r = parse(data[off : off + PAGE])
                out[slot] = (r[1], r[2]) if r and r[0] == slot else None
    return out


def judge(writes, reset_ns, disk, bound_ns):
    """Violations and lost writes: see the module's docstring."""
    due, newest = {}, {}
    for slot, seq, t_ns in writes:
        newest[slot] = (seq, t_ns)
        if reset_ns - t_ns > bound_ns:
            due[slot] = (seq, t_ns)
    viol, oldest_lost = [], 0
    for slot, (seq, t_ns) in newest.items():
        held = disk.get(slot)
        if held is None or held[0] < seq:
            # The newest write did not make it: how old was the oldest
            # version newer than what the disk holds?
            have = held[0] if held else -1
            ages = [reset_ns - t for s, q, t in writes if s == slot and q > have]
            oldest_lost = max(oldest_lost, max(ages))
    for slot, (seq, t_ns) in due.items():
        held = disk.get(slot)
        if held is None or held[0] < seq:
            viol.append((slot, seq, (reset_ns - t_ns) // 1000000))
    return viol, oldest_lost


def cmd_check(args):
    with open(args.extents) as f:
        ext = json.load(f)
    writes, reset_ns = [], None
    with open(args.log) as f:
        for line in f:
            w = line.split()
            if len(w) == 4 and w[0] == "w":
                writes.append((int(w[1]), int(w[2]), int(w[3])))
            elif len(w) == 2 and w[0] == "reset":
                reset_ns = int(w[1])
    if reset_ns is None or not writes:
        print("check: the log has no reset line or no writes: the trial did not run.")
        return 2
    disk = read_disk(args.image, ext)
    viol, oldest = judge(writes, reset_ns, disk, args.bound_ms * 1000000)
    checked = sum(1 for s, q, t in writes if reset_ns - t > args.bound_ms * 1000000)
    # The youngest version found on the disk as written: when the last
    # write that made it was made.
    held = [reset_ns - t for s, q, t in writes if disk.get(s) and disk[s][0] == q]
    res = {
        "writes": len(writes),
        "due": checked,
        "violations": len(viol),
        "oldest_lost_ms": oldest // 1000000,
        "run_ms": (reset_ns - writes[0][2]) // 1000000,
        "youngest_on_disk_ms": min(held) // 1000000 if held else None,
        "examples": viol[:5],
    }
    print(
        f"writes {res['writes']} due {res['due']} violations {res['violations']} "
        f"oldest_lost_ms {res['oldest_lost_ms']} youngest_on_disk_ms "
        f"{res['youngest_on_disk_ms']} run_ms {res['run_ms']}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f)
    return 1 if viol else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("file")
    p.add_argument("slots", type=int)
    p.add_argument("extents")
    p = sub.add_parser("write")
    p.add_argument("file")
    p.add_argument("log")
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--run-min", type=float, default=6)
    p.add_argument("--run-max", type=float, default=14)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("check")
    p.add_argument("image")
    p.add_argument("extents")
    p.add_argument("log")
    p.add_argument("--bound-ms", type=int, required=True)
    p.add_argument("--json")
    args = ap.parse_args(argv)
    return {"prepare": cmd_prepare, "write": cmd_write, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
