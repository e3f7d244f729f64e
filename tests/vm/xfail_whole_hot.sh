#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A file bounded as a whole (the 4-MiB cap, the shrinker, a memory
# fallback, an umount's park) and still written to is not written every
# period: after a write the whole-file entry takes the time of the oldest
# dirtying it did not cover, so it is due again one max_age later.
#
# NPAGES random pages of the raw test disk are dirtied (one run each),
# `echo 2 > drop_caches` makes aipu's shrinker bound the device's file as a
# whole (the path every whole-file fallback takes; the cap itself needs
# 4 MiB of runs, some 500,000 of them), and from then on one of the pages
# is rewritten every 0.1 s for HOT_S seconds between two markers of its
# own. max_age 4 s (times AIPU_TIME_SCALE), period 0.2 s. blktrace shows:
#   1. the hot page written at most once per max_age (HOT_S / max_age + 2
#      writes; requeued at its old time, as before the whole-file entry
#      aged, it was written every period: some HOT_S / period);
#   2. and still within its bound: no gap between its writes, or from the
#      hot start to its first write, longer than max_age + period + 0.5 s;
#   3. every other page written once within max_age + period of the
#      dirtying's marker (the whole file's time: early is allowed);
#   4. once the writer stops, its last data on the disk within max_age +
#      period (an O_DIRECT read equals the page cache's copy).
#
# Not in make check: check 2 fails on today's module (an open bug, issue
# 44): the hot page's first dirtying after the whole-file write is not
# tracked for 1-4 s (devices shows pages_tracked 0 while the page is
# dirty), so it waits 5.1-8.2 s for a write against a bound of 4.7 s, and
# pages_late stays 0. Run it by name:
#   AIPU_TESTS=xfail_whole_hot scripts/vmtest.sh KVER
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=500
FIRST=4096
PERIOD_MS=200
MAX_AGE_S=$((4 * $(time_scale)))
HOT_S=$((5 * MAX_AGE_S))
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

# The hot page: the set's first, rewritten every 0.1 s from the hot-start
# marker (sector 16) to the hot-stop marker (sector 24); the device kept
# open (a block device's last close writes all its dirty pages).
direct_write "$dev" 8192
python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    os.pwrite(fd, os.urandom(4096), int(sys.argv[2]) * 4096)
    time.sleep(0.1)
os.close(fd)' "$dev" "$FIRST" "$HOT_S" &
hot=$!
on_exit "kill $hot 2>/dev/null || true"
wait "$hot" || die "the hot writer failed"
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
	--sectors "$(page_ranges $((FIRST + 2)) $((NPAGES - 1)) 2)" \
	--lo 0 --hi "$(awk -v a="$MAX_AGE_S" -v p="$PERIOD_MS" 'BEGIN { print a + p / 1000 + 0.5 }')" \
	--tolerance "$tol") || rc=$?
if [ "$rc" -eq 0 ]; then pass "3. every other page within max_age + period: $why"; else
	fail "3. the other pages: $why"
fi
aipu_unload
