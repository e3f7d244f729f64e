#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests of tests/crash/records.py (no VM needed).

python3 -m unittest discover -s tests/vm -p 'test_*.py'
"""

import json
import os
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


if __name__ == "__main__":
    unittest.main()
