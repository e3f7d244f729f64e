#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Records for the crash-bound test: write them in the guest, judge the disk
from the host.

    records.py prepare FILE SLOTS EXTENTS_OUT
    records.py write FILE LOG --rate R --run-min S --run-max S [--seed N] [--append]
    records.py check IMAGE EXTENTS LOG --bound-ms MS [--also-bound-ms MS] [--json OUT]
    records.py recover IMAGE OUT [--path /rec.dat] [--fsck-log FILE]
    records.py check-file FILE LOG --bound-ms MS [--also-bound-ms MS] [--json OUT]

A record is one 4 KiB page of FILE: a header (magic, slot, sequence
number, the guest's CLOCK_MONOTONIC time of the write in ns), a payload made
from them, and a CRC32 of it all, so a torn or stale page is told apart from
the version that should be there. Slot N is always at byte N * 4096.

prepare writes SLOTS records of sequence 0 (real blocks, not unwritten
extents, so later overwrites go straight to their blocks), fsyncs, and
stores FILE's physical extents (FIEMAP) in EXTENTS_OUT: the host then reads
the records straight from the disk image, as an O_DIRECT read would.

write overwrites random slots at RATE records/s with buffered writes (no
fsync), and after each write() returns appends "w SLOT SEQ T_NS" to LOG (a
file on the host, through 9p). With --append it writes record N (slot N,
sequence N + 1) at the end of FILE instead, which starts empty. After a
random run time in [run-min, run-max] s it appends "reset T_NS" and
hard-resets the guest (sysrq b: no sync, no unmount).

check finds, for every slot, the newest version written more than
BOUND_MS before the reset: the disk must hold that version or a newer one.
It prints one line: records checked, violations, and the age at the reset
of the oldest write that did not reach the disk (lost ones include
those inside the bound, which may be lost); every write older than that
was safe. --also-bound-ms counts, without judging, the violations of a
second bound (a measurement). Exit status 1 on a violation.

recover, on the host, for a file whose extents are not known before the
writes (appends: ext4 allocates at writeback): runs `e2fsck -fy IMAGE`
(which replays an ext4 journal in user space, or repairs ext2), then
`debugfs -R "dump -p PATH OUT" IMAGE`, without mounting anything. IMAGE is
changed: use a throw-away copy. A file the recovered file system does not
have is written as an empty OUT (everything lost). Exit status 2 if e2fsck
could not repair the file system or debugfs failed.

check-file judges such a recovered FILE as check judges the image: the
record of slot N must be at byte N * 4096; a page past the end of FILE, a
hole, zeros or a torn page hold nothing.
"""

import argparse
import fcntl
import json
import os
import random
import struct
import subprocess
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
    slots = os.path.getsize(args.file) // PAGE
    if not args.append and not slots:
        sys.exit("records: FILE is empty: run prepare first, or write with --append.")
    run = rng.uniform(args.run_min, args.run_max)
    fd = os.open(args.file, os.O_WRONLY)
    log = open(args.log, "w", buffering=1)
    seq, start = 0, time.monotonic()
    step = 1.0 / args.rate
    nxt = start
    while time.monotonic() - start < run:
        seq += 1
        # Appending: record N at the end of the file, slot N, sequence N + 1.
        slot = seq - 1 if args.append else rng.randrange(slots)
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


def read_file(path):
    """{slot: (seq, t_ns) or None} of a recovered file: slot N at byte N * PAGE."""
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    for off in range(0, len(data), PAGE):
        slot = off // PAGE
        r = parse(data[off : off + PAGE])
        out[slot] = (r[1], r[2]) if r and r[0] == slot else None
    return out


def read_log(path):
    """([(slot, seq, t_ns)], reset_ns or None) from a writer's log."""
    writes, reset_ns = [], None
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 4 and w[0] == "w":
                writes.append((int(w[1]), int(w[2]), int(w[3])))
            elif len(w) == 2 and w[0] == "reset":
                reset_ns = int(w[1])
    return writes, reset_ns


def verdict(writes, reset_ns, disk, bound_ms, also_bound_ms=None):
    """The result of a trial (a dict, see report()) from the disk's records."""
    viol, oldest = judge(writes, reset_ns, disk, bound_ms * 1000000)
    checked = sum(1 for s, q, t in writes if reset_ns - t > bound_ms * 1000000)
    # The youngest version found on the disk as written: when the last
    # write that made it was made.
    held = [reset_ns - t for s, q, t in writes if disk.get(s) and disk[s][0] == q]
    # A write is lost when neither it nor a newer version of its slot is
    # on the disk.
    lost = sum(1 for s, q, t in writes if not disk.get(s) or disk[s][0] < q)
    res = {
        "writes": len(writes),
        "due": checked,
        "violations": len(viol),
        "oldest_lost_ms": oldest // 1000000,
        "lost": lost,
        "run_ms": (reset_ns - writes[0][2]) // 1000000,
        "youngest_on_disk_ms": min(held) // 1000000 if held else None,
        "bound_ms": bound_ms,
        "examples": viol[:5],
    }
    if also_bound_ms is not None:
        also, _ = judge(writes, reset_ns, disk, also_bound_ms * 1000000)
        res["also_bound_ms"] = also_bound_ms
        res["also_due"] = sum(1 for s, q, t in writes if reset_ns - t > also_bound_ms * 1000000)
        res["also_violations"] = len(also)
    return res


def report(res, json_out):
    """Print the result's line, write its JSON; exit status 1 on a violation."""
    line = (
        f"writes {res['writes']} due {res['due']} violations {res['violations']} "
        f"oldest_lost_ms {res['oldest_lost_ms']} youngest_on_disk_ms "
        f"{res['youngest_on_disk_ms']} run_ms {res['run_ms']}"
    )
    if "also_bound_ms" in res:
        line += (
            f" (measured against {res['also_bound_ms']} ms: due {res['also_due']}"
            f" violations {res['also_violations']})"
        )
    print(line)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(res, f)
    return 1 if res["violations"] else 0


def load_log(path):
    try:
        writes, reset_ns = read_log(path)
    except FileNotFoundError:
        writes, reset_ns = [], None
    if reset_ns is None or not writes:
        print("check: the log has no reset line or no writes: the trial did not run.")
        return None, None
    return writes, reset_ns


def cmd_check(args):
    with open(args.extents) as f:
        ext = json.load(f)
    writes, reset_ns = load_log(args.log)
    if writes is None:
        return 2
    disk = read_disk(args.image, ext)
    return report(verdict(writes, reset_ns, disk, args.bound_ms, args.also_bound_ms), args.json)


def cmd_check_file(args):
    writes, reset_ns = load_log(args.log)
    if writes is None:
        return 2
    disk = read_file(args.file)
    return report(verdict(writes, reset_ns, disk, args.bound_ms, args.also_bound_ms), args.json)


def cmd_recover(args):
    # e2fsck: 0 clean, 1 errors corrected, 2 corrected (reboot), 4 and more:
    # left uncorrected, or e2fsck itself failed.
    fsck = subprocess.run(
        ["e2fsck", "-fy", args.image], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if args.fsck_log:
        with open(args.fsck_log, "w") as f:
            f.write(fsck.stdout)
    if fsck.returncode & ~3:
        print(f"recover: e2fsck -fy exited {fsck.returncode}: the file system was not repaired")
        return 2
    if os.path.exists(args.out):
        os.unlink(args.out)
    if any(c.isspace() or c == '"' for c in args.path + args.out):
        sys.exit("records: recover: no blanks or quotes in PATH or OUT (debugfs splits on them).")
    dump = subprocess.run(
        ["debugfs", "-R", f"dump -p {args.path} {args.out}", args.image],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    note = ""
    if not os.path.exists(args.out):
        if dump.returncode != 0 or "not found" not in dump.stdout:
            print(f"recover: debugfs could not dump {args.path}: {dump.stdout.strip()}")
            return 2
        open(args.out, "wb").close()
        note = f", {args.path} is not in the recovered file system"
    replayed = " (journal replayed)" if "recovering journal" in fsck.stdout else ""
    print(
        f"recover: e2fsck exit {fsck.returncode}{replayed}, {args.path} "
        f"{os.path.getsize(args.out)} bytes{note}"
    )
    return 0


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
    p.add_argument("--append", action="store_true")
    p = sub.add_parser("check")
    p.add_argument("image")
    p.add_argument("extents")
    p.add_argument("log")
    p.add_argument("--bound-ms", type=int, required=True)
    p.add_argument("--also-bound-ms", type=int)
    p.add_argument("--json")
    p = sub.add_parser("recover")
    p.add_argument("image")
    p.add_argument("out")
    p.add_argument("--path", default="/rec.dat")
    p.add_argument("--fsck-log")
    p = sub.add_parser("check-file")
    p.add_argument("file")
    p.add_argument("log")
    p.add_argument("--bound-ms", type=int, required=True)
    p.add_argument("--also-bound-ms", type=int)
    p.add_argument("--json")
    args = ap.parse_args(argv)
    return {
        "prepare": cmd_prepare,
        "write": cmd_write,
        "check": cmd_check,
        "recover": cmd_recover,
        "check-file": cmd_check_file,
    }[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
