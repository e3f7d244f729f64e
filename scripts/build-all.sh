#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build aipu.ko for every kernel whose headers are installed
# (/lib/modules/*/build) and every kernel tree scripts/kernel-tree.sh has
# prepared ($AIPU_CACHE/kernel-*/linux-source-*, AIPU_CACHE defaulting to
# /var/cache/aipu), into build/<kver>/aipu.ko, and the VM tests' own module
# (tests/vm/decline) into build/<kver>/aipu_decline.ko.
#
#   scripts/build-all.sh [--tree DIR]... [make args...]   e.g. C=1 W=1
#
# --tree DIR builds for that kernel tree only (repeatable); <kver> is then
# the tree's include/config/kernel.release.
#
# Each kernel gets its own copy of the sources in build/<kver>/src-tree, so
# builds for different kernels (and an in-tree `make` someone runs at the same
# time) never share object files. Every kernel is tried; the exit status is
# non-zero if any build failed. Logs: build/<kver>/build.log; the kernels
# tried, one a line: build/kernels.txt.
#
# With C=1 or C=2, a kernel whose scripts/checker-valid.sh refuses the
# installed sparse (7.2's headers need a newer one than Debian 12's) is
# checked with the sparse scripts/sparse-build.sh builds.
set -euo pipefail

prog=build-all
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

[ -f Kbuild ] || die "no Kbuild in $root: run this from an aipu checkout."

kdirs=()
trees=()
while [ $# -gt 0 ]; do
	case "$1" in
	--tree)
		if [ $# -lt 2 ] || [ -z "$2" ]; then
			die "option --tree needs a kernel tree directory."
		fi
		[ -f "$2/include/config/kernel.release" ] ||
			die "--tree $2 is not a prepared kernel tree (no include/config/kernel.release): run scripts/kernel-tree.sh --prepare-only."
		trees+=("$(cd "$2" && pwd)")
		shift 2
		;;
	*) break ;;
	esac
done
if [ ${#trees[@]} -gt 0 ]; then
	kdirs=("${trees[@]}")
else
	shopt -s nullglob
	kdirs=(/lib/modules/*/build)
	for t in "${AIPU_CACHE:-/var/cache/aipu}"/kernel-*/linux-source-*; do
		if grep -qs '^prepared ' "$(dirname "$t")/stamp" && [ -f "$t/include/config/kernel.release" ]; then
			kdirs+=("$t")
		fi
	done
	shopt -u nullglob
fi
[ ${#kdirs[@]} -gt 0 ] ||
	die "no kernel headers are installed (no /lib/modules/*/build): run scripts/install-deps.sh first."

# The kernel's version: its release file in a tree, else /lib/modules/KVER.
kver_of() {
	if [ -f "$1/include/config/kernel.release" ] && [ "${1#/lib/modules/}" = "$1" ]; then
		cat "$1/include/config/kernel.release"
	else
		basename "$(dirname "$1")"
	fi
}

# CHECK= for a kernel whose checker-valid.sh refuses the installed sparse.
want_sparse=0
for a in "$@"; do
	case "$a" in C=1 | C=2) want_sparse=1 ;; esac
done
check_for() {
	local kdir=$1
	[ "$want_sparse" -eq 1 ] && [ -f "$kdir/scripts/checker-valid.sh" ] || return 0
	[ "$(sh "$kdir/scripts/checker-valid.sh" sparse -m64 2>/dev/null)" != 1 ] || return 0
	echo "CHECK=$("$root/scripts/sparse-build.sh" | tail -n 1)"
}

# The files a module build needs: Kbuild, Makefile and every source and header
# below src/ and include/ (object files and other build output excluded).
source_files() {
	local d
	printf '%s\n' Kbuild
	[ -f Makefile ] && printf '%s\n' Makefile
	[ -f dkms.conf ] && printf '%s\n' dkms.conf
	for d in src include conftest; do
		[ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \
			-o -name 'Kbuild' -o -name 'Makefile' \) -print
	done
	return 0
}

# The VM tests' own module (tests/vm/decline: t_redirty), built with the
# same flags into build/<kver>/aipu_decline.ko, its log appended to aipu's.
build_test_module() { # KDIR OUT [make args...]
	local kdir=$1 out=$2 dtree
	shift 2
	dtree="$out/decline-tree"
	rm -rf "$dtree"
	mkdir -p "$dtree"
	cp tests/vm/decline/Kbuild tests/vm/decline/*.c "$dtree/"
	rm -f "$out/aipu_decline.ko"
	make -j"$jobs" -C "$kdir" M="$root/$dtree" "$@" modules >>"$out/build.log" 2>&1 &&
		cp "$dtree/aipu_decline.ko" "$out/aipu_decline.ko"
}

jobs=$(nproc 2>/dev/null || echo 2)
failed=()
built=()
mkdir -p build
: >build/kernels.txt
for kdir in "${kdirs[@]}"; do
	kver=$(kver_of "$kdir")
	echo "$kver" >>build/kernels.txt
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

	check=$(check_for "$kdir") || die "$kver: no sparse new enough for its headers (scripts/sparse-build.sh failed)."
	echo "build-all: $kver: make -C $kdir M=$root/$tree modules $* $check"
	if make -j"$jobs" -C "$kdir" M="$root/$tree" "$@" ${check:+"$check"} modules >"$log" 2>&1 &&
		[ -f "$tree/aipu.ko" ]; then
		cp "$tree/aipu.ko" "$out/aipu.ko"
		build_test_module "$kdir" "$out" "$@" ${check:+"$check"} || {
			tail -n 20 "$log" >&2
			echo "build-all: $kver: the test module tests/vm/decline FAILED (log: $log)" >&2
			failed+=("$kver")
			continue
		}
		# Show warnings (sparse, W=1, modpost, a checker the kernel
		# turned off) even on success.
		grep -E 'warning:|error:|WARNING:|not available or not up to date' "$log" || true
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
