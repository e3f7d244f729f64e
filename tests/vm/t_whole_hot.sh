#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A file bounded as a whole by the shrinker while it is still being
# written: its pages keep their bound and are not written every period.
#
# NPAGES random pages of the raw test disk are dirtied (one run each),
# `echo 2 > drop_caches` makes aipu's shrinker bound the device's file as a
# whole, and from then on the first HOT_N of the pages are rewritten every
# 0.02 s for HOT_S seconds between two markers of their own, with
# drop_caches every 0.25 s, so that the file goes back and forth between
# runs and its whole-file entry. max_age 4 s (times AIPU_TIME_SCALE),
# period 0.2 s. blktrace shows, of the first hot page:
#   1. written at most once per max_age (HOT_S / max_age + 2 writes);
#   2. and still within its bound: no gap between its writes, or from the
#      hot start to its first write, longer than max_age + period + 0.5 s;
#   3. every page not rewritten written once within max_age + period of
#      the dirtying's marker (the whole file's time: early is allowed);
#   4. once the writer stops, the hot page's last data on the disk
#      within max_age + period (an O_DIRECT read equals the page cache's
#      copy).
#
# What this does not show: a whole-file entry that stays whole (the 4-MiB
# cap: some 500,000 runs, 2 GiB of dirty pages; or allocations failing:
# make debugtest FAILSLAB=...) and ages after each write (it takes the
# time of the oldest dirtying it did not cover). The shrinker drains a
# file back to runs, and with that aging taken out of src/queue/queue.c
# this test still passed (6.12.118); tests/unit/test_queue.c checks
# the aging (aipu_queue_requeue_whole_since()).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=500
FIRST=4096
HOT_N=32
PERIOD_MS=200
MAX_AGE_S=$((4 * $(time_scale)))
HOT_S=$((4 * MAX_AGE_S))
tol=$(jiffy_s)
dev=$(disk_get)
disk_prepare "$dev"

sync
aipu_load policy=aipu max_age_ms=$((MAX_AGE_S * 1000)) period_ms=$PERIOD_MS handover_ms=0
trace=$TEST_TMP/whole_hot.txt
blktrace_start "$dev" whole_hot
out=$(pagetrace dirty "$dev" --first-page "$FIRST" --count "$NPAGES" --stride 2 \
	--marker "$dev:0" --end-marker "$dev:4096" --log "$TEST_TMP/whole_hot.log") ||
	die "pagetrace dirty failed: $out"
log "$out"
fb0=$(aipu_stat fallbacks)
echo 2 >/proc/sys/vm/drop_caches
[ "$(aipu_stat pages_written)" -eq 0 ] ||
	die "aipu wrote pages before the pressure: the set-up took longer than max_age ($MAX_AGE_S s)"
assert_gt "$(aipu_stat fallbacks)" "$fb0" "drop_caches bounded the device's file as a whole (fallbacks $fb0 -> $(aipu_stat fallbacks))"

# The hot pages: the set's first HOT_N, rewritten every 0.02 s from the hot-start
# marker (sector 16, written by the writer itself once it runs: Python
# starts in seconds on a busy TCG host) to the hot-stop marker (sector 24);
# the device kept open (a block device's last close writes all its dirty
# pages).
python3 -c 'import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
mk = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
os.pwrite(mk, mmap.mmap(-1, 4096), 8192)
os.close(mk)
end = time.monotonic() + float(sys.argv[3])
first, n = int(sys.argv[2]), int(sys.argv[4])
while time.monotonic() < end:
    for i in range(n):
        os.pwrite(fd, os.urandom(4096), (first + 2 * i) * 4096)
    time.sleep(0.02)
os.close(fd)' "$dev" "$FIRST" "$HOT_S" "$HOT_N" &
hot=$!
on_exit "kill $hot 2>/dev/null || true"
(while kill -0 "$hot" 2>/dev/null; do
	echo 2 >/proc/sys/vm/drop_caches
	sleep 0.25
done) &
shrink=$!
on_exit "kill $shrink 2>/dev/null || true"
wait "$hot" || die "the hot writer failed"
wait "$shrink" || true
direct_write "$dev" 12288
t_stop=$SECONDS
# 4. Its last data reaches the disk.
on_disk() {
	cmp -s <(dd if="$dev" bs=4096 skip="$FIRST" count=1 iflag=direct status=none) \
		<(dd if="$dev" bs=4096 skip="$FIRST" count=1 status=none)
}
if wait_until $((MAX_AGE_S + 2)) on_disk; then
	pass "4. the hot page's last data on the disk $((SECONDS - t_stop)) s after the writer stopped"
else
	fail "4. the hot page's last data not on the disk $((MAX_AGE_S + 2)) s after the writer stopped"
fi
sleep 0.5 # the last writes' completions
blktrace_stop "$trace"
aipu_dump

hot_sec=$((FIRST * 8))
hot_writes=$TEST_OUT/whole_hot.writes
blkevents writes --trace "$trace" --marker-sector 16 --sectors "$hot_sec+8" --actions Q >"$hot_writes" ||
	die "no hot-start marker in the trace"
stop_t=$(blkevents writes --trace "$trace" --marker-sector 16 --sectors 24+8 --actions Q | awk 'NR == 1 { print $1 }')
[ -n "$stop_t" ] || die "no hot-stop marker in the trace"
n=$(awk -v s="$stop_t" '$1 > 0 && $1 <= s' "$hot_writes" | wc -l)
max_n=$(awk -v h="$stop_t" -v a="$MAX_AGE_S" 'BEGIN { printf "%d\n", h / a + 2 }')
log "the hot page's writes, seconds from the hot start: $(awk '$1 > 0 { printf "%s ", $1 }' "$hot_writes")"
assert_le "$n" "$max_n" "1. the hot page written $n times in $stop_t s: at most once per max_age ($max_n)"
gap=$(awk -v s="$stop_t" 'BEGIN { p = 0; g = 0 }
	$1 > 0 && $1 <= s + 0.001 { if ($1 - p > g) g = $1 - p; p = $1 }
	END { if (p > 0 && s - p > g) g = s - p; printf "%.3f\n", g }' "$hot_writes")
hi=$(awk -v a="$MAX_AGE_S" -v p="$PERIOD_MS" 'BEGIN { print a + p / 1000 + 0.5 }')
if awk -v g="$gap" -v h="$hi" 'BEGIN { exit !(g <= h) }' && [ "$n" -gt 0 ]; then
	pass "2. the hot page's longest wait for a write ${gap} s, within max_age + period + 0.5 s ($hi)"
else
	fail "2. the hot page waited ${gap} s for a write ($n writes; bound $hi s)"
fi

# 3. The rest of the set, once each, within the bound.
rc=0
why=$(blkevents window --trace "$trace" --marker-sector 0 --end-marker-sector 8 \
	--sectors "$(page_ranges $((FIRST + 2 * HOT_N)) $((NPAGES - HOT_N)) 2)" \
	--lo 0 --hi "$(awk -v a="$MAX_AGE_S" -v p="$PERIOD_MS" 'BEGIN { print a + p / 1000 + 0.5 }')" \
	--tolerance "$tol") || rc=$?
if [ "$rc" -eq 0 ]; then pass "3. every other page within max_age + period: $why"; else
	fail "3. the other pages: $why"
fi
aipu_unload
