#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A file system that refuses every write is not retried every period for
# ever: pages whose ->writepages failed are tried again one max_age later,
# as Linux's redirty_tail() gives such an inode a new dirtied_when, and
# are counted in pages_refused.
#
# ext4 on the test disk, aipu loaded (max_age 60 s, period 0.2 s), 5,000
# pages of one file dirtied (every other page: 2,500 runs), the file system
# shut down without flushing (EXT4_IOC_SHUTDOWN, NOLOGFLUSH: ext4_writepages
# returns -EIO from then on), then max_age set to 1 s. Over the next 10 s:
#   1. pages_refused counts them (at least the 5,000 once);
#   2. they are tried at most once per max_age (a refused page is dated
#      afresh, so it is due again max_age later, found within a period):
#      pages_refused and pages_retried grow by at most 5,000 x (10 / 1 + 2),
#      the rounds that fit in the window and one at each end (before the
#      fix: every period, 5,000 x 50);
#   3. pages_written does not grow (nothing reaches a shut-down ext4).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=5000
WINDOW_S=10

dev=$(disk_get)
disk_prepare "$dev"
fs_make ext4 "$dev"
aipu_load policy=aipu max_age_ms=60000 period_ms=200 handover_ms=0
f=$AIPU_MNT/data
# Allocated and synced first, so the overwrite needs no block allocation.
dd if=/dev/zero of="$f" bs=1M count=40 status=none
sync
dirty_pages "$f" --first-page 0 --count "$NPAGES" --stride 2 --max-ms 60000 >/dev/null ||
	die "dirty.py failed"
tracked=$(aipu_stat pages_tracked)
assert_ge "$tracked" "$NPAGES" "aipu tracks the $NPAGES dirty pages"
# EXT4_IOC_SHUTDOWN = _IOR('X', 125, __u32), flag 2 = EXT4_GOING_FLAGS_NOLOGFLUSH.
python3 - "$AIPU_MNT" <<'PY' || die "EXT4_IOC_SHUTDOWN failed"
import fcntl
import os
import struct
import sys

fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.ioctl(fd, 0x8004587D, struct.pack("I", 2))
os.close(fd)
PY
log "ext4 shut down; $(aipu_stat pages_tracked) pages tracked"
written0=$(aipu_stat pages_written)
aipu_set max_age_ms 1000
refused0=$(aipu_stat pages_refused)
retried0=$(aipu_stat pages_retried)
t0=$(date +%s.%N)
sleep "$WINDOW_S"
refused=$(($(aipu_stat pages_refused) - refused0))
retried=$(($(aipu_stat pages_retried) - retried0))
w=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }')
log "in $w s: pages_refused +$refused, pages_retried +$retried"
aipu_dump
rounds_max=$(awk -v w="$w" -v n="$NPAGES" 'BEGIN { printf "%d\n", n * (w / 1.0 + 2) }')
assert_ge "$refused" "$NPAGES" "1. pages_refused counts the refused pages"
assert_le "$refused" "$rounds_max" "2. pages_refused grows at most once per max_age"
assert_le "$retried" "$rounds_max" "2. pages_retried grows at most once per max_age"
assert_eq "$written0" "$(aipu_stat pages_written)" "3. pages_written did not grow"
aipu_unload || fail "rmmod aipu failed"
