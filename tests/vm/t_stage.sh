#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Asynchronous staging (policy stage): "with C = 500 ms, pages reach the
# disk oldest first, never faster than one batch per 500 ms; with C = 0 each
# page is written within one period of its first dirtying."
#
# max_age_ms is 30 s, so within the test only staging writes. period_ms is
# 5 s, so the flusher's periodic tick cannot pass for staging: a batch that
# comes sooner than a period came from the staging timer or a dirtying.
#
# 1. stage_interval_ms (C) = 500, stage_batch = 1: a lead page and then 8
#    non-adjacent pages of the raw device, dirtied 100 ms apart (each its
#    own run). The lead page's dirtying finds the flusher idle and starts the
#    first batch at once; the 8 pages are then staged by the C timer while
#    later pages are still being dirtied (each dirtying wakes the flusher,
#    which must not stage early). blktrace must show each page written once,
#    in the order dirtied, the 8 pages' writes queued (Q) and dispatched (D)
#    >= 500 ms apart less one jiffy (C is counted in jiffies from the moment
#    the previous batch left the flusher's plug, so two batches' writes are
#    more than C - 1 jiffy apart in real time, however long the previous
#    one took to issue: CI saw 492 ms when C counted from the pass's
#    start and the issue lagged it by 8 ms under TCG), and, since
#    a batch is due every C, no two more than 2 C apart (the period would
#    give 5 s). The lead page is left out of the gaps: its write waits for
#    the dirtying process to release the page (the dirtying woke the flusher
#    from inside the write), so its Q lags the staging decision by up to
#    ~20 ms under TCG.
# 2. C = 0: 8 more pages dirtied 100 ms apart; each must be dispatched less
#    than a period after its dirtying (and in fact within 500 ms: a
#    dirtying wakes the flusher), and none may be left dirty (an fsync of
#    the device afterwards writes none of them). Dirty times come from the
#    dirtying process's clock, pinned to the trace by an O_DIRECT marker
#    write just before; they are never later than the true ones, so the
#    delays measured are never too short.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

C_MS=500
PERIOD_MS=5000
NPAGES=8
jiffy_us=$(awk -v j="$(jiffy_s)" 'BEGIN { printf "%d", j * 1e6 + 0.5 }')
metric() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

dev=$(disk_get)
disk_prepare "$dev"
# Hold the device open: the last close of a block device writes and drops
# its page cache, which would hide a page left dirty.
exec 7<"$dev"

aipu_load policy=stage stage_interval_ms=$C_MS stage_batch=1 max_age_ms=30000 \
	period_ms=$PERIOD_MS handover_ms=0
assert_eq stage "$(aipu_policy)" "policy is stage"

# run NAME FIRST_PAGE COUNT LEAD MARKER_PAGE WAIT_S: dirty COUNT pages 100 ms
# apart under blktrace, wait, and leave the metrics in $TEST_TMP/NAME.m (the
# first LEAD pages out of the gap metrics).
run() {
	local name=$1 first=$2 count=$3 lead=$4 mpage=$5 wait=$6 trace=$TEST_TMP/$1.txt out
	blktrace_start "$dev" "$name"
	out=$(pagetrace dirty "$dev" --first-page "$first" --count "$count" --stride 2 \
		--interval-ms 100 --marker "$dev:$((mpage * 4096))" --log "$TEST_TMP/$name.log") ||
		die "pagetrace dirty failed: $out"
	log "$out"
	sleep "$wait"
	blktrace_stop "$trace"
	pagetrace analyze --trace "$trace" --marker-sector $((mpage * 8)) --log "$TEST_TMP/$name.log" \
		--lead "$lead" --table "$TEST_OUT/$name.pages" >"$TEST_TMP/$name.m" || die "pagetrace analyze failed"
	cp "$TEST_TMP/$name.m" "$TEST_OUT/"
	log "$name: page, dirty, Q, D, delay (s from the marker):"
	sed 's/^/#   /' "$TEST_OUT/$name.pages"
}

# 1. C = 500 ms.
staged0=$(aipu_stat pages_staged)
late0=$(aipu_stat pages_late)
clean0=$(aipu_stat pages_clean)
run c500 2046 $((NPAGES + 1)) 1 0 $((NPAGES * C_MS / 1000 + 3))
m=$TEST_TMP/c500.m
aipu_dump
assert_eq $((NPAGES + 1)) "$(metric written "$m")" "C=$C_MS: all $((NPAGES + 1)) pages written"
assert_eq $((NPAGES + 1)) "$(metric writes "$m")" "C=$C_MS: one write request per page (one run per batch)"
assert_eq 1 "$(metric order_ok "$m")" \
	"C=$C_MS: pages dispatched in the order dirtied (first out of order: page $(metric order_bad "$m"))"
assert_ge "$(metric min_gap_q_us "$m")" $((C_MS * 1000 - jiffy_us)) \
	"C=$C_MS: consecutive staged writes queued >= C - 1 jiffy apart (us)"
assert_ge "$(metric min_gap_d_us "$m")" $((C_MS * 1000 - jiffy_us)) \
	"C=$C_MS: consecutive staged writes dispatched >= C - 1 jiffy apart (us)"
assert_le "$(metric max_gap_d_us "$m")" $((2 * C_MS * 1000)) \
	"C=$C_MS: a batch at least every 2 C while runs wait (us; the period is $PERIOD_MS ms)"
assert_ge "$(($(aipu_stat pages_staged) - staged0))" $((NPAGES + 1)) "C=$C_MS: stat pages_staged counts them"
assert_eq 0 "$(($(aipu_stat pages_late) - late0))" "C=$C_MS: no page late"
log "C=$C_MS: stat pages_clean grew by $(($(aipu_stat pages_clean) - clean0)) (pages found clean when staged)"

# 2. C = 0: each page staged as soon as it is dirtied.
aipu_set stage_interval_ms 0
clean0=$(aipu_stat pages_clean)
run c0 4096 "$NPAGES" 0 1 3
m=$TEST_TMP/c0.m
aipu_dump
assert_eq "$NPAGES" "$(metric written "$m")" "C=0: all $NPAGES pages written"
assert_eq 1 "$(metric order_ok "$m")" "C=0: pages dispatched in the order dirtied"
assert_lt "$(metric max_delay_us "$m")" $((PERIOD_MS * 1000)) \
	"C=0: every page dispatched within one period of its dirtying (us)"
assert_lt "$(metric max_delay_us "$m")" 500000 \
	"C=0: every page dispatched within 500 ms of its dirtying (us; the dirtying wakes the flusher)"
assert_ge "$(metric min_delay_us "$m")" 0 "C=0: no page written before it was dirtied (us)"
log "C=0: stat pages_clean grew by $(($(aipu_stat pages_clean) - clean0)) (pages found clean when staged)"

# Nothing may be left dirty: an fsync of the device now must not write any
# of the pages (a page aipu dropped while still dirty would stay so, with
# Linux's periodic writeback off, until something else writes it). Not a
# plain sync: it skips the page cache of a block device nobody has open.
blktrace_start "$dev" sync
sync "$dev"
blktrace_stop "$TEST_TMP/sync.txt"
left=$(blkevents writes --trace "$TEST_TMP/sync.txt" --sectors "$(page_ranges 2046 $((NPAGES + 1)) 2),$(page_ranges 4096 "$NPAGES" 2)" --actions D | wc -l)
assert_eq 0 "$left" "no staged page was left dirty: fsync of the device wrote none of them"
