#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write load plus read-response probe, after Mogul's "A Better Update Policy" §4.

Two threads share one disk:

* a writer that dirties N pages a second, evenly spaced in time, by 4 KiB
  buffered pwrite()s into a preallocated file; every page it touches is a
  different one, and no two of them are neighbours, so Linux can neither
  merge two dirty pages into one request nor re-dirty a page that is still
  dirty: each page it dirties costs the disk exactly one write;
* a closed-loop reader that reads random 4 KiB pages of another preallocated
  file with O_DIRECT (no page cache) and records how long every read took.

When an update policy puts many dirty pages on the disk queue at once, the
reads queue behind them: the demo measures that.

Why a Python generator and not fio: fio could issue both streams, but not
with the guarantees above in one job file (its random map avoids repeats but
not neighbours, and rate_iops paces in bursts per rate window), and its
per-I/O logs would have to be parsed and aligned with the disk counters.
Here the writer's schedule is exact (write k at t0 + k/N), the reader's
latencies, the disk's counters and the dirty-page counts are sampled against
one clock, and the result is one JSON file. Its own overhead (tens of
microseconds a read, more under QEMU/TCG) is far below the 16 ms a
request takes on the 60-IOPS disk.

Usage:
  workload.py prepare --dir DIR [--write-mib 32] [--read-mib 64]
  workload.py run --write-file F --read-file F --out JSON [--rate 20]
                  [--duration 75] [--pattern steady|burst|rewrite]
                  [--burst-every 30] [--hot-pages 200] [--hot-share 0.5]
                  [--disk vda] [--attach NAME=PATH ...] [--kthread NAME]
                  [--marker /dev/vda] [--snapshot-at S] [--start-cmd SHELL_CMD]
                  [--sync-after]
                  [--label TEXT]
  workload.py probe --write-file F --read-file F --out JSON [--seconds 5]

Python 3 standard library only.
"""

import argparse
import json
import math
import mmap
import os
import random
import statistics
import subprocess
import sys
import threading
import time

PAGE = 4096
CHUNK = 1 << 20


def die(msg):
    print(f"workload: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- prepare


def fill_file(path, mib, seed):
    """Write MIB MiB of non-zero data and fsync, so that later writes only
    overwrite allocated blocks (no block allocation or extent conversion at
    writeback time)."""
    rnd = random.Random(seed)
    block = bytes(rnd.getrandbits(8) for _ in range(PAGE)) * (CHUNK // PAGE)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(mib):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)


def cmd_prepare(args):
    if args.write_mib < 1 or args.read_mib < 1:
        die("--write-mib and --read-mib must be at least 1.")
    os.makedirs(args.dir, exist_ok=True)
    wpath = os.path.join(args.dir, "write.dat")
    rpath = os.path.join(args.dir, "read.dat")
    t0 = time.monotonic()
    fill_file(wpath, args.write_mib, 1)
    fill_file(rpath, args.read_mib, 2)
    dfd = os.open(args.dir, os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    print(
        f"workload: prepared {wpath} ({args.write_mib} MiB) and {rpath} "
        f"({args.read_mib} MiB) in {time.monotonic() - t0:.1f} s"
    )


# ---------------------------------------------------------------- run


def disk_stat(dev):
    """(read I/Os, write I/Os) completed, from /sys/block/DEV/stat."""
    with open(f"/sys/block/{dev}/stat") as f:
        fields = f.read().split()
    return int(fields[0]), int(fields[4])


def disk_inflight(dev):
    with open(f"/sys/block/{dev}/inflight") as f:
        r, w = f.read().split()
    return int(r), int(w)


def meminfo_kb(keys):
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in keys:
                out[name] = int(rest.split()[0])
    return out


def hctx_busy(paths):
    """Tags in use per hardware queue, from blk-mq's debugfs."""
    out = []
    for path in paths:
        busy = -1
        with open(path) as f:
            for line in f:
                if line.startswith("busy="):
                    busy = int(line[5:])
                    break
        out.append(busy)
    return out


def thread_cpu(tid):
    """CPU a thread last ran on (field 39 of /proc/self/task/TID/stat), or
    -1 once it has ended (the reader stops before the sampler does)."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except OSError:
        return -1


def marker_read(dev):
    """An O_DIRECT read of DEV's last page, for blktrace: the benchmark
    issues one when a run starts and one when it ends, so that the
    disk's trace can be cut to the run (bench/report.py). Returns its
    sector, or None without DEV."""
    if not dev:
        return None
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, PAGE)
    try:
        off = (os.lseek(fd, 0, os.SEEK_END) // PAGE - 1) * PAGE
        os.preadv(fd, [buf], off)
    finally:
        buf.close()
        os.close(fd)
    return off // 512


def kthread_cpu_ms(comm):
    """CPU time (user + system, ms) of the kernel thread named COMM, or
    None if there is none (or no COMM was given)."""
    if not comm:
        return None
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        # ppid 2: a child of kthreadd, not a process that happens to share the name
        if name == comm and fields[1] == "2":
            return round((int(fields[11]) + int(fields[12])) * tick_ms, 1)
    return None


def percentile(sorted_vals, p):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_vals:
        return 0.0
    k = max(1, math.ceil(p / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def summarize(lat_ms, times_s):
    if not lat_ms:
        return {"count": 0}
    s = sorted(lat_ms)
    imax = max(range(len(lat_ms)), key=lat_ms.__getitem__)
    return {
        "count": len(lat_ms),
        "mean_ms": round(statistics.fmean(lat_ms), 3),
        "p50_ms": round(percentile(s, 50), 3),
        "p99_ms": round(percentile(s, 99), 3),
        "max_ms": round(s[-1], 3),
        "stddev_ms": round(statistics.pstdev(lat_ms), 3),
        "max_at_s": round(times_s[imax], 3),
        "over_100ms": sum(1 for v in lat_ms if v > 100.0),
        "over_1s": sum(1 for v in lat_ms if v > 1000.0),
    }


class Run:
    def __init__(self, args):
        self.args = args
        self.stop = threading.Event()
        self.errors = []
        self.t0 = 0.0
        self.read_t = []
        self.read_ms = []
        self.write_lag_ms = []
        self.write_call_ms = []
        self.slow_writes = []
        self.samples = []
        self.reader_tid = 0
        self.snapshot = None

    def fail(self, what, exc):
        self.errors.append(f"{what}: {exc}")
        self.stop.set()

    def writer(self, fd, plan):
        buf = bytearray(os.urandom(PAGE))
        try:
            for k, (due_s, page) in enumerate(plan):
                due = self.t0 + due_s
                now = time.monotonic()
                if due > now and self.stop.wait(due - now):
                    return
                if self.stop.is_set():
                    return
                buf[0:8] = k.to_bytes(8, "little")
                start = time.monotonic()
                n = os.pwrite(fd, buf, page * PAGE)
                end = time.monotonic()
                if n != PAGE:
                    raise OSError(f"short write ({n} bytes)")
                self.write_lag_ms.append((start - due) * 1e3)
                self.write_call_ms.append((end - start) * 1e3)
                if end - start > 0.1:
                    self.slow_writes.append(
                        [round(start - self.t0, 3), round((end - start) * 1e3, 1)]
                    )
        except Exception as exc:  # noqa: BLE001 - reported in the JSON
            self.fail("writer", exc)

    def reader(self, fd, npages):
        rnd = random.Random(self.args.seed + 1)
        buf = mmap.mmap(-1, PAGE)  # page-aligned, as O_DIRECT needs
        self.reader_tid = threading.get_native_id()
        try:
            while not self.stop.is_set():
                off = rnd.randrange(npages) * PAGE
                start = time.monotonic()
                n = os.preadv(fd, [buf], off)
                end = time.monotonic()
                if n != PAGE:
                    raise OSError(f"short read ({n} bytes) at {off}")
                self.read_t.append(start - self.t0)
                self.read_ms.append((end - start) * 1e3)
        except Exception as exc:  # noqa: BLE001 - reported in the JSON
            self.fail("reader", exc)
        finally:
            buf.close()

    def snapshotter(self):
        """The --attach files as they are --snapshot-at seconds in: with
        the end's, the counters of the run's steady part (aipu writes
        nothing before its pages are max_age old)."""
        due = self.t0 + self.args.snapshot_at - time.monotonic()
        if due > 0 and self.stop.wait(due):
            return
        self.snapshot = {
            "t_s": round(time.monotonic() - self.t0, 3),
            "files": read_attach(self.args.attach),
        }

    def sampler(self):
        dev = self.args.disk
        keys = ("Dirty", "Writeback")
        dbg = f"/sys/kernel/debug/block/{dev}"
        tags = []
        if os.path.isdir(dbg):
            tags = sorted(
                os.path.join(dbg, d, "tags") for d in os.listdir(dbg) if d.startswith("hctx")
            )
        try:
            while True:
                t = time.monotonic() - self.t0
                rd, wr = disk_stat(dev)
                _, wq = disk_inflight(dev)
                mi = meminfo_kb(keys)
                cpu = thread_cpu(self.reader_tid) if self.reader_tid else -1
                self.samples.append(
                    [
                        round(t, 3),
                        rd,
                        wr,
                        wq,
                        mi.get("Dirty", 0),
                        mi.get("Writeback", 0),
                        cpu,
                        hctx_busy(tags),
                    ]
                )
                if self.stop.wait(self.args.sample_s):
                    return
        except Exception as exc:  # noqa: BLE001 - reported in the JSON
            self.fail("sampler", exc)


def pick_pages(npages, count, seed):
    """COUNT distinct, pairwise non-adjacent pages of a NPAGES-page file."""
    slots = npages // 2
    if count > slots:
        return None
    return [2 * s for s in random.Random(seed).sample(range(slots), count)]


def write_plan(args, npages):
    """The writer's schedule: a list of (seconds after the start, page).

    steady   RATE distinct, non-adjacent pages a second, evenly spaced
             (§4.1: each page dirtied costs the disk exactly one write);
    burst    the same pages, but each BURST_EVERY seconds' worth of them
             written within one second, the first burst at 1 s (§5);
    rewrite  RATE pages a second, evenly spaced, a HOT_SHARE of them drawn
             from HOT_PAGES pages that are written again and again, the
             rest distinct (§2.3, §4.3: a page written while still dirty
             costs no disk write, so longer dirty lifetimes save writes).

    None if the file is too small for the pages the plan needs."""
    n = int(round(args.rate * args.duration))
    if args.pattern == "rewrite":
        rnd = random.Random(args.seed + 2)
        pick = [rnd.random() < args.hot_share for _ in range(n)]
        pages = pick_pages(npages, n - sum(pick) + args.hot_pages, args.seed)
        if pages is None:
            return None
        hot, cold = pages[: args.hot_pages], iter(pages[args.hot_pages :])
        return [(k / args.rate, rnd.choice(hot) if h else next(cold)) for k, h in enumerate(pick)]
    pages = pick_pages(npages, n, args.seed)
    if pages is None:
        return None
    if args.pattern == "burst":
        per = max(1, int(round(args.rate * args.burst_every)))
        return [
            (1.0 + (k // per) * args.burst_every + (k % per) / per, p) for k, p in enumerate(pages)
        ]
    return [(k / args.rate, p) for k, p in enumerate(pages)]


def read_attach(spec):
    out = {}
    for item in spec:
        name, _, path = item.partition("=")
        try:
            with open(path) as f:
                out[name] = f.read()
        except OSError as exc:
            out[name] = f"unreadable: {exc}"
    return out


def cmd_run(args):
    if args.rate <= 0 or args.duration <= 0:
        die("--rate and --duration must be positive.")
    for item in args.attach:
        if "=" not in item:
            die(f"--attach takes NAME=PATH, not '{item}'.")
    if args.disk and not os.path.exists(f"/sys/block/{args.disk}/stat"):
        die(f"no /sys/block/{args.disk}/stat: give --disk a block device name like vda.")
    try:
        wsize = os.path.getsize(args.write_file)
        rsize = os.path.getsize(args.read_file)
    except OSError as exc:
        die(f"{exc}; create the files with 'workload.py prepare' first.")
    if args.pattern == "rewrite" and not (args.hot_pages >= 1 and 0.0 <= args.hot_share <= 1.0):
        die("--pattern rewrite needs --hot-pages >= 1 and --hot-share between 0 and 1.")
    if args.burst_every <= 1.0:
        die("--burst-every must be more than 1 second (a burst lasts one).")
    plan = write_plan(args, wsize // PAGE)
    if plan is None:
        die(
            f"{args.write_file} holds {wsize // PAGE} pages, too few for "
            f"{args.rate * args.duration:.0f} non-adjacent pages: prepare a larger write file."
        )
    plan = [(t, p) for t, p in plan if t < args.duration]
    nwrites = len(plan)
    if rsize < PAGE:
        die(f"{args.read_file} is smaller than one page: prepare it again.")

    wfd = os.open(args.write_file, os.O_WRONLY)
    rfd = os.open(args.read_file, os.O_RDONLY | os.O_DIRECT)
    run = Run(args)
    threads = [
        threading.Thread(target=run.writer, args=(wfd, plan), name="writer"),
        threading.Thread(target=run.reader, args=(rfd, rsize // PAGE), name="reader"),
    ]
    if args.snapshot_at > 0 and args.attach:
        threads.append(threading.Thread(target=run.snapshotter, name="snapshot"))
    if args.disk:
        threads.append(threading.Thread(target=run.sampler, name="sampler"))
        rd0, wr0 = disk_stat(args.disk)
    if args.start_cmd:
        # E.g. insmod: a policy whose clock starts at load (pu's 30-s
        # period) then starts with the load, not some seconds before it.
        rc = subprocess.run(["bash", "-c", args.start_cmd]).returncode
        if rc != 0:
            die(f"--start-cmd exited with status {rc}: {args.start_cmd}")
    cpu0 = kthread_cpu_ms(args.kthread)
    marker = marker_read(args.marker)
    run.t0 = time.monotonic()
    for t in threads:
        t.start()
    run.stop.wait(args.duration)
    run.stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - run.t0
    marker_read(args.marker)
    cpu1 = kthread_cpu_ms(args.kthread)
    os.close(rfd)

    result = {
        "label": args.label,
        "config": {
            "pattern": args.pattern,
            "burst_every_s": args.burst_every,
            "hot_pages": args.hot_pages,
            "hot_share": args.hot_share,
            "distinct_pages": len({p for _, p in plan}),
            "rate_per_s": args.rate,
            "duration_s": args.duration,
            "write_file": args.write_file,
            "write_file_pages": wsize // PAGE,
            "read_file": args.read_file,
            "read_file_pages": rsize // PAGE,
            "seed": args.seed,
            "disk": args.disk,
        },
        "elapsed_s": round(elapsed, 3),
        "errors": run.errors,
        "reads": summarize(run.read_ms, run.read_t),
        "writes": {
            "planned": nwrites,
            "done": len(run.write_call_ms),
            "max_lag_ms": round(max(run.write_lag_ms, default=0.0), 3),
            "max_call_ms": round(max(run.write_call_ms, default=0.0), 3),
            "slow_calls": run.slow_writes,
        },
        "attach": read_attach(args.attach),
        "flusher_cpu_ms": None if cpu0 is None or cpu1 is None else round(cpu1 - cpu0, 1),
        "marker_sector": marker,
        "attach_at": run.snapshot,
    }
    if args.disk:
        rd1, wr1 = disk_stat(args.disk)
        result["disk"] = {"read_ios": rd1 - rd0, "write_ios": wr1 - wr0}
    if args.sync_after:
        s0 = time.monotonic()
        os.fsync(wfd)
        os.sync()
        result["sync_s"] = round(time.monotonic() - s0, 3)
        if args.disk:
            _, wr2 = disk_stat(args.disk)
            result["disk"]["write_ios_sync"] = wr2 - wr1
    os.close(wfd)
    result["series"] = {
        "reads": [[round(t, 4), round(v, 3)] for t, v in zip(run.read_t, run.read_ms)],
        "disk_fields": [
            "t_s",
            "read_ios",
            "write_ios",
            "inflight_writes",
            "dirty_kb",
            "writeback_kb",
        ],
        "disk": run.samples,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, args.out)
    r = result["reads"]
    line = (
        f"workload: {args.label or 'run'}: {r.get('count', 0)} reads, "
        f"mean {r.get('mean_ms', 0):.1f} ms, p99 {r.get('p99_ms', 0):.1f} ms, "
        f"max {r.get('max_ms', 0):.1f} ms at t={r.get('max_at_s', 0):.1f} s"
    )
    if args.disk:
        line += f", {result['disk']['write_ios']} disk writes"
    print(line)
    if run.errors:
        print("workload: errors: " + "; ".join(run.errors), file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------- probe


def timed_io(path, write, seconds, seed):
    """Latencies (ms) of back-to-back O_DIRECT random 4 KiB reads or
    writes of PATH for SECONDS, one at a time: the device's service time
    with nothing else queued."""
    fd = os.open(path, (os.O_WRONLY if write else os.O_RDONLY) | os.O_DIRECT)
    buf = mmap.mmap(-1, PAGE)
    rnd = random.Random(seed)
    npages = os.fstat(fd).st_size // PAGE
    lat = []
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            off = rnd.randrange(npages) * PAGE
            t = time.monotonic()
            n = os.pwritev(fd, [buf], off) if write else os.preadv(fd, [buf], off)
            lat.append((time.monotonic() - t) * 1e3)
            if n != PAGE:
                raise OSError(f"short {'write' if write else 'read'} ({n} bytes) at {off}")
    finally:
        buf.close()
        os.close(fd)
    return lat


def cmd_probe(args):
    if args.seconds <= 0:
        die("--seconds must be positive.")
    out = {}
    for name, path, write in (("read", args.read_file, False), ("write", args.write_file, True)):
        lat = timed_io(path, write, args.seconds, args.seed)
        out[name] = summarize(lat, [0.0] * len(lat))
        out[name].pop("max_at_s", None)
        r = out[name]
        print(
            f"workload: probe: {r['count']} O_DIRECT {name}s alone: mean {r['mean_ms']:.2f} ms, "
            f"p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms"
        )
    with open(args.out, "w") as f:
        json.dump(out, f)
        f.write("\n")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Steady page-dirtying write load plus an O_DIRECT read-latency probe."
    )
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("prepare", help="create and fsync write.dat and read.dat in DIR")
    p.add_argument("--dir", required=True)
    p.add_argument("--write-mib", type=int, default=32)
    p.add_argument("--read-mib", type=int, default=64)

    r = sub.add_parser("run", help="run the write load and the read probe")
    r.add_argument("--write-file", required=True)
    r.add_argument("--read-file", required=True)
    r.add_argument("--out", required=True, help="JSON result file")
    r.add_argument("--rate", type=float, default=20.0, help="pages dirtied per second")
    r.add_argument("--duration", type=float, default=75.0, help="seconds")
    r.add_argument(
        "--pattern",
        choices=("steady", "burst", "rewrite"),
        default="steady",
        help="when and which pages the writer dirties (see write_plan)",
    )
    r.add_argument("--burst-every", type=float, default=30.0, help="seconds between bursts")
    r.add_argument("--hot-pages", type=int, default=200, help="rewrite: pages written repeatedly")
    r.add_argument("--hot-share", type=float, default=0.5, help="rewrite: share of writes to them")
    r.add_argument("--disk", default="", help="block device name to sample, e.g. vda")
    r.add_argument("--sample-s", type=float, default=0.25, help="disk sampling period")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--label", default="")
    r.add_argument(
        "--attach",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="embed PATH's text, read at the end of the run, before any sync",
    )
    r.add_argument("--kthread", default="", help="count this kernel thread's CPU time")
    r.add_argument(
        "--snapshot-at",
        type=float,
        default=0.0,
        metavar="S",
        help="also read the --attach files S seconds in (0: only at the end)",
    )
    r.add_argument(
        "--marker", default="", metavar="DEV", help="read DEV's last page at start and end"
    )
    r.add_argument(
        "--start-cmd",
        default="",
        metavar="SHELL_CMD",
        help="run this (with bash -c) right before the clock starts, e.g. insmod",
    )
    r.add_argument(
        "--sync-after",
        action="store_true",
        help="after the run, sync and count the writes the sync needed",
    )

    q = sub.add_parser("probe", help="measure the device's service time, one I/O at a time")
    q.add_argument("--write-file", required=True)
    q.add_argument("--read-file", required=True)
    q.add_argument("--out", required=True, help="JSON result file")
    q.add_argument("--seconds", type=float, default=5.0, help="seconds of reads, then of writes")
    q.add_argument("--seed", type=int, default=7)

    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        return cmd_prepare(args) or 0
    if args.cmd == "probe":
        return cmd_probe(args)
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
