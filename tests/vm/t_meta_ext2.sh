#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Inode metadata keeps the age bound on a non-journalled file system: on
# ext2, a chmod (metadata only) must reach the disk's inode table 3-4.5 s
# later with max_age 3 s, period 1 s. aipu writes the inode with
# sync_inode_metadata(), which copies it into the inode-table buffer; that
# buffer's page inherits the metadata's age and goes out in the same pass.
# Linux's periodic writeback is off under aipu, so without metadata aging the
# block would not be written at all.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
dev=$(disk_get)
disk_prepare "$dev"
tol=$(jiffy_s)

fs_make ext2 "$dev"
mk=$AIPU_MNT/marker
f=$AIPU_MNT/file
echo data >"$f"
msec=$(marker_sector "$mk" 1) || die "cannot find the marker file's sectors"
ino=$(stat -c %i "$f")
# "Inode 12 is part of block group 0\n\tlocated at block 37, offset 0x0b00"
blk=$(debugfs -R "imap <$ino>" "$dev" 2>/dev/null | sed -n 's/.*located at block \([0-9]*\),.*/\1/p')
[[ $blk =~ ^[0-9]+$ ]] || die "debugfs imap did not give the inode table block of inode $ino"
bs=$(stat -f -c %S "$AIPU_MNT")
isec=$((blk * bs / 512))
log "inode $ino in the inode table at block $blk (sectors $isec+$((bs / 512))), marker at $msec"

aipu_load policy=aipu max_age_ms=3000 period_ms=1000 handover_ms=0
meta0=$(aipu_stat meta_written)
trace=$TEST_TMP/meta.txt
blktrace_start "$dev" meta
dd if=/dev/zero of="$mk" bs=4096 count=1 oflag=direct conv=notrunc status=none
chmod 600 "$f"
sleep 7
blktrace_stop "$trace"
aipu_dump
if why=$(blkevents window --trace "$trace" --marker-sector "$msec" \
	--sectors "$isec+$((bs / 512))" --lo 3.0 --hi 4.5 --tolerance "$tol"); then
	pass "inode table block written within [3.0, 4.5] s of the chmod: $why"
else
	fail "inode table block: $why"
fi
assert_gt "$(aipu_stat meta_written)" "$meta0" "stat meta_written grew"
umount "$AIPU_MNT"
mount -t ext2 "$dev" "$AIPU_MNT"
assert_eq 600 "$(stat -c %a "$f")" "the mode survived umount and remount"
