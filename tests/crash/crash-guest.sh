#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The crash test's guest half (scripts/crashtest.sh boots it):
#
#   tests/crash/crash-guest.sh --policy aipu|pu|kernel|off [--seed N]
#       [--max-age-ms MS] [--period-ms MS] [--rate R] [--run-min S] [--run-max S]
#
# Makes ext4 on $AIPU_DISK (a FIFO virtio disk the host keeps), writes a
# preallocated record file and stores its extents in $AIPU_OUT, sets up the
# policy (aipu or pu: aipu.ko loaded with max_age_ms or pu_interval_ms =
# MS; kernel: no module, dirty_expire_centisecs = MS/10 and
# dirty_writeback_centisecs = period/10, Linux's own nominal bound; off: no
# module and Linux's periodic writeback off, the control that must lose), then
# overwrites random records without fsync, logging each to $AIPU_OUT, and
# hard-resets the guest (sysrq b) at a random moment. It never returns.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/lib.sh
AIPU_LIB_ONLY=1 TEST_NAME=crash . "$here/../vm/lib.sh"

policy="" seed=1 max_age=3000 period=1000 rate=20 run_min=6 run_max=14
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
	*) die "unknown argument '$1': see the header of $0." ;;
	esac
	shift 2
done
case "$policy" in aipu | pu | kernel | off) ;; *) die "--policy must be aipu, pu, kernel or off, not '$policy'." ;; esac
[ -b "${AIPU_DISK:-}" ] || die "AIPU_DISK must be the test disk (boot with scripts/vm.sh --disk fifo --image ...)."

rec() { python3 "$here/records.py" "$@"; }
tracepoints_pin || log "note: could not hold the trace events on"
disk_prepare "$AIPU_DISK"
mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$AIPU_DISK" >/dev/null
mkdir -p "$AIPU_MNT"
mount -t ext4 "$AIPU_DISK" "$AIPU_MNT"
rec prepare "$AIPU_MNT/rec.dat" 1024 "$AIPU_OUT/extents.json"
sync
case "$policy" in
aipu) insmod "$AIPU_KO" policy=aipu "max_age_ms=$max_age" "period_ms=$period" handover_ms=0 ;;
pu) insmod "$AIPU_KO" policy=pu "pu_interval_ms=$max_age" "period_ms=$period" handover_ms=0 ;;
kernel)
	echo $((max_age / 10)) >/proc/sys/vm/dirty_expire_centisecs
	echo $((period / 10)) >/proc/sys/vm/dirty_writeback_centisecs
	;;
off) echo 0 >/proc/sys/vm/dirty_writeback_centisecs ;;
esac
{
	echo "kernel $(uname -r)"
	echo "policy $policy max_age_ms $max_age period_ms $period rate $rate seed $seed"
	echo "dirty_expire_centisecs $(cat /proc/sys/vm/dirty_expire_centisecs) dirty_writeback_centisecs $(cat /proc/sys/vm/dirty_writeback_centisecs)"
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
log "crash-guest: $policy, writing records, reset in ${run_min}-${run_max} s"
rec write "$AIPU_MNT/rec.dat" "$AIPU_OUT/writes.log" --rate "$rate" \
	--run-min "$run_min" --run-max "$run_max" --seed "$seed"
