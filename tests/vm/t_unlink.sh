#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A file unlinked while aipu writes it is evicted by whoever drops its last
# reference, never by aipu's flusher (issue 14: the flusher must not do the
# final iput() of a file unlinked meanwhile). Linux's own writeback pins an
# inode with I_SYNC, not a reference: the unlinker's iput() then evicts the
# inode (truncating it, freeing its blocks) once the write is submitted. A
# flusher that held a reference instead did that truncation itself, in its
# own thread, holding up every other write queued for its device.
#
# ext4 on a null_blk that serves one request at a time in SLOW_MS ms; a
# file gets NPAGES random pages (one run each), aipu writes them from
# max_age on, a page per request; once some are written the test unlinks
# the file. The trace event ext4_evict_inode names the task that evicted
# it: it must not be aipu's flusher (named "aipu"). With a reference held
# across each page's write (the code before 2026-11-26), the unlink comes
# inside one of those holds unless it falls in the gap between two pages'
# writes (a lock and a list step against a request of SLOW_MS): in the one
# run made on that code (4-ms requests) the flusher evicted the inode.
# SLOW_MS is 20 so that the file's writing (8 s) outlasts the test's
# noticing it even on the debug kernel, where with 4 ms aipu had written
# every page (1.6 s) before the unlink came. Then fsck finds the
# file system clean. (That the tracker goes with the eviction is
# t_lifetime's and t_evict_fs's: the device's count of tracked mappings
# cannot show it here, as the unlink's metadata dirties the block device's
# own mapping meanwhile.)
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

SLOW_MS=20
NPAGES=400
t=/sys/kernel/tracing
inst=$t/instances/aipu-t-unlink

nullb_slow aipu_unlink "$SLOW_MS" 64
dev=$NULLB_SLOW
disk_prepare "$dev"
fs_make ext4 "$dev"
dev_id=$(disk_majmin "$dev")

# The event is enabled once, with tracing off, before anything runs through
# ext4's eviction (enabling it patches ext4's text: see
# scripts/hold-hooks.sh on QEMU TCG), and stays enabled for the boot.
mountpoint -q "$t" || mount -t tracefs none "$t"
[ -d "$inst" ] || mkdir "$inst"
echo 0 >"$inst/tracing_on"
echo 1 >"$inst/events/ext4/ext4_evict_inode/enable" ||
	die "cannot enable ext4:ext4_evict_inode in $inst"
echo >"$inst/trace"
on_exit "echo 0 >$inst/tracing_on"

sync
aipu_load policy=aipu max_age_ms=2000 period_ms=200 handover_ms=0
f=$AIPU_MNT/victim
out=$(dirty_pages "$f" --first-page 0 --count "$NPAGES" --stride 2 --max-ms 60000) ||
	die "dirty.py on $f failed: $out"
log "$out"
ino=$(stat -c %i "$f")
log "file $f is inode $ino; ${SLOW_MS} ms a request, one at a time"
echo 1 >"$inst/tracing_on"
writing() { [ "$(aipu_dev_field "$dev_id" pages_written)" -gt 0 ] 2>/dev/null; }
wait_until 15 writing || die "aipu wrote nothing of $f in 15 s"
written=$(aipu_dev_field "$dev_id" pages_written)
log "aipu has written $written pages of the device; unlinking $f"
start=$(date +%s%N)
rm "$f"
log "rm took $((($(date +%s%N) - start) / 1000000)) ms"
assert_lt "$written" "$NPAGES" "the unlink came while aipu was still writing the file ($written of $NPAGES pages written)"
sleep 1
echo 0 >"$inst/tracing_on"
ev=$(grep -E "ext4_evict_inode: dev [0-9]+,[0-9]+ ino $ino " "$inst/trace" || true)
log "eviction: ${ev:-none traced}"
assert_ne "" "$ev" "ext4_evict_inode traced for inode $ino"
comm=$(awk '{ sub(/-[0-9]+$/, "", $1); print $1; exit }' <<<"$ev")
assert_eq rm "$comm" "the unlinker evicted the inode, not aipu's flusher"
aipu_unload
fs_umount "$AIPU_MNT"
assert_ok "fsck finds the file system clean" fsck.ext4 -fn "$dev"
