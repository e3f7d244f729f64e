#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's test of `scripts/bench.sh --host`, inside a VM
# (tests/bench/host.sh boots it with a virtio disk, $AIPU_DISK): the guest
# stands for a user's test machine, the virtio disk for its spare disk.
#
#   1. Refusals: each call that must be refused (no confirmation flag, the
#      flag naming another disk, not a block device, a partition, a mounted
#      partition, swap, a mounted disk, the disk holding the root file
#      system, device mapper on it, a disk someone holds open exclusively)
#      exits non-zero with one line that names the reason, and the disk sees
#      no write meanwhile.
#   2. The smoke run: scripts/bench.sh --host --smoke on the disk, results
#      in $AIPU_OUT/results (tests/bench/check_smoke.py --model host checks
#      them on the host), and the disk's scheduler, wbt, bdi min_ratio and
#      dirty_expire_centisecs are as before afterwards.
#
# Prints PASS/FAIL lines and "N passed, N failed"; exit status 1 if any
# failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=$root/scripts/bench.sh
dev=${AIPU_DISK:-}
[ -b "$dev" ] || {
	echo "host-guest: AIPU_DISK must name the VM's spare disk (tests/bench/host.sh sets it)." >&2
	exit 1
}
[ -d "${AIPU_OUT:-}" ] || {
	echo "host-guest: AIPU_OUT must name a writable directory (scripts/vm.sh --out sets it)." >&2
	exit 1
}
name=$(basename "$dev")
tmp=$(mktemp -d /tmp/host-guest.XXXXXX)
pass=0
fail=0

result() { # OK WHAT [DETAIL]
	if [ "$1" -eq 0 ]; then
		echo "PASS: $2"
		pass=$((pass + 1))
	else
		echo "FAIL: $2${3:+ ($3)}"
		fail=$((fail + 1))
	fi
}

writes() { awk '{print $5}' "/sys/block/$name/stat"; }
uuid() { blkid -p -o value -s UUID "$1" 2>/dev/null || true; }

# refuse WHAT PATTERN IDLE|FS COMMAND...: COMMAND (bench.sh ..., with
# --out $tmp/out added) must exit non-zero, print one line on stderr
# matching PATTERN (grep -E), create no results directory and leave the
# disk alone: IDLE, not one write reaches it; FS (a device with a mounted
# file system, which may write its own metadata meanwhile), the file
# system on FS keeps its UUID (mkfs would give it a new one).
refuse() {
	local what=$1 pat=$2 keep=$3 rc=0 w0 w1 u0 u1 err ok=0
	shift 3
	rm -rf "$tmp/out"
	sync
	w0=$(writes)
	[ "$keep" = IDLE ] || u0=$(uuid "$keep")
	err=$("$@" --out "$tmp/out" 2>&1 >/dev/null) || rc=$?
	sync
	w1=$(writes)
	[ "$keep" = IDLE ] || u1=$(uuid "$keep")
	if [ "$rc" -eq 0 ]; then
		ok=1 err="exit status 0: not refused"
	elif [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || ! grep -qE -- "$pat" <<<"$err"; then
		ok=1
	elif [ -e "$tmp/out" ]; then
		ok=1 err="it made its results directory: $err"
	elif [ "$keep" = IDLE ] && [ "$w0" != "$w1" ]; then
		ok=1 err="$((w1 - w0)) writes reached $dev: $err"
	elif [ "$keep" != IDLE ] && { [ -z "$u0" ] || [ "$u0" != "$u1" ]; }; then
		ok=1 err="the file system on $keep changed (UUID '$u0' -> '$u1'): $err"
	fi
	result "$ok" "refused: $what" "$err"
	[ "$ok" -ne 0 ] || echo "      $err"
}

# mbr SIZES_MIB...: a DOS partition table with one primary partition of
# each size (written here: the guest has no fdisk), then the kernel rereads it.
mbr() {
	python3 - "$dev" "$@" <<'EOF'
import struct
import sys

dev, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
table, start = b"", 2048
for mib in sizes:
    n = mib * 2048
    table += struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", start, n)
    start += n
sector = bytes(446) + table.ljust(64, b"\0") + b"\x55\xaa"
with open(dev, "r+b") as f:
    f.write(sector)
EOF
	blockdev --rereadpt "$dev"
	udevadm settle 2>/dev/null || true
	for _ in $(seq 50); do [ -b "${dev}$#" ] && return 0; sleep 0.1; done
	echo "host-guest: ${dev}$# did not appear after writing the partition table" >&2
	return 1
}

cleanup() {
	set +e
	swapoff "${dev}2" 2>/dev/null
	umount "$tmp/p1" "$tmp/d" 2>/dev/null
	dmsetup remove aipu-host-test 2>/dev/null
	[ -z "${holder:-}" ] || kill "$holder" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# Under QEMU's TCG, aipu's insmod and rmmod must patch no kernel text
# (scripts/hold-hooks.sh); bench.sh --host does a trial load, then a row
# each. On real hardware this is not needed.
"$root/scripts/hold-hooks.sh"

good=(--host --smoke --device "$dev" --destroy-contents-of "$dev")

# 1. Refusals.
refuse "no --destroy-contents-of" "add --destroy-contents-of $dev" IDLE "$bench" --host --device "$dev"
refuse "--destroy-contents-of names another disk" "name the same disk" IDLE \
	"$bench" --host --device "$dev" --destroy-contents-of /dev/null
touch "$tmp/file"
refuse "not a block device" "not a block device" IDLE \
	"$bench" --host --device "$tmp/file" --destroy-contents-of "$tmp/file"
mbr 256 256
refuse "a partition" "is a partition, not a whole disk" IDLE \
	"$bench" --host --device "${dev}1" --destroy-contents-of "${dev}1"
mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "${dev}1"
mkdir -p "$tmp/p1" "$tmp/d"
mount "${dev}1" "$tmp/p1"
refuse "a disk with a mounted partition" "is mounted \\(${dev}1 on $tmp/p1\\)" "${dev}1" "$bench" "${good[@]}"
umount "$tmp/p1"
mkswap -q "${dev}2"
swapon "${dev}2"
refuse "a disk with a swap partition" "in use as swap \\(${dev}2\\)" IDLE "$bench" "${good[@]}"
swapoff "${dev}2"
dmsetup create aipu-host-test --table "0 2048 linear ${dev}1 0"
refuse "a disk under device mapper" "in use by .*aipu-host-test" IDLE "$bench" "${good[@]}"
dmsetup remove aipu-host-test
wipefs -q -a "${dev}1" "${dev}2" "$dev"
blockdev --rereadpt "$dev"
mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mount "$dev" "$tmp/d"
refuse "a mounted disk" "is mounted \\($dev on $tmp/d\\)" "$dev" "$bench" "${good[@]}"
umount "$tmp/d"
# The root file system: in a mount namespace of its own, the disk mounted
# over /. (The processes' root stays the old one, so bench.sh still runs;
# the mount table says the disk is /.)
# shellcheck disable=SC2016 # $1 and $@ are the inner bash's
refuse "the disk holding the root file system" "holds the root file system" "$dev" \
	unshare -m bash -c 'mount "$1" / && shift && exec "$@"' - "$dev" "$bench" "${good[@]}"
# Held open exclusively (as a program that claims the disk would): only
# the kernel's exclusive open sees it.
python3 -c 'import os, sys, time; os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL); print("held", flush=True); time.sleep(600)' \
	"$dev" >"$tmp/held" &
holder=$!
for _ in $(seq 100); do [ -s "$tmp/held" ] && break; sleep 0.1; done
refuse "a disk held open exclusively" "refused to open it exclusively" IDLE "$bench" "${good[@]}"
kill "$holder"
wait "$holder" 2>/dev/null || true
holder=""
wipefs -q -a "$dev"

# 2. The smoke run, and the settings put back.
settings() {
	local q=/sys/block/$name/queue
	echo "scheduler $(cat "$q/scheduler") wbt $(cat "$q/wbt_lat_usec" 2>/dev/null) min_ratio" \
		"$(cat "/sys/block/$name/bdi/min_ratio") expire $(cat /proc/sys/vm/dirty_expire_centisecs)"
}
before=$(settings)
rc=0
"$bench" "${good[@]}" --out "$AIPU_OUT/results" || rc=$?
echo "$rc" >"$AIPU_OUT/bench-status"
after=$(settings)
result "$rc" "scripts/bench.sh ${good[*]} exited 0" "status $rc"
same=0
[ "$before" = "$after" ] || same=1
result "$same" "the disk's settings are as before the run" "before: $before; after: $after"
loaded=0
[ ! -d /sys/module/aipu ] || loaded=1
result "$loaded" "aipu is unloaded after the run"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
