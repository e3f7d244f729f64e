#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# In a test guest (scripts/fstests.sh boots it through scripts/vm.sh): run
# a list of fstests tests on one file system twice in this boot, first
# without aipu, then with aipu loaded (policy=aipu max_age_ms=1000
# period_ms=100 handover_ms=0), each half on freshly made file systems.
#
#   tests/fstests/fstests-guest.sh --fs ext4|xfs --fstests DIR --tests FILE
#                                  [--test-timeout S] [--halves "noaipu aipu"]
#
# DIR is a built fstests tree (read-only is fine), FILE one test a line.
# The disks are two memory-backed null_blk devices made here through
# configfs, with discard on (mkfs then frees their memory): test 2 GiB,
# scratch 3 GiB (AIPU_FSTESTS_TEST_MB, AIPU_FSTESTS_SCRATCH_MB).
# Each test runs on its own (./check TEST) under `timeout`; after each one
# the kernel log it produced is kept and checked with the VM tests' check
# (tests/vm/lib.sh, dmesg_check).
#
# Writes $AIPU_OUT/<half>/: results/ (fstests' RESULT_BASE), results.txt
# ("test result seconds klog" a line: result pass, fail, notrun, timeout;
# klog ok, or bad when the test's kernel log has a line DMESG_BAD matches),
# dmesg.txt (the whole log of the half, each test's part after a "=== test"
# line), klog-bad.txt (the bad lines, by test), aipu-stat.txt (with aipu).
# Exit status 0 when both halves ran to the end, whatever the results:
# scripts/fstests.sh compares them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# For dmesg_check, DMESG_BAD and tracepoints_pin.
# shellcheck source=tests/vm/lib.sh
AIPU_LIB_ONLY=1 TEST_NAME=fstests . "$here/../vm/lib.sh"
set +E

prog=fstests-guest
die() {
	echo "$prog: $*" >&2
	exit 1
}

fs=""
tree=""
list=""
tmo=900
halves="noaipu aipu"
while [ $# -gt 0 ]; do
	case "$1" in
	--fs) fs=$2 && shift 2 ;;
	--fstests) tree=$2 && shift 2 ;;
	--tests) list=$2 && shift 2 ;;
	--test-timeout) tmo=$2 && shift 2 ;;
	--halves) halves=$2 && shift 2 ;;
	*) die "unknown argument '$1' (see the comment at the top of $0)." ;;
	esac
done
case "$fs" in
ext4 | xfs) ;;
*) die "--fs must be ext4 or xfs, not '$fs'." ;;
esac
[ -x "$tree/check" ] || die "--fstests $tree is not a built fstests tree (no check)."
[ -f "$list" ] || die "--tests $list: no such file."
[ "$(id -u)" -eq 0 ] || die "run as root inside the test VM (scripts/vm.sh does)."
: "${AIPU_OUT:?set by scripts/vm.sh}"
[[ " $halves " == *" aipu "* ]] && { [ -f "${AIPU_KO:-}" ] || die "no aipu.ko at '${AIPU_KO:-}': run scripts/build-all.sh."; }

# --- disks --------------------------------------------------------------
cfg=/sys/kernel/config/nullb
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe null_blk nr_devices=0 || die "modprobe null_blk failed."
nullb_make() { # NAME MiB: prints the device
	local d=$cfg/$1
	mkdir "$d"
	echo "$2" >"$d/size"
	echo 1 >"$d/memory_backed"
	echo 1 >"$d/discard"
	echo 1 >"$d/power"
	echo "/dev/nullb$(cat "$d/index")"
}
TEST_DEV=$(nullb_make fstest "${AIPU_FSTESTS_TEST_MB:-2048}")
SCRATCH_DEV=$(nullb_make fscratch "${AIPU_FSTESTS_SCRATCH_MB:-3072}")
udevadm settle 2>/dev/null || true
for d in "$TEST_DEV" "$SCRATCH_DEV"; do
	for _ in $(seq 50); do [ -b "$d" ] && break; sleep 0.1; done
	[ -b "$d" ] || die "null_blk device $d did not appear."
done
# /mnt is read-only in the guest; /tmp is a writable overlay.
TEST_DIR=/tmp/fstests/test
SCRATCH_MNT=/tmp/fstests/scratch
mkdir -p "$TEST_DIR" "$SCRATCH_MNT"
export FSTYP=$fs TEST_DEV TEST_DIR SCRATCH_DEV SCRATCH_MNT
# fstests reads local.config from its own (read-only) directory unless told.
export HOST_OPTIONS=/tmp/fstests/local.config
: >"$HOST_OPTIONS"

# fstests' users (its README); /etc is a writable overlay.
getent group fsgqa >/dev/null || groupadd fsgqa
getent passwd fsgqa >/dev/null || useradd -m -g fsgqa fsgqa
getent passwd fsgqa2 >/dev/null || useradd -m fsgqa2
getent passwd 123456-fsgqa >/dev/null || useradd -g fsgqa 123456-fsgqa
# The same hooks held for both halves (QEMU TCG's text-patching bug; see
# scripts/hold-hooks.sh), so the halves differ only by aipu.
tracepoints_pin || echo "$prog: note: could not hold the trace events on; insmod/rmmod patch kernel text" >&2

mkfs_test() {
	case "$fs" in
	ext4) mkfs.ext4 -q -F "$TEST_DEV" ;;
	xfs) mkfs.xfs -q -f "$TEST_DEV" ;;
	esac
}
# After a test killed by timeout (timeout kills its process group):
# whatever it left mounted or mapped.
tidy() {
	local m
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk '$2 ~ /^\/tmp\/fstests\// { print $2 }' /proc/mounts | sort -r)
	dmsetup remove_all -f >/dev/null 2>&1 || true
}
# The kernel log since the last call, kept under "=== NAME"; checked.
klog() { # NAME HALFDIR: prints ok or bad
	local f=/tmp/fstests/klog.txt
	dmesg -c >"$f" 2>/dev/null || true
	{
		echo "=== $1"
		cat "$f"
	} >>"$2/dmesg.txt"
	local bad
	if bad=$(dmesg_check "$f"); then
		echo ok
	else
		awk -v t="$1" '{ print t ": " $0 }' <<<"$bad" >>"$2/klog-bad.txt"
		echo bad
	fi
}

echo "$prog: $(uname -r), $fs, test $TEST_DEV, scratch $SCRATCH_DEV, $(wc -l <"$list") tests, halves: $halves"
for half in $halves; do
	hd=$AIPU_OUT/$half
	rm -rf "$hd"
	mkdir -p "$hd/results"
	export RESULT_BASE=$hd/results
	: >"$hd/results.txt"
	tidy
	mkfs_test || die "mkfs.$fs $TEST_DEV failed."
	wipefs -a -q "$SCRATCH_DEV" || true
	klog "setup" "$hd" >/dev/null
	if [ "$half" = aipu ]; then
		sync
		insmod "$AIPU_KO" policy=aipu max_age_ms=1000 period_ms=100 handover_ms=0 ||
			die "insmod $AIPU_KO failed."
		echo "$prog: aipu loaded: $(tr '\n' ' ' </sys/kernel/aipu/policy)max_age_ms=$(cat /sys/kernel/aipu/max_age_ms) period_ms=$(cat /sys/kernel/aipu/period_ms)"
	fi
	hstart=$(date +%s)
	echo "=== $half: $(wc -l <"$list") tests"
	while read -r t; do
		[ -n "$t" ] || continue
		start=$(date +%s)
		rc=0
		(cd "$tree" && timeout -k 30 "$tmo" ./check "$t") >"$hd/check-${t//\//-}.log" 2>&1 </dev/null || rc=$?
		secs=$(($(date +%s) - start))
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			r=timeout
			tidy
		elif [ "$rc" -ne 0 ]; then
			r=fail
		elif [ -f "$RESULT_BASE/$t.notrun" ]; then
			r=notrun
		else
			r=pass
		fi
		k=$(klog "$t" "$hd")
		if [ "$half" = aipu ] && [ ! -d /sys/module/aipu ]; then
			k=bad
			echo "$t: aipu is no longer loaded" >>"$hd/klog-bad.txt"
		fi
		echo "$t $r $secs $k" | tee -a "$hd/results.txt"
		[ "$r" != notrun ] || sed 's/^/    /' "$RESULT_BASE/$t.notrun"
	done <"$list"
	if [ "$half" = aipu ]; then
		cp /sys/kernel/aipu/stat "$hd/aipu-stat.txt"
		tidy
		timeout "$AIPU_RMMOD_TIMEOUT" rmmod aipu || echo "rmmod: rmmod aipu failed" >>"$hd/klog-bad.txt"
		echo "$prog: aipu wrote $(awk '$1 == "pages_written" { print $2 }' "$hd/aipu-stat.txt") pages, $(awk '$1 == "pages_dirtied" { print $2 }' "$hd/aipu-stat.txt") dirtied"
	fi
	tidy
	sleep 1
	k=$(klog "end" "$hd")
	echo "=== $half: done in $(($(date +%s) - hstart)) s, kernel log at the end: $k"
	echo "$(($(date +%s) - hstart))" >"$hd/seconds.txt"
done
exit 0
