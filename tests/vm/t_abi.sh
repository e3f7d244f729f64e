#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# docs/ABI/testing/sysfs-kernel-aipu matches the loaded module: every file
# under /sys/kernel/aipu/ is documented and every documented file exists,
# with the documented mode (RW/RO); every counter in stat is in the stat
# entry's table and the other way round, in order; each histogram has the
# documented number of buckets; and, loaded without parameters, every knob
# reads its documented default, and the module's parameters (modinfo: the
# one list of knobs, include/aipu_knobs.h) are the documented knobs with
# their documented ranges and defaults. The names come from the module
# (abidoc.py lists the directory and reads stat), not from a list kept in
# the test.
# Then the same after a policy switch and some writeback, so the counters
# and files do not depend on the state.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

doc=$TESTS_DIR/../../docs/ABI/testing/sysfs-kernel-aipu
[ -f "$doc" ] || die "no ABI file $doc"
abidoc() { python3 "$TESTS_DIR/abidoc.py" "$@"; }

# shellcheck disable=SC2119 # no parameters: the defaults are under test
aipu_load
parm=$(mktemp)
on_exit "rm -f $parm"
modinfo -F parm "$AIPU_KO" >"$parm" || die "modinfo $AIPU_KO failed"
assert_ok "ABI file matches the module at load (defaults, and the knobs' list as modinfo shows it)" \
	abidoc check --doc "$doc" --sysfs "$AIPU_SYSFS" --defaults --modinfo "$parm"
abidoc check --doc "$doc" --sysfs "$AIPU_SYSFS" --defaults --modinfo "$parm" | grep -E '^(FAIL|abidoc):' || true

# Some state: a writing policy, pages written, so every counter is live.
dev=$(disk_get)
disk_prepare "$dev"
# Hold the device open: the last close of a block device writes back its
# page cache (blkdev_put()), which would leave aipu nothing to write.
exec {hold}<"$dev"
on_exit "exec $hold<&-"
aipu_set handover_ms 0
aipu_set max_age_ms 200
aipu_set period_ms 100
aipu_set policy aipu
dirty_pages "$dev" --first-page 0 --count 32 --max-ms 60000 >/dev/null
for _ in $(seq 100); do
	[ "$(aipu_stat pages_written)" -gt 0 ] && break
	sleep 0.1
done
[ "$(aipu_stat pages_written)" -gt 0 ] || aipu_dump
assert_gt "$(aipu_stat pages_written)" 0 "aipu wrote pages"
assert_ok "ABI file matches the module after writeback under aipu" \
	abidoc check --doc "$doc" --sysfs "$AIPU_SYSFS"
abidoc check --doc "$doc" --sysfs "$AIPU_SYSFS" | grep -E '^(FAIL|abidoc):' || true
