#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# First-dirty semantics (Mogul 3.2): a page's time is set when it goes clean
# -> dirty and is not moved by later writes, and a page cleaned by anyone and
# dirtied again gets a new time.
#
# 1. A page rewritten every 0.5 s is still written 3-4.5 s after its first
#    write (max_age 3 s, period 1 s); the rewrites after aipu cleaned it give
#    it a new time, so its next write comes >= 3 s after the first.
# 2. A page cleaned by fdatasync (not by aipu) and dirtied again is written
#    by aipu 3-4.5 s after the second dirtying, not after the first.
#
# Times come from blktrace: a 4 KiB O_DIRECT marker write at sector 0 is t0.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
dev=$(disk_get)
disk_prepare "$dev"
tol=$(jiffy_s)
timing() { python3 "$TESTS_DIR/timing.py" "$@"; }
# in_range X LO HI: LO - one jiffy <= X <= HI
in_range() { awk -v x="$1" -v lo="$2" -v hi="$3" -v t="$tol" 'BEGIN { exit !(x >= lo - t && x <= hi) }'; }

aipu_load policy=aipu max_age_ms=3000 period_ms=1000 handover_ms=0

# Page A (page 4096 of the device) rewritten every 0.5 s for 6 s.
pageA=4096
secA=$(page_ranges "$pageA" 1 1)
trace=$TEST_TMP/rewrite.txt
blktrace_start "$dev" rewrite
python3 - "$dev" "$pageA" <<'PY'
import mmap, os, sys, time
dev, page = sys.argv[1], int(sys.argv[2])
buf = mmap.mmap(-1, 4096)
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
os.pwrite(fd, buf, 0)  # marker: t0
os.close(fd)
fd = os.open(dev, os.O_WRONLY)
start = time.monotonic()
for i in range(13):
    os.pwrite(fd, bytes([i]) * 4096, page * 4096)
    time.sleep(max(0.0, start + 0.5 * (i + 1) - time.monotonic()))
os.close(fd)
PY
sleep 3
blktrace_stop "$trace"
mapfile -t w < <(timing times --trace "$trace" --marker-sector 0 --sectors "$secA")
log "writes of the rewritten page at t0+: ${w[*]:-none}"
if [ "${#w[@]}" -ge 1 ] && in_range "${w[0]}" 3.0 4.5; then
	pass "rewritten page first written at t0+${w[0]} s, within [3.0, 4.5]"
else
	fail "rewritten page: first write at t0+${w[0]:-never}, expected within [3.0, 4.5]"
fi
if [ "${#w[@]}" -ge 2 ] &&
	awk -v a="${w[0]}" -v b="${w[1]}" -v t="$tol" 'BEGIN { exit !(b - a >= 3.0 - t) }'; then
	pass "dirtied again after aipu wrote it: next write ${w[1]} s, >= 3 s after the first"
else
	fail "second write of the rewritten page at t0+${w[1]:-never}: expected one >= 3 s after t0+${w[0]:-?}"
fi

# Page B: dirtied at t0, cleaned by fdatasync at t0+1.5, dirtied again at t0+2.
pageB=8192
secB=$(page_ranges "$pageB" 1 1)
trace=$TEST_TMP/fsync.txt
blktrace_start "$dev" fsync
python3 - "$dev" "$pageB" <<'PY'
import mmap, os, sys, time
dev, page = sys.argv[1], int(sys.argv[2])
buf = mmap.mmap(-1, 4096)
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
os.pwrite(fd, buf, 4096)  # marker at sector 8: t0
os.close(fd)
fd = os.open(dev, os.O_WRONLY)
start = time.monotonic()
os.pwrite(fd, b"1" * 4096, page * 4096)
time.sleep(1.5)
os.fdatasync(fd)
time.sleep(max(0.0, start + 2.0 - time.monotonic()))
os.pwrite(fd, b"2" * 4096, page * 4096)
os.close(fd)
PY
sleep 5
blktrace_stop "$trace"
mapfile -t w < <(timing times --trace "$trace" --marker-sector 8 --sectors "$secB")
log "writes of the fsynced page at t0+: ${w[*]:-none}"
assert_eq 2 "${#w[@]}" "the fsynced page was written twice (fdatasync, then aipu)"
if [ "${#w[@]}" -ge 2 ] && in_range "${w[0]}" 1.5 2.0; then
	pass "first write by fdatasync at t0+${w[0]}"
else
	fail "first write of the fsynced page at t0+${w[0]:-never}, expected ~1.5 (fdatasync)"
fi
if [ "${#w[@]}" -ge 2 ] && in_range "${w[1]}" 5.0 6.5; then
	pass "aipu wrote it at t0+${w[1]}: 3-4.5 s after the second dirtying (t0+2)"
else
	fail "aipu's write of the fsynced page at t0+${w[1]:-never}: expected within [5.0, 6.5] (new first-dirty time t0+2)"
fi

# Every page aipu wrote under max_age 3 s was at least 3 s old: age_hist
# (pages by age in ms at write time) has nothing below the 2048-4095 bucket.
young=$(awk '$2 != "-" && $2 < 2048 { s += $3 } END { print s + 0 }' "$AIPU_SYSFS/age_hist")
old=$(awk '$1 >= 2048 { s += $NF } END { print s + 0 }' "$AIPU_SYSFS/age_hist")
assert_eq 0 "$young" "age_hist: no page written younger than 2048 ms"
assert_ge "$old" 3 "age_hist: the pages aipu wrote are counted ($old)"
