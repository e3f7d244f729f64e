# SPDX-License-Identifier: GPL-2.0
"""Host tests of churn.py: every operation keeps the real copy equal to its
shadow, a restarted worker resumes on the same files, and a broken mirror
is seen (so the stress test's checksum comparison can fail)."""

import collections
import os
import random
import tempfile
import unittest

import churn


def contents(d):
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


def o_direct_works(d):
    """tmpfs and some overlays refuse O_DIRECT; the test then needs another dir."""
    path = os.path.join(d, ".odirect")
    try:
        with open(path, "wb") as f:
            f.write(b"\0" * churn.PAGE)
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
        os.close(fd)
        return True
    except OSError:
        return False
    finally:
        if os.path.exists(path):
            os.unlink(path)


class ChurnTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(dir=os.environ.get("AIPU_TEST_DIR"))
        if not o_direct_works(self.tmp.name):
            self.skipTest(f"{self.tmp.name} does not support O_DIRECT (set AIPU_TEST_DIR)")
        self.real = os.path.join(self.tmp.name, "real")
        self.shadow = os.path.join(self.tmp.name, "shadow")
        os.mkdir(self.real)
        os.mkdir(self.shadow)

    def tearDown(self):
        self.tmp.cleanup()

    def churn_files(self, seed, steps):
        counts = collections.Counter()
        files = churn.Files(self.real, self.shadow, 3, random.Random(seed))
        try:
            for _ in range(steps):
                files.step(counts)
        finally:
            files.close()
        return counts

    def test_files_mirror_every_operation(self):
        counts = self.churn_files(1, 600)
        for kind in ("buffered", "mmap", "direct", "fsync", "rename", "recreate"):
            self.assertGreater(counts[kind], 0, kind)
        self.assertEqual(contents(self.real), contents(self.shadow))
        self.assertEqual(sorted(os.listdir(self.real)), ["f0", "f1", "f2"])

    def test_restart_resumes_on_the_same_files(self):
        self.churn_files(2, 100)
        before = contents(self.shadow)
        files = churn.Files(self.real, self.shadow, 3, random.Random(3))
        files.close()
        self.assertEqual(contents(self.shadow), before)
        self.churn_files(4, 100)
        self.assertEqual(contents(self.real), contents(self.shadow))

    def test_a_broken_mirror_is_seen(self):
        self.churn_files(5, 50)
        with open(os.path.join(self.real, "f1"), "r+b") as f:
            f.write(b"x")
        self.assertNotEqual(contents(self.real), contents(self.shadow))

    def test_device_region(self):
        dev = os.path.join(self.real, "disk")
        with open(dev, "wb") as f:
            f.truncate(64 * churn.PAGE)
        counts = collections.Counter()
        d = churn.Device(dev, self.shadow, 16, 32, random.Random(6))
        try:
            for _ in range(300):
                d.step(counts)
        finally:
            d.close()
        self.assertGreater(counts["direct"], 0)
        with open(dev, "rb") as f:
            data = f.read()
        with open(os.path.join(self.shadow, "disk.16"), "rb") as f:
            shadow = f.read()
        self.assertEqual(len(data), 64 * churn.PAGE, "a device region never grows")
        self.assertEqual(data[16 * churn.PAGE : 48 * churn.PAGE], shadow)
        self.assertEqual(data[: 16 * churn.PAGE], bytes(16 * churn.PAGE))
        self.assertEqual(data[48 * churn.PAGE :], bytes(16 * churn.PAGE))


if __name__ == "__main__":
    unittest.main()
