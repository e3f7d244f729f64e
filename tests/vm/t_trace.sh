#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# aipu's own trace events (include/aipu_trace.h): tracefs and perf list show
# the four, with their fields; enabled in a trace instance around a workload
# (knob changes, then pages dirtied on the test disk and written under
# aipu), their records agree with stat's counters over the same interval:
#   aipu_pass:  one per flusher pass (flusher_runs); issued, scanned and
#               retried add up to pages_written, entries_scanned and
#               pages_retried; due is at least what the pass issued
#   aipu_issue: written adds up to pages_written, no age below max_age_ms,
#               the test disk's device named
#   aipu_knob:  exactly the four knob writes, with their old and new values
#   aipu_fallback: as many as stat's fallbacks grew by
# and tools/aipu-ages.bt (bpftrace), run meanwhile, counts the same
# pages, in age buckets no younger than max_age_ms. aipu also tracks the 9p
# file system the test's log goes to, whose passes come at their own times:
# the counters are read at each end together with the trace, as pairs in
# which no pass ended between the two reads (polled, not slept for).
#
# QEMU TCG's text-patching bug (README, Tests): enabling an event patches
# the module's text where it tests the event's static key, and attaching
# bpftrace retargets the tracepoint's static call. Both are done while
# aipu runs no code there: period_ms=60000 (no flusher pass), nothing
# dirtied, no knob written. They are switched off only by rmmod, after the
# module stopped running.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$TESTS_DIR/../..
t=/sys/kernel/tracing
inst=$t/instances/aipu-t-trace
events="aipu_pass aipu_issue aipu_fallback aipu_knob"
MAX_AGE=500
# A device that tracked nothing for 30 periods is freed with its counts
# (stat drops them): the window from its last write to the switch back to
# period_ms=60000 below stays well under 30 periods.
PERIOD=200
NPAGES=64

dev=$(disk_get)
disk_prepare "$dev"
# Hold the device open: the last close of a block device writes back its
# page cache (blkdev_put()), which would leave aipu nothing to write.
exec {hold}<"$dev"
on_exit "exec $hold<&-"
mountpoint -q "$t" || mount -t tracefs none "$t"
# Made before the load, removed after the unload (cleanups run last first):
# removing it disables the events, which must not happen while aipu runs.
[ -d "$inst" ] || mkdir "$inst"
on_exit rmdir "$inst"
# pace=0: a paced pass with a 60-s period may still be waiting for a run
# when the counters are read (pace became the default after this test).
aipu_load policy=kernel period_ms=60000 handover_ms=0 pace=0
sleep 1 # the tick work's first run at load is over; no pass for 60 s

for e in $events; do
	assert_ok "tracefs has aipu:$e" test -f "$t/events/aipu/$e/format"
done
assert_match 'field:char dev\[32\]' "$(cat "$t/events/aipu/aipu_pass/format")" "aipu_pass has dev"
for f in due issued scanned retried pass_ns lock_ns; do
	assert_match "field:u64 $f;" "$(cat "$t/events/aipu/aipu_pass/format")" "aipu_pass has $f"
done
for f in ino first pages written age_ms; do
	assert_match "field:[a-z_ ]+ $f;" "$(cat "$t/events/aipu/aipu_issue/format")" "aipu_issue has $f"
done
if command -v perf >/dev/null; then
	plist=$(perf list 'aipu:*' 2>&1 || true)
	for e in $events; do
		assert_match "aipu:$e" "$plist" "perf list shows aipu:$e"
	done
else
	fail "perf is not installed (scripts/install-deps.sh installs linux-perf)"
fi

# Quiescent: enable the events (patches aipu's text) and attach bpftrace.
echo 0 >"$inst/tracing_on"
echo 8192 >"$inst/buffer_size_kb"
echo 1 >"$inst/events/aipu/enable"
on_exit "echo 0 >$inst/tracing_on"
echo 1 >"$inst/tracing_on"
# bpftrace's output and the working copies of the trace stay off the 9p
# file system the test's log goes to: aipu tracks that device too, and
# every write there can start a pass of its own.
bt_out=$TEST_TMP/aipu-ages.txt
mkdir -p "$TEST_OUT"
bpftrace "$root/tools/aipu-ages.bt" >"$bt_out" 2>&1 &
bt=$!
on_exit "kill -INT $bt 2>/dev/null || true"
# On a failure midway: quiesce the flusher before bpftrace detaches.
on_exit "echo 60000 >$AIPU_SYSFS/period_ms; sleep 1"
for _ in $(seq 600); do
	grep -q 'aipu-ages: pages written' "$bt_out" && break
	kill -0 "$bt" 2>/dev/null || break
	sleep 0.1
done
grep -q 'aipu-ages: pages written' "$bt_out" || die "bpftrace did not start: $(head -c 600 "$bt_out")"

# stat_a, and the number of aipu_pass records already in the trace, read
# as a pair with no pass ended in between: passes of other devices (the
# 9p one, made by the test's own log) run at their own times, and those
# before stat_a are left out of the sums (trim below).
runs_in() { echo "$1" | awk '$1 == "flusher_runs" { print $2 }'; }
start_snapshot() {
	stat_a=$(cat "$AIPU_SYSFS/stat")
	skip=$(grep -c " aipu_pass: " "$inst/trace" || true)
	[ "$(runs_in "$stat_a")" = "$(aipu_stat flusher_runs)" ]
}
wait_until 20 start_snapshot || die "flusher passes kept ending for 20 s with period_ms 60000"
aipu_set max_age_ms "$MAX_AGE"
aipu_set period_ms $PERIOD
aipu_set policy aipu
# No limit on the dirtying's time (dirty.py's default is 200 ms): no check
# here depends on it, and a host that stalled the guest once made it 252 ms.
dirty_pages "$dev" --first-page 4096 --count "$NPAGES" --max-ms 60000 >/dev/null
w0=$(echo "$stat_a" | awk '$1 == "pages_written" { print $2 }')
for _ in $(seq 200); do
	[ $(($(aipu_stat pages_written) - w0)) -ge "$NPAGES" ] && break
	sleep 0.1
done
delta() { # NAME: stat_b - stat_a
	echo $(($(echo "$stat_b" | awk -v k="$1" '$1 == k { print $2 }') - \
		$(echo "$stat_a" | awk -v k="$1" '$1 == k { print $2 }')))
}
# Sum of FIELD=N over the records of EVENT in the trace.
tsum() { # EVENT FIELD
	awk -v e="$1:" -v f="$2" '$0 ~ " " e " " {
		for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) s += substr($i, length(f) + 2)
	} END { print s + 0 }' "$TEST_TMP/trace.txt"
}
tcount() { grep -c " $1: " "$TEST_TMP/trace.txt" || true; }
# The counters and the trace, read as a pair that agrees on the passes
# ended: a pass writes its aipu_pass record and counts itself in one hold
# of its device's lock, so a pass that ends between the two reads (in a
# slow guest the last one can outlast any fixed sleep) shows as a
# mismatch, and the pair is read again. Counters that never match the
# trace still fail below.
# The records after the first $skip aipu_pass records (a pass's issue
# records come before its pass record).
trim() { awk -v n="$skip" '{ if (seen >= n) print } / aipu_pass: / { seen++ }' "$inst/trace"; }
snapshot() {
	stat_b=$(cat "$AIPU_SYSFS/stat")
	trim >"$TEST_TMP/trace.txt"
	[ "$(delta flusher_runs)" = "$(tcount aipu_pass)" ]
}
aipu_set period_ms 60000 # its kick runs one pass at once; then none
wait_until 20 snapshot || log "the trace and flusher_runs did not agree within 20 s"
echo 0 >"$inst/tracing_on"
kill -INT "$bt"
wait "$bt" || true
cp "$TEST_TMP/trace.txt" "$bt_out" "$TEST_OUT/"
sed 's/^/# ages: /' "$bt_out" | tail -n 20

assert_eq 0 "$(grep -c 'LOST' "$inst/trace" || true)" "no trace records lost"
written=$(delta pages_written)
assert_ge "$written" "$NPAGES" "aipu wrote the $NPAGES pages dirtied"
assert_eq "$(delta flusher_runs)" "$(tcount aipu_pass)" "one aipu_pass record per flusher pass (flusher_runs)"
assert_gt "$(tcount aipu_pass)" 0 "aipu_pass records"
assert_eq "$written" "$(tsum aipu_pass issued)" "aipu_pass issued adds up to pages_written"
assert_eq "$(delta entries_scanned)" "$(tsum aipu_pass scanned)" "aipu_pass scanned adds up to entries_scanned"
assert_eq "$(delta pages_retried)" "$(tsum aipu_pass retried)" "aipu_pass retried adds up to pages_retried"
assert_ge "$(tsum aipu_pass due)" "$(tsum aipu_pass issued)" "aipu_pass: due at least issued"
assert_eq "$written" "$(tsum aipu_issue written)" "aipu_issue written adds up to pages_written"
young=$(awk -v m="$MAX_AGE" '/ aipu_issue: / { for (i = 1; i <= NF; i++)
	if ($i ~ /^age_ms=/ && substr($i, 8) + 0 < m) n++ } END { print n + 0 }' "$TEST_OUT/trace.txt")
assert_eq 0 "$young" "no aipu_issue record younger than max_age_ms ($MAX_AGE ms)"
devname=$(disk_majmin "$dev")
assert_gt "$(grep -c " aipu_issue: dev=$devname " "$TEST_OUT/trace.txt" || true)" 0 \
	"aipu_issue names the test disk's device $devname"
assert_eq "$(delta fallbacks)" "$(tcount aipu_fallback)" "one aipu_fallback record per fallback"
knobs=$(grep -o ' aipu_knob: .*' "$TEST_OUT/trace.txt" | sed 's/^ aipu_knob: //' | tr '\n' ';')
assert_eq "knob=max_age_ms old=30000 new=$MAX_AGE;knob=period_ms old=60000 new=$PERIOD;knob=policy old=kernel new=aipu;knob=period_ms old=$PERIOD new=60000;" \
	"$knobs" "aipu_knob records the four knob writes"

# bpftrace: its final maps (printed after "--- end") hold the same pages, in
# the buckets the trace's aipu_issue records fall in.
final=$(sed -n '/^--- end/,$p' "$bt_out")
bt_total=$(echo "$final" | awk -F': ' '/^@written\[/ { s += $2 } END { print s + 0 }')
assert_eq "$written" "$bt_total" "aipu-ages.bt counted the pages written"
got=$(echo "$final" | awk -F'[],[]' '/^@pages\[/ { n = $4; sub(/^: */, "", n); gsub(/ /, "", $3); print $2, $3, n }' | sort)
want=$(awk '/ aipu_issue: / {
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		v[kv[1]] = kv[2]
	}
	if (v["written"] + 0 == 0) next
	lo = 0
	if (v["age_ms"] + 0 > 0) { lo = 1; while (lo * 2 <= v["age_ms"] + 0) lo *= 2 }
	s[v["dev"] " " lo] += v["written"]
} END { for (k in s) print k, s[k] }' "$TEST_OUT/trace.txt" | sort)
assert_eq "$want" "$got" "aipu-ages.bt's histogram is the trace's, bucket by bucket"
low=$(echo "$got" | awk '{ print $2 }' | sort -n | head -n 1)
assert_ge "${low:-0}" 256 "aipu-ages.bt: the youngest bucket starts at 256 ms or more (max_age_ms $MAX_AGE)"
