#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Linux's periodic writeback comes back as Linux's own, not as a flush of
# everything: when aipu hands it back (a switch to policy kernel, rmmod),
# pages younger than dirty_expire_centisecs stay dirty until that expiry
# takes them. Writing the sysctl through its file would call
# wakeup_flusher_threads(WB_REASON_PERIODIC), writeback of every dirty page
# on every device: before the fix, 200 pages dirtied 3 s before the switch
# were on the disk within a second of it.
#
# Linux's expiry 8 s (times AIPU_TIME_SCALE), interval 1 s. Two null_blk
# devices: A with ext4 (a file of 1 MiB, its blocks allocated and synced
# first; traced), B raw and held open. The two ways aipu arms Linux's
# periodic writeback again are both used: a file system's contexts through
# the kernel's own writeback_inodes_sb_nr() when no context shows bdi_wq
# yet (Debian's 6.1 guest: none does), a raw device's with the queue a
# context shows (docs/design.md §8). In two rounds, "switch" and "rmmod":
# aipu loaded (policy aipu, max_age 60 s: it writes nothing here), 64
# non-adjacent pages of A's file overwritten (pagetrace.py times each from
# a marker write to another file) and 64 pages of B, then 3 s later the
# policy switched to kernel, or aipu unloaded. Checked:
#   1. dirty_writeback_centisecs is back (100);
#   2. on A, every page is written within Linux's own bound counted from its
#      own dirtying, [expiry - 1 s, 1.25 expiry + interval + 0.5 s]
#      (blktrace; the second is for pagetrace's dirtying of 64 pages, as
#      the file's inode carries its first page's time);
#   3. on B, the device's inode stays on its dirty lists (b_dirty, b_io,
#      b_more_io in debugfs, sampled every 0.2 s) until 1 s before the
#      expiry, and is off them (written) within that bound.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=64
INTERVAL_CS=100
AHEAD_S=3
EXPIRE_S=$((8 * $(time_scale)))
linux_kupdate "$EXPIRE_S" "$INTERVAL_CS"
HI=$LINUX_HI
tol=$(jiffy_s)

a=$(disk_get)
disk_prepare "$a"
nullb_slow aipub 0
b=$NULLB_SLOW
disk_prepare "$b"
debugfs_mount
# Held open: the last close of a block device writes it.
exec {hold_b}<"$b"
on_exit "exec $hold_b<&-"
fs_make ext4 "$a"
f=$AIPU_MNT/data
mk=$AIPU_MNT/marker
dd if=/dev/zero of="$f" bs=1M count=1 status=none
msec=$(marker_sector "$mk" 2) || die "cannot find the marker file's sectors"
filefrag -v "$f" >"$TEST_TMP/data.filefrag" || die "filefrag $f failed"

kupdate_is_off() { [ "$(aipu_stat kupdate_off)" = 1 ]; }

round() { # NAME
	local name=$1 plog=$TEST_TMP/$1.log trace=$TEST_TMP/$1.txt samples=$TEST_TMP/$1.dirty
	local t_dirtied t_end out why rc=0 early late
	sync
	aipu_load policy=aipu max_age_ms=60000 period_ms=500 handover_ms=0
	wait_until 5 kupdate_is_off || die "$name: kupdate_off not 1 5 s after load"
	blktrace_start "$a" "$name"
	out=$(pagetrace dirty "$f" --first-page 0 --count "$NPAGES" --stride 2 \
		--marker "$mk:0" --end-marker "$mk:4096" --log "$plog") || die "pagetrace dirty failed: $out"
	dirty_pages "$b" --first-page 2048 --count "$NPAGES" --max-ms 60000 >/dev/null ||
		die "dirty.py on $b failed"
	t_dirtied=$(now_us)
	log "$name: $out; B's dirty inodes: $(bdi_dirty_inodes "$b")"
	sleep "$AHEAD_S"
	case $name in
	switch) aipu_set policy kernel ;;
	rmmod) aipu_unload || die "rmmod aipu failed" ;;
	esac
	assert_eq "$INTERVAL_CS" "$(<"$KUP")" "$name 1. dirty_writeback_centisecs back to $INTERVAL_CS"
	# Sample B's dirty inodes until Linux's bound of the last page has passed.
	t_end=$(awk -v t="$t_dirtied" -v h="$HI" 'BEGIN { printf "%.0f\n", t + (h + 0.5) * 1e6 }')
	: >"$samples"
	while [ "$(now_us)" -lt "$t_end" ]; do
		echo "$((($(now_us) - t_dirtied) / 1000)) $(bdi_dirty_inodes "$b")" >>"$samples"
		sleep 0.2
	done
	cp "$samples" "$TEST_OUT/"
	blktrace_stop "$trace"
	why=$(pagetrace window --trace "$trace" --log "$plog" --marker-sector "$msec" \
		--end-marker-sector $((msec + 8)) --lo "$((EXPIRE_S - 1))" --hi "$HI" --tolerance "$tol" \
		--filefrag "$TEST_TMP/data.filefrag") || rc=$?
	if [ "$rc" -eq 0 ]; then pass "$name 2. A's pages written by Linux's own expiry: $why"; else
		fail "$name 2. A's pages not written within [$((EXPIRE_S - 1)), $HI] s of their dirtying: $why"
		blkevents writes --trace "$trace" --marker-sector "$msec" \
			--sectors "$(blkevents sectors --filefrag "$TEST_TMP/data.filefrag")" \
			--actions QD | head -n 10 | sed 's/^/#   t0+/'
	fi
	early=$(awk -v e="$EXPIRE_S" '$1 < (e - 1) * 1000 && $2 < 1 && n++ < 3 { printf "%s|", $0 }' "$samples")
	assert_eq "" "$early" "$name 3. B's inode stays dirty until 1 s before the expiry (samples: ms since dirtied, dirty inodes)"
	late=$(awk 'END { print $2 }' "$samples")
	assert_eq 0 "$late" "$name 3. B's inode written by $HI s after its dirtying (dirty inodes at the end)"
	aipu_unload || fail "$name: rmmod aipu failed"
}

round switch
round rmmod
