#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark suite's guest half: one device model, one VM boot
# (scripts/bench.sh boots it: scripts/vm.sh --disk fifo:IOPS:BPS -- this).
# With --host it runs on the machine itself, against a real disk
# (scripts/bench.sh --host, which checks the disk first): it then leaves
# the kernel's hooks alone (scripts/hold-hooks.sh is for QEMU's TCG only),
# keeps the disk's request queues, and puts back the disk's scheduler, wbt,
# bdi min_ratio and dirty_expire_centisecs when it ends.
#
# Sets the disk up as the model says (scheduler, writeback throttling,
# request queues), makes ext4 on $AIPU_DISK, measures the device's service
# time (one I/O at a time), then runs every workload x trial x row and
# writes $AIPU_OUT/<workload>/<row>/trial<N>.json (':' and ',' in a row
# become '+'), with the disk's queued writes from blktrace beside it
# (trial<N>.writes.gz: "t_s sector sectors command" a line), and
# $AIPU_OUT/env.txt, probe.json, dmesg.txt, guest.log.
#
# Workloads (bench/README.md): random (steady writes + O_DIRECT random
# reader, the paper's §4.1), bursty (the same writes, a burst every
# --burst-every seconds, §5), rewrite (writes with locality, §4.3), db
# (SQLite TPC-B-like, standing in for the kernel build of Tables 4-5),
# overhead (fio sequential buffered write and a small-file loop).
# Rows are as in the demo: POLICY[:KNOB=VALUE[,KNOB=VALUE...]].
# Between cells: sync, drop caches, reload aipu. Order: for each workload,
# for each trial, every row, so that drift in the host's speed spreads
# over the rows alike.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench-guest.sh --model NAME [--scheduler none|keep] [--wbt 0|default]
           [--hw-queues 1|auto|keep] [--host]
           [--workloads "random bursty rewrite db overhead"]
           [--rows "kernel pu aipu ..."] [--overhead-rows "none kernel aipu"]
           [--trials 6] [--trials-other 2] [--first-trial 1]
           [--duration 45] [--rate 20|auto]
           [--max-age-ms 30000] [--pu-interval-ms 30000] [--burst-every 30]
           [--db-seconds 60] [--probe-seconds 5] [--check]
Runs in the guest (needs AIPU_DISK, AIPU_OUT, AIPU_KO); with --check it
only checks its arguments, anywhere. --trials is for random, --trials-other
for the other workloads; --first-trial numbers random's trials from N (to
add trials to the cells of an earlier boot). --probe-seconds: how long the service time is
measured (reads, then as long writes). --max-age-ms also sets Linux's
dirty_expire_centisecs, so that scaled-down runs scale every policy alike.
--rate auto: the writes keep the disk about a third busy (the paper's
load): 1000 / (3 x the probe's mean write time in ms) pages a second, at
most 1000. --scheduler keep and --wbt default leave the disk's own.
EOF
}

die() {
	echo "bench-guest: $*" >&2
	if [ -n "${tee_pid:-}" ]; then
		finish 1
	fi
	exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/guest-lib.sh
. "$here/guest-lib.sh"

model=""
scheduler=none
wbt=0
hw_queues=1
workloads="random bursty rewrite db overhead"
rows="kernel pu aipu"
overhead_rows="none kernel aipu"
trials=6
first_trial=1
trials_other=2
duration=45
rate=20
max_age_ms=30000
pu_interval_ms=30000
burst_every=30
db_seconds=60
probe_seconds=5
check_only=0
host=0

need() {
	[ $# -ge 2 ] || die "$1 needs a value: see --help."
}
while [ $# -gt 0 ]; do
	case "$1" in
	--model) need "$@"; model=$2; shift 2 ;;
	--scheduler) need "$@"; scheduler=$2; shift 2 ;;
	--wbt) need "$@"; wbt=$2; shift 2 ;;
	--hw-queues) need "$@"; hw_queues=$2; shift 2 ;;
	--workloads) need "$@"; workloads=$2; shift 2 ;;
	--rows) need "$@"; rows=$2; shift 2 ;;
	--overhead-rows) need "$@"; overhead_rows=$2; shift 2 ;;
	--trials) need "$@"; trials=$2; shift 2 ;;
	--trials-other) need "$@"; trials_other=$2; shift 2 ;;
	--first-trial) need "$@"; first_trial=$2; shift 2 ;;
	--duration) need "$@"; duration=$2; shift 2 ;;
	--rate) need "$@"; rate=$2; shift 2 ;;
	--max-age-ms) need "$@"; max_age_ms=$2; shift 2 ;;
	--pu-interval-ms) need "$@"; pu_interval_ms=$2; shift 2 ;;
	--burst-every) need "$@"; burst_every=$2; shift 2 ;;
	--db-seconds) need "$@"; db_seconds=$2; shift 2 ;;
	--probe-seconds) need "$@"; probe_seconds=$2; shift 2 ;;
	--check) check_only=1; shift ;;
	--host) host=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument '$1': see the usage above." ;;
	esac
done

[[ $model =~ ^[a-z0-9_]+$ ]] || die "--model must name the model in lower-case letters and digits (e.g. fifo94), not '$model'."
auto_rate=0
if [ "$rate" = auto ]; then
	auto_rate=1
	rate=20 # until the probe has measured the disk
fi
for v in trials trials_other first_trial duration rate max_age_ms pu_interval_ms burst_every db_seconds probe_seconds; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "--${v//_/-} must be a positive whole number, not '${!v}'."
done
[[ $scheduler =~ ^(none|mq-deadline|bfq|kyber|keep)$ ]] || die "--scheduler must be none, mq-deadline, bfq, kyber or keep, not '$scheduler'."
[[ $wbt == default || $wbt =~ ^[0-9]+$ ]] || die "--wbt must be default or a latency in microseconds (0: off), not '$wbt'."
[[ $hw_queues == auto || $hw_queues == keep || $hw_queues =~ ^[1-9][0-9]*$ ]] || die "--hw-queues must be auto, keep or a positive number, not '$hw_queues'."
[ "$burst_every" -ge 2 ] || die "--burst-every must be at least 2 seconds (a burst lasts one)."
for w in $workloads; do
	case "$w" in random | bursty | rewrite | db | overhead) ;;
	*) die "unknown workload '$w': use random, bursty, rewrite, db or overhead." ;;
	esac
done
[ -n "${workloads// /}" ] || die "--workloads is empty."
rows_check "$overhead_rows"
need_ko=$NEED_KO
rows_check "$rows"
[ "$NEED_KO" -eq 0 ] || need_ko=1
[ "$check_only" -eq 0 ] || exit 0

[ "$(id -u)" -eq 0 ] || die "must run as root (it formats \$AIPU_DISK)."
if [ -z "${AIPU_OUT:-}" ] || [ ! -d "$AIPU_OUT" ] || [ ! -w "$AIPU_OUT" ]; then
	die "AIPU_OUT must name a writable directory (scripts/vm.sh --out sets it)."
fi
if [ -z "${AIPU_DISK:-}" ] || [ ! -b "$AIPU_DISK" ]; then
	die "AIPU_DISK must name the scratch block device (boot with scripts/vm.sh --disk fifo:IOPS)."
fi
if [ "$need_ko" -eq 1 ] && { [ -z "${AIPU_KO:-}" ] || [ ! -f "$AIPU_KO" ]; }; then
	die "AIPU_KO must name aipu.ko for this kernel (run 'make allkernels')."
fi
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
workload=$here/../bench/workload.py
apps=$here/../bench/apps.py
dev=$(basename "$AIPU_DISK")
sysblk=/sys/block/$dev
mnt=/tmp/aipu-bench
blk=/tmp/aipu-bench-blk
saved=/tmp/aipu-bench-settings.sh
if [ "$host" -eq 1 ]; then
	# A real machine's /tmp may hold anything: names of our own.
	work=$(mktemp -d /tmp/aipu-bench.XXXXXX)
	mnt=$work/mnt blk=$work/blk saved=$work/settings.sh
fi
# The kernel log from here on is what the run is judged by (on a real
# machine, lines logged before the benchmark are not its business).
log_since=$(cut -d' ' -f1 /proc/uptime)

log() { echo "bench-guest: $(date +%T) $*"; }

guest_log_start "$AIPU_OUT/guest.log"

[ "$host" -eq 1 ] || pin_tracepoints
disk_queues "$AIPU_DISK" "$hw_queues"
disk_settings_save "$AIPU_DISK" "$saved"
cleanup() {
	row_unload 2>/dev/null || true
	umount "$mnt" 2>/dev/null || true
	disk_settings_restore "$saved"
	# In a VM the whole boot; on a real machine what the kernel logged
	# during the run (every line if it logs without time stamps).
	dmesg 2>/dev/null | awk -v t="$log_since" -v host="$host" '
		BEGIN { keep = -1 }
		host && match($0, /^\[ *[0-9]+\.[0-9]+\]/) { keep = substr($0, 2, RLENGTH - 2) + 0 >= t }
		!host || keep' >"$AIPU_OUT/dmesg.txt" || true
	if [ "$host" -eq 1 ] && ! mountpoint -q "$mnt"; then
		rm -rf "$work"
	fi
}
trap cleanup EXIT
disk_model "$AIPU_DISK" "$scheduler" "$wbt"
echo $((max_age_ms / 10)) >/proc/sys/vm/dirty_expire_centisecs

# write_mib RATE: the write file holds twice the pages a run dirties (they
# are non-adjacent), with a margin; at least 32 MiB as in the demo.
write_mib() {
	local m=$((($1 * duration * 2 * 4096 * 5 / 4 >> 20) + 1))
	[ "$m" -ge 32 ] || m=32
	echo "$m"
}
write_mib=$(write_mib "$rate")
log "formatting $AIPU_DISK"
mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$AIPU_DISK"
mkdir -p "$mnt"
mount -o noatime,lazytime "$AIPU_DISK" "$mnt"
"$py" "$workload" prepare --dir "$mnt" --write-mib "$write_mib" --read-mib 64
"$py" "$workload" probe --write-file "$mnt/write.dat" --read-file "$mnt/read.dat" \
	--out "$AIPU_OUT/probe.json" --seconds "$probe_seconds"
if [ "$auto_rate" -eq 1 ]; then
	rate=$("$py" -c 'import json, sys
w = json.load(open(sys.argv[1]))["write"]["mean_ms"]
print(max(1, min(1000, round(1000 / (3 * w)))) if w > 0 else 1000)' "$AIPU_OUT/probe.json")
	log "rate: $rate pages/s (a third of the disk's time at the probe's write service time)"
	if [ "$(write_mib "$rate")" -gt "$write_mib" ]; then
		write_mib=$(write_mib "$rate")
		"$py" "$workload" prepare --dir "$mnt" --write-mib "$write_mib" --read-mib 64
	fi
fi

{
	echo "model $model"
	echo "kernel $(uname -r)"
	echo "scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "$sysblk/queue/scheduler")"
	echo "wbt_lat_usec $(cat "$sysblk/queue/wbt_lat_usec" 2>/dev/null || echo n/a)"
	echo "hw_queues $NQ"
	echo "nr_requests $(cat "$sysblk/queue/nr_requests")"
	echo "rotational $(cat "$sysblk/queue/rotational")"
	echo "min_ratio $(cat "$sysblk/bdi/min_ratio")"
	for s in dirty_background_ratio dirty_ratio dirty_expire_centisecs dirty_writeback_centisecs; do
		echo "$s $(cat "/proc/sys/vm/$s")"
	done
	echo "mem_total_kb $(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
	echo "cpus $(nproc)"
	echo "rows $rows"
	echo "overhead_rows $overhead_rows"
	echo "workloads $workloads"
	echo "trials $trials"
	echo "first_trial $first_trial"
	echo "trials_other $trials_other"
	echo "duration_s $duration"
	echo "rate_per_s $rate"
	echo "rate_auto $auto_rate"
	echo "host_mode $host"
	echo "max_age_ms $max_age_ms"
	echo "pu_interval_ms $pu_interval_ms"
	echo "burst_every_s $burst_every"
	echo "db_seconds $db_seconds"
	echo "probe_seconds $probe_seconds"
	echo "write_file_mib $write_mib"
	echo "python $("$py" -V 2>&1)"
	echo "fio $(fio --version 2>/dev/null || echo none)"
	echo "sqlite $("$py" -c 'import sqlite3; print(sqlite3.sqlite_version)')"
} >>"$AIPU_OUT/env.txt"

# The disk's queued writes during each run, and the workload's marker
# reads: guest-lib.sh, blk_start and blk_stop.

# run_cell WORKLOAD ROW TRIAL: one measurement.
run_cell() {
	local w=$1 row=$2 n=$3 dir out extra=() start
	dir=$AIPU_OUT/$w/$(row_file "$row")
	out=$dir/trial$n.json
	mkdir -p "$dir"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	row_unload
	if ! row_load "$row" "$max_age_ms" "$pu_interval_ms"; then
		echo "bench-guest: $w $row trial $n: insmod failed (dmesg in $AIPU_OUT/dmesg.txt)" >&2
		return 1
	fi
	start=${ROW_START:-true}
	mapfile -t extra < <(row_attach)
	extra+=(--label "$row")
	[ "$w" = overhead ] || extra+=(--disk "$dev" --marker "$AIPU_DISK")
	# insmod patched kernel text; let the kprobe optimizer's second patch
	# (tens of ms later) pass before the clock starts.
	sleep 1
	log "$w trial $n: $row"
	[ "$w" = overhead ] || blk_start "$AIPU_DISK" "$blk"
	local rc=0
	case "$w" in
	random | bursty | rewrite)
		local pattern=steady
		[ "$w" = bursty ] && pattern=burst
		[ "$w" = rewrite ] && pattern=rewrite
		"$py" "$workload" run --write-file "$mnt/write.dat" --read-file "$mnt/read.dat" \
			--out "$out" --rate "$rate" --duration "$duration" --pattern "$pattern" \
			--burst-every "$burst_every" --seed "$n" --sync-after --start-cmd "$start" \
			--snapshot-at $((max_age_ms / 1000)) \
			"${extra[@]}" || rc=$?
		;;
	db)
		"$py" "$apps" db --db "$mnt/db.sqlite" --seconds "$db_seconds" \
			--out "$out" --seed "$n" --start-cmd "$start" "${extra[@]}" || rc=$?
		;;
	overhead)
		bash -c "$start" || rc=$?
		fio --name=seqwrite --filename="$mnt/seq.dat" --rw=write --bs=1M --size=128M \
			--ioengine=psync --output-format=json --output="$dir/trial$n.fio.json" >/dev/null || rc=$?
		rm -f "$mnt/seq.dat"
		mkdir -p "$mnt/files"
		"$py" "$apps" files --dir "$mnt/files" --seconds 15 --out "$out" "${extra[@]}" || rc=$?
		;;
	esac
	[ "$w" = overhead ] || blk_stop "$AIPU_DISK" "$blk" Q "$dir/trial$n.writes.gz"
	row_unload
	[ "$rc" -eq 0 ] || echo "bench-guest: $w $row trial $n failed (status $rc)" >&2
	return "$rc"
}

status=0
for w in $workloads; do
	first=1 n_trials=$trials_other
	[ "$w" = random ] && first=$first_trial n_trials=$trials
	w_rows=$rows
	[ "$w" = overhead ] && w_rows=$overhead_rows
	if [ "$w" = db ]; then
		"$py" "$apps" db-prepare --db "$mnt/db.sqlite"
	fi
	for n in $(seq "$first" $((first + n_trials - 1))); do
		for row in $w_rows; do
			run_cell "$w" "$row" "$n" || status=1
		done
	done
done

umount "$mnt"
trap - EXIT
cleanup
if ! dmesg_check "$AIPU_OUT/dmesg.txt"; then
	echo "bench-guest: the kernel log has the lines above: see $AIPU_OUT/dmesg.txt" >&2
	status=1
fi
log "done"
finish "$status"
