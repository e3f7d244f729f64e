# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by scripts/kernel-source.sh and scripts/sparse-build.sh: apt-get
# and apt-cache on another Debian suite (unstable) through a private sources
# list, list directory and package cache, leaving the machine's apt
# configuration and state alone.
#
#   apt_private_init SUITE DIR   writes DIR/sources.list (deb and deb-src of
#                                SUITE main on the machine's Debian mirror,
#                                or $AIPU_DEBIAN_MIRROR) and sets apt_opts
#   apt_private_update           apt-get update of those lists; 0 if it worked
#   apt_private ARGS...          apt-get with the private options
#   apt_private_cache ARGS...    apt-cache with the private options
#   apt_private_version PKG      the newest version of binary package PKG
#
# The Release file is checked against Debian's archive keyring, as apt does.
# The caller defines die().

apt_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
apt_opts=()
apt_dir=""

apt_private_init() { # SUITE DIR
	local suite=$1 mirror c
	apt_dir=$2
	for c in apt-get apt-cache dpkg-deb; do
		command -v "$c" >/dev/null || die "'$c' is not installed: this script needs Debian's apt and dpkg."
	done
	[ -f "$apt_keyring" ] || die "no $apt_keyring: apt-get install debian-archive-keyring."
	mirror=${AIPU_DEBIAN_MIRROR:-}
	if [ -z "$mirror" ]; then
		# The first Debian archive this machine already uses.
		mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
			/etc/apt/sources.list.d/*.sources 2>/dev/null |
			grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | head -n 1 | tr -d ' ' || true)
		mirror=${mirror%/}
	fi
	[ -n "$mirror" ] ||
		die "no Debian mirror in /etc/apt (no URI ending in /debian): set AIPU_DEBIAN_MIRROR to one."
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" ||
		die "cannot create $apt_dir."
	{
		echo "deb [signed-by=$apt_keyring] $mirror $suite main"
		echo "deb-src [signed-by=$apt_keyring] $mirror $suite main"
	} >"$apt_dir/sources.list"
	apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::State::status=/dev/null -o APT::Get::List-Cleanup=0
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root)
}

apt_private_update() {
	apt-get "${apt_opts[@]}" -qq update >"$apt_dir/update.log" 2>&1
}

apt_private() {
	apt-get "${apt_opts[@]}" "$@"
}

apt_private_cache() {
	apt-cache "${apt_opts[@]}" "$@"
}

apt_private_version() { # PKG
	apt_private_cache show "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1
}
