#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run aipu's VM tests inside the guest (scripts/vm.sh starts it):
#
#   tests/vm/run-guest.sh [TEST...]      TEST: t_sysfs, t_sysfs.sh or a path
#
# Without arguments every tests/vm/t_*.sh runs, in name order, each in its
# own bash process, with a time limit (AIPU_TEST_TIMEOUT seconds, default
# 600; AIPU_RMMOD_TIMEOUT seconds, default 60, bounds each rmmod of aipu,
# raised for a slow debug kernel). After each test whatever it left
# behind (aipu loaded, a mount under /tmp/aipu-mnt, a running blktrace) is
# cleaned up, and fails the
# test; so does a BUG, WARNING, Oops, lockdep or KASAN report, ... in the
# kernel log it produced, even if the test itself passed. Exit status 77
# from a test means skipped.
#
# Logs go to $AIPU_OUT: <test>.log, <test>.dmesg, results.txt; the last line
# printed (and summary.txt) is "N passed, N failed". Exit status 0 only if
# nothing failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export AIPU_OUT=${AIPU_OUT:-/tmp/aipu-out}
mkdir -p "$AIPU_OUT"
tmo=${AIPU_TEST_TIMEOUT:-600}
# For $DMESG_BAD.
# shellcheck source=tests/vm/lib.sh
AIPU_LIB_ONLY=1 TEST_NAME=run-guest . "$here/lib.sh"
set +E

[ "$(id -u)" -eq 0 ] || {
	echo "run-guest: run as root inside the test VM (scripts/vm.sh does)." >&2
	exit 2
}

tests=()
if [ $# -eq 0 ]; then
	for t in "$here"/t_*.sh; do
		[ -f "$t" ] && tests+=("$t")
	done
else
	for a in "$@"; do
		if [ -f "$a" ]; then tests+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")")
		elif [ -f "$here/$a" ]; then tests+=("$here/$a")
		elif [ -f "$here/$a.sh" ]; then tests+=("$here/$a.sh")
		else
			echo "run-guest: no test '$a' in $here (tests: $(cd "$here" && echo t_*.sh))" >&2
			exit 2
		fi
	done
fi
[ ${#tests[@]} -gt 0 ] || {
	echo "run-guest: no tests found in $here" >&2
	exit 2
}

echo "run-guest: kernel $(uname -r), ${#tests[@]} test(s), AIPU_KO=${AIPU_KO:-unset}, AIPU_DISK=${AIPU_DISK:-none}"
dmesg >"$AIPU_OUT/boot.dmesg" 2>/dev/null || true
# See lib.sh: keeps QEMU TCG's text-patching bug out of every test's result.
if tracepoints_pin; then
	echo "run-guest: aipu's trace events and kprobe site held (scripts/hold-hooks.sh)"
else
	echo "run-guest: note: could not hold the trace events on; insmod/rmmod patch kernel text" >&2
fi
if grep -E "$DMESG_BAD" "$AIPU_OUT/boot.dmesg" >/dev/null; then
	echo "run-guest: note: the boot log already has suspicious lines (not counted):"
	grep -E "$DMESG_BAD" "$AIPU_OUT/boot.dmesg" | head -n 5 | sed 's/^/  /' || true
fi

# Undo what a test that was killed or careless left behind; print what
# there was (the test fails for it: it could change the next test's result).
cleanup_after() {
	local pid m
	if [ -f /tmp/aipu-blktrace.pid ]; then
		pid=$(cat /tmp/aipu-blktrace.pid)
		rm -f /tmp/aipu-blktrace.pid
		if kill -INT "$pid" 2>/dev/null; then
			sleep 1
			echo "a running blktrace (pid $pid)"
		fi
	fi
	while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		echo "a mount on $m"
	done < <(awk '$2 ~ /^\/tmp\/aipu-mnt/ { print $2 }' /proc/mounts | sort -r)
	if [ -d /sys/module/aipu ]; then
		timeout "$AIPU_RMMOD_TIMEOUT" rmmod aipu >/dev/null 2>&1 || echo "aipu loaded, and rmmod aipu failed"
		[ -d /sys/module/aipu ] || echo "aipu loaded"
	fi
	return 0
}

passed=0
failed=0
skipped=0
results=()
for t in "${tests[@]}"; do
	name=$(basename "${t%.sh}")
	echo "=== $name"
	dmesg -C 2>/dev/null || true
	start=$(date +%s)
	set +e
	TEST_NAME=$name timeout -k 10 "$tmo" bash "$t" 2>&1 | tee "$AIPU_OUT/$name.log"
	rc=${PIPESTATUS[0]}
	set -e
	left=$(cleanup_after)
	sleep 1 # let late kernel messages (e.g. from an unload) arrive
	dmesg >"$AIPU_OUT/$name.dmesg" 2>/dev/null || true
	secs=$(($(date +%s) - start))
	bad=$(grep -E "$DMESG_BAD" "$AIPU_OUT/$name.dmesg" || true)
	if [ -n "$bad" ]; then
		echo "FAIL: $name: the kernel log has:"
		echo "$bad" | head -n 20 | sed 's/^/  /' || true
		result=FAIL
	elif [ -n "$left" ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
		echo "FAIL: $name: left behind (now cleaned up):"
		while read -r l; do echo "  $l"; done <<<"$left"
		result=FAIL
	elif [ "$rc" -eq 0 ]; then
		result=PASS
	elif [ "$rc" -eq 77 ]; then
		result=SKIP
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "FAIL: $name: killed after ${tmo}s"
		result=FAIL
	else
		result=FAIL
	fi
	case $result in
	PASS) passed=$((passed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
	results+=("$result $name (${secs}s, exit $rc)")
	# As it goes, so that a boot killed by its time limit still says
	# what ran (scripts/vmtest.sh counts these then).
	echo "$result $name (${secs}s, exit $rc)" >>"$AIPU_OUT/progress.txt"
	echo "=== $result $name (${secs}s)"
done

echo
echo "=== results on $(uname -r)"
printf '%s\n' "${results[@]}" | tee "$AIPU_OUT/results.txt"
[ "$skipped" -gt 0 ] && echo "$skipped skipped"
echo "$passed passed, $failed failed" | tee "$AIPU_OUT/summary.txt"
[ "$failed" -eq 0 ]
