#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests of tests/crash/records.py (no VM needed).

python3 -m unittest discover -s tests/vm -p 'test_*.py'
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crash"))

import records as rc  # noqa: E402

MS = 1000000


class Records(unittest.TestCase):
    def test_round_trip(self):
        page = rc.record(7, 42, 123456789)
        self.assertEqual(len(page), rc.PAGE)
        self.assertEqual(rc.parse(page), (7, 42, 123456789))

    def test_torn_page_is_refused(self):
        old, new = rc.record(3, 1, 10), rc.record(3, 2, 20)
        self.assertIsNone(rc.parse(new[:512] + old[512:]))
        self.assertIsNone(rc.parse(bytes(rc.PAGE)))


class Judge(unittest.TestCase):
    # Slot 0 written at 1 s and 2 s, slot 1 at 9 s; reset at 10 s; bound 5 s.
    WRITES = [(0, 1, 1000 * MS), (0, 2, 2000 * MS), (1, 3, 9000 * MS)]

    def test_all_on_disk(self):
        viol, lost = rc.judge(self.WRITES, 10000 * MS, {0: (2, 0), 1: (3, 0)}, 5000 * MS)
        self.assertEqual((viol, lost), ([], 0))

    def test_young_loss_is_not_a_violation(self):
        viol, lost = rc.judge(self.WRITES, 10000 * MS, {0: (2, 0), 1: (0, 0)}, 5000 * MS)
        self.assertEqual(viol, [])
        self.assertEqual(lost, 1000 * MS)

    def test_old_loss_is(self):
        viol, lost = rc.judge(self.WRITES, 10000 * MS, {0: (1, 0), 1: (3, 0)}, 5000 * MS)
        self.assertEqual(viol, [(0, 2, 8000)])
        self.assertEqual(lost, 8000 * MS)

    def test_disk_read_through_extents(self):
        with tempfile.TemporaryDirectory() as d:
            img = os.path.join(d, "img")
            # Slot 0 at byte 8192 of the image, slot 1 at 0.
            with open(img, "wb") as f:
                f.write(rc.record(1, 5, 0) + bytes(rc.PAGE) + rc.record(0, 4, 0))
            ext = {"slots": 2, "extents": [[0, 8192, 4096], [4096, 0, 4096]]}
            self.assertEqual(rc.read_disk(img, ext), {0: (4, 0), 1: (5, 0)})
            with open(os.path.join(d, "ext.json"), "w") as f:
                json.dump(ext, f)


def write_log(path, writes, reset_ns):
    with open(path, "w") as f:
        for slot, seq, t_ns in writes:
            f.write(f"w {slot} {seq} {t_ns}\n")
        f.write(f"reset {reset_ns}\n")


def run_main(argv):
    """records.main(argv): (exit status, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = rc.main(argv)
    return code, out.getvalue()


class RecoveredFile(unittest.TestCase):
    """Appended records judged from the file as the recovered file system has it."""

    # Record N written at N * 0.5 s (slot N, sequence N + 1); reset at 10 s.
    WRITES = [(n, n + 1, n * 500 * MS) for n in range(20)]
    RESET = 10000 * MS

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name
        self.log = os.path.join(self.d, "writes.log")
        write_log(self.log, self.WRITES, self.RESET)

    def tearDown(self):
        self.dir.cleanup()

    def file_with(self, pages):
        path = os.path.join(self.d, "rec.dat")
        with open(path, "wb") as f:
            f.write(b"".join(pages))
        return path

    def check(self, path, *extra):
        j = os.path.join(self.d, "res.json")
        code, out = run_main(["check-file", path, self.log, "--json", j, *extra])
        with open(j) as f:
            return code, out, json.load(f)

    def test_read_file_by_offset(self):
        good = rc.record(0, 1, 0)
        torn = rc.record(3, 4, 0)[:100] + rc.record(3, 9, 0)[100:]
        path = self.file_with([good, bytes(rc.PAGE), rc.record(0, 1, 0), torn, b"x" * 100])
        # Slot 2 holds slot 0's record: not slot 2's. The short page at the
        # end (slot 4) holds nothing; slot 5, past the end, is not there.
        self.assertEqual(rc.read_file(path), {0: (1, 0), 1: None, 2: None, 3: None, 4: None})

    def test_everything_there(self):
        path = self.file_with([rc.record(s, q, t) for s, q, t in self.WRITES])
        code, _, res = self.check(path, "--bound-ms", "5000")
        self.assertEqual(
            (code, res["violations"], res["lost"], res["oldest_lost_ms"]), (0, 0, 0, 0)
        )
        self.assertEqual(res["due"], 10)  # written at 0-4.5 s

    def test_young_tail_past_eof_is_not_a_violation(self):
        # Records 0-11 made it (the last written at 5.5 s, 4.5 s before the
        # reset); 12-19 are past the end of the file.
        path = self.file_with([rc.record(s, q, t) for s, q, t in self.WRITES[:12]])
        code, out, res = self.check(path, "--bound-ms", "5000")
        self.assertEqual((code, res["violations"], res["lost"]), (0, 0, 8))
        self.assertEqual(res["oldest_lost_ms"], 4000)
        self.assertEqual(res["youngest_on_disk_ms"], 4500)
        self.assertIn("violations 0", out)

    def test_old_record_lost_is_a_violation(self):
        # Records 0-1 made it, 2-3 are zeros (the size reached them, their
        # data did not) and 4-19 are past the end of the file: 2-9 were
        # written more than 5 s before the reset.
        pages = [rc.record(s, q, t) for s, q, t in self.WRITES[:2]] + [bytes(rc.PAGE)] * 2
        path = self.file_with(pages)
        code, out, res = self.check(path, "--bound-ms", "5000")
        self.assertEqual(code, 1)
        self.assertEqual(res["violations"], 8)
        self.assertEqual(res["oldest_lost_ms"], 9000)
        self.assertEqual(res["examples"][0], [2, 3, 9000])
        self.assertIn("violations 8", out)

    def test_empty_file_loses_everything(self):
        code, _, res = self.check(self.file_with([]), "--bound-ms", "5000")
        self.assertEqual((code, res["violations"], res["lost"]), (1, 10, 20))
        self.assertIsNone(res["youngest_on_disk_ms"])

    def test_second_bound_is_measured_not_judged(self):
        # Records 0-5 made it (written at 0-2.5 s): under a 7-s bound
        # records 0-5 are due, all there; under 5 s, 0-9 are due and 6-9 lost.
        path = self.file_with([rc.record(s, q, t) for s, q, t in self.WRITES[:6]])
        code, out, res = self.check(path, "--bound-ms", "7000", "--also-bound-ms", "5000")
        self.assertEqual((code, res["violations"], res["due"]), (0, 0, 6))
        self.assertEqual((res["also_due"], res["also_violations"]), (10, 4))
        self.assertIn("measured against 5000 ms: due 10 violations 4", out)

    def test_no_reset_line(self):
        with open(self.log, "w") as f:
            f.write("w 0 1 5\n")
        code, out = run_main(["check-file", self.file_with([]), self.log, "--bound-ms", "1"])
        self.assertEqual(code, 2)
        self.assertIn("did not run", out)


@unittest.skipUnless(
    shutil.which("mke2fs") and shutil.which("e2fsck") and shutil.which("debugfs"),
    "needs e2fsprogs",
)
class Recover(unittest.TestCase):
    """recover on images made in user space (mke2fs -d), no mount needed."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name
        self.data = b"".join(rc.record(n, n + 1, n) for n in range(40))

    def tearDown(self):
        self.dir.cleanup()

    def image(self, fs, files):
        src = os.path.join(self.d, "src")
        os.mkdir(src)
        for name, data in files.items():
            with open(os.path.join(src, name), "wb") as f:
                f.write(data)
        img = os.path.join(self.d, "img")
        subprocess.run(
            ["mke2fs", "-q", "-F", "-t", fs, "-b", "4096", "-d", src, img, "16M"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return img

    def recover(self, img):
        out = os.path.join(self.d, "out.dat")
        log = os.path.join(self.d, "fsck.log")
        code, printed = run_main(["recover", img, out, "--fsck-log", log])
        return code, printed, out

    def recovers(self, fs):
        code, printed, out = self.recover(self.image(fs, {"rec.dat": self.data}))
        self.assertEqual(code, 0, printed)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), self.data)
        self.assertEqual(len(rc.read_file(out)), 40)
        self.assertIn(f"/rec.dat {len(self.data)} bytes", printed)

    def test_ext4(self):
        self.recovers("ext4")

    def test_ext2(self):
        self.recovers("ext2")

    def test_ext4_journal_is_replayed(self):
        # A newer record 7 sits only in a committed journal transaction
        # (debugfs's journal writer, as a crash after the commit leaves it):
        # recover must replay it without mounting.
        img = self.image("ext4", {"rec.dat": self.data})
        blk = subprocess.run(
            ["debugfs", "-R", "bmap /rec.dat 7", img],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
        new = os.path.join(self.d, "new.blk")
        with open(new, "wb") as f:
            f.write(rc.record(7, 99, 7))
        subprocess.run(
            ["debugfs", "-w", "-f", "-", img],
            input=f"jo\njw -b {blk} {new}\njc\n",
            check=True,
            capture_output=True,
            text=True,
        )
        code, printed, out = self.recover(img)
        self.assertEqual(code, 0, printed)
        self.assertIn("journal replayed", printed)
        self.assertEqual(rc.read_file(out)[7], (99, 7))
        self.assertEqual(rc.read_file(out)[6], (7, 6))

    def test_missing_file_is_empty(self):
        code, printed, out = self.recover(self.image("ext4", {"other": b"x"}))
        self.assertEqual(code, 0, printed)
        self.assertEqual(os.path.getsize(out), 0)
        self.assertIn("not in the recovered file system", printed)

    def test_not_a_file_system(self):
        img = os.path.join(self.d, "img")
        with open(img, "wb") as f:
            f.truncate(1 << 20)
        code, printed, _ = self.recover(img)
        self.assertEqual(code, 2)
        self.assertIn("not repaired", printed)


if __name__ == "__main__":
    unittest.main()
