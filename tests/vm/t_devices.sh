#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# More devices than /sys/kernel/aipu/devices can list in its one page:
# the file says how many it left out, and /sys/kernel/debug/aipu/devices
# lists them all.
#
# NLOOP loop devices over files in the test's tmpfs, a page of each
# dirtied through the page cache and kept dirty, then:
#   1. devices fits in a page and ends with "+N more devices: ..." where N
#      is what stat's devices counts beyond the lines it shows;
#   2. the debugfs file has one line per device stat counts, the same
#      form, and names each loop device once;
#   3. both files' lines agree where both have them (the same names in
#      the same order).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NLOOP=40
debugfs_mount
command -v losetup >/dev/null || die "losetup not found (util-linux)"
modprobe loop 2>/dev/null || true
aipu_load policy=aipu max_age_ms=60000 period_ms=1000 handover_ms=0

loops=()
cleanup_loops() {
	local l
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
}
on_exit cleanup_loops
for ((i = 0; i < NLOOP; i++)); do
	f=$TEST_TMP/loop$i.img
	truncate -s 1M "$f"
	l=$(losetup -f --show "$f") || die "losetup of $f failed"
	loops+=("$l")
done
# A page of each dirtied and kept so (max_age 60 s; the devices held
# open: a block device's last close writes its dirty pages), so that no
# device's queue is reaped while the test reads.
coproc HOLD {
	python3 -c 'import os, sys
fds = [os.open(p, os.O_WRONLY) for p in sys.argv[1:]]
for fd in fds:
    os.pwrite(fd, b"\0" * 4096, 0)
print("dirty", flush=True)
sys.stdin.readline()' "${loops[@]}"
}
{ read -r -t 60 line <&"${HOLD[0]}" && [ "$line" = dirty ]; } || die "the holder did not dirty the loop devices"
sysfs=$(cat "$AIPU_SYSFS/devices")
dbg=$(cat /sys/kernel/debug/aipu/devices) || die "no /sys/kernel/debug/aipu/devices"
ndev=$(aipu_stat devices)
log "stat: devices $ndev; sysfs devices: $(printf '%s' "$sysfs" | wc -c) bytes, $(printf '%s\n' "$sysfs" | wc -l) lines"
assert_ge "$ndev" "$NLOOP" "stat counts a queue for each of the $NLOOP loop devices"

# 1. One page, the rest counted.
assert_le "$(printf '%s\n' "$sysfs" | wc -c)" 4096 "1. devices fits in one page"
shown=$(printf '%s\n' "$sysfs" | grep -c ' pages_tracked ' || true)
last=$(printf '%s\n' "$sysfs" | tail -n 1)
assert_eq "+$((ndev - shown)) more devices: /sys/kernel/debug/aipu/devices lists all" "$last" \
	"1. devices shows $shown lines, then how many more"

# 2. Every device in debugfs, once.
assert_eq "$ndev" "$(printf '%s\n' "$dbg" | grep -c ' pages_tracked ')" "2. the debugfs file has a line per device"
form='^[^ ]+ pages_tracked [0-9]+ mappings_tracked [0-9]+ oldest_age_ms [0-9]+ pages_written [0-9]+ pages_late [0-9]+ flusher_runs [0-9]+ flusher_pid [0-9]+$'
assert_eq 0 "$(printf '%s\n' "$dbg" | grep -cvE "$form" || true)" "2. every debugfs line has devices' form"
missing=0
for l in "${loops[@]}"; do
	n=$(printf '%s\n' "$dbg" | awk -v d="$(cat "/sys/class/block/$(basename "$l")/dev")" '$1 == d' | wc -l)
	[ "$n" -eq 1 ] || missing=$((missing + 1))
done
assert_eq 0 "$missing" "2. each loop device named once in the debugfs file"

# 3. The same devices in the same order where both list them.
assert_eq "$(printf '%s\n' "$sysfs" | grep ' pages_tracked ' | awk '{ print $1 }')" \
	"$(printf '%s\n' "$dbg" | head -n "$shown" | awk '{ print $1 }')" \
	"3. sysfs's lines are the debugfs file's first $shown, by name"
echo close >&"${HOLD[1]}"
wait "$HOLD_PID" 2>/dev/null || true
aipu_unload
if [ ! -e /sys/kernel/debug/aipu ]; then pass "rmmod removed /sys/kernel/debug/aipu"; else
	fail "/sys/kernel/debug/aipu left after rmmod"
fi
