#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run aipu's VM tests (tests/vm/t_*.sh) on installed kernels, one boot per
# kernel, and add up the results.
#
#   scripts/vmtest.sh [KVER...]
#
# Default: every kernel in /lib/modules that has /boot/vmlinuz-<kver> and a
# built build/<kver>/aipu.ko (scripts/build-all.sh), except PREEMPT_RT ones
# (6.1.0-57-rt-amd64: name them). A kernel named
# explicitly runs even without aipu.ko (the aipu tests then skip); it may
# also be one scripts/kernel-tree.sh built (e.g. 7.2.13-aipu: make vmtest
# KVER=7.2.13-aipu after make kerneltree), booted from its tree.
#
# Environment:
#   AIPU_TESTS         tests to run (e.g. "t_sysfs t_age_bound"; default all)
#   AIPU_VM_TIMEOUT    seconds one boot may take (default 2700: make
#                      check's boots took up to 1,880 s on the slowest
#                      machine of this kind seen, against 1,300 s on others)
#   AIPU_TEST_TIMEOUT  seconds one test may take (default 600)
#
# Every boot reserves 64 MiB of the guest's 2 GiB as emulated persistent
# memory (memmap=64M!1536M: a legacy e820 region, /dev/pmem0 once nd_e820
# and nd_pmem are loaded) for t_dax.
#
# The host-side unit tests of blkevents.py and dirty.py run first and count
# as one test. Each kernel's console goes to build/vmtest/<kver>/console.log,
# with the tests' logs and traces beside it. The last line is the total over
# all kernels, "N passed, N failed"; a boot that crashed or timed out counts
# as one failed test, beside the results of the tests that finished before
# it ended (progress.txt). Exit status 0 only if nothing failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

prog=vmtest
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

# A kernel built by scripts/kernel-tree.sh (e.g. 7.2.13-aipu): its tree.
tree_of() { # KVER
	local t
	for t in "${AIPU_CACHE:-/var/cache/aipu}"/kernel-*/linux-source-*; do
		if [ "$(cat "$t/include/config/kernel.release" 2>/dev/null)" = "$1" ] &&
			[ -f "$t/arch/x86/boot/bzImage" ]; then
			echo "$t"
			return 0
		fi
	done
	return 1
}

kvers=()
if [ $# -gt 0 ]; then
	for k in "$@"; do
		case "$k" in -*) die "unknown option '$k': usage: scripts/vmtest.sh [KVER...]" ;; esac
		[ -f "/boot/vmlinuz-$k" ] || tree_of "$k" >/dev/null ||
			die "no /boot/vmlinuz-$k and no kernel tree built for it (scripts/kernel-tree.sh): installed kernels: $(cd /boot && echo vmlinuz-* | sed 's/vmlinuz-//g')"
		kvers+=("$k")
	done
else
	for d in /lib/modules/*/; do
		k=$(basename "$d")
		# PREEMPT_RT kernels only when named (make vmtest KVER=...):
		# make check builds for them but keeps to one boot per kernel line.
		case "$k" in *-rt-*) continue ;; esac
		[ -f "/boot/vmlinuz-$k" ] && [ -f "build/$k/aipu.ko" ] && kvers+=("$k")
	done
	[ ${#kvers[@]} -gt 0 ] ||
		die "no installed kernel has a built build/<kver>/aipu.ko: run scripts/build-all.sh first (or name a kernel to run the tests without the module)."
fi

read -r -a tests <<<"${AIPU_TESTS:-}"
total_pass=0
total_fail=0
lines=()

# The host-side self-test of the analysis tools first: no boot is worth
# running if the timing checks themselves are broken.
mkdir -p build/vmtest
echo "vmtest: ===== host: tests/vm/test_*.py"
if python3 -m unittest discover -s tests/vm -p 'test_*.py' >build/vmtest/host-unittest.log 2>&1; then
	total_pass=$((total_pass + 1))
	lines+=("host: 1 passed, 0 failed ($(grep -E '^Ran ' build/vmtest/host-unittest.log))")
else
	cat build/vmtest/host-unittest.log
	total_fail=$((total_fail + 1))
	lines+=("host: 0 passed, 1 failed (tests/vm/test_*.py, see build/vmtest/host-unittest.log)")
fi
for k in "${kvers[@]}"; do
	out=build/vmtest/$k
	rm -rf "$out"
	mkdir -p "$out"
	echo "vmtest: ===== $k"
	set +e
	if [ -f "/boot/vmlinuz-$k" ]; then
		kopt=(--kernel "$k")
	else
		kopt=(--kernel-tree "$(tree_of "$k")")
	fi
	AIPU_VM_TIMEOUT=${AIPU_VM_TIMEOUT:-2700} AIPU_TEST_TIMEOUT=${AIPU_TEST_TIMEOUT:-600} \
		scripts/vm.sh "${kopt[@]}" --disk nullblk --out "$out" --verbose \
		--append 'memmap=64M!1536M' -- \
		tests/vm/run-guest.sh "${tests[@]}" 2>&1 | tee "$out/console.log"
	rc=${PIPESTATUS[0]}
	set -e
	# run-guest.sh writes its counts to summary.txt as its last act; the
	# console may have kernel messages interleaved.
	summary=$(tail -n 1 "$out/summary.txt" 2>/dev/null || true)
	if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		p=${BASH_REMATCH[1]}
		f=${BASH_REMATCH[2]}
		if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then
			f=1 # the tests passed but the VM did not exit cleanly
			echo "vmtest: $k: all tests passed but vm.sh exited $rc: counted as one failure"
		fi
	else
		# The tests that finished before the boot ended, and the boot
		# itself as one failure.
		p=$(grep -c '^PASS ' "$out/progress.txt" 2>/dev/null || true)
		f=$(($(grep -c '^FAIL ' "$out/progress.txt" 2>/dev/null || true) + 1))
		echo "vmtest: $k: no result from the guest (vm.sh exited $rc): the boot failed, crashed or timed out after $((p + f - 1)) tests ($p passed); see $out/console.log"
		[ ! -f "$out/progress.txt" ] || cp "$out/progress.txt" "$out/results.txt"
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	lines+=("$k: $p passed, $f failed")
done

echo
echo "vmtest: ===== summary"
for l in "${lines[@]}"; do
	echo "vmtest: $l"
	if [ "${l%%:*}" != host ] && [ -f "build/vmtest/${l%%:*}/results.txt" ]; then
		sed 's/^/vmtest:   /' "build/vmtest/${l%%:*}/results.txt"
	fi
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
