#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A declined write keeps the page's first-dirty time. When writeback cannot
# lock one of a page's buffers (someone else holds it), the kernel declines
# the page: folio_redirty_for_writepage() dirties it again without its
# having been written, and the dirtying tracepoint fires as for a new
# dirtying. aipu used to record that as the page's first-dirty time, so the
# page waited another max_age_ms after every declined attempt.
#
# With policy=aipu max_age_ms=2000 period_ms=200, one page of the raw
# null_blk device is dirtied at t0 (an O_DIRECT marker write just before);
# from about t0+1 s the test module tests/vm/decline holds the page's buffer
# locked for 1.5 s, across the page's due time (t0+2 s), so aipu's write is
# declined at least once. The page must then reach the disk within two
# periods of the lock's release: in [t0+2, t0+3.5] s (blktrace). Recording
# the decline as a new dirtying would put the write at t0+4 s or later.
# stat's pages_redirtied must count the declined page, and pages_late the
# write that came after its bound.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"
decline_ko=$(dirname "$AIPU_KO")/aipu_decline.ko
[ -f "$decline_ko" ] || die "$decline_ko is not built (scripts/build-all.sh builds it beside aipu.ko)"

PAGE=2048
HOLD_MS=1500
LO=2.0
HI=3.5
tol=$(jiffy_s)

dev=$(disk_get)
disk_prepare "$dev"
aipu_load policy=aipu max_age_ms=2000 period_ms=200 handover_ms=0

decline_unload() { rmmod aipu_decline 2>/dev/null || true; }
redirtied0=$(aipu_stat pages_redirtied)
late0=$(aipu_stat pages_late)
trace=$TEST_TMP/raw.txt
blktrace_start "$dev" raw
out=$(dirty_pages "$dev" --first-page "$PAGE" --count 1 --stride 1 \
	--marker "$dev:0" --end-marker "$dev:4096") || die "dirty.py failed: $out"
log "$out"
sleep 1
insmod "$decline_ko" path="$dev" index="$PAGE" hold_ms="$HOLD_MS" ||
	die "insmod aipu_decline.ko failed (is page $PAGE of $dev cached?)"
on_exit decline_unload
sleep 4
blktrace_stop "$trace"
dmesg | grep -E 'aipu_decline: (holding|released)' | tail -n 2 | sed 's/^/# /'
aipu_dump

redirtied=$(($(aipu_stat pages_redirtied) - redirtied0))
assert_ge "$redirtied" 1 "aipu's write of page $PAGE was declined and the page counted in pages_redirtied"
why=$(blkevents window --trace "$trace" --marker-sector 0 --end-marker-sector 8 \
	--sectors "$(page_ranges "$PAGE" 1 1)" --lo "$LO" --hi "$HI" --tolerance "$tol") && rc=0 || rc=$?
if [ "$rc" -eq 0 ]; then
	pass "declined page written within two periods of the lock's release: $why"
else
	fail "declined page not written within [t0+$LO, t0+$HI] s: $why"
	blkevents writes --trace "$trace" --marker-sector 0 --sectors "$(page_ranges "$PAGE" 1 1)" \
		--actions QD | head -n 10 | sed 's/^/#   t0+/'
fi
assert_ge "$(($(aipu_stat pages_late) - late0))" 1 "the write after the bound is counted in pages_late"
