#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run VM tests on the debug kernel (scripts/debug-kernel.sh) and then look
# for memory leaks with kmemleak. Inside the guest, e.g.:
#
#   scripts/vm.sh --kernel-tree DIR --disk nullblk -- tests/vm/debug-guest.sh t_sysfs t_lifetime
#
# With no test named, only the kmemleak scan runs (a leak check of the boot).
#
#   0. lock debugging must still be on after the boot (/proc/lockdep_stats
#      debug_locks 1): a report while booting turns it off for the whole run;
#   1. a kmemleak scan, then `clear`: whatever the kernel leaked while
#      booting is reported in the output but not counted;
#   2. tests/vm/run-guest.sh TEST... (which fails a test on any KASAN,
#      lockdep, BUG or WARNING line in the kernel log);
#   3. two kmemleak scans 5 s apart (an object must be unreferenced in both
#      to be reported), then the report is read: every record is counted.
#
# Writes kmemleak-boot.txt, kmemleak.txt and debug.dmesg (kernel log after
# the tests) to $AIPU_OUT. The last line is "kmemleak: N suspected leaks";
# exit status 0 only if the tests passed and N is 0.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${AIPU_OUT:-/tmp/aipu-out}
mkdir -p "$out"
kml=/sys/kernel/debug/kmemleak

die() {
	echo "debug-guest: $*" >&2
	exit 2
}

[ "$(id -u)" -eq 0 ] || die "run as root inside the test VM (scripts/vm.sh does)."
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug ||
	die "cannot mount debugfs on /sys/kernel/debug."
[ -e "$kml" ] || die "no $kml: this kernel has no kmemleak (boot the tree of scripts/debug-kernel.sh)."

# scan: two scans 5 s apart, then the report into FILE; prints the count.
scan() {
	echo scan >"$kml" || die "echo scan > $kml failed (kmemleak disabled? see dmesg)."
	sleep 5
	echo scan >"$kml" || die "echo scan > $kml failed."
	cat "$kml" >"$1" || die "cannot read $kml."
	grep -c '^unreferenced object' "$1" || true
}

# Lock debugging must still be on: a KASAN report, a BUG, an oops or a
# lockdep splat turns it off for the rest of the boot (they taint with
# LOCKDEP_NOW_UNRELIABLE), and then no test of this run can show a locking
# bug; KASAN, without kasan_multi_shot, reports only its first bug anyway.
# A WARNING taints with LOCKDEP_STILL_OK and passes this check: it leaves
# both able to report, and the tests' own log checks see what comes later.
if grep -qE '^ *debug_locks: +1$' /proc/lockdep_stats 2>/dev/null; then
	echo "debug-guest: lock debugging on after the boot"
	boot_rc=0
else
	echo "debug-guest: FAIL: lock debugging is off in this boot (/proc/lockdep_stats debug_locks is not 1), so this run cannot show a locking bug; the kernel log before any test:"
	dmesg | grep -E -m 5 'BUG:|WARNING:|Oops|general protection|Disabling lock debugging' | sed 's/^/  /'
	boot_rc=1
fi

echo "debug-guest: kernel $(uname -r); kmemleak scan of the boot"
n=$(scan "$out/kmemleak-boot.txt") || exit 2
echo "debug-guest: boot: $n suspected leaks (not counted; $out/kmemleak-boot.txt)"
[ "$n" -eq 0 ] || head -n 20 "$out/kmemleak-boot.txt" | sed 's/^/  /'
echo clear >"$kml"

rc=$boot_rc
if [ $# -gt 0 ]; then
	"$here/run-guest.sh" "$@" || rc=$?
	echo "debug-guest: run-guest.sh exited $rc"
fi

echo "debug-guest: kmemleak scan after the tests"
n=$(scan "$out/kmemleak.txt") || exit 2
dmesg >"$out/debug.dmesg" 2>/dev/null || true
if [ "$n" -ne 0 ]; then
	head -n 60 "$out/kmemleak.txt" | sed 's/^/  /'
	rc=1
fi
echo "kmemleak: $n suspected leaks"
exit "$rc"
