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
# With policy=aipu period_ms=200, one page of the raw null_blk device is
# dirtied at t0 (an O_DIRECT marker write just before); right after, the
# test module tests/vm/decline locks the page's buffers (it must find the
# page still dirty: max_age_ms is 10 minutes during this set-up, which took
# over 3 s on the debug kernel). Then max_age_ms goes to 3000, so aipu's
# write at the page's due time (t0+3 s, or the next period if the set-up
# took longer) is declined. The test waits until
# stat's pages_redirtied counts the decline (the probe saw the redirtying
# and kept the page's time), then writes a marker, releases the buffers
# (the module's release parameter: done when the write returns) and writes
# another marker. The page must reach the disk after the first and within
# 1 s of the second (blktrace): the flusher's next period, with room for a
# slow guest. Recording the decline as a new dirtying would put the write
# max_age_ms after the decline, 2.5 s or more after the markers; and the
# old code never counted a decline, so the wait for it fails there.
# pages_written and pages_late must count the page's one write (after its
# bound), not each declined attempt (->writepages counts those as written).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"
decline_ko=$(dirname "$AIPU_KO")/aipu_decline.ko
[ -f "$decline_ko" ] || die "$decline_ko is not built (scripts/build-all.sh builds it beside aipu.ko)"

PAGE=2048
MAX_AGE_MS=3000
PERIOD_MS=200
HI=1.0
RELEASE_SECTOR=16
RELEASED_SECTOR=24
tol=$(jiffy_s)

dev=$(disk_get)
disk_prepare "$dev"
SETUP_MAX_AGE_MS=600000
aipu_load policy=aipu max_age_ms=$SETUP_MAX_AGE_MS period_ms=$PERIOD_MS handover_ms=0
decline_unload() { rmmod aipu_decline 2>/dev/null || true; }
redirtied0=$(aipu_stat pages_redirtied)
late0=$(aipu_stat pages_late)
written0=$(aipu_stat pages_written)
declined() { [ "$(aipu_stat pages_redirtied)" -gt "$redirtied0" ]; }

trace=$TEST_TMP/raw.txt
blktrace_start "$dev" raw
out=$(dirty_pages "$dev" --first-page "$PAGE" --count 1 --stride 1 \
	--marker "$dev:0" --end-marker "$dev:4096" --max-ms 60000) || die "dirty.py failed: $out"
log "$out"
# Held until the test releases it: the module's own timer is not used.
insmod "$decline_ko" path="$dev" index="$PAGE" hold_ms=600000 ||
	die "insmod aipu_decline.ko failed (is page $PAGE of $dev cached?)"
on_exit decline_unload
held=$(dmesg | grep -E 'aipu_decline: holding' | tail -n 1 || true)
log "$held"
case "$held" in
*"(dirty 1)"*) ;;
*) die "page $PAGE was no longer dirty when the decline module locked it: something wrote it during the set-up" ;;
esac
assert_eq 0 "$(($(aipu_stat pages_written) - written0))" "aipu wrote nothing during the set-up (max_age_ms $SETUP_MAX_AGE_MS)"
aipu_set max_age_ms "$MAX_AGE_MS"
wait_until $((MAX_AGE_MS / 1000 + 10)) declined && rc=0 || rc=$?
assert_eq 0 "$rc" "aipu's write of page $PAGE was declined and the page counted in pages_redirtied"
direct_write "$dev" $((RELEASE_SECTOR * 512))
echo 1 >/sys/module/aipu_decline/parameters/release
direct_write "$dev" $((RELEASED_SECTOR * 512))
sleep 3 # the window and the buggy write's time (max_age after the decline)
blktrace_stop "$trace"
dmesg | grep -E 'aipu_decline: released' | tail -n 1 | sed 's/^/# /'
aipu_dump

why=$(blkevents window --trace "$trace" --marker-sector "$RELEASE_SECTOR" \
	--end-marker-sector "$RELEASED_SECTOR" --sectors "$(page_ranges "$PAGE" 1 1)" --lo 0 --hi "$HI" --tolerance "$tol") && rc=0 || rc=$?
if [ "$rc" -eq 0 ]; then
	pass "declined page written within ${HI} s of the buffers' release: $why"
else
	fail "declined page not written within ${HI} s of the buffers' release: $why"
	blkevents writes --trace "$trace" --marker-sector 0 --sectors "$(page_ranges "$PAGE" 1 1)" \
		--actions QD | head -n 10 | sed 's/^/#   t0+/' || true
fi
# ->writepages counts a page it declined as written: aipu must not.
assert_eq 1 "$(($(aipu_stat pages_written) - written0))" "pages_written counts the page once, not each declined attempt"
assert_eq 1 "$(($(aipu_stat pages_late) - late0))" "the write after the bound is counted in pages_late, once"
