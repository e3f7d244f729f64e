#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Soak: files created, overwritten and deleted under aipu for
# AIPU_SOAK_SECONDS (default 60, `make check`; `make stress` runs it for
# STRESS_SECONDS, 1,800), with the inode cache and aipu's memory sampled:
# both stay flat. A mail spool or a build tree under aipu must not keep
# every inode it ever wrote (an inode left dirty after aipu wrote it is
# never on the LRU, so no shrinker can free it).
#
# ext4 on the test disk, aipu loaded (max_age 2 s, period 0.5 s). A writer
# keeps a spool of at most 600 files: each step creates a file of 1-16
# pages, overwrites a random one in place, and past 600 files deletes the
# oldest. Every 15 s it pauses: once aipu tracks nothing (at most max_age +
# 2 periods + 5 s; ext4 dirties an inode again when it allocates its
# blocks, so data and then metadata), drop_caches (echo 3: an inode with
# cached pages is not on the inode LRU, so the page cache goes first) and
# a sample of the
# inodes cached (/proc/sys/fs/inode-nr), aipu's mem_bytes and
# mappings_tracked; then it goes on. Checked:
#   1. the writer made at least 1,000 files (so the spool turned over);
#   2. every sample's inode count is at most the baseline (before the
#      writer, after drop_caches) + 100: with nothing dirty, the spool's
#      inodes go with the drop (before the fix: the 600 stayed, dirty to
#      the VFS);
#   3. flat: the largest inode count and mem_bytes of the second half of
#      the run are at most those of the first half + 150 inodes and
#      + 256 KiB;
#   4. after the writer stops: aipu tracks nothing within max_age + 2
#      periods + 5 s, and the device's dirty inode lists are empty.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

SECONDS_RUN=${AIPU_SOAK_SECONDS:-60}
if ! [[ $SECONDS_RUN =~ ^[0-9]+$ ]] || [ "$SECONDS_RUN" -lt 30 ]; then
	die "AIPU_SOAK_SECONDS must be a whole number of seconds, at least 30, not '$SECONDS_RUN'"
fi
WRITE_S=15
dev=$(disk_get)
disk_prepare "$dev"
debugfs_mount
fs_make ext4 "$dev"
spool=$AIPU_MNT/spool
mkdir "$spool"
sync
aipu_load policy=aipu max_age_ms=2000 period_ms=500 handover_ms=0

inodes_cached() { awk '{ print $1 }' /proc/sys/fs/inode-nr; }
echo 3 >/proc/sys/vm/drop_caches
base=$(inodes_cached)
made=$TEST_TMP/made
pause=$TEST_TMP/pause
paused=$TEST_TMP/paused
rm -f "$pause" "$paused"
python3 - "$spool" "$SECONDS_RUN" "$made" "$pause" "$paused" <<'PY' &
import os
import random
import sys
import time

spool, secs, made, pause, paused = sys.argv[1], float(sys.argv[2]), *sys.argv[3:]
rng = random.Random(44)
names, n = [], 0
end = time.monotonic() + secs
while time.monotonic() < end:
    if os.path.exists(pause):
        open(paused, "w").close()
        while os.path.exists(pause):
            time.sleep(0.05)
        os.unlink(paused)
    p = os.path.join(spool, "m%07d" % n)
    with open(p, "wb") as f:
        f.write(os.urandom(4096 * rng.randint(1, 16)))
    names.append(p)
    n += 1
    q = rng.choice(names)
    fd = os.open(q, os.O_WRONLY)
    os.pwrite(fd, os.urandom(4096), 0)
    os.close(fd)
    if len(names) > 600:
        os.unlink(names.pop(0))
    time.sleep(0.005)
with open(made, "w") as f:
    print(n, file=f)
PY
writer=$!
samples=$TEST_OUT/samples.txt
echo "# s inodes_beyond_base mem_bytes mappings_tracked" >"$samples"
untracked() { [ "$(aipu_stat pages_tracked) $(aipu_stat mappings_tracked)" = "0 0" ]; }
sample() {
	wait_until 9 untracked || log "still tracked 9 s into a pause: $(aipu_stat pages_tracked) pages"
	echo 3 >/proc/sys/vm/drop_caches
	echo "$((SECONDS - t0)) $(($(inodes_cached) - base)) $(aipu_stat mem_bytes) $(aipu_stat mappings_tracked)" >>"$samples"
}
t0=$SECONDS
while kill -0 "$writer" 2>/dev/null; do
	sleep "$WRITE_S"
	touch "$pause"
	if wait_until 5 test -e "$paused"; then
		sample
	fi
	rm -f "$pause"
done
wait "$writer" || die "the writer failed"
log "baseline $base inodes; samples (s, inodes beyond it, mem_bytes, mappings):"
sed 's/^/#   /' "$samples"
assert_ge "$(cat "$made")" 1000 "1. the writer made at least 1,000 files"
worst=$(awk '!/^#/ && $2 > m { m = $2 } END { print m + 0 }' "$samples")
assert_gt "$(grep -vc '^#' "$samples")" 1 "2. at least two pauses sampled"
assert_le "$worst" 100 "2. inodes cached after each pause's drop_caches, beyond the baseline"
read -r i1 i2 m1 m2 < <(awk -v h="$((SECONDS_RUN / 2))" '!/^#/ {
		if ($1 <= h) { if ($2 > i1) i1 = $2; if ($3 > m1) m1 = $3 }
		else { if ($2 > i2) i2 = $2; if ($3 > m2) m2 = $3 } }
	END { print i1 + 0, i2 + 0, m1 + 0, m2 + 0 }' "$samples")
assert_le "$i2" $((i1 + 150)) "3. inodes flat: the second half's largest count, against the first half's ($i1) + 150"
assert_le "$m2" $((m1 + 262144)) "3. aipu's memory flat: the second half's largest mem_bytes, against the first half's ($m1) + 256 KiB"
settled() { [ "$(aipu_stat pages_tracked)" = 0 ] && [ "$(bdi_dirty_inodes "$dev")" = 0 ]; }
if wait_until 8 settled; then
	pass "4. after the writer: nothing tracked, no dirty inode on the device"
else
	fail "4. 8 s after the writer: pages_tracked $(aipu_stat pages_tracked), dirty inodes $(bdi_dirty_inodes "$dev")"
fi
aipu_dump
