#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The module DKMS built and installed for this kernel (scripts/dkms-check.sh,
# make check's dkms stage: build/dkms/install/<kver>/updates/dkms/) loads:
# its version is dkms.conf's PACKAGE_VERSION, its srcversion that of
# build/<kver>/aipu.ko (the same sources), and it works: under aipu it
# writes the pages dirtied on the test disk, and rmmod removes it.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_loaded && die "aipu is already loaded"
root=$TESTS_DIR/../..
ko=""
for f in "$root/build/dkms/install/$(uname -r)/updates/dkms/aipu".ko{,.xz,.zst,.gz}; do
	[ -f "$f" ] && ko=$f && break
done
[ -n "$ko" ] || skip "no DKMS-installed aipu.ko for $(uname -r): run scripts/dkms-check.sh first"
want=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)".*/\1/p' "$root/dkms.conf")

sync
insmod "$ko" policy=aipu max_age_ms=500 period_ms=100 handover_ms=0 ||
	die "insmod $ko failed"
on_exit aipu_unload
assert_file_eq /sys/module/aipu/version "$want" "the DKMS module's version is dkms.conf's PACKAGE_VERSION"
if [ -n "${AIPU_KO:-}" ] && [ -f "$AIPU_KO" ]; then
	assert_file_eq /sys/module/aipu/srcversion "$(modinfo -F srcversion "$AIPU_KO")" \
		"same srcversion as build/$(uname -r)/aipu.ko (the same sources)"
fi

dev=$(disk_get)
disk_prepare "$dev"
# Hold the device open: the last close of a block device writes back its
# page cache (blkdev_put()), which would leave aipu nothing to write.
exec {hold}<"$dev"
on_exit "exec $hold<&-"
dirty_pages "$dev" --first-page 0 --count 16 --max-ms 60000 >/dev/null
for _ in $(seq 100); do
	[ "$(aipu_stat pages_written)" -ge 16 ] && break
	sleep 0.1
done
assert_ge "$(aipu_stat pages_written)" 16 "the DKMS module wrote the 16 pages dirtied"
aipu_unload || die "rmmod aipu failed"
assert_fails "rmmod removed it" test -d /sys/module/aipu
