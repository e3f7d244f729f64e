#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch Debian's linux-source-VERSION package from another suite (default:
# 7.2 from unstable) without touching the machine's apt configuration, and
# keep its source tarball in a cache, with the Module.symvers of Debian's
# own amd64 build of that version.
#
#   scripts/kernel-source.sh [--version 7.2] [--suite sid] [--dir DIR]
#
# Packages are downloaded with apt-get and a private sources list, list
# directory and package cache under DIR (default $AIPU_CACHE/src,
# AIPU_CACHE defaulting to /var/cache/aipu): scripts/lib-apt.sh. Nothing is
# installed: each .deb is unpacked with dpkg-deb -x. Kept in DIR:
#   linux-source-VERSION.tar.xz        the kernel source
#   linux-source-VERSION.version       its package version (e.g. 7.2.13-1)
#   linux-source-VERSION.Module.symvers  the exports of Debian's amd64
#        kernel of the same package version, from its linux-headers-*-amd64
#        package (whose headers need a newer libc than Debian 12's: only
#        this file is used). scripts/kernel-tree.sh puts it into a tree
#        that was only prepared, so modpost checks aipu.ko's symbols
#        against what Debian's kernel exports.
# Idempotent: the cache is reused unless the suite now carries another
# version (one `apt-get update` of the private lists, a few seconds); with
# no network the cache is used as it is.
#
# The last line printed is the tarball's path.
set -euo pipefail

prog=kernel-source
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"
# shellcheck source=scripts/lib-apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-apt.sh"

version=7.2
suite=sid
dir=${AIPU_CACHE:-/var/cache/aipu}/src

while [ $# -gt 0 ]; do
	case "$1" in
	--version)
		need_arg "$@"
		version=$2
		shift 2
		;;
	--suite)
		need_arg "$@"
		suite=$2
		shift 2
		;;
	--dir)
		need_arg "$@"
		dir=$2
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1': usage: scripts/kernel-source.sh [--version 7.2] [--suite sid] [--dir DIR]" ;;
	esac
done

[[ $version =~ ^[0-9]+\.[0-9]+$ ]] || die "--version must look like 7.2, not '$version'."
command -v flock >/dev/null || die "flock is not installed: apt-get install util-linux."

pkg=linux-source-$version
mkdir -p "$dir" || die "cannot create the cache directory $dir."
dir=$(cd "$dir" && pwd)
tarball=$dir/$pkg.tar.xz
verfile=$dir/$pkg.version
symvers=$dir/$pkg.Module.symvers

exec 9>"$dir/.lock"
flock 9

apt_private_init "$suite" "$dir/apt-$suite"
cached() { [ -f "$tarball" ] && [ -f "$verfile" ] && [ -f "$symvers" ]; }

if ! apt_private_update; then
	if cached; then
		echo "$prog: apt-get update failed (see $apt_dir/update.log); using the cached $pkg $(cat "$verfile")" >&2
		echo "$tarball"
		exit 0
	fi
	tail -n 5 "$apt_dir/update.log" >&2
	die "apt-get update of the '$suite' lists failed and nothing is cached: check the network or set AIPU_DEBIAN_MIRROR."
fi
want=$(apt_private_version "$pkg")
[ -n "$want" ] || die "the suite '$suite' has no package $pkg (apt-cache search linux-source with the lists in $apt_dir/lists)."

if cached && [ "$(cat "$verfile")" = "$want" ]; then
	echo "$prog: $pkg $want is cached in $tarball"
	echo "$tarball"
	exit 0
fi

# Debian's amd64 headers package built from the same source version.
hdr=""
for p in $(apt_private_cache search --names-only "^linux-headers-${version//./\\.}\\.[0-9]+\\+deb[0-9]+-amd64\$" |
	awk '{print $1}'); do
	if [ "$(apt_private_version "$p")" = "$want" ]; then
		hdr=$p
	fi
done
[ -n "$hdr" ] || die "the suite '$suite' has no linux-headers-$version.*-amd64 of version $want (a new upload not built yet? try again later)."

x=$dir/unpack
rm -rf "$x" "$apt_dir"/cache/archives/*.deb
echo "$prog: downloading $pkg and $hdr, version $want ($suite)"
(cd "$apt_dir/cache/archives" && apt_private -qq download "$pkg=$want" "$hdr=$want") ||
	die "apt-get download $pkg=$want $hdr=$want failed: check the network or the disk space in $dir."
for p in "$pkg" "$hdr"; do
	deb=$(find "$apt_dir/cache/archives" -maxdepth 1 -name "${p}_*.deb" | head -n 1)
	[ -n "$deb" ] || die "apt-get download left no ${p}_*.deb in $apt_dir/cache/archives."
	dpkg-deb -x "$deb" "$x" || die "dpkg-deb -x $deb failed (a truncated download? run again)."
done
[ -f "$x/usr/src/$pkg.tar.xz" ] || die "$pkg holds no usr/src/$pkg.tar.xz (has the package's layout changed?)."
sv=$(find "$x/usr/src" -path "*${hdr#linux-headers-}/Module.symvers" | head -n 1)
[ -n "$sv" ] || die "$hdr holds no Module.symvers (has the package's layout changed?)."
mv "$sv" "$symvers.tmp" && mv "$symvers.tmp" "$symvers"
mv "$x/usr/src/$pkg.tar.xz" "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
echo "$want" >"$verfile"
rm -rf "$x" "$apt_dir"/cache/archives/*.deb
echo "$prog: $pkg $want -> $tarball ($(du -h "$tarball" | cut -f1)), $symvers ($(wc -l <"$symvers") exports)"
echo "$tarball"
