#!/usr/bin/env bash
# make check: everything that proves aipu works, in one run.
#   1. user-space unit tests of the tracking logic
#   2. aipu.ko built for every installed kernel and for Debian's 7.2 source
#      (scripts/kernel-tree.sh --prepare-only: fetched, configured and
#      modules_prepare'd, cached in /var/cache/aipu; modpost checks the
#      symbols against Debian's 7.2 exports), W=1 and sparse, no warnings
#   3. style: checkpatch, shellcheck, ruff
#   3b. DKMS: dkms add/build/install/autoinstall of dkms.conf for every
#      installed kernel, in private trees (scripts/dkms-check.sh); the VM
#      tests load what it built (t_dkms)
#   4. VM tests: one QEMU boot per kernel (6.1 and 6.12) running tests/vm/
#      (t_stress and t_lifetime in their short forms, below); every guest
#      boots with RCU's stall timeout at 60 s (scripts/vm.sh)
#   5. the crash bound, short: one hard reset per kernel under aipu and
#      the control with no writeback (which must lose data)
#   6. the benchmark suite, smoke version: report.py's unit tests and one
#      short cell per row (kernel, aipu) on the fifo94 model, 6.1; then
#      bench.sh --host (the benchmark on a real machine) in a VM against
#      a virtio disk: its refusals and its smoke run (tests/bench/host.sh)
# The last line is the total "N passed, N failed"; non-zero exit on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

pass=0
fail=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# Run a stage whose output ends with "N passed, N failed"; add its counts.
stage() { # name command...
	local name=$1 rc=0 last p f start=$SECONDS
	shift
	echo "=== $name"
	"$@" 2>&1 | tee "$log/$name.out" || rc=$?
	echo "=== $name: $((SECONDS - start)) s"
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/$name.out" | tail -n 1 || true)
	if [ -n "$last" ]; then
		p=${last%% passed*}
		f=${last#*passed, }
		f=${f%% failed*}
		pass=$((pass + p))
		fail=$((fail + f))
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "FAIL $name: exited $rc"
			fail=$((fail + 1))
		fi
	elif [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
	else
		echo "FAIL $name (exit $rc)"
		fail=$((fail + 1))
	fi
}

# Build for every kernel with W=1 and sparse; any warning fails that kernel
# (a modpost WARNING, and a checker the kernel's Makefile turned off, too).
build_clean() {
	local p=0 f=0 logf kver
	scripts/build-all.sh W=1 C=1 || true
	while read -r kver; do
		logf=build/$kver/build.log
		if [ -f "build/$kver/aipu.ko" ] &&
			! grep -qE 'warning:|error:|WARNING|not available or not up to date' "$logf"; then
			echo "PASS build/$kver (W=1, sparse)"
			p=$((p + 1))
		else
			echo "FAIL build/$kver: see $logf"
			f=$((f + 1))
		fi
	done <build/kernels.txt
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
}

stage unit make -s -C tests/unit
stage kernel-7.2 scripts/kernel-tree.sh --version 7.2 --prepare-only
stage build build_clean
stage lint scripts/lint.sh
stage dkms scripts/dkms-check.sh
# The two long tests in their short forms (the rest of the suite as in
# `make vmtest`): t_stress churns 60 s (`make stress`: 30 minutes), and
# t_lifetime runs ext4 and the raw device on 6.1, xfs and the raw device on
# 6.12 (make vmtest: ext4, ext2 and xfs on each): about 65 s a kernel less
# (measured 2026-11-29; CI's make check of 17d4731 took 82 of its 90
# minutes).
stage vm env AIPU_STRESS_SECONDS=60 AIPU_LIFETIME_FS="ext4@6.1. xfs@6.12." scripts/vmtest.sh
# aipu's bound and the control that must lose data (it proves the check can
# fail); pu's trials are in make crashtest.
stage crash scripts/crashtest.sh --trials 1 --policies "aipu off" --out build/crash-check
stage bench tests/bench/smoke.sh

echo "=== total: $((SECONDS / 60)) min $((SECONDS % 60)) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
