#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Lazytime timestamps keep Linux's bound under aipu. On a lazytime mount a
# timestamp change alone marks the inode I_DIRTY_TIME; Linux's periodic
# writeback writes such timestamps once vm.dirtytime_expire_seconds old.
# aipu turns that periodic writeback off, and used to leave them in memory
# until sync or umount.
#
# The change is an atime: a read on a lazytime,strictatime mount. (An mtime
# change by a write is lazy on Debian's 6.1 but not on 6.12, where ext4's
# i_version moves with every ctime change and that dirties the inode at
# once, I_DIRTY_SYNC, with or without aipu.)
#
# ext4 without a journal (so the inode's home block is where it goes),
# mounted lazytime,strictatime; dirtytime_expire_seconds 5; policy=aipu
# max_age_ms=1000 period_ms=200. After a synced file is read at t0, the
# atime in the inode's block as a direct read of the device sees it
# (debugfs -D; a direct read first writes back what the page cache holds
# dirty there, so this is the moment the timestamps were handed to the file
# system, the moment lazytime defers) must become the new one within
# [t0+4, t0+7.5] s: not before the expiry (lazytime's point), and within it
# plus a period and slack for the emulated CPU; stat's times_written counts
# the inode.
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
mount -t ext4 -o lazytime,strictatime "$dev" "$AIPU_MNT" || die "mount -o lazytime,strictatime $dev failed"
on_exit "fs_umount $AIPU_MNT"
grep -q " $AIPU_MNT ext4 .*lazytime" /proc/mounts || die "$AIPU_MNT is not mounted lazytime"

expire0=$(cat "$SYSCTL")
restore_expire() { echo "$expire0" >"$SYSCTL"; }
on_exit restore_expire
echo "$EXPIRE" >"$SYSCTL"

f=$AIPU_MNT/file
dd if=/dev/urandom of="$f" bs=4096 count=4 conv=fsync status=none
sync
ino=$(stat -c %i "$f")
# The atime in the inode's block on the device, in seconds.
ondisk_atime() {
	local hex
	hex=$(debugfs -D -R "stat <$ino>" "$dev" 2>/dev/null |
		sed -n 's/^ *atime: 0x\([0-9a-f]*\).*/\1/p' | head -n 1)
	[ -n "$hex" ] || return 1
	echo $((16#$hex))
}
before=$(ondisk_atime) || die "debugfs cannot read inode $ino on $dev"
assert_eq "$(stat -c %X "$f")" "$before" "the synced file's atime is on disk"

aipu_load policy=aipu max_age_ms=1000 period_ms=200 handover_ms=0
sleep 1.5 # a new second for the atime; aipu's tick has read the sysctl
assert_eq 1 "$(aipu_stat kupdate_off)" "Linux's periodic writeback is off under aipu"
written0=$(aipu_stat times_written)

t0=$(date +%s.%N)
cat "$f" >/dev/null
want=$(stat -c %X "$f")
assert_ne "$before" "$want" "the read changed the atime in memory"
at=""
while :; do
	now=$(date +%s.%N)
	el=$(awk -v a="$now" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
	if [ "$(ondisk_atime || echo 0)" = "$want" ]; then
		at=$el
		break
	fi
	awk -v e="$el" -v h="$HI" 'BEGIN { exit !(e > h + 3) }' && break
	sleep 0.25
done
aipu_dump
if [ -z "$at" ]; then
	fail "the new atime never reached the device within $HI + 3 s (there: $(ondisk_atime || echo '?'), want $want)"
else
	log "the new atime was on the device $at s after the read"
	assert_ok "the new atime reached the device in [t0+$LO, t0+$HI] s (at t0+$at)" \
		awk -v e="$at" -v l="$LO" -v h="$HI" 'BEGIN { exit !(e >= l && e <= h) }'
fi
assert_ge "$(($(aipu_stat times_written) - written0))" 1 "stat times_written counts the inode"
