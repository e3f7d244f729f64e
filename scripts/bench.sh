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
#
# Results: DIR (default bench/results/<date>-<kver>[-quick|-smoke]/, one per
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

die() {
	echo "bench: $*" >&2
	exit 2
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=full
kernels=""
models=""
out=""

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) mode=quick; shift ;;
	--smoke) mode=smoke; shift ;;
	--kernels) [ $# -ge 2 ] || die "--kernels needs a list of kernel versions."; kernels=$2; shift 2 ;;
	--models) [ $# -ge 2 ] || die "--models needs a list such as \"fifo94 hdd\"."; models=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a directory."; out=$2; shift 2 ;;
	-h | --help)
		sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*) die "unknown argument '$1': see scripts/bench.sh --help." ;;
	esac
done

all_rows="none kernel pu aipu aipu:pace=1 aipu:write_alloc=purge stage:stage_interval_ms=0 stage:stage_interval_ms=1000"
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
}
# model_timeout MODEL: seconds its boot may take (vm.sh kills it after):
# about twice what the cells take (~70 s a 45-s cell, ~110 s a db cell).
model_timeout() {
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
	find /lib/modules -mindepth 1 -maxdepth 1 -name "$1" -printf '%f\n' 2>/dev/null |
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
		dir=$root/bench/results/$(date +%Y-%m-%d)-$k$suffix
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
	/usr/bin/python3 "$root/bench/report.py" "$dir" || status=1
	echo "bench: $k: results in $dir"
done
echo "bench: $(($(date +%s) - start)) s in all"
exit "$status"
