#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests of pagetrace.py (no VM needed).

python3 -m unittest discover -s tests/vm -p 'test_*.py'
"""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blkevents  # noqa: E402
import pagetrace  # noqa: E402

# Marker at sector 0 completes at 1.000. Pages 10, 12, 14 (sectors 80, 96,
# 112) dirtied 0, 100 and 200 ms after it; written at +1.0, +1.5 and +2.1 s.
TRACE = """\
0.999000000 Q WS 0 8 100 python3
0.999500000 D WS 0 8 100 python3
1.000000000 C WS 0 8 0 [0]
2.000000000 Q W 80 8 55 aipu
2.000100000 D W 80 8 55 aipu
2.500000000 Q W 96 8 55 aipu
2.500200000 D W 96 8 55 aipu
3.100000000 Q W 112 8 55 aipu
3.100300000 D W 112 8 55 aipu
3.200000000 D R 112 8 60 cat
"""
LOG = [(10, 0.0, 0.001), (12, 0.1, 0.101), (14, 0.2, 0.201)]


def run(argv):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = pagetrace.main(argv)
    return rc, out.getvalue()


# The same writes, and an end marker at sector 8 queued at 1.3005 that the
# log says began 300 ms after the marker's return: the offset between the
# two clocks is known to lie in [1.000, 1.0005].
WTRACE = (
    TRACE
    + """\
1.300500000 Q WS 8 8 100 python3
1.300600000 D WS 8 8 100 python3
1.301000000 C WS 8 8 0 [0]
"""
)
FILEFRAG = """\
Filesystem type is: ef53
File size of /mnt/data is 61440 (15 blocks of 4096 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:       10..      14:         10..        14:      5:             last,eof
"""


class Window(unittest.TestCase):
    def check(self, lo, hi, log=LOG, trace=WTRACE, end_before=0.3, **kw):
        events = blkevents.parse_events(trace.splitlines())
        return pagetrace.window(events, log, 0, 8, end_before, lo, hi, **kw)

    def test_every_page_in_its_own_window(self):
        ok, why, rows = self.check(0.9, 2.2)
        self.assertTrue(ok, why)
        self.assertEqual([r[0] for r in rows], [10, 12, 14])
        # Page 14: dirtied at +0.2 (log), queued at 3.1: 1.9 s after.
        self.assertAlmostEqual(rows[2][1], 1.9, places=6)

    def test_late_page_named(self):
        ok, why, _ = self.check(0.9, 1.5)
        self.assertFalse(ok)
        self.assertIn("page 14 late", why)
        self.assertNotIn("page 12", why)

    def test_early_page_named(self):
        ok, why, _ = self.check(1.05, 2.2)
        self.assertFalse(ok)
        self.assertIn("page 10 early", why)

    def test_tolerance_below_lo(self):
        ok, why, _ = self.check(1.05, 2.2, tolerance=0.06)
        self.assertTrue(ok, why)

    def test_unwritten_page(self):
        ok, why, _ = self.check(0.9, 2.2, log=LOG + [(16, 0.3, 0.301)])
        self.assertFalse(ok)
        self.assertIn("page 16", why)

    def test_end_marker_missing_or_inconsistent(self):
        ok, why, _ = self.check(0.9, 2.2, trace=TRACE)
        self.assertFalse(ok)
        self.assertIn("end marker", why)
        ok, why, _ = self.check(0.9, 2.2, end_before=0.4)
        self.assertFalse(ok)
        self.assertIn("do not match", why)

    def test_file_pages_through_filefrag(self):
        extents = blkevents.filefrag_extents(FILEFRAG)
        self.assertEqual(pagetrace.page_sectors(12, extents=extents), [(96, 103)])
        self.assertEqual(pagetrace.page_sectors(9, extents=extents), [])
        moved = (4096, [(10, 110, 5)])
        self.assertEqual(pagetrace.page_sectors(12, extents=moved), [(896, 903)])
        # 1-KiB blocks: page 3 is blocks 12-15; half a page allocated is none.
        self.assertEqual(pagetrace.page_sectors(3, extents=(1024, [(8, 40, 8)])), [(88, 95)])
        self.assertEqual(pagetrace.page_sectors(2, extents=(1024, [(8, 40, 2)])), [])
        ok, why, _ = self.check(0.9, 2.2, extents=extents)
        self.assertTrue(ok, why)
        ok, why, _ = self.check(0.9, 2.2, log=[(9, 0.0, 0.001)], extents=extents)
        self.assertFalse(ok)
        self.assertIn("no blocks allocated", why)


class Analyze(unittest.TestCase):
    def metrics(self, trace=TRACE, log=LOG, **kw):
        events = blkevents.parse_events(trace.splitlines())
        m, table, groups = pagetrace.analyze(events, log, 0, **kw)
        return m, table, groups

    def test_delays_gaps_order(self):
        m, table, _ = self.metrics()
        self.assertEqual(m["pages"], 3)
        self.assertEqual(m["written"], 3)
        self.assertEqual(m["writes"], 3)
        self.assertEqual(m["order_ok"], 1)
        self.assertEqual(m["min_gap_q_us"], 500000)
        self.assertEqual(m["max_gap_d_us"], 600100)
        self.assertEqual(m["min_delay_us"], 1000100)
        self.assertEqual(m["max_delay_us"], 1900300)
        self.assertEqual(m["max_delay_page"], 14)
        self.assertAlmostEqual(table[1][3], 1.5002)

    def test_lead_and_late(self):
        m, _, _ = self.metrics(lead=1, late=1.5)
        self.assertEqual(m["min_gap_q_us"], 600000)
        self.assertEqual(m["late_q"], 1)

    def test_out_of_order_and_missing(self):
        trace = TRACE.replace("2.500000000 Q W 96", "3.500000000 Q W 96").replace(
            "2.500200000 D W 96", "3.500200000 D W 96"
        )
        m, _, _ = self.metrics(trace)
        self.assertEqual(m["order_ok"], 0)
        self.assertEqual(m["order_bad"], 14)
        m, _, _ = self.metrics(TRACE.replace("D W 112", "X W 112"))
        self.assertEqual(m["written"], 2)

    def test_windows_and_bursts(self):
        self.assertEqual(pagetrace.max_in_window([0.0, 0.05, 0.1, 0.3], 0.1), 3)
        self.assertEqual(pagetrace.max_in_window([], 0.1), 0)
        groups = pagetrace.bursts([0.0, 0.1, 1.0, 1.05, 3.0], 0.3)
        self.assertEqual([len(g) for g in groups], [2, 2, 1])

    def test_no_marker(self):
        events = blkevents.parse_events(TRACE.splitlines()[3:])
        with self.assertRaises(ValueError):
            pagetrace.analyze(events, LOG, 0)


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.f = os.path.join(self.dir.name, "f")

    def tearDown(self):
        self.dir.cleanup()

    def test_fill_rewrite_verify_cached(self):
        state = os.path.join(self.dir.name, "state")
        self.assertEqual(run(["fill", self.f, "--pages", "8", "--first-page", "2"])[0], 0)
        rc, out = run(
            [
                "rewrite",
                self.f,
                "--pages",
                "8",
                "--first-page",
                "2",
                "--seconds",
                "0.2",
                "--sleep-ms",
                "0",
                "--state",
                state,
            ]
        )
        self.assertEqual(rc, 0, out)
        self.assertIn("0 read(s) saw a wrong version", out)
        rc, out = run(["verify", self.f, "--first-page", "2", "--state", state])
        self.assertEqual(rc, 0, out)
        with open(state, "a", encoding="utf-8") as f:
            f.write("3 999999\n")
        self.assertEqual(run(["verify", self.f, "--first-page", "2", "--state", state])[0], 1)
        pages = pagetrace.cached_pages(self.f, 2, 8)
        self.assertTrue(set(pages) <= set(range(2, 10)))
        rc, out = run(["cached", self.f])
        self.assertEqual(rc, 0)
        self.assertTrue(out.split()[0].isdigit())
        rc, out = run(["cached", self.f, "--first-page", "2", "--count", "8", "--list"])
        self.assertEqual(rc, 0)
        self.assertEqual([int(x) for x in out.split()], pagetrace.cached_pages(self.f, 2, 8))

    @unittest.skipUnless(os.access("/proc/kpageflags", os.R_OK), "needs root")
    def test_flags_dirty_then_clean(self):
        f = os.path.join(self.dir.name, "flags")
        with open(f, "wb") as fh:
            fh.write(b"x" * (3 * pagetrace.PAGE))
        dirty, _ = pagetrace.dirty_pages(f)
        self.assertEqual(dirty, [0, 1, 2])
        fd = os.open(f, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        dirty, wb = pagetrace.dirty_pages(f)
        self.assertEqual((dirty, wb), ([], []))

    def test_cached_none(self):
        # A hole never read is not in the page cache: the count is 0 and
        # --list prints no index (not the count, which a caller would take
        # for page 0).
        hole = os.path.join(self.dir.name, "hole")
        with open(hole, "wb") as f:
            f.truncate(8 * pagetrace.PAGE)
        self.assertEqual(run(["cached", hole]), (0, "0\n"))
        self.assertEqual(run(["cached", hole, "--list"]), (0, ""))

    def test_dirty_log(self):
        logf = os.path.join(self.dir.name, "log")
        marker = os.path.join(self.dir.name, "m")
        with open(marker, "wb") as f:
            f.write(b"\0" * 8192)
        rc, out = run(
            [
                "dirty",
                self.f,
                "--first-page",
                "4",
                "--count",
                "3",
                "--interval-ms",
                "10",
                "--marker",
                f"{marker}:4096",
                "--log",
                logf,
                "--end-marker",
                f"{marker}:0",
            ]
        )
        if rc == 2:
            self.skipTest("O_DIRECT not supported here (tmpfs?)")
        self.assertEqual(rc, 0, out)
        rows = pagetrace.read_log(logf)
        self.assertEqual([r[0] for r in rows], [4, 6, 8])
        self.assertGreaterEqual(rows[2][1], 0.019)
        self.assertGreaterEqual(pagetrace.read_end_marker(logf), rows[2][2])


if __name__ == "__main__":
    unittest.main()
