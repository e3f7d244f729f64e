#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Policy "kernel": aipu issues nothing and leaves Linux's writeback settings
# alone; switching to a policy that writes turns Linux's periodic writeback
# off (vm.dirty_writeback_centisecs 0) and bounds the pages dirtied under
# "kernel" at once; switching back and rmmod restore the value (unless root
# set one meanwhile); handover_ms keeps periodic writeback on after load.
#
# max_age_ms=1000, period_ms=500 on the raw test disk, held open so that no
# close syncs it, blktrace running:
#   1. insmod policy=kernel handover_ms=0: kupdate_off 0, the sysctl as
#      before. 64 pages (set A) dirtied after marker M0; 3 s later (past
#      max_age + 2 periods) aipu has written nothing (pages_written 0, no
#      I/O queued by the aipu thread) though its flusher ran and it
#      timestamped the pages; the sysctl is unchanged.
#   2. 64 more pages (set B) between markers M1 and M2, then at once
#      policy aipu: kupdate_off 1 and the sysctl 0 on return. Set A (older
#      than max_age) is written within one period of the switch:
#      [M2, M2 + period + 0.5 s]; set B within
#      [M1 + max_age, M2 + max_age + period + 0.5 s]; every write of both
#      sets is queued by the aipu thread (Linux's writeback is off); no
#      page of set B counts in pages_late.
#   3. policy kernel: the sysctl back, kupdate_off 0.
#   4. policy aipu, root writes 700 to the sysctl, policy kernel: 700 stays.
#   5. policy aipu, rmmod: the sysctl back.
#   6. insmod policy=aipu handover_ms=5000: periodic writeback stays on
#      (kupdate_off 0, sysctl unchanged) for 5 s after load while
#      handover_left_ms counts down, then goes off within a period.
#   7. root writes 700 under aipu, rmmod: 700 stays.
# vm.dirty_expire_centisecs is never touched. The 0.5 s added to the bounds
# is for the write itself and for TCG scheduling, as in t_age_bound.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

MAX_AGE=1000
PERIOD=500
HANDOVER=5000
SLACK=0.5
KUP=/proc/sys/vm/dirty_writeback_centisecs
EXP=/proc/sys/vm/dirty_expire_centisecs
NPAGES=64
tol=$(jiffy_s)
sec() { awk -v ms="$1" 'BEGIN { printf "%.3f\n", ms / 1000 }'; }
hi_a=$(awk -v p="$PERIOD" -v s="$SLACK" 'BEGIN { printf "%.3f\n", p / 1000 + s }')
hi_b=$(awk -v a="$MAX_AGE" -v p="$PERIOD" -v s="$SLACK" 'BEGIN { printf "%.3f\n", (a + p) / 1000 + s }')

read -r wb0 <"$KUP"
read -r exp0 <"$EXP"
log "before load: dirty_writeback_centisecs $wb0, dirty_expire_centisecs $exp0"
[ "$wb0" -gt 0 ] || die "dirty_writeback_centisecs is already 0 before load"
[ "$wb0" != 700 ] || die "dirty_writeback_centisecs is 700 before load: the test needs another value"
on_exit "echo $wb0 >$KUP"

# Every stat counter into S[], without forking (timing matters in 6.). A
# line that is not "name number" is kept in $TEST_OUT/stat-malformed.txt
# and fails the test at the end.
declare -A S
malformed=0
stat_read() {
	local k v l lines
	S=()
	[ -r "$AIPU_SYSFS/stat" ] || return 0
	mapfile -t lines <"$AIPU_SYSFS/stat" || return 0
	for l in "${lines[@]}"; do
		k=${l%% *} v=${l#* }
		if [[ $k =~ ^[a-z_]+$ ]] && [[ $v =~ ^[0-9]+$ ]]; then
			S[$k]=$v
		else
			malformed=$((malformed + 1))
			printf '%s\n' "--- $EPOCHREALTIME: line '$l' in:" "${lines[@]}" >>"$TEST_OUT/stat-malformed.txt"
		fi
	done
}
kup() {
	local v
	read -r v <"$KUP"
	echo "$v"
}
# settings WHAT KUPDATE_OFF SYSCTL: kupdate_off and the sysctl are as expected.
settings() {
	stat_read
	assert_eq "$2 $3" "${S[kupdate_off]:-?} $(kup)" "$1: kupdate_off $2, dirty_writeback_centisecs $3"
}

dev=$(disk_get)
disk_prepare "$dev"
# Keep the device open: the last close of a block device syncs it.
exec {hold}<"$dev"
on_exit "exec $hold<&-"

# 1. Policy kernel: pages are timestamped, nothing is written.
aipu_load policy=kernel "max_age_ms=$MAX_AGE" "period_ms=$PERIOD" handover_ms=0
assert_eq kernel "$(aipu_policy)" "policy is kernel"
settings "1. loaded under kernel" 0 "$wb0"
trace=$TEST_TMP/kp.txt
blktrace_start "$dev" kp
out=$(dirty_pages "$dev" --first-page 2048 --count "$NPAGES" --stride 2 --marker "$dev:0" --max-ms 60000) ||
	die "dirty.py failed: $out"
log "set A: $out"
stat_read
assert_ge "${S[pages_tracked]}" "$NPAGES" "1. aipu timestamps the pages under kernel (pages_tracked)"
runs0=${S[flusher_runs]}
sleep 3
stat_read
assert_eq 0 "${S[pages_written]}" "1. 3 s later (max_age $MAX_AGE ms): stat pages_written is 0"
assert_gt "${S[flusher_runs]}" "$runs0" "1. the flusher ran meanwhile"
assert_ge "${S[pages_tracked]}" "$NPAGES" "1. the pages are still tracked (nobody wrote them)"
settings "1. 3 s under kernel" 0 "$wb0"

# 2. Set B, then switch to aipu (a shell builtin write: no fork between the
#    end marker M2 and the switch).
out=$(dirty_pages "$dev" --first-page 4096 --count "$NPAGES" --stride 2 \
	--marker "$dev:4096" --end-marker "$dev:8192" --max-ms 60000) || die "dirty.py failed: $out"
printf aipu >"$AIPU_SYSFS/policy" || die "cannot switch to policy aipu"
log "set B: $out; switched to aipu"
assert_eq aipu "$(aipu_policy)" "2. policy is aipu"
settings "2. on return from the switch to aipu" 1 0
sleep "$(sec $((MAX_AGE + PERIOD + 1500)))"
blktrace_stop "$trace"
aipu_dump
stat_read
assert_ge "${S[pages_written]}" $((2 * NPAGES)) "2. aipu wrote both sets (pages_written)"
# Set A is late by its dirtying time (under kernel nothing bounded it);
# set B was dirtied within its bound and must not be counted late.
assert_le "${S[pages_late]}" "$NPAGES" "2. stat pages_late counts no page of set B"

check_window() { # NAME ARGS...
	local name=$1 why rc=0
	shift
	why=$(blkevents window --trace "$trace" --tolerance "$tol" "$@") || rc=$?
	if [ "$rc" -eq 0 ]; then pass "$name: $why"; else fail "$name: $why"; fi
}
ranges_a=$(page_ranges 2048 "$NPAGES" 2)
ranges_b=$(page_ranges 4096 "$NPAGES" 2)
check_window "2. set A (dirtied under kernel, older than max_age) written within [M2, M2+$hi_a] s" \
	--marker-sector 16 --sectors "$ranges_a" --lo 0 --hi "$hi_a"
check_window "2. set B (dirtied under kernel just before the switch) written within [M1+$(sec $MAX_AGE), M2+$hi_b] s" \
	--marker-sector 8 --end-marker-sector 16 --sectors "$ranges_b" --lo "$(sec $MAX_AGE)" --hi "$hi_b"
# Who queued them: the aipu thread, and nothing of the aipu thread before
# the switch.
blkevents writes --trace "$trace" --marker-sector 16 --sectors "$ranges_a,$ranges_b" \
	--actions Q >"$TEST_TMP/queued.txt"
nq=$(wc -l <"$TEST_TMP/queued.txt")
others=$(awk '$6 != "aipu" && n++ < 3 { printf "%s|", $0 }' "$TEST_TMP/queued.txt")
assert_gt "$nq" 0 "2. writes of sets A and B were queued"
assert_eq "" "$others" "2. every write of sets A and B was queued by the aipu thread"
early=$(blkevents writes --trace "$trace" --marker-sector 16 --sectors 0-99999999 --actions Q |
	awk '$1 < 0 && $6 == "aipu" && n++ < 3 { printf "%s|", $0 }')
assert_eq "" "$early" "1. the aipu thread queued no write before the switch"

# 3. Back to kernel.
aipu_set policy kernel
settings "3. after switching back to kernel" 0 "$wb0"

# 4. A value root sets while aipu has periodic writeback off wins.
aipu_set policy aipu
settings "4. aipu again" 1 0
echo 700 >"$KUP"
aipu_set policy kernel
settings "4. root wrote 700 under aipu, then policy kernel" 0 700
echo "$wb0" >"$KUP"

# 5. rmmod under aipu.
aipu_set policy aipu
settings "5. aipu before rmmod" 1 0
aipu_unload || fail "5. rmmod aipu failed"
assert_eq "$wb0" "$(kup)" "5. rmmod under aipu: dirty_writeback_centisecs back to $wb0"

# 6. handover_ms: periodic writeback stays on for 5 s after load.
samples=$TEST_TMP/handover.txt
: >"$samples"
sync
t_before=$(now_us)
insmod "$AIPU_KO" policy=aipu "max_age_ms=$MAX_AGE" "period_ms=$PERIOD" "handover_ms=$HANDOVER" ||
	die "insmod aipu.ko handover_ms=$HANDOVER failed"
t_after=$(now_us)
on_exit aipu_unload
# Sample every 50 ms: "ms_since_before ms_since_after kupdate_off handover_left_ms sysctl",
# until kupdate_off is 1 or 10 s have passed.
while :; do
	ta=$(now_us)
	stat_read
	read -r v <"$KUP"
	tb=$(now_us)
	# The read happened between ta and tb: elapsed since loaded_at is in
	# [ta - t_after, tb - t_before].
	echo "$(((tb - t_before) / 1000)) $(((ta - t_after) / 1000)) ${S[kupdate_off]:-?} ${S[handover_left_ms]:-?} $v" >>"$samples"
	[ "${S[kupdate_off]:-}" = 1 ] && break
	[ $((tb - t_before)) -lt 10000000 ] || break
	sleep 0.05
done
cp "$samples" "$TEST_OUT/"
log "insmod took $(((t_after - t_before) / 1000)) ms; $(wc -l <"$samples") samples; first and last:"
sed -n '1p;$p' "$samples" | sed 's/^/#   /'
jms=$(awk -v j="$tol" 'BEGIN { printf "%d\n", j * 1000 + 1 }')
# (a) kupdate on, the sysctl unchanged, while surely less than 5 s passed.
bad=$(awk -v h="$HANDOVER" -v j="$jms" -v w="$wb0" \
	'$1 < h - j && ($3 != 0 || $5 != w)' "$samples" | head -n 3 | tr '\n' '|')
assert_eq "" "$bad" "6. kupdate_off 0 and dirty_writeback_centisecs $wb0 during the first $HANDOVER ms"
# (b) handover_left_ms matches the time since load (one jiffy either way)
#     and never goes up.
bad=$(awk -v h="$HANDOVER" -v j="$jms" '$3 == 0 {
	ub = h - $2; if (ub < 0) ub = 0
	lb = h - $1; if (lb < 0) lb = 0
	if ($4 > ub + j || $4 < lb - j || $4 > h) print }' "$samples" | head -n 3 | tr '\n' '|')
assert_eq "" "$bad" "6. handover_left_ms is $HANDOVER minus the time since load"
bad=$(awk 'NR > 1 && $4 > prev && n++ < 3 { printf "%s|", $0 } { prev = $4 }' "$samples")
assert_eq "" "$bad" "6. handover_left_ms never goes up"
first_left=$(awk 'NR == 1 { print $4 }' "$samples")
last_on_left=$(awk '$3 == 0 { l = $4 } END { print l + 0 }' "$samples")
assert_gt "$first_left" 0 "6. handover_left_ms > 0 right after load"
assert_lt "$last_on_left" "$((first_left - 3000))" "6. handover_left_ms counted down by more than 3 s while kupdate was on"
# (c) then off, within a period (+ slack) of the end of the handover: no
#     sample surely later than that still shows it on.
limit=$(awk -v h="$HANDOVER" -v p="$PERIOD" -v s="$SLACK" 'BEGIN { printf "%d\n", h + p + s * 1000 }')
bad=$(awk -v l="$limit" '$3 == 0 && $2 > l && n++ < 3 { printf "%s|", $0 }' "$samples")
assert_eq "" "$bad" "6. kupdate on no longer than handover + period + ${SLACK} s ($limit ms) after load"
off=$(awk '$3 == 1 { print; exit }' "$samples")
if [ -z "$off" ]; then
	fail "6. kupdate_off never became 1 within 10 s of load (last sample: $(tail -n 1 "$samples"))"
else
	read -r off_b off_a _ off_left off_sysctl <<<"$off"
	log "kupdate_off 1 first seen $off_a-$off_b ms after load"
	assert_ge "$off_b" $((HANDOVER - jms)) "6. kupdate went off no earlier than $HANDOVER ms after load"
	assert_eq "0 0" "$off_left $off_sysctl" "6. once off: handover_left_ms 0 and dirty_writeback_centisecs 0"
fi

# 7. A value root sets under aipu survives rmmod.
settings "7. aipu after the handover" 1 0
echo 700 >"$KUP"
aipu_unload || fail "7. rmmod aipu failed"
assert_eq 700 "$(kup)" "7. root wrote 700 under aipu, rmmod: 700 stays"
echo "$wb0" >"$KUP"
assert_eq "$exp0" "$(<"$EXP")" "dirty_expire_centisecs never changed ($exp0)"
assert_eq 0 "$malformed" "every line read from stat was 'name number' (see stat-malformed.txt)"
