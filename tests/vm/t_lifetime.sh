#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Lifetime: files unlinked and truncated, file systems unmounted and the
# module removed while aipu tracks their dirty pages and its flusher runs,
# on ext4, ext2, xfs and the raw block device. The kernel log must stay
# clean and no byte may be lost.
#
# aipu runs with policy=aipu max_age_ms=1500 period_ms=300 handover_ms=0, so
# the flusher writes something every few passes. tests/vm/lifeio.py makes
# every change (buffered writes, random and sequential, partial pages, mmap
# writes, appends, truncates, unlinks) to the real file and, right after, to
# a shadow copy on tmpfs, which neither Linux's writeback nor aipu sees; the
# real copy must end up exactly the shadow (sha256 of every file, after a
# remount or an O_DIRECT read, so from the disk, not the page cache).
#
# For each file system, on the test disk (each step asserts pages were
# tracked at that moment, read from aipu's stat by the same process that
# dirtied them):
#   A. create files; a background writer starts; the flusher runs and
#      writes (flusher_runs, pages_written grow).
#   B. with young dirty pages in them: unlink a file, shrink one below its
#      dirty pages, extend one, shrink to a partial page and append, rewrite
#      one, write one through mmap, create and unlink a file before any
#      writeback, truncate one to 0 and refill it (sizes checked). Then
#      twice more with new files, 1.4 s and 1.6 s after dirtying them (about
#      due and due with max_age 1.5 s: the flusher may be writing them):
#      unlink one, truncate one, rewrite one.
#   C. twice: rmmod with pages tracked and the writer running (rmmod
#      returns 0, vm.dirty_writeback_centisecs back to its value before
#      load), pages dirtied while aipu is gone, insmod (periodic writeback
#      off at once), pages dirtied and tracked. Then aipu writes.
#   D. writer stopped; three times: dirty pages, wait 0, 1.4 or 1.6 s, dirty
#      a few more, umount at once (pages tracked): umount returns, aipu's
#      pages, runs and mappings drain to 0, and after a remount every file
#      matches its shadow.
#   E. more changes with the writer running; sync, drop caches, entries
#      drain to 0, umount, remount, every file matches; rmmod.
# Raw device: buffered writes of random data to two regions of the device
# (one by a background writer holding it open), twice rmmod (pages due) and
# insmod with the writer running and pages dirtied in between, sync, then
# O_DIRECT reads of both regions match their shadows; entries drain to 0.
#
# After every phase the kernel log is checked (as run-guest.sh does at the
# end) so that a failure names the phase that caused it.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

MAX_AGE=1500
PERIOD=300
PARAMS=(policy=aipu "max_age_ms=$MAX_AGE" "period_ms=$PERIOD" handover_ms=0)
# Long enough for every page dirtied before it to be due and written:
# max_age + 2 periods.
SETTLE=$(awk -v a="$MAX_AGE" -v p="$PERIOD" 'BEGIN { printf "%.1f\n", (a + 2 * p) / 1000 }')
# How long aipu may take to drop the entries of pages that became clean:
# max_age + one period, + 2 s of TCG slack.
DRAIN_MS=$((MAX_AGE + PERIOD + 2000))
KUP=/proc/sys/vm/dirty_writeback_centisecs
# AIPU_LIFETIME_FS: the file systems. An entry FS@PREFIX runs FS only on
# kernels whose release starts with PREFIX: make check gives
# "ext4@6.1. xfs@6.12." (each kernel one journalled file system and the raw
# device, to save time; make vmtest runs all three on every kernel).
FILESYSTEMS=""
for fs in ${AIPU_LIFETIME_FS:-ext4 ext2 xfs}; do
	case "$fs" in
	*@*) if [[ $(uname -r) == "${fs#*@}"* ]]; then FILESYSTEMS+=" ${fs%%@*}"; fi ;;
	*) FILESYSTEMS+=" $fs" ;;
	esac
done
log "file systems on $(uname -r):${FILESYSTEMS:- none (AIPU_LIFETIME_FS names none for this kernel)}, and the raw device"
# Seconds between dirtying pages and acting on them (unlink, rmmod, umount):
# young, about due, due (the flusher may be writing them).
RACE_DELAYS=(0 1.4 1.6)

wb0=$(<"$KUP")
log "vm.dirty_writeback_centisecs before load: $wb0"
# Put it back whatever happens (runs after the unloads registered later).
on_exit "echo $wb0 >$KUP"

t_start=${EPOCHREALTIME/./}
t_start=$((t_start / 1000))
dev=$(disk_get)
disk_prepare "$dev"
SH=$TEST_TMP/shadow
WLOG=$TEST_TMP/writer.log
WPID=""

lifeio() { python3 "$TESTS_DIR/lifeio.py" "$@"; }

# st KEY: a stat counter, read without forking ("?" if aipu is gone). The
# file is read whole into an array first: a line-by-line read of a sysfs
# file reads a piece, seeks back and reads again, and each read makes the
# text anew, so a counter that grew a digit in between shifted the lines
# and a key was read cut ('?' where flusher_runs was, on 6.12).
st() {
	local line lines=()
	if [ -r "$AIPU_SYSFS/stat" ]; then
		mapfile -t lines <"$AIPU_SYSFS/stat" 2>/dev/null || lines=()
	fi
	for line in "${lines[@]}"; do
		if [ "${line%% *}" = "$1" ]; then
			echo "${line#* }"
			return 0
		fi
	done
	echo "?"
}
phase() { log "--- $1 at $(($(now_ms) - t_start)) ms"; }
now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}
# field OUTPUT LABEL KEY: KEY's value on the "LABEL k=v ..." line of lifeio's output.
field() {
	sed -n "s/^$2 .*\\b$3=\\([^ ]*\\).*/\\1/p" <<<"$1" | tail -n 1
}
dmesg_clean() { # WHAT
	local bad
	bad=$(dmesg | grep -E "$DMESG_BAD" || true)
	if [ -z "$bad" ]; then pass "kernel log clean $1"; else
		fail "kernel log $1: $(head -n 5 <<<"$bad" | tr '\n' '|')"
	fi
}

_registered=""
# load: insmod without the sync aipu_load does (pages dirtied while aipu was
# gone stay dirty); periodic writeback must be off at once (handover_ms=0).
load() {
	insmod "$AIPU_KO" "${PARAMS[@]}" || die "insmod aipu.ko ${PARAMS[*]} failed"
	[ -n "$_registered" ] || on_exit aipu_unload
	_registered=1
	assert_eq "1 0" "$(st kupdate_off) $(<"$KUP")" \
		"$1: after insmod kupdate_off is 1 and dirty_writeback_centisecs 0"
}
# unload WHAT: rmmod must return (within 60 s) and give Linux its periodic
# writeback back.
unload() {
	local t0 rc=0
	t0=$(now_ms)
	timeout "$AIPU_RMMOD_TIMEOUT" rmmod aipu || rc=$?
	assert_eq 0 "$rc" "$1: rmmod returned 0 (after $(($(now_ms) - t0)) ms)"
	if aipu_loaded; then die "$1: aipu still loaded"; fi
	assert_eq "$wb0" "$(<"$KUP")" "$1: dirty_writeback_centisecs back to $wb0 after rmmod"
}

writer_start() { # REAL_DIR SHADOW_DIR NAME...
	# Not through the lifeio function: $! must be python's pid.
	python3 "$TESTS_DIR/lifeio.py" writer "$@" >"$WLOG" 2>&1 &
	WPID=$!
	# Each time: it must run before the umount fs_make registered.
	on_exit writer_kill
	# Until its SIGTERM handler is set, a stop would kill it (exit 143):
	# Python starts slowly in a guest on a busy host.
	wait_until 60 grep -q '^writer: ready$' "$WLOG" ||
		die "the writer did not start within 60 s: $(tr '\n' '|' <"$WLOG")"
	assert_ok "writer started (pid $WPID)" kill -0 "$WPID"
}
writer_kill() {
	[ -n "$WPID" ] || return 0
	kill -TERM "$WPID" 2>/dev/null || true
	wait "$WPID" 2>/dev/null || true
	WPID=""
}
writer_stop() { # WHAT
	local rc=0 ops
	kill -TERM "$WPID" 2>/dev/null || true
	wait "$WPID" || rc=$?
	WPID=""
	ops=$(sed -n 's/^writer: \([0-9]*\) operations$/\1/p' "$WLOG")
	if [ "$rc" -eq 0 ] && [ "${ops:-0}" -gt 0 ]; then
		pass "$1: the writer ran without an I/O error ($ops operations)"
	else
		fail "$1: writer exited $rc: $(tr '\n' '|' <"$WLOG")"
	fi
}

# tracked OUTPUT LABEL WHAT: pages_tracked was > 0 at lifeio's stat:LABEL.
tracked() {
	local n
	n=$(field "$1" "$2" pages_tracked)
	assert_gt "${n:-none}" 0 "$3: pages tracked (stat at that moment)"
}
# progress WHAT WRITTEN0 RUNS0: the flusher ran and wrote since then. Called
# SETTLE after the pages were dirtied, when they are normally written; this
# test is about lifetime, not timing (t_age_bound checks the bound), so a
# pass slowed down under TCG gets up to PROGRESS_MS more, and the wait is
# logged. CI once saw no page of the raw device written 2.1 s after the
# writes (23 passes, 936 pages tracked); the state is dumped when it fails.
PROGRESS_MS=8000
progress() {
	local t0 w r
	t0=$(now_ms)
	while :; do
		r=$(st flusher_runs) w=$(st pages_written)
		[[ $r =~ ^[0-9]+$ && $w =~ ^[0-9]+$ ]] || break
		[ "$r" -gt "$3" ] && [ "$w" -gt "$2" ] && break
		[ $(($(now_ms) - t0)) -lt "$PROGRESS_MS" ] || break
		sleep 0.2
	done
	[ $(($(now_ms) - t0)) -lt 300 ] || log "$1: waited $(($(now_ms) - t0)) ms more for the flusher's progress"
	if ! [[ $w =~ ^[0-9]+$ && $w -gt $2 ]]; then
		aipu_dump
		grep -E '^(Dirty|Writeback):' /proc/meminfo | sed 's/^/# /'
	fi
	assert_gt "$r" "$3" "$1: the flusher ran"
	assert_gt "$w" "$2" "$1: aipu wrote pages"
}
# drained WHAT: with nothing dirty left, aipu's entries go within DRAIN_MS.
drained() {
	local t0 p m r
	t0=$(now_ms)
	while :; do
		p=$(st pages_tracked) m=$(st mappings_tracked) r=$(st runs_tracked)
		[ "$p $m $r" = "0 0 0" ] && break
		[ $(($(now_ms) - t0)) -lt "$DRAIN_MS" ] || break
		sleep 0.1
	done
	assert_eq "0 0 0" "$p $m $r" \
		"$1: pages, mappings, runs tracked drain to 0 within ${DRAIN_MS} ms (took $(($(now_ms) - t0)) ms)"
}
size_is() { # FILE BYTES WHAT
	assert_eq "$2" "$(stat -c %s "$1" 2>&1)" "$3"
}

fs_case() {
	local fs=$1 mnt=$AIPU_MNT real=$AIPU_MNT/data sh=$SH/$1 out w0 r0 t0 i d
	phase "===== $fs"
	rm -rf "$sh"
	mkdir -p "$sh"
	fs_make "$fs" "$dev"
	mkdir "$real"
	sync
	load "$fs"

	# A. Files, sequential and sparse; a writer; the flusher writes.
	phase "$fs A"
	out=$(lifeio apply "$real" "$sh" create:f0:256 create:f1:256 sparse:f2:512:64 \
		create:f3:128 sparse:f4:256:100 create:f5:64 create:f6:300 sparse:f7:1024:50 \
		create:w0:64 create:w1:64 create:w2:64 stat:A)
	tracked "$out" A "$fs A: files created"
	writer_start "$real" "$sh" w0 w1 w2
	sleep "$SETTLE"
	progress "$fs A: files created" 0 0
	dmesg_clean "after $fs A (files created)"

	# B. Unlink, truncate, rewrite files with young dirty pages.
	phase "$fs B"
	w0=$(st pages_written) r0=$(st flusher_runs)
	out=$(lifeio apply "$real" "$sh" pages:f0:32 stat:B0 unlink:f0 \
		pages:f1:32 trunc:f1:300001 pages:f2:16 trunc:f2:4000000 rand:f2:8 \
		rand:f3:20 trunc:f3:5000 append:f3:4 rewrite:f4 mmap:f5:16 \
		create:tmp:128 unlink:tmp pages:f6:40 trunc:f6:0 append:f6:8 \
		create:f8:32 stat:B1)
	tracked "$out" B0 "$fs B: before unlink/truncate/rewrite"
	tracked "$out" B1 "$fs B: after unlink/truncate/rewrite"
	assert_fails "$fs B: f0 is gone" test -e "$real/f0"
	size_is "$real/f1" 300001 "$fs B: f1 shrunk to 300001 bytes"
	size_is "$real/f2" 4000000 "$fs B: f2 extended to 4000000 bytes"
	size_is "$real/f3" $((6 * 4096)) "$fs B: f3 shrunk to 5000 bytes and 4 pages appended"
	size_is "$real/f6" $((8 * 4096)) "$fs B: f6 truncated to 0 and refilled"
	# The same when the pages are about due or due, so the flusher may be
	# writing them.
	for i in 1 2; do
		d=${RACE_DELAYS[$i]}
		out=$(lifeio apply "$real" "$sh" "create:g${i}a:256" "create:g${i}b:256" \
			"create:g${i}c:64" "sleep:$d" "stat:B2$i" "unlink:g${i}a" "trunc:g${i}b:100000" \
			"rewrite:g${i}c")
		tracked "$out" "B2$i" "$fs B: unlink/truncate/rewrite ${d}s after dirtying"
	done
	sleep "$SETTLE"
	progress "$fs B: unlink/truncate/rewrite" "$w0" "$r0"
	dmesg_clean "after $fs B (unlink, truncate, rewrite)"

	# C. rmmod with pages tracked and the writer running; insmod again;
	#    twice (the writer keeps pages of every age, so some are due and
	#    the flusher may be writing them).
	phase "$fs C"
	for i in 1 2; do
		out=$(lifeio apply "$real" "$sh" pages:f1:16 pages:f6:4 rand:f8:10 "stat:C$i")
		tracked "$out" "C$i" "$fs C$i: just before rmmod"
		assert_ok "$fs C$i: the writer is running at rmmod" kill -0 "$WPID"
		unload "$fs C$i: rmmod, writer running"
		lifeio apply "$real" "$sh" pages:f2:20 rand:f7:20
		load "$fs C$i: reload"
		out=$(lifeio apply "$real" "$sh" rand:f4:30 "trunc:f7:$((2000000 + i))" pages:f7:20 \
			"stat:C${i}r")
		tracked "$out" "C${i}r" "$fs C$i: after reload"
		sleep "${RACE_DELAYS[$i]}"
	done
	sleep "$SETTLE"
	progress "$fs C: after reload" 0 0
	dmesg_clean "after $fs C (rmmod with pages tracked, reload)"

	# D. umount with pages tracked; remount; every file intact. Three
	#    times: with young pages only, then also with pages due.
	phase "$fs D"
	writer_stop "$fs D"
	for i in 1 2 3; do
		out=$(lifeio apply "$real" "$sh" pages:f2:64 pages:f7:64 rand:f3:5 mmap:f5:8 \
			append:f8:4 pages:w0:10 "sleep:${RACE_DELAYS[$((i - 1))]}" pages:f6:8 rand:w1:4 \
			"stat:D$i")
		tracked "$out" "D$i" "$fs D$i: just before umount"
		t0=$(now_ms)
		assert_ok "$fs D$i: umount with pages tracked" timeout 120 umount "$mnt"
		log "umount took $(($(now_ms) - t0)) ms"
		drained "$fs D$i: after umount"
		assert_ok "$fs D$i: remount" mount -t "$fs" "$dev" "$mnt"
		mountpoint -q "$mnt" || die "$fs D$i: $mnt is not mounted"
		shadow_verify "$fs D$i: after umount with pages tracked and remount" "$real" "$sh"
	done
	dmesg_clean "after $fs D (umount, remount)"

	# E. More changes with the writer; sync, drop caches, umount, remount.
	phase "$fs E"
	writer_start "$real" "$sh" w0 w1 w2
	w0=$(st pages_written) r0=$(st flusher_runs)
	out=$(lifeio apply "$real" "$sh" create:f9:200 pages:f9:30 unlink:f1 rand:f2:50 \
		trunc:f2:123457 rewrite:f8 pages:f7:64 stat:E0)
	tracked "$out" E0 "$fs E: changes after remount"
	sleep "$SETTLE"
	progress "$fs E: after remount" "$w0" "$r0"
	writer_stop "$fs E"
	assert_ok "$fs E: sync" sync
	echo 3 >/proc/sys/vm/drop_caches
	drained "$fs E: after sync and drop_caches"
	assert_ok "$fs E: umount" timeout 120 umount "$mnt"
	assert_ok "$fs E: remount" mount -t "$fs" "$dev" "$mnt"
	mountpoint -q "$mnt" || die "$fs E: $mnt is not mounted"
	shadow_verify "$fs E: after sync, drop_caches, umount, remount" "$real" "$sh"
	assert_ok "$fs E: final umount" timeout 120 umount "$mnt"
	unload "$fs E: final rmmod"
	dmesg_clean "after $fs E (final umount and rmmod)"
	rm -rf "$sh"
}

raw_case() {
	local ddir dname sh=$SH/raw a b out i
	phase "raw $dev"
	ddir=$(dirname "$dev") dname=$(basename "$dev")
	a="$dname@0=ra"    # pages [0, 4096): changed by lifeio apply
	b="$dname@4096=rb" # pages [4096, 6144): the background writer's
	rm -rf "$sh"
	mkdir -p "$sh"
	dd if=/dev/zero of="$dev" bs=1M count=24 oflag=direct status=none ||
		die "cannot zero the first 24 MiB of $dev"
	truncate -s 16M "$sh/ra"
	truncate -s 8M "$sh/rb"
	load raw

	writer_start "$ddir" "$sh" "$b"
	out=$(lifeio apply "$ddir" "$sh" "seq:$a:0:512" "pages:$a:300" "rand:$a:100" stat:R0)
	tracked "$out" R0 "raw: buffered writes to $dev"
	sleep "$SETTLE"
	progress "raw: buffered writes" 0 0
	for i in 1 2; do
		out=$(lifeio apply "$ddir" "$sh" "pages:$a:200" "rand:$a:50" "sleep:${RACE_DELAYS[$i]}" \
			"pages:$a:20" "stat:R$i")
		tracked "$out" "R$i" "raw R$i: just before rmmod"
		assert_ok "raw R$i: the writer is running at rmmod" kill -0 "$WPID"
		unload "raw R$i: rmmod, writer running"
		lifeio apply "$ddir" "$sh" "pages:$a:100" "seq:$a:$((2000 + 64 * i)):64"
		load "raw R$i: reload"
		out=$(lifeio apply "$ddir" "$sh" "pages:$a:200" "seq:$a:1000:256" "rand:$a:50" \
			"stat:R${i}r")
		tracked "$out" "R${i}r" "raw R$i: after reload"
	done
	sleep "$SETTLE"
	progress "raw: after reload" 0 0
	writer_stop raw
	assert_ok "raw: sync" sync
	assert_eq "$(sha256sum <"$sh/ra")" \
		"$(dd if="$dev" iflag=direct bs=1M count=16 status=none | sha256sum)" \
		"raw: O_DIRECT read of pages 0-4095 matches the shadow"
	assert_eq "$(sha256sum <"$sh/rb")" \
		"$(dd if="$dev" iflag=direct bs=1M skip=16 count=8 status=none | sha256sum)" \
		"raw: O_DIRECT read of pages 4096-6143 (the writer's) matches the shadow"
	drained "raw: after sync"
	unload "raw: final rmmod"
	dmesg_clean "after raw (final rmmod)"
	rm -rf "$sh"
}

for fs in $FILESYSTEMS; do
	fs_case "$fs"
	log "$fs done at $(($(now_ms) - t_start)) ms"
done
raw_case
log "raw done at $(($(now_ms) - t_start)) ms"
