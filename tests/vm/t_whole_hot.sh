#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A file bounded as a whole and kept hot is not written whole every period:
# after a whole-file write the entry takes the time of the oldest dirtying
# seen while it was out, so the file is written about once a max_age, not
# once a period (a database's or a VM image's write-through), and it is
# written in 4-MiB calls, as Linux's flusher writes an inode a chunk at a
# time.
#
# The raw test disk, traced, aipu loaded (max_age 3 s, period 0.5 s):
# 2,000 random pages dirtied, a writer started that dirties 4 random pages
# of those every 0.1 s for 12 s, then (once it writes) drop_caches, whose
# shrinker call makes aipu bound the device's file as a whole at its oldest
# time (as in t_shrink): the whole file is due while the writer goes on.
# Checked:
#   1. the file went whole (fallbacks grew, runs_tracked fell);
#   2. aipu's writes of the file come in at most 12 s / max_age + 3 bursts
#      (groups of writes 0.3 s apart or more; before the fix the entry went
#      back at its old time and the file was written whole once a period:
#      about 24 bursts);
#   3. every page the writer dirtied is on the disk once it stops: aipu
#      tracks nothing max_age + 2 periods later, and the device holds no
#      dirty inode.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NPAGES=2000
HOT_S=12
MAX_AGE=3000
dev=$(disk_get)
disk_prepare "$dev"
debugfs_mount
exec {hold}<"$dev"
on_exit "exec $hold<&-"
sync
aipu_load policy=aipu "max_age_ms=$MAX_AGE" period_ms=500 handover_ms=0
trace=$TEST_TMP/hot.txt
blktrace_start "$dev" hot
direct_write "$dev" 0
dirty_pages "$dev" --first-page 4096 --count "$NPAGES" --stride 2 --max-ms 60000 >/dev/null ||
	die "dirty.py failed"
started=$TEST_TMP/writer.started
rm -f "$started"
python3 - "$dev" "$NPAGES" "$HOT_S" "$started" <<'PY' &
import os
import random
import sys
import time

dev, n, secs, started = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
fd = os.open(dev, os.O_WRONLY)
buf = b"h" * 4096
end = time.monotonic() + secs
rng = random.Random(46)
while time.monotonic() < end:
    for _ in range(4):
        os.pwrite(fd, buf, (4096 + 2 * rng.randrange(n)) * 4096)
    if not os.path.exists(started):
        open(started, "w").close()
    time.sleep(0.1)
os.close(fd)
PY
writer=$!
wait_until 10 test -e "$started" || die "the writer did not start within 10 s"
runs0=$(aipu_stat runs_tracked)
fb0=$(aipu_stat fallbacks)
echo 2 >/proc/sys/vm/drop_caches
assert_gt "$(aipu_stat fallbacks)" "$fb0" "1. the file went whole (fallbacks)"
assert_le "$(aipu_stat runs_tracked)" $((runs0 / 10)) "1. the shrinker took its runs back"
wait "$writer" || die "the writer failed"
settled() { [ "$(aipu_stat pages_tracked)" = 0 ] && [ "$(bdi_dirty_inodes "$dev")" = 0 ]; }
if wait_until 5 settled; then
	pass "3. every dirtied page written once the writer stopped (pages_tracked 0, no dirty inode)"
else
	fail "3. 5 s after the writer: pages_tracked $(aipu_stat pages_tracked), dirty inodes $(bdi_dirty_inodes "$dev")"
fi
blktrace_stop "$trace"
aipu_dump
bursts=$(blkevents writes --trace "$trace" --marker-sector 0 --sectors 32768-99999999 --actions Q |
	sort -n | awk '$1 > prev + 0.3 { n++ } { prev = $1 } END { print n + 0 }')
log "aipu's writes of the file came in $bursts burst(s) over ${HOT_S} s"
assert_le "$bursts" $((HOT_S * 1000 / MAX_AGE + 3)) "2. the hot whole file is written about once a max_age, not once a period"
assert_gt "$bursts" 0 "2. the file was written while hot"
