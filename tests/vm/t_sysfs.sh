#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# /sys/kernel/aipu/ and the module parameters: defaults, every knob's good
# values read back, bad values refused with EINVAL leaving the old value,
# the policy file's format, read-only files, and no writes for non-root.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"

S=$AIPU_SYSFS
KNOBS="max_age_ms period_ms pu_interval_ms handover_ms stage_interval_ms stage_batch pace max_batch"
# Documented ranges (include/aipu_knobs.h, the ABI file): min max default.
# Written out here, not read from the module, so the test can fail.
declare -A MIN=([max_age_ms]=100 [period_ms]=10 [pu_interval_ms]=100 [handover_ms]=0
	[stage_interval_ms]=0 [stage_batch]=1 [pace]=0 [max_batch]=0)
declare -A MAX=([max_age_ms]=3600000 [period_ms]=60000 [pu_interval_ms]=3600000
	[handover_ms]=3600000 [stage_interval_ms]=3600000 [stage_batch]=65536 [pace]=1
	[max_batch]=16777216)
declare -A DEF=([max_age_ms]=30000 [period_ms]=1000 [pu_interval_ms]=30000 [handover_ms]=35000
	[stage_interval_ms]=1000 [stage_batch]=1 [pace]=1 [max_batch]=0)

# 1. Bad module parameters: insmod refuses them.
insmod_refused() { # PARAM=VALUE
	if insmod "$AIPU_KO" "$1" 2>/dev/null; then
		fail "insmod aipu.ko $1 was accepted"
		rmmod aipu || die "cannot unload aipu"
	else
		pass "insmod aipu.ko $1 refused"
	fi
}
sync
for k in max_age_ms period_ms pu_interval_ms stage_batch; do
	insmod_refused "$k=0"
done
insmod_refused write_alloc=bogus
insmod_refused "policy=kernel write_alloc=purge"
for k in $KNOBS; do
	insmod_refused "$k=$((MAX[$k] + 1))"
	insmod_refused "$k=-1"
	insmod_refused "$k=abc"
done
insmod_refused policy=bogus
insmod_refused policy=

# 2. Defaults.
aipu_load
for f in policy write_alloc stat devices burst_hist age_hist $KNOBS; do
	assert_ok "$S/$f exists" test -f "$S/$f"
done
for k in $KNOBS; do
	assert_file_eq "$S/$k" "${DEF[$k]}" "$k defaults to ${DEF[$k]}"
	assert_ok "module parameter $k exists" test -f "/sys/module/aipu/parameters/$k"
done
assert_eq kernel "$(aipu_policy)" "policy is kernel after a plain insmod"
assert_eq "[kernel] aipu pu" "$(cut -d' ' -f1-3 "$S/policy")" "policy reads '[kernel] aipu pu ...'"
assert_file_eq "$S/policy" "[kernel] aipu pu stage" "policy lists kernel aipu pu stage"
assert_file_eq "$S/write_alloc" "[update] purge" "write_alloc reads '[update] purge'"
aipu_unload

# 3. Module parameters set the knobs.
aipu_load policy=aipu max_age_ms=3000 period_ms=500 pu_interval_ms=5000 handover_ms=0
assert_eq aipu "$(aipu_policy)" "policy=aipu at insmod"
assert_file_eq "$S/max_age_ms" 3000 "max_age_ms=3000 at insmod"
assert_file_eq "$S/period_ms" 500 "period_ms=500 at insmod"
assert_file_eq "$S/pu_interval_ms" 5000 "pu_interval_ms=5000 at insmod"
assert_file_eq "$S/handover_ms" 0 "handover_ms=0 at insmod"

# 3b. A refused write leaves one line in the kernel log saying what was
#     wanted, and a flood of bad writes leaves only a few (rate-limited).
n0=$(dmesg | wc -l)
assert_write EINVAL "$S/max_age_ms" 0 "max_age_ms: write 0 refused with EINVAL"
assert_match 'aipu: max_age_ms: rejected: expected an integer in \[100, 3600000\]' \
	"$(dmesg | tail -n +$((n0 + 1)))" "the refusal is logged with the accepted range"
#     pr_warn_ratelimited allows 10 lines per 5-s window of its call site
#     (shared by every integer knob, so a window may have begun before the
#     flood): the writes may meet one window more than their duration
#     spans. A fast kernel takes well under 5 s (at most 20 lines); a slow
#     debug kernel may take longer, and the limit scales with it.
n0=$(dmesg | wc -l)
t0=${EPOCHREALTIME/./}
for _ in $(seq 100); do write_errno "$S/period_ms" bogus >/dev/null; done
t1=${EPOCHREALTIME/./}
lines=$(dmesg | tail -n +$((n0 + 1)) | grep -c 'aipu: period_ms: rejected' || true)
windows=$(((t1 - t0) / 5000000 + 2))
assert_le "$lines" $((10 * windows)) \
	"100 bad writes in $(((t1 - t0) / 1000)) ms leave at most $((10 * windows)) log lines (rate-limited: 10 per 5 s)"
assert_ge "$lines" 1 "100 bad writes leave at least one log line"

# 4. Every knob: good values accepted and read back, bad ones refused.
for k in $KNOBS; do
	f=$S/$k
	mid=$(((MIN[$k] + MAX[$k]) / 2))
	for v in "${MIN[$k]}" "${MAX[$k]}" "$mid"; do
		assert_write OK "$f" "$v"$'\n' "$k: write '$v\\n'"
		assert_file_eq "$f" "$v" "$k reads back $v"
	done
	v=$((MIN[$k] + 7 > MAX[$k] ? MAX[$k] : MIN[$k] + 7))
	assert_write OK "$f" "$v" "$k: write '$v' without a newline"
	assert_file_eq "$f" "$v" "$k reads back $v"

	bad=(-1 "$((MAX[$k] + 1))" 4294967296 18446744073709551616 abc 12abc 1.5 $'\n' ' ')
	[ "${MIN[$k]}" -gt 0 ] && bad+=(0 "$((MIN[$k] - 1))")
	for b in "${bad[@]}"; do
		assert_write EINVAL "$f" "$b" "$k: write $(printf '%q' "$b") refused with EINVAL"
		assert_file_eq "$f" "$v" "$k still $v"
	done
done

# 5. The policy file: the policy names separated by spaces, the one in
#    force in brackets, e.g. "[kernel] aipu pu".
P=$S/policy
policy_line_ok() { # LINE CURRENT
	local line=$1 cur=$2 w n=0 seen="" words
	read -r -a words <<<"$line"
	for w in "${words[@]}"; do
		case $w in
		"[$cur]") n=$((n + 1)) ;;
		\[*) return 1 ;;
		esac
		seen+=" ${w//[\[\]]/}"
	done
	[ "$n" -eq 1 ] && [[ " $line " != *"  "* ]] && [[ $line != " "* ]] &&
		[[ " $seen " == *" kernel "* ]] && [[ " $seen " == *" aipu "* ]] &&
		[[ " $seen " == *" pu "* ]]
}
read -r -a names <<<"$(tr -d '[]' <"$P")"
log "policies: ${names[*]}"
assert_match '^\[aipu\]' "$(tr ' ' '\n' <"$P" | grep -F '[')" "policy=aipu at insmod is shown bracketed"
for p in aipu pu kernel "${names[@]}" aipu; do
	assert_write OK "$P" "$p"$'\n' "policy: write '$p\\n'"
	line=$(cat "$P")
	if policy_line_ok "$line" "$p"; then pass "policy reads '$line'"; else
		fail "policy after writing $p: '$line' is not a list of kernel aipu pu ... with [$p] bracketed"
	fi
	assert_eq "$p" "$(aipu_policy)" "the policy in force is $p"
done
assert_eq "kernel [aipu] pu" "$(cut -d' ' -f1-3 "$P")" "policy starts with 'kernel aipu pu' in that order"
assert_write OK "$P" pu "policy: write 'pu' without a newline"
assert_eq pu "$(aipu_policy)" "policy is pu"
before=$(cat "$P")
for b in bogus $'\n' aipux 'kernel aipu' '[aipu]' ' ' 'pu pu'; do
	assert_write EINVAL "$P" "$b" "policy: write $(printf '%q' "$b") refused with EINVAL"
	assert_file_eq "$P" "$before" "policy unchanged"
done
assert_write OK "$P" kernel "back to kernel"

# 5b. write_alloc: a choice knob; purge needs a policy that writes.
W=$S/write_alloc
assert_write EINVAL "$W" purge "write_alloc=purge refused under policy kernel"
assert_file_eq "$W" "[update] purge" "write_alloc still update"
assert_write OK "$P" aipu "policy aipu"
assert_write OK "$W" purge$'\n' "write_alloc: write 'purge\\n' under aipu"
assert_file_eq "$W" "update [purge]" "write_alloc reads 'update [purge]'"
for b in bogus 1 $'\n' ' ' 'purge update' '[purge]'; do
	assert_write EINVAL "$W" "$b" "write_alloc: write $(printf '%q' "$b") refused with EINVAL"
	assert_file_eq "$W" "update [purge]" "write_alloc unchanged"
done
assert_write OK "$P" kernel "policy kernel with purge set is allowed"
assert_file_eq "$W" "[update] purge" "switching to kernel put write_alloc back to update"
assert_write OK "$W" update "write_alloc: write 'update'"

# 6. Read-only files.
for f in stat devices burst_hist age_hist; do
	r=$(write_errno "$S/$f" 1)
	assert_ne OK "$r" "$f is read-only ($r)"
done
cp "$S/stat" "$TEST_TMP/stat"
for n in pages_dirtied meta_dirtied entries_scanned pages_written meta_written pages_clean \
	pages_retried pages_tracked runs_tracked mappings_tracked oldest_age_ms flusher_runs \
	fallbacks pages_deferred pages_late pages_staged pages_purged pages_not_purged \
	pages_evicting pages_redirtied times_dirtied times_written kupdate_off handover_left_ms devices lock_hold_max_ns mem_bytes \
	handover_waiting pages_fast; do
	assert_ok "stat has '$n <number>'" grep -qE "^$n [0-9]+\$" "$TEST_TMP/stat"
done
bad_lines=$(grep -cvE '^[a-z_]+ [0-9]+$' "$S/stat" || true)
assert_eq 0 "$bad_lines" "every stat line is 'name number'"
bad_lines=$(grep -cvE '^[0-9]+ ([0-9]+|-) [0-9]+$' "$S/burst_hist" || true)
assert_eq 0 "$bad_lines" "every burst_hist line is 'low high|- count'"
assert_gt "$(wc -l <"$S/burst_hist")" 0 "burst_hist has lines"
bad_lines=$(grep -cvE '^[0-9]+ ([0-9]+|-) [0-9]+$' "$S/age_hist" || true)
assert_eq 0 "$bad_lines" "every age_hist line is 'low high|- count'"
assert_eq 24 "$(wc -l <"$S/age_hist")" "age_hist has 24 buckets"
# devices_diag DISK: what aipu and the kernel say about DISK, printed when
# the devices file does not list it (a debug-kernel run once found the file
# empty 0.2 s and 1.7 s after the dd below; not explained yet).
devices_diag() {
	echo "# diag: policy $(cat "$P"), max_age_ms $(cat "$S/max_age_ms"), period_ms $(cat "$S/period_ms")"
	echo "# diag: stat: $(grep -E '^(pages_(dirtied|tracked|clean|written)|devices|mappings_tracked|fallbacks) ' \
		"$S/stat" | tr '\n' ' ')"
	sed 's/^/# diag: devices: /' "$S/devices"
	echo "# diag: $1 stat: $(cat "/sys/class/block/$(disk_name "$1")/stat")"
	echo "# diag: open by: $(find /proc/[0-9]*/fd -lname "$1" 2>/dev/null | tr '\n' ' ')"
	echo "# diag: meminfo: $(grep -E '^(Dirty|Writeback):' /proc/meminfo | tr -s ' \n' ' ')"
}
# One devices line per backing device aipu has seen dirty data on.  A device
# that has tracked nothing for 10 s is reaped, and on the debug kernel this
# section's commands take over a second each; so the disk is held open (dd's
# close is then not its last, which would write the pages at once) and the
# pages get a long max_age: the device tracks them until the hold ends.
disk=$(disk_get)
dev_id=$(disk_majmin "$disk")
aipu_set max_age_ms 600000
exec {hold}<"$disk"
devices_before=$(cat "$S/devices")
dd if=/dev/zero of="$disk" bs=4096 count=4 status=none
sleep 0.2
# One read of the file for the asserts, the diagnosis and the format check,
# so they judge the same contents.
devices_after=$(cat "$S/devices")
line=$(grep "^$dev_id " <<<"$devices_after" || true)
assert_ne "" "$line" "devices lists the test disk ($dev_id) once it has dirty data"
if [ -z "$line" ]; then
	echo "# diag: devices before the dd: ${devices_before:-none}"
	devices_diag "$disk"
fi
assert_eq 4 "$(awk '{ print $3 }' <<<"$line")" "the test disk's line counts dd's 4 pages tracked"
# max_age is 600 s, over the wheel's 61-s turn: the age is the pages' own
# (under 60 s even on the debug kernel), not a turn of the wheel older.
assert_lt "$(awk '{ print $7 }' <<<"$line")" 60000 "the test disk's oldest_age_ms is its pages' age"
printf '# devices: %s\n' "${devices_after//$'\n'/$'\n'# devices: }"
bad_lines=$(grep -cvE '^[^ ]+( [a-z_]+ [0-9]+){7}$' <<<"$devices_after" || true)
assert_eq 0 "$bad_lines" "every devices line is a bdi name and seven 'name number' pairs"
sleep 1.5
pid=$(awk -v d="$dev_id" '$1 == d { print $NF }' "$S/devices")
comm=$(cat "/proc/${pid:-0}/comm" 2>&1 || true)
[ "$comm" = aipu ] || devices_diag "$disk"
assert_eq aipu "$comm" "the test disk's flusher_pid ($pid) is a thread named aipu"
assert_eq "$(wc -l <"$S/devices")" "$(aipu_stat devices)" "stat devices counts the lines of devices"
exec {hold}<&-

# 7. Non-root: may read, may not write.
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"; }
aipu_set max_age_ms 4000
for f in policy write_alloc $KNOBS; do
	before=$(cat "$S/$f")
	assert_ok "nobody can read $f" as_nobody cat "$S/$f"
	# shellcheck disable=SC2016 # $1 is expanded by the inner bash
	r=$(as_nobody bash -c '{ printf 5000 >"$1"; } 2>/dev/null && echo OK || echo refused' _ "$S/$f")
	assert_eq refused "$r" "nobody cannot write $f"
	assert_file_eq "$S/$f" "$before" "$f unchanged after nobody's write"
done
# shellcheck disable=SC2016 # $1 is expanded by the inner bash
r=$(as_nobody bash -c '{ printf aipu >"$1"; } 2>&1 || true' _ "$P")
assert_match 'Permission denied' "$r" "nobody's write to policy fails with EACCES"

aipu_dump
