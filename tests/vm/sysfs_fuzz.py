#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fuzz aipu's sysfs knobs and check every answer against a model.

    sysfs_fuzz.py model [--dir /sys/kernel/aipu] [--seed N] [--per-knob N]
    sysfs_fuzz.py storm [--dir /sys/kernel/aipu] [--seed N] [--seconds S]
                        [--writers N]

model: one value at a time to every knob (boundaries, signs, spaces, huge,
very long, non-UTF-8, random bytes, random numbers), each written in one
write(2). The model says whether the kernel must take it: a number knob
takes what kstrtouint(buf, 10) parses ('+' allowed, one trailing newline)
within the knob's range; a choice knob takes a listed name with at most one
trailing newline; write_alloc=purge needs a policy other than kernel. The
kernel reads the buffer as a C string, so "100<NUL>junk" is 100, as
everywhere in sysfs. A taken value must read back; a refused one must fail
with EINVAL and leave the file as it was. Writes longer than a page are
cut to a page by sysfs (a short write), so the model judges the first page.

storm: WRITERS processes write random good and bad values to random knobs
for SECONDS while one process reads every file in a loop; every write must
succeed or fail with EINVAL, and every read must be well formed (a number
in range, a choice list with exactly one name bracketed, stat and histogram
lines of numbers).

Both print "PASS: ..." / "FAIL: ..." lines, end with "N passed, N failed"
and exit 1 on any failure. Nothing read may look like a kernel address.
"""

import argparse
import errno
import multiprocessing
import os
import random
import re
import sys
import time

PAGE = 4096
UINT_MAX = 2**32 - 1
# name: (min, max, default), as in include/aipu_knobs.h and the ABI file.
NUMBERS = {
    "max_age_ms": (100, 3600000, 30000),
    "period_ms": (10, 60000, 1000),
    "pu_interval_ms": (100, 3600000, 30000),
    "handover_ms": (0, 3600000, 35000),
    "stage_interval_ms": (0, 3600000, 1000),
    "stage_batch": (1, 65536, 1),
    "pace": (0, 1, 1),
    "max_batch": (0, 1 << 24, 0),
}
CHOICES = {
    "policy": ("kernel", "aipu", "pu", "stage"),
    "write_alloc": ("update", "purge"),
}
READ_ONLY = ("stat", "burst_hist", "age_hist")
# A kernel pointer printed in full (%px, or %p without hashing).
ADDRESS = re.compile(rb"(?<![0-9a-f])(ffff[0-9a-f]{12}|0xffff[0-9a-f]{8,})", re.I)
NUMBER = re.compile(rb"\+?([0-9]+)\n?")


def as_string(data):
    """What a store sees: sysfs cuts a write to a page, and the kernel
    parses the buffer as a C string, so it ends at the first NUL."""
    return data[:PAGE].split(b"\0", 1)[0]


def number_value(name, data):
    """The value a number knob takes from DATA, or None if it refuses it."""
    data = as_string(data)
    m = NUMBER.fullmatch(data)
    if not m:
        return None
    v = int(m.group(1))
    lo, hi, _ = NUMBERS[name]
    if v > UINT_MAX or v < lo or v > hi:
        return None
    return v


def choice_value(name, data):
    """The name a choice knob takes from DATA, or None."""
    data = as_string(data)
    if data.endswith(b"\n"):
        data = data[:-1]
    for c in CHOICES[name]:
        if data == c.encode():
            return c
    return None


def chosen(text, name):
    """The bracketed name of a choice file's contents, or None if malformed."""
    words = text.rstrip(b"\n").split(b" ")
    if not text.endswith(b"\n") or text.count(b"\n") != 1:
        return None
    picked = [w[1:-1] for w in words if w.startswith(b"[") and w.endswith(b"]")]
    names = [w.strip(b"[]").decode("ascii", "replace") for w in words]
    if len(picked) != 1 or set(names) != set(CHOICES[name]):
        return None
    return picked[0].decode()


def values(rng, lo, hi):
    """Candidate writes for a number knob with range [lo, hi]."""
    vals = [
        str(lo),
        str(hi),
        str(lo - 1),
        str(hi + 1),
        "-1",
        "0",
        "-0",
        "+" + str(hi),
        "++1",
        "+",
        "-",
        str(UINT_MAX),
        str(UINT_MAX + 1),
        str(2**64),
        "9" * 100,
        "0" * 50 + str(lo),
        str(lo) + "\n\n",
        " " + str(lo),
        str(lo) + " ",
        str(lo) + "\t",
        "0x10",
        "1e3",
        "1.5",
        "12abc",
        "",
        "\n",
        "\0",
        str(lo) + "\0",
        "0" * (PAGE - 2) + "5\n",
        "0" * PAGE + "5",
        "7" * (3 * PAGE),
    ]
    out = [v.encode() for v in vals]
    out += [b"\xff\xfe", b"\xc3\x28", "٣".encode(), bytes(range(256))]
    for _ in range(40):
        out.append(str(rng.randint(lo, hi)).encode())
        out.append(str(rng.randint(0, 2**33)).encode())
        out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))))
    return out


def choice_values(rng, name):
    out = []
    for c in CHOICES[name]:
        out += [c.encode(), (c + "\n").encode(), (c + "\n\n").encode()]
        out += [(" " + c).encode(), ("[" + c + "]").encode(), c.upper().encode()]
        out += [c[:-1].encode(), (c + "x").encode(), (c + " " + c).encode()]
    out += [b"", b"\n", b"\xff", b"0", b"1", b"a" * (2 * PAGE)]
    out += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))) for _ in range(20)]
    return out


class Sysfs:
    def __init__(self, path):
        self.path = path

    def read(self, name):
        with open(os.path.join(self.path, name), "rb") as f:
            return f.read()

    def write(self, name, data):
        """0, or the errno of the one write(2) of DATA."""
        fd = os.open(os.path.join(self.path, name), os.O_WRONLY)
        try:
            os.write(fd, data)
            return 0
        except OSError as e:
            return e.errno
        finally:
            os.close(fd)


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.fails_shown = 0

    def check(self, ok, msg):
        if ok:
            self.passed += 1
            return
        self.failed += 1
        if self.fails_shown < 50:
            print("FAIL: " + msg, flush=True)
            self.fails_shown += 1

    def summary(self, what):
        if self.failed == 0:
            print(f"PASS: {what}: {self.passed} checks")
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


def no_address(rep, where, text):
    m = ADDRESS.search(text)
    rep.check(m is None, f"{where} shows what looks like a kernel address: {m and m.group(0)!r}")


def show(data):
    r = repr(data)
    return r if len(r) < 60 else r[:40] + f"...({len(data)} bytes)"


def model_number(fs, rep, rng, name, per_knob):
    lo, hi, _ = NUMBERS[name]
    cands = values(rng, lo, hi)
    rng.shuffle(cands)
    for data in cands[:per_knob]:
        before = fs.read(name)
        err = fs.write(name, data)
        after = fs.read(name)
        want = number_value(name, data)
        if not data:
            ok = err in (0, errno.EINVAL) and after == before
            rep.check(ok, f"{name}: empty write: {os.strerror(err)}, {before!r} -> {after!r}")
        elif want is None:
            ok = err == errno.EINVAL and after == before
            rep.check(
                ok,
                f"{name}: {show(data)} should be refused with EINVAL and change "
                f"nothing: got {errno.errorcode.get(err, err)}, {before!r} -> {after!r}",
            )
        else:
            ok = err == 0 and after == f"{want}\n".encode()
            rep.check(
                ok,
                f"{name}: {show(data)} should be taken as {want}: got "
                f"{errno.errorcode.get(err, err)}, reads {after!r}",
            )
        no_address(rep, name, after)


def model_choice(fs, rep, rng, name):
    for data in choice_values(rng, name):
        before = fs.read(name)
        policy = chosen(fs.read("policy"), "policy")
        err = fs.write(name, data)
        after = fs.read(name)
        want = choice_value(name, data)
        if name == "write_alloc" and want == "purge" and policy == "kernel":
            want = None
        if not data:
            rep.check(
                err in (0, errno.EINVAL) and after == before, f"{name}: empty write changed it"
            )
        elif want is None:
            rep.check(
                err == errno.EINVAL and after == before,
                f"{name}: {show(data)} should be refused with EINVAL: got "
                f"{errno.errorcode.get(err, err)}, {before!r} -> {after!r}",
            )
        else:
            rep.check(
                err == 0 and chosen(after, name) == want,
                f"{name}: {show(data)} should select {want}: got "
                f"{errno.errorcode.get(err, err)}, reads {after!r}",
            )
        rep.check(chosen(after, name) is not None, f"{name} reads {after!r}: not a choice list")


def restore(fs):
    for name, (_, _, dflt) in NUMBERS.items():
        fs.write(name, str(dflt).encode())


def cmd_model(args):
    fs, rep, rng = Sysfs(args.dir), Report(), random.Random(args.seed)
    policy0 = chosen(fs.read("policy"), "policy")
    for name in NUMBERS:
        model_number(fs, rep, rng, name, args.per_knob)
    for policy in ("kernel", "aipu"):
        rep.check(fs.write("policy", policy.encode()) == 0, f"cannot set policy {policy}")
        model_choice(fs, rep, rng, "write_alloc")
    model_choice(fs, rep, rng, "policy")
    restore(fs)
    fs.write("write_alloc", b"update")
    fs.write("policy", (policy0 or "kernel").encode())
    for name in READ_ONLY:
        no_address(rep, name, fs.read(name))
    return rep.summary(f"model: every knob, seed {args.seed}")


def random_write(rng):
    """A knob and a value, good or bad, for the storm."""
    name = rng.choice(list(NUMBERS) + list(CHOICES))
    if name in CHOICES:
        if rng.random() < 0.7:
            return name, rng.choice(CHOICES[name]).encode()
        return name, rng.choice(choice_values(rng, name))
    lo, hi, _ = NUMBERS[name]
    # Keep the flusher busy but alive: short periods, ages of seconds.
    if name == "period_ms":
        hi = 1000
    if name in ("max_age_ms", "pu_interval_ms", "stage_interval_ms"):
        hi = 5000
    if rng.random() < 0.6:
        return name, str(rng.randint(lo, hi)).encode()
    return name, rng.choice(values(rng, lo, hi))


def storm_writer(path, seed, seconds, q):
    fs, rng = Sysfs(path), random.Random(seed)
    end, n, bad = time.monotonic() + seconds, 0, []
    while time.monotonic() < end:
        name, data = random_write(rng)
        err = fs.write(name, data)
        n += 1
        if err not in (0, errno.EINVAL) and len(bad) < 10:
            bad.append(f"{name} <- {show(data)}: {errno.errorcode.get(err, err)}")
    q.put(("writer", n, bad))


def read_ok(name, text):
    if name in NUMBERS:
        m = re.fullmatch(rb"([0-9]+)\n", text)
        lo, hi, _ = NUMBERS[name]
        return bool(m) and lo <= int(m.group(1)) <= hi
    if name in CHOICES:
        return chosen(text, name) is not None
    if name == "stat":
        return re.fullmatch(rb"([a-z_]+ [0-9]+\n)+", text) is not None
    return re.fullmatch(rb"([0-9]+ ([0-9]+|-) [0-9]+\n)+", text) is not None


def storm_reader(path, seconds, q):
    fs = Sysfs(path)
    names = list(NUMBERS) + list(CHOICES) + list(READ_ONLY)
    end, n, bad = time.monotonic() + seconds, 0, []
    while time.monotonic() < end:
        for name in names:
            text = fs.read(name)
            n += 1
            if (not read_ok(name, text) or ADDRESS.search(text)) and len(bad) < 10:
                bad.append(f"{name} read {text[:200]!r}")
    q.put(("reader", n, bad))


def cmd_storm(args):
    rep = Report()
    q = multiprocessing.Queue()
    procs = [
        multiprocessing.Process(
            target=storm_writer, args=(args.dir, args.seed + i, args.seconds, q)
        )
        for i in range(args.writers)
    ]
    procs.append(multiprocessing.Process(target=storm_reader, args=(args.dir, args.seconds, q)))
    for p in procs:
        p.start()
    results = [q.get(timeout=args.seconds + 120) for _ in procs]
    for p in procs:
        p.join()
    for kind, n, bad in results:
        rep.check(n > 0, f"a {kind} made no call")
        for b in bad:
            rep.check(False, f"{kind}: {b}")
        if not bad:
            rep.check(True, "")
            print(f"# {kind}: {n} calls, all answered as documented")
    for p in procs:
        rep.check(p.exitcode == 0, f"a storm process exited {p.exitcode}")
    restore(Sysfs(args.dir))
    return rep.summary(f"storm: {args.writers} writers and a reader for {args.seconds} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("model", "storm"))
    ap.add_argument("--dir", default="/sys/kernel/aipu")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-knob", type=int, default=200, help="model: writes per number knob")
    ap.add_argument("--seconds", type=float, default=20, help="storm: how long")
    ap.add_argument("--writers", type=int, default=4, help="storm: writer processes")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dir):
        sys.exit(f"sysfs_fuzz: {args.dir} does not exist: load aipu.ko first.")
    return cmd_model(args) if args.mode == "model" else cmd_storm(args)


if __name__ == "__main__":
    sys.exit(main())
