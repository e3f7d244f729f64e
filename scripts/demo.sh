#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make run`: the demo. Boots one kernel once under QEMU with a strict-FIFO
# disk (the benchmark's fifo94 model: nbdkit serves one request at a time
# in arrival order, 16 ms added to each, ~18 ms in all, as the paper's
# RZ58; guest scheduler none, no write throttling, one request queue), runs
# the same steady write load with a read-latency probe once per row, and
# prints the comparison table, the claims it checks, and the path of one
# PNG (bench/demo_plot.py: per row, read latency over time and the writes
# dispatched per second, the rows stacked on one time axis). Before each
# row it prints a progress line with the time left. The default rows:
# Linux's own writeback (aipu loaded with policy kernel), a 30-s flush-all
# (pu), aipu (its defaults, paced), unpaced aipu, aipu with write purge,
# and staging with C = 0 and C = 1 s. About 10 minutes under TCG on a
# 2-CPU host.
#
#   scripts/demo.sh [--kernel KVER] [--rows "ROW ..."] [--duration SECONDS]
#                   [--rate PAGES_PER_S] [--out DIR] [--hw-queues 1|N|auto]
#                   [--disk-model fifo94|throttle]
#
# --disk-model throttle is the demo's model before 2026-11-25: QEMU's I/O
# throttle at 60 IOPS. It serves reads and writes from separate queues in
# turn, so a read waits for a free tag (~0.3 s behind Linux's burst), not
# for the burst (4-5 s on fifo94): the paper's effect, much reduced.
#
# A row is POLICY[:KNOB=VALUE[,KNOB=VALUE...]]: POLICY is kernel, pu, aipu,
# stage, or none (no module); the knobs are aipu's module parameters
# (max_age_ms period_ms pu_interval_ms stage_interval_ms stage_batch
# write_alloc pace max_batch), e.g. aipu:write_alloc=purge. --policies is
# another name for --rows.
#
# --hw-queues: the disk's request queues in the guest. 1 (the default) gives
# the same model every run: every request, the reader's included, waits for
# the same 256 tags and what is queued ahead of it. auto keeps virtio_blk's
# one queue per CPU, where a read stalls for seconds or not at all depending
# on which CPU's queue a burst filled first (see scripts/demo-guest.sh).
#
# KVER may also come from the environment; the default is the newest 6.1
# kernel in /lib/modules that is not PREEMPT_RT. aipu.ko must already be
# built for it (`make allkernels`, which `make run` does first).
# Results: DIR (default build/demo/<kver>/): <row>.json (':' and ',' as '+'), <row>.writes.gz
# (blktrace: the writes dispatched), env.txt, dmesg.txt, guest.log,
# summary.json, demo.png.
set -euo pipefail

prog=demo
die_rc=2
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kver=${KVER:-}
# aipu (its defaults: pace=1, write_alloc=update) next to each of its
# variants, so that paced vs unpaced and purge vs update are compared in
# the same boot.
rows="kernel pu aipu aipu:pace=0 aipu:write_alloc=purge stage:stage_interval_ms=0 stage:stage_interval_ms=1000"
# 45 s a row: Linux's first expiry comes 30-35 s into a run (an inode is
# written at the first 5-s flusher wake-up after it is 30 s old) and pu's
# first flush-all at 30 s; each puts ~600 writes on the disk, which fill the
# queue's 256 tags and drain at ~55 a second, one at a time: a read issued
# then waits 4-5 s behind them (30-42 s into the run in the benchmark's
# fifo94 runs). 45 s covers that, and gives aipu 15 s of writing aged
# pages. The cost of a row is the run plus ~25 s (the final sync writes the
# ~600 pages still dirty at ~55 a second; reload; Python's start under
# TCG), so 7 rows and the boot keep `make run` at about 10 minutes.
duration=45
rate=20
out=""
hw_queues=1
disk_model=fifo94


while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) need_arg "$@"; kver=$2; shift 2 ;;
	--rows | --policies) need_arg "$@"; rows=$2; shift 2 ;;
	--duration) need_arg "$@"; duration=$2; shift 2 ;;
	--rate) need_arg "$@"; rate=$2; shift 2 ;;
	--out) need_arg "$@"; out=$2; shift 2 ;;
	--hw-queues) need_arg "$@"; hw_queues=$2; shift 2 ;;
	--disk-model) need_arg "$@"; disk_model=$2; shift 2 ;;
	-h | --help)
		sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*) die "unknown argument '$1': see scripts/demo.sh --help." ;;
	esac
done

for v in duration rate; do
	if ! [[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]]; then
		die "--$v must be a positive whole number, not '${!v}'."
	fi
done
if [ "$hw_queues" != auto ] && ! [[ $hw_queues =~ ^[1-9][0-9]*$ ]]; then
	die "--hw-queues must be auto (one per CPU) or a positive number, not '$hw_queues'."
fi
# The host's side of the disk model (scripts/vm.sh --disk).
case "$disk_model" in
fifo94)
	disk=serial:16
	disk_text="strict FIFO (nbdkit: one request at a time in arrival order, 16 ms added, ~18 ms a request)"
	;;
throttle)
	iops=60
	disk=fifo:$iops
	disk_text="QEMU-throttled virtio disk at $iops IOPS (reads and writes alternate: not a FIFO)"
	;;
*) die "--disk-model must be fifo94 (strict FIFO, the default) or throttle (QEMU's throttle at 60 IOPS), not '$disk_model'." ;;
esac
# The guest script checks its arguments the same way before it erases
# anything; checking here first saves a boot when one is wrong.
"$root/scripts/demo-guest.sh" --check --rows "$rows" --duration "$duration" --rate "$rate" \
	--hw-queues "$hw_queues" 2>&1 | sed 's/^demo-guest: /demo: /' >&2 || exit 2
need_ko=0
for row in $rows; do
	[ "${row%%:*}" = none ] || need_ko=1
done

if [ -z "$kver" ]; then
	kver=$(find /lib/modules -mindepth 1 -maxdepth 1 -name '6.1.*' ! -name '*-rt-*' -printf '%f\n' 2>/dev/null |
		while read -r k; do [ -f "/boot/vmlinuz-$k" ] && echo "$k"; done | sort -V | tail -n 1)
	[ -n "$kver" ] ||
		die "no 6.1 kernel found in /lib/modules with an image in /boot: run scripts/install-deps.sh or set KVER=."
fi
[ -f "/boot/vmlinuz-$kver" ] ||
	die "no /boot/vmlinuz-$kver: set KVER (or --kernel) to one of:$(for f in /boot/vmlinuz-*; do printf ' %s' "${f#/boot/vmlinuz-}"; done)"
ko=$root/build/$kver/aipu.ko
if [ "$need_ko" -eq 1 ] && [ ! -f "$ko" ]; then
	die "no $ko: build it first with 'make allkernels' (make run does this)."
fi

out=${out:-$root/build/demo/$kver}
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.writes.gz "$out"/{env,dmesg}.txt "$out/guest.log" "$out/demo.png"

if [ "$hw_queues" = 1 ]; then
	model="one request queue (virtio_blk num_request_queues=1), the default"
elif [ "$hw_queues" = auto ]; then
	model="one request queue per CPU (virtio_blk's default): stalls vary run to run"
else
	model="$hw_queues request queues (virtio_blk num_request_queues=$hw_queues)"
fi
# The guest runs under TCG on the host's CPUs: other VMs or builds running
# at the same time delay it, and a delay of the guest is a delay of its
# reads. Printed, and kept in env.txt, so a perturbed run can be told.
host_load() {
	local n
	n=$(pgrep -c -f '^[^ ]*qemu-system-' || true)
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs, $n QEMU processes"
}
start=$(date +%s)
echo "demo: kernel $kver, ${duration} s a row at $rate pages/s; results in $out"
echo "demo: rows: $rows"
echo "demo: disk model $disk_model: $disk_text, scheduler none, no wbt; $model"
load_before=$(host_load)
echo "demo: host before the VM: $load_before"
# Through a pipe: virtme-ng has QEMU open /proc/self/fd/1 and /proc/self/fd/2
# once per guest output port; on a regular file (make run >log) each opening
# truncates it and writes at its own offset, so lines overwrite each other.
set +e
"$root/scripts/vm.sh" --kernel "$kver" --disk "$disk" --disk-size 512 --memory 2G --cpus 2 \
	--out "$out" --verbose -- "$root/scripts/demo-guest.sh" --rows "$rows" \
	--duration "$duration" --rate "$rate" --hw-queues "$hw_queues" 2>&1 | cat
rc=${PIPESTATUS[0]}
set -e
# Our VM has exited, so the QEMU processes counted are others'; the load
# averages still include it.
load_after=$(host_load)
echo "demo: VM finished after $(($(date +%s) - start)) s (exit status $rc)"
echo "demo: host after the VM: $load_after (the averages include this VM, up to 2 CPUs)"
if [ -f "$out/env.txt" ]; then
	{
		echo "disk_model $disk_model"
		echo "disk $disk"
		[ -z "${iops:-}" ] || echo "iops $iops"
		echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo -dirty)"
		echo "host_before $load_before"
		echo "host_after $load_after"
	} >>"$out/env.txt"
fi
echo

src=0
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" "$root/bench/summarize.py" "$out" --timeline --json "$out/summary.json" || src=$?
echo
if png=$("$py" "$root/bench/demo_plot.py" "$out"); then
	echo "demo: plot (per row: read latency over time, writes dispatched per second): $png"
else
	echo "demo: the plot could not be drawn (above)." >&2
	src=1
fi
if [ "$rc" -ne 0 ]; then
	echo "demo: the guest run failed (exit status $rc): see the console output above and $out/dmesg.txt." >&2
	exit "$rc"
fi
exit "$src"
