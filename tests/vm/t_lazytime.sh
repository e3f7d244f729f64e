#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Lazytime timestamps keep Linux's bound under aipu. On a lazytime mount a
# write that only changes a file's mtime (an overwrite of allocated blocks)
# marks the inode I_DIRTY_TIME; Linux's periodic writeback writes such
# timestamps once vm.dirtytime_expire_seconds old. aipu turns that periodic
# writeback off, and used to leave them in memory until sync or umount.
#
# ext4 without a journal (so the inode's home block is what changes on
# disk), mounted lazytime; dirtytime_expire_seconds 5; policy=aipu
# max_age_ms=1000 period_ms=200. After one page of a synced file is
# overwritten at t0, the file's on-disk mtime (debugfs -D: O_DIRECT, past
# the page cache) must become the new one within [t0+4, t0+7.5] s: not
# before the expiry (lazytime's point), and within it plus a period and
# slack for the emulated CPU; stat's times_written counts the inode.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"
command -v debugfs >/dev/null || die "debugfs (e2fsprogs) is needed"

EXPIRE=5
LO=4.0
HI=7.5
SYSCTL=/proc/sys/vm/dirtytime_expire_seconds

dev=$(disk_get)
disk_prepare "$dev"
mkfs.ext4 -F -q -O ^has_journal -E lazy_itable_init=0 "$dev" >/dev/null || die "mkfs.ext4 $dev failed"
mkdir -p "$AIPU_MNT"
mount -t ext4 -o lazytime "$dev" "$AIPU_MNT" || die "mount -o lazytime $dev failed"
on_exit "fs_umount $AIPU_MNT"
grep -q " $AIPU_MNT ext4 .*lazytime" /proc/mounts || die "$AIPU_MNT is not mounted lazytime"

expire0=$(cat "$SYSCTL")
restore_expire() { echo "$expire0" >"$SYSCTL"; }
on_exit restore_expire
echo "$EXPIRE" >"$SYSCTL"

f=$AIPU_MNT/file
dd if=/dev/urandom of="$f" bs=4096 count=4 conv=fsync status=none
# One overwrite first: the first change after the inode was set up may also
# bump its i_version, a change Linux writes at once (I_DIRTY_SYNC).
sleep 1.1
dd if=/dev/urandom of="$f" bs=4096 count=1 conv=notrunc status=none
sync
ino=$(stat -c %i "$f")
# The mtime in the inode's home block on disk, in seconds.
ondisk_mtime() {
	local hex
	hex=$(debugfs -D -R "stat <$ino>" "$dev" 2>/dev/null |
		sed -n 's/^ *mtime: 0x\([0-9a-f]*\).*/\1/p' | head -n 1)
	[ -n "$hex" ] || return 1
	echo $((16#$hex))
}
before=$(ondisk_mtime) || die "debugfs cannot read inode $ino on $dev"
assert_eq "$(stat -c %Y "$f")" "$before" "the synced file's mtime is on disk"

aipu_load policy=aipu max_age_ms=1000 period_ms=200 handover_ms=0
sleep 1.5 # a new second for the mtime; aipu's tick has read the sysctl
assert_eq 1 "$(aipu_stat kupdate_off)" "Linux's periodic writeback is off under aipu"
written0=$(aipu_stat times_written)

t0=$(date +%s.%N)
dd if=/dev/urandom of="$f" bs=4096 count=1 conv=notrunc status=none
want=$(stat -c %Y "$f")
assert_ne "$before" "$want" "the overwrite changed the mtime in memory"
at=""
while :; do
	now=$(date +%s.%N)
	el=$(awk -v a="$now" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
	if [ "$(ondisk_mtime || echo 0)" = "$want" ]; then
		at=$el
		break
	fi
	awk -v e="$el" -v h="$HI" 'BEGIN { exit !(e > h + 3) }' && break
	sleep 0.25
done
aipu_dump
if [ -z "$at" ]; then
	fail "the new mtime never reached the disk within $HI + 3 s (on disk: $(ondisk_mtime || echo '?'), want $want)"
else
	log "the new mtime was on disk $at s after the write"
	assert_ok "the new mtime reached the disk in [t0+$LO, t0+$HI] s (at t0+$at)" \
		awk -v e="$at" -v l="$LO" -v h="$HI" 'BEGIN { exit !(e >= l && e <= h) }'
fi
assert_ge "$(($(aipu_stat times_written) - written0))" 1 "stat times_written counts the inode"
