#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A cgroup starved by blk-iocost must not break the bound of another
# cgroup's pages on the same device: t_cgroup_throttle with
# AIPU_CG_THROTTLE=iocost (its header says how). iocost puts the task that
# issues the starved cgroup's writes to sleep, so this holds only because
# aipu writes each cgroup's files from a worker of that cgroup's writeback
# context (src/wbq.c), not from the device's one flusher.
set -euo pipefail
AIPU_CG_THROTTLE=iocost exec bash "$(dirname "${BASH_SOURCE[0]}")/t_cgroup_throttle.sh"
