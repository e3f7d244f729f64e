#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side tests of tests/vm/dmesg-bad.ere, the kernel-log lines every VM
test, crash trial and fstests part fails on: grep -E reads it as they do.

python3 -m unittest discover -s tests/vm -p 'test_*.py'
"""

import os
import subprocess
import unittest

ERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dmesg-bad.ere")

# Lines the kernels print when something is wrong: the RCU stall as CI's log
# had it, the others in the kernels' formats (addresses and numbers made up).
BAD = [
    "[   23.541504] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "[   40.100000] rcu: INFO: rcu_sched self-detected stall on CPU",
    "[    5.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[    5.000000] WARNING: CPU: 1 PID: 417 at mm/page-writeback.c:2470 folio_mark_dirty+0x5e/0x70",
    "[   60.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [kworker/u4:3:88]",
    "[  130.000000] INFO: task umount:912 blocked for more than 120 seconds.",
    "[    9.000000] general protection fault, probably for non-canonical address",
    "[    9.000000] BUG: KASAN: slab-use-after-free in aipu_mapping_kill+0x3c/0x120 [aipu]",
    "[    9.000000] Call Trace:",
    "[    9.000000] VFS: Busy inodes after unmount of vdb (ext4)",
    "[    9.000000] kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
    "[    9.000000] WARNING: possible circular locking dependency detected",
]

# Lines of a healthy boot that an earlier pattern (rcu.*stall) took for a
# complaint: the guests' own command line (scripts/vm.sh) and RCU's echo.
GOOD = [
    "[    0.000000] Command line: console=ttyS0 slab_nomerge rcupdate.rcu_cpu_stall_timeout=60 loglevel=5",
    "[    0.239480] \tRCU CPU stall warnings timeout set to 60 (rcu_cpu_stall_timeout).",
    "[    5.307758] Invalid ELF header magic: != ELF",
    '[    2.219091] Unstable clock detected, switching default tracing clock to "global"',
    "[   48.242340] aipu: loading out-of-tree module taints kernel.",
    "[    1.000000] Run /init as init process",
]


def matches(line):
    with open(ERE, encoding="utf-8") as f:
        pattern = f.read().strip()
    r = subprocess.run(
        ["grep", "-E", pattern], input=line + "\n", capture_output=True, text=True, check=False
    )
    if r.returncode > 1:
        raise RuntimeError(f"grep failed on {ERE}: {r.stderr}")
    return r.returncode == 0


class DmesgBad(unittest.TestCase):
    def test_one_line(self):
        with open(ERE, encoding="utf-8") as f:
            self.assertEqual(len(f.read().strip().splitlines()), 1, "the pattern is one line")

    def test_complaints_match(self):
        for line in BAD:
            with self.subTest(line=line):
                self.assertTrue(matches(line), f"not caught: {line}")

    def test_healthy_lines_do_not(self):
        for line in GOOD:
            with self.subTest(line=line):
                self.assertFalse(matches(line), f"taken for a complaint: {line}")


if __name__ == "__main__":
    unittest.main()
