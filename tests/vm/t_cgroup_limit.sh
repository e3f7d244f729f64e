#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A writer in a memory cgroup at its limit: aipu's caches are SLAB_ACCOUNT,
# so its probes' GFP_NOWAIT allocations are charged to that cgroup and fail
# when it sits at memory.max (a container unpacking an image). A tracker
# that cannot be had at all would hand its file back to Linux's periodic
# writeback, for the whole machine; what must hold is that it does not:
# Linux's periodic writeback stays off, and every page still reaches the
# disk within the bound.
#
# ext4 on the test disk, aipu loaded (max_age 3 s, period 0.5 s), a cgroup
# with memory.max 8 MiB, two shell loops in it creating 2,500 one-page
# files each. Checked:
#   1. the cgroup sat at its limit (memory.events max grew);
#   2. while they write and until aipu has written everything,
#      kupdate_off stays 1 and handover_left_ms 0 (sampled every 0.2 s);
#   3. within 20 s of the writers' end nothing is tracked and Linux holds
#      no dirty inode on the disk (ext4's journal dirties the disk's
#      buffers up to a commit interval, 5 s, after the last write, and a
#      data write dirties the inode's size and extents, each a max_age
#      more): every page reached the disk with Linux's periodic writeback
#      off (the bound itself is t_age_bound's);
#   4. mounted again, every file holds its own line (a writer the cgroup's
#      OOM killer stopped may leave its last file empty).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NFILES=2500
MAX_AGE_MS=3000
PERIOD_MS=500
CG=/sys/fs/cgroup/aipu-limit
[ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup v2 at /sys/fs/cgroup"
grep -qw memory /sys/fs/cgroup/cgroup.controllers || skip "no memory controller"
debugfs_mount
echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || die "cannot enable the memory controller"
mkdir -p "$CG"
on_exit "rmdir $CG"
echo 8M >"$CG/memory.max"

dev=$(disk_get)
disk_prepare "$dev"
fs_make ext4 "$dev"
mkdir "$AIPU_MNT/d"
sync
aipu_load policy=aipu max_age_ms=$MAX_AGE_MS period_ms=$PERIOD_MS handover_ms=0
max0=$(awk '$1 == "max" { print $2 }' "$CG/memory.events")

writer() { # PREFIX
	bash -c 'echo $$ >"$1/cgroup.procs"; for ((i = 0; i < $2; i++)); do printf "%s %d\n" "$3" $i >"$4/$3$i"; done' \
		writer "$CG" "$NFILES" "$1" "$AIPU_MNT/d"
}
writer a &
wa=$!
writer b &
wb=$!
on_exit "kill $wa $wb 2>/dev/null || true"
on=0
left=0
samples=0
oldest=0
sample() {
	local o
	o=$(aipu_stat oldest_age_ms)
	[ "$o" -le "$oldest" ] || oldest=$o
	[ "$(aipu_stat kupdate_off)" = 1 ] || on=$((on + 1))
	[ "$(aipu_stat handover_left_ms)" = 0 ] || left=$((left + 1))
	samples=$((samples + 1))
}
while kill -0 "$wa" 2>/dev/null || kill -0 "$wb" 2>/dev/null; do
	sample
	sleep 0.2
done
rc=0
wait "$wa" || rc=$?
wait "$wb" || rc=$?
t_end=$SECONDS
log "writers done (status $rc); memory.events: $(tr '\n' ' ' <"$CG/memory.events")"
settled() {
	sample
	[ "$(aipu_stat pages_tracked)" = 0 ] && [ "$(bdi_dirty_inodes "$dev")" = 0 ]
}
bound=20
if wait_until "$bound" settled; then
	pass "3. within $((SECONDS - t_end)) s of the writers' end nothing is tracked or dirty on the disk"
else
	fail "3. $bound s after the writers' end: pages_tracked $(aipu_stat pages_tracked), dirty inodes $(bdi_dirty_inodes "$dev")"
fi
max1=$(awk '$1 == "max" { print $2 }' "$CG/memory.events")
assert_gt "$max1" "$max0" "1. the cgroup sat at memory.max (memory.events max)"
log "aipu's fallbacks $(aipu_stat fallbacks), pages_late $(aipu_stat pages_late), oldest_age_ms at most $oldest over $samples samples"
assert_eq "0 0" "$on $left" "2. Linux's periodic writeback stayed off, no handover clock (samples on, with a clock)"
aipu_dump
fs_umount "$AIPU_MNT"
mount "$dev" "$AIPU_MNT" || die "mount $dev again failed"
# One grep for all the files: a process per file takes minutes under TCG.
bad=$(grep -H '' "$AIPU_MNT"/d/* | awk -F: '{ n = $1; sub(".*/", "", n)
	if ($2 != substr(n, 1, 1) " " substr(n, 2)) b++ } END { print b + 0 }')
empty=$(find "$AIPU_MNT/d" -type f -empty | wc -l)
kills=$(awk '$1 == "oom_kill" { print $2 }' "$CG/memory.events")
log "$(find "$AIPU_MNT/d" -type f | wc -l) files, $empty empty, OOM kills $kills"
assert_eq 0 "$bad" "4. mounted again, every file holds its own line (files wrong)"
assert_le "$empty" "$kills" "4. no file is empty but a killed writer's last"
