#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# aipu switches Linux's periodic writeback through the real
# vm.dirty_writeback_centisecs, whoever writes the policy: a writer in its
# own mount namespace, where a file is bound over
# /proc/sys/vm/dirty_writeback_centisecs (what a container's /proc may look
# like), must change the real sysctl and leave its own file alone. aipu used
# to open the path from the writer's root, and changed the writer's file.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"
command -v unshare >/dev/null || die "unshare (util-linux) is needed"

KUP=/proc/sys/vm/dirty_writeback_centisecs
wb0=$(cat "$KUP")
[ "$wb0" -gt 0 ] || die "dirty_writeback_centisecs is already 0"
fake=$TEST_TMP/fake_dirty_writeback_centisecs

aipu_load policy=kernel handover_ms=0
# in_ns POLICY: write POLICY from a private mount namespace whose sysctl
# file is a bound copy holding 4242; print what that copy holds after.
in_ns() {
	echo 4242 >"$fake"
	unshare -m sh -c "mount --bind '$fake' '$KUP' && echo '$1' >'$AIPU_SYSFS/policy' && cat '$KUP'"
}
seen=$(in_ns aipu) || die "writing the policy from a private mount namespace failed"
assert_eq 4242 "$seen" "the writer's own bound file is left alone"
assert_eq 0 "$(cat "$KUP")" "policy aipu from another mount namespace: the real sysctl is 0"
assert_eq 1 "$(aipu_stat kupdate_off)" "kupdate_off is 1"
seen=$(in_ns kernel) || die "writing the policy from a private mount namespace failed"
assert_eq 4242 "$seen" "back to kernel: the writer's own bound file is left alone"
assert_eq "$wb0" "$(cat "$KUP")" "policy kernel from another mount namespace: the real sysctl is back to $wb0"
aipu_unload
assert_eq "$wb0" "$(cat "$KUP")" "after rmmod the sysctl is $wb0"
