#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# An umount that takes long (issue 14: the flusher must not "keep rewriting
# every run of a file system that is being unmounted"). While umount holds
# the super block's s_umount, aipu cannot pin its inodes; it used to put
# every due run of that file system back, each period, for as long as the
# umount lasted: work (and allocations) proportional to the file system's
# runs, every period. Now a run that is late and cannot be pinned for that
# reason parks its whole file (its whole-file run at the device's oldest
# time, counted in fallbacks; its runs freed), so the file is put back once
# a period, not run by run.
#
# ext4 on a null_blk that serves one request at a time in SLOW_MS ms; a
# file gets NPAGES random pages (one run each) under a long max_age, which
# then drops to 1 s; umount starts at once and spends NPAGES * SLOW_MS
# writing them. Once aipu has parked the file,
# pages_retried must grow by less than NPAGES / 4 over WINDOW_S while the
# umount is still running (the old code: NPAGES every period, 3,300 in
# 2 s). Then: the umount finishes, at most the block device's own mapping is
# tracked on it, and the file reads back as written after a remount, on a
# clean file system.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

SLOW_MS=50
NPAGES=300
WINDOW_S=2

nullb_slow aipu_umount "$SLOW_MS" 64
dev=$NULLB_SLOW
disk_prepare "$dev"
fs_make ext4 "$dev"
dev_id=$(disk_majmin "$dev")
sync
# Set up under a 10-minute max_age, so that aipu writes none of the file
# before the umount however long the dirtying takes (3.5 s on the debug
# kernel, where with max_age 1 s aipu wrote half the file first and the
# umount was over before the window); then 1 s, so it is late meanwhile.
aipu_load policy=aipu max_age_ms=600000 period_ms=200 handover_ms=0
f=$AIPU_MNT/data
out=$(dirty_pages "$f" --first-page 0 --count "$NPAGES" --stride 2 --max-ms 60000) ||
	die "dirty.py on $f failed: $out"
log "$out"
sum=$(md5sum <"$f")
assert_eq 0 "$(aipu_dev_field "$dev_id" pages_written)" "aipu wrote nothing of the file during the set-up"
fb0=$(aipu_stat fallbacks)
aipu_set max_age_ms 1000
umount "$AIPU_MNT" &
upid=$!
log "umount started: it writes $NPAGES pages at ${SLOW_MS} ms each"
parked() { [ "$(aipu_stat fallbacks)" -gt "$fb0" ]; }
# The debug kernel (AIPU_TIME_SCALE 4) parked it about 10 s after the
# umount began, having written 90 of the pages first.
wait_until $((10 * $(time_scale))) parked && rc=0 || rc=$?
assert_eq 0 "$rc" "aipu parked the file (fallbacks $fb0 -> $(aipu_stat fallbacks))"
sleep 0.5 # the pass that parked it is over
r0=$(aipu_stat pages_retried)
sleep "$WINDOW_S"
r1=$(aipu_stat pages_retried)
running=0
kill -0 "$upid" 2>/dev/null && running=1
log "pages_retried $r0 -> $r1 over $WINDOW_S s; umount still running: $running; $(grep "^$dev_id " "$AIPU_SYSFS/devices" || echo "device $dev_id: no queue")"
assert_eq 1 "$running" "the umount was still writing during the window"
assert_lt $((r1 - r0)) $((NPAGES / 4)) "while the umount lasts aipu does not put the file's runs back every period"
umount_done() { ! kill -0 "$upid" 2>/dev/null; }
wait_until 60 umount_done || die "umount did not finish in 60 s"
wait "$upid" || die "umount failed"
maps=$(aipu_dev_field "$dev_id" mappings_tracked)
# The block device's own mapping may still be: it outlives the umount.
assert_le "${maps:-0}" 1 "after the umount at most the block device's mapping is tracked on it"
assert_ok "fsck finds the file system clean" fsck.ext4 -fn "$dev"
mount -t ext4 "$dev" "$AIPU_MNT" || die "remount of $dev failed"
assert_eq "$sum" "$(md5sum <"$f")" "the file reads back as written after the remount"
aipu_unload
