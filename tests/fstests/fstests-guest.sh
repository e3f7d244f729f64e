#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# In a test guest (scripts/fstests.sh boots it through scripts/vm.sh): run
# a list of fstests tests on one file system twice in this boot, first
# without aipu, then with aipu loaded (policy=aipu max_age_ms=1000
# period_ms=100 handover_ms=0), each half on freshly made file systems.
#
#   tests/fstests/fstests-guest.sh --fs ext4|xfs --fstests DIR --tests FILE
#                                  [--test-timeout S] [--halves "noaipu aipu"]
#                                  [--ko PATH]
#
# --ko: the aipu.ko to load (default $AIPU_KO, build/<kver>/aipu.ko).
# DIR is a built fstests tree (read-only is fine), FILE one test a line.
# The disks are two memory-backed null_blk devices made here through
# configfs, with discard on (mkfs then frees their memory): test 2 GiB,
# scratch 3 GiB (AIPU_FSTESTS_TEST_MB, AIPU_FSTESTS_SCRATCH_MB).
# One ./check runs the whole list in each half (check's own set-up, a
# scratch mkfs and a test fsck, takes a minute or two under TCG); a
# watchdog kills a test running longer than --test-timeout (default 900 s).
# The half's kernel log is split at check's "run fstests TEST" lines and
# each test's part checked with the VM tests' check (tests/vm/lib.sh,
# dmesg_check).
#
# Writes $AIPU_OUT/<half>/: results/ (fstests' RESULT_BASE), check.log,
# results.txt ("test result seconds klog" a line: result pass, fail, notrun,
# timeout; a test check never reached has no line; klog ok, or bad when the
# test's kernel log has a line DMESG_BAD matches), dmesg.txt (the half's
# whole kernel log), klog-bad.txt (the bad lines, by test; "end:" after the
# last test or at rmmod), timeouts.txt (timeouts-why.txt: the process killed,
# its children and their start times), aipu-stat.txt (with aipu),
# aipu-samples.txt and aipu-by-test.txt (aipu's writes and late writes
# while each test ran).
# Exit status 0 when both halves ran to the end, whatever the results:
# scripts/fstests.sh compares them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# For dmesg_check, DMESG_BAD and tracepoints_pin.
# shellcheck source=tests/vm/lib.sh
AIPU_LIB_ONLY=1 TEST_NAME=fstests . "$here/../vm/lib.sh"
set +E

prog=fstests-guest
die() {
	echo "$prog: $*" >&2
	exit 1
}

fs=""
tree=""
list=""
tmo=900
halves="noaipu aipu"
while [ $# -gt 0 ]; do
	case "$1" in
	--fs) fs=$2 && shift 2 ;;
	--fstests) tree=$2 && shift 2 ;;
	--tests) list=$2 && shift 2 ;;
	--test-timeout) tmo=$2 && shift 2 ;;
	--halves) halves=$2 && shift 2 ;;
	--ko) AIPU_KO=$2 && shift 2 ;;
	*) die "unknown argument '$1' (see the comment at the top of $0)." ;;
	esac
done
case "$fs" in
ext4 | xfs) ;;
*) die "--fs must be ext4 or xfs, not '$fs'." ;;
esac
[ -x "$tree/check" ] || die "--fstests $tree is not a built fstests tree (no check)."
[ -f "$list" ] || die "--tests $list: no such file."
[ "$(id -u)" -eq 0 ] || die "run as root inside the test VM (scripts/vm.sh does)."
: "${AIPU_OUT:?set by scripts/vm.sh}"
[[ " $halves " == *" aipu "* ]] && { [ -f "${AIPU_KO:-}" ] || die "no aipu.ko at '${AIPU_KO:-}': run scripts/build-all.sh."; }

# --- disks --------------------------------------------------------------
cfg=/sys/kernel/config/nullb
modprobe null_blk nr_devices=0 || die "modprobe null_blk failed."
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config ||
	die "cannot mount configfs on /sys/kernel/config."
# The disk takes the configfs name (6.1, 6.12) or nullb<index> (older
# kernels); with nr_devices=0 both are nullb0 and nullb1 here.
nullb_make() { # NAME MiB: prints the device
	local d=$cfg/$1
	mkdir "$d"
	echo "$2" >"$d/size"
	echo 1 >"$d/memory_backed"
	echo 1 >"$d/discard"
	echo 1 >"$d/power"
	echo "/dev/$1"
}
TEST_DEV=$(nullb_make nullb0 "${AIPU_FSTESTS_TEST_MB:-2048}")
SCRATCH_DEV=$(nullb_make nullb1 "${AIPU_FSTESTS_SCRATCH_MB:-3072}")
udevadm settle 2>/dev/null || true
for d in "$TEST_DEV" "$SCRATCH_DEV"; do
	for _ in $(seq 50); do [ -b "$d" ] && break; sleep 0.1; done
	[ -b "$d" ] || die "null_blk device $d did not appear."
done
# /mnt is read-only in the guest; /tmp is a writable overlay.
TEST_DIR=/tmp/fstests/test
SCRATCH_MNT=/tmp/fstests/scratch
mkdir -p "$TEST_DIR" "$SCRATCH_MNT"
export FSTYP=$fs TEST_DEV TEST_DIR SCRATCH_DEV SCRATCH_MNT
# fstests reads local.config from its own (read-only) directory unless told.
export HOST_OPTIONS=/tmp/fstests/local.config
: >"$HOST_OPTIONS"

# fstests' users and group (its README). useradd cannot write /etc/shadow
# in the guest (an overlay on the host's read-only 9p root), so they go
# straight into /etc/passwd and /etc/group, without a password.
add_id() { # FILE NAME LINE-AFTER-NAME-AND-ID
	local f=$1 name=$2 id=3000
	grep -q "^$name:" "$f" && return 0
	while cut -d: -f3 "$f" | grep -qx "$id"; do id=$((id + 1)); done
	echo "$name:x:$id:$3" >>"$f"
}
add_id /etc/group fsgqa ""
gid=$(getent group fsgqa | cut -d: -f3)
for u in fsgqa fsgqa2 123456-fsgqa; do
	add_id /etc/passwd "$u" "$gid::/home/$u:/bin/bash"
	mkdir -p "/home/$u"
	chown "$u:fsgqa" "/home/$u"
done
# The same hooks held for both halves (QEMU TCG's text-patching bug; see
# scripts/hold-hooks.sh), so the halves differ only by aipu.
tracepoints_pin || echo "$prog: note: could not hold the trace events on; insmod/rmmod patch kernel text" >&2

mkfs_test() {
	case "$fs" in
	ext4) mkfs.ext4 -q -F "$TEST_DEV" ;;
	xfs) mkfs.xfs -q -f "$TEST_DEV" ;;
	esac
}
# After a test killed by timeout (timeout kills its process group):
# whatever it left mounted or mapped.
tidy() {
	local m
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk '$2 ~ /^\/tmp\/fstests\// { print $2 }' /proc/mounts | sort -r)
	dmsetup remove_all -f >/dev/null 2>&1 || true
}
# aipu's counters every 2 s, "uptime pages_written pages_late", so that
# its late writes can be told per test afterwards (aipu-by-test.txt).
stat_sampler() { # FILE
	while sleep 2; do
		[ -r /sys/kernel/aipu/stat ] || continue
		echo "$(cut -d' ' -f1 /proc/uptime) $(awk '$1 == "pages_written" { w = $2 }
			$1 == "pages_late" { l = $2 } END { print w + 0, l + 0 }' /sys/kernel/aipu/stat)"
	done >>"$1"
}
# check has no time limit per test: kill a test script older than $tmo
# seconds, and everything under it: TERM (the test's own _cleanup runs),
# then KILL 20 s later.  check's _run_seq execs ./tests/D/N, but the
# kernel hands the interpreter the script's full path (ps shows
# "/bin/bash /…/tests/D/N"), so match the path's tail.
kill_tree() { # SIGNAL PID
	local c
	for c in $(ps -o pid= --ppid "$2"); do kill_tree "$1" "$c"; done
	kill "-$1" "$2" 2>/dev/null || true
}
# ps's etimes of a process started in the tick ps reads the uptime in can
# come out negative, printed as 4,123,168,608 (2026-11-27, procps 4.0.2 on
# 6.12): no process is older than the boot.
watchdog() { # HALFDIR
	local pid et t up
	while sleep 10; do
		up=$(cut -d. -f1 /proc/uptime)
		while read -r pid et _ t; do
			{ [ "$et" -gt "$tmo" ] && [ "$et" -le "$up" ]; } || continue
			t=/$t
			echo "${t##*/tests/}" >>"$1/timeouts.txt"
			# What was killed, and why: timeouts-why.txt.
			{
				echo "$(date '+%F %T') uptime $(cut -d' ' -f1 /proc/uptime): pid $pid etimes $et $t"
				ps -o pid=,ppid=,lstart=,etimes=,stat=,wchan:24=,args= --pid "$pid" --ppid "$pid" || true
			} >>"$1/timeouts-why.txt" 2>&1
			kill_tree TERM "$pid"
			sleep 20
			kill_tree KILL "$pid"
		done < <(ps -eo pid=,etimes=,args= |
			awk 'NF == 4 && $3 ~ /bash$/ && $4 ~ /(^|\/)tests\/[a-z0-9]+\/[0-9]+$/')
	done
}

echo "$prog: $(uname -r), $fs, test $TEST_DEV, scratch $SCRATCH_DEV, $(wc -l <"$list") tests, halves: $halves"
mapfile -t tests < <(awk 'NF { print $1 }' "$list")
for half in $halves; do
	hd=$AIPU_OUT/$half
	rm -rf "$hd"
	mkdir -p "$hd/results"
	export RESULT_BASE=$hd/results
	: >"$hd/timeouts.txt"
	tidy
	mkfs_test || die "mkfs.$fs $TEST_DEV failed."
	wipefs -a -q "$SCRATCH_DEV" || true
	dmesg -C
	# The whole half's kernel log: it outgrows the ring buffer.
	dmesg -w >"$hd/dmesg.txt" 2>&1 &
	dpid=$!
	if [ "$half" = aipu ]; then
		sync
		insmod "$AIPU_KO" policy=aipu max_age_ms=1000 period_ms=100 handover_ms=0 ||
			die "insmod $AIPU_KO failed."
		echo "$prog: aipu loaded: $(tr '\n' ' ' </sys/kernel/aipu/policy)max_age_ms=$(cat /sys/kernel/aipu/max_age_ms) period_ms=$(cat /sys/kernel/aipu/period_ms)"
	fi
	hstart=$(date +%s)
	echo "=== $half: ${#tests[@]} tests"
	watchdog "$hd" &
	wpid=$!
	spid=
	if [ "$half" = aipu ]; then
		stat_sampler "$hd/aipu-samples.txt" &
		spid=$!
	fi
	(cd "$tree" && ./check "${tests[@]}") </dev/null 2>&1 | tee "$hd/check.log" || true
	kill "$wpid" $spid 2>/dev/null || true
	wait "$wpid" $spid 2>/dev/null || true
	echo "fstests-guest: check ended ($half)" >/dev/kmsg
	aipu_left=1
	if [ "$half" = aipu ]; then
		if [ -d /sys/module/aipu ]; then
			cp /sys/kernel/aipu/stat "$hd/aipu-stat.txt"
			tidy
			timeout "$AIPU_RMMOD_TIMEOUT" rmmod aipu || echo "rmmod aipu failed" >"$hd/rmmod-failed.txt"
			echo "$prog: aipu wrote $(awk '$1 == "pages_written" { print $2 }' "$hd/aipu-stat.txt") pages, $(awk '$1 == "pages_dirtied" { print $2 }' "$hd/aipu-stat.txt") dirtied"
		else
			aipu_left=0
		fi
	fi
	tidy
	sleep 2
	echo "fstests-guest: end of $half" >/dev/kmsg
	sleep 1
	kill "$dpid" 2>/dev/null || true
	wait "$dpid" 2>/dev/null || true
	secs=$(($(date +%s) - hstart))
	echo "$secs" >"$hd/seconds.txt"

	# Each test's part of the kernel log (from check's "run fstests T at"
	# to the next one; "end": from check's end), its start and end on the
	# kernel's clock ("bounds": its seconds and its aipu samples come from
	# them), and the lines dmesg_check (tests/vm/lib.sh) finds bad.
	kd=/tmp/fstests/klog-$half
	rm -rf "$kd"
	mkdir -p "$kd"
	awk -v kd="$kd" '
		function ts(l) { sub(/^\[ */, "", l); sub(/\].*/, "", l); return l + 0 }
		/ run fstests [a-z0-9]+\/[0-9]+ at / {
			for (i = 1; i <= NF; i++) if ($i == "fstests") cur = $(i + 1)
			gsub("/", "-", cur)
			start[cur] = ts($0)
			if (prev != "") stop[prev] = ts($0)
			prev = cur
		}
		/fstests-guest: check ended/ { if (prev != "") stop[prev] = ts($0); prev = ""; cur = "end" }
		{ f = kd "/" (cur == "" ? "setup" : cur); print >> f; close(f) }
		END {
			for (t in start)
				print t, start[t], (t in stop ? stop[t] : start[t]) > kd "/bounds"
		}
	' "$hd/dmesg.txt"
	# aipu-by-test.txt: "test pages_written pages_late" while each test
	# ran, from the samples (the counters' last value before its start and
	# before its end; a test shorter than the 2-s sampling may read 0).
	if [ -s "$hd/aipu-samples.txt" ] && [ -s "$kd/bounds" ]; then
		awk 'function at(t, c,   i, v) {
				v = 0
				for (i = 1; i <= n && st[i] <= t; i++) v = c == 2 ? sw[i] : sl[i]
				return v
			}
			FNR == NR { n++; st[n] = $1; sw[n] = $2; sl[n] = $3; next }
			{ print $1, at($3, 2) - at($2, 2), at($3, 3) - at($2, 3) }' \
			"$hd/aipu-samples.txt" "$kd/bounds" | sort >"$hd/aipu-by-test.txt"
	fi
	failures=$(sed -n 's/^Failures: //p' "$hd/check.log" | tr ' ' '\n')
	: >"$hd/results.txt"
	: >"$hd/klog-bad.txt"
	for t in "${tests[@]}"; do
		tf=${t//\//-}
		if grep -qxF "$t" "$hd/timeouts.txt"; then
			r=timeout
		elif [ -f "$RESULT_BASE/$t.notrun" ]; then
			r=notrun
		elif grep -qxF "$t" <<<"$failures" || [ -f "$RESULT_BASE/$t.out.bad" ]; then
			r=fail
		elif grep -q "^$t " "$hd/check.log"; then
			r=pass
		else
			r=missing
		fi
		k=ok
		if [ -f "$kd/$tf" ] && ! bad=$(dmesg_check "$kd/$tf"); then
			k=bad
			awk -v t="$t" '{ print t ": " $0 }' <<<"$bad" >>"$hd/klog-bad.txt"
		fi
		sec=$(awk -v t="$tf" '$1 == t { print int($3 - $2 + 0.5) }' "$kd/bounds" 2>/dev/null)
		[ "$r" != missing ] || continue
		echo "$t $r ${sec:-0} $k" >>"$hd/results.txt"
	done
	if [ -f "$kd/end" ] && ! bad=$(dmesg_check "$kd/end"); then
		awk '{ print "end: " $0 }' <<<"$bad" >>"$hd/klog-bad.txt"
	fi
	[ "$aipu_left" -eq 1 ] || echo "end: aipu was no longer loaded when check ended" >>"$hd/klog-bad.txt"
	[ ! -f "$hd/rmmod-failed.txt" ] || echo "rmmod: rmmod aipu failed" >>"$hd/klog-bad.txt"
	echo "=== $half: done in $secs s: $(awk '{ n[$2]++ } END { for (r in n) printf "%s %d  ", r, n[r] }' "$hd/results.txt")"
	[ ! -s "$hd/klog-bad.txt" ] || { echo "=== $half: kernel log:"; head -n 20 "$hd/klog-bad.txt"; }
done
exit 0
