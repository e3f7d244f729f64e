#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A cgroup throttled by io.max must not break the bound of another cgroup's
# pages on the same device.
#
# Cgroup writeback splits one device among the cgroups that dirty it; aipu
# keeps one queue and one flusher per device and issues each file with its
# inode's own writeback context, so the block layer charges the write to
# the cgroup that dirtied it (docs/design.md §1). Here cgroup "aipu_slow" may
# write WIOPS requests a second on the test disk (io.max), and dirties
# SLOW_PAGES random pages of its own file (about 30 s of writing at that
# rate); once they are due and issued, cgroup "aipu_fast" dirties
# FAST_PAGES pages of another file on the same ext4, and each must reach
# the disk within [t+3, t+4.5] s of its own dirtying t (max_age 3 s, period
# 1 s; pagetrace.py against an O_DIRECT marker, as t_age_bound), while the
# slow cgroup still has writes held by its throttle (its io.stat), so the
# check is made while the throttle is real. A flusher that waited on the
# slow cgroup's writes would reach the fast pages about 30 s late. On a
# kernel AIPU_TIME_SCALE times slower (the debug kernel) max_age is that
# many times 3 s and the window [max_age, max_age + 1.5 s], so that the
# set-up fits inside max_age; the window is no wider.
#
# io.max (blk-throttle) queues a throttled bio and returns: the issuer does
# not wait.
#
# AIPU_CG_THROTTLE=iocost (t_cgroup_iocost runs it) starves the slow cgroup
# with blk-iocost instead: a cost model of 200 random writes a second,
# io.weight 1 against 10,000, and the fast cgroup kept busy by an O_DIRECT
# fio (on a file laid out beforehand, and seen issuing before the slow
# cgroup dirties anything), so the slow cgroup's share is a few writes a
# minute. iocost makes the issuing task itself sleep until its cgroup's
# debt is paid: before aipu issued a cgroup's files from a worker of that
# cgroup's writeback context (src/wbq.c), its one flusher per device slept
# there and the fast cgroup's pages waited with it (none written 6 s after
# their dirtying; on Debian's 6.1 the guest also soft-locked).
#
# In this mode the slow cgroup also dirties EXTRA_FILES small files: more
# takes than its context may have out (16), so the flusher puts the
# rest back each pass (stat wb_full); once the throttle is off, aipu must
# write every page it put back (the device's pages_tracked drains to 0
# without a sync).
#
# Both modes check that the files went through their contexts' workers
# (stat wb_takes), so the test fails if cgroup writeback is not in play.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

# On a slower kernel (AIPU_TIME_SCALE, the debug kernel) the set-up must fit
# inside max_age: max_age grows with it, the window's width (a period and
# a half) does not.
MAX_AGE_MS=$((3000 * $(time_scale)))
LO=$(awk -v m="$MAX_AGE_MS" 'BEGIN { printf "%.1f", m / 1000 }')
HI=$(awk -v m="$MAX_AGE_MS" 'BEGIN { printf "%.1f", m / 1000 + 1.5 }')
WIOPS=10
SLOW_PAGES=300
FAST_PAGES=100
EXTRA_FILES=20
EXTRA_PAGES=4
CG=/sys/fs/cgroup
tol=$(jiffy_s)

dev=$(disk_get)
disk_prepare "$dev"
majmin=$(disk_majmin "$dev")

if ! mountpoint -q "$CG"; then
	mount -t cgroup2 none "$CG" || die "cannot mount cgroup2 on $CG"
	on_exit "umount $CG"
fi
# The controllers enabled here are disabled again at the end, for the
# tests after this one in the same boot.
for c in io memory; do
	grep -qw "$c" "$CG/cgroup.controllers" ||
		die "cgroup2 lacks the $c controller (cgroup writeback needs io and memory): $(cat "$CG/cgroup.controllers")"
	grep -qw "$c" "$CG/cgroup.subtree_control" && continue
	echo "+$c" >"$CG/cgroup.subtree_control" ||
		die "cannot enable the $c controller in $CG/cgroup.subtree_control"
	on_exit "echo -$c >$CG/cgroup.subtree_control"
done
for g in aipu_slow aipu_fast; do
	mkdir -p "$CG/$g"
	on_exit "rmdir $CG/$g"
done

# in_cgroup GROUP CMD...: run CMD with its page cache charged to GROUP, so
# that the inode it first dirties belongs to GROUP's writeback context.
in_cgroup() {
	local g=$1
	shift
	(echo "$BASHPID" >"$CG/$g/cgroup.procs" && exec "$@")
}
# wios GROUP: the write requests GROUP has sent to the disk so far.
wios() {
	awk -v d="$majmin" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wios=/) { sub(/wios=/, "", $i); print $i; exit } }' \
		"$CG/$1/io.stat"
}

# busy_issuing: wait (30 s at most) until the fast cgroup's fio sends 20
# writes in a second: iocost starves the slow cgroup only while the fast
# one is busy.
busy_issuing() {
	local i a b
	for ((i = 0; i < 30; i++)); do
		a=$(wios aipu_fast)
		sleep 1
		b=$(wios aipu_fast)
		[ "$((b - a))" -ge 20 ] && return 0
	done
	die "the fast cgroup's fio did not get busy in 30 s ($((b - a)) writes in the last second)"
}

THROTTLE=${AIPU_CG_THROTTLE:-iomax}
# throttle_on: hold the slow cgroup back (io.max, or iocost's weights
# against a busy fast cgroup).
throttle_on() {
	case "$THROTTLE" in
	iomax)
		echo "$majmin wiops=$WIOPS" >"$CG/aipu_slow/io.max" || die "cannot set io.max of aipu_slow"
		on_exit "echo '$majmin wiops=max' >$CG/aipu_slow/io.max"
		log "io.max of aipu_slow: $(cat "$CG/aipu_slow/io.max")"
		;;
	iocost)
		[ -w "$CG/io.cost.qos" ] || die "no $CG/io.cost.qos: this kernel has no CONFIG_BLK_CGROUP_IOCOST"
		echo "$majmin ctrl=user model=linear rbps=1000000000 rseqiops=100000 rrandiops=100000 wbps=1000000000 wseqiops=200 wrandiops=200" \
			>"$CG/io.cost.model" || die "cannot set io.cost.model"
		echo "$majmin enable=1 ctrl=user rpct=0 rlat=0 wpct=0 wlat=0 min=100.00 max=100.00" \
			>"$CG/io.cost.qos" || die "cannot set io.cost.qos"
		on_exit "echo '$majmin enable=0' >$CG/io.cost.qos"
		echo "default 1" >"$CG/aipu_slow/io.weight"
		echo "default 10000" >"$CG/aipu_fast/io.weight"
		# The trace starts before the busy fio and stops after it: turning
		# the block tracepoints on or off patches blk_mq_submit_bio()'s
		# text, and under QEMU's TCG a vCPU running through it then may die
		# of "Oops: int3" (scripts/hold-hooks.sh); fio is in it all along.
		blktrace_start "$dev" fast
		(echo "$BASHPID" >"$CG/aipu_fast/cgroup.procs" &&
			exec fio --name=busy --filename="$AIPU_MNT/busy" --size=32M --rw=randwrite \
				--bs=4k --direct=1 --ioengine=libaio --iodepth=16 --time_based \
				--runtime=$((120 * $(time_scale))) --output=/dev/null) &
		BUSY=$!
		on_exit "kill $BUSY 2>/dev/null; wait $BUSY 2>/dev/null; true"
		busy_issuing
		log "iocost: $(grep "^$majmin " "$CG/io.cost.qos"); busy fio: $(grep "^$majmin " "$CG/aipu_fast/io.stat")"
		;;
	*) die "AIPU_CG_THROTTLE must be iomax or iocost, not '$THROTTLE'" ;;
	esac
}
# busy_stop: the busy fio, if any, stopped and waited for.
busy_stop() {
	[ -n "${BUSY:-}" ] || return 0
	kill "$BUSY" 2>/dev/null || true
	wait "$BUSY" 2>/dev/null || true
}
# throttle_off: let what the throttle holds go, before the umount.
throttle_off() {
	case "$THROTTLE" in
	iomax) echo "$majmin wiops=max" >"$CG/aipu_slow/io.max" ;;
	iocost)
		# The fast cgroup idle, the slow one has the device again.
		busy_stop
		sleep 2
		echo "$majmin enable=0" >"$CG/io.cost.qos"
		;;
	esac
}

fs_make ext4 "$dev"
mk=$AIPU_MNT/marker
msec=$(marker_sector "$mk" 2) || die "cannot find the marker file's sectors"
# Each file written whole and synced from its own cgroup, before the
# throttle: its blocks are fixed (filefrag maps every page), its pages are
# cached and charged to that cgroup, and so is the inode's writeback.
in_cgroup aipu_slow dd if=/dev/zero of="$AIPU_MNT/slow" bs=4096 count=$((SLOW_PAGES * 2)) \
	conv=fsync status=none || die "cannot write the slow cgroup's file"
in_cgroup aipu_fast dd if=/dev/zero of="$AIPU_MNT/fast" bs=4096 count=$((FAST_PAGES * 2)) \
	conv=fsync status=none || die "cannot write the fast cgroup's file"
if [ "$THROTTLE" = iocost ]; then
	# The fast cgroup's busy file, laid out now: fio then issues at once.
	in_cgroup aipu_fast dd if=/dev/zero of="$AIPU_MNT/busy" bs=1M count=32 \
		conv=fsync status=none || die "cannot write the busy file"
	for ((i = 0; i < EXTRA_FILES; i++)); do
		in_cgroup aipu_slow dd if=/dev/zero of="$AIPU_MNT/extra$i" bs=4096 \
			count=$((EXTRA_PAGES * 2)) conv=fsync status=none ||
			die "cannot write the slow cgroup's extra file $i"
	done
fi
sync
throttle_on
log "marker at sector $msec"

aipu_load policy=aipu max_age_ms=$MAX_AGE_MS period_ms=1000 handover_ms=0
takes0=$(aipu_stat wb_takes)

w0=$(wios aipu_slow)
out=$(in_cgroup aipu_slow python3 "$TESTS_DIR/dirty.py" "$AIPU_MNT/slow" --first-page 0 \
	--count "$SLOW_PAGES" --stride 2 --max-ms $((2000 * $(time_scale)))) ||
	die "dirty.py in aipu_slow failed: $out"
t_slow=$(now_us)
log "slow: $out"
if [ "$THROTTLE" = iocost ]; then
	# One process for all of them: a Python start-up each takes seconds.
	extras=()
	for ((i = 0; i < EXTRA_FILES; i++)); do extras+=("$AIPU_MNT/extra$i"); done
	in_cgroup aipu_slow python3 -c '
import os, sys
n = int(sys.argv[1])
for path in sys.argv[2:]:
    fd = os.open(path, os.O_WRONLY)
    for i in range(n):
        os.pwrite(fd, b"x" * 4096, i * 8192)
    os.close(fd)
' "$EXTRA_PAGES" "${extras[@]}" || die "dirtying the extra files in aipu_slow failed"
fi
# Due at max_age; by HI aipu has issued them and the throttle holds them.
hi_us=$(((MAX_AGE_MS + 1500) * 1000))
left_us=$((t_slow + hi_us - $(now_us)))
[ "$left_us" -gt 0 ] ||
	die "dirtying the extra files outlasted the $HI-s window: $((hi_us - left_us)) us (a slower kernel: set AIPU_TIME_SCALE)"
sleep "$((left_us / 1000000)).$(printf '%06d' $((left_us % 1000000)))"
w1=$(wios aipu_slow)
log "aipu_slow $HI s after its dirtying: $((w1 - w0)) writes done; $(grep "^$majmin " "$AIPU_SYSFS/devices")"
if [ "$THROTTLE" = iomax ]; then
	assert_gt "$((w1 - w0))" 0 "the slow cgroup's pages are being written when the fast cgroup's are dirtied"
else
	# iocost may not let even one of them through for a while: what shows
	# that the slow cgroup's writer is asleep is its take handed over.
	assert_gt "$(($(aipu_stat wb_takes) - takes0))" 0 \
		"the slow cgroup's file was handed to its context's worker when the fast cgroup's are dirtied"
fi

trace=$TEST_TMP/fast.txt
[ "$THROTTLE" = iocost ] || blktrace_start "$dev" fast
out=$(in_cgroup aipu_fast python3 "$TESTS_DIR/pagetrace.py" dirty "$AIPU_MNT/fast" \
	--first-page 0 --count "$FAST_PAGES" --stride 2 \
	--marker "$mk:0" --end-marker "$mk:4096" --log "$TEST_TMP/fast.log") ||
	die "pagetrace dirty in aipu_fast failed: $out"
log "fast: $out"
sleep $((MAX_AGE_MS / 1000 + 3))
# The throttle's evidence, read now: the slow cgroup has not yet sent all.
w2=$(wios aipu_slow)
# And aipu's per-device count, before the trace's analysis: a device that
# has tracked nothing for 30 periods is reaped, its line gone (a slow host
# took longer than that to analyse the trace).
late=$(aipu_dev_field "$majmin" pages_late)
busy_stop
blktrace_stop "$trace"
aipu_dump

frag=$TEST_TMP/fast.filefrag
filefrag -v "$AIPU_MNT/fast" >"$frag" || die "filefrag of the fast file failed"
rc=0
why=$(pagetrace window --trace "$trace" --log "$TEST_TMP/fast.log" --marker-sector "$msec" \
	--end-marker-sector $((msec + 8)) --lo "$LO" --hi "$HI" --tolerance "$tol" \
	--filefrag "$frag") || rc=$?
if [ "$rc" -eq 0 ]; then
	pass "fast cgroup, $FAST_PAGES pages, while the slow cgroup is throttled: $why"
else
	fail "fast cgroup, $FAST_PAGES pages, while the slow cgroup is throttled: $why"
fi
slow_total=$SLOW_PAGES
[ "$THROTTLE" = iomax ] || slow_total=$((SLOW_PAGES + EXTRA_FILES * EXTRA_PAGES))
assert_lt "$((w2 - w0))" "$slow_total" \
	"the slow cgroup's throttle still held writes after the fast window ($((w2 - w0)) of $slow_total sent)"
if [ "$THROTTLE" = iomax ]; then
	# blk-throttle holds the slow cgroup's writes after aipu issued them.
	assert_eq 0 "$late" "no page of the device was late by aipu's count"
else
	# iocost holds the slow cgroup's worker: a take of its queued behind
	# the first starts late, and pages_late counts at the start.
	assert_le "$late" "$slow_total" \
		"only the starved cgroup's pages can be late by aipu's count"
fi
assert_ge "$(($(aipu_stat wb_takes) - takes0))" 2 \
	"both cgroups' files were written by their writeback contexts' workers (stat wb_takes)"

throttle_off
if [ "$THROTTLE" = iocost ]; then
	assert_gt "$(aipu_stat wb_full)" 0 \
		"the slow cgroup's takes beyond the 16 its context may have out were put back (stat wb_full)"
	# What was put back is aipu's to write, throttle off, without a sync.
	# No line: the device was reaped, which it is only when it has
	# tracked nothing for 30 periods.
	drained() {
		local t
		t=$(aipu_dev_field "$majmin" pages_tracked)
		[ "${t:-0}" = 0 ]
	}
	drain_s=$((60 * $(time_scale)))
	if wait_until "$drain_s" drained; then
		pass "aipu wrote every page of the device, those put back included, within $drain_s s of the throttle's end"
	else
		fail "aipu still tracks $(aipu_dev_field "$majmin" pages_tracked) pages of the device $drain_s s after the throttle's end"
	fi
fi
sync
aipu_unload
