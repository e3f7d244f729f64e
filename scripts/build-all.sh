#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build aipu.ko for every kernel whose headers are installed
# (/lib/modules/*/build) into build/<kver>/aipu.ko.
#
#   scripts/build-all.sh [make args...]     e.g. scripts/build-all.sh C=1 W=1
#
# Each kernel gets its own copy of the sources in build/<kver>/src-tree, so
# builds for different kernels (and an in-tree `make` someone runs at the same
# time) never share object files. Every kernel is tried; the exit status is
# non-zero if any build failed. Logs: build/<kver>/build.log.
set -euo pipefail

die() {
	echo "build-all: $*" >&2
	exit 1
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

[ -f Kbuild ] || die "no Kbuild in $root: run this from an aipu checkout."

shopt -s nullglob
kdirs=(/lib/modules/*/build)
shopt -u nullglob
[ ${#kdirs[@]} -gt 0 ] ||
	die "no kernel headers are installed (no /lib/modules/*/build): run scripts/install-deps.sh first."

# The files a module build needs: Kbuild, Makefile and every source and header
# below src/ and include/ (object files and other build output excluded).
source_files() {
	local d
	printf '%s\n' Kbuild
	[ -f Makefile ] && printf '%s\n' Makefile
	for d in src include; do
		[ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \
			-o -name 'Kbuild' -o -name 'Makefile' \) -print
	done
	return 0
}

jobs=$(nproc 2>/dev/null || echo 2)
failed=()
built=()
for kdir in "${kdirs[@]}"; do
	kver=$(basename "$(dirname "$kdir")")
	if [ ! -e "$kdir/Makefile" ]; then
		echo "build-all: $kver: skipped, $kdir has no Makefile (broken headers link)." >&2
		failed+=("$kver")
		continue
	fi
	out="build/$kver"
	tree="$out/src-tree"
	log="$out/build.log"
	mkdir -p "$out"
	rm -f "$out/aipu.ko"
	# A fresh copy each time: a stale object from a deleted source file
	# must not end up in the module.
	rm -rf "$tree"
	mkdir -p "$tree"
	source_files | tar -cf - -T - | tar -xf - -C "$tree"

	echo "build-all: $kver: make -C $kdir M=$root/$tree modules $*"
	if make -j"$jobs" -C "$kdir" M="$root/$tree" "$@" modules >"$log" 2>&1 &&
		[ -f "$tree/aipu.ko" ]; then
		cp "$tree/aipu.ko" "$out/aipu.ko"
		# Show warnings (and sparse/W=1 output) even on success.
		grep -E 'warning:|error:' "$log" || true
		echo "build-all: $kver: ok -> $out/aipu.ko"
		built+=("$kver")
	else
		tail -n 40 "$log" >&2
		echo "build-all: $kver: FAILED (full log: $log)" >&2
		failed+=("$kver")
	fi
done

echo "build-all: built for ${#built[@]} kernel(s)${built[*]:+: ${built[*]}}"
if [ ${#failed[@]} -gt 0 ]; then
	die "the build failed for ${#failed[@]} kernel(s): ${failed[*]}; see build/<kver>/build.log."
fi
