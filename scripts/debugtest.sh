#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make debugtest`: aipu's VM tests on the debug kernel (KASAN, lockdep,
# atomic-sleep checks, kmemleak, failslab), with kmemleak scans around them.
#
#   scripts/debugtest.sh [--stress-seconds N] [--failslab PERCENT]
#                        [--free-later] [--out DIR] [--timeout SECONDS]
#                        [TEST...]
#
# TEST: t_sysfs, t_stress, ... (default: every tests/vm/t_*.sh). The kernel
# comes from scripts/debug-kernel.sh (built the first time, 16-40 min, then
# cached); it boots under scripts/vm.sh --kernel-tree with a null_blk disk
# and runs tests/vm/debug-guest.sh, which scans for leaks before and after
# the tests (every suspected leak after them fails the run).
#
#   --stress-seconds N  t_stress's churn (AIPU_STRESS_SECONDS; default 120)
#   --failslab PERCENT  fail that share of the allocations from aipu's slab
#                       caches during t_stress (AIPU_STRESS_FAILSLAB; the
#                       guest boots with slub_debug=A on those caches)
#   --free-later        build aipu.ko with AIPU_FREE_LATER=1: objects freed
#                       under a lock are parked for the drain as on Debian's
#                       kernels (under KASAN they go to the slab at once,
#                       src/mem.c), so lockdep, kmemleak and the slab's
#                       checks at rmmod see the drains
#   --out DIR           the guest's logs (default build/debugtest)
#   --timeout SECONDS   the whole boot (default 2 h + the churn); each test
#                       gets the same limit, the debug kernel being slow
#
# The last line is debug-guest.sh's "kmemleak: N suspected leaks"; the exit
# status is 0 only if every test passed and N is 0. Under TCG the debug
# kernel runs about 3-5 times slower than Debian's (docs/reliability.md).
set -euo pipefail

prog=debugtest
die_rc=2
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

stress=120 failslab=0 free_later=0 out=build/debugtest tmo=""
while [ $# -gt 0 ]; do
	case "$1" in
	--stress-seconds | --failslab | --out | --timeout)
		if [ $# -lt 2 ] || [ -z "$2" ]; then die "option $1 needs a value."; fi
		case "$1" in
		--stress-seconds) stress=$2 ;;
		--failslab) failslab=$2 ;;
		--out) out=$2 ;;
		--timeout) tmo=$2 ;;
		esac
		shift 2
		;;
	--free-later)
		free_later=1
		shift
		;;
	-h | --help)
		sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	-*) die "unknown option '$1': see scripts/debugtest.sh --help." ;;
	*) break ;;
	esac
done
[[ $stress =~ ^[0-9]+$ && $stress -ge 30 ]] ||
	die "--stress-seconds must be a whole number of seconds, at least 30, not '$stress'."
[[ $failslab =~ ^[0-9]+$ && $failslab -le 100 ]] ||
	die "--failslab must be a whole percentage from 0 to 100, not '$failslab'."
[ -n "$tmo" ] || tmo=$((7200 + stress))
[[ $tmo =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, not '$tmo'."
for t in "$@"; do
	[ -f "tests/vm/${t%.sh}.sh" ] || die "no test '$t' in tests/vm (names like t_sysfs or t_stress)."
done

# Its output is shown; its last line is the tree.
klog=$(mktemp)
trap 'rm -f "$klog"' EXIT
# Read by Kbuild in the module's build (make passes the environment on).
if [ "$free_later" -eq 1 ]; then export AIPU_FREE_LATER=1; else unset AIPU_FREE_LATER; fi
scripts/debug-kernel.sh | tee "$klog"
tree=$(tail -n 1 "$klog")
[ -d "$tree" ] || die "scripts/debug-kernel.sh did not print a kernel tree (got '$tree')."
# no5lvl: with 5-level paging (QEMU's -cpu max has LA57), an interrupt
# during identify_boot_cpu(), which clears and reloads the CPU's feature
# bits, made KASAN take a per-CPU address for a wild one (2026-11-25: "BUG:
# KASAN: wild-memory-access in rcu_is_watching" at 5.6 s, before aipu was
# loaded), and the first report turns lockdep off for the whole boot.
vm_opts=(--kernel-tree "$tree" --disk nullblk --out "$out" --timeout "$tmo" --verbose --append no5lvl)
[ "$failslab" -eq 0 ] || vm_opts+=(--append "slub_debug=A,aipu_seg64,aipu_seg512,aipu_seg4096,aipu_live_chunk,aipu_moved,aipu_retry,aipu_tracker")
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	for t in tests/vm/t_*.sh; do tests+=("$(basename "$t" .sh)"); done
fi
rm -rf "$out"
mkdir -p "$out"
echo "$prog: $(basename "$tree"), tests: ${tests[*]}, churn ${stress}s, failslab ${failslab}%, free later $free_later, out $out"
# rmmod: 60 s is the stock kernels' limit; a debug guest sharing the host
# was seen to take 3 minutes with eight writers running (docs/reliability.md).
# AIPU_TIME_SCALE: this kernel runs 3-5 times slower under TCG; tests whose
# set-up must fit inside a max_age lengthen it (tests/vm/lib.sh time_scale).
AIPU_STRESS_SECONDS=$stress AIPU_STRESS_FAILSLAB=$failslab AIPU_TEST_TIMEOUT=$tmo AIPU_RMMOD_TIMEOUT=600 \
	AIPU_TIME_SCALE=4 \
	scripts/vm.sh "${vm_opts[@]}" -- tests/vm/debug-guest.sh "${tests[@]}" 2>&1 | tee "$out/console.log"
exit "${PIPESTATUS[0]}"
