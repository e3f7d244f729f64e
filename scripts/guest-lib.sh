# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What the guest halves of the demo and of the benchmark suite share
# (scripts/demo-guest.sh, scripts/bench-guest.sh): rows, the disk model,
# loading aipu for a row. Sourced after the caller has defined die().

GUEST_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# rows_check's verdict, for its callers.
export NEED_KO=0

# The module parameters a row may set (the policy is the row's first word).
ROW_KNOBS="max_age_ms period_ms pu_interval_ms stage_interval_ms stage_batch write_alloc pace max_batch"

# guest_log_start FILE: from now on a copy of everything the script and
# its children print goes to FILE too, in case the VM console drops output.
# End the script with finish STATUS.
guest_log_start() {
	exec 3>&1 4>&2 > >(tee "$1") 2>&1
	tee_pid=$!
}
# finish STATUS: let tee write its last lines before the VM powers off.
finish() {
	exec 1>&3 2>&4
	wait "$tee_pid" 2>/dev/null || true
	exit "$1"
}

# row_file ROW: the row's name in file names (':' and ',' written '+').
row_file() {
	echo "${1//[:,]/+}"
}

# rows_check ROWS: die unless every row is POLICY[:KNOB=VALUE[,...]] with a
# known policy and knob, and no row repeats. Sets NEED_KO=1 if a row
# loads aipu.
rows_check() {
	local row policy a seen=" " kv
	NEED_KO=0
	[ -n "${1// /}" ] || die "the list of rows is empty: give one or more of none kernel pu aipu stage."
	for row in $1; do
		[[ $seen == *" $(row_file "$row") "* ]] && die "row '$row' is given twice: each row needs its own result file."
		seen+="$(row_file "$row") "
		policy=${row%%:*}
		case "$policy" in
		none) [ "$row" = none ] || die "row '$row': none loads no module, so it takes no knobs." ;;
		kernel | pu | aipu | stage) NEED_KO=1 ;;
		*) die "row '$row': unknown policy '$policy': use none, kernel, pu, aipu or stage." ;;
		esac
		[ "$row" != "$policy" ] || continue
		IFS=, read -r -a kv <<<"${row#*:}"
		[ "${#kv[@]}" -gt 0 ] || die "row '$row': nothing after ':'; give KNOB=VALUE[,KNOB=VALUE...]."
		for a in "${kv[@]}"; do
			[[ $a =~ ^([a-z_]+)=([a-z0-9]+)$ && " $ROW_KNOBS " == *" ${BASH_REMATCH[1]} "* ]] ||
				die "row '$row': '$a' is not KNOB=VALUE with KNOB one of: $ROW_KNOBS."
		done
	done
}

# pin_tracepoints: hold the points aipu hooks for the whole boot, so that
# insmod and rmmod between rows patch no kernel text (scripts/hold-hooks.sh
# says why: under TCG that can kill a guest).
pin_tracepoints() {
	"$GUEST_LIB_DIR/hold-hooks.sh" || echo "note: could not hold aipu's hook points" >&2
}

# disk_queues DISK N|auto|keep: give DISK N request queues (virtio_blk is a
# module in Debian's kernels and the guest's root is not on it, so it can
# be reloaded); auto keeps one per CPU, keep leaves any disk as it is (a real
# disk: bench.sh --host). Sets NQ to the number it has.
# Why one queue: see scripts/demo-guest.sh.
disk_queues() {
	local disk=$1 want=$2 sysblk
	sysblk=/sys/block/$(basename "$disk")
	NQ=$(find "$sysblk/mq" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
	[ "$want" != auto ] && [ "$want" != keep ] && [ "$NQ" -ne "$want" ] || return 0
	echo "$disk has $NQ request queues: reloading virtio_blk with num_request_queues=$want"
	modprobe -r virtio_blk || die "cannot unload virtio_blk to change $disk's request queues."
	modprobe virtio_blk num_request_queues="$want" || die "cannot reload virtio_blk."
	for _ in $(seq 50); do [ -b "$disk" ] && [ -d "$sysblk/mq" ] && break; sleep 0.1; done
	[ -b "$disk" ] || die "$disk did not come back after reloading virtio_blk."
	NQ=$(find "$sysblk/mq" -mindepth 1 -maxdepth 1 -type d | wc -l)
}

# disk_model DISK SCHEDULER|keep WBT_LAT_USEC|default: the I/O scheduler
# and writeback throttling of the model (keep and default leave the disk's
# own), and a reserved share of the background threshold (without it Linux
# starts background writeback after a few hundred dirty pages on a device
# with no history, before any update policy acts:
# ../shared/notes/environment.md).
disk_model() {
	local sysblk
	sysblk=/sys/block/$(basename "$1")
	if [ "$2" != keep ]; then
		echo "$2" >"$sysblk/queue/scheduler" || die "$1 cannot use scheduler $2."
	fi
	if [ "$3" != default ] && [ -w "$sysblk/queue/wbt_lat_usec" ]; then
		echo "$3" >"$sysblk/queue/wbt_lat_usec"
	fi
	echo 10 >"$sysblk/bdi/min_ratio"
	# blk-mq's debugfs, for the per-queue busy tags the workload samples.
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
}

# disk_settings_save DISK FILE: the settings disk_model and the benchmark
# change (scheduler, wbt, bdi min_ratio, dirty_expire_centisecs), as shell
# commands that put them back, into FILE; disk_settings_restore FILE runs
# them. On a real machine (bench.sh --host) the benchmark leaves the disk
# and the sysctl as it found them.
disk_settings_save() {
	local sysblk sched
	sysblk=/sys/block/$(basename "$1")
	sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$sysblk/queue/scheduler")
	{
		[ -z "$sched" ] || printf 'echo %q >%q\n' "$sched" "$sysblk/queue/scheduler"
		if [ -w "$sysblk/queue/wbt_lat_usec" ]; then
			printf 'echo %q >%q\n' "$(cat "$sysblk/queue/wbt_lat_usec")" "$sysblk/queue/wbt_lat_usec"
		fi
		printf 'echo %q >%q\n' "$(cat "$sysblk/bdi/min_ratio")" "$sysblk/bdi/min_ratio"
		printf 'echo %q >/proc/sys/vm/dirty_expire_centisecs\n' "$(cat /proc/sys/vm/dirty_expire_centisecs)"
	} >"$2"
}
disk_settings_restore() {
	[ -f "$1" ] || return 0
	bash "$1" || echo "note: could not restore every setting in $1" >&2
}

# row_load ROW MAX_AGE_MS PU_INTERVAL_MS: load aipu for ROW with policy
# kernel and the row's knobs, and set ROW_START to the shell command that
# switches to the row's policy (the workload runs it right before its
# clock starts). Nothing for row none. Status 1 if insmod failed.
#
# Loaded with policy kernel a little before the run and switched at its
# start, so that pu's first flush-all comes a pu_interval into the run (a
# switch starts pu's and stage's clocks) and the run does not measure the
# load itself: insmod patches kernel code, which under TCG can stall the
# guest (measured: the worst read of 3 of 21 module rows came in the first
# 2 s when insmod was the start command). handover_ms=0: the caller syncs
# before, so there is nothing dirty that aipu did not see. The row's
# numeric knobs come last and so win over MAX_AGE_MS and PU_INTERVAL_MS;
# write_alloc is set after the policy, since purge is refused under kernel.
row_load() {
	local row=$1 policy=${1%%:*} a params kv
	ROW_START=""
	[ "$policy" != none ] || return 0
	params=(policy=kernel "max_age_ms=$2" "pu_interval_ms=$3" handover_ms=0)
	ROW_START=$(printf 'echo %q >/sys/kernel/aipu/policy' "$policy")
	if [ "$row" != "$policy" ]; then
		IFS=, read -r -a kv <<<"${row#*:}"
		for a in "${kv[@]}"; do
			case "${a%%=*}" in
			write_alloc) ROW_START+=$(printf ' && echo %q >/sys/kernel/aipu/write_alloc' "${a#*=}") ;;
			*) params+=("$a") ;;
			esac
		done
	fi
	insmod "$AIPU_KO" "${params[@]}" || return 1
}

# row_attach: the workload options that embed aipu's statistics and count
# its flusher's CPU time (empty when aipu is not loaded).
row_attach() {
	local f
	[ -d /sys/module/aipu ] || return 0
	for f in stat burst_hist age_hist; do
		printf '%s\n' --attach "$f=/sys/kernel/aipu/$f"
	done
	printf '%s\n' --kthread aipu
}

row_unload() {
	if [ -d /sys/module/aipu ]; then
		rmmod aipu || die "rmmod aipu failed (see dmesg)."
	fi
}

# blk_start DISK DIR: start blktrace on DISK, its files in DIR (emptied).
# blk_stop DISK DIR ACTION OUT: stop it, and write the disk's write
# requests at blktrace action ACTION (Q: queued, D: dispatched to the
# device) as "t_s sector sectors command" lines, gzipped, into OUT, with
# the workload's marker reads of the disk's last page (bench/workload.py
# --marker, at the run's start and end, at their Q) as
# "t_s sector sectors @marker": bench/report.py and bench/demo_plot.py cut
# the trace to the run with them, leaving out the final sync's writes.
blk_start() {
	rm -rf "$2"
	mkdir -p "$2"
	blktrace -d "$1" -D "$2" -o t >"$2/log" 2>&1 &
	blk_pid=$!
	for _ in $(seq 100); do
		[ -e "$2/t.blktrace.0" ] && return 0
		kill -0 "$blk_pid" 2>/dev/null || die "blktrace exited: $(cat "$2/log")"
		sleep 0.1
	done
	die "blktrace on $1 did not start within 10 s."
}
blk_stop() {
	local pages marker
	pages=$(($(blockdev --getsize64 "$1") / 4096))
	marker=$((pages * 8 - 8))
	kill -INT "$blk_pid" 2>/dev/null || true
	wait "$blk_pid" 2>/dev/null || true
	blkparse -q -i t -D "$2" -f '%T.%9t %a %d %S %n %C\n' 2>/dev/null |
		awk -v m="$marker" -v a="$3" '$2 == a && $3 ~ /W/ { print $1, $4, $5, $6 }
			$2 == "Q" && $3 ~ /R/ && $4 == m { print $1, $4, $5, "@marker" }' | gzip >"$4"
}

# dmesg_check FILE: print the lines of the kernel log FILE that the VM
# tests would fail on (tests/vm/dmesg-bad.ere); status 1 if any.
dmesg_check() {
	local bad
	bad=$(grep -E "$(<"$GUEST_LIB_DIR/../tests/vm/dmesg-bad.ere")" "$1") || return 0
	printf '%s\n' "$bad" | head -n 20 || true
	return 1
}
