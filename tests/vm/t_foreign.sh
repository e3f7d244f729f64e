#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Mappings that are not their inode's own are not tracked: gfs2 keeps its
# metadata in glock address spaces whose host is the block device's inode,
# and truncates and frees them (by RCU) without a clear_inode() aipu could
# tie to them; a tracker of one would outlive it, and the flusher would pin
# the live block device's inode and write a freed mapping. aipu counts
# their pages in pages_foreign and leaves them to gfs2's log flush.
#
# gfs2 (lock_nolock) on the test disk, aipu loaded (max_age 3 s, period
# 0.5 s): 50 files written and synced (the log flush dirties their metadata
# in glock address spaces), then written again and the file system
# unmounted within max_age, while aipu holds their pages. Checked:
#   1. pages_foreign counts pages of those mappings;
#   2. within max_age + 2 periods of the umount aipu tracks nothing (every
#      tracker ended with its inode), and the kernel log stays clean
#      (run-guest.sh checks it after every test);
#   3. mounted again, every file holds what was written last.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"
command -v mkfs.gfs2 >/dev/null || die "mkfs.gfs2 not found (gfs2-utils; scripts/install-deps.sh)"
# Debian's kernels build gfs2 as a module; a small test kernel may not.
modprobe gfs2 2>/dev/null || grep -qw gfs2 /proc/filesystems ||
	skip "this kernel has no gfs2 (CONFIG_GFS2_FS)"

NFILES=50
dev=$(disk_get)
disk_prepare "$dev"
mkfs.gfs2 -O -q -p lock_nolock -j 1 -J 16 "$dev" >/dev/null || die "mkfs.gfs2 $dev failed"
mkdir -p "$AIPU_MNT"
aipu_load policy=aipu max_age_ms=3000 period_ms=500 handover_ms=0

writes() { # ROUND
	local i
	for ((i = 0; i < NFILES; i++)); do
		printf 'round %s file %d\n' "$1" "$i" >"$AIPU_MNT/f$i"
	done
}

mount -t gfs2 "$dev" "$AIPU_MNT" || die "mount -t gfs2 $dev failed"
on_exit "fs_umount $AIPU_MNT"
writes 1
sync
writes 2
foreign=$(aipu_stat pages_foreign)
assert_gt "$foreign" 0 "1. pages_foreign counts pages of gfs2's glock address spaces"
log "before umount: $(aipu_stat pages_tracked) pages, $(aipu_stat mappings_tracked) mappings tracked"
fs_umount "$AIPU_MNT"
untracked() { [ "$(aipu_stat pages_tracked) $(aipu_stat mappings_tracked)" = "0 0" ]; }
if wait_until 4 untracked; then
	pass "2. within max_age + 2 periods of the umount no page or mapping is tracked"
else
	fail "2. 4 s after the umount: $(aipu_stat pages_tracked) pages, $(aipu_stat mappings_tracked) mappings tracked"
fi
aipu_dump
mount -t gfs2 "$dev" "$AIPU_MNT" || die "mount -t gfs2 $dev again failed"
bad=0
for ((i = 0; i < NFILES; i++)); do
	[ "$(cat "$AIPU_MNT/f$i")" = "round 2 file $i" ] || bad=$((bad + 1))
done
assert_eq 0 "$bad" "3. mounted again, every file holds its last write (files wrong)"
fs_umount "$AIPU_MNT"
