#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# In a test guest: hold every point aipu hooks already hooked, for the rest
# of the boot, so that aipu's insmod and rmmod patch no kernel text.
#
#   scripts/hold-hooks.sh
#
# Why: under QEMU's TCG (Debian 12's QEMU, 2 vCPUs) a guest can die with
# "Oops: int3" when kernel text is patched while another vCPU runs through
# it (tests/vm/repro_tcg_int3.sh shows it without aipu). On real hardware
# this patching is routine; holding the hooks only keeps the emulator's bug
# out of the tests, the demo and the benchmarks.
#
# What patches text when aipu loads and unloads, and how it is avoided:
# - its tracepoint probes: a tracepoint's static key is switched on its
#   first probe (0 -> 1) and its static call retargeted between one probe
#   and two (1 <-> 2); from two probes on, adding or removing one changes
#   only a list (kernel/tracepoint.c). So each trace event aipu uses is
#   enabled twice, in the top-level ftrace buffer and in the instance
#   "aipu-hold", both with tracing off: aipu then goes 2 -> 3 -> 2;
# - its kprobe on clear_inode (an ftrace site on Debian's
#   kernels): arming it patches the call site. A kprobe event on the same
#   address, enabled in the instance, keeps the site armed, and aipu's
#   kprobe joins it as an aggregate: no text changes.
# And what the tests' blktrace switches: its start registers probes on the
# block tracepoints (block_bio_queue in submit_bio_noacct_nocheck(), the
# request events in blk-mq) and its end removes them, patching the text
# that every writer runs through. A 6.1 guest of make check hung on
# 2026-11-28 with both vCPUs stuck 100 s and more at the block_bio_queue
# jump label (submit_bio_noacct_nocheck+0xd2), from aipu's writeback worker
# and from jbd2, while a fio wrote in O_DIRECT (t_cgroup_iocost): most
# likely the same emulator bug (an inference, not proven: the label was
# off in memory although the test's blktrace should still have been
# running). So every block event is held the same way, tracing off, in two
# instances (not the top-level buffer, which bench/scale's function_graph
# uses): blktrace then goes 2 -> 3 -> 2.
# Idempotent. Exit status 1, with a sentence, if a hook could not be held.
set -euo pipefail

t=/sys/kernel/tracing
inst=$t/instances/aipu-hold
blk=$t/instances/aipu-hold-block
prog=hold-hooks
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

mountpoint -q "$t" || mount -t tracefs none "$t" 2>/dev/null || die "cannot mount tracefs on $t"
for d in "$inst" "$blk"; do
	[ -d "$d" ] || mkdir "$d" || die "cannot make the trace instance $d"
done
for d in "$t" "$inst" "$blk"; do
	echo 0 >"$d/tracing_on" || die "cannot turn tracing off in $d"
done
for d in "$t" "$inst"; do
	for e in writeback_dirty_folio writeback_mark_inode_dirty; do
		echo 1 >"$d/events/writeback/$e/enable" || die "cannot enable trace event $e in $d"
	done
done
for d in "$inst" "$blk"; do
	echo 1 >"$d/events/block/enable" || die "cannot enable the block trace events in $d"
done
if [ ! -d "$t/events/aipu_hold/evict" ]; then
	echo 'p:aipu_hold/evict clear_inode' >>"$t/kprobe_events" ||
		die "cannot add a kprobe event on clear_inode"
fi
echo 1 >"$inst/events/aipu_hold/evict/enable" || die "cannot enable the kprobe event aipu_hold/evict"
