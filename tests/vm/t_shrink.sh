#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory pressure: aipu's shrinker gives its runs back and bounds the files
# as wholes instead (early, never late).
#
# NPAGES random pages of the raw test disk are dirtied (one run each), then
# `echo 2 > drop_caches` asks every slab shrinker to free what it can. aipu's
# runs must go (runs_tracked, mem_bytes), counted in fallbacks, and every
# page must still reach the disk within max_age + period of the marker
# (max_age 20 s times AIPU_TIME_SCALE, period 1 s; early is allowed: the
# whole-file run takes the device's oldest time), every sector of them
# written. The bound is long so that the pressure comes before any page is
# due even in a slow guest (the test checks that aipu had written nothing
# by then).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=2000
tol=$(jiffy_s)
jiffy_ms=$(jiffy_ms)
dev=$(disk_get)
disk_prepare "$dev"

sync
# 20 s; longer on a slower kernel (the debug kernel took over 20 s to dirty
# the pages and run drop_caches, and aipu wrote pages before the pressure).
MAX_AGE_S=$((20 * $(time_scale)))
aipu_load policy=aipu max_age_ms=$((MAX_AGE_S * 1000)) period_ms=1000 handover_ms=0
trace=$TEST_TMP/shrink.txt
blktrace_start "$dev" shrink
out=$(pagetrace dirty "$dev" --first-page 4096 --count "$NPAGES" --stride 2 \
	--marker "$dev:0" --end-marker "$dev:4096" --log "$TEST_TMP/shrink.log") ||
	die "pagetrace dirty failed: $out"
log "$out"
runs0=$(aipu_stat runs_tracked)
mem0=$(aipu_stat mem_bytes)
fb0=$(aipu_stat fallbacks)
assert_ge "$runs0" $((NPAGES * 9 / 10)) "$NPAGES random pages are tracked as runs before the pressure ($runs0)"
echo 2 >/proc/sys/vm/drop_caches
runs1=$(aipu_stat runs_tracked)
mem1=$(aipu_stat mem_bytes)
[ "$(aipu_stat pages_written)" -eq 0 ] ||
	die "aipu wrote pages before the pressure: the set-up took longer than max_age ($MAX_AGE_S s)"
log "runs $runs0 -> $runs1, mem_bytes $mem0 -> $mem1, fallbacks $fb0 -> $(aipu_stat fallbacks)"
assert_le "$runs1" $((NPAGES / 10)) "drop_caches (slab shrinkers) took aipu's runs back"
assert_lt "$mem1" "$mem0" "mem_bytes went down"
assert_gt "$(aipu_stat fallbacks)" "$fb0" "the files bounded as wholes count in fallbacks"
written() { [ "$(aipu_stat pages_written)" -ge "$NPAGES" ]; }
wait_until $((MAX_AGE_S + 20)) written || log "aipu had not written all $NPAGES pages $((MAX_AGE_S + 20)) s on"
sleep 1 # the last writes' completions
blktrace_stop "$trace"
aipu_dump
rc=0
why=$(pagetrace window --trace "$trace" --log "$TEST_TMP/shrink.log" --marker-sector 0 \
	--end-marker-sector 8 --lo 0 --hi $((MAX_AGE_S + 1)).5 --tolerance "$tol") || rc=$?
if [ "$rc" -eq 0 ]; then
	pass "every page written within max_age + period, none lost track of: $why"
else
	fail "after the shrinker: $why"
fi
# pages_late is judged to the jiffy from the whole file's time (its oldest
# page's): a pass woken a few ms after its tick (seen under TCG) counts the
# whole file late, and must not count it otherwise. So it may move only by
# pages blktrace shows queued more than the bound less a jiffy after the
# oldest page's dirtying (the log's dirty times are never late).
pagetrace analyze --trace "$trace" --marker-sector 0 --log "$TEST_TMP/shrink.log" \
	--table "$TEST_OUT/shrink.pages" >"$TEST_OUT/shrink.m" || die "pagetrace analyze failed"
late_lo=$(queued_past "$TEST_OUT/shrink.pages" $(((MAX_AGE_S + 1) * 1000 - jiffy_ms)) oldest)
log "pages_late $(aipu_stat pages_late); $late_lo page(s) queued past the bound less a jiffy"
assert_le "$(aipu_stat pages_late)" "$late_lo" \
	"pages_late counts only pages blktrace shows queued past max_age + period (less a jiffy) of the file's oldest page"
aipu_unload
