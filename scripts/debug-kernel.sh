#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build a debug kernel (KASAN, lockdep, kmemleak, fault injection) from
# Debian's linux-source-6.1 and aipu.ko against it, for scripts/vm.sh
# --kernel-tree.
#
#   scripts/debug-kernel.sh [--dir DIR] [--force] [--jobs N] [--no-module]
#
# The kernel tree is DIR/linux-source-6.1 (DIR: $AIPU_DEBUG_KERNEL_DIR, else
# /var/cache/aipu/debug-kernel). A complete earlier build is reused: DIR/stamp
# records the source tarball's SHA-256 and the config items below, and the
# kernel is rebuilt from scratch when either changes, or with --force.
# The configuration is virtme-ng's small one (vng --kconfig) plus the items
# below, checked in .config after `make olddefconfig`; then
# `make bzImage modules` runs at the lowest CPU and I/O priority.
#
# Then, unless --no-module, scripts/build-all.sh --tree builds aipu.ko and
# the VM tests' own module (aipu_decline.ko, for t_redirty) against the tree
# into build/<kernelrelease>/, as for installed kernels; warnings are
# printed.
# The last line printed is the tree's path.
#
# Measured on the project's 2-core machine, from scratch, unpacking
# included, at nice 19: 16 minutes (961 s) with the CPUs mostly idle, 37
# minutes (2219 s) beside three QEMU guests, 48 minutes (2905 s) beside an
# fstests guest; 2.3 GB in DIR. A cached run takes about 5 s (tarball
# checksum and the module build).
#
# Needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1),
# vng, gcc, make, flex, bison, bc, libelf-dev and libssl-dev
# (scripts/install-deps.sh installs them).
set -euo pipefail

prog=debug-kernel
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tarball=${AIPU_LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
dir=${AIPU_DEBUG_KERNEL_DIR:-/var/cache/aipu/debug-kernel}
force=0
module=1
jobs=$(($(nproc 2>/dev/null || echo 2) + 1))

# Everything the debug kernel must have; each one is checked in .config.
# KMEMLEAK_AUTO_SCAN is off: the tests scan explicitly
# (echo scan >/sys/kernel/debug/kmemleak), so reports never show up in the
# middle of an unrelated test. No debug info: faster, smaller, and KASAN and
# lockdep reports are symbolised from kallsyms anyway. Like Debian's own
# kernel: write throttling (the tests set wbt_lat_usec, which fails without
# it), cgroup writeback, and transparent huge pages (large folios in the
# page cache, e.g. on xfs). exFAT and vfat for t_evict_fs (exFAT's eviction
# never calls truncate_inode_pages_final()).
items=(
	CONFIG_LOCALVERSION=\"-aipu-debug\"
	CONFIG_MODULES=y
	CONFIG_MODULE_UNLOAD=y
	CONFIG_KASAN=y
	CONFIG_KASAN_GENERIC=y
	CONFIG_KASAN_VMALLOC=y
	CONFIG_PROVE_LOCKING=y
	CONFIG_DEBUG_ATOMIC_SLEEP=y
	CONFIG_DEBUG_KMEMLEAK=y
	CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF=n
	CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=n
	CONFIG_DEBUG_FS=y
	CONFIG_FAULT_INJECTION=y
	CONFIG_FAILSLAB=y
	CONFIG_FAIL_PAGE_ALLOC=y
	CONFIG_FAULT_INJECTION_DEBUG_FS=y
	CONFIG_BLK_DEV_NULL_BLK=m
	CONFIG_BLK_WBT=y
	CONFIG_BLK_WBT_MQ=y
	CONFIG_MEMCG=y
	CONFIG_CGROUP_WRITEBACK=y
	CONFIG_TRANSPARENT_HUGEPAGE=y
	CONFIG_VIRTIO_BLK=y
	CONFIG_EXT2_FS=y
	CONFIG_EXT4_FS=y
	CONFIG_XFS_FS=y
	CONFIG_EXFAT_FS=y
	CONFIG_VFAT_FS=y
	CONFIG_FTRACE=y
	CONFIG_TRACEPOINTS=y
	CONFIG_BLK_DEV_IO_TRACE=y
	CONFIG_KPROBES=y
	CONFIG_NET_9P_VIRTIO=y
	CONFIG_9P_FS=y
	CONFIG_VIRTIO_FS=y
	CONFIG_OVERLAY_FS=y
	CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT=n
	CONFIG_DEBUG_INFO_DWARF4=n
	CONFIG_DEBUG_INFO_DWARF5=n
	CONFIG_DEBUG_INFO_NONE=y
	CONFIG_DEBUG_INFO_BTF=n
)

while [ $# -gt 0 ]; do
	case "$1" in
	--dir)
		need_arg "$@"
		dir=$2
		shift 2
		;;
	--dir=*) dir=${1#*=} && shift ;;
	--jobs)
		need_arg "$@"
		jobs=$2
		shift 2
		;;
	--jobs=*) jobs=${1#*=} && shift ;;
	--force) force=1 && shift ;;
	--no-module) module=0 && shift ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1': usage: scripts/debug-kernel.sh [--dir DIR] [--force] [--jobs N] [--no-module]" ;;
	esac
done

[ -n "$dir" ] || die "the cache directory is empty: give --dir DIR or unset AIPU_DEBUG_KERNEL_DIR."
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, not '$jobs'."
[ -f "$tarball" ] ||
	die "no kernel source $tarball: run scripts/install-deps.sh (or apt-get install linux-source-6.1)."
for c in vng make gcc flex bison bc tar xz sha256sum; do
	command -v "$c" >/dev/null || die "'$c' is not installed: run scripts/install-deps.sh."
done
[ -f /usr/include/libelf.h ] || die "libelf-dev is not installed (objtool needs it): apt-get install libelf-dev."
[ -f /usr/include/openssl/ssl.h ] || die "libssl-dev is not installed: apt-get install libssl-dev."

mkdir -p "$dir" || die "cannot create the cache directory $dir."
dir=$(cd "$dir" && pwd)
tree=$dir/linux-source-6.1
stamp=$dir/stamp

# One build at a time in a cache directory.
exec 9>"$dir/.lock"
flock -n 9 || die "another debug-kernel build is running in $dir (lock $dir/.lock)."

# Low priority for everything heavy: the build must not disturb timing
# tests running beside it.
# shellcheck source=scripts/lib-kconfig.sh
. "$root/scripts/lib-kconfig.sh"
low() { kconfig_low "$@"; }

echo "$prog: checksumming $tarball"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
want=$(
	echo "format 1"
	echo "source $sum"
	printf 'item %s\n' "${items[@]}"
)

if [ "$force" -eq 0 ] && [ -f "$stamp" ] && [ "$(grep -v '^built ' "$stamp")" = "$want" ] &&
	[ -f "$tree/arch/x86/boot/bzImage" ] && [ -f "$tree/Module.symvers" ]; then
	echo "$prog: reusing the build in $tree ($(grep '^built ' "$stamp"))"
else
	if [ "$force" -eq 1 ]; then
		echo "$prog: --force: building from scratch"
	elif [ -f "$stamp" ]; then
		echo "$prog: the source or the config items changed since the last build: building from scratch"
	else
		echo "$prog: no complete build in $dir: building from scratch"
	fi
	start=$(date +%s)
	rm -f "$stamp"
	rm -rf "$tree"
	echo "$prog: unpacking $tarball into $dir"
	kconfig_unpack "$tarball" "$dir" "$tree"
	cd "$tree"

	echo "$prog: configuring (vng --kconfig, then the ${#items[@]} debug items)"
	kconfig_apply "$dir/config.log" "${items[@]}"
	echo "$prog: every required item is set; building bzImage and modules with -j$jobs (log: $dir/build.log)"
	if ! low make -j"$jobs" bzImage modules >"$dir/build.log" 2>&1; then
		grep -E 'error|Error' "$dir/build.log" | tail -n 20 >&2
		die "the kernel build failed (log: $dir/build.log)."
	fi
	low make modules_prepare >>"$dir/build.log" 2>&1 ||
		die "make modules_prepare failed (log: $dir/build.log)."
	# vng --run TREE finds the tree's modules here; prepare them now so
	# that booting never has to write into the cache.
	low virtme-prep-kdir-mods >>"$dir/build.log" 2>&1 ||
		die "virtme-prep-kdir-mods failed in $tree (log: $dir/build.log)."
	secs=$(($(date +%s) - start))
	{
		echo "$want"
		echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in ${secs}s"
	} >"$stamp"
	echo "$prog: kernel built in $((secs / 60)) min $((secs % 60)) s"
fi

kver=$(cat "$tree/include/config/kernel.release") ||
	die "$tree has no include/config/kernel.release: run with --force."
echo "$prog: kernel $kver, $(du -sh "$dir" | cut -f1) in $dir"

if [ "$module" -eq 1 ]; then
	# The same build as for installed kernels: aipu.ko and the VM tests' own
	# module (t_redirty's aipu_decline.ko) into build/<kernelrelease>/.
	"$root/scripts/build-all.sh" --tree "$tree" >&2 ||
		die "aipu.ko or the test module did not build against $tree (log: $root/build/$kver/build.log)."
fi

echo "$prog: boot it with: scripts/vm.sh --kernel-tree $tree -- COMMAND"
echo "$tree"
