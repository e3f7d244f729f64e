#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The handover outlasts its clock while Linux still holds data dirtied
# before the load. aipu never saw those pages dirtied: Linux's periodic
# writeback must stay on until it has written them, however short
# handover_ms is, and go off after.
#
# Linux's periodic writeback is set to expire 8 s (times AIPU_TIME_SCALE),
# interval 1 s. 64 non-adjacent pages are dirtied (pagetrace.py times each
# from a marker write), then aipu is loaded with handover_ms=1500, a
# fifth of that expiry. Checked, in two rounds (the raw null_blk device,
# whose inode aipu finds on the block devices' super block, and a file on
# ext4, found on its device's writeback lists):
#   1. once the clock has surely run out, and before Linux can have
#      written the pages: kupdate_off 0, handover_waiting 1, and
#      dirty_writeback_centisecs still 100;
#   2. every page is written within Linux's bound, 1.25 expiry + interval +
#      0.5 s of its dirtying (blktrace, against the markers);
#   3. then the handover ends: kupdate_off 1 and handover_waiting 0 within
#      5 s, dirty_writeback_centisecs 0.
# A third round repeats ext4's with another page of the file, and a page
# of a second file, rewritten every 0.1 s from the load until 2. is
# checked: aipu writes those pages each max_age, and must leave the first
# file's inode where it is on the writeback lists (the kernel's bookkeeping
# after a write would give it a new dirtied_when, and Linux's writeback
# would never find the 64 pages: 1. and 2. fail, and they stay dirty).
# Before src/handover.c the handover ended by the clock: 1. and 2. fail
# (the pages stayed dirty until the test's sync).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=64
INTERVAL_CS=100
HANDOVER_MS=1500
PERIOD_MS=200
EXPIRE_S=$((8 * $(time_scale)))
linux_kupdate "$EXPIRE_S" "$INTERVAL_CS"
HI=$LINUX_HI
tol=$(jiffy_s)

kup() { cat "$KUP"; }
kupdate_is_off() { [ "$(aipu_stat kupdate_off)" = 1 ]; }

dev=$(disk_get)
disk_prepare "$dev"

# sleep_until US: sleep until now_us reaches US (not at all if it has).
sleep_until() {
	sleep "$(awk -v d=$(($1 - $(now_us))) 'BEGIN { printf "%.3f\n", (d > 0 ? d / 1e6 : 0) }')"
}

# hot_start PATH:PAGE...: rewrite those pages every 0.1 s (files kept
# open: a block device's last close would write all of its dirty pages)
# until hot_stop; HOT_PID is the writer.
HOT_PID=""
hot_start() {
	python3 -c 'import os, sys, time
fds = [(os.open(a.rsplit(":", 1)[0], os.O_WRONLY | os.O_CREAT), int(a.rsplit(":", 1)[1]))
       for a in sys.argv[1:]]
while True:
    for fd, page in fds:
        os.pwrite(fd, os.urandom(4096), page * 4096)
    time.sleep(0.1)' "$@" &
	HOT_PID=$!
	on_exit hot_stop
}
hot_stop() {
	[ -n "$HOT_PID" ] || return 0
	kill "$HOT_PID" 2>/dev/null || true
	wait "$HOT_PID" 2>/dev/null || true
	HOT_PID=""
}

# round NAME TARGET MARKER MARKER_SECTOR [HOT]: dirty NPAGES pages of
# TARGET (every other page from page 2048 of a device, from page 0 of a
# file), load aipu (and rewrite the pages HOT lists, "PATH:PAGE ...", from
# then until 2.), check 1.-3., unload.
round() {
	local name=$1 target=$2 mk=$3 msec=$4 hot=${5:-} first=0 t0 t_base t_dirtied t_load out ranges
	local trace=$TEST_TMP/$name.txt plog=$TEST_TMP/$name.log frag=$TEST_TMP/$name.filefrag
	local mid why rc=0 where=() left stats
	stats=/sys/kernel/debug/bdi/$(disk_majmin "$dev")/stats
	[ -b "$target" ] && first=2048
	sync
	blktrace_start "$dev" "$name"
	t0=$(now_us)
	out=$(pagetrace dirty "$target" --first-page "$first" --count "$NPAGES" --stride 2 \
		--marker "$mk:0" --end-marker "$mk:4096" --log "$plog") ||
		die "pagetrace dirty failed: $out"
	t_dirtied=$(now_us)
	log "$out"
	insmod "$AIPU_KO" policy=aipu max_age_ms=1000 "period_ms=$PERIOD_MS" "handover_ms=$HANDOVER_MS" ||
		die "insmod aipu.ko failed"
	t_load=$(now_us)
	on_exit aipu_unload
	# shellcheck disable=SC2086 # HOT is a list
	[ -z "$hot" ] || hot_start $hot
	log "$name: loaded $(((t_load - t0) / 1000)) ms after the dirtying began"

	# 1. The clock has run out (handover + a period + slack after the
	#    load); Linux's expiry has not (1 s before it, counted from the
	#    marker's return, which came before the first page's dirtying and
	#    after pagetrace's start-up: seconds on a busy TCG host).
	mid=$((t_load + (HANDOVER_MS + PERIOD_MS + 500) * 1000))
	t_base=$(awk '$1 == "#" && $2 == "base-epoch-us" { print $3 }' "$plog")
	[ -n "$t_base" ] || die "$name: no base-epoch-us line in $plog"
	[ "$mid" -lt $((t_base + (EXPIRE_S - 1) * 1000000)) ] ||
		die "$name: the load took too long to see the handover outlast its clock" \
			"(loaded $(((t_load - t_base) / 1000)) ms after the marker)"
	sleep_until "$mid"
	assert_eq "0 1 $INTERVAL_CS" "$(aipu_stat kupdate_off) $(aipu_stat handover_waiting) $(kup)" \
		"$name 1. past the clock, pages still dirty: kupdate_off 0, handover_waiting 1, dirty_writeback_centisecs $INTERVAL_CS"
	assert_eq 0 "$(aipu_stat handover_left_ms)" "$name 1. handover_left_ms 0 past the clock"

	# 2. Linux writes the pages within its own bound. The bound runs from
	#    each page's dirtying, which came after pagetrace's start-up (on a
	#    loaded TCG host seconds after t0): trace until the bound of the
	#    last page dirtied, which pagetrace had dirtied when it returned.
	sleep_until "$(awk -v t="$t_dirtied" -v h="$HI" 'BEGIN { printf "%.0f\n", t + (h + 0.5) * 1e6 }')"
	blktrace_stop "$trace"
	hot_stop
	if [ -b "$target" ]; then
		ranges=$(page_ranges 2048 "$NPAGES" 2)
	elif filefrag -v "$target" >"$frag" && ranges=$(blkevents sectors --filefrag "$frag" 2>&1); then
		where=(--filefrag "$frag")
	else
		ranges=""
	fi
	if [ -z "$ranges" ]; then
		fail "$name 2. Linux wrote them: no blocks allocated (never written back?)"
	else
		why=$(pagetrace window --trace "$trace" --log "$plog" --marker-sector "$msec" \
			--end-marker-sector $((msec + 8)) --lo 0 --hi "$HI" --tolerance "$tol" \
			"${where[@]}") || rc=$?
		if [ "$rc" -eq 0 ]; then pass "$name 2. Linux wrote them: $why"; else
			fail "$name 2. Linux wrote them: $why"
			blkevents writes --trace "$trace" --marker-sector "$msec" --sectors "$ranges" --actions QD |
				head -n 10 | sed 's/^/#   t0+/'
		fi
	fi

	# 3. Then the handover ends; on the raw device, only once Linux holds no
	#    dirty inode of it (its bdi's lists; ext4's journal may dirty the
	#    device's inode again meanwhile, and BdiReclaimable is a per-CPU
	#    counter's approximate sum).
	if ! wait_until 5 kupdate_is_off; then
		fail "$name 3. kupdate_off still 0 5 s after Linux wrote the pages"
		# What holds it on: a fallback's clock (handover_left_ms > 0) or
		# an inode Linux still holds (handover_waiting 1).
		log "$name 3. fallbacks $(aipu_stat fallbacks), handover_left_ms $(aipu_stat handover_left_ms)," \
			"handover_waiting $(aipu_stat handover_waiting); devices: $(tr '\n' ';' </sys/kernel/aipu/devices)"
	fi
	left=$(bdi_dirty_inodes "$dev")
	log "$name: handover over by t0+$((($(now_us) - t0) / 1000)) ms; the device's bdi: $(tr -s ' \n' ' ' <"$stats")"
	[ ! -b "$target" ] || assert_eq 0 "$left" "$name 3. no dirty inode left on the device's b_dirty, b_io, b_more_io"
	assert_eq "1 0 0" "$(aipu_stat kupdate_off) $(aipu_stat handover_waiting) $(kup)" \
		"$name 3. the handover ended: kupdate_off 1, handover_waiting 0, dirty_writeback_centisecs 0"
	aipu_dump
	aipu_unload || die "rmmod aipu failed"
	assert_eq "$INTERVAL_CS" "$(kup)" "$name: rmmod gave dirty_writeback_centisecs back"
}

# The raw device: markers at sectors 0 and 8, pages from sector 16384.
round raw "$dev" "$dev" 0

# A new file on ext4 (blocks chosen at writeback: filefrag tells after);
# the markers go to a small file written and synced first.
fs_make ext4 "$dev"
mk=$AIPU_MNT/marker
msec=$(marker_sector "$mk" 2) || die "cannot find the marker file's sectors"
round ext4 "$AIPU_MNT/data" "$mk" "$msec"
# Again, with the file's page 4096 and another file's page 0 rewritten
# meanwhile (dirtied after the load: aipu's; the other file keeps an inode
# younger than this one on the device's b_dirty, which is when the kernel's
# bookkeeping gives an inode a new dirtied_when).
round ext4-hot "$AIPU_MNT/data2" "$mk" "$msec" "$AIPU_MNT/data2:4096 $AIPU_MNT/hot:0"
