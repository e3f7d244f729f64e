#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Application workloads for the benchmark suite (bench/README.md).

db     A real database standing in for the paper's kernel build (Tables 4
       and 5): SQLite, in WAL mode with synchronous=OFF (no fsync: when the
       data reaches the disk is the update policy's business), running a
       TPC-B-like transaction (update one account's balance, its branch's
       and teller's, append a history row) as fast as it can, TRANSACTIONS
       times or for SECONDS, whichever ends first. Reports the elapsed
       time, the transactions a second and the disk writes per 1,000
       transactions (so runs of different speeds compare).
files  Small-file churn for the overhead check: create a file, write
       4 KiB, close it, and delete the file written KEEP files before, for
       SECONDS seconds. Reports operations per second.

Both read the disk's counters (/sys/block/DEV/stat) before and after, sync
at the end and count the writes the sync needed, and embed --attach files
(aipu's stat) and the CPU time of --kthread (aipu's flusher), and mark the
run's start and end in the disk's trace with --marker, like workload.py run.

Usage:
  apps.py db-prepare --db PATH [--accounts 100000]
  apps.py db --db PATH --out JSON [--transactions 0] [--seconds 60] [--disk vda]
             [--attach NAME=PATH ...] [--kthread aipu] [--marker DEV] [--start-cmd CMD]
  apps.py files --dir DIR --out JSON [--seconds 20] [--keep 100]
             [--disk vda] [--attach NAME=PATH ...] [--kthread aipu] [--start-cmd CMD]

Python 3 standard library only.
"""

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workload  # noqa: E402

BRANCHES = 10
TELLERS = 100


def die(msg):
    print(f"apps: {msg}", file=sys.stderr)
    sys.exit(2)


def connect(path):
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    return con


def cmd_db_prepare(args):
    if args.accounts < TELLERS:
        die(f"--accounts must be at least {TELLERS}.")
    if os.path.exists(args.db):
        os.unlink(args.db)
    con = connect(args.db)
    con.executescript(
        """
        CREATE TABLE branch (id INTEGER PRIMARY KEY, balance INTEGER, filler BLOB);
        CREATE TABLE teller (id INTEGER PRIMARY KEY, branch INTEGER, balance INTEGER,
                             filler BLOB);
        CREATE TABLE account (id INTEGER PRIMARY KEY, branch INTEGER, balance INTEGER,
                              filler BLOB);
        CREATE TABLE history (account INTEGER, teller INTEGER, branch INTEGER,
                              delta INTEGER, t REAL, filler BLOB);
        """
    )
    filler = b"x" * 84  # TPC-B's 100-byte rows
    con.execute("BEGIN")
    con.executemany("INSERT INTO branch VALUES (?, 0, ?)", ((i, filler) for i in range(BRANCHES)))
    con.executemany(
        "INSERT INTO teller VALUES (?, ?, 0, ?)",
        ((i, i % BRANCHES, filler) for i in range(TELLERS)),
    )
    con.executemany(
        "INSERT INTO account VALUES (?, ?, 0, ?)",
        ((i, i % BRANCHES, filler) for i in range(args.accounts)),
    )
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    os.sync()
    print(f"apps: db with {args.accounts} accounts: {os.path.getsize(args.db) >> 20} MiB")
    return 0


def transactions(con, n, seconds, seed):
    """Run N transactions (0: no limit) or for SECONDS (0: no limit),
    whichever ends first; return how many ran."""
    rnd = random.Random(seed)
    accounts = con.execute("SELECT count(*) FROM account").fetchone()[0]
    end = time.monotonic() + seconds if seconds else float("inf")
    done = 0
    while (n == 0 or done < n) and time.monotonic() < end:
        acc, tel = rnd.randrange(accounts), rnd.randrange(TELLERS)
        br, delta = tel % BRANCHES, rnd.randint(-99999, 99999)
        con.execute("BEGIN")
        con.execute("UPDATE account SET balance = balance + ? WHERE id = ?", (delta, acc))
        con.execute("UPDATE teller SET balance = balance + ? WHERE id = ?", (delta, tel))
        con.execute("UPDATE branch SET balance = balance + ? WHERE id = ?", (delta, br))
        con.execute(
            "INSERT INTO history VALUES (?, ?, ?, ?, ?, ?)",
            (acc, tel, br, delta, time.time(), b"h" * 22),
        )
        con.execute("COMMIT")
        done += 1
    return done


def file_churn(directory, seconds, keep):
    block = os.urandom(workload.PAGE)
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        fd = os.open(os.path.join(directory, f"f{n}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, block)
        os.close(fd)
        if n >= keep:
            os.unlink(os.path.join(directory, f"f{n - keep}"))
        n += 1
    for i in range(max(0, n - keep), n):
        os.unlink(os.path.join(directory, f"f{i}"))
    return n


def measured(args, body):
    """Run BODY() between two readings of the disk, the kthread's CPU time
    and the clock; then sync. Returns the result dictionary."""
    if args.disk and not os.path.exists(f"/sys/block/{args.disk}/stat"):
        die(f"no /sys/block/{args.disk}/stat: give --disk a block device name like vda.")
    if args.start_cmd:
        rc = subprocess.run(["bash", "-c", args.start_cmd]).returncode
        if rc != 0:
            die(f"--start-cmd exited with status {rc}: {args.start_cmd}")
    d0 = workload.disk_stat(args.disk) if args.disk else (0, 0)
    c0 = workload.kthread_cpu_ms(args.kthread)
    marker = workload.marker_read(args.marker)
    t0 = time.monotonic()
    work = body()
    elapsed = time.monotonic() - t0
    workload.marker_read(args.marker)
    d1 = workload.disk_stat(args.disk) if args.disk else (0, 0)
    c1 = workload.kthread_cpu_ms(args.kthread)
    result = {
        "label": args.label,
        "elapsed_s": round(elapsed, 3),
        "work": work,
        "attach": workload.read_attach(args.attach),
        "flusher_cpu_ms": None if c0 is None or c1 is None else c1 - c0,
        "marker_sector": marker,
    }
    s0 = time.monotonic()
    os.sync()
    result["sync_s"] = round(time.monotonic() - s0, 3)
    if args.disk:
        d2 = workload.disk_stat(args.disk)
        result["disk"] = {
            "read_ios": d1[0] - d0[0],
            "write_ios": d1[1] - d0[1],
            "write_ios_sync": d2[1] - d1[1],
        }
    return result


def write_result(path, result):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, path)


def cmd_db(args):
    if args.transactions < 0 or args.seconds < 0 or not (args.transactions or args.seconds):
        die("--transactions and --seconds must be >= 0, and one of them positive.")
    if not os.path.exists(args.db):
        die(f"no database {args.db}: create it with 'apps.py db-prepare' first.")
    con = connect(args.db)

    def body():
        return {"transactions": transactions(con, args.transactions, args.seconds, args.seed)}

    result = measured(args, body)
    con.close()
    work = result["work"]
    work["tps"] = round(work["transactions"] / result["elapsed_s"], 1)
    disk = result.get("disk")
    if disk and work["transactions"]:
        per = 1000.0 / work["transactions"]
        work["disk_writes_per_1000"] = round((disk["write_ios"] + disk["write_ios_sync"]) * per, 1)
    write_result(args.out, result)
    print(
        f"apps: db {args.label}: {work['transactions']} transactions in "
        f"{result['elapsed_s']:.1f} s ({work['tps']:.0f}/s), "
        f"{result.get('disk', {}).get('write_ios', 0)} disk writes"
    )
    return 0


def cmd_files(args):
    if args.seconds <= 0 or args.keep < 1:
        die("--seconds must be positive and --keep at least 1.")
    if not os.path.isdir(args.dir):
        die(f"--dir {args.dir} is not a directory.")

    def body():
        return {"files": file_churn(args.dir, args.seconds, args.keep)}

    result = measured(args, body)
    result["work"]["ops_per_s"] = round(result["work"]["files"] / result["elapsed_s"], 1)
    write_result(args.out, result)
    print(f"apps: files {args.label}: {result['work']['ops_per_s']:.0f} files/s")
    return 0


def common(p):
    p.add_argument("--out", required=True, help="JSON result file")
    p.add_argument("--disk", default="", help="block device name to count I/Os on, e.g. vda")
    p.add_argument("--attach", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--kthread", default="", help="count this kernel thread's CPU time")
    p.add_argument("--marker", default="", metavar="DEV", help="read DEV's last page at both ends")
    p.add_argument("--start-cmd", default="", metavar="SHELL_CMD")
    p.add_argument("--label", default="")
    p.add_argument("--seed", type=int, default=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Application workloads for bench/.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("db-prepare", help="create the database")
    p.add_argument("--db", required=True)
    p.add_argument("--accounts", type=int, default=100000)
    p = sub.add_parser("db", help="run TPC-B-like transactions")
    p.add_argument("--db", required=True)
    p.add_argument("--transactions", type=int, default=0, help="how many (0: no limit)")
    p.add_argument("--seconds", type=float, default=60.0, help="at most this long (0: no limit)")
    common(p)
    p = sub.add_parser("files", help="small-file create/write/delete loop")
    p.add_argument("--dir", required=True)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--keep", type=int, default=100)
    common(p)
    args = ap.parse_args(argv)
    for item in getattr(args, "attach", []):
        if "=" not in item:
            die(f"--attach takes NAME=PATH, not '{item}'.")
    return {"db-prepare": cmd_db_prepare, "db": cmd_db, "files": cmd_files}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
