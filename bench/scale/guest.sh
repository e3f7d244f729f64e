#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of the in-guest scale benchmark (bench/scale/README.md,
# "In a guest"). bench/scale/guest-run.sh boots a VM with scripts/vm.sh and
# runs this in it; it is not meant for a host (it formats $AIPU_DISK).
#
#   bench/scale/guest.sh --tar FILE [--quick] [--trials N] [--mib M]
#                        [--tree-trials N] [--phases "calib random tree two look"]
#
# Rows: none (aipu not loaded) and aipu (loaded with policy=kernel and
# max_age_ms=3600000: it timestamps and tracks every page and writes none,
# and nothing comes due while a trial runs, so the rows differ only in the
# tracking). aipu.ko is reloaded for every aipu trial, so lock_hold_max_ns
# is that trial's. The rows alternate within a trial, in the order
# none, aipu on odd trials and aipu, none on even ones.
#
# Phases:
#   calib   bench/scale's user-space binary (the module's queue,
#           src/queue/queue.c; the host script's copy, AIPU_SCALE_BIN) with
#           --quick --only pages,
#           in the guest: what TCG makes of aipu's own tracking code, to
#           set against the same binary on the host.
#   random  a M-MiB file (default 1024; --quick 64) on ext4, fallocated and
#           read into the page cache, then every 4-KiB page of it written
#           once in random order (bench/scale/randwrite.c: pwrite, no
#           fsync; fio's start-up would be in the host's CPU time):
#           the write rate.
#   tree    FILE (an uncompressed tar: Debian's linux-source-6.1, unpacked
#           on the host) copied once to a tmpfs, then extracted onto ext4:
#           the extraction's time.
#   profile (not by default) one random trial a row (the --mib file)
#           under perf record -e cpu-clock -a -g: where the time
#           goes (profile/<row>.txt, perf report by symbol, no children).
#           cpu-clock cannot sample with interrupts off, where the probe
#           runs (its time shows up in the _raw_spin_unlock_irqrestore
#           that ends the section), so the aipu row is then written
#           again (a fresh file of 20,000 pages) under ftrace's
#           function_graph tracer, entered at probe_dirty_folio, at depths
#           2 and 4: profile/fgraph-<depth>.txt (bench/scale/fgraph.py:
#           each function's calls and mean time, and that time less the
#           tracer's own cost per call, measured on __rcu_read_lock).
#   two     two null_blk devices: a slow one (one request at a time, 50 ms
#           each) holding a backlog of 400 aged random pages, a fast one
#           that gets 200 random pages 4.5 s later; the fast device's write
#           time minus each page's dirty time (blktrace), under aipu
#           (policy aipu) and under Linux's own writeback (aipu loaded with
#           policy kernel), both with a 3-s expiry and a 1-s period.
#   look    (not by default; refused unless AIPU_LOOK_ANYWAY=1, as its
#           page dirtied before insmod is adopted now) the handover's look
#           (src/handover.c), once a
#           second while Linux holds data dirtied before the load, against
#           what it walks: AIPU_LOOK_ROWS (default "1:0 100:0 1000:0 1000:100")
#           of L:M, L loop devices (block devices: their inodes are walked
#           one by one) of which M carry a mounted ext2 (super blocks and
#           their writeback contexts). One page of the first loop device is
#           dirtied before insmod (dirty_expire_centisecs 3000, so Linux
#           holds it for the whole row), aipu is loaded with handover_ms
#           1000, and function_graph times look_fn for AIPU_LOOK_SECONDS (20):
#           look/<L>-<M>.trace, and each look's time in results.txt.
#
# The dirty limits are raised (dirty_bytes 32 GiB, dirty_background_bytes
# 16 GiB, the disk's bdi min_ratio 50) and Linux's periodic writeback is
# off (dirty_writeback_centisecs 0) for random and tree, so no page is
# written back while a trial runs; each trial records the pages written
# meanwhile (/proc/vmstat nr_written) and the disk's write sectors, to
# show it. A trial's dirty pages are never written: the files are removed
# (which drops them), then sync and drop_caches.
#
# Output in $AIPU_OUT: guest.log, env.txt, results.txt (one line a
# measurement: "phase row trial key value"), dmesg.txt, and per trial
# random/<row>-<n>.out, */<row>-<n>.stat, */<row>-<n>.slab and
# two/<row>-<n>.table (pagetrace.py analyze's per-page times).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tests=$root/tests/vm

die() {
	echo "guest.sh: $*" >&2
	exit 1
}
usage() {
	sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
	exit "${1:-0}"
}

tar_src=""
quick=0
trials=""
tree_trials=""
mib=""
phases="calib random tree two"
while [ $# -gt 0 ]; do
	case $1 in
	--tar)
		[ $# -ge 2 ] || usage 2
		tar_src=$2
		shift
		;;
	--quick) quick=1 ;;
	--trials)
		[ $# -ge 2 ] || usage 2
		trials=$2
		shift
		;;
	--mib)
		[ $# -ge 2 ] || usage 2
		mib=$2
		shift
		;;
	--tree-trials)
		[ $# -ge 2 ] || usage 2
		tree_trials=$2
		shift
		;;
	--phases)
		[ $# -ge 2 ] || usage 2
		phases=$2
		shift
		;;
	-h | --help) usage 0 ;;
	*)
		echo "guest.sh: unknown argument '$1'" >&2
		usage 2
		;;
	esac
	shift
done
if [ "$quick" -eq 1 ]; then
	trials=${trials:-1}
	mib=${mib:-64}
else
	trials=${trials:-3}
	mib=${mib:-1024}
fi
[[ $trials =~ ^[1-9][0-9]*$ ]] || die "--trials must be a positive number, not '$trials'."
tree_trials=${tree_trials:-$trials}
[[ $tree_trials =~ ^[1-9][0-9]*$ ]] || die "--tree-trials must be a positive number, not '$tree_trials'."
[[ $mib =~ ^[1-9][0-9]*$ ]] || die "--mib must be a positive number, not '$mib'."

# The module this run loads: the host script's private copy, so that a
# rebuild of build/<kver>/aipu.ko meanwhile cannot change it mid-run.
ko=${AIPU_SCALE_KO:-${AIPU_KO:-}}
randwrite=${AIPU_SCALE_RANDWRITE:-}
if [[ " $phases " == *" random "* || " $phases " == *" profile "* ]] && [ ! -x "$randwrite" ]; then
	die "no randwrite binary (AIPU_SCALE_RANDWRITE): run through bench/scale/guest-run.sh."
fi
if [ -z "$ko" ] || [ ! -f "$ko" ]; then
	die "no aipu.ko (AIPU_SCALE_KO or AIPU_KO): run through bench/scale/guest-run.sh."
fi
if [ -z "${AIPU_OUT:-}" ] || [ ! -d "$AIPU_OUT" ]; then
	die "AIPU_OUT is not a directory: run through scripts/vm.sh."
fi
out=$AIPU_OUT
disk=${AIPU_DISK:-}
[ -d /sys/module/aipu ] && die "aipu is already loaded."

exec > >(tee "$out/guest.log") 2>&1
tee_pid=$!
finish() {
	exec 1>&- 2>&-
	wait "$tee_pid" 2>/dev/null || true
	exit "$1"
}

# tests/vm/lib.sh's helpers (disk_prepare, blktrace_start/stop, page
# ranges), without its test set-up.
TEST_NAME=scale
# shellcheck source=tests/vm/lib.sh
AIPU_LIB_ONLY=1 . "$tests/lib.sh"
# lib.sh sets its own; blktrace's files go here (the guest's RAM).
TEST_TMP=/tmp/aipu-scale
TEST_OUT=$out/two
mkdir -p "$TEST_TMP" "$TEST_OUT"
# lib.sh's die counts a failure and exits 1; ours says where.
die() {
	echo "guest.sh: $*" >&2
	finish 1
}
set -euo pipefail

results=$out/results.txt
: >"$results"
# rec PHASE ROW TRIAL KEY VALUE
rec() { echo "$*" >>"$results"; }
now() { date +%s.%N; }
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
vmstat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# disk_wsect DEV: sectors written to DEV since boot.
disk_wsect() { awk '{ print $7 }' "/sys/block/$(basename "$1")/stat"; }
drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
load_aipu() {
	insmod "$ko" "$@" || die "insmod $ko $* failed"
}
unload_aipu() {
	[ -d /sys/module/aipu ] || return 0
	timeout 120 rmmod aipu || die "rmmod aipu failed"
}
# snap_aipu FILE: stat, and the slab lines of aipu's caches, into FILE.stat
# and FILE.slab.
snap_aipu() {
	cp /sys/kernel/aipu/stat "$1.stat"
	grep -E '^aipu_(seg64|seg512|seg4096|live_chunk|moved|retry|tracker) ' /proc/slabinfo >"$1.slab" || true
	for c in aipu_seg64 aipu_seg512 aipu_seg4096 aipu_live_chunk aipu_moved aipu_retry aipu_tracker; do
		if [ -d "/sys/kernel/slab/$c" ]; then
			echo "# $c object_size $(cat "/sys/kernel/slab/$c/object_size") slab_size $(cat "/sys/kernel/slab/$c/slab_size") objects $(cut -d' ' -f1 "/sys/kernel/slab/$c/objects")" >>"$1.slab"
		fi
	done
}
# rec_aipu PHASE ROW TRIAL FILE PREFIX: the figures of a snapshot.
rec_aipu() {
	local k
	for k in pages_dirtied pages_tracked runs_tracked mappings_tracked mem_bytes lock_hold_max_ns fallbacks pages_written; do
		rec "$1" "$2" "$3" "$5$k" "$(stat_of "$4.stat" "$k")"
	done
	# slab: active objects x object size, and the slabs' pages.
	awk -v p="$1" -v r="$2" -v t="$3" -v x="$5" '$1 ~ /^aipu_/ {
		printf "%s %s %s %sslab_%s_active %s\n", p, r, t, x, $1, $2
		printf "%s %s %s %sslab_%s_objsize %s\n", p, r, t, x, $1, $4
		printf "%s %s %s %sslab_%s_bytes_active %d\n", p, r, t, x, $1, $2 * $4
		printf "%s %s %s %sslab_%s_bytes_slabs %d\n", p, r, t, x, $1, $15 * $6 * 4096
	}' "$4.slab" >>"$results"
}

# ------------------------------------------------------------------ set-up
kver=$(uname -r)
echo "guest.sh: kernel $kver, $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB; trials $trials, random file $mib MiB; phases: $phases"
bash "$root/scripts/hold-hooks.sh" || die "could not hold aipu's hook points (scripts/hold-hooks.sh)"
{
	echo "kernel $kver"
	echo "cpus $(nproc)"
	echo "mem_kb $(awk '/MemTotal/ {print $2}' /proc/meminfo)"
	echo "ko $ko"
	echo "ko_srcversion $(modinfo -F srcversion "$ko" 2>/dev/null || echo unknown)"
	echo "ko_sha256 $(sha256sum "$ko" | cut -d' ' -f1)"
	echo "trials $trials"
	echo "tree_trials $tree_trials"
	echo "quick $quick"
	echo "random_mib $mib"
	echo "tar $tar_src"
	echo "phases $phases"
	echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	echo "hz $(sed -n 's/^CONFIG_HZ=//p' "/boot/config-$kver" 2>/dev/null || echo unknown)"
	echo "aipu_params policy=kernel max_age_ms=3600000 handover_ms=0"
} >"$out/env.txt"

mnt=/tmp/scale-mnt
if [[ " $phases " == *" random "* || " $phases " == *" tree "* || " $phases " == *" profile "* ]]; then
	if [ -z "$disk" ] || [ ! -b "$disk" ]; then
		die "no test disk (AIPU_DISK): boot with scripts/vm.sh --disk fifo:..."
	fi
	disk_prepare "$disk"
	echo 50 >"/sys/class/bdi/$(disk_majmin "$disk")/min_ratio" || die "cannot set min_ratio 50 on $disk"
	# No write-back while a trial runs: limits far above what a trial
	# dirties, no periodic writeback.
	echo $((32 << 30)) >/proc/sys/vm/dirty_bytes
	echo $((16 << 30)) >/proc/sys/vm/dirty_background_bytes
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$disk" >/dev/null || die "mkfs.ext4 $disk failed"
	mkdir -p "$mnt"
	mount -t ext4 "$disk" "$mnt" || die "mount $disk failed"
	{
		echo "disk $disk $(blockdev --getsize64 "$disk") bytes"
		echo "fs ext4 $(findmnt -no OPTIONS "$mnt")"
		for s in dirty_bytes dirty_background_bytes dirty_writeback_centisecs dirty_expire_centisecs; do
			echo "vm.$s $(cat "/proc/sys/vm/$s")"
		done
		echo "bdi_min_ratio $(cat "/sys/class/bdi/$(disk_majmin "$disk")/min_ratio")"
	} >>"$out/env.txt"
fi

# order TRIAL: the rows in the order trial TRIAL runs them.
order() {
	if [ $(($1 % 2)) -eq 1 ]; then echo none aipu; else echo aipu none; fi
}
# before_trial ROW / after_measure PHASE ROW TRIAL FILE: load aipu for its
# row; after the timed part, record the write-back that happened meanwhile
# and aipu's figures.
before_trial() {
	drop_caches
	[ "$1" = none ] || load_aipu policy=kernel max_age_ms=3600000 handover_ms=0
	W0=$(vmstat_of nr_written)
	D0=$(vmstat_of nr_dirtied)
	S0=$(disk_wsect "$disk")
}
after_measure() {
	rec "$1" "$2" "$3" nr_dirtied $(($(vmstat_of nr_dirtied) - D0))
	rec "$1" "$2" "$3" nr_written $(($(vmstat_of nr_written) - W0))
	rec "$1" "$2" "$3" disk_write_kib $((($(disk_wsect "$disk") - S0) / 2))
	rec "$1" "$2" "$3" mem_dirty_kb "$(awk '/^Dirty:/ {print $2}' /proc/meminfo)"
	[ "$2" = none ] || {
		snap_aipu "$4"
		rec_aipu "$1" "$2" "$3" "$4" ""
	}
}
# after_remove PHASE ROW TRIAL FILE: the files are gone (their pages
# dropped): aipu's longest hold now includes the evictions; unload.
after_remove() {
	[ "$2" = none ] || {
		snap_aipu "$4.removed"
		rec "$1" "$2" "$3" removed_lock_hold_max_ns "$(stat_of "$4.removed.stat" lock_hold_max_ns)"
		rec "$1" "$2" "$3" removed_pages_tracked "$(stat_of "$4.removed.stat" pages_tracked)"
	}
	sync
	unload_aipu
}

# ------------------------------------------------------------------ random
random_trial() { # ROW TRIAL
	local row=$1 t=$2 f=$mnt/rand.dat base=$out/random/$1-$2 t0 t1 cached
	rm -f "$f"
	fallocate -l "${mib}M" "$f"
	before_trial "$row"
	cat "$f" >/dev/null
	cached=$(fincore --bytes --noheadings --raw -o RES "$f")
	rec random "$row" "$t" cached_bytes "$cached"
	W0=$(vmstat_of nr_written)
	D0=$(vmstat_of nr_dirtied)
	S0=$(disk_wsect "$disk")
	t0=$(now)
	# Its marks go to the console as they are printed: the host reads
	# QEMU's CPU time at each (guest_cpu.py).
	"$randwrite" "$f" $((mib * 256)) "$t" "random $row $t" | tee "$base.out" ||
		die "randwrite failed (row $row, trial $t)"
	t1=$(now)
	after_measure random "$row" "$t" "$base"
	rec random "$row" "$t" wall_s "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
	awk -v r="$row" -v t="$t" '$1 == "writes" { print "random", r, t, "writes", $2; print "random", r, t, "write_s", $4; print "random", r, t, "rate", $6 }' "$base.out" >>"$results"
	rm -f "$f"
	after_remove random "$row" "$t" "$base"
	echo "guest.sh: random $row trial $t: $(grep "^random $row $t rate" "$results" | cut -d' ' -f5) writes/s, $(grep "^random $row $t nr_written" "$results" | cut -d' ' -f5) pages written meanwhile"
}

# -------------------------------------------------------------------- tree
tree_trial() { # ROW TRIAL
	local row=$1 t=$2 d=$mnt/tree base=$out/tree/$1-$2 t0 t1 r0 r1 TIMEFORMAT='%3U %3S'
	rm -rf "$d"
	before_trial "$row"
	mkdir -p "$d"
	# Idle for half a second after each mark (see randwrite.c).
	echo "@@aipu-scale-mark begin tree $row $t"
	sleep 0.5
	t0=$(now)
	# tar's own CPU time (user + system, the probe's included): without the
	# waits the wall time has, which under icount are jumps to the next
	# timer, not instructions.
	{ time tar -xf "$src" -C "$d" 2>"$base.tar-err"; } 2>"$base.cpu" ||
		die "tar -xf failed (row $row, trial $t): $(cat "$base.tar-err")"
	t1=$(now)
	echo "@@aipu-scale-mark end tree $row $t"
	sleep 0.5
	after_measure tree "$row" "$t" "$base"
	rec tree "$row" "$t" wall_s "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
	rec tree "$row" "$t" cpu_s "$(awk '{ printf "%.3f", $1 + $2 }' "$base.cpu")"
	r0=$(now)
	rm -rf "$d"
	r1=$(now)
	rec tree "$row" "$t" rm_s "$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.3f", b - a }')"
	after_remove tree "$row" "$t" "$base"
	echo "guest.sh: tree $row trial $t: $(grep "^tree $row $t wall_s" "$results" | cut -d' ' -f5) s, $(grep "^tree $row $t nr_written" "$results" | cut -d' ' -f5) pages written meanwhile"
}

# --------------------------------------------------------------------- two
SLOW_PAGES=400
FAST_PAGES=200
cfs=/sys/kernel/config
nullb_make() { # NAME COMPLETION_NS DEPTH: a configfs null_blk; prints its node
	local c=$cfs/nullb/$1 n
	mkdir "$c" || die "cannot make null_blk $c"
	echo 256 >"$c/size"
	echo 1 >"$c/memory_backed"
	if [ "$2" -gt 0 ]; then
		echo 2 >"$c/irqmode"
		echo "$2" >"$c/completion_nsec"
	else
		echo 0 >"$c/irqmode"
	fi
	echo "$3" >"$c/hw_queue_depth"
	echo 1 >"$c/submit_queues"
	echo 1 >"$c/power" || die "cannot power on $c"
	for _ in $(seq 50); do
		for n in "/dev/$1" "/dev/nullb$(cat "$c/index")"; do
			[ -b "$n" ] && {
				echo "$n"
				return 0
			}
		done
		sleep 0.1
	done
	die "null_blk $1's node did not appear"
}
two_trial() { # ROW(aipu|linux) TRIAL
	local row=$1 t=$2 base=$out/two/$1-$2 w
	# The slow device's backlog: due at 3 s, then written 20 a second.
	if [ "$row" = aipu ]; then
		load_aipu policy=aipu max_age_ms=3000 period_ms=1000 handover_ms=0
	else
		load_aipu policy=kernel max_age_ms=3000 period_ms=1000 handover_ms=0
	fi
	echo 300 >/proc/sys/vm/dirty_expire_centisecs
	echo 100 >/proc/sys/vm/dirty_writeback_centisecs
	python3 "$tests/dirty.py" "$slow" --first-page 0 --count "$SLOW_PAGES" --stride 2 --max-ms 2000 >/dev/null ||
		die "dirty.py on $slow failed"
	sleep 4.5
	cp /sys/kernel/aipu/devices "$base.devices-before"
	blktrace_start "$fast" "fast-$row-$t"
	python3 "$tests/pagetrace.py" dirty "$fast" --first-page 2048 --count "$FAST_PAGES" --stride 2 \
		--marker "$fast:0" --log "$base.log" >/dev/null || die "pagetrace.py dirty on $fast failed"
	sleep 6
	blktrace_stop "$TEST_TMP/fast-$row-$t.txt"
	cp /sys/kernel/aipu/devices "$base.devices-after"
	snap_aipu "$base"
	python3 "$tests/pagetrace.py" analyze --trace "$TEST_TMP/fast-$row-$t.txt" --marker-sector 0 \
		--log "$base.log" --table "$base.table" >"$base.analyze" || die "pagetrace.py analyze failed"
	rec two "$row" "$t" slow_tracked_after "$(awk -v d="$slow_id" '$1 == d { for (i = 2; i < NF; i += 2) if ($i == "pages_tracked") print $(i + 1) }' "$base.devices-after")"
	rec two "$row" "$t" lock_hold_max_ns "$(stat_of "$base.stat" lock_hold_max_ns)"
	w=$(awk '$1 == "written" { print $2 }' "$base.analyze")
	rec two "$row" "$t" fast_written "$w"
	echo "guest.sh: two $row trial $t: $w of $FAST_PAGES fast pages written; $(grep -E '^(min|max)_delay_us' "$base.analyze" | tr '\n' ' ')"
	# Drain the slow device, then put Linux's writeback back as it was.
	sync
	unload_aipu
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
}

# ----------------------------------------------------------------- warm-up
# TCG translates guest code the first time it runs, so the first row to
# run a code path in a boot would pay for it: one untimed small pass with
# each row first (aipu's code is translated again at each load, wherever
# it lands: a few KiB, small beside a trial).
warm_random() {
	local f=$mnt/warm.dat row
	for row in none aipu; do
		rm -f "$f"
		fallocate -l 16M "$f"
		cat "$f" >/dev/null
		[ "$row" = none ] || load_aipu policy=kernel max_age_ms=3600000 handover_ms=0
		"$randwrite" "$f" 4096 0 "warm $row 0" >/dev/null
		rm -f "$f"
		sync
		unload_aipu
	done
	drop_caches
}
warm_tree() {
	local d=$mnt/warm row
	for row in none aipu; do
		rm -rf "$d"
		mkdir -p "$d"
		[ "$row" = none ] || load_aipu policy=kernel max_age_ms=3600000 handover_ms=0
		# The first 32 MiB of the archive: tar stops at the cut, with an error.
		head -c 32M "$src" | tar -xf - -C "$d" 2>/dev/null || true
		rm -rf "$d"
		sync
		unload_aipu
	done
	drop_caches
}

# The dirtying probe's time by callee (function_graph at depth 2, then 4),
# on 20,000 random pages of a fresh cached file each time.
fgraph_probe() { # OUTDIR
	local T=/sys/kernel/tracing f=$mnt/fgraph.dat depth
	if ! mountpoint -q "$T" && ! mount -t tracefs none "$T"; then
		echo "guest.sh: no tracefs at $T: no function_graph breakdown"
		return 0
	fi
	for depth in 2 4; do
		rm -f "$f"
		fallocate -l 80M "$f"
		cat "$f" >/dev/null
		load_aipu policy=kernel max_age_ms=3600000 handover_ms=0
		echo 0 >"$T/tracing_on"
		echo 65536 >"$T/buffer_size_kb"
		echo probe_dirty_folio >"$T/set_graph_function"
		echo "$depth" >"$T/max_graph_depth"
		echo function_graph >"$T/current_tracer"
		: >"$T/trace"
		echo 1 >"$T/tracing_on"
		"$randwrite" "$f" 20000 3 "fgraph $depth" >"$1/fgraph-$depth.out" 2>&1
		echo 0 >"$T/tracing_on"
		python3 "$here/fgraph.py" "$T/trace" >"$1/fgraph-$depth.txt" ||
			echo "guest.sh: fgraph.py failed (depth $depth)"
		echo nop >"$T/current_tracer"
		: >"$T/set_graph_function"
		rm -f "$f"
		sync
		unload_aipu
	done
	echo "guest.sh: probe by callee: $(head -n 4 "$1/fgraph-2.txt" | tail -n 1)"
}

# -------------------------------------------------------------------- look
look_loops=()
# look_grow L M: L loop devices attached (sparse 4-MiB files in a tmpfs),
# the 2nd to the (M+1)th with an ext2 mounted; the first is never mounted.
look_grow() {
	local i img dev
	for ((i = ${#look_loops[@]}; i < $1; i++)); do
		img=/tmp/look-img/$i
		truncate -s 4M "$img"
		dev=$(losetup -f --show "$img") || die "losetup of loop device $i failed"
		look_loops+=("$dev")
	done
	for ((i = 1; i <= $2 && i < $1; i++)); do
		mountpoint -q "/tmp/look-mnt/$i" && continue
		mkdir -p "/tmp/look-mnt/$i"
		mkfs.ext2 -q -F "${look_loops[$i]}" >/dev/null || die "mkfs.ext2 ${look_loops[$i]} failed"
		mount -t ext2 "${look_loops[$i]}" "/tmp/look-mnt/$i" || die "mount ${look_loops[$i]} failed"
	done
}
# look_bdi ROW WHEN: the first loop device's dirty inodes (its bdi's
# b_dirty, b_io and b_more_io) and the machine's Dirty kB: what Linux holds.
look_bdi() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug || true
	rec look "$1" 1 "$2_loop_dirty_inodes" "$(bdi_dirty_inodes "${look_loops[0]}")"
	rec look "$1" 1 "$2_dirty_kb" "$(awk '/^Dirty:/ { print $2 }' /proc/meminfo)"
}
# look_row L M: the looks' times with L loop devices, M of them mounted.
look_row() {
	local T=/sys/kernel/tracing row=$1-$2 f times n
	look_grow "$1" "$2"
	f=$out/look/$row.trace
	sync
	echo 3000 >/proc/sys/vm/dirty_expire_centisecs
	# The page Linux holds: written with no sync, before the load, the
	# device held open (its last close would write it), with a share of
	# the dirty limit reserved (else a device with no write history is over
	# its background threshold at once: environment.md).
	echo 10 >"/sys/class/bdi/$(disk_majmin "${look_loops[0]}")/min_ratio"
	exec 7<>"${look_loops[0]}"
	dd if=/dev/urandom of="${look_loops[0]}" bs=4k count=1 conv=notrunc status=none
	look_bdi "$row" before
	load_aipu policy=aipu handover_ms=1000
	echo 0 >"$T/tracing_on"
	echo look_fn >"$T/set_graph_function" ||
		die "look_fn is not traceable: $(grep -c '\[aipu\]' "$T/available_filter_functions") of aipu's functions are, $(grep -w look_fn "$T/available_filter_functions" || echo 'not look_fn')"
	echo 1 >"$T/max_graph_depth"
	echo function_graph >"$T/current_tracer"
	echo 0 >"$T/options/funcgraph-irqs"
	: >"$T/trace"
	echo 1 >"$T/tracing_on"
	sleep "${AIPU_LOOK_SECONDS:-20}"
	echo 0 >"$T/tracing_on"
	cp "$T/trace" "$f"
	look_bdi "$row" after
	rec look "$row" 1 handover_waiting "$(stat_of /sys/kernel/aipu/stat handover_waiting)"
	echo 1 >"$T/options/funcgraph-irqs"
	echo nop >"$T/current_tracer"
	: >"$T/set_graph_function"
	# "1)  # 1234.567 us  |  look_fn [aipu]();", or a "}" line if the look
	# slept: only look_fn is traced, so every duration is a look's.
	times=$(awk '!/^#/ { for (i = 1; i < NF; i++) if ($(i + 1) == "us") print $i }' "$f")
	n=$(wc -w <<<"$times")
	rec look "$row" 1 looks "$n"
	for t in $times; do rec look "$row" 1 look_us "$t"; done
	rec look "$row" 1 block_devices "$(find /sys/block -mindepth 1 -maxdepth 1 | wc -l)"
	rec look "$row" 1 mounts "$(wc -l </proc/self/mountinfo)"
	exec 7>&-
	sync
	unload_aipu
	echo "guest.sh: look $row: $n looks, $(tr '\n' ' ' <<<"$times")us"
}
look_phase() {
	local T=/sys/kernel/tracing r expire
	if ! mountpoint -q "$T" && ! mount -t tracefs none "$T"; then
		die "no tracefs at $T: the look phase needs function_graph"
	fi
	modprobe loop 2>/dev/null || true
	mkdir -p "$out/look" /tmp/look-img /tmp/look-mnt
	mountpoint -q /tmp/look-img || mount -t tmpfs -o size=2G tmpfs /tmp/look-img
	expire=$(cat /proc/sys/vm/dirty_expire_centisecs)
	for r in ${AIPU_LOOK_ROWS:-1:0 100:0 1000:0 1000:100}; do
		[[ $r =~ ^[1-9][0-9]*:[0-9]+$ ]] || die "AIPU_LOOK_ROWS: '$r' is not L:M (loop devices:mounted)"
		look_row "${r%%:*}" "${r##*:}"
	done
	echo "$expire" >/proc/sys/vm/dirty_expire_centisecs
	umount /tmp/look-mnt/* 2>/dev/null || true
	losetup -D
	umount /tmp/look-img
}

# -------------------------------------------------------------------- main
start=$(date +%s)
if [[ " $phases " == *" calib "* ]]; then
	bin=${AIPU_SCALE_BIN:-}
	if [ -n "$bin" ] && [ -x "$bin" ]; then
		mkdir -p "$out/calib"
		"$bin" --quick --only pages --rounds 3 --out "$out/calib" >"$out/calib/tables.md" 2>&1 ||
			echo "guest.sh: the calibration run failed (see $out/calib/tables.md)"
		echo "guest.sh: calib: $(tail -n 1 "$out/calib/tables.md")"
	else
		echo "guest.sh: no bench/scale binary (AIPU_SCALE_BIN): no calibration"
	fi
fi
if [[ " $phases " == *" random "* ]]; then
	mkdir -p "$out/random"
	warm_random
	for t in $(seq "$trials"); do
		for row in $(order "$t"); do random_trial "$row" "$t"; done
	done
fi
if [[ " $phases " == *" two "* ]]; then
	mkdir -p "$out/two"
	modprobe null_blk nr_devices=0 || die "modprobe null_blk failed"
	modprobe configfs 2>/dev/null || true
	mountpoint -q "$cfs" || mount -t configfs none "$cfs" || die "cannot mount configfs"
	slow=$(nullb_make aipu_slow 50000000 1)
	fast=$(nullb_make aipu_fast 0 64)
	disk_prepare "$slow"
	disk_prepare "$fast"
	# Held open: the last close of a block device writes its dirty pages.
	exec 8<"$slow" 9<"$fast"
	slow_id=$(disk_majmin "$slow")
	echo "two_slow $slow $slow_id 50 ms a request, depth 1, $SLOW_PAGES pages" >>"$out/env.txt"
	echo "two_fast $fast $(disk_majmin "$fast") $FAST_PAGES pages" >>"$out/env.txt"
	for t in $(seq "$trials"); do
		if [ $((t % 2)) -eq 1 ]; then rows="linux aipu"; else rows="aipu linux"; fi
		for row in $rows; do two_trial "$row" "$t"; done
	done
	exec 8<&- 9<&-
	gzip -f "$out"/two/fast-*.txt 2>/dev/null || true
fi
if [[ " $phases " == *" profile "* ]]; then
	mkdir -p "$out/profile" "$out/random"
	for row in none aipu; do
		f=$mnt/rand.dat
		rm -f "$f"
		fallocate -l "${mib}M" "$f"
		before_trial "$row"
		cat "$f" >/dev/null
		perf record -q -e cpu-clock -F 2000 -a -g -o "$TEST_TMP/perf-$row.data" -- \
			"$randwrite" "$f" $((mib * 256)) 1 "profile $row" >"$out/profile/$row.out" 2>&1 ||
			echo "guest.sh: perf record failed ($row)"
		perf report -i "$TEST_TMP/perf-$row.data" --no-children --sort sym --stdio -g none \
			--percent-limit 0.3 2>/dev/null | grep -v '^$' | head -n 80 >"$out/profile/$row.txt" || true
		perf report -i "$TEST_TMP/perf-$row.data" --children --sort sym --stdio -g none \
			--percent-limit 1 2>/dev/null | grep -v '^$' | head -n 80 >"$out/profile/$row-children.txt" || true
		rm -f "$f" "$TEST_TMP/perf-$row.data"
		[ "$row" = none ] || snap_aipu "$out/profile/$row"
		sync
		unload_aipu
		echo "guest.sh: profile $row: $(grep '^writes' "$out/profile/$row.out")"
	done
	fgraph_probe "$out/profile"
fi
if [[ " $phases " == *" look "* ]]; then
	# Its page dirtied before insmod is adopted now (src/handover.c), and
	# the look runs only after a page aipu could not track: timing it
	# needs a forced fallback, which this phase does not make yet.
	[ -n "${AIPU_LOOK_ANYWAY:-}" ] ||
		die "--phases look: the look no longer runs after a page dirtied before insmod (adopted at load); set AIPU_LOOK_ANYWAY=1 to run the phase as it was (it then records 0 looks)"
	look_phase
fi
if [[ " $phases " == *" tree "* ]]; then
	[ -f "$tar_src" ] || die "--tar $tar_src: no such file (bench/scale/guest-run.sh makes it)."
	mkdir -p "$out/tree" /tmp/scale-src
	mountpoint -q /tmp/scale-src || mount -t tmpfs -o size=3G tmpfs /tmp/scale-src
	src=/tmp/scale-src/src.tar
	t0=$(now)
	cp "$tar_src" "$src"
	echo "tar_bytes $(stat -c %s "$src")" >>"$out/env.txt"
	echo "tar_members $(tar -tf "$src" | wc -l)" >>"$out/env.txt"
	echo "guest.sh: copied $tar_src to tmpfs ($(stat -c %s "$src") bytes) in $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s"
	warm_tree
	for t in $(seq "$tree_trials"); do
		for row in $(order "$t"); do tree_trial "$row" "$t"; done
	done
	rm -f "$src"
fi
if mountpoint -q "$mnt"; then
	umount "$mnt"
fi
echo "elapsed_s $(($(date +%s) - start))" >>"$out/env.txt"
dmesg >"$out/dmesg.txt"
bad=$(grep -E "$DMESG_BAD" "$out/dmesg.txt" || true)
if [ -n "$bad" ]; then
	echo "guest.sh: the kernel log has lines the VM tests fail on:"
	echo "$bad" | head -n 20 || true
	finish 1
fi
echo "guest.sh: done in $(($(date +%s) - start)) s"
finish 0
