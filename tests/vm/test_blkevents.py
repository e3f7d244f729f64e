#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests of blkevents.py and dirty.py (no VM needed).

python3 -m unittest discover -s tests/vm -p 'test_*.py'
"""

import io
import os
import random
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blkevents  # noqa: E402
import dirty  # noqa: E402

# Marker at sector 0 (Q 1.000, C 1.001), end marker at sector 8 (Q 1.010),
# pages at sectors 100+8 and 200+8 written at 4.0 and 4.2 s.
TRACE = """\
1.000000000 Q WS 0 8 100 python3
1.000100000 D WS 0 8 100 python3
1.001000000 C WS 0 8 0 [0]
1.010000000 Q WS 8 8 100 python3
1.011000000 C WS 8 8 0 [0]
4.000000000 Q W 100 8 55 kworker/u4:1
4.000200000 D W 100 8 55 kworker/u4:1
4.001000000 C W 100 8 0 [0]
4.200000000 Q W 200 8 55 kworker/u4:1
4.200200000 D W 200 8 55 kworker/u4:1
4.201000000 C W 200 8 0 [0]
5.000000000 Q R 100 8 60 cat
5.000100000 D R 100 8 60 cat
CPU0 (nullb0):
 Reads Queued:           1,        4KiB	 Writes Queued:           4,       16KiB
"""

DEFAULT_FORMAT = """\
254,0    1        1     0.000000000   412  Q  WS 0 + 8 [dd]
254,0    1        2     0.000012345   412  D  WS 0 + 8 [dd]
254,0    0        3     3.500000000    55  D   W 100 + 8 [kworker/0:1]
"""

FILEFRAG = """\
Filesystem type is: ef53
File size of /tmp/aipu-mnt/data is 520192 (127 blocks of 4096 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..       0:      33024..     33024:      1:
   1:        2..       2:      33026..     33026:      1:      33025:
   2:        4..       5:      33028..     33029:      2:      33027: last,eof
/tmp/aipu-mnt/data: 3 extents found
"""


def events(text=TRACE):
    return blkevents.parse_events(text.splitlines())


class ParseTest(unittest.TestCase):
    def test_custom_format(self):
        ev = events()
        self.assertEqual(len(ev), 13)
        e = ev[5]
        self.assertEqual(
            (e.time, e.action, e.rwbs, e.sector, e.nsect, e.pid, e.comm),
            (4.0, "Q", "W", 100, 8, 55, "kworker/u4:1"),
        )
        self.assertFalse(ev[-1].is_write)

    def test_default_format(self):
        ev = events(DEFAULT_FORMAT)
        self.assertEqual([e.action for e in ev], ["Q", "D", "D"])
        self.assertEqual(ev[2].sector, 100)
        self.assertEqual(ev[2].comm, "kworker/0:1")

    def test_ranges(self):
        self.assertEqual(blkevents.parse_ranges("10-17,0+8,18-20"), [(0, 7), (10, 20)])
        self.assertEqual(blkevents.parse_ranges("5"), [(5, 5)])
        for bad in ("", "a-b", "9-3", "4+0"):
            with self.assertRaises(ValueError):
                blkevents.parse_ranges(bad)

    def test_ranges_from_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("100+8\n200-207\n")
        try:
            self.assertEqual(blkevents.parse_ranges("@" + f.name), [(100, 107), (200, 207)])
        finally:
            os.unlink(f.name)

    def test_filefrag(self):
        self.assertEqual(
            blkevents.filefrag_ranges(FILEFRAG),
            [(264192, 264199), (264208, 264215), (264224, 264239)],
        )
        with self.assertRaises(ValueError):
            blkevents.filefrag_ranges("nothing here")


class WindowTest(unittest.TestCase):
    ranges = [(100, 107), (200, 207)]

    def window(self, lo, hi, **kw):
        return blkevents.check_window(events(), 0, self.ranges, lo, hi, **kw)

    def test_marker_prefers_completion(self):
        self.assertEqual(blkevents.marker_time(events(), 0), (1.001, "C"))
        self.assertEqual(blkevents.marker_time(events(), 0, "Q"), (1.0, "Q"))
        self.assertEqual(blkevents.marker_time(events(), 4), (1.001, "C"))
        self.assertEqual(blkevents.marker_time(events(), 50), (None, None))

    def test_inside(self):
        ok, why = self.window(2.9, 3.3)
        self.assertTrue(ok, why)
        self.assertIn("4 Q/D events", why)

    def test_too_early(self):
        ok, why = self.window(3.1, 4.0)
        self.assertFalse(ok)
        self.assertIn("before t0+3.1", why)

    def test_tolerance(self):
        ok, why = self.window(3.0, 4.0, tolerance=0.004)
        self.assertTrue(ok, why)

    def test_too_late(self):
        ok, why = self.window(2.0, 3.1)
        self.assertFalse(ok)
        self.assertIn("after t0+3.1", why)

    def test_end_marker(self):
        # The last D (4.2002) is 3.1902 s after the end marker's Q (1.010).
        ok, why = self.window(2.9, 3.185, end_marker_sector=8)
        self.assertFalse(ok, why)
        ok, why = self.window(2.9, 3.2, end_marker_sector=8)
        self.assertTrue(ok, why)

    def test_missing_sectors(self):
        ranges = self.ranges + [(300, 307)]
        ok, why = blkevents.check_window(events(), 0, ranges, 2.0, 4.0)
        self.assertFalse(ok)
        self.assertIn("8 sector(s) never written: 300-307", why)
        ok, why = blkevents.check_window(events(), 0, ranges, 2.0, 4.0, require_all=False)
        self.assertTrue(ok, why)

    def test_no_writes(self):
        ok, why = blkevents.check_window(events(), 0, [(900, 907)], 0, 10)
        self.assertFalse(ok)
        self.assertIn("no write", why)

    def test_no_marker(self):
        ok, why = blkevents.check_window(events(), 50, self.ranges, 0, 10)
        self.assertFalse(ok)
        self.assertIn("marker", why)

    def test_reads_ignored(self):
        ok, why = self.window(2.9, 3.3, actions="QDC")
        self.assertTrue(ok, why)

    def test_uncovered_partial(self):
        ev = events("1.0 D W 100 4 1 x\n")
        self.assertEqual(blkevents.uncovered(ev, [(100, 107)]), [(104, 107)])
        ev = events("1.0 D W 96 16 1 x\n")
        self.assertEqual(blkevents.uncovered(ev, [(100, 107)]), [])


class CliTest(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(TRACE)

    def tearDown(self):
        os.unlink(self.path)

    def run_cli(self, *args):
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = blkevents.main(list(args))
        return rc, buf.getvalue()

    def test_window_ok(self):
        rc, out = self.run_cli(
            "window",
            "--trace",
            self.path,
            "--marker-sector",
            "0",
            "--sectors",
            "100+8,200+8",
            "--lo",
            "2.9",
            "--hi",
            "3.3",
        )
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.startswith("ok: "))
        self.assertEqual(len(out.splitlines()), 1)

    def test_window_fail(self):
        rc, out = self.run_cli(
            "window",
            "--trace",
            self.path,
            "--marker-sector",
            "0",
            "--sectors",
            "100+8",
            "--lo",
            "3.5",
            "--hi",
            "9",
        )
        self.assertEqual(rc, 1)
        self.assertTrue(out.startswith("FAILED: "))

    def test_bad_input(self):
        rc, _ = self.run_cli(
            "window",
            "--trace",
            self.path,
            "--marker-sector",
            "0",
            "--sectors",
            "x",
            "--lo",
            "0",
            "--hi",
            "1",
        )
        self.assertEqual(rc, 2)

    def test_marker_and_writes(self):
        rc, out = self.run_cli("marker", "--trace", self.path, "--marker-sector", "0")
        self.assertEqual((rc, out.split()), (0, ["1.001000000", "C"]))
        rc, out = self.run_cli(
            "writes",
            "--trace",
            self.path,
            "--sectors",
            "200+8",
            "--marker-sector",
            "0",
        )
        self.assertEqual(rc, 0)
        self.assertEqual(out.split()[:4], ["3.199200", "D", "W", "200"])

    def test_json(self):
        rc, out = self.run_cli("json", "--trace", self.path)
        self.assertEqual(rc, 0)
        self.assertIn('"action": "Q"', out)


class DirtyTest(unittest.TestCase):
    def test_writes_pages(self):
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "f")
            buf = io.StringIO()
            with redirect_stdout(buf):
                rc = dirty.main([target, "--first-page", "1", "--count", "3", "--stride", "2"])
            self.assertEqual(rc, 0)
            with open(target, "rb") as f:
                data = f.read()
            self.assertEqual(len(data), 6 * 4096)
            for page in range(6):
                want = 0xA5 if page in (1, 3, 5) else 0
                self.assertEqual(data[page * 4096], want, page)


class Index(unittest.TestCase):
    def test_same_events_as_a_scan(self):
        # Random extents (single sectors to 1 MiB merges), kinds and
        # directions: the index finds what the full scan finds, for single
        # and split ranges, markers left out.
        rng = random.Random(7)
        kinds = ["Q", "G", "D", "C"]
        events = [
            blkevents.Event(
                rng.uniform(0, 10),
                rng.choice(kinds),
                rng.choice(["W", "WS", "R", "WD"]),
                rng.randrange(0, 20000),
                rng.choice([1, 8, 8, 8, 16, 256, 2048]),
            )
            for _ in range(3000)
        ]
        events.sort(key=lambda e: e.time)
        markers = [(0, 0), (8, 8)]
        index = blkevents.SectorIndex(events, "QD", markers)
        for _ in range(300):
            a = rng.randrange(0, 20100)
            ranges = [(a, a + 7)] if rng.random() < 0.7 else [(a, a + 1), (a + 6, a + 7)]
            scan = [
                e
                for e in events
                if e.action in "QD"
                and e.is_write
                and any(e.overlaps(a, b) for a, b in ranges)
                and not any(e.overlaps(x, y) for x, y in markers)
            ]
            self.assertEqual(index.touching(ranges), scan, ranges)


if __name__ == "__main__":
    unittest.main()
