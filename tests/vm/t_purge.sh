#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Write purge (write_alloc=purge): "after writeback, the purged pages are no
# longer in the page cache; with update they stay cached; a page re-dirtied
# during writeback is not lost."
#
# A null_blk device made through configfs whose every request takes 20 ms
# (so writeback lasts long enough to race with a writer); the test disk if
# configfs cannot make one. policy aipu, max_age 1 s, period 1 s. Page
# cache residency is read with mincore (pagetrace.py cached).
#
# 1. Under policy kernel, write_alloc=purge is refused with EINVAL and
#    write_alloc stays update; switching aipu -> kernel puts purge back to
#    update.
# 2. Re-dirtying, on 64 pages of the raw device (so no file system
#    metadata mixes into the counters): the pages are rewritten at random
#    for 8 s (half hot, rewritten every ~0.2 s, half cold, every ~2 s;
#    the writer's LRU-add batch drained after each write: see 3) while
#    aipu writes and purges them, under blktrace. Before each rewrite the
#    writer reads the page and checks it holds the version it last wrote:
#    a dirty page dropped from the cache would read back older data.
#    Afterwards aipu wrote some pages more than once (they were dirtied
#    again after it wrote them), pages_purged grew, no page is left dirty
#    (an fsync of the device writes none), no page whose last I/O was
#    aipu's write is cached (pages the writer's reads brought in after
#    their last write may be), and after drop_caches every page read from
#    the device holds its last version.
# 3. A page rewritten by a process that then sleeps on its CPU, with its
#    page still in that CPU's LRU-add batch at purge time, is purged too
#    (the page is clean and unmapped; only the batch holds a reference).
# 4. update, on ext4: a new file of 256 pages, written by aipu (stat
#    pages_written), is still wholly cached 4 s later, and reading it sends
#    no read to the device (blktrace); pages_purged does not move.
# 5. purge, on ext4: the same with another file: once aipu wrote it, none of
#    its pages is cached, pages_purged grew by 256 or more, the update file
#    is still wholly cached, and reading the file reads all of its sectors
#    from the device and finds the data written.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

# cached FILE [ARGS]: how many of FILE's pages are in the page cache.
cached() { pagetrace cached "$@" | cut -d' ' -f1; }
NB=/sys/kernel/config/nullb/aipu_slow

# slow_nullb: print a new memory-backed null_blk device whose requests take
# 20 ms, made through configfs; status 1 if it cannot be made. The disk is
# named after the configfs directory (6.1, 6.12) or nullb<index> (older).
slow_nullb() {
	local i d=""
	modprobe null_blk nr_devices=0 >/dev/null 2>&1 || true
	[ -d /sys/kernel/config/nullb ] ||
		mount -t configfs none /sys/kernel/config >/dev/null 2>&1 || true
	[ -d /sys/kernel/config/nullb ] || return 1
	mkdir "$NB" 2>/dev/null || return 1
	{
		echo 512 >"$NB/size" && echo 1 >"$NB/memory_backed" && echo 2 >"$NB/irqmode" &&
			echo 20000000 >"$NB/completion_nsec" && echo 1 >"$NB/power"
	} 2>/dev/null || return 1
	for ((i = 0; i < 50; i++)); do
		for d in "/dev/${NB##*/}" "/dev/nullb$(cat "$NB/index")"; do
			[ -b "$d" ] && break 2
		done
		d=""
		sleep 0.1
	done
	[ -n "$d" ] || return 1
	echo "$d"
}
slow_nullb_remove() {
	[ -d "$NB" ] || return 0
	echo 0 >"$NB/power" 2>/dev/null || true
	rmdir "$NB"
}

# read_sectors FILE NAME: read FILE through the page cache under blktrace;
# print how many of FILE's sectors were read from the device.
read_sectors() {
	local f=$1 name=$2 ranges
	ranges=$(blkevents sectors --file "$f") || die "no blocks for $f"
	blktrace_start "$dev" "$name" >&2
	cat "$f" >/dev/null
	blktrace_stop "$TEST_TMP/$name.txt" >&2
	python3 - "$TEST_TMP/$name.txt" "$ranges" <<'PY'
import os
import sys

sys.path.insert(0, os.environ["TESTS_DIR"])
import blkevents

events = blkevents.read_events(sys.argv[1])
ranges = blkevents.parse_ranges(sys.argv[2])
n = 0
for e in events:
    if e.action == "D" and "R" in e.rwbs:
        for a, b in ranges:
            lo, hi = max(a, e.sector), min(b, e.end - 1)
            n += max(0, hi - lo + 1)
print(n)
PY
}
export TESTS_DIR

on_exit slow_nullb_remove
if dev=$(slow_nullb); then
	log "made $dev through configfs: memory backed, 20 ms a request"
else
	dev=$(disk_get)
	log "configfs null_blk not available: using $dev (writeback is then near instant)"
fi
disk_prepare "$dev"
# Hold the device open: its last close would write and drop its page cache.
exec 7<"$dev"
on_exit "exec 7<&-"

# 1. The rule: purge needs a policy that writes.
aipu_load policy=kernel max_age_ms=1000 period_ms=1000 handover_ms=0
assert_write EINVAL "$AIPU_SYSFS/write_alloc" purge "write_alloc=purge under policy kernel is refused"
assert_file_eq "$AIPU_SYSFS/write_alloc" "[update] purge" "write_alloc is still update"
aipu_set policy aipu
assert_write OK "$AIPU_SYSFS/write_alloc" purge "write_alloc=purge under policy aipu is accepted"
aipu_set policy kernel
assert_file_eq "$AIPU_SYSFS/write_alloc" "[update] purge" "switching to kernel put write_alloc back to update"
aipu_set policy aipu
aipu_set write_alloc purge

# 2. Re-dirtying during writeback and purge: pages 1024..1087 of the device.
FIRST=1024
N=64
p0=$(aipu_stat pages_purged)
n0=$(aipu_stat pages_not_purged)
r0=$(aipu_stat pages_retried)
pagetrace fill "$dev" --first-page $FIRST --pages $N
blktrace_start "$dev" redirty
rc=0
out=$(pagetrace rewrite "$dev" --first-page $FIRST --pages $N --seconds 8 --drain \
	--state "$TEST_TMP/rewrite.state") || rc=$?
log "$out"
assert_eq 0 "$rc" "re-dirty: every read during the rewrites saw the version last written (no dirty page dropped)"
sleep 5
blktrace_stop "$TEST_TMP/redirty.txt"
aipu_dump
log "re-dirty: stat pages_purged +$(($(aipu_stat pages_purged) - p0)), pages_not_purged +$(($(aipu_stat pages_not_purged) - n0)), pages_retried +$(($(aipu_stat pages_retried) - r0))"
log "re-dirty: pages still cached (count, first indexes): $(pagetrace cached "$dev" --first-page $FIRST --count $N)"
# The race was run: pages aipu had written (and queued for purging) were
# dirtied again and written by aipu again. A range with a dirty page is
# retried on later passes until it is clean, so such pages are purged in
# the end and pages_not_purged need not move.
again=$(blkevents writes --trace "$TEST_TMP/redirty.txt" --sectors "$(page_ranges $FIRST $N 1)" --actions Q |
	awk '$6 == "aipu" { n[$4]++ } END { for (s in n) if (n[s] > 1) c++; print c + 0 }')
assert_gt "$again" 0 "re-dirty: pages were written by aipu more than once (dirtied again after aipu wrote them)"
assert_gt "$(($(aipu_stat pages_purged) - p0))" 0 "re-dirty: pages were purged meanwhile (pages_purged grew)"
blktrace_start "$dev" fsync
sync "$dev"
blktrace_stop "$TEST_TMP/fsync.txt"
assert_eq 0 "$(blkevents writes --trace "$TEST_TMP/fsync.txt" --sectors "$(page_ranges $FIRST $N 1)" --actions D | wc -l)" \
	"re-dirty: no page left dirty once aipu was done (an fsync of the device writes none)"
# Purge is for what aipu wrote: a page whose last I/O was a read (the
# writer's own reads bring neighbours in too) or a write Linux's own
# writeback queued rightly stays cached. A page whose last I/O is aipu's
# write and that is still cached is a miss.
missed=0
for pg in $(pagetrace cached "$dev" --first-page $FIRST --count $N --list); do
	by=$(awk -v s=$((pg * 8)) '$2 == "Q" && $4 <= s && s < $4 + $5 { last = $3 " by " $NF } END { print last }' \
		"$TEST_TMP/redirty.txt")
	log "re-dirty: page $pg still cached; its last I/O: ${by:-none}"
	case "$by" in "W"*" by aipu" | "") missed=$((missed + 1)) ;; esac
done
assert_eq 0 "$missed" "re-dirty: no page whose last I/O was a write by aipu is still cached"
echo 3 >/proc/sys/vm/drop_caches
out=$(pagetrace verify "$dev" --first-page $FIRST --state "$TEST_TMP/rewrite.state") && rc=0 || rc=$?
log "$out"
assert_eq 0 "$rc" "re-dirty: after drop_caches every page holds its last version"

# 3. A page just read into the cache sits in its CPU's LRU-add batch, which
#    holds a reference, until that CPU drains the batch (an munmap, a
#    process exit, a full batch...). A writer on CPU 1 reads and rewrites a
#    purged page, then sleeps on that CPU past aipu's write and purge; this
#    shell stays on CPU 0 meanwhile, so nothing drains CPU 1's batch.
if [ "$(nproc)" -ge 2 ]; then
	PG=2048
	# Each wait is the bound (max_age 1 s + period 1 s) and a purge pass
	# more, with room for a slow guest: the page must be gone by then.
	purged() { [ "$(cached "$dev" --first-page "$PG" --count 1)" = 0 ]; }
	pagetrace fill "$dev" --first-page $PG --pages 1
	wait_until 10 purged && rc=0 || rc=$?
	assert_eq 0 "$rc" "lru: the page was purged after its first write"
	n0=$(aipu_stat pages_not_purged)
	cpus=$(taskset -p $$ | awk '{ print $NF }')
	taskset -p 1 $$ >/dev/null
	# The writer says when it has rewritten the page, then sleeps on CPU 1
	# (killed once the check is done), so the batch is not drained while
	# this shell waits for the purge.
	flag=$TEST_TMP/lru.written
	rm -f "$flag"
	taskset 2 python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
off = int(sys.argv[2]) * 4096
os.pwrite(fd, os.pread(fd, 4096, off), off)
os.close(fd)
open(sys.argv[3], "w").close()
time.sleep(60)
' "$dev" $PG "$flag" &
	writer=$!
	wait_until 30 test -e "$flag" || die "lru: the writer did not rewrite page $PG within 30 s"
	wait_until 10 purged && left=0 || left=$(cached "$dev" --first-page $PG --count 1)
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	taskset -p "$cpus" $$ >/dev/null
	log "lru: stat pages_not_purged +$(($(aipu_stat pages_not_purged) - n0))"
	assert_eq 0 "$left" "lru: a page rewritten by a process still asleep on its CPU was purged too"
else
	log "lru: one CPU only: case skipped"
fi

# 4. update, on ext4.
aipu_set write_alloc update
fs_make ext4 "$dev"
mnt=$AIPU_MNT
w0=$(aipu_stat pages_written)
p0=$(aipu_stat pages_purged)
pagetrace fill "$mnt/update" --pages 256
sleep 4
assert_ge "$(($(aipu_stat pages_written) - w0))" 256 "update: aipu wrote the file's 256 pages"
assert_eq 256 "$(cached "$mnt/update")" "update: all 256 pages still cached after writeback"
assert_eq 0 "$(($(aipu_stat pages_purged) - p0))" "update: stat pages_purged did not move"
assert_eq 0 "$(read_sectors "$mnt/update" upd)" "update: reading the file reads nothing from the device"

# 5. purge, on ext4.
aipu_set write_alloc purge
w0=$(aipu_stat pages_written)
p0=$(aipu_stat pages_purged)
pagetrace fill "$mnt/purge" --pages 256
sleep 5
aipu_dump
assert_ge "$(($(aipu_stat pages_written) - w0))" 256 "purge: aipu wrote the file's 256 pages"
assert_eq 0 "$(cached "$mnt/purge")" "purge: none of the 256 pages is cached after writeback"
assert_ge "$(($(aipu_stat pages_purged) - p0))" 256 "purge: stat pages_purged grew by 256 or more"
assert_eq 256 "$(cached "$mnt/update")" "purge: the file written under update is still wholly cached"
assert_eq $((256 * 8)) "$(read_sectors "$mnt/purge" pur)" "purge: reading the file reads all its sectors from the device"
seq 0 255 | sed 's/$/ 0/' >"$TEST_TMP/purge.state"
assert_ok "purge: the file reads back as written" pagetrace verify "$mnt/purge" --state "$TEST_TMP/purge.state"
