#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A fallback stays on the device where it happened. When the probes find
# no memory for a file's tracker, that device's flusher adopts its dirty
# inodes that may hold the pages (src/handover.c), each bounded as a whole
# from its dirtied_when; Linux's periodic writeback stays off for the whole
# machine. Only when the adoption finds no memory either does Linux's
# periodic writeback come back (for 40 s, and then until Linux has written
# what it holds from before).
#
# Memory running out is made by debugfs's aipu/fail_trackers (the next N
# trackers fail as if the slab and the reserve were empty: Debian's
# kernels have no fault injection). Linux's expiry is set to 8 s
# (times AIPU_TIME_SCALE), interval 1 s; aipu max_age_ms 1000, period
# 200 ms. Two raw null_blk devices, A and B, each held open.
#   local: fail_trackers 1, then 64 pages of A dirtied (pagetrace.py,
#     against marker writes) and 64 of B: A's first page finds no tracker,
#     the next makes one (the adoption must take the file even so). Checked:
#     the fallback counted, the failure used up; in samples every 0.1 s from before the dirtying
#     until the end, kupdate_off 1 and dirty_writeback_centisecs 0;
#     handover_left_ms 0; every page of A written within max_age + two
#     periods + 1 s of its dirtying (blktrace), B's pages written by aipu;
#     no dirty inode left on either device.
#   global: fail_trackers far more than the adoption can use, 64 other
#     pages of A dirtied: Linux's periodic writeback comes back
#     (kupdate_off 0, handover_left_ms > 0); fail_trackers 0 again, every
#     page reaches the disk within Linux's bound (blktrace).
# Before the adoption after a miss, every fallback turned Linux's periodic
# writeback on for the whole machine: local's samples fail.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=64
PERIOD_MS=200
MAX_AGE_MS=1000
INTERVAL_CS=100
EXPIRE_S=$((8 * $(time_scale)))
FAIL=/sys/kernel/debug/aipu/fail_trackers
linux_kupdate "$EXPIRE_S" "$INTERVAL_CS"
tol=$(jiffy_s)

kup() { cat "$KUP"; }
kupdate_is_off() { [ "$(aipu_stat kupdate_off)" = 1 ]; }
kupdate_is_on() { [ "$(aipu_stat kupdate_off)" = 0 ]; }
no_dirty_inode() { [ "$(bdi_dirty_inodes "$1")" = 0 ]; }

a=$(disk_get)
disk_prepare "$a"
nullb_slow aipu_fb 1
b=$NULLB_SLOW
disk_prepare "$b"
# Held open: a block device's last close writes all of its dirty pages.
exec 8<"$a" 9<"$b"

aipu_load policy=aipu "max_age_ms=$MAX_AGE_MS" "period_ms=$PERIOD_MS" handover_ms=0
wait_until 5 kupdate_is_off || die "Linux's periodic writeback still on 5 s after a load with handover_ms=0"
debugfs_mount
[ -w "$FAIL" ] || die "no $FAIL: is debugfs mounted, and is this aipu.ko built from this tree?"

# sampler FILE: "kupdate_off dirty_writeback_centisecs handover_left_ms"
# every 0.1 s until sampler_stop.
SAMPLER=""
sampler() {
	while :; do
		echo "$(aipu_stat kupdate_off) $(kup) $(aipu_stat handover_left_ms)"
		sleep 0.1
	done >"$1" &
	SAMPLER=$!
	on_exit sampler_stop
}
sampler_stop() {
	[ -n "$SAMPLER" ] || return 0
	kill "$SAMPLER" 2>/dev/null || true
	wait "$SAMPLER" 2>/dev/null || true
	SAMPLER=""
}

# dirty_a NAME FIRST: NPAGES pages of A, every other page from FIRST,
# timed against markers at sectors 0 and 8; sets T_DIRTIED.
dirty_a() {
	local out
	out=$(pagetrace dirty "$a" --first-page "$2" --count "$NPAGES" --stride 2 \
		--marker "$a:0" --end-marker "$a:4096" --log "$TEST_TMP/$1.log") ||
		die "pagetrace dirty failed: $out"
	T_DIRTIED=$(now_us)
	log "$1: $out"
}

# written_within NAME FIRST HI: every page dirty_a NAME FIRST dirtied was
# written within [0, HI] s of its dirtying.
written_within() {
	local why rc=0
	why=$(pagetrace window --trace "$TEST_TMP/$1.txt" --log "$TEST_TMP/$1.log" --marker-sector 0 \
		--end-marker-sector 8 --lo 0 --hi "$3" --tolerance "$tol") || rc=$?
	if [ "$rc" -eq 0 ]; then pass "$1: every page of A written within $3 s: $why"; else
		fail "$1: every page of A written within $3 s: $why"
		blkevents writes --trace "$TEST_TMP/$1.txt" --marker-sector 0 \
			--sectors "$(page_ranges "$2" "$NPAGES" 2)" --actions QD | head -n 10 | sed 's/^/#   t0+/'
	fi
}

# --- local: the adoption after the miss bounds the pages on A alone.
fb0=$(aipu_stat fallbacks)
hi=$(awk -v m="$MAX_AGE_MS" -v p="$PERIOD_MS" 'BEGIN { printf "%.3f\n", m / 1000 + 2 * p / 1000 + 1.0 }')
sync
sampler "$TEST_TMP/local.samples"
blktrace_start "$a" local
echo 1 >"$FAIL"
dirty_a local 2048
out=$(dirty_pages "$b" --first-page 0 --count "$NPAGES" --stride 2) || die "dirty.py on $b failed: $out"
log "local: B: $out"
sleep "$(awk -v h="$hi" 'BEGIN { print h + 0.5 }')"
blktrace_stop "$TEST_TMP/local.txt"
sampler_stop
assert_eq 1 "$(($(aipu_stat fallbacks) - fb0))" "local: one fallback counted (tracker memory ran out once)"
assert_eq 0 "$(cat "$FAIL")" "local: the injected failures were used up"
bad=$(awk '$1 != 1 || $2 != 0 || $3 != 0' "$TEST_TMP/local.samples" | sort | uniq -c | tr '\n' ';')
assert_eq "" "$bad" "local: kupdate_off 1, dirty_writeback_centisecs 0, handover_left_ms 0 in all $(wc -l <"$TEST_TMP/local.samples") samples"
written_within local 2048 "$hi"
b_written=$(aipu_dev_field "$(disk_majmin "$b")" pages_written)
assert_ge "${b_written:-0}" "$NPAGES" "local: aipu wrote B's pages (devices: pages_written ${b_written:-none})"
wait_until 5 no_dirty_inode "$a" || true
wait_until 5 no_dirty_inode "$b" || true
assert_eq "0 0" "$(bdi_dirty_inodes "$a") $(bdi_dirty_inodes "$b")" "local: no dirty inode left on A or B"

# --- global: the adoption finds no memory either: Linux's writeback.
sync
blktrace_start "$a" global
echo 1000000 >"$FAIL"
dirty_a global 4096
if wait_until 3 kupdate_is_on; then
	pass "global: Linux's periodic writeback back on (kupdate_off 0, dirty_writeback_centisecs $(kup), handover_left_ms $(aipu_stat handover_left_ms))"
else
	fail "global: kupdate_off still 1 3 s after a fallback the adoption could not take"
fi
assert_gt "$(aipu_stat handover_left_ms)" 0 "global: the untracked page's clock runs (handover_left_ms)"
echo 0 >"$FAIL"
sleep "$(awk -v t="$T_DIRTIED" -v h="$LINUX_HI" -v n="$(now_us)" 'BEGIN { d = (t + (h + 0.5) * 1e6 - n) / 1e6; printf "%.3f\n", (d > 0 ? d : 0) }')"
blktrace_stop "$TEST_TMP/global.txt"
written_within global 4096 "$LINUX_HI"
aipu_dump
