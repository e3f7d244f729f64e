#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: the benchmark suite (bench/README.md). For each kernel and
# each device model, one VM boot (scripts/vm.sh) runs every workload x row x
# trial of the matrix (scripts/bench-guest.sh); then bench/report.py writes
# the tables and plots.
#
#   scripts/bench.sh [--quick | --smoke] [--kernels "KVER ..."]
#                    [--models "fifo94 hdd ssd"] [--out DIR]
#                    [--rows "ROW ..."] [--workloads "random ..."]
#                    [--trials N] [--duration S]
#
# --rows, --workloads, --trials (of every workload) and --duration (s a
# run) replace the mode's choice for every model, e.g. to measure knob
# values: --quick --models fifo94 --rows "aipu aipu:period_ms=250".
#
# On a real test machine (one that loads modules), against a spare disk:
#
#   scripts/bench.sh --host --device /dev/sdX --destroy-contents-of /dev/sdX
#                    [--quick | --smoke] [--rate N] [--scheduler S]
#                    [--wbt USEC] [--out DIR] [--rows ...] ...
#
# runs the same workloads, blktrace and report on this machine, with no
# VM: the model is the disk itself ("host" in the results), its service
# time measured by the same probe. It makes an ext4 file system on the
# whole disk, so everything on it is lost: it refuses without
# --destroy-contents-of naming the same disk, and refuses a partition, a
# disk that is mounted, holds the root file system, swap or any mounted
# partition, or is in use by device mapper or RAID. aipu.ko must be built
# for the running kernel (build/$(uname -r)/aipu.ko, ./aipu.ko, or
# AIPU_KO=PATH). The rate is a third of the disk's time at its measured
# write service time (at most 1000 pages/s) unless --rate N; the disk's
# scheduler and wbt are left as they are unless --scheduler or --wbt; the
# scheduler, wbt, bdi min_ratio and dirty_expire_centisecs are put back at
# the end. Between cells it syncs and drops the page cache of the whole
# machine, and while aipu writes it turns Linux's periodic writeback off
# for every disk: use a test machine. Matrix: full = the fifo94 model's
# (random, bursty, rewrite, db, every row; 6 trials of random, 1 of the
# others) plus overhead; --quick = random, rows kernel, pu, aipu and
# aipu:pace=0, one trial; --smoke = make check's. Results:
# build/bench/<date>-<kver>-host[-quick|-smoke]/ (or --out), model
# directory host/.
#
# Modes:
#   full (default)  the whole matrix with Linux's default times (30-s
#                   expiry): about 2 h 15 min a kernel on a 2-CPU host (the
#                   2026-11-23 run on 6.1, made in parts: docs/results.md).
#   --quick         fifo94 (rows kernel, pu, aipu) and hdd (kernel, aipu),
#                   the random workload, one trial of 40 s (38 s on hdd)
#                   with Linux's default times: 15 minutes for both
#                   kernels (817 s measured on 2026-11-23).
#                   (Scaled-down times do not do: a 10-s expiry gives
#                   bursts of 200 writes, which fit in the disk queue's
#                   256 tags, and no read waits behind them.)
#   --smoke         one kernel (the newest 6.1), fifo94, random, rows
#                   kernel and aipu, one trial of 16 s with a 5-s expiry:
#                   make check's test that the suite runs end to end
#                   (~3 min); it measures nothing worth reading.
# After the matrix, full and --quick (without --models, --rows,
# --workloads, --trials or --duration) run the scale benchmark's part in a
# guest on the same kernels, one boot each (bench/scale/guest-run.sh
# [--quick]; bench/scale/README.md): about 50 min a kernel, 10 with --quick.
#
# Results: DIR (default build/bench/<date>-<kver>[-quick|-smoke]/, one per
# kernel): env.txt (kernel, QEMU, fio, commit, mode), <model>/ (the guest's
# env.txt, probe.json, dmesg.txt, guest.log, and <workload>/<row>/trial<N>.*),
# summary.md, summary.json and plots/. With several kernels and --out, DIR
# gets one subdirectory per kernel.
#
# Device models (the host serves a virtio-blk disk; the guest sets the rest):
#   fifo94  a strict FIFO (vm.sh --disk serial: nbdkit serves one request
#           at a time, in arrival order), 16 ms added to each (~18 ms in
#           all under TCG, ~55 IOPS), no bandwidth cap; scheduler none, wbt
#           off: the paper's RZ58 (18 ms a request) behind a deep FIFO
#   hdd     a strict FIFO, 5 ms a request (~150 IOPS), 80 MiB/s;
#           mq-deadline, Linux's default wbt
#   ssd     QEMU's throttle at 2000 IOPS, 400 MiB/s (reads and writes
#           alternate: not a FIFO); scheduler none, Linux's default wbt
# All with one request queue and a reserved bdi min_ratio (see
# scripts/demo-guest.sh and ../shared/notes/environment.md). fifo94 was
# QEMU's throttle at 55 IOPS until 2026-11-23: the throttle alternates
# reads and writes, so a read waited for a free tag (~0.3 s), not for the
# burst (its quick results are in git history before commit 55008c4).
set -euo pipefail

prog=bench
die_rc=2
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=full
kernels=""
models=""
out=""
o_rows=""
o_workloads=""
o_trials=""
o_duration=""
host=0
device=""
destroy=""
o_rate=""
o_scheduler=""
o_wbt=""

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) mode=quick; shift ;;
	--smoke) mode=smoke; shift ;;
	--kernels) [ $# -ge 2 ] || die "--kernels needs a list of kernel versions."; kernels=$2; shift 2 ;;
	--models) [ $# -ge 2 ] || die "--models needs a list such as \"fifo94 hdd\"."; models=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a directory."; out=$2; shift 2 ;;
	--rows) [ $# -ge 2 ] || die "--rows needs a list such as \"kernel aipu\"."; o_rows=$2; shift 2 ;;
	--workloads) [ $# -ge 2 ] || die "--workloads needs a list such as \"random bursty\"."; o_workloads=$2; shift 2 ;;
	--trials) [ $# -ge 2 ] || die "--trials needs a number."; o_trials=$2; shift 2 ;;
	--duration) [ $# -ge 2 ] || die "--duration needs a number of seconds."; o_duration=$2; shift 2 ;;
	--host) host=1; shift ;;
	--device) [ $# -ge 2 ] || die "--device needs a disk such as /dev/sdb."; device=$2; shift 2 ;;
	--destroy-contents-of) [ $# -ge 2 ] || die "--destroy-contents-of needs the disk given to --device."; destroy=$2; shift 2 ;;
	--rate) [ $# -ge 2 ] || die "--rate needs a number of pages a second."; o_rate=$2; shift 2 ;;
	--scheduler) [ $# -ge 2 ] || die "--scheduler needs a scheduler name such as mq-deadline."; o_scheduler=$2; shift 2 ;;
	--wbt) [ $# -ge 2 ] || die "--wbt needs a latency in microseconds (0: off)."; o_wbt=$2; shift 2 ;;
	-h | --help)
		sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*) die "unknown argument '$1': see scripts/bench.sh --help." ;;
	esac
done

# aipu is the module with its defaults (pace=1 since 2026-11-25; the
# 2026-11-23 runs had pace=0 as the default and a row aipu:pace=1).
all_rows="none kernel pu aipu aipu:pace=0 aipu:write_alloc=purge stage:stage_interval_ms=0 stage:stage_interval_ms=1000"

# host_device_check DISK: die, with the reason, unless DISK is a whole,
# writable disk that nothing uses: no partition of it, nor anything stacked
# on it (device mapper, RAID), is mounted, holds the root file system or
# swap, and the kernel lets us open it exclusively. Sets DEV to its
# canonical path.
host_device_check() {
	local name node type mp rootdev
	[ -b "$1" ] || die "--device $1 is not a block device: give a spare disk such as /dev/sdb."
	DEV=$(readlink -f "$1")
	name=$(basename "$DEV")
	[ -d "/sys/block/$name" ] ||
		die "--device $1 is a partition, not a whole disk: give the disk itself (the benchmark erases all of it)."
	[ "$(cat "/sys/block/$name/ro")" = 0 ] || die "$DEV is read-only: give a writable spare disk."
	rootdev=$(findmnt -nvo MAJ:MIN / 2>/dev/null || true)
	while read -r node type mp; do
		mp=$(printf '%b' "$mp") # lsblk -r writes a space as \x20
		if [ "$mp" = / ] || { [ -n "$rootdev" ] && [ "$(lsblk -ndro MAJ:MIN "$node")" = "$rootdev" ]; }; then
			die "$DEV holds the root file system ($node): give a spare disk, never the system's."
		fi
		case "$mp" in
		"") ;;
		"[SWAP]") die "$DEV is in use as swap ($node): swapoff it, or give a spare disk." ;;
		*) die "$DEV is mounted ($node on $mp): unmount it, or give a spare disk." ;;
		esac
		case "$type" in
		disk | part) ;;
		*) die "$DEV is in use by $node ($type, stacked on it): remove that, or give a spare disk." ;;
		esac
	done < <(lsblk -nrpo NAME,TYPE,MOUNTPOINT "$DEV")
	"$py" -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))' "$DEV" 2>/dev/null ||
		die "$DEV is in use (the kernel refused to open it exclusively): give a spare disk nothing holds."
}

# host_ko: aipu.ko for the running kernel, or die.
host_ko() {
	local k
	k=$(uname -r)
	for ko in "${AIPU_KO:-}" "$root/build/$k/aipu.ko" "$root/aipu.ko"; do
		if [ -z "$ko" ] || [ ! -f "$ko" ]; then
			continue
		fi
		[ "$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)" = "$k" ] && return 0
		[ -z "${AIPU_KO:-}" ] || [ "$ko" != "$AIPU_KO" ] ||
			die "AIPU_KO=$AIPU_KO was not built for the running kernel $k: build it with 'make' or 'make allkernels'."
	done
	die "no aipu.ko built for the running kernel $k: run 'make' (needs linux-headers-$k) or 'make allkernels'."
}

# run_host: the whole --host run (see the top of this file).
run_host() {
	local kver dir mdir t err rc status=0 sysblk
	[ -z "$models$kernels" ] || die "--host measures the disk itself on the running kernel: drop --models and --kernels."
	[ -n "$device" ] || die "--host needs --device DISK: a spare disk whose contents will be destroyed."
	[ -n "$destroy" ] ||
		die "--host erases $device: add --destroy-contents-of $device to confirm that everything on it will be destroyed."
	[ "$(readlink -f "$destroy")" = "$(readlink -f "$device")" ] ||
		die "--destroy-contents-of names $destroy but --device is $device: name the same disk in both."
	[ "$(id -u)" -eq 0 ] || die "--host must run as root (it formats the disk and loads aipu.ko)."
	for t in lsblk findmnt blktrace blkparse fio mkfs.ext4 insmod rmmod modinfo; do
		command -v "$t" >/dev/null || die "--host needs $t: run scripts/install-deps.sh (or install it)."
	done
	host_device_check "$device"
	kver=$(uname -r)

	ARGS=(--host --model host --hw-queues keep --rate "${o_rate:-auto}"
		--scheduler "${o_scheduler:-keep}" --wbt "${o_wbt:-default}")
	case "$mode" in
	full) ARGS+=(--workloads "random bursty rewrite db overhead" --rows "$all_rows" --trials 6 --trials-other 1) ;;
	quick) ARGS+=(--workloads random --rows "kernel pu aipu aipu:pace=0" --trials 1 --duration 40 --probe-seconds 2) ;;
	smoke)
		ARGS+=(--workloads random --rows "kernel aipu" --trials 1 --duration 16 --probe-seconds 3
			--max-age-ms 5000 --pu-interval-ms 5000 --burst-every 5)
		;;
	esac
	[ -z "$o_rows" ] || ARGS+=(--rows "$o_rows")
	[ -z "$o_workloads" ] || ARGS+=(--workloads "$o_workloads")
	[ -z "$o_trials" ] || ARGS+=(--trials "$o_trials" --trials-other "$o_trials")
	[ -z "$o_duration" ] || ARGS+=(--duration "$o_duration")
	"$root/scripts/bench-guest.sh" "${ARGS[@]}" --check ||
		die "the arguments above are wrong: see scripts/bench.sh --help."

	host_ko
	[ ! -d /sys/module/aipu ] || die "aipu is already loaded: rmmod aipu first (the benchmark loads it for each row)."
	if ! err=$(insmod "$ko" policy=kernel handover_ms=0 2>&1); then
		die "this machine refused to load $ko ($err): host mode needs a kernel that loads modules (no lockdown, or a signed module)."
	fi
	rmmod aipu || die "rmmod aipu failed after a trial load: see dmesg."

	suffix=-host
	[ "$mode" = full ] || suffix=-host-$mode
	dir=${out:-$root/build/bench/$(date +%Y-%m-%d)-$kver$suffix}
	mdir=$dir/host
	sysblk=/sys/block/$(basename "$DEV")
	rm -rf "$dir"
	mkdir -p "$mdir"
	{
		echo "kernel $kver"
		echo "mode $mode"
		echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo -dirty)"
		echo "qemu none (host mode: no VM)"
		echo "fio $(fio --version)"
		echo "models host"
		echo "host_mode 1"
		echo "host_cpus $(nproc)"
		echo "host_cpu $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
		echo "host_mem_kb $(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
		echo "host_load_before $(cut -d' ' -f1-3 /proc/loadavg)"
	} >"$dir/env.txt"
	{
		echo "disk host:$DEV"
		echo "device $DEV"
		echo "device_model $(lsblk -ndo VENDOR,MODEL "$DEV" | xargs)"
		echo "rotational $(cat "$sysblk/queue/rotational")"
		echo "device_size_bytes $(blockdev --getsize64 "$DEV")"
		echo "scheduler_before $(sed -n 's/.*\[\(.*\)\].*/\1/p' "$sysblk/queue/scheduler")"
	} >"$mdir/env.txt"
	echo "bench: ===== host mode: $DEV on $(hostname), kernel $kver ($mode); results in $dir"
	rc=0
	AIPU_DISK=$DEV AIPU_OUT=$mdir AIPU_KO=$ko "$root/scripts/bench-guest.sh" "${ARGS[@]}" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "bench: the run on $DEV failed (exit status $rc): see $mdir/guest.log and dmesg.txt." >&2
		status=1
	fi
	echo "host_load_after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/env.txt"
	"$py" "$root/bench/report.py" "$dir" || status=1
	echo "bench: results in $dir"
	exit "$status"
}

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ "$host" -eq 1 ]; then
	run_host
fi
[ -z "$device$destroy$o_rate$o_scheduler$o_wbt" ] ||
	die "--device, --destroy-contents-of, --rate, --scheduler and --wbt go with --host."
o_models=$models
case "$mode" in
full) models=${models:-fifo94 hdd ssd} ;;
quick) models=${models:-fifo94 hdd} ;;
smoke) models=${models:-fifo94} ;;
esac

# model_disk MODEL: vm.sh's --disk. model_args MODEL: sets ARGS to
# bench-guest.sh's options for MODEL in this mode: the guest's side of the
# model, then the matrix (workloads, rows, trials, times).
model_disk() {
	case "$1" in
	fifo94) echo serial:16 ;;
	hdd) echo serial:5:$((80 << 20)) ;;
	ssd) echo fifo:2000:$((400 << 20)) ;;
	*) die "unknown model '$1': use fifo94, hdd or ssd." ;;
	esac
}
model_args() {
	case "$1" in
	fifo94) ARGS=(--scheduler none --wbt 0 --hw-queues 1 --rate 20) ;;
	hdd) ARGS=(--scheduler mq-deadline --wbt default --hw-queues 1 --rate 50) ;;
	ssd) ARGS=(--scheduler none --wbt default --hw-queues 1 --rate 200) ;;
	esac
	ARGS+=(--model "$1")
	case "$mode:$1" in
	full:fifo94) ARGS+=(--workloads "random bursty rewrite db" --rows "$all_rows" --trials 6 --trials-other 1) ;;
	full:hdd) ARGS+=(--workloads random --rows "$all_rows" --trials 2) ;;
	full:ssd) ARGS+=(--workloads "random overhead" --rows "$all_rows" --trials 2 --trials-other 2) ;;
	quick:fifo94) ARGS+=(--workloads random --rows "kernel pu aipu" --trials 1 --duration 40 --probe-seconds 2) ;;
	quick:*) ARGS+=(--workloads random --rows "kernel aipu" --trials 1 --duration 38 --probe-seconds 2) ;;
	smoke:*)
		ARGS+=(--workloads random --rows "kernel aipu" --trials 1 --duration 16 --probe-seconds 3
			--max-age-ms 5000 --pu-interval-ms 5000 --burst-every 5)
		;;
	esac
	# The caller's choices win (bench-guest.sh takes an option's last value).
	[ -z "$o_rows" ] || ARGS+=(--rows "$o_rows")
	[ -z "$o_workloads" ] || ARGS+=(--workloads "$o_workloads")
	[ -z "$o_trials" ] || ARGS+=(--trials "$o_trials" --trials-other "$o_trials")
	[ -z "$o_duration" ] || ARGS+=(--duration "$o_duration")
	return 0
}
# model_timeout MODEL: seconds its boot may take (vm.sh kills it after):
# about twice what the cells take (~70 s a 45-s cell, ~110 s a db cell).
model_timeout() {
	if [ -n "$o_rows$o_workloads$o_trials$o_duration" ]; then
		echo 10800
		return
	fi
	case "$mode:$1" in
	full:fifo94) echo 10800 ;;
	full:*) echo 5400 ;;
	*) echo 1800 ;;
	esac
}
for m in $models; do
	model_disk "$m" >/dev/null
done

newest() { # PATTERN: the newest kernel matching it with an image and aipu.ko
	find /lib/modules -mindepth 1 -maxdepth 1 -name "$1" ! -name '*-rt-*' -printf '%f\n' 2>/dev/null |
		while read -r k; do
			[ -f "/boot/vmlinuz-$k" ] && [ -f "$root/build/$k/aipu.ko" ] && echo "$k"
		done | sort -V | tail -n 1
}
if [ -z "$kernels" ]; then
	if [ "$mode" = smoke ]; then
		kernels=$(newest '6.1.*')
	else
		kernels="$(newest '6.1.*') $(newest '6.12.*')"
	fi
	[ -n "${kernels// /}" ] ||
		die "no 6.1 or 6.12 kernel with a built build/<kver>/aipu.ko: run 'make allkernels' (make bench does) or scripts/install-deps.sh."
fi
for k in $kernels; do
	[ -f "/boot/vmlinuz-$k" ] || die "no /boot/vmlinuz-$k: installed: $(cd /boot && echo vmlinuz-* | sed 's/vmlinuz-//g')."
	[ -f "$root/build/$k/aipu.ko" ] || die "no build/$k/aipu.ko: run 'make allkernels' first."
done
# Every model's arguments are checked before the first boot.
for m in $models; do
	model_args "$m"
	"$root/scripts/bench-guest.sh" "${ARGS[@]}" --check ||
		die "the matrix of model $m is wrong (above): fix scripts/bench.sh."
done

nk=$(wc -w <<<"$kernels")
suffix=""
[ "$mode" = full ] || suffix=-$mode
status=0
start=$(date +%s)
for k in $kernels; do
	if [ -z "$out" ]; then
		dir=$root/build/bench/$(date +%Y-%m-%d)-$k$suffix
	elif [ "$nk" -gt 1 ]; then
		dir=$out/$k
	else
		dir=$out
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	{
		echo "kernel $k"
		echo "mode $mode"
		echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo -dirty)"
		echo "qemu $(qemu-system-x86_64 --version | head -n 1)"
		echo "virtme_ng $(vng --version 2>/dev/null | head -n 1)"
		echo "fio $(fio --version)"
		echo "nbdkit $(nbdkit --version 2>/dev/null || echo none)"
		echo "models $models"
		echo "host_cpus $(nproc)"
		echo "host_load_before $(cut -d' ' -f1-3 /proc/loadavg)"
	} >"$dir/env.txt"
	for m in $models; do
		echo "bench: ===== $k, model $m ($mode)"
		mkdir -p "$dir/$m"
		disk=$(model_disk "$m")
		echo "disk $disk" >"$dir/$m/env.txt"
		model_args "$m"
		set +e
		"$root/scripts/vm.sh" --kernel "$k" --disk "$disk" --disk-size 2048 --memory 2G \
			--cpus 2 --timeout "$(model_timeout "$m")" --out "$dir/$m" --verbose -- \
			"$root/scripts/bench-guest.sh" "${ARGS[@]}" 2>&1 | cat
		rc=${PIPESTATUS[0]}
		set -e
		if [ "$rc" -ne 0 ]; then
			echo "bench: $k, model $m: the guest run failed (exit status $rc): see $dir/$m/guest.log and dmesg.txt." >&2
			status=1
		fi
	done
	echo "host_load_after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/env.txt"
	"$py" "$root/bench/report.py" "$dir" || status=1
	echo "bench: $k: results in $dir"
done
# The scale benchmark's part in a guest (bench/scale/README.md, "In a
# guest"): tracking overhead, memory and lock holds on the same kernels,
# one boot each, after the matrix; not with --smoke or a narrowed matrix.
if [ "$mode" != smoke ] && [ -z "$o_models$o_rows$o_workloads$o_trials$o_duration" ]; then
	gs=()
	[ "$mode" = full ] || gs+=(--quick)
	for k in $kernels; do gs+=(--kernel "$k"); done
	[ -z "$out" ] || gs+=(--out "$out/guest-scale")
	echo "bench: ===== the scale benchmark in a guest: bench/scale/guest-run.sh ${gs[*]}"
	"$root/bench/scale/guest-run.sh" "${gs[@]}" || status=1
fi
echo "bench: $(($(date +%s) - start)) s in all"
exit "$status"
