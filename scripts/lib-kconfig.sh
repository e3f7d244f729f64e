# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by scripts/debug-kernel.sh and scripts/kernel-tree.sh: unpack a
# kernel source tarball and configure it as virtme-ng's small kernel plus a
# list of required items, each of which is then checked in .config.
#
#   kconfig_low CMD...                  CMD at the lowest CPU and I/O priority
#   kconfig_unpack TARBALL DIR TREE     unpack TARBALL into DIR, which must
#                                       make TREE
#   kconfig_apply LOG ITEM...           in the tree (the current directory):
#                                       vng --kconfig with the items, the items
#                                       set again, make olddefconfig, and each
#                                       item checked; logs to LOG
#
# An ITEM is NAME=VALUE as in .config (y, m, n, a number or a "string"); n
# means the option must be off. The caller defines die().

kconfig_low() { nice -n 19 ionice -c3 "$@"; }

kconfig_unpack() { # TARBALL DIR TREE
	kconfig_low tar -xJf "$1" -C "$2" || die "could not unpack $1 into $2 (disk space?)."
	[ -f "$3/Makefile" ] || die "$1 did not unpack to $3 (unexpected tarball layout)."
}

# scripts/config's own way to set one NAME=VALUE item.
kconfig_set() { # ITEM
	local name=${1%%=*} val=${1#*=}

	case "$val" in
	y) scripts/config --enable "$name" ;;
	m) scripts/config --module "$name" ;;
	n) scripts/config --disable "$name" ;;
	\"*\")
		val=${val#\"}
		scripts/config --set-str "$name" "${val%\"}"
		;;
	*) scripts/config --set-val "$name" "$val" ;;
	esac
}

kconfig_check() { # ITEM
	local name=${1%%=*} val=${1#*=}

	if [ "$val" = n ]; then
		if grep -q "^$name=" .config; then
			die "$name must be off, but Kconfig turned it on ($(grep "^$name=" .config)): a dependency selects it; see $PWD/.config."
		fi
	elif ! grep -qxF "$name=$val" .config; then
		die "$name=$val is not in .config after make olddefconfig (it has: $(grep -E "^$name=|^# $name is not set" .config || echo nothing)): a dependency is missing; see $PWD/.config."
	fi
}

kconfig_apply() { # LOG ITEM...
	local log=$1 i
	local -a vng_args=()

	shift
	for i in "$@"; do
		vng_args+=(--configitem "$i")
	done
	kconfig_low vng --kconfig "${vng_args[@]}" >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "vng --kconfig failed in $PWD (log: $log)."
	}
	# vng appends its own generic items after ours (one turns debug
	# information back on): set ours once more, last.
	for i in "$@"; do
		kconfig_set "$i"
	done
	kconfig_low make olddefconfig >>"$log" 2>&1 ||
		die "make olddefconfig failed in $PWD (log: $log)."
	for i in "$@"; do
		kconfig_check "$i"
	done
}
