#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# One slow device must not break the bound on another (per-device flushing).
#
# The slow device is a null_blk made through configfs that serves one
# request at a time, each in 50 ms (20 IOPS, queue depth 1): a flusher that
# issues its backlog blocks in the block layer for every request. It gets
# SLOW_PAGES random pages (30 s of work), dirtied first. Once those are due
# and being issued, FAST_PAGES random pages are dirtied on the fast device
# (the test disk) between two O_DIRECT markers; with max_age 3 s and period
# 1 s each must reach the fast device within [t0+3, t0+4.5] s (blktrace),
# while the slow device still holds dirty pages older than the bound
# (/sys/kernel/aipu/devices), so the check is made while the stall is real.
# One flusher for every device would reach the fast pages only after the
# slow backlog, about 30 s late. Then the slow device is removed: once it
# has tracked nothing for 30 periods and 10 s its queue is freed.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

LO=3.0
HI=4.5
SLOW_PAGES=600
SLOW_MS=50
FAST_PAGES=200
tol=$(jiffy_s)

fast=$(disk_get)
disk_prepare "$fast"

# The slow null_blk: memory backed, timer completion, one tag.
nullb_slow aipu_slow "$SLOW_MS"
slow=$NULLB_SLOW
disk_prepare "$slow"
# Held open: the last close of a block device writes its dirty pages itself
# (600 requests of 50 ms), which would leave aipu nothing to write.
exec 8<"$slow"
slow_id=$(disk_majmin "$slow")
fast_id=$(disk_majmin "$fast")
log "slow device $slow ($slow_id): ${SLOW_MS} ms a request, depth 1; fast device $fast ($fast_id)"


sync
aipu_load policy=aipu max_age_ms=3000 period_ms=1000 handover_ms=0

# The backlog's dirtying only has to end before the fast device's (3.4 s on
# the debug kernel); the fast device's keeps its 2 s, which bound its window.
out=$(dirty_pages "$slow" --first-page 0 --count "$SLOW_PAGES" --stride 2 \
	--max-ms $((2000 * $(time_scale)))) ||
	die "dirty.py on $slow failed: $out"
log "slow: $out"
# Due at 3 s; by 4.5 s its flusher is blocked issuing them, 20 a second.
sleep 4.5
written=$(aipu_dev_field "$slow_id" pages_written)
log "slow device 4.5 s after its dirtying: $(grep "^$slow_id " "$AIPU_SYSFS/devices")"
assert_gt "${written:-0}" 0 "the slow device's backlog is being written when the fast device's pages are dirtied"

trace=$TEST_TMP/fast.txt
blktrace_start "$fast" fast
out=$(dirty_pages "$fast" --first-page 2048 --count "$FAST_PAGES" --stride 2 \
	--marker "$fast:0" --end-marker "$fast:4096" --max-ms 2000) || die "dirty.py on $fast failed: $out"
log "fast: $out"
sleep 6
# The stall's evidence, read now, before blktrace_stop: its blkparse takes
# tens of seconds on the debug kernel, by which time the slow backlog may
# have drained.
tracked=$(aipu_dev_field "$slow_id" pages_tracked)
oldest=$(aipu_dev_field "$slow_id" oldest_age_ms)
fast_late=$(aipu_dev_field "$fast_id" pages_late)
blktrace_stop "$trace"
aipu_dump
sed 's/^/# devices: /' "$AIPU_SYSFS/devices"

rc=0
why=$(blkevents window --trace "$trace" --marker-sector 0 --end-marker-sector 8 \
	--sectors "$(page_ranges 2048 "$FAST_PAGES" 2)" --lo "$LO" --hi "$HI" --tolerance "$tol") || rc=$?
if [ "$rc" -eq 0 ]; then
	pass "fast device, $FAST_PAGES pages, while the slow one is stalled: $why"
else
	fail "fast device, $FAST_PAGES pages, while the slow one is stalled: $why"
fi

# The stall was real: the slow device still held pages past its bound.
assert_gt "${tracked:-0}" 0 "the slow device still had dirty pages tracked after the fast device's window"
assert_ge "${oldest:-0}" 8000 "the slow device's oldest page was older than its bound (stalled, not idle)"
assert_eq 0 "${fast_late:-missing}" "no page of the fast device was late"

# Drain the slow device before rmmod (its flusher's pass must end). A page
# dirtied first makes it active now: on the debug kernel the trace's
# parsing above outlasts the 30 idle periods after which aipu reaps a
# device that tracks nothing, and the slow device must still be counted
# when it is removed.
dirty_pages "$slow" --first-page 0 --count 1 --max-ms 60000 >/dev/null || die "dirty.py on $slow failed"
log "draining the slow device: $(aipu_dev_field "$slow_id" pages_tracked) pages"
sync

# A device gone and idle for 30 periods and 10 s loses its queue.
exec 8<&-
nullb_remove "$NULLB_SLOW_CFG"
aipu_set period_ms 100
n0=$(aipu_stat devices)
w0=$(aipu_stat pages_written)
for _ in $(seq 300); do
	grep -q "^$slow_id " "$AIPU_SYSFS/devices" || break
	sleep 0.1
done
sed 's/^/# devices: /' "$AIPU_SYSFS/devices"
assert_fails "the removed slow device's queue was freed once idle" grep -q "^$slow_id " "$AIPU_SYSFS/devices"
assert_lt "$(aipu_stat devices)" "$n0" "stat devices went down"
assert_ge "$(aipu_stat pages_written)" "$w0" "stat pages_written did not go down (a reaped device's counters are kept)"
aipu_unload
