#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Paced AIPU (pace=1): "with 200 pages aging in one second, blktrace shows
# them spread over the period (no 100 ms window holds more than a third of
# them), while each is still written within max_age + period."
#
# policy aipu, max_age 2 s, period 1 s. 200 non-adjacent pages of the raw
# device are dirtied 5 ms apart (over one second), so they age over one
# second too. From blktrace (first dispatch of each page):
#   - every page written;
#   - no 100 ms window holds the first dispatch of more than 66 pages;
#   - every page dispatched within max_age + period (3 s) of its dirtying,
#     plus one jiffy (the clock's granularity); dirty times come from the
#     dirtying process's clock, pinned to the trace by an O_DIRECT marker
#     write just before, and are never later than the true ones;
#   - stat pages_late, the module's own count of such misses, did not move.
# The same workload with pace=0 is then traced and only reported, so the
# log shows the contrast (Linux-like bursts once a period).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

MAX_AGE_MS=2000
PERIOD_MS=1000
NPAGES=200
INTERVAL_MS=5
BOUND_MS=$((MAX_AGE_MS + PERIOD_MS))
jiffy_us=$(awk -v j="$(jiffy_s)" 'BEGIN { printf "%d", j * 1e6 + 0.5 }')
metric() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

dev=$(disk_get)
disk_prepare "$dev"
# Hold the device open: its last close would write its dirty pages.
exec 7<"$dev"

aipu_load policy=aipu max_age_ms=$MAX_AGE_MS period_ms=$PERIOD_MS pace=1 handover_ms=0
assert_eq aipu "$(aipu_policy)" "policy is aipu"

# run NAME FIRST_PAGE MARKER_PAGE: dirty the pages under blktrace, wait for
# them all to be written, and leave the metrics in $TEST_TMP/NAME.m.
run() {
	local name=$1 first=$2 mpage=$3 trace=$TEST_TMP/$1.txt out
	blktrace_start "$dev" "$name"
	out=$(pagetrace dirty "$dev" --first-page "$first" --count "$NPAGES" --stride 2 \
		--interval-ms "$INTERVAL_MS" --marker "$dev:$((mpage * 4096))" \
		--log "$TEST_TMP/$name.log") || die "pagetrace dirty failed: $out"
	log "$out"
	sleep $(((BOUND_MS + 2 * PERIOD_MS) / 1000 + 2))
	blktrace_stop "$trace"
	pagetrace analyze --trace "$trace" --marker-sector $((mpage * 8)) --log "$TEST_TMP/$name.log" \
		--window-ms 100 --burst-gap-ms 50 --late-ms "$BOUND_MS" \
		--table "$TEST_OUT/$name.pages" >"$TEST_TMP/$name.m" || die "pagetrace analyze failed"
	cp "$TEST_TMP/$name.m" "$TEST_OUT/"
	log "$name: $(tr '\n' ' ' <"$TEST_TMP/$name.m")"
	log "$name: writes by 100 ms from the marker (first dispatch of each page):"
	awk '!/^#/ && $4 != "-" { n[int($4 * 10)]++ } END { for (b in n) printf "#   %.1f-%.1f s: %d\n", b / 10, (b + 1) / 10, n[b] }' \
		"$TEST_OUT/$name.pages" | sort -n -k2
}

# 1. pace = 1.
late0=$(aipu_stat pages_late)
run pace1 2048 0
m=$TEST_TMP/pace1.m
aipu_dump
assert_eq "$NPAGES" "$(metric written "$m")" "pace=1: all $NPAGES pages written"
assert_le "$(metric max_in_window "$m")" $((NPAGES / 3)) \
	"pace=1: no 100 ms window holds more than a third of the writes"
assert_le "$(metric max_delay_us "$m")" $((BOUND_MS * 1000 + jiffy_us)) \
	"pace=1: every page dispatched within max_age + period + 1 jiffy of its dirtying (us; worst page $(metric max_delay_page "$m"))"
log "pace=1: $(metric late_q "$m") page(s) queued more than ${BOUND_MS} ms after their dirtying"
assert_eq 0 "$(($(aipu_stat pages_late) - late0))" "pace=1: stat pages_late did not move"

# 2. pace = 0, for contrast: reported, not asserted.
aipu_set pace 0
late0=$(aipu_stat pages_late)
run pace0 4096 1
m=$TEST_TMP/pace0.m
assert_eq "$NPAGES" "$(metric written "$m")" "pace=0: all $NPAGES pages written"
log "pace=0 (for contrast): the busiest 100 ms window holds $(metric max_in_window "$m") of $NPAGES writes;" \
	"$(metric bursts "$m") burst(s) of writes < 50 ms apart, the largest $(metric max_burst "$m");" \
	"worst delay $(metric max_delay_us "$m") us; stat pages_late +$(($(aipu_stat pages_late) - late0))"
