#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# No tracker outlives its inode, on every file system a user is likely to
# mount: ext4, ext2, xfs, vfat and exFAT. aipu forgets a mapping when its
# inode is evicted; exFAT's eviction never calls truncate_inode_pages_final()
# (where aipu used to hook), so its trackers outlived their inodes and the
# flusher would later have pinned freed memory. clear_inode() is called by
# every file system's eviction.
#
# Per file system: NFILES files are dirtied with max_age 10 min (nothing is
# written by aipu before the umount: with 30 s, the debug kernel under TCG
# took long enough over mkfs and the 20 writes that aipu wrote the first
# files, their trackers went, and only 17 were counted), every one of them
# is tracked, then the
# file system is unmounted (which evicts every inode): at once, at most the
# block device's own mapping may still be tracked on that disk.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NFILES=20
FILESYSTEMS=${AIPU_EVICT_FS:-ext4 ext2 xfs vfat exfat}
dev=$(disk_get)
disk_prepare "$dev"
id=$(disk_majmin "$dev")
mnt=$AIPU_MNT

# mappings: this disk's mappings_tracked in /sys/kernel/aipu/devices.
mappings() {
	awk -v d="$id" '$1 == d { for (i = 2; i < NF; i += 2) if ($i == "mappings_tracked") print $(i + 1) }' \
		"$AIPU_SYSFS/devices"
}

sync
aipu_load policy=aipu max_age_ms=600000 period_ms=1000 handover_ms=0
for fs in $FILESYSTEMS; do
	fs_make "$fs" "$dev" "$mnt"
	for i in $(seq "$NFILES"); do
		dd if=/dev/urandom of="$mnt/f$i" bs=4096 count=8 status=none
	done
	before=$(mappings)
	assert_ge "${before:-0}" "$NFILES" "$fs: the $NFILES files are tracked before the umount ($before mappings on $id)"
	umount "$mnt"
	after=$(mappings)
	log "$fs: $id mappings_tracked $before before the umount, $after after"
	assert_le "${after:-0}" 1 "$fs: after the umount at most the block device's own mapping is tracked"
done
aipu_unload
