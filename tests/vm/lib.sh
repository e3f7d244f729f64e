#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for aipu's guest-side tests. A test starts with
#
#   #!/usr/bin/env bash
#   set -euo pipefail
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# and then uses assert_* to print "PASS: ..." / "FAIL: ..." lines. At exit
# the cleanups registered with on_exit run (last first) and the test exits
# 1 if any assertion failed or a command failed (set -e), 77 if it called
# skip, 0 otherwise. The test's files go to $TEST_OUT ($AIPU_OUT/<test>).
#
# Environment (set by scripts/vm.sh): AIPU_KO, AIPU_OUT, AIPU_DISK.

# Not "set -e" here: the test sets its own options; these must hold for the
# traps to work.
set -E -o pipefail
# English error messages: write_errno matches them.
export LC_ALL=C

TEST_NAME=${TEST_NAME:-$(basename "${0%.sh}")}
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AIPU_OUT=${AIPU_OUT:-/tmp/aipu-out}
TEST_OUT=${TEST_OUT:-$AIPU_OUT/$TEST_NAME}
AIPU_SYSFS=/sys/kernel/aipu
AIPU_MNT=/tmp/aipu-mnt
# Scratch space for traces: the guest's /tmp (a RAM overlay), not the 9p
# export, which is slow and would perturb timing.
TEST_TMP=/tmp/aipu-test/$TEST_NAME
# Seconds one rmmod of aipu may take: it waits for the flusher's current
# pass; a debug kernel under TCG needs minutes (scripts/debugtest.sh: 600).
AIPU_RMMOD_TIMEOUT=${AIPU_RMMOD_TIMEOUT:-60}
# Kernel log lines that fail a test, matched case-sensitively as ERE; the
# one pattern scripts/crashtest.sh and scripts/guest-lib.sh read too.
DMESG_BAD=$(<"$TESTS_DIR/dmesg-bad.ere")

_fails=0
_passes=0
_skipped=""
_cleanups=()

log() { echo "# $*"; }
pass() {
	_passes=$((_passes + 1))
	echo "PASS: $*"
}
fail() {
	_fails=$((_fails + 1))
	echo "FAIL: $*"
}
# skip REASON: end the test now as skipped.
skip() {
	_skipped="$*"
	exit 77
}
# die REASON: a set-up step failed; end the test as failed.
die() {
	fail "$*"
	exit 1
}

# on_exit COMMAND...: run COMMAND (one string, eval'd) when the test exits.
on_exit() { _cleanups+=("$*"); }

_lib_exit() {
	local rc=$? i
	trap - ERR
	set +e
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_cleanups[$i]}" || echo "# cleanup '${_cleanups[$i]}' failed"
	done
	if [ -n "$_skipped" ]; then
		echo "SKIP: $TEST_NAME: $_skipped"
		exit 77
	fi
	if [ "$rc" -ne 0 ] && [ "$_fails" -eq 0 ]; then
		fail "$TEST_NAME ended early with status $rc"
	fi
	echo "# $TEST_NAME: $_passes passed, $_fails failed"
	[ "$_fails" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
	exit 1
}
# AIPU_LIB_ONLY=1: just define the helpers (for run-guest.sh), no test set-up.
if [ -z "${AIPU_LIB_ONLY:-}" ]; then
	mkdir -p "$TEST_OUT" "$TEST_TMP"
	trap _lib_exit EXIT
	trap 'echo "# killed by SIGTERM (time limit?)"; exit 143' TERM
	trap 'echo "# interrupted"; exit 130' INT
	trap 'echo "# command failed (status $?) at ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND"' ERR
fi

# now_us: the wall clock in microseconds (bash's EPOCHREALTIME, no fork).
now_us() { echo "${EPOCHREALTIME/./}"; }

# wait_until SECONDS COMMAND...: run COMMAND every 0.1 s until it succeeds
# (status 0) or SECONDS have passed (status 1). For waiting on an event the
# test can observe, instead of a sleep that hopes it has happened.
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# ---------------------------------------------------------------- asserts
# Each prints PASS or FAIL and returns 0 either way: a failed assert does
# not end the test (the failure is counted; use die for a step the rest of
# the test cannot do without).

assert_eq() { # EXPECTED ACTUAL MESSAGE
	if [ "$1" = "$2" ]; then pass "$3"; else
		fail "$3: expected '$1', got '$2'"
	fi
}
assert_ne() { # UNEXPECTED ACTUAL MESSAGE
	if [ "$1" != "$2" ]; then pass "$3"; else
		fail "$3: got '$2'"
	fi
}
assert_match() { # ERE ACTUAL MESSAGE
	if [[ $2 =~ $1 ]]; then pass "$3"; else
		fail "$3: '$2' does not match /$1/"
	fi
}
_assert_cmp() { # OP A B MESSAGE
	if [[ ! $2 =~ ^-?[0-9]+$ ]] || [[ ! $3 =~ ^-?[0-9]+$ ]]; then
		fail "$4: not integers: '$2' $1 '$3'"
		return 0
	fi
	if test "$2" "$1" "$3"; then pass "$4 ($2 $1 $3)"; else
		fail "$4: expected $2 $1 $3"
	fi
}
assert_ge() { _assert_cmp -ge "$@"; }
assert_gt() { _assert_cmp -gt "$@"; }
assert_le() { _assert_cmp -le "$@"; }
assert_lt() { _assert_cmp -lt "$@"; }
# assert_ok MESSAGE COMMAND...: the command succeeds.
assert_ok() {
	local msg=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [ "$rc" -eq 0 ]; then pass "$msg"; else
		fail "$msg: '$*' exited $rc: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}
# assert_fails MESSAGE COMMAND...: the command fails.
assert_fails() {
	local msg=$1 rc=0
	shift
	"$@" >/dev/null 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then pass "$msg"; else
		fail "$msg: '$*' succeeded"
	fi
}
assert_file_eq() { # FILE EXPECTED MESSAGE
	local got
	got=$(cat "$1" 2>&1) || true
	assert_eq "$2" "$got" "$3"
}

# ------------------------------------------------------------------ sysfs
# write_errno FILE STRING: write STRING (exactly, in one write) to FILE and
# print OK or the errno name (EINVAL, EACCES, EPERM, ENOENT, ...).
write_errno() {
	local err
	err=$({ printf '%s' "$2" >"$1"; } 2>&1) && {
		echo OK
		return 0
	}
	case "$err" in
	*"Invalid argument"*) echo EINVAL ;;
	*"Permission denied"*) echo EACCES ;;
	*"Operation not permitted"*) echo EPERM ;;
	*"No such file"*) echo ENOENT ;;
	*"Device or resource busy"*) echo EBUSY ;;
	*"Numerical result out of range"*) echo ERANGE ;;
	*) echo "ERROR($err)" ;;
	esac
}
# assert_write ERRNO|OK FILE STRING [MESSAGE]
assert_write() {
	local want=$1 file=$2 str=$3 got
	got=$(write_errno "$file" "$str")
	assert_eq "$want" "$got" "${4:-write $(printf '%q' "$str") to ${file##*/}}"
}

# ------------------------------------------------------------------- aipu
aipu_require_ko() {
	[ -n "${AIPU_KO:-}" ] || skip "AIPU_KO is not set (run through scripts/vm.sh)"
	[ -f "$AIPU_KO" ] || skip "$AIPU_KO is not built (scripts/build-all.sh)"
}
aipu_loaded() { [ -d /sys/module/aipu ]; }
# aipu_load [PARAM=VALUE...]: sync, insmod, register the unload.
aipu_load() {
	aipu_require_ko
	aipu_loaded && die "aipu is already loaded"
	sync
	insmod "$AIPU_KO" "$@" || die "insmod aipu.ko $* failed"
	on_exit aipu_unload
	[ -d "$AIPU_SYSFS" ] || die "aipu loaded but $AIPU_SYSFS is missing"
	log "loaded aipu $*"
}
aipu_unload() {
	aipu_loaded || return 0
	timeout "$AIPU_RMMOD_TIMEOUT" rmmod aipu || {
		echo "# rmmod aipu failed"
		return 1
	}
}
aipu_get() { cat "$AIPU_SYSFS/$1"; }
aipu_set() { # KNOB VALUE
	local r
	r=$(write_errno "$AIPU_SYSFS/$1" "$2")
	[ "$r" = OK ] || die "setting $1 to $2 failed: $r"
}
# The policy in force: the bracketed name in $AIPU_SYSFS/policy.
aipu_policy() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$AIPU_SYSFS/policy"; }
aipu_stat() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { exit !f }' "$AIPU_SYSFS/stat"; }
# aipu_dev_field MAJ:MIN FIELD: a field of that device's line in
# $AIPU_SYSFS/devices (empty if aipu has no queue for it).
aipu_dev_field() {
	awk -v d="$1" -v f="$2" '$1 == d { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' \
		"$AIPU_SYSFS/devices"
}
aipu_dump() { # log the module's state
	local f
	for f in policy max_age_ms period_ms pu_interval_ms handover_ms; do
		[ -r "$AIPU_SYSFS/$f" ] && echo "# $f: $(cat "$AIPU_SYSFS/$f")"
	done
	[ -r "$AIPU_SYSFS/stat" ] && sed 's/^/# stat: /' "$AIPU_SYSFS/stat"
	return 0
}

# ------------------------------------------------------------------ disks
# The kernel's tick length in seconds (one jiffy), from its config
# (AIPU_KCONFIG from vm.sh: a built tree has no /boot/config-KVER). Without
# one, HZ=100, the coarsest tick Linux has, so tolerances err wide.
jiffy_s() {
	local cfg=${AIPU_KCONFIG:-/boot/config-$(uname -r)} hz=""
	[ -r "$cfg" ] && hz=$(sed -n 's/^CONFIG_HZ=\([0-9]*\)$/\1/p' "$cfg")
	awk -v hz="${hz:-100}" 'BEGIN { printf "%.6f\n", 1 / hz }'
}

# One jiffy in whole milliseconds.
jiffy_ms() {
	awk -v j="$(jiffy_s)" 'BEGIN { printf "%d\n", j * 1000 + 0.5 }'
}

# queued_past TABLE MS [oldest]: how many pages of a pagetrace table
# (columns: page, dirty, Q, D, delay; seconds) blktrace shows first queued
# more than MS ms after their own dirtying, or with "oldest", after the
# table's oldest page's (a file bounded as a whole carries that time).
queued_past() {
	awk -v t="$2" -v oldest="${3:-}" '!/^#/ {
			d[NR] = $2; q[NR] = $3; if (min == "" || $2 < min) min = $2 }
		END { for (i in q) if (q[i] != "-" && (q[i] - (oldest == "oldest" ? min : d[i])) * 1000 > t) n++
			print n + 0 }' "$1"
}

# linux_kupdate EXPIRE_S INTERVAL_CS: Linux's periodic writeback set to
# expire EXPIRE_S, every INTERVAL_CS, for the rest of the test (the old
# values restored at exit); sets KUP and EXP to the sysctls' files, and
# LINUX_HI to Linux's bound in seconds after a page's dirtying: its
# periodic flush runs an interval after the last one ended, so it drifts by
# the length of its runs (on TCG 0.05-0.15 s each: Debian's 6.12 wrote
# t_handover's pages 9.5-10.3 s after their dirtying with no module
# loaded); a quarter of the expiry covers that drift, and 0.5 s the write.
linux_kupdate() {
	local wb0 exp0
	KUP=/proc/sys/vm/dirty_writeback_centisecs
	EXP=/proc/sys/vm/dirty_expire_centisecs
	wb0=$(<"$KUP")
	exp0=$(<"$EXP")
	on_exit "echo $wb0 >$KUP; echo $exp0 >$EXP"
	echo "$2" >"$KUP"
	echo $(($1 * 100)) >"$EXP"
	# shellcheck disable=SC2034 # for the caller
	LINUX_HI=$(awk -v e="$1" -v i="$2" 'BEGIN { print e * 1.25 + i / 100 + 0.5 }')
	log "dirty_expire_centisecs $(($1 * 100)), dirty_writeback_centisecs $2 (were $exp0, $wb0)"
}

# How many times slower than Debian's kernels this one runs (AIPU_TIME_SCALE,
# a whole number, default 1; scripts/debugtest.sh sets 4): for a max_age
# that a test's set-up must fit inside, never to widen a bound's window.
time_scale() {
	local s=${AIPU_TIME_SCALE:-1}
	case $s in
	'' | *[!0-9]* | 0) die "AIPU_TIME_SCALE must be a whole number, at least 1, not '$s'" ;;
	esac
	echo "$s"
}

# disk_get: print the test disk: $AIPU_DISK, else a null_blk device loaded here.
disk_get() {
	if [ -n "${AIPU_DISK:-}" ]; then
		[ -b "$AIPU_DISK" ] || die "AIPU_DISK=$AIPU_DISK is not a block device"
		echo "$AIPU_DISK"
		return 0
	fi
	if [ ! -b /dev/nullb0 ]; then
		modprobe null_blk nr_devices=1 memory_backed=1 gb=1 irqmode=0 >&2 ||
			die "modprobe null_blk failed"
		udevadm settle 2>/dev/null || true
	fi
	[ -b /dev/nullb0 ] || die "/dev/nullb0 did not appear"
	echo /dev/nullb0
}
disk_name() { basename "$(readlink -f "$1")"; }
disk_majmin() { cat "/sys/class/block/$(disk_name "$1")/dev"; }
# bdi_dirty_inodes DEV: the inodes Linux holds dirty on DEV's bdi (the sum
# of its b_dirty, b_io and b_more_io in debugfs), -1 if they cannot be read.
bdi_dirty_inodes() {
	local st
	st=/sys/kernel/debug/bdi/$(disk_majmin "$1")/stats
	awk '$1 ~ /^b_(dirty|io|more_io):$/ { n += $2 } END { print n + 0 }' "$st" 2>/dev/null || echo -1
}
# disk_prepare DEV: no I/O scheduler, no write throttling, and a reserved
# share of the dirty limit (min_ratio) so Linux's background writeback does
# not flush a fresh device before any age threshold (see environment.md).
disk_prepare() {
	local dev=$1 q bdi
	q=/sys/block/$(disk_name "$dev")/queue
	[ -w "$q/scheduler" ] && echo none >"$q/scheduler" 2>/dev/null
	[ -w "$q/wbt_lat_usec" ] && echo 0 >"$q/wbt_lat_usec" 2>/dev/null
	bdi=/sys/class/bdi/$(disk_majmin "$dev")
	[ -d "$bdi" ] || die "no bdi $bdi for $dev"
	echo 10 >"$bdi/min_ratio" || die "cannot set $bdi/min_ratio"
	log "$dev: scheduler $(cat "$q/scheduler" 2>/dev/null), wbt_lat_usec $(cat "$q/wbt_lat_usec" 2>/dev/null), min_ratio $(cat "$bdi/min_ratio")"
}
# nullb_slow NAME MS [SIZE_MB]: a memory-backed null_blk made through
# configfs that serves one request at a time, each in MS ms (queue depth 1:
# a writer blocks in the block layer for every request). Sets NULLB_SLOW to
# its device node and NULLB_SLOW_CFG to its configfs directory; the removal
# is registered.
nullb_slow() {
	local name=$1 ms=$2 size=${3:-256} cfs=/sys/kernel/config cfg dev=""
	cfg=$cfs/nullb/$name
	modprobe configfs 2>/dev/null || true
	mountpoint -q "$cfs" || mount -t configfs none "$cfs" || die "cannot mount configfs on $cfs"
	[ -d "$cfs/nullb" ] || die "null_blk has no configfs directory ($cfs/nullb): is null_blk loaded?"
	mkdir "$cfg" || die "cannot make the null_blk device $cfg"
	on_exit "nullb_remove $cfg"
	echo "$size" >"$cfg/size"
	echo 1 >"$cfg/memory_backed"
	echo 2 >"$cfg/irqmode"
	echo $((ms * 1000000)) >"$cfg/completion_nsec"
	echo 1 >"$cfg/hw_queue_depth"
	echo 1 >"$cfg/submit_queues"
	echo 1 >"$cfg/power" || die "cannot power on $cfg"
	# Named after the configfs directory (6.1 and later), else nullb<index>.
	for _ in $(seq 50); do
		for dev in "/dev/$name" "/dev/nullb$(cat "$cfg/index")"; do
			[ -b "$dev" ] && break 2
		done
		sleep 0.1
	done
	[ -b "$dev" ] || die "the null_blk device node of $cfg did not appear (tried /dev/$name, /dev/nullb$(cat "$cfg/index"))"
	# shellcheck disable=SC2034 # for the caller
	NULLB_SLOW=$dev
	# shellcheck disable=SC2034 # for the caller
	NULLB_SLOW_CFG=$cfg
}
# nullb_remove CFG: power off and remove a configfs null_blk (idempotent).
nullb_remove() {
	[ -d "$1" ] || return 0
	echo 0 >"$1/power" 2>/dev/null || true
	rmdir "$1" 2>/dev/null || true
}
# fs_make FSTYPE DEV [MOUNTPOINT]: make ext4|ext2|xfs on DEV and mount it
# (default /tmp/aipu-mnt); the unmount is registered.
fs_make() {
	local fs=$1 dev=$2 mnt=${3:-$AIPU_MNT}
	case "$fs" in
	ext4) mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$dev" >/dev/null || die "mkfs.ext4 $dev failed" ;;
	ext2) mkfs.ext2 -F -q "$dev" >/dev/null || die "mkfs.ext2 $dev failed" ;;
	xfs) mkfs.xfs -f -q "$dev" >/dev/null || die "mkfs.xfs $dev failed" ;;
	vfat) mkfs.vfat "$dev" >/dev/null || die "mkfs.vfat $dev failed (dosfstools installed?)" ;;
	exfat) mkfs.exfat "$dev" >/dev/null || die "mkfs.exfat $dev failed (exfatprogs installed?)" ;;
	*) die "fs_make: unknown file system '$fs'" ;;
	esac
	mkdir -p "$mnt"
	mount -t "$fs" "$dev" "$mnt" || die "mount $dev on $mnt failed"
	on_exit "fs_umount $mnt"
	log "$fs on $dev mounted at $mnt"
}
fs_umount() {
	mountpoint -q "$1" || return 0
	umount "$1"
}

# -------------------------------------------------------------- tracepoints
# tracepoints_pin: hold the points aipu hooks (its trace events and its
# kprobe) for the rest of the boot, with ftrace's buffers off, so that
# aipu's insmod and rmmod patch no kernel text: scripts/hold-hooks.sh says
# why (QEMU TCG's int3 bug) and how.
tracepoints_pin() { bash "$TESTS_DIR/../../scripts/hold-hooks.sh"; }

# ---------------------------------------------------------------- blktrace
debugfs_mount() {
	[ -d /sys/kernel/debug/block ] && return 0
	mount -t debugfs none /sys/kernel/debug || die "cannot mount debugfs"
}
BLKTRACE_PIDFILE=/tmp/aipu-blktrace.pid
BLKTRACE_FMT='%T.%9t %a %d %S %n %p %C\n'
# blktrace_start DEV NAME: trace DEV into $TEST_TMP/NAME.blktrace.*; returns
# once the trace is running.
blktrace_start() {
	local dev=$1 name=$2 i
	debugfs_mount
	rm -f "$TEST_TMP/$name".blktrace.*
	blktrace -d "$dev" -D "$TEST_TMP" -o "$name" >"$TEST_TMP/$name.blktrace.log" 2>&1 &
	BLKTRACE_PID=$!
	BLKTRACE_DEV=$dev
	BLKTRACE_NAME=$name
	echo "$BLKTRACE_PID" >"$BLKTRACE_PIDFILE"
	on_exit blktrace_kill
	for ((i = 0; i < 100; i++)); do
		[ -e "/sys/kernel/debug/block/$(disk_name "$dev")/trace0" ] &&
			[ -e "$TEST_TMP/$name.blktrace.0" ] && break
		kill -0 "$BLKTRACE_PID" 2>/dev/null ||
			die "blktrace exited: $(cat "$TEST_TMP/$name.blktrace.log")"
		sleep 0.1
	done
	[ "$i" -lt 100 ] || die "blktrace on $dev did not start within 10 s"
	sleep 0.5 # let every per-CPU reader thread start
}
# blktrace_stop OUTFILE: stop the trace, write the event list (see
# blkevents.py) to OUTFILE and a copy to $TEST_OUT.
blktrace_stop() {
	local out=$1 dropped
	[ -n "${BLKTRACE_PID:-}" ] || die "blktrace_stop: no trace running"
	kill -INT "$BLKTRACE_PID" 2>/dev/null || true
	wait "$BLKTRACE_PID" 2>/dev/null || true
	BLKTRACE_PID=""
	rm -f "$BLKTRACE_PIDFILE"
	# blktrace ends with "Total: N events (dropped D), ..." and, if D > 0,
	# "You have D ( D) dropped events".
	dropped=$(grep -o 'dropped [0-9]*' "$TEST_TMP/$BLKTRACE_NAME.blktrace.log" |
		awk '{ s += $2 } END { print s + 0 }')
	[ "$dropped" -eq 0 ] || fail "blktrace dropped $dropped events: timing checks may be wrong"
	blkparse -q -i "$BLKTRACE_NAME" -D "$TEST_TMP" -f "$BLKTRACE_FMT" -o "$out" >/dev/null 2>&1 ||
		die "blkparse failed on $TEST_TMP/$BLKTRACE_NAME"
	cp "$out" "$TEST_OUT/" 2>/dev/null || true
	log "blktrace of $BLKTRACE_DEV: $(wc -l <"$out") events in $out"
}
blktrace_kill() {
	[ -n "${BLKTRACE_PID:-}" ] || return 0
	kill -INT "$BLKTRACE_PID" 2>/dev/null || true
	wait "$BLKTRACE_PID" 2>/dev/null || true
	BLKTRACE_PID=""
	rm -f "$BLKTRACE_PIDFILE"
}

# -------------------------------------------------------------------- I/O
# blkevents ARGS...: tests/vm/blkevents.py (timing questions about a trace).
blkevents() { python3 "$TESTS_DIR/blkevents.py" "$@"; }
# marker_sector FILE PAGES: write PAGES zero pages to FILE and sync, so that
# its blocks are fixed before a test's marker writes go to them; print its
# first sector (status 1 if it cannot be found).
marker_sector() {
	local sec
	dd if=/dev/zero of="$1" bs=4096 count="$2" status=none
	sync
	sec=$(blkevents sectors --file "$1" | cut -d- -f1)
	[[ $sec =~ ^[0-9]+$ ]] || return 1
	echo "$sec"
}
# pagetrace ARGS...: tests/vm/pagetrace.py (per-page dirtying and write times).
pagetrace() { python3 "$TESTS_DIR/pagetrace.py" "$@"; }
# dirty_pages ARGS...: tests/vm/dirty.py (markers + fast buffered writes).
dirty_pages() { python3 "$TESTS_DIR/dirty.py" "$@"; }
# direct_write DEV_OR_FILE BYTE_OFFSET: one 4 KiB O_DIRECT write (a marker).
direct_write() {
	dd if=/dev/zero of="$1" bs=4096 count=1 seek=$(($2 / 4096)) \
		oflag=direct conv=notrunc status=none
}

# page_ranges FIRST_PAGE COUNT STRIDE [BASE_SECTOR]: sector ranges
# "A+8,B+8,..." of 4 KiB pages FIRST, FIRST+STRIDE, ... (as dirty.py writes
# them) on a device, or in a partition starting at BASE_SECTOR.
page_ranges() {
	awk -v f="$1" -v n="$2" -v s="$3" -v b="${4:-0}" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "%s%d+8", (i ? "," : ""), b + (f + i * s) * 8
		print ""
	}'
}

# shadow_verify WHAT REAL_DIR SHADOW_DIR: the same files, with the same
# sha256 (a test's real files against the shadows lifeio.py/churn.py kept).
shadow_verify() {
	local want got
	want=$(cd "$3" && sha256sum -- *)
	got=$(cd "$2" && sha256sum -- * 2>&1) || true
	if [ "$want" = "$got" ]; then
		pass "$1: $(wc -l <<<"$want") files match their shadows"
	else
		fail "$1: files differ from their shadows:"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   /' | head -n 20 || true
		find "$2" "$3" -maxdepth 1 -type f -printf '#   %p %s\n'
	fi
}

# ------------------------------------------------------------------ dmesg
# dmesg_check [FILE]: print kernel log lines matching $DMESG_BAD (from FILE,
# else the live log); status 1 if there are any.
dmesg_check() {
	local lines
	if [ $# -gt 0 ]; then lines=$(grep -E "$DMESG_BAD" "$1" || true); else
		lines=$(dmesg | grep -E "$DMESG_BAD" || true)
	fi
	[ -z "$lines" ] && return 0
	echo "$lines"
	return 1
}
