#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Bad input while aipu works: sysfs_fuzz.py writes a few thousand boundary
# and random values (empty, huge, negative, non-UTF-8, longer than a page)
# to every knob, one at a time against a model of what each knob takes, then
# four writers storm the knobs (policies switching every few ms) while a
# reader checks every file stays well formed. A writer dirties files on
# ext4 throughout, so the flusher is working under every setting. Then:
# non-root writes change nothing, no aipu line in the kernel log or in
# sysfs shows a kernel address, and the files written during the storm are
# intact (checksums against shadow copies, after sync and drop_caches).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

S=$AIPU_SYSFS
SEED=${AIPU_FUZZ_SEED:-$RANDOM}
STORM_S=${AIPU_FUZZ_SECONDS:-20}
log "seed $SEED (AIPU_FUZZ_SEED=$SEED repeats this run)"
fuzz() { python3 "$TESTS_DIR/sysfs_fuzz.py" "$@"; }
# counts OUTPUT WHAT: turn sysfs_fuzz's last line into one assertion.
counts() {
	local last
	grep -E '^(FAIL|#)' <<<"$1" | head -n 60 || true
	last=$(tail -n 1 <<<"$1")
	if [[ $last =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
		pass "$2 ($last)"
	else
		fail "$2: $last"
	fi
}

dev=$(disk_get)
disk_prepare "$dev"
fs_make ext4 "$dev"
real=$AIPU_MNT/data sh=$TEST_TMP/shadow
mkdir -p "$real" "$sh"
aipu_load policy=aipu max_age_ms=1000 period_ms=100 handover_ms=0
python3 "$TESTS_DIR/lifeio.py" apply "$real" "$sh" create:w0:64 create:w1:64 create:w2:64 \
	>/dev/null
python3 "$TESTS_DIR/lifeio.py" writer "$real" "$sh" w0 w1 w2 >"$TEST_TMP/writer.log" 2>&1 &
WPID=$!
on_exit "kill $WPID 2>/dev/null || true"
wait_until 60 grep -q '^writer: ready$' "$TEST_TMP/writer.log" ||
	die "the writer did not start within 60 s: $(tr '\n' '|' <"$TEST_TMP/writer.log")"
assert_ok "the writer runs" kill -0 "$WPID"
n0=$(aipu_stat flusher_runs)

# 1. One value at a time, against the model.
out=$(fuzz model --seed "$SEED" 2>&1) || true
counts "$out" "model: every write answered as kstrtouint/sysfs_streq and the ranges say"

# 2. The storm.
aipu_set policy aipu
out=$(fuzz storm --seed "$SEED" --seconds "$STORM_S" --writers 4 2>&1) || true
counts "$out" "storm: 4 writers and a reader for ${STORM_S} s"
for f in policy write_alloc max_age_ms period_ms pu_interval_ms handover_ms \
	stage_interval_ms stage_batch pace max_batch; do
	assert_match '^(\[?[a-z]+\]? ?)+$|^[0-9]+$' "$(cat "$S/$f")" "$f is well formed after the storm"
done
assert_gt "$(aipu_stat flusher_runs)" "$n0" "the flusher ran during the fuzzing"

# 3. Non-root: random writes to every knob are refused and change nothing.
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"; }
snapshot() { for f in policy write_alloc max_age_ms period_ms pace max_batch handover_ms; do
	printf '%s=%s ' "$f" "$(cat "$S/$f")"
done; }
before=$(snapshot)
# shellcheck disable=SC2016 # expanded by the inner bash
ok=$(as_nobody bash -c 'n=0; for f in "$1"/*; do for v in 1 100 5000 aipu purge "" x; do
	{ printf "%s" "$v" >"$f"; } 2>/dev/null && n=$((n + 1)); done; done; echo "$n"' _ "$S")
assert_eq 0 "$ok" "no write by nobody to any file under $S succeeded"
assert_eq "$before" "$(snapshot)" "nothing changed after nobody's writes"

# 4. No kernel address in what aipu prints.
addr='(^|[^0-9a-f])(ffff[0-9a-f]{12}|0xffff[0-9a-f]{8,})'
leaks=$(dmesg | grep -E '\baipu\b' | grep -ciE "$addr" || true)
assert_eq 0 "$leaks" "no aipu line in the kernel log shows a kernel address"
leaks=$(cat "$S"/* | grep -ciE "$addr" || true)
assert_eq 0 "$leaks" "no file under $S shows a kernel address"

# 5. The data written meanwhile is intact.
kill -TERM "$WPID"
wait "$WPID" || true
assert_match '^writer: [0-9]+ operations$' "$(tail -n 1 "$TEST_TMP/writer.log")" \
	"the writer ran to the end without an I/O error"
aipu_set write_alloc update
aipu_set policy aipu
sync
echo 3 >/proc/sys/vm/drop_caches
want=$(cd "$sh" && sha256sum -- *)
got=$(cd "$real" && sha256sum -- *)
assert_eq "$want" "$got" "files written during the fuzzing match their shadows"
aipu_dump
