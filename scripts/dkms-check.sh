#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's DKMS stage: dkms.conf works. The sources a DKMS user gets
# (the module's files and dkms.conf) go through `dkms add`, `dkms build`
# and `dkms install` for every installed kernel (Debian 12's dkms), then
# `dkms uninstall` and `dkms autoinstall` (what Debian's kernel postinst
# hook runs when a kernel is installed) must install it again. Everything
# happens in private trees under build/dkms (--sourcetree, --dkmstree,
# --installtree, --no-depmod): nothing on the machine changes. The modules
# land in build/dkms/install/<kver>/updates/dkms/aipu.ko (.ko.xz where the
# kernel compresses modules), where the VM test
# t_dkms loads them.
#
#   scripts/dkms-check.sh [KVER...]     default: every /lib/modules/*/build
#
# One PASS/FAIL line per kernel and step; the last line is
# "N passed, N failed"; exit status 0 only if nothing failed.
set -euo pipefail

prog=dkms-check
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

command -v dkms >/dev/null || die "dkms is not installed: run scripts/install-deps.sh (or apt-get install dkms)."
[ -f dkms.conf ] || die "no dkms.conf in $root."
name=$(sed -n 's/^PACKAGE_NAME="\([^"]*\)".*/\1/p' dkms.conf)
ver=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)".*/\1/p' dkms.conf)
if [ -z "$name" ] || [ -z "$ver" ]; then die "dkms.conf has no PACKAGE_NAME or PACKAGE_VERSION."; fi

kvers=("$@")
if [ ${#kvers[@]} -eq 0 ]; then
	for d in /lib/modules/*/build; do
		[ -e "$d/Makefile" ] && kvers+=("$(basename "$(dirname "$d")")")
	done
fi
[ ${#kvers[@]} -gt 0 ] || die "no kernel headers are installed (no /lib/modules/*/build): run scripts/install-deps.sh."

out=$root/build/dkms
rm -rf "$out"
mkdir -p "$out/source" "$out/src" "$out/tree" "$out/install"
# What a user's `dkms add .` copies from a clean clone, minus what is not
# the module (tests, benchmarks, docs): the same files build-all.sh uses.
{
	printf '%s\n' Kbuild Makefile dkms.conf LICENSE
	find src include conftest -type f \( -name '*.c' -o -name '*.h' \) -print
} | tar -cf - -T - | tar -xf - -C "$out/source"
dk=(--sourcetree "$out/src" --dkmstree "$out/tree" --installtree "$out/install" --no-depmod)

pass=0
fail=0
step() { # MESSAGE LOG COMMAND...
	local msg=$1 logf=$2
	shift 2
	if "$@" >"$logf" 2>&1; then
		echo "PASS dkms/$msg"
		pass=$((pass + 1))
		return 0
	fi
	tail -n 30 "$logf" | sed 's/^/  /'
	echo "FAIL dkms/$msg (log: $logf)"
	fail=$((fail + 1))
	return 1
}
# The installed module: aipu.ko, or aipu.ko.xz/.zst where the kernel
# compresses its modules (Debian's 6.12).
ko_of() {
	local f
	for f in "$out/install/$1/updates/dkms/$name".ko{,.xz,.zst,.gz}; do
		[ -f "$f" ] && break
	done
	echo "$f"
}

start=$(date +%s)
step "add $name/$ver" "$out/add.log" dkms add "$out/source" "${dk[@]}" || true
for k in "${kvers[@]}"; do
	mkdir -p "$out/install/$k"
	step "build $name/$ver for $k" "$out/build-$k.log" dkms build "$name/$ver" -k "$k" "${dk[@]}" || continue
	step "install $name/$ver for $k" "$out/install-$k.log" dkms install "$name/$ver" -k "$k" "${dk[@]}" || continue
	ko=$(ko_of "$k")
	v=$(modinfo -F version "$ko" 2>/dev/null || true)
	if [ "$v" = "$ver" ] && [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$k" ]; then
		echo "PASS dkms/$k: $ko is version $v, built for $k"
		pass=$((pass + 1))
	else
		echo "FAIL dkms/$k: $ko: version '$v' (want $ver), vermagic '$(modinfo -F vermagic "$ko" 2>&1)'"
		fail=$((fail + 1))
	fi
	# What a kernel upgrade does: the postinst hook's autoinstall.
	step "uninstall for $k" "$out/uninstall-$k.log" dkms uninstall "$name/$ver" -k "$k" "${dk[@]}" || continue
	if [ -e "$(ko_of "$k")" ]; then
		echo "FAIL dkms/$k: dkms uninstall left $ko"
		fail=$((fail + 1))
		continue
	fi
	step "autoinstall for $k (AUTOINSTALL=yes)" "$out/autoinstall-$k.log" dkms autoinstall -k "$k" "${dk[@]}" || continue
	if [ -f "$(ko_of "$k")" ]; then
		echo "PASS dkms/$k: autoinstall installed $ko again"
		pass=$((pass + 1))
	else
		echo "FAIL dkms/$k: dkms autoinstall did not install $ko (is AUTOINSTALL=\"yes\" in dkms.conf?)"
		fail=$((fail + 1))
	fi
done
dkms status "${dk[@]}" 2>&1 | grep -v "readelf: Warning" | sed 's/^/dkms-check: status: /'
echo "dkms-check: $(($(date +%s) - start)) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
