#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# pu writes everything it tracks in one burst per interval; aipu, on the same
# workload, writes the same pages spread out as they were dirtied.
#
# Workload: 6 groups of 8 non-adjacent pages of the raw device, one group
# every 0.5 s. pu_interval_ms=3000: the 48 pages must go out in at most two
# bursts, each narrower than 0.5 s, two bursts >= 2 s apart (the interval
# less one period of granularity). aipu (max_age 3 s) on the same workload
# must give at least three bursts. aipu runs unpaced (pace=0: a period's
# aged pages go out at its tick, 1 s apart): paced, each group goes out
# 0.5 s after the last, exactly the gap that separates bursts here, so the
# count would hang on the emulated CPU's jitter (it gave 2 on the rt
# kernel). t_pace tests the paced default.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
dev=$(disk_get)
disk_prepare "$dev"
timing() { python3 "$TESTS_DIR/timing.py" "$@"; }

# workload FIRST_PAGE: 6 groups of 8 pages (stride 2), 0.5 s apart.
workload() {
	python3 - "$dev" "$1" <<'PY'
import os, sys, time
dev, first = sys.argv[1], int(sys.argv[2])
fd = os.open(dev, os.O_WRONLY)
start = time.monotonic()
for g in range(6):
    for i in range(8):
        os.pwrite(fd, b"p" * 4096, (first + 2 * (8 * g + i)) * 4096)
    time.sleep(max(0.0, start + 0.5 * (g + 1) - time.monotonic()))
os.close(fd)
PY
}

# run POLICY FIRST_PAGE: trace the workload under POLICY; print the bursts.
run() {
	local policy=$1 first=$2 trace=$TEST_TMP/$1.txt
	aipu_set policy "$policy"
	{
		blktrace_start "$dev" "$policy"
		workload "$first"
		sleep 7
		blktrace_stop "$trace"
	} >&2
	timing bursts --trace "$trace" --sectors "$(page_ranges "$first" 48 2)" --gap 0.5
}

aipu_load policy=kernel max_age_ms=3000 period_ms=1000 pu_interval_ms=3000 handover_ms=0 pace=0

out=$(run pu 4096)
log "pu bursts (start width writes):"$'\n'"$out"
n=$(echo "$out" | awk '$1 == "bursts" { print $2 }')
assert_le "$n" 2 "pu: the 48 pages went out in at most 2 bursts"
assert_ge "$n" 1 "pu: the pages were written"
assert_eq 48 "$(echo "$out" | awk '$1 != "bursts" { s += $3 } END { print s + 0 }')" \
	"pu: every page written exactly once"
wide=$(echo "$out" | awk '$1 != "bursts" && $2 > 0.5 { n++ } END { print n + 0 }')
assert_eq 0 "$wide" "pu: every burst is narrower than 0.5 s"
if [ "$n" -eq 2 ]; then
	gap=$(echo "$out" | awk '$1 != "bursts" { s[++i] = $1 } END { printf "%d", (s[2] - s[1]) * 1000 }')
	assert_ge "$gap" 2000 "pu: bursts are an interval apart (ms)"
fi
assert_ge "$(aipu_stat pages_written)" 48 "pu: stat pages_written counts them"
hist=$(awk '$1 >= 8 { s += $NF } END { print s + 0 }' "$AIPU_SYSFS/burst_hist")
assert_ge "$hist" 1 "pu: burst_hist has a pass that wrote 8 or more pages"

s0=$(aipu_stat entries_scanned)
w0=$(aipu_stat pages_written)
r0=$(aipu_stat flusher_runs)
out=$(run aipu 8192)
# Phase 1 looks only at due entries plus the one that stops it: with
# single-page runs, scanned <= written + passes (Mogul's AIPU scanned 54
# blocks for every block it wrote).
ds=$(($(aipu_stat entries_scanned) - s0))
dw=$(($(aipu_stat pages_written) - w0))
dr=$(($(aipu_stat flusher_runs) - r0))
log "aipu: $ds entries scanned, $dw pages written, $dr passes"
assert_le "$ds" $((dw + dr)) "aipu: scanned <= written + passes"
log "aipu bursts (start width writes):"$'\n'"$out"
n=$(echo "$out" | awk '$1 == "bursts" { print $2 }')
assert_ge "$n" 3 "aipu on the same workload: the writes are spread ($n bursts)"
