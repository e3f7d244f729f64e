#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# How long aipu holds a device's lock when a file with many randomly
# dirtied pages is removed (the eviction of its queue), counted in emulated
# instructions: one guest per kernel under QEMU's icount (scripts/vm.sh
# --icount, one vCPU, 6 GiB), ext4 on a memory-backed null_blk disk,
# aipu loaded with policy=kernel max_age_ms=3600000 (tracking only),
# N pages of a cached file written once in random order (randwrite.c),
# then rm; stat's lock_hold_max_ns (instructions under icount) read before
# and after the rm. docs/design.md §3, "No free under a lock".
#
#   bench/scale/evict-hold.sh [--pages N] [--kernel KVER]... [--out DIR]
#
# Default: 65,536 pages; the newest installed 6.1 and 6.12 (not -rt) with
# a built build/<kver>/aipu.ko (scripts/build-all.sh). Prints one line a
# kernel, "KVER pages N before I after I" (I: instructions), and keeps
# each guest's log in DIR (default build/evict-hold/).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
prog=evict-hold.sh

die_rc=2
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib-cli.sh"

# In the guest (scripts/vm.sh runs this with --guest N).
guest() {
	local n=$1 mnt=/tmp/aipu-evict-hold f stat=/sys/kernel/aipu/stat
	mkfs.ext4 -q -F "$AIPU_DISK"
	mkdir -p "$mnt"
	mount "$AIPU_DISK" "$mnt"
	# Nothing written back meanwhile: the rows time tracking alone.
	sysctl -qw vm.dirty_bytes=34359738368 vm.dirty_background_bytes=17179869184 \
		vm.dirty_writeback_centisecs=0
	insmod "$AIPU_KO" policy=kernel max_age_ms=3600000 handover_ms=0
	f=$mnt/f
	fallocate -l $((n * 4096)) "$f"
	cat "$f" >/dev/null
	"$AIPU_EVICT_RANDWRITE" "$f" "$n" 1 evict >/dev/null
	echo "before $(awk '$1 == "lock_hold_max_ns" { print $2 }' "$stat")"
	echo "tracked $(awk '$1 == "pages_tracked" { print $2 }' "$stat")"
	rm -f "$f"
	sync
	echo "after $(awk '$1 == "lock_hold_max_ns" { print $2 }' "$stat")"
	umount "$mnt"
	rmmod aipu
}

if [ "${1:-}" = --guest ]; then
	guest "$2"
	exit
fi

pages=65536
kernels=""
out=$root/build/evict-hold
while [ $# -gt 0 ]; do
	case $1 in
	--pages | --kernel | --out)
		[ $# -ge 2 ] || die "$1 needs a value."
		case $1 in
		--pages) pages=$2 ;;
		--kernel) kernels+=" $2" ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	-h | --help)
		sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*) die "unknown argument '$1' (see --help)." ;;
	esac
done
if ! [[ $pages =~ ^[1-9][0-9]{0,5}$ ]] || [ "$pages" -gt 262144 ]; then
	die "--pages takes a number of pages from 1 to 262144 (1 GiB), not '$pages'."
fi

newest() { # PATTERN
	find /lib/modules -mindepth 1 -maxdepth 1 -name "$1" ! -name '*-rt-*' -printf '%f\n' 2>/dev/null |
		while read -r k; do
			[ -f "/boot/vmlinuz-$k" ] && [ -f "$root/build/$k/aipu.ko" ] && echo "$k"
		done | sort -V | tail -n 1
}
[ -n "${kernels// /}" ] || kernels="$(newest '6.1.*') $(newest '6.12.*')"
[ -n "${kernels// /}" ] || die "no 6.1 or 6.12 kernel with a built build/<kver>/aipu.ko: run scripts/build-all.sh."

# The file and ext4's own room (null_blk takes whole GiB of guest memory).
disk_mib=$((pages / 256 + 512))
mkdir -p "$out"
out=$(cd "$out" && pwd)
gcc -O2 -Wall -Wextra -o "$out/randwrite" "$here/randwrite.c"
status=0
for k in $kernels; do
	[ -f "$root/build/$k/aipu.ko" ] || die "no build/$k/aipu.ko: run scripts/build-all.sh."
	log=$out/$k.log
	if AIPU_EVICT_RANDWRITE=$out/randwrite "$root/scripts/vm.sh" --kernel "$k" --cpus 1 --icount \
		--disk nullblk --disk-size "$disk_mib" --memory 6G --out "$out/$k" -- \
		"$here/evict-hold.sh" --guest "$pages" >"$log" 2>&1; then
		echo "$k pages $pages tracked $(awk '$1 == "tracked" { print $2 }' "$log")" \
			"before $(awk '$1 == "before" { print $2 }' "$log")" \
			"after $(awk '$1 == "after" { print $2 }' "$log")"
	else
		echo "$prog: $k: the guest failed: see $log" >&2
		status=1
	fi
done
exit "$status"
