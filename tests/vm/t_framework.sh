#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Self-test of the VM test framework, without aipu: the test disk, blktrace
# and blkevents.py timing (O_DIRECT writes at known delays after a marker),
# dirty.py + sync, file-to-sector mapping on ext4, and the kernel log check.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_loaded && die "aipu is loaded: this test measures the kernel alone"

dev=$(disk_get)
assert_match '^/dev/' "$dev" "test disk is $dev"
disk_prepare "$dev"
assert_eq 10 "$(cat "/sys/class/bdi/$(disk_majmin "$dev")/min_ratio")" "bdi min_ratio set"

trace=$TEST_TMP/direct.txt
MIB=1048576
# 1. O_DIRECT writes ~1 s after the marker: the window check must place them.
blktrace_start "$dev" direct
direct_write "$dev" 0
sleep 1
for i in 0 1 2 3; do
	direct_write "$dev" $((MIB + i * 8192))
done
blktrace_stop "$trace"
ranges=$((MIB / 512))+8,$((MIB / 512 + 16))+8,$((MIB / 512 + 32))+8,$((MIB / 512 + 48))+8
assert_ok "marker found" blkevents marker --trace "$trace" --marker-sector 0
assert_ok "writes lie in [t0+0.9, t0+30] s" \
	blkevents window --trace "$trace" --marker-sector 0 --sectors "$ranges" --lo 0.9 --hi 30
assert_fails "writes do not lie in [t0+0, t0+0.5] s" \
	blkevents window --trace "$trace" --marker-sector 0 --sectors "$ranges" --lo 0 --hi 0.5
assert_fails "writes do not lie in [t0+20, t0+30] s" \
	blkevents window --trace "$trace" --marker-sector 0 --sectors "$ranges" --lo 20 --hi 30
assert_fails "an unwritten sector is noticed" \
	blkevents window --trace "$trace" --marker-sector 0 --sectors "$ranges,$((MIB / 512 + 64))+8" --lo 0.9 --hi 30
blkevents window --trace "$trace" --marker-sector 0 --sectors "$ranges" --lo 0.9 --hi 30 | sed 's/^/# /'

# 2. Buffered writes, written by sync 2 s later (Linux's periodic writeback
# waits 30 s and min_ratio keeps background writeback away).
trace=$TEST_TMP/buffered.txt
blktrace_start "$dev" buffered
out=$(dirty_pages "$dev" --first-page 512 --count 16 --marker "$dev:4096" --end-marker "$dev:8192" --max-ms 60000)
log "$out"
sleep 2
sync
blktrace_stop "$trace"
ranges=$(page_ranges 512 16 2)
assert_ok "buffered pages written by sync after t0+2 s, all of them" \
	blkevents window --trace "$trace" --marker-sector 8 --end-marker-sector 16 \
	--sectors "$ranges" --lo 1.9 --hi 30
blkevents window --trace "$trace" --marker-sector 8 --sectors "$ranges" --lo 1.9 --hi 30 | sed 's/^/# /'
n=$(blkevents writes --trace "$trace" --sectors "$ranges" --actions D | wc -l)
assert_eq 16 "$n" "16 separate write requests for 16 non-adjacent pages"

# 3. A file on ext4: its sectors from filefrag, its writes in the trace.
fs_make ext4 "$dev"
trace=$TEST_TMP/ext4.txt
blktrace_start "$dev" ext4
dd if=/dev/urandom of="$AIPU_MNT/f" bs=4096 count=64 status=none
sync
blktrace_stop "$trace"
ranges=$(blkevents sectors --file "$AIPU_MNT/f")
log "file sectors: $ranges"
assert_match '^[0-9]+-[0-9]+' "$ranges" "filefrag gives sector ranges"
n=$(blkevents writes --trace "$trace" --sectors "$ranges" --actions D |
	awk '{ s += $5 } END { print s + 0 }')
assert_eq 512 "$n" "64 pages = 512 sectors of the file written"

# 4. The kernel log check sees a planted line.
echo "aipu-selftest: WARNING: planted line" >"$TEST_TMP/fake.dmesg"
assert_fails "dmesg_check catches WARNING" dmesg_check "$TEST_TMP/fake.dmesg"
echo "aipu-selftest: all fine, debug output" >"$TEST_TMP/fake.dmesg"
assert_ok "dmesg_check ignores harmless lines" dmesg_check "$TEST_TMP/fake.dmesg"

# 5. run-guest.sh held the hook points (scripts/hold-hooks.sh), the block
#    events too: blktrace's start and stop then patch no kernel text.
held() { # EVENT_DIR: enabled in both hold instances
	local i
	for i in aipu-hold aipu-hold-block; do
		grep -q '^1' "/sys/kernel/tracing/instances/$i/events/$1/enable" || return 1
	done
}
for e in block/block_bio_queue block/block_rq_insert block/block_rq_issue block/block_rq_complete; do
	assert_ok "trace event $e held in two instances" held "$e"
done
