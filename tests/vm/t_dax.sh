#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Stores through a DAX mapping are bounded. They dirty no page of the page
# cache: dax_insert_entry() tags the mapping's entry dirty and marks the
# inode I_DIRTY_PAGES, and only ->writepages with WB_SYNC_ALL
# (dax_writeback_mapping_range()) writes the CPU caches back to the
# persistent memory. Linux's own periodic writeback (WB_SYNC_NONE) leaves
# them, and so did aipu: the inode stayed dirty until an msync, fsync, sync
# or umount. aipu bounds such a file as a whole from its inode's dirtying.
#
# ext4 with -o dax,commit=60 on emulated persistent memory (vmtest.sh boots with
# memmap=64M!1536M; nd_e820 gives /dev/pmem0), aipu loaded (max_age 2 s,
# period 0.2 s). A 1-MiB file mapped shared, 16 pages stored to; checked:
#   1. the stores left the inode dirty to the VFS (on the pmem bdi's lists)
#      and the mapping's entries tagged dirty (the file system's own
#      state, not aipu's);
#   2. within max_age + 2 periods + 1 s of the first store (no msync),
#      Linux holds no dirty inode on the device any more, with Linux's
#      periodic writeback off (kupdate_off 1): aipu wrote it;
#   3. not before max_age of the first store;
#   4. mounted again, the file holds the stored bytes.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

MAX_AGE_MS=2000
PERIOD_MS=200
modprobe nd_e820 2>/dev/null || true
modprobe nd_pmem 2>/dev/null || true
udevadm settle 2>/dev/null || true
[ -b /dev/pmem0 ] || skip "no /dev/pmem0 (boot with memmap=64M!1536M; scripts/vmtest.sh does)"
[ "$(cat /sys/block/pmem0/queue/dax 2>/dev/null)" = 1 ] || skip "/dev/pmem0 does not support DAX"
debugfs_mount
dev=/dev/pmem0
mnt=$AIPU_MNT
mkfs.ext4 -q -F -b 4096 "$dev" || die "mkfs.ext4 $dev failed"
mkdir -p "$mnt"
# commit=60: no journal commit in the test's window dirties the device's own
# buffers (the data stores are the only dirtying then, with the inode's
# times, which aipu writes as metadata in the same pass).
mount -o dax,commit=60 "$dev" "$mnt" || die "mount -o dax $dev failed"
on_exit "fs_umount $mnt"
f=$mnt/data
dd if=/dev/zero of="$f" bs=1M count=1 status=none
sync
aipu_load policy=aipu max_age_ms=$MAX_AGE_MS period_ms=$PERIOD_MS handover_ms=0
# handover_ms=0 says the user synced: a buffer dirtied between that sync and
# the load would be nobody's (one was, once in a run on 6.1). Sync again
# with the probes in; aipu writes what is dirtied after, within its bound.
sync
no_dirty_inode() { [ "$(bdi_dirty_inodes "$dev")" = 0 ]; }
wait_until $(((MAX_AGE_MS + 2 * PERIOD_MS) / 1000 + 2)) no_dirty_inode || true
assert_eq 0 "$(bdi_dirty_inodes "$dev")" "before the stores Linux holds no dirty inode on $dev"
first=$(python3 - "$f" <<'PY'
import mmap
import os
import sys
import time

fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 1 << 20)
first = int(time.time() * 1e6)
for i in range(16):
    m[i * 65536 : i * 65536 + 8] = b"dax%05d" % i
m.close()
os.close(fd)
print(first)
PY
) || die "the stores failed"
t_stored=$(now_us)
log "16 pages stored, the last $(((t_stored - first) / 1000)) ms after the first"
assert_ge "$(bdi_dirty_inodes "$dev")" 1 "1. the stores left the inode dirty to the VFS"
clean() { [ "$(bdi_dirty_inodes "$dev")" = 0 ]; }
bound_s=$(((MAX_AGE_MS + 2 * PERIOD_MS) / 1000 + 1))
if wait_until "$bound_s" clean; then
	ms=$((($(now_us) - first) / 1000))
	pass "2. Linux holds no dirty inode on $dev $ms ms after the first store"
	assert_ge "$ms" "$MAX_AGE_MS" "3. not before max_age"
	# The polling began at the last store (python's exit, under TCG).
	assert_le "$ms" $((bound_s * 1000 + (t_stored - first) / 1000)) \
		"2. within max_age + 2 periods + 1 s of the first store, polled from the last"
else
	fail "2. $bound_s s after the stores: $(bdi_dirty_inodes "$dev") dirty inodes on $dev"
fi
assert_eq 1 "$(aipu_stat kupdate_off)" "2. Linux's periodic writeback was off"
aipu_dump
aipu_unload || fail "rmmod aipu failed"
fs_umount "$mnt"
mount -o dax,commit=60 "$dev" "$mnt" || die "mount -o dax $dev again failed"
got=$(python3 - "$f" <<'PY'
import sys

with open(sys.argv[1], "rb") as f:
    d = f.read()
print(sum(d[i * 65536 : i * 65536 + 8] == b"dax%05d" % i for i in range(16)))
PY
)
assert_eq 16 "$got" "4. mounted again, the file holds the 16 stores"
