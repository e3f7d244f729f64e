#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A disarmed eviction probe is noticed within a period and aipu falls back
# safely. The kprobe on clear_inode() is what ends a tracker with its inode;
# disarmed from outside (debugfs kprobes/enabled 0; kernel.ftrace_enabled 0
# where the probe sits on an ftrace site), evictions go unseen and trackers
# would outlive their inodes. src/canary.c evicts an inode of its own each
# period and checks that the probe saw it.
#
# ext4 on the test disk; for each way of disarming the probe: aipu loaded
# (policy aipu, max_age 60 s, period 0.5 s), 20 files of 10 pages written,
# the probe disarmed, then:
#   1. within 2 s (4 periods) policy reads kernel and evict_probe_lost 1;
#   2. no page or mapping is tracked, and one kernel-log line says so;
#   3. dirty_writeback_centisecs is back to its value before the load;
#   4. a store of policy aipu is refused (EINVAL) and changes nothing;
#   5. pages dirtied afterwards are not tracked;
#   6. the files deleted or rewritten and the file system unmounted while
#      the probe is off (evictions aipu does not see) leave the kernel log
#      clean (run-guest.sh checks it), and mounted again every file holds
#      what was written last;
#   7. with the probe armed again rmmod works.
# Then, the probe disarmed, insmod fails (ENODEV) with a line saying why.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

NFILES=20
KPROBES=/sys/kernel/debug/kprobes/enabled
LINE="eviction probe on clear_inode() was disarmed"
debugfs_mount
[ -w "$KPROBES" ] || skip "no $KPROBES (CONFIG_KPROBES without debugfs)"
kupdate0=$(cat /proc/sys/vm/dirty_writeback_centisecs)
ftrace0=$(cat /proc/sys/kernel/ftrace_enabled 2>/dev/null || echo 1)
rearm() {
	echo 1 >"$KPROBES"
	[ -w /proc/sys/kernel/ftrace_enabled ] && echo "$ftrace0" >/proc/sys/kernel/ftrace_enabled
	return 0
}
on_exit rearm

dev=$(disk_get)
disk_prepare "$dev"
fs_make ext4 "$dev"

write_files() { # ROUND
	local i
	for ((i = 0; i < NFILES; i++)); do
		{ printf 'round %s file %d\n' "$1" "$i"; head -c 40960 /dev/zero; } >"$AIPU_MNT/f$i"
	done
}
lines() { dmesg | grep -c "$LINE" || true; }
fell_back() { [ "$(aipu_policy)" = kernel ] && [ "$(aipu_stat evict_probe_lost)" = 1 ]; }

# disarm_check HOW: the steps above for one way of disarming (HOW: kprobes
# or ftrace).
disarm_check() {
	local how=$1 n0 t0 ms i bad=0
	aipu_load policy=aipu max_age_ms=60000 period_ms=500 handover_ms=0
	grep -q 'clear_inode+0x[0-9a-f]* .*FTRACE' /sys/kernel/debug/kprobes/list && on_ftrace=1
	assert_eq 0 "$(aipu_stat evict_probe_lost)" "$how: evict_probe_lost is 0 while the probe is armed"
	write_files 1
	assert_ge "$(aipu_stat pages_tracked)" $((NFILES * 10)) "$how: aipu tracks the files' pages"
	n0=$(lines)
	t0=$(now_us)
	case "$how" in
	kprobes) echo 0 >"$KPROBES" ;;
	ftrace) echo 0 >/proc/sys/kernel/ftrace_enabled ;;
	esac
	if wait_until 2 fell_back; then
		ms=$((($(now_us) - t0) / 1000))
		pass "1. $how: within 2 s ($ms ms) policy is kernel and evict_probe_lost 1"
	else
		fail "1. $how: 2 s after disarming: policy $(aipu_policy), evict_probe_lost $(aipu_stat evict_probe_lost)"
	fi
	assert_eq "0 0" "$(aipu_stat pages_tracked) $(aipu_stat mappings_tracked)" \
		"2. $how: no page or mapping is tracked (pages, mappings)"
	assert_eq $((n0 + 1)) "$(lines)" "2. $how: one kernel-log line says the probe was disarmed"
	assert_eq "$kupdate0" "$(cat /proc/sys/vm/dirty_writeback_centisecs)" \
		"3. $how: dirty_writeback_centisecs is back"
	assert_write EINVAL "$AIPU_SYSFS/policy" aipu "4. $how: a store of policy aipu is refused"
	assert_eq kernel "$(aipu_policy)" "4. $how: the policy is still kernel"
	write_files 2
	assert_eq 0 "$(aipu_stat pages_tracked)" "5. $how: pages dirtied afterwards are not tracked"
	for ((i = 0; i < NFILES; i += 2)); do
		rm "$AIPU_MNT/f$i"
	done
	fs_umount "$AIPU_MNT"
	rearm
	mount "$dev" "$AIPU_MNT" || die "mount $dev again failed"
	for ((i = 1; i < NFILES; i += 2)); do
		[ "$(head -n 1 "$AIPU_MNT/f$i")" = "round 2 file $i" ] || bad=$((bad + 1))
	done
	for ((i = 0; i < NFILES; i += 2)); do
		[ -e "$AIPU_MNT/f$i" ] && bad=$((bad + 1))
	done
	assert_eq 0 "$bad" "6. $how: mounted again, every file is as last written or deleted (files wrong)"
	assert_ok "7. $how: with the probe armed again, rmmod works" aipu_unload
}

on_ftrace=0
disarm_check kprobes
# kernel.ftrace_enabled silences a kprobe only on an ftrace site.
if [ "$on_ftrace" = 1 ]; then
	disarm_check ftrace
else
	log "the probe on clear_inode is not on an ftrace site here: kernel.ftrace_enabled does not silence it"
fi
fs_umount "$AIPU_MNT"

echo 0 >"$KPROBES"
out=$(insmod "$AIPU_KO" 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ]; then
	fail "insmod with the probe disarmed succeeded"
	rmmod aipu
else
	assert_match "No such device" "$out" "insmod with the probe disarmed fails with ENODEV"
fi
assert_ok "the kernel log says why" sh -c "dmesg | tail -n 5 | grep -q 'eviction probe on clear_inode() does not fire'"
rearm
