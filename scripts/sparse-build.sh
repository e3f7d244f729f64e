#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build a sparse new enough for a newer kernel's headers, from Debian
# unstable's sparse source package, and cache it.
#
#   scripts/sparse-build.sh [--suite sid] [--dir DIR]
#
# Why: Debian 12's sparse (0.6.4) does not know __typeof_unqual__, which
# 7.2's headers use; 7.2's Makefile then turns C=1 off by itself
# (scripts/checker-valid.sh), and the unstable suite's sparse binary needs
# a newer libc than Debian 12's. So the source package is fetched with a
# private apt configuration (scripts/lib-apt.sh; nothing on the machine
# changes), its upstream tarball unpacked and `make sparse` run with the
# machine's gcc (Debian's own patches are for unstable's toolchain and are
# not applied). About 30 s the first time; cached in
# DIR/sparse-VERSION/sparse (DIR: $AIPU_CACHE/sparse, AIPU_CACHE defaulting
# to /var/cache/aipu) and reused while the suite carries the same version
# (with no network, the newest cached build is used).
#
# scripts/build-all.sh calls this when a kernel's checker-valid.sh refuses
# the installed sparse. The last line printed is the binary's path.
set -euo pipefail

prog=sparse-build
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"
# shellcheck source=scripts/lib-apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-apt.sh"

suite=sid
dir=${AIPU_CACHE:-/var/cache/aipu}/sparse
while [ $# -gt 0 ]; do
	case "$1" in
	--suite | --dir)
		if [ $# -lt 2 ] || [ -z "$2" ]; then die "option $1 needs a value (see --help)."; fi
		case "$1" in
		--suite) suite=$2 ;;
		--dir) dir=$2 ;;
		esac
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1': usage: scripts/sparse-build.sh [--suite sid] [--dir DIR]" ;;
	esac
done
for c in make gcc tar flock; do
	command -v "$c" >/dev/null || die "'$c' is not installed: run scripts/install-deps.sh."
done

mkdir -p "$dir" || die "cannot create the cache directory $dir."
dir=$(cd "$dir" && pwd)
exec 9>"$dir/.lock"
flock 9

apt_private_init "$suite" "$dir/apt-$suite"
if ! apt_private_update; then
	last=$(find "$dir" -mindepth 2 -maxdepth 2 -path '*/sparse-*/sparse' -type f | sort -V | tail -n 1)
	[ -n "$last" ] || die "apt-get update of the '$suite' lists failed (see $apt_dir/update.log) and no sparse is cached: check the network."
	echo "$prog: apt-get update failed; using the cached $last" >&2
	echo "$last"
	exit 0
fi
ver=$(apt_private_cache showsrc sparse 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1)
[ -n "$ver" ] || die "the suite '$suite' has no source package sparse (see $apt_dir/lists)."
out=$dir/sparse-${ver//\~/_}
if [ -x "$out/sparse" ]; then
	echo "$prog: sparse $ver is cached in $out"
	echo "$out/sparse"
	exit 0
fi

dl=$dir/download
rm -rf "$dl" "$out"
mkdir -p "$dl" "$out"
echo "$prog: fetching the source of sparse $ver ($suite)"
(cd "$dl" && apt_private -qq --download-only source "sparse=$ver" >/dev/null) ||
	die "apt-get source --download-only sparse=$ver failed: check the network."
orig=$(find "$dl" -maxdepth 1 -name 'sparse_*.orig.tar.*' | head -n 1)
[ -n "$orig" ] || die "the source package of sparse $ver has no .orig.tar.* (a native package now?)."
tar -xf "$orig" -C "$out" --strip-components=1 || die "cannot unpack $orig."
echo "$prog: make sparse (log: $out/build.log)"
nice -n 19 make -C "$out" -j"$(nproc 2>/dev/null || echo 2)" sparse >"$out/build.log" 2>&1 || {
	tail -n 20 "$out/build.log" >&2
	rm -rf "$out"
	die "building sparse $ver failed (gcc, make installed? log above)."
}
rm -rf "$dl"
echo "$prog: sparse $ver built in $out"
echo "$out/sparse"
