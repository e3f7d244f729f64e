#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The crash test's guest half (scripts/crashtest.sh boots it):
#
#   tests/crash/crash-guest.sh --policy aipu|pu|kernel|linux|off [--seed N]
#       [--fs ext4|ext2] [--mode overwrite|append] [--commit-s S]
#       [--max-age-ms MS] [--period-ms MS] [--rate R] [--run-min S] [--run-max S]
#
# Makes the file system (default ext4, mounted with commit=S, default 5 s,
# Linux's default made explicit; ext2 with its defaults) on $AIPU_DISK (a
# FIFO virtio disk the host keeps). --mode overwrite (the default) writes a
# preallocated record file and stores its extents in $AIPU_OUT; --mode
# append creates /rec.dat empty (and syncs it). It then sets up the
# policy (aipu or pu: aipu.ko loaded with max_age_ms or pu_interval_ms =
# MS; kernel: no module, dirty_expire_centisecs = MS/10 and
# dirty_writeback_centisecs = period/10, Linux's own nominal bound; linux:
# no module, Linux's defaults as booted (dirty_expire 30 s, writeback 5 s)
# and writeback throttling on (wbt_lat_usec 75000 us, Linux's
# default for a rotational disk; the other policies run with it off); off: no
# module and Linux's periodic writeback off, the control that must lose), then
# overwrites random records (append: appends records) without fsync,
# logging each to $AIPU_OUT, and hard-resets the guest (sysrq b) at a random
# moment. It never returns. trial.txt records the kernel, the policy, the
# file system, the mode and the mount options.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/lib.sh
AIPU_LIB_ONLY=1 TEST_NAME=crash . "$here/../vm/lib.sh"

policy="" seed=1 max_age=3000 period=1000 rate=20 run_min=6 run_max=14
fs=ext4 mode=overwrite commit=5
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "$1 needs a value."
	case "$1" in
	--policy) policy=$2 ;;
	--seed) seed=$2 ;;
	--max-age-ms) max_age=$2 ;;
	--period-ms) period=$2 ;;
	--rate) rate=$2 ;;
	--run-min) run_min=$2 ;;
	--run-max) run_max=$2 ;;
	--fs) fs=$2 ;;
	--mode) mode=$2 ;;
	--commit-s) commit=$2 ;;
	*) die "unknown argument '$1': see the header of $0." ;;
	esac
	shift 2
done
case "$policy" in aipu | pu | kernel | linux | off) ;; *) die "--policy must be aipu, pu, kernel, linux or off, not '$policy'." ;; esac
case "$fs" in ext4 | ext2) ;; *) die "--fs must be ext4 or ext2, not '$fs'." ;; esac
case "$mode" in overwrite | append) ;; *) die "--mode must be overwrite or append, not '$mode'." ;; esac
[[ $commit =~ ^[0-9]+$ && $commit -gt 0 ]] || die "--commit-s must be a positive whole number, not '$commit'."
[ -b "${AIPU_DISK:-}" ] || die "AIPU_DISK must be the test disk (boot with scripts/vm.sh --disk fifo --image ...)."

rec() { python3 "$here/records.py" "$@"; }
tracepoints_pin || log "note: could not hold the trace events on"
disk_prepare "$AIPU_DISK"
if [ "$policy" = linux ]; then
	wbt=/sys/block/$(disk_name "$AIPU_DISK")/queue/wbt_lat_usec
	echo 75000 >"$wbt" || die "cannot turn writeback throttling on ($wbt)"
	log "$AIPU_DISK: wbt_lat_usec $(cat "$wbt") for Linux's own writeback"
fi
mkdir -p "$AIPU_MNT"
case "$fs" in
ext4)
	mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$AIPU_DISK" >/dev/null
	# The journal's commit interval is part of the bound for appended data:
	# name it rather than rely on the default (also 5 s).
	mopts=commit=$commit
	;;
ext2)
	mkfs.ext2 -F -q "$AIPU_DISK" >/dev/null
	mopts=defaults
	;;
esac
mount -t "$fs" -o "$mopts" "$AIPU_DISK" "$AIPU_MNT"
write_opts=()
if [ "$mode" = overwrite ]; then
	rec prepare "$AIPU_MNT/rec.dat" 1024 "$AIPU_OUT/extents.json"
else
	: >"$AIPU_MNT/rec.dat"
	write_opts=(--append)
fi
sync
case "$policy" in
aipu) insmod "$AIPU_KO" policy=aipu "max_age_ms=$max_age" "period_ms=$period" handover_ms=0 ;;
pu) insmod "$AIPU_KO" policy=pu "pu_interval_ms=$max_age" "period_ms=$period" handover_ms=0 ;;
kernel)
	echo $((max_age / 10)) >/proc/sys/vm/dirty_expire_centisecs
	echo $((period / 10)) >/proc/sys/vm/dirty_writeback_centisecs
	;;
linux) ;; # the sysctls as booted (recorded below)
off) echo 0 >/proc/sys/vm/dirty_writeback_centisecs ;;
esac
{
	echo "kernel $(uname -r)"
	echo "policy $policy max_age_ms $max_age period_ms $period rate $rate seed $seed"
	echo "fs $fs mode $mode run_s $run_min-$run_max block_size $(stat -f -c %S "$AIPU_MNT")"
	echo "mount -o $mopts: $(awk -v m="$AIPU_MNT" '$2 == m { print $1, $2, $3, $4 }' /proc/mounts)"
	# Every option in force, defaults included (commit, delalloc, data=):
	# Debian's kernels mount ext2 with the ext4 driver.
	o=/proc/fs/ext4/$(basename "$AIPU_DISK")/options
	if [ -r "$o" ]; then echo "ext4 driver options: $(tr '\n' ' ' <"$o")"; fi
	echo "dirty_expire_centisecs $(cat /proc/sys/vm/dirty_expire_centisecs) dirty_writeback_centisecs $(cat /proc/sys/vm/dirty_writeback_centisecs)"
	echo "queue: scheduler $(cat "/sys/block/$(disk_name "$AIPU_DISK")/queue/scheduler") wbt_lat_usec $(cat "/sys/block/$(disk_name "$AIPU_DISK")/queue/wbt_lat_usec" 2>/dev/null)"
	if [ -d "$AIPU_SYSFS" ]; then grep -H . "$AIPU_SYSFS"/*_ms "$AIPU_SYSFS/policy"; fi
} >"$AIPU_OUT/trial.txt"
echo 1 >/proc/sys/kernel/sysrq
# What aipu had done when the reset came (at most half a second old), and
# the disk's write count: the host keeps the last copy.
(
	while :; do
		{
			echo "uptime $(cut -d' ' -f1 /proc/uptime)"
			awk '{ print "disk_writes_completed", $5 }' "/sys/block/$(basename "$AIPU_DISK")/stat"
			if [ -r "$AIPU_SYSFS/stat" ]; then cat "$AIPU_SYSFS/stat"; fi
		} >"$AIPU_OUT/stat.tmp" && mv "$AIPU_OUT/stat.tmp" "$AIPU_OUT/stat.txt"
		sleep 0.5
	done
) &
log "crash-guest: $policy, $fs, $mode, writing records, reset in ${run_min}-${run_max} s"
rec write "$AIPU_MNT/rec.dat" "$AIPU_OUT/writes.log" --rate "$rate" \
	--run-min "$run_min" --run-max "$run_max" --seed "$seed" "${write_opts[@]}"
