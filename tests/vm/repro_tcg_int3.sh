#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Not a test of aipu, and not run by make check: shows, without aipu, the
# emulator bug that tests/vm/lib.sh's tracepoints_pin keeps out of the VM
# tests. A writer dirties pages on ext2 while the writeback_dirty_folio
# trace event is switched on and off (N times, default 600). Under QEMU's
# TCG (Debian 12's QEMU, 2 vCPUs) a 6.12 guest dies within a few hundred
# switches: "Oops: int3" at __folio_mark_dirty+0x4f (the tracepoint's
# jump label), "Fatal exception in interrupt". Run it with
#
#   N=600 scripts/vm.sh --kernel 6.12.117+deb12-amd64 --disk nullblk \
#       --verbose -- tests/vm/repro_tcg_int3.sh
#
# It passes if the guest survives.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dev=$(disk_get)
disk_prepare "$dev"
fs_make ext2 "$dev"
real=$AIPU_MNT/data sh=$TEST_TMP/shadow
mkdir -p "$real" "$sh"
python3 "$TESTS_DIR/lifeio.py" apply "$real" "$sh" create:w0:64 create:w1:64 create:w2:64 \
	>/dev/null
python3 "$TESTS_DIR/lifeio.py" writer "$real" "$sh" w0 w1 w2 >/dev/null 2>&1 &
WPID=$!
on_exit "kill $WPID 2>/dev/null || true"
mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing
echo 0 >/sys/kernel/tracing/tracing_on
E=/sys/kernel/tracing/events/writeback/writeback_dirty_folio/enable
n=${N:-600}
for i in $(seq "$n"); do
	echo 1 >"$E"
	sleep "0.0$((RANDOM % 10))"
	echo 0 >"$E"
	sleep "0.0$((RANDOM % 10))"
	[ $((i % 50)) -eq 0 ] && log "switched on and off $i times"
done
pass "the guest survived $n switches of the trace event"
