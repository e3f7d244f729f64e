#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Freeze and thaw under aipu with unlinked files still open, closed while
# the file system is frozen. The metadata and lazytime entries pin an inode
# with a reference under its super block's s_umount (shared): if aipu's
# iput() were the last of an unlinked inode on a frozen file system,
# ext4_evict_inode() would wait in sb_start_intwrite() for a thaw, and the
# thaw (thaw_super(): s_umount exclusive) for aipu: a deadlock, the flusher
# and fsfreeze -u in D state for good. aipu takes no reference on a frozen
# super block (src/mapping.c: sb_frozen()).
#
# ext4 with lazytime, aipu with max_age 0.2 s and period 0.05 s, so that
# its metadata and timestamps entries come due while the file system is
# frozen. ROUNDS times: NFILES files are written (size changed: a metadata
# entry) and touched (timestamps), then unlinked while a holder keeps them
# open; fsfreeze -f; the holder closes them (the last reference of each, unless
# aipu holds one: the eviction waits for the thaw) and the test waits past
# a max_age; fsfreeze -u. Checked:
#   1. every freeze and every thaw returns within 20 s, and the closes
#      within 20 s of the thaw;
#   2. the inodes are freed: the file system's free inode count is back to
#      what it was before the first round;
#   3. after the rounds, a file written then is on the disk within the
#      bound (the flusher still works: its data read back with O_DIRECT).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

ROUNDS=10
NFILES=50
dev=$(disk_get)
disk_prepare "$dev"
fs_make ext4 "$dev"
mount -o remount,lazytime "$AIPU_MNT" || die "cannot remount $AIPU_MNT with lazytime"
on_exit "fsfreeze -u $AIPU_MNT 2>/dev/null || true"
dir=$AIPU_MNT/freeze
mkdir -p "$dir"
sync
free0=$(stat -f -c %d "$AIPU_MNT")
aipu_load policy=aipu max_age_ms=200 period_ms=50 handover_ms=0

# The holder: creates, writes, touches and unlinks NFILES files, keeps them
# open, says "open" and closes them when told (a line on its stdin).
holder() {
	python3 -c 'import os, sys
d, n = sys.argv[1], int(sys.argv[2])
fds = []
for i in range(n):
    p = os.path.join(d, "f%d" % i)
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    os.pwrite(fd, os.urandom(4096), 0)
    os.utime(p)
    os.unlink(p)
    fds.append(fd)
print("open", flush=True)
sys.stdin.readline()
for fd in fds:
    os.close(fd)
print("closed", flush=True)' "$dir" "$NFILES"
}

bad=0
for ((r = 0; r < ROUNDS; r++)); do
	coproc HOLD { holder; }
	{ read -r -t 60 line <&"${HOLD[0]}" && [ "$line" = open ]; } ||
		die "round $r: the holder did not open its files"
	if ! timeout 20 fsfreeze -f "$AIPU_MNT"; then
		fail "1. round $r: fsfreeze -f did not return within 20 s"
		bad=1
		break
	fi
	# The last close evicts: ext4_evict_inode() waits in
	# sb_start_intwrite() for the thaw, as it would without aipu.
	echo close >&"${HOLD[1]}"
	sleep 0.3 # past a max_age: aipu's entries come due while frozen
	if ! timeout 20 fsfreeze -u "$AIPU_MNT"; then
		fail "1. round $r: fsfreeze -u did not return within 20 s (aipu holds s_umount?)"
		bad=1
		break
	fi
	if ! { read -r -t 20 line <&"${HOLD[0]}" && [ "$line" = closed ]; }; then
		fail "1. round $r: the holder's closes did not return within 20 s of the thaw"
		bad=1
		break
	fi
	wait "$HOLD_PID" 2>/dev/null || true
done
[ "$bad" -ne 0 ] || pass "1. $ROUNDS freezes and thaws with $NFILES unlinked open files closed while frozen, each within 20 s"
[ "$bad" -eq 0 ] || die "the file system is stuck frozen: no further check can run"

sync
inodes_back() { [ "$(stat -f -c %d "$AIPU_MNT")" -ge "$free0" ]; }
if wait_until 10 inodes_back; then
	pass "2. every unlinked inode freed (free inodes $(stat -f -c %d "$AIPU_MNT"), $free0 before)"
else
	fail "2. free inodes $(stat -f -c %d "$AIPU_MNT"), $free0 before the rounds: unlinked inodes not freed"
fi

# 3. The flusher still writes.
f=$dir/after
head -c 4096 /dev/urandom >"$f"
on_disk() {
	cmp -s <(dd if="$f" bs=4096 count=1 iflag=direct status=none) "$f" &&
		[ "$(aipu_stat pages_tracked)" -eq 0 ]
}
sleep 0.1
if wait_until 5 on_disk; then pass "3. a file written after the rounds reached the disk"; else
	fail "3. a file written after the rounds is not on the disk 5 s later (pages_tracked $(aipu_stat pages_tracked))"
fi
aipu_dump
aipu_unload
