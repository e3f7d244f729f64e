#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's test of `scripts/bench.sh --host` (the benchmark on a real
# test machine): one VM boot of the newest 6.1 kernel with a virtio disk
# (a strict FIFO, 5 ms a request: scripts/vm.sh --disk serial:5) runs
# tests/bench/host-guest.sh, which checks that bench.sh --host refuses
# every disk it must and then runs its smoke matrix on the disk; then
# tests/bench/check_smoke.py --model host checks the results it left.
# Ends with "N passed, N failed"; exit status 1 if anything failed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/build/bench-host
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

kver=$(find /lib/modules -mindepth 1 -maxdepth 1 -name '6.1.*' ! -name '*-rt-*' -printf '%f\n' 2>/dev/null |
	while read -r k; do
		[ -f "/boot/vmlinuz-$k" ] && [ -f "$root/build/$k/aipu.ko" ] && echo "$k"
	done | sort -V | tail -n 1)
if [ -z "$kver" ]; then
	echo "FAIL: no 6.1 kernel with build/<kver>/aipu.ko: run 'make allkernels' first."
	echo "0 passed, 1 failed"
	exit 1
fi

rm -rf "$out"
mkdir -p "$out"
# The guest's PASS/FAIL lines and bench.sh's own are shown; the whole
# console is in console.log.
set +e
"$root/scripts/vm.sh" --kernel "$kver" --disk serial:5 --disk-size 1024 --memory 2G --cpus 2 \
	--timeout 1200 --out "$out" --verbose -- "$root/tests/bench/host-guest.sh" 2>&1 |
	tee "$out/console.log" | grep -E '^(PASS|FAIL|      )|^bench:|^vm.sh:'
rc=${PIPESTATUS[0]}
set -e
guest=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out/console.log" | tail -n 1 || true)
pass=0
fail=0
if [[ $guest =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	pass=${BASH_REMATCH[1]}
	fail=${BASH_REMATCH[2]}
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		echo "FAIL: the VM exited $rc (see $out/console.log)"
		fail=1
	fi
else
	echo "FAIL: the VM did not finish tests/bench/host-guest.sh (status $rc): see $out/console.log"
	fail=1
fi
set +e
checks=$("$py" "$root/tests/bench/check_smoke.py" "$out/results" --model host)
set -e
echo "$checks" | sed '$d'
last=$(tail -n 1 <<<"$checks")
if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	pass=$((pass + BASH_REMATCH[1]))
	fail=$((fail + BASH_REMATCH[2]))
else
	echo "FAIL: check_smoke.py ended without its counts: $last"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
