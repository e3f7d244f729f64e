#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make run`: the demo. Boots one kernel once under QEMU with the FIFO disk
# model (60 IOPS, scheduler none, no write throttling), runs the same steady
# write load with a read-latency probe under Linux's own writeback (aipu
# loaded with policy kernel), a 30-s flush-all (pu) and aipu, and prints
# the comparison table. About 5 minutes under TCG.
#
#   scripts/demo.sh [--kernel KVER] [--policies "kernel pu aipu"]
#                   [--duration SECONDS] [--rate PAGES_PER_S] [--out DIR]
#                   [--hw-queues N|auto]
#
# KVER may also come from the environment; the default is the newest 6.1
# kernel in /lib/modules. aipu.ko must already be built for it
# (`make allkernels`, which `make run` does first). Results: DIR (default
# build/demo/<kver>/): <policy>.json, env.txt, dmesg.txt, summary.json.
set -euo pipefail

die() {
	echo "demo: $*" >&2
	exit 2
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kver=${KVER:-}
policies="kernel pu aipu"
duration=75
rate=20
out=""
hw_queues=auto

need_arg() {
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		die "option $1 needs a value."
	fi
}

while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) need_arg "$@"; kver=$2; shift 2 ;;
	--policies) need_arg "$@"; policies=$2; shift 2 ;;
	--duration) need_arg "$@"; duration=$2; shift 2 ;;
	--rate) need_arg "$@"; rate=$2; shift 2 ;;
	--out) need_arg "$@"; out=$2; shift 2 ;;
	--hw-queues) need_arg "$@"; hw_queues=$2; shift 2 ;;
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
need_ko=0
for p in $policies; do
	case "$p" in
	none) ;;
	kernel | pu | aipu) need_ko=1 ;;
	*) die "unknown policy '$p' in --policies: use none, kernel, pu or aipu." ;;
	esac
done

if [ -z "$kver" ]; then
	kver=$(find /lib/modules -mindepth 1 -maxdepth 1 -name '6.1.*' -printf '%f\n' 2>/dev/null |
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
rm -f "$out"/{none,kernel,pu,aipu}.json "$out"/{env,dmesg}.txt "$out/guest.log" "$out/summary.json"

start=$(date +%s)
echo "demo: kernel $kver, policies: $policies, ${duration} s each at $rate pages/s; results in $out"
# Through a pipe: virtme-ng has QEMU open /proc/self/fd/1 and /proc/self/fd/2
# once per guest output port; on a regular file (make run >log) each opening
# truncates it and writes at its own offset, so lines overwrite each other.
set +e
"$root/scripts/vm.sh" --kernel "$kver" --disk fifo:60 --disk-size 512 --memory 2G --cpus 2 \
	--out "$out" -- "$root/scripts/demo-guest.sh" --policies "$policies" \
	--duration "$duration" --rate "$rate" --hw-queues "$hw_queues" 2>&1 | cat
rc=${PIPESTATUS[0]}
set -e
echo "demo: VM finished after $(($(date +%s) - start)) s (exit status $rc)"
echo

src=0
python3 "$root/bench/summarize.py" "$out" --timeline --json "$out/summary.json" || src=$?
if [ "$rc" -ne 0 ]; then
	echo "demo: the guest run failed (exit status $rc): see the console output above and $out/dmesg.txt." >&2
	exit "$rc"
fi
exit "$src"
