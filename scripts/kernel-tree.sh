#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A kernel tree of a newer Debian kernel (default 7.2, from unstable's
# linux-source-7.2, fetched by scripts/kernel-source.sh) on a small test
# configuration, cached between runs, for building aipu against it and
# booting it in the VM tests.
#
#   scripts/kernel-tree.sh [--version 7.2] [--prepare-only] [--dir DIR]
#                          [--jobs N] [--force] [--module]
#
# --prepare-only  configure and `make modules_prepare` only (about 2 minutes
#                 with the source downloaded and unpacked): enough to compile
#                 aipu against the kernel's headers, which is what
#                 `make check` does. The tree gets the Module.symvers of
#                 Debian's own build of that version (scripts/kernel-source.sh),
#                 so modpost fails a symbol Debian's kernel does not export. Without it the kernel and its modules
#                 are built too (bzImage modules, 25-40 minutes on 2 cores)
#                 so that scripts/vm.sh --kernel-tree can boot it.
# --module        then build aipu.ko against the tree into
#                 build/<kernelrelease>/aipu.ko (scripts/build-all.sh --tree).
#
# The tree is DIR/linux-source-VERSION (DIR: $AIPU_CACHE/kernel-VERSION,
# AIPU_CACHE defaulting to /var/cache/aipu). DIR/stamp records the source
# package version, the config items below and how far the tree was built;
# it is reconfigured from scratch when the version or the items change, or
# with --force. The configuration is virtme-ng's small one (vng --kconfig)
# plus the items below, each checked in .config after make olddefconfig;
# no debug information. Every heavy step runs at nice 19, idle I/O class.
#
# The last line printed is the tree's path.
set -euo pipefail

prog=kernel-tree
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=7.2
dir=""
prepare_only=0
force=0
module=0
jobs=$(($(nproc 2>/dev/null || echo 2) + 1))

# What the VM tests, the trace-event test and bpftrace need, like Debian's
# own kernel where it matters to aipu (HZ, write throttling, cgroup
# writeback, large folios, kprobes on ftrace sites).
items=(
	CONFIG_LOCALVERSION=\"-aipu\"
	CONFIG_LOCALVERSION_AUTO=n
	CONFIG_MODULES=y
	CONFIG_MODULE_UNLOAD=y
	CONFIG_MODULE_SIG=n
	CONFIG_RUST=n
	CONFIG_HZ_250=y
	CONFIG_VIRTIO_BLK=y
	CONFIG_NET_9P_VIRTIO=y
	CONFIG_9P_FS=y
	CONFIG_VIRTIO_FS=y
	CONFIG_OVERLAY_FS=y
	CONFIG_CONFIGFS_FS=y
	CONFIG_BLK_DEV_NULL_BLK=m
	CONFIG_BLK_DEBUG_FS=y
	CONFIG_BLK_WBT=y
	CONFIG_BLK_WBT_MQ=y
	CONFIG_MQ_IOSCHED_DEADLINE=y
	CONFIG_MEMCG=y
	CONFIG_CGROUP_WRITEBACK=y
	CONFIG_TRANSPARENT_HUGEPAGE=y
	CONFIG_SLUB_DEBUG=y
	CONFIG_MAGIC_SYSRQ=y
	CONFIG_EXT2_FS=y
	CONFIG_EXT4_FS=y
	CONFIG_XFS_FS=y
	CONFIG_EXFAT_FS=y
	CONFIG_VFAT_FS=y
	CONFIG_DEBUG_FS=y
	CONFIG_KALLSYMS=y
	CONFIG_FTRACE=y
	CONFIG_FUNCTION_TRACER=y
	CONFIG_DYNAMIC_FTRACE=y
	CONFIG_TRACEPOINTS=y
	CONFIG_EVENT_TRACING=y
	CONFIG_PERF_EVENTS=y
	CONFIG_BLK_DEV_IO_TRACE=y
	CONFIG_KPROBES=y
	CONFIG_KPROBES_ON_FTRACE=y
	CONFIG_KPROBE_EVENTS=y
	CONFIG_BPF_SYSCALL=y
	CONFIG_BPF_EVENTS=y
	CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT=n
	CONFIG_DEBUG_INFO_DWARF4=n
	CONFIG_DEBUG_INFO_DWARF5=n
	CONFIG_DEBUG_INFO_NONE=y
	CONFIG_DEBUG_INFO_BTF=n
)

while [ $# -gt 0 ]; do
	case "$1" in
	--version)
		need_arg "$@"
		version=$2
		shift 2
		;;
	--dir)
		need_arg "$@"
		dir=$2
		shift 2
		;;
	--jobs)
		need_arg "$@"
		jobs=$2
		shift 2
		;;
	--prepare-only) prepare_only=1 && shift ;;
	--force) force=1 && shift ;;
	--module) module=1 && shift ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1': usage: scripts/kernel-tree.sh [--version 7.2] [--prepare-only] [--dir DIR] [--jobs N] [--force] [--module]" ;;
	esac
done

[[ $version =~ ^[0-9]+\.[0-9]+$ ]] || die "--version must look like 7.2, not '$version'."
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, not '$jobs'."
[ -n "$dir" ] || dir=${AIPU_CACHE:-/var/cache/aipu}/kernel-$version
for c in vng make gcc flex bison bc tar xz; do
	command -v "$c" >/dev/null || die "'$c' is not installed: run scripts/install-deps.sh."
done
[ -f /usr/include/libelf.h ] || die "libelf-dev is not installed (objtool needs it): apt-get install libelf-dev."
[ -f /usr/include/openssl/ssl.h ] || die "libssl-dev is not installed: apt-get install libssl-dev."

mkdir -p "$dir" || die "cannot create the cache directory $dir."
dir=$(cd "$dir" && pwd)
tree=$dir/linux-source-$version
stamp=$dir/stamp

exec 9>"$dir/.lock"
flock -n 9 || die "another kernel-tree run is using $dir (lock $dir/.lock): wait for it."

# shellcheck source=scripts/lib-kconfig.sh
. "$root/scripts/lib-kconfig.sh"
low() { kconfig_low "$@"; }

# Its output goes to stderr; its last line is the tarball.
tarball=$("$root/scripts/kernel-source.sh" --version "$version" | tail -n 1)
[ -f "$tarball" ] || die "scripts/kernel-source.sh gave no tarball (got '$tarball')."
pkgver=$(cat "${tarball%.tar.xz}.version")

want=$(
	echo "format 1"
	echo "source linux-source-$version $pkgver"
	printf 'item %s\n' "${items[@]}"
)
have=""
[ -f "$stamp" ] && have=$(grep -vE '^(prepared|built) ' "$stamp" || true)

start=$(date +%s)
if [ "$force" -eq 1 ] || [ "$have" != "$want" ] || [ ! -f "$tree/.config" ] ||
	! grep -q '^prepared ' "$stamp"; then
	if [ "$force" -eq 1 ]; then
		echo "$prog: --force: configuring from scratch"
	elif [ -f "$stamp" ]; then
		echo "$prog: the source or the config items changed (or a run was cut short): configuring from scratch"
	else
		echo "$prog: no tree in $dir yet: unpacking and configuring"
	fi
	rm -f "$stamp"
	rm -rf "$tree"
	echo "$prog: unpacking $tarball into $dir"
	kconfig_unpack "$tarball" "$dir" "$tree"
	cd "$tree"
	kconfig_apply "$dir/config.log" "${items[@]}"
	echo "$prog: configured; make modules_prepare (log: $dir/build.log)"
	low make -j"$jobs" modules_prepare >"$dir/build.log" 2>&1 || {
		grep -E 'error|Error' "$dir/build.log" | tail -n 20 >&2
		die "make modules_prepare failed in $tree (log: $dir/build.log)."
	}
	# Until the kernel itself is built (which writes its own), modpost
	# checks aipu.ko's symbols against Debian's build of this version.
	cp "${tarball%.tar.xz}.Module.symvers" Module.symvers ||
		die "no Debian Module.symvers beside $tarball: run scripts/kernel-source.sh."
	{
		echo "$want"
		echo "prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(($(date +%s) - start))s"
	} >"$stamp"
	echo "$prog: modules_prepare done in $(($(date +%s) - start)) s"
else
	echo "$prog: reusing the configured tree in $tree ($(grep '^prepared ' "$stamp"))"
fi

if [ "$prepare_only" -eq 0 ]; then
	if grep -q '^built ' "$stamp" && [ -f "$tree/arch/x86/boot/bzImage" ] &&
		[ -f "$tree/Module.symvers" ]; then
		echo "$prog: reusing the built kernel ($(grep '^built ' "$stamp"))"
	else
		bstart=$(date +%s)
		cd "$tree"
		echo "$prog: building bzImage and modules with -j$jobs at nice 19 (log: $dir/build.log)"
		if ! low make -j"$jobs" bzImage modules >>"$dir/build.log" 2>&1; then
			grep -E 'error|Error' "$dir/build.log" | tail -n 20 >&2
			die "the kernel build failed (log: $dir/build.log)."
		fi
		# vng --run TREE finds the tree's modules here; prepare them now
		# so that booting never writes into the cache.
		low virtme-prep-kdir-mods >>"$dir/build.log" 2>&1 ||
			die "virtme-prep-kdir-mods failed in $tree (log: $dir/build.log)."
		secs=$(($(date +%s) - bstart))
		echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in ${secs}s" >>"$stamp"
		echo "$prog: kernel built in $((secs / 60)) min $((secs % 60)) s"
	fi
fi

kver=$(cat "$tree/include/config/kernel.release") ||
	die "$tree has no include/config/kernel.release: run with --force."
echo "$prog: kernel $kver, $(du -sh "$dir" | cut -f1) in $dir"
if [ "$module" -eq 1 ]; then
	"$root/scripts/build-all.sh" --tree "$tree" ||
		die "aipu.ko did not build against $tree (log: $root/build/$kver/build.log)."
fi
echo "$tree"
