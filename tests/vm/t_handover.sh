#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Data dirtied before the load is adopted: once the probes are in, every
# inode dirty then gets aipu's entries at its dirtied_when (stat
# inodes_adopted), so aipu writes those pages within max_age as it writes
# what it saw dirtied, whatever the kernel's bookkeeping later does to
# dirtied_when, and the handover ends by its clock.
#
# Linux's periodic writeback is set to expire 8 s (times AIPU_TIME_SCALE),
# interval 1 s. 64 non-adjacent pages are dirtied (pagetrace.py times each
# from a marker write), then aipu is loaded with max_age_ms=1000 and
# handover_ms=1500. Checked, in rounds (the raw null_blk device, whose
# inode aipu finds on the block devices' super block; a file on ext4,
# found on its device's writeback lists):
#   1. inodes_adopted counts the inode within 2 s of the load;
#   2. every page is written by the load + max_age + a period + slack,
#      well before Linux's 8-s expiry (blktrace, against the markers): aipu
#      wrote them, not Linux;
#   3. the handover ends with its clock: kupdate_off 1, handover_waiting 0
#      and dirty_writeback_centisecs 0 within a second after it.
# ext4-hot repeats ext4's with another page of the file, and a page of a
# second file, rewritten every 0.1 s from the load until 2. is checked.
# raw-hot has the device's own page 4096 rewritten every 0.1 s from before
# the dirtying until 3. is checked: the device's inode, the only one on its
# backing device, is never clean, and 6.1's redirty_tail_locked() then
# never gives it a new dirtied_when; a handover that waited for Linux to
# write data older than the load never ended (3. fails: handover_waiting
# 1). Before the adoption, 2. failed in every round
# (Linux wrote the pages at its expiry, 8-10 s after their dirtying).
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

adopted() { [ "$(aipu_stat inodes_adopted)" -gt 0 ]; }
no_dirty_inode() { [ "$(bdi_dirty_inodes "$1")" = 0 ]; }

# round NAME TARGET MARKER MARKER_SECTOR [HOT [early]]: dirty NPAGES pages
# of TARGET (every other page from page 2048 of a device, from page 0 of a
# file), load aipu (and rewrite the pages HOT lists, "PATH:PAGE ...", from
# then, or with "early" from before the dirtying, until 3.), check 1.-3.,
# unload.
round() {
	local name=$1 target=$2 mk=$3 msec=$4 hot=${5:-} early=${6:-} first=0 t0 t_base t_dirtied t_load
	local trace=$TEST_TMP/$name.txt plog=$TEST_TMP/$name.log frag=$TEST_TMP/$name.filefrag
	local out ranges hi why rc=0 where=() left stats
	stats=/sys/kernel/debug/bdi/$(disk_majmin "$dev")/stats
	[ -b "$target" ] && first=2048
	sync
	blktrace_start "$dev" "$name"
	# shellcheck disable=SC2086 # HOT is a list
	[ -z "$early" ] || hot_start $hot
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
	[ -z "$hot" ] || [ -n "$early" ] || hot_start $hot
	log "$name: loaded $(((t_load - t0) / 1000)) ms after the dirtying began"

	# 1. The adoption ran (a work item queued at the load).
	if wait_until 2 adopted; then
		pass "$name 1. inodes_adopted $(aipu_stat inodes_adopted) after the load"
	else
		fail "$name 1. inodes_adopted still 0 2 s after the load"
	fi
	t_base=$(awk '$1 == "#" && $2 == "base-epoch-us" { print $3 }' "$plog")
	[ -n "$t_base" ] || die "$name: no base-epoch-us line in $plog"
	# Due at the load at the latest (dirtied before it), within max_age;
	# relative to each page's dirtying, no earlier than the marker.
	hi=$(awk -v l="$t_load" -v b="$t_base" -v p="$PERIOD_MS" \
		'BEGIN { printf "%.3f\n", (l - b) / 1e6 + 1.0 + p / 1000 + 1.0 }')
	awk -v h="$hi" -v e="$EXPIRE_S" 'BEGIN { exit !(h < e - 1) }' ||
		die "$name: the load took too long to tell aipu's writes from Linux's (bound ${hi} s, expiry ${EXPIRE_S} s)"

	# 2. aipu writes them within that bound: trace until it has passed for
	#    the last page dirtied.
	sleep_until "$(awk -v t="$t_dirtied" -v h="$hi" 'BEGIN { printf "%.0f\n", t + (h + 0.5) * 1e6 }')"
	blktrace_stop "$trace"
	if [ -b "$target" ]; then
		ranges=$(page_ranges 2048 "$NPAGES" 2)
	elif filefrag -v "$target" >"$frag" && ranges=$(blkevents sectors --filefrag "$frag" 2>&1); then
		where=(--filefrag "$frag")
	else
		ranges=""
	fi
	if [ -z "$ranges" ]; then
		fail "$name 2. aipu wrote them: no blocks allocated (never written back?)"
	else
		why=$(pagetrace window --trace "$trace" --log "$plog" --marker-sector "$msec" \
			--end-marker-sector $((msec + 8)) --lo 0 --hi "$hi" --tolerance "$tol" \
			"${where[@]}") || rc=$?
		if [ "$rc" -eq 0 ]; then pass "$name 2. aipu wrote them by ${hi} s: $why"; else
			fail "$name 2. aipu wrote them by ${hi} s: $why"
			blkevents writes --trace "$trace" --marker-sector "$msec" --sectors "$ranges" --actions QD |
				head -n 10 | sed 's/^/#   t0+/'
		fi
	fi

	# 3. The handover ends with its clock (ext4-alone's writer still
	#    runs, its inode dirty since before the load).
	sleep_until $((t_load + (HANDOVER_MS + PERIOD_MS + 1000) * 1000))
	assert_eq "1 0 0" "$(aipu_stat kupdate_off) $(aipu_stat handover_waiting) $(kup)" \
		"$name 3. the handover ended with its clock: kupdate_off 1, handover_waiting 0, dirty_writeback_centisecs 0"
	hot_stop
	# On the raw device, nothing Linux holds dirty once aipu has written it
	# all (its bdi's lists; BdiReclaimable is a per-CPU counter's sum).
	[ ! -b "$target" ] || wait_until 5 no_dirty_inode "$dev" || true
	left=$(bdi_dirty_inodes "$dev")
	log "$name: t0+$((($(now_us) - t0) / 1000)) ms; the device's bdi: $(tr -s ' \n' ' ' <"$stats")"
	[ ! -b "$target" ] || assert_eq 0 "$left" "$name 3. no dirty inode left on the device's b_dirty, b_io, b_more_io"
	aipu_dump
	aipu_unload || die "rmmod aipu failed"
	assert_eq "$INTERVAL_CS" "$(kup)" "$name: rmmod gave dirty_writeback_centisecs back"
}

# The raw device: markers at sectors 0 and 8, pages from sector 16384.
round raw "$dev" "$dev" 0
round raw-hot "$dev" "$dev" 0 "$dev:4096" early

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
