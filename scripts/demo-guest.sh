#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo's guest half: run inside one VM boot on the demo's disk model
# (scripts/demo.sh boots it: scripts/vm.sh --disk serial:16 (fifo94, the
# default) or --disk fifo:60 (throttle) ... -- scripts/demo-guest.sh).
#
# Makes an ext4 file system on $AIPU_DISK, prepares a write file and a read
# file on it, then for each row runs bench/workload.py (steady random
# 4 KiB buffered writes + closed-loop O_DIRECT reads) and writes
# $AIPU_OUT/<row>.json (':' and ',' in the row become '+') and, from
# blktrace, the write requests dispatched to the disk during the run,
# $AIPU_OUT/<row>.writes.gz (bench/demo_plot.py draws both). Before each
# row it prints a progress line with an estimate of the time left.
# Between runs: sync, drop caches, reload aipu.
#
# A row is POLICY[:KNOB=VALUE[,KNOB=VALUE...]]: POLICY is kernel, pu, aipu
# or stage (aipu.ko loaded with that policy and those module parameters,
# e.g. stage:stage_interval_ms=0 or aipu:write_alloc=purge,pace=1), or none
# (no module at all: Linux's own writeback, for checking the harness).
#
# Linux's own mitigations are switched off so that the disk is a deep FIFO
# queue, as in the 1994 measurements: scheduler none, wbt_lat_usec 0. The
# disk's bdi gets min_ratio 10 so that Linux's per-device background
# threshold does not start writeback after a few hundred dirty pages.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: demo-guest.sh [--rows "kernel pu aipu stage:stage_interval_ms=0 ..."]
                     [--duration SECONDS] [--rate PAGES_PER_S] [--max-age-ms MS]
                     [--pu-interval-ms MS] [--hw-queues N|auto] [--check]
Runs in the guest; with --check it only checks the arguments and exits, and
runs anywhere. A row is POLICY[:KNOB=VALUE[,KNOB=VALUE...]] (POLICY none,
kernel, pu, aipu or stage; KNOB one of aipu's module parameters); --policies
is another name for --rows. Needs AIPU_DISK (the disk to erase, e.g.
/dev/vda), AIPU_OUT (a writable directory for the results) and, unless every
row is "none", AIPU_KO (path to aipu.ko).
EOF
}

die() {
	echo "demo-guest: $*" >&2
	if [ -n "${tee_pid:-}" ]; then
		finish 1
	fi
	exit 1
}

rows="kernel pu aipu"
duration=45
rate=20
max_age_ms=30000
pu_interval_ms=30000
hw_queues=1
check_only=0

while [ $# -gt 0 ]; do
	case "$1" in
	--rows | --policies) [ $# -ge 2 ] || die "$1 needs a list such as \"kernel pu aipu\"."; rows=$2; shift 2 ;;
	--duration) [ $# -ge 2 ] || die "--duration needs a number of seconds."; duration=$2; shift 2 ;;
	--rate) [ $# -ge 2 ] || die "--rate needs a number of pages per second."; rate=$2; shift 2 ;;
	--max-age-ms) [ $# -ge 2 ] || die "--max-age-ms needs a value in ms."; max_age_ms=$2; shift 2 ;;
	--pu-interval-ms) [ $# -ge 2 ] || die "--pu-interval-ms needs a value in ms."; pu_interval_ms=$2; shift 2 ;;
	--hw-queues) [ $# -ge 2 ] || die "--hw-queues needs a number or auto."; hw_queues=$2; shift 2 ;;
	--check) check_only=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument '$1': see the usage above." ;;
	esac
done

for v in duration rate max_age_ms pu_interval_ms; do
	if ! [[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]]; then
		die "--${v//_/-} must be a positive whole number, not '${!v}'."
	fi
done
if [ "$hw_queues" != auto ] && ! [[ $hw_queues =~ ^[1-9][0-9]*$ ]]; then
	die "--hw-queues must be auto (one per CPU, as booted) or a positive number, not '$hw_queues'."
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/guest-lib.sh
. "$here/guest-lib.sh"
rows_check "$rows"
need_ko=$NEED_KO
[ "$check_only" -eq 0 ] || exit 0

[ "$(id -u)" -eq 0 ] || die "must run as root inside the VM (it formats \$AIPU_DISK)."
if [ -z "${AIPU_OUT:-}" ] || [ ! -d "$AIPU_OUT" ] || [ ! -w "$AIPU_OUT" ]; then
	die "AIPU_OUT must name a writable directory (scripts/vm.sh --out sets it)."
fi
if [ -z "${AIPU_DISK:-}" ] || [ ! -b "$AIPU_DISK" ]; then
	die "AIPU_DISK must name the scratch block device (boot with scripts/vm.sh --disk fifo:60)."
fi
if [ "$need_ko" -eq 1 ] && { [ -z "${AIPU_KO:-}" ] || [ ! -f "$AIPU_KO" ]; }; then
	die "AIPU_KO must name aipu.ko for this kernel (run 'make allkernels'), or use --rows none."
fi

workload=$here/../bench/workload.py
[ -f "$workload" ] || die "cannot find bench/workload.py next to scripts/."
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

dev=$(basename "$AIPU_DISK")
sysblk=/sys/block/$dev
[ -d "$sysblk" ] || die "$AIPU_DISK is not a whole disk (no $sysblk): give the disk, not a partition."
mnt=/tmp/aipu-demo
blk=/tmp/aipu-demo-blk

log() { echo "demo-guest: $(date +%T) $*"; }

guest_log_start "$AIPU_OUT/guest.log"

pin_tracepoints

# Request queues: virtio_blk gives the disk one per CPU by default (256 tags
# each). A burst of writes fills one queue's tags, then the other's; QEMU
# serves the writes in the order they reached it, so a read whose CPU's
# queue is full cannot even get a tag until the other queue's writes have
# drained: that is the multi-second stall (seen in the demo's samples: the
# reader's queue stays at 256 busy tags while the other drains, ~4 s). With
# --hw-queues 1 the reader always shares the writes' queue, so a read waits
# for what was queued before it whatever CPUs the reader and the flusher
# run on: one queue (the default) is the demo's model. On the default disk
# model, fifo94 (scripts/demo.sh: nbdkit serves one request at a time in
# arrival order), a read issued during Linux's 30-s burst then waits for
# the ~255 writes queued ahead of it: 4-5 s, the paper's result. On the
# throttle model (demo.sh --disk-model throttle) it gets a tag within a few
# wake-up batches and then alternates with the writes in QEMU's throttle:
# Linux's burst delays reads by about 0.3 s, not 4 s.
#
# The throttle is not a strict FIFO: QEMU keeps reads and writes in
# separate queues, so a read that has a tag waits for about one write, not
# for every write queued before it. Nothing on the guest side makes it
# stricter, and the demo leaves the tags alone (tried on 6.1, one run each,
# rows kernel and aipu):
# - fewer tags (nr_requests, or virtio_blk queue_depth) shortens the queue
#   a read can wait behind, the opposite of a deeper FIFO;
# - more tags than the virtqueue has slots (virtio_blk queue_depth=1024)
#   parks the overflow in blk-mq's software queues, but a read is issued
#   directly whenever a slot is free, ahead of them: Linux's worst read fell
#   to 117 ms. The same with a 4-slot virtqueue and one CPU: 467 ms, and
#   aipu's worst read rose to 301 ms (its flusher and the reader then share
#   the only CPU).
# A strict FIFO needs a device outside the guest that serves requests one
# at a time in arrival order: nbdkit with one thread (fifo94).
#
# virtio_blk is a module in Debian's kernels and the guest's root is not on
# it, so it can be reloaded here.
# (guest-lib.sh, disk_queues, reloads virtio_blk to change them.)
disk_queues "$AIPU_DISK" "$hw_queues"
nq=$NQ

# The disk as a FIFO queue, and a reserved share of the background threshold.
disk_model "$AIPU_DISK" none 0

# lazy_*_init=0: no ext4lazyinit thread writing in the background later.
log "formatting $AIPU_DISK"
mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$AIPU_DISK"
mkdir -p "$mnt"
mount -o noatime,lazytime "$AIPU_DISK" "$mnt"
cleanup() {
	umount "$mnt" 2>/dev/null || true
	dmesg >"$AIPU_OUT/dmesg.txt" 2>/dev/null || true
}
trap cleanup EXIT
log "preparing files"
"$py" "$workload" prepare --dir "$mnt" --write-mib 32 --read-mib 64

{
	echo "kernel $(uname -r)"
	echo "scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "$sysblk/queue/scheduler")"
	echo "hw_queues $nq"
	echo "hw_queues_asked $hw_queues"
	echo "nr_requests $(cat "$sysblk/queue/nr_requests")"
	echo "wbt_lat_usec $(cat "$sysblk/queue/wbt_lat_usec" 2>/dev/null || echo n/a)"
	echo "min_ratio $(cat "$sysblk/bdi/min_ratio")"
	for s in dirty_background_ratio dirty_ratio dirty_expire_centisecs dirty_writeback_centisecs; do
		echo "$s $(cat "/proc/sys/vm/$s")"
	done
	echo "mem_total_kb $(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
	echo "rows $rows"
	echo "duration_s $duration"
	echo "rate_per_s $rate"
	echo "max_age_ms $max_age_ms"
	echo "pu_interval_ms $pu_interval_ms"
} >"$AIPU_OUT/env.txt"

# progress I N ROW: the line before row I of N, with the time left: the
# rows so far took what they took; a row not yet run is guessed at the
# run's length plus 25 s (the sync that follows it, the reload, Python's
# start under TCG: 20-30 s measured) until one has run.
nrows=$(wc -w <<<"$rows")
t_rows=$SECONDS
progress() {
	local i=$1 n=$2 each left
	if [ "$i" -gt 1 ]; then
		each=$(((SECONDS - t_rows) / (i - 1)))
	else
		each=$((duration + 25))
	fi
	left=$(((n - i + 1) * each))
	printf 'demo: row %d of %d: %s (%d s); about %d min %02d s left\n' \
		"$i" "$n" "$3" "$duration" $((left / 60)) $((left % 60))
}

status=0
i=0
for row in $rows; do
	t_row=$SECONDS
	i=$((i + 1))
	progress "$i" "$nrows" "$row"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	row_unload
	# Loaded with policy kernel, switched at the run's start: guest-lib.sh,
	# row_load, says why.
	if ! row_load "$row" "$max_age_ms" "$pu_interval_ms"; then
		echo "demo-guest: row $row: insmod failed (dmesg in $AIPU_OUT/dmesg.txt)" >&2
		status=1
		continue
	fi
	mapfile -t extra < <(row_attach)
	[ -z "$ROW_START" ] || extra+=(--start-cmd "$ROW_START")
	sleep 2
	log "row $row: ${duration} s, $rate pages/s"
	blk_start "$AIPU_DISK" "$blk"
	if ! "$py" "$workload" run --label "$row" \
		--write-file "$mnt/write.dat" --read-file "$mnt/read.dat" \
		--out "$AIPU_OUT/${row//[:,]/+}.json" --rate "$rate" --duration "$duration" \
		--disk "$dev" --marker "$AIPU_DISK" --sync-after "${extra[@]}"; then
		echo "demo-guest: row $row: the workload failed (see above; dmesg in $AIPU_OUT/dmesg.txt)" >&2
		status=1
	fi
	blk_stop "$AIPU_DISK" "$blk" D "$AIPU_OUT/${row//[:,]/+}.writes.gz"
	row_unload
	log "row $row: $((SECONDS - t_row)) s with the syncs and the reload"
done

umount "$mnt"
trap - EXIT
cleanup
if ! dmesg_check "$AIPU_OUT/dmesg.txt"; then
	echo "demo-guest: the kernel log has the lines above: see $AIPU_OUT/dmesg.txt" >&2
	status=1
fi
log "done"
finish "$status"
