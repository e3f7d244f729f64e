#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's test of the benchmark suite:
#   1. the unit tests of bench/report.py (host; Debian's python3, which has
#      matplotlib, so the plots are drawn too);
#   2. scripts/bench.sh --smoke (one VM boot: fifo94, the random workload,
#      rows kernel and aipu, one short trial, then the report), and
#      tests/bench/check_smoke.py on what it left;
#   3. scripts/bench.sh --host (the benchmark on a real test machine), in a
#      VM against a virtio disk: its refusals, then its smoke run
#      (tests/bench/host.sh, a second boot);
#   4. the scale benchmark's quick run (bench/scale/run.sh --quick, on the
#      host's CPU, under a minute): it runs and writes its results.
# Ends with "N passed, N failed"; exit status 1 if anything failed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/build/bench-smoke
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

pass=0
fail=0
mkdir -p "$root/build"
if (cd "$root" && "$py" -m unittest bench/test_report.py) >"$root/build/bench-unit.log" 2>&1; then
	echo "PASS: bench/test_report.py ($(grep -E '^Ran ' "$root/build/bench-unit.log"))"
	pass=$((pass + 1))
else
	cat "$root/build/bench-unit.log"
	echo "FAIL: bench/test_report.py"
	fail=$((fail + 1))
fi

rc=0
"$root/scripts/bench.sh" --smoke --out "$out" || rc=$?
set +e
checks=$("$py" "$root/tests/bench/check_smoke.py" "$out" "$rc")
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

# count OUTPUT: add the "N passed, N failed" its last line gives.
count() {
	local last
	last=$(tail -n 1 <<<"$1")
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		pass=$((pass + BASH_REMATCH[1]))
		fail=$((fail + BASH_REMATCH[2]))
	else
		echo "FAIL: $2 ended without its counts: $last"
		fail=$((fail + 1))
	fi
}
"$root/tests/bench/host.sh" 2>&1 | tee "$root/build/bench-host.log" || true
count "$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$root/build/bench-host.log" | tail -n 1)" tests/bench/host.sh

# 4. The scale benchmark, quick (bench/scale: the log-based queue,
#    src/queue/queue.c, on the host's CPU, sizes up to 100,000): it must run
#    and leave its tables and plots. No speed is asserted.
scale=$root/build/bench-scale-smoke
rm -rf "$scale"
if "$root/bench/scale/run.sh" --quick --out "$scale" >"$root/build/bench-scale-smoke.log" 2>&1; then
	missing=""
	for f in summary.md tables.md pages.json files.json holds.json evict.json steady.json repeat.json memory.json plots/holds.png; do
		[ -s "$scale/$f" ] || missing="$missing $f"
	done
	if [ -z "$missing" ] && grep -q '^| 100,000 | files of 4 pages, scattered |' "$scale/tables.md"; then
		echo "PASS: bench/scale --quick: tables, JSON and plots in build/bench-scale-smoke/"
		pass=$((pass + 1))
	else
		echo "FAIL: bench/scale --quick left no${missing:- holds row for 100,000 pages} (see build/bench-scale-smoke.log)"
		fail=$((fail + 1))
	fi
else
	tail -n 20 "$root/build/bench-scale-smoke.log"
	echo "FAIL: bench/scale/run.sh --quick (see build/bench-scale-smoke.log)"
	fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
