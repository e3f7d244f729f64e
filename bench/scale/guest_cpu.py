#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The QEMU guest's CPU time at the benchmark's marks, read on the host.

    scripts/vm.sh ... | guest_cpu.py OUT MATCH

Copies its input (the VM's console) to stdout.  For every line holding
"@@aipu-scale-mark WHAT", it finds the QEMU process whose command line
contains MATCH (the run's output directory, unique to it) and appends to
OUT one line

    WHAT host_wall_s qemu_run_s qemu_wait_s

host_wall_s is the host's CLOCK_MONOTONIC; qemu_run_s the CPU time of all
QEMU's threads so far (vCPUs, main loop, I/O: virtme-ng does not name
them), qemu_wait_s the time they spent runnable but waiting for a host
CPU (/proc/PID/task/*/schedstat, nanoseconds).

Why: the guest's clock runs with the host's, so when the host is busy and
QEMU's vCPU thread waits for a CPU, a timed write in the guest takes
longer by that wait, whatever the guest did.  QEMU's CPU time
between two marks is the work the guest did (TCG emulating it), nearly
independent of the host's other load.
"""

import os
import sys
import time

MARK = "@@aipu-scale-mark "


def find_qemu(match):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmd.split(" ", 1)[0] and match in cmd:
            return pid
    return None


def cpu_times(pid):
    run = wait = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                r, w, _ = (int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
        run += r
        wait += w
    return run / 1e9, wait / 1e9


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, match = argv
    pid = None
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        i = line.find(MARK)
        if i < 0:
            continue
        what = line[i + len(MARK) :].strip()
        wall = time.monotonic()
        if pid is None or not os.path.exists(f"/proc/{pid}"):
            pid = find_qemu(match)
        if pid is None:
            continue
        try:
            run, wait = cpu_times(pid)
        except OSError:
            continue
        with open(out, "a", encoding="utf-8") as f:
            f.write(f"{what} {wall:.6f} {run:.6f} {wait:.6f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
