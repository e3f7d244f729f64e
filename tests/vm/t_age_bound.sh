#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The age bound: with policy=aipu max_age_ms=3000 period_ms=1000, a page
# dirtied at t reaches the disk in [t+3.0, t+4.5] s: not before its age
# passed 3 s (one jiffy of slack for clock granularity), and within one
# period (plus 0.5 s for the write itself) after.
#
# Each page's t is its own: pagetrace.py times every page's write(2) from a
# 4 KiB O_DIRECT "marker" write just before the pages are dirtied, and an
# "end marker" just after pins the offset between that clock and blktrace's
# (Q: queued, D: dispatched to the driver). pagetrace.py window checks every
# Q and D of each page lies within [t+3.0-jiffy, t+4.5] and that every page
# was written; how long the dirtying took (slow on the debug kernel) does
# not widen the window.
#
# Two cases: 64 non-adjacent pages of the raw null_blk device, and 64
# non-adjacent pages of a new file on ext4 on it.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

LO=3.0
HI=4.5
WAIT=7
NPAGES=64
tol=$(jiffy_s)

dev=$(disk_get)
disk_prepare "$dev"

sync
aipu_load policy=aipu max_age_ms=3000 period_ms=1000 handover_ms=0
assert_eq aipu "$(aipu_policy)" "policy is aipu"

# check_pages NAME TRACE LOG MARKER_SECTOR END_SECTOR RANGES [--filefrag F]
check_pages() {
	local name=$1 trace=$2 plog=$3 m=$4 e=$5 ranges=$6 why rc=0
	shift 6
	why=$(pagetrace window --trace "$trace" --log "$plog" --marker-sector "$m" \
		--end-marker-sector "$e" --lo "$LO" --hi "$HI" --tolerance "$tol" "$@") || rc=$?
	if [ "$rc" -eq 0 ]; then pass "$name: $why"; else
		fail "$name: $why"
		blkevents writes --trace "$trace" --marker-sector "$m" --sectors "$ranges" --actions QD |
			head -n 20 | sed 's/^/#   t0+/'
	fi
}

# 1. Raw block device: marker at sector 0, end marker at sector 8, pages
#    2048, 2050, ... (sectors 16384 + 16 i).
written0=$(aipu_stat pages_written)
trace=$TEST_TMP/raw.txt
blktrace_start "$dev" raw
out=$(pagetrace dirty "$dev" --first-page 2048 --count "$NPAGES" --stride 2 \
	--marker "$dev:0" --end-marker "$dev:4096" --log "$TEST_TMP/raw.log") ||
	die "pagetrace dirty failed: $out"
log "$out"
sleep "$WAIT"
blktrace_stop "$trace"
aipu_dump
check_pages "raw $dev, $NPAGES pages" "$trace" "$TEST_TMP/raw.log" 0 8 "$(page_ranges 2048 "$NPAGES" 2)"
assert_ge "$(($(aipu_stat pages_written) - written0))" "$NPAGES" "stat pages_written grew by $NPAGES or more"

# 2. A new file on ext4 (delayed allocation: the blocks are chosen when aipu
#    writes the pages; filefrag tells which afterwards). The markers go to a
#    small file written and synced beforehand, so its blocks are fixed.
fs_make ext4 "$dev"
mk=$AIPU_MNT/marker
msec=$(marker_sector "$mk" 2) || die "cannot find the marker file's sectors"
log "marker file at sectors $msec (+8 for the end marker)"
sync
trace=$TEST_TMP/ext4.txt
blktrace_start "$dev" ext4
out=$(pagetrace dirty "$AIPU_MNT/data" --first-page 0 --count "$NPAGES" --stride 2 \
	--marker "$mk:0" --end-marker "$mk:4096" --log "$TEST_TMP/ext4.log") ||
	die "pagetrace dirty failed: $out"
log "$out"
sleep "$WAIT"
blktrace_stop "$trace"
aipu_dump
frag=$TEST_TMP/data.filefrag
if filefrag -v "$AIPU_MNT/data" >"$frag" && ranges=$(blkevents sectors --filefrag "$frag" 2>&1); then
	log "data file at sectors $ranges"
	nsect=$(echo "$ranges" | tr ',' '\n' | awk -F- '{ s += $2 - $1 + 1 } END { print s }')
	assert_eq $((NPAGES * 8)) "$nsect" "the file has $NPAGES pages allocated"
	check_pages "ext4 file, $NPAGES pages" "$trace" "$TEST_TMP/ext4.log" "$msec" $((msec + 8)) \
		"$ranges" --filefrag "$frag"
else
	fail "ext4 file: no blocks allocated $WAIT s after the writes (never written back?): $ranges"
fi
