#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests of sysfs_fuzz.py's model of the knobs (no VM needed).

python3 -m unittest discover -s tests/vm -p 'test_*.py'
"""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sysfs_fuzz as fz  # noqa: E402


class NumberModel(unittest.TestCase):
    def test_taken(self):
        self.assertEqual(fz.number_value("max_age_ms", b"3000"), 3000)
        self.assertEqual(fz.number_value("max_age_ms", b"3000\n"), 3000)
        self.assertEqual(fz.number_value("max_age_ms", b"+3000"), 3000)
        self.assertEqual(fz.number_value("max_age_ms", b"0003000"), 3000)
        self.assertEqual(fz.number_value("pace", b"0"), 0)

    def test_refused(self):
        for data in (
            b"",
            b"\n",
            b"99",
            b"3600001",
            b"-1",
            b"+",
            b"3000\n\n",
            b" 3000",
            b"3000 ",
            b"0x10",
            b"1e3",
            b"\xff",
            str(2**32 + 3000).encode(),
        ):
            self.assertIsNone(fz.number_value("max_age_ms", data), data)

    def test_c_string(self):
        self.assertEqual(fz.number_value("max_age_ms", b"3000\0junk"), 3000)
        self.assertIsNone(fz.number_value("max_age_ms", b"\0" + b"3000"))
        self.assertEqual(fz.choice_value("policy", b"pu\n\0x"), "pu")

    def test_cut_to_a_page(self):
        self.assertEqual(fz.number_value("max_batch", b"0" * fz.PAGE + b"5"), 0)
        self.assertEqual(fz.number_value("max_batch", b"0" * (fz.PAGE - 2) + b"5\n"), 5)
        self.assertIsNone(fz.number_value("max_age_ms", b"0" * fz.PAGE + b"5"))


class ChoiceModel(unittest.TestCase):
    def test_names(self):
        self.assertEqual(fz.choice_value("policy", b"aipu"), "aipu")
        self.assertEqual(fz.choice_value("policy", b"stage\n"), "stage")
        for data in (b"aipu\n\n", b" aipu", b"[aipu]", b"AIPU", b"aip", b"", b"\n"):
            self.assertIsNone(fz.choice_value("policy", data), data)

    def test_chosen(self):
        self.assertEqual(fz.chosen(b"kernel [aipu] pu stage\n", "policy"), "aipu")
        self.assertEqual(fz.chosen(b"[update] purge\n", "write_alloc"), "update")
        for text in (
            b"kernel aipu pu stage\n",
            b"[kernel] [aipu] pu stage\n",
            b"[kernel] aipu pu\n",
            b"[kernel] aipu pu stage",
            b"[update] purge\n\n",
        ):
            self.assertIsNone(fz.chosen(text, "policy" if b"k" in text else "write_alloc"), text)


class Reads(unittest.TestCase):
    def test_read_ok(self):
        self.assertTrue(fz.read_ok("period_ms", b"1000\n"))
        self.assertFalse(fz.read_ok("period_ms", b"5\n"))
        self.assertFalse(fz.read_ok("period_ms", b"1000"))
        self.assertTrue(fz.read_ok("stat", b"pages_dirtied 3\nflusher_runs 0\n"))
        self.assertFalse(fz.read_ok("stat", b"pages_dirtied -3\n"))
        self.assertTrue(fz.read_ok("burst_hist", b"0 0 5\n1 1 2\n1024 - 0\n"))

    def test_address(self):
        self.assertIsNotNone(fz.ADDRESS.search(b"at ffff888003a1b2c0\n"))
        self.assertIsNone(fz.ADDRESS.search(b"pages_dirtied 18446744073709551615\n"))

    def test_storm_values_stay_in_bounds(self):
        rng = random.Random(3)
        for _ in range(500):
            name, data = fz.random_write(rng)
            self.assertIn(name, list(fz.NUMBERS) + list(fz.CHOICES))
            self.assertIsInstance(data, bytes)


if __name__ == "__main__":
    unittest.main()
