#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make crashtest`: the crash bound, measured. Each trial boots a kernel
# under QEMU on a fresh FIFO disk image (100 IOPS), lets a writer overwrite
# 4 KiB records of a preallocated ext4 file at 20 a second without fsync
# under one policy, and hard-resets the guest (sysrq b) at a random moment
# 6-14 s in. The host then reads the records straight from the image (the
# file's extents were recorded before the writes) and checks that every
# record written more than BOUND before the reset is on the disk, BOUND
# being the policy's nominal bound plus one second for the I/O:
#
#   aipu    max_age_ms + period_ms + 1 s
#   pu      pu_interval_ms + period_ms + 1 s
#   kernel  (no module) dirty_expire + dirty_writeback + 1 s, set to the
#           same numbers: reported, not judged (Linux promises no bound)
#   off     (no module, Linux's periodic writeback off) the control: nothing
#           is written before the reset, so the check must find violations;
#           a trial without any fails (the test could not tell)
#
#   scripts/crashtest.sh [--kernels "KVER ..."] [--policies "aipu pu kernel"]
#                        [--trials N] [--max-age-ms MS] [--period-ms MS]
#                        [--out DIR] [--seed N]
#
# Defaults: every installed kernel, aipu pu kernel off, 10 trials each,
# max_age 3000 ms, period 1000 ms (a 5-s bound), out build/crash/. A trial
# takes about 45 s under TCG. Writes DIR/<kver>/<policy>-<n>/ (the guest's
# log, trial.txt, result.json) and DIR/summary.txt; prints a table, then
# "N passed, N failed": a trial of aipu or pu passes with no violation, a
# kernel trial if it ran, an off trial with violations. Exit status 1 on
# any failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
die() {
	echo "crashtest: $*" >&2
	exit 2
}

kernels="" policies="aipu pu kernel off" trials=10 max_age=3000 period=1000
out=build/crash seed=${AIPU_CRASH_SEED:-$RANDOM}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "option $1 needs a value."
	case "$1" in
	--kernels) kernels=$2 ;;
	--policies) policies=$2 ;;
	--trials) trials=$2 ;;
	--max-age-ms) max_age=$2 ;;
	--period-ms) period=$2 ;;
	--out) out=$2 ;;
	--seed) seed=$2 ;;
	*) die "unknown argument '$1': see the header of scripts/crashtest.sh." ;;
	esac
	shift 2
done
for v in trials max_age period seed; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "--${v//_/-} must be a positive whole number, not '${!v}'."
done
for p in $policies; do
	case "$p" in aipu | pu | kernel | off) ;; *) die "unknown policy '$p' in --policies: use aipu, pu, kernel or off." ;; esac
done
if [ -z "$kernels" ]; then
	for d in /lib/modules/*/build; do
		[ -e "$d" ] && kernels+=" $(basename "$(dirname "$d")")"
	done
fi
[ -n "${kernels// /}" ] || die "no kernel with headers in /lib/modules: run scripts/install-deps.sh."
bound=$((max_age + period + 1000))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aipu-crash.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
summary=$out/summary.txt
echo "crash bound: records older than ${bound} ms at the reset must be on disk (seed $seed)" | tee "$summary"

pass=0 fail=0
for k in $kernels; do
	[ -f "build/$k/aipu.ko" ] || scripts/build-all.sh >/dev/null || die "cannot build aipu.ko for $k"
	for p in $policies; do
		ntr=0 nviol=0 worst=0 lost=0
		for i in $(seq "$trials"); do
			s=$((seed + i))
			tdir=$out/$k/$p-$i
			rm -rf "$tdir"
			mkdir -p "$tdir"
			truncate -s 0 "$tmp/disk.img"
			truncate -s 256M "$tmp/disk.img"
			# The guest never returns: it resets itself.
			scripts/vm.sh --kernel "$k" --disk fifo:100 --image "$tmp/disk.img" --out "$tdir" \
				--timeout 400 --verbose -- tests/crash/crash-guest.sh --policy "$p" --seed "$s" \
				--max-age-ms "$max_age" --period-ms "$period" >"$tdir/console.log" 2>&1 || true
			# After vm.sh's second boot (the emulator's int3 bug killed the
			# first, untainted), only the second counts.
			note="" from=1
			if grep -q "int3 bug before aipu was loaded" "$tdir/console.log"; then
				note=" (booted twice: QEMU TCG's int3 bug killed the first boot)"
				from=$(grep -n "int3 bug before aipu was loaded" "$tdir/console.log" | tail -n 1 | cut -d: -f1)
			fi
			if tail -n +"$from" "$tdir/console.log" | grep -qE 'Oops|BUG:|WARNING:|Call Trace|Kernel panic'; then
				echo "FAIL $k $p trial $i: the kernel complained (see $tdir/console.log)"
				fail=$((fail + 1))
				continue
			fi
			rc=0
			line=$(python3 tests/crash/records.py check "$tmp/disk.img" "$tdir/extents.json" \
				"$tdir/writes.log" --bound-ms "$bound" --json "$tdir/result.json" 2>&1) || rc=$?
			echo "# $k $p trial $i (seed $s): $line$note"
			if [ "$rc" -ge 2 ] || [ ! -f "$tdir/result.json" ]; then
				echo "FAIL $k $p trial $i: no result (see $tdir/console.log)"
				fail=$((fail + 1))
				continue
			fi
			ntr=$((ntr + 1))
			read -r v o < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["violations"], r["oldest_lost_ms"])' "$tdir/result.json")
			[ "$v" -gt 0 ] && nviol=$((nviol + 1))
			[ "$o" -gt "$worst" ] && worst=$o
			[ "$o" -gt 0 ] && lost=$((lost + 1))
			if [ "$p" = off ] && [ "$v" -gt 0 ]; then
				pass=$((pass + 1))
			elif [ "$p" = off ]; then
				echo "FAIL $k off trial $i: with no writeback at all the check found nothing lost"
				fail=$((fail + 1))
			elif [ "$p" = kernel ] || [ "$v" -eq 0 ]; then
				pass=$((pass + 1))
			else
				echo "FAIL $k $p trial $i: $v records older than ${bound} ms were lost"
				fail=$((fail + 1))
			fi
		done
		printf '%-24s %-7s trials %3d  with violations %3d  with any loss %3d  oldest lost %6d ms  (bound %d ms)\n' \
			"$k" "$p" "$ntr" "$nviol" "$lost" "$worst" "$bound" | tee -a "$summary"
	done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
