#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot one installed kernel, or a built kernel tree, under QEMU (TCG,
# through virtme-ng) and run a command in it; the command's exit status
# becomes this script's.
#
#   scripts/vm.sh --kernel KVER|--kernel-tree DIR [--disk none|nullblk|fifo[:IOPS[:BPS]]|serial:MS[:BPS]]
#                 [--disk-size MiB] [--memory 2G] [--cpus 2] [--out HOSTDIR]
#                 [--timeout SECONDS] [--image PATH] [--verbose] [--icount]
#                 [--append PARAM]... [--rodir DIR]... -- COMMAND...
#
# --icount runs QEMU with -icount shift=0,sleep=on: the guest's clock then
# counts emulated instructions (1 ns each) while a vCPU runs and jumps to
# the next timer when it idles, so a CPU-bound measurement taken with the
# guest's clock is an instruction count, the same whatever else the host
# runs (bench/scale/guest-run.sh --icount). It needs --cpus 1: QEMU 7.2
# with icount stops the boot at "x86: Booting SMP configuration" with two.
#
# --append PARAM adds one parameter to the guest kernel's command line
# (e.g. slub_debug=A,aipu_seg64,...,aipu_tracker, every cache of src/mem.c:
# failslab may then fail aipu's slab caches only; tests/vm/t_stress.sh).
#
# --rodir DIR shows the host's DIR read-only at the same path in the guest
# (virtme-ng mounts a tmpfs over /var/cache and a few other directories,
# which hides what is there; scripts/fstests.sh exports its fstests build).
#
# --kernel-tree DIR boots the kernel built in the kernel source tree DIR
# (arch/x86/boot/bzImage) with that tree's own modules, e.g. the debug
# kernel of scripts/debug-kernel.sh; KVER is then the tree's release
# (include/config/kernel.release).
#
# --verbose shows the guest kernel's warnings and worse (loglevel 5) on the
# console as they are written, so that a panic or an oops that kills the
# guest is in the output.
#
# The guest's root is the host's, read-only, so the command can be a path in
# this checkout (relative paths are resolved from the current directory).
# It sees:
#   AIPU_KO    absolute path of build/<kver>/aipu.ko (may not exist; for a
#              --kernel-tree, scripts/debug-kernel.sh builds it there)
#   AIPU_OUT   a writable directory, the host's HOSTDIR (default: a new
#              directory under build/vm-out/)
#   AIPU_DISK  the test disk (/dev/nullb0, /dev/vda) or empty
#   AIPU_KVER  the kernel version booted
#   AIPU_KCONFIG  its .config (/boot/config-KVER, or the tree's .config)
#   and every other AIPU_* variable of the caller's environment.
#
# Disks:
#   none       no test disk
#   nullblk    null_blk loaded in the guest (memory backed, --disk-size
#              rounded up to whole GiB): /dev/nullb0
#   fifo[:N[:B]] a sparse raw image on the host served as virtio-blk with
#              QEMU's I/O throttling at N IOPS (default 60) and, with B,
#              at most B bytes a second: /dev/vda.
#              QEMU's throttle keeps reads and writes in separate queues
#              and alternates between them: not a FIFO.
#   serial:MS[:BPS] the same image served by nbdkit over a Unix socket,
#              one request at a time in the order they arrive, each taking
#              MS milliseconds more than the host's own I/O and, with BPS,
#              at most BPS bytes a second: a strict FIFO disk (a read waits
#              behind every write queued before it, as on the paper's
#              disks): /dev/vda.
#              The image lives under $TMPDIR (default /tmp), which must
#              support O_DIRECT (cache=none): not tmpfs. With --image
#              PATH the disk is that existing raw file instead, and it
#              stays when the VM is gone (the crash test boots twice on
#              it, or reads it from the host).
#
# Exit status: the command's, or 124 if the guest ran longer than --timeout,
# or 125 if the guest never ran the command (boot failure, bad disk, ...),
# or 2 for a usage error.
set -euo pipefail

prog=vm.sh
die_usage() {
	echo "$prog: $*" >&2
	echo "$prog: usage: scripts/vm.sh --kernel KVER|--kernel-tree DIR [options] -- COMMAND... (see --help)" >&2
	exit 2
}
die_rc=125
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

kver=""
ktree=""
disk=none
disk_size=1024
memory=2G
cpus=2
out=""
tmo=${AIPU_VM_TIMEOUT:-1800}
# slab_nomerge: aipu's slab caches stay its own, so that a leak at rmmod
# is the kernel's "Objects remaining" BUG in the log (a cache merged into
# another is only unreferenced at kmem_cache_destroy, never checked).
# rcupdate.rcu_cpu_stall_timeout=60: under TCG on a busy host a vCPU can go
# unscheduled for the kernel's 21 s (CI's crash trial of 17d4731: an idle
# CPU, "fqs=0 (false positive?)", 23 s into the boot, before aipu was
# loaded); 60 s still reports a CPU stuck in a loop.
vng_opts=(--append slab_nomerge --append rcupdate.rcu_cpu_stall_timeout=60)
image=""
icount=0

need_arg() {
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		die_usage "option $1 needs a value."
	fi
}

while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)
		need_arg "$@"
		kver=$2
		shift 2
		;;
	--kernel=*) kver=${1#*=} && shift ;;
	--kernel-tree)
		need_arg "$@"
		ktree=$2
		shift 2
		;;
	--kernel-tree=*) ktree=${1#*=} && shift ;;
	--disk)
		need_arg "$@"
		disk=$2
		shift 2
		;;
	--disk=*) disk=${1#*=} && shift ;;
	--disk-size)
		need_arg "$@"
		disk_size=$2
		shift 2
		;;
	--disk-size=*) disk_size=${1#*=} && shift ;;
	--memory)
		need_arg "$@"
		memory=$2
		shift 2
		;;
	--memory=*) memory=${1#*=} && shift ;;
	--cpus)
		need_arg "$@"
		cpus=$2
		shift 2
		;;
	--cpus=*) cpus=${1#*=} && shift ;;
	--out)
		need_arg "$@"
		out=$2
		shift 2
		;;
	--out=*) out=${1#*=} && shift ;;
	--timeout)
		need_arg "$@"
		tmo=$2
		shift 2
		;;
	--timeout=*) tmo=${1#*=} && shift ;;
	--image)
		need_arg "$@"
		image=$2
		shift 2
		;;
	--verbose)
		vng_opts+=(--verbose --append loglevel=5)
		shift
		;;
	--icount)
		icount=1
		shift
		;;
	--append)
		need_arg "$@"
		[[ $2 =~ ^[A-Za-z0-9_.,=:/+!-]+$ ]] ||
			die_usage "--append takes one kernel parameter (letters, digits and _ . , = : / + ! -), not '$2'."
		vng_opts+=(--append "$2")
		shift 2
		;;
	--rodir)
		need_arg "$@"
		[ -d "$2" ] || die_usage "--rodir $2: no such directory."
		rodir=$(cd "$2" && pwd)
		[[ $rodir =~ ^[A-Za-z0-9_./+-]+$ ]] ||
			die_usage "--rodir path '$rodir' must only contain letters, digits and _ . / + -"
		vng_opts+=(--rodir "$rodir")
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	--)
		shift
		break
		;;
	*) die_usage "unknown argument '$1' (the command goes after --)." ;;
	esac
done

[ $# -gt 0 ] || die_usage "no command given: put it after --, e.g. -- tests/vm/run-guest.sh"
[ "$icount" -eq 0 ] || [ "$cpus" = 1 ] ||
	die_usage "--icount needs --cpus 1 (with two vCPUs QEMU's icount stops the guest's boot)."
installed_kernels() {
	local f
	for f in /boot/vmlinuz-*; do
		[ -f "$f" ] && printf '%s ' "${f#/boot/vmlinuz-}"
	done
	return 0
}
if [ -n "$ktree" ]; then
	# A kernel tree: vng boots its bzImage with its own modules.
	[ -z "$kver" ] || die_usage "give --kernel or --kernel-tree, not both."
	[ -d "$ktree" ] || die_usage "--kernel-tree $ktree: no such directory (scripts/debug-kernel.sh prints the tree it built)."
	ktree=$(cd "$ktree" && pwd)
	if [ ! -f "$ktree/arch/x86/boot/bzImage" ] || [ ! -f "$ktree/.config" ]; then
		die_usage "--kernel-tree $ktree has no built kernel (arch/x86/boot/bzImage, .config): build it first (scripts/debug-kernel.sh)."
	fi
	[ -s "$ktree/include/config/kernel.release" ] ||
		die_usage "--kernel-tree $ktree has no include/config/kernel.release: build it first."
	kver=$(cat "$ktree/include/config/kernel.release")
	kimg=$ktree
	kconfig=$ktree/.config
	# virtme-ng's init mounts a tmpfs on /var/cache (and a few other
	# directories), which would hide a tree there and the modules the
	# guest's /lib/modules/KVER links to: export the tree at its own path.
	[[ $ktree =~ ^[A-Za-z0-9_./+-]+$ ]] ||
		die_usage "--kernel-tree path '$ktree' must only contain letters, digits and _ . / + -"
	vng_opts+=(--rodir "$ktree")
else
	[ -n "$kver" ] || die_usage "--kernel KVER (or --kernel-tree DIR) is required; installed: $(installed_kernels)"
	[ -f "/boot/vmlinuz-$kver" ] ||
		die_usage "no kernel image /boot/vmlinuz-$kver: pick one of: $(installed_kernels)"
	[ -d "/lib/modules/$kver" ] ||
		die_usage "no /lib/modules/$kver: install the modules of that kernel (linux-image-$kver)."
	kimg=/boot/vmlinuz-$kver
	kconfig=/boot/config-$kver
fi
[[ $disk_size =~ ^[1-9][0-9]*$ ]] || die_usage "--disk-size must be a positive number of MiB, not '$disk_size'."
[[ $memory =~ ^[1-9][0-9]*[MG]$ ]] || die_usage "--memory must look like 2G or 1536M, not '$memory'."
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die_usage "--cpus must be a positive integer, not '$cpus'."
[[ $tmo =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout must be a positive number of seconds, not '$tmo'."

iops=""
bps=0
serial_ms=""
case "$disk" in
none | nullblk) ;;
serial:*)
	serial_ms=${disk#serial:}
	case "$serial_ms" in *:*) bps=${serial_ms#*:} serial_ms=${serial_ms%%:*} ;; esac
	[[ $serial_ms =~ ^[1-9][0-9]*$ ]] || die_usage "--disk serial:MS needs a positive whole number of milliseconds a request, not '$serial_ms'."
	[[ $bps =~ ^[0-9]+$ ]] || die_usage "--disk serial:MS:BPS needs a whole number of bytes a second (0: no cap), not '$bps'."
	command -v nbdkit >/dev/null || die "--disk serial needs nbdkit: run scripts/install-deps.sh (or apt-get install nbdkit)."
	disk=serial
	;;
fifo) iops=60 ;;
fifo:*)
	iops=${disk#fifo:}
	case "$iops" in *:*) bps=${iops#*:} iops=${iops%%:*} ;; esac
	[[ $iops =~ ^[1-9][0-9]*$ ]] || die_usage "--disk fifo:IOPS needs a positive integer IOPS, not '$iops'."
	[[ $bps =~ ^[0-9]+$ ]] || die_usage "--disk fifo:IOPS:BPS needs a whole number of bytes a second (0: no cap), not '$bps'."
	disk=fifo
	;;
*) die_usage "--disk must be none, nullblk, fifo[:IOPS[:BPS]] or serial:MS, not '$disk'." ;;
esac
[ -z "$image" ] || [ "$disk" = fifo ] || [ "$disk" = serial ] || die_usage "--image needs --disk fifo[:IOPS] or serial:MS."

command -v vng >/dev/null || die "vng (virtme-ng) is not installed: run scripts/install-deps.sh."
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is not installed: run scripts/install-deps.sh."

if [ -z "$out" ]; then
	mkdir -p "$root/build/vm-out"
	out=$(mktemp -d "$root/build/vm-out/$kver.XXXXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# virtme-ng splits --rwdir on '=' and the kernel command line on spaces.
[[ $out =~ ^[A-Za-z0-9_./+-]+$ ]] ||
	die_usage "--out path '$out' must only contain letters, digits and _ . / + -"

ctl=$(mktemp -d "${TMPDIR:-/tmp}/aipu-vm.XXXXXX")
[[ $ctl =~ ^[A-Za-z0-9_./+-]+$ ]] || die "temporary directory '$ctl' has unusual characters: set TMPDIR to a plain path."
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -s "$ctl/nbdkit.pid" ]; then
		kill "$(cat "$ctl/nbdkit.pid")" 2>/dev/null || true
	fi
	rm -rf "$ctl"
}
trap cleanup EXIT

guest_disk=""
qemu_opts=()
disk_image() { # sets img: --image's file, or a new sparse one in $ctl
	img="$ctl/disk.img"
	if [ -n "$image" ]; then
		[ -f "$image" ] || die_usage "--image $image: no such file (create it first, e.g. truncate -s 256M)."
		img=$(cd "$(dirname "$image")" && pwd)/$(basename "$image")
		[[ $img =~ ^[A-Za-z0-9_./+-]+$ ]] || die_usage "--image path '$img' must only contain letters, digits and _ . / + -"
	else
		truncate -s "${disk_size}M" "$img"
	fi
}
case "$disk" in
nullblk) guest_disk=/dev/nullb0 ;;
fifo)
	guest_disk=/dev/vda
	disk_image
	bps_opt=""
	[ "$bps" -eq 0 ] || bps_opt=",throttling.bps-total=$bps"
	qemu_opts=(--qemu-opts="-drive file=$img,if=none,id=d0,format=raw,cache=none,aio=threads,throttling.iops-total=$iops$bps_opt -device virtio-blk-pci,drive=d0")
	;;
serial)
	guest_disk=/dev/vda
	disk_image
	# One worker thread (-t 1): nbdkit reads the next request only when it
	# has answered the last, and QEMU's NBD client queues the rest in
	# order. The delay and rate filters sleep in that thread, so requests
	# are served strictly one after another. (The rate filter counts bits.)
	# Filters come before the plugin, their parameters after it.
	filters=(--filter=delay) params=(rdelay="${serial_ms}ms" wdelay="${serial_ms}ms")
	if [ "$bps" -ne 0 ]; then
		filters+=(--filter=rate)
		params+=(rate=$((bps * 8)))
	fi
	nbdkit -U "$ctl/nbd.sock" -P "$ctl/nbdkit.pid" -t 1 "${filters[@]}" \
		file "$img" cache=none "${params[@]}" ||
		die "nbdkit did not start on $img."
	qemu_opts=(--qemu-opts="-drive file=nbd+unix:///?socket=$ctl/nbd.sock,if=none,id=d0,format=raw -device virtio-blk-pci,drive=d0")
	;;
esac
[ "$icount" -eq 0 ] || qemu_opts+=(--qemu-opts="-icount shift=0,sleep=on")

# The script the guest runs: environment, disk set-up, then the command.
ko="$root/build/$kver/aipu.ko"
wrapper="$ctl/guest.sh"
{
	echo '#!/usr/bin/env bash'
	echo 'set -uo pipefail'
	printf 'export AIPU_KO=%q AIPU_OUT=%q AIPU_DISK=%q AIPU_KVER=%q AIPU_ROOT=%q AIPU_KCONFIG=%q\n' \
		"$ko" "$out" "$guest_disk" "$kver" "$root" "$kconfig"
	printf 'ctl=%q\n' "$ctl"
	# Other AIPU_* variables (AIPU_TEST_TIMEOUT, ...) pass through.
	while read -r v; do
		case "$v" in
		AIPU_KO | AIPU_OUT | AIPU_DISK | AIPU_KVER | AIPU_ROOT | AIPU_KCONFIG) ;;
		AIPU_*) printf 'export %s=%q\n' "$v" "${!v}" ;;
		esac
	done < <(compgen -e)
	cat <<'EOF'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
echo "vm.sh: guest up: $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
EOF
	if [ "$disk" = nullblk ]; then
		gb=$(((disk_size + 1023) / 1024))
		echo "modprobe null_blk nr_devices=1 memory_backed=1 gb=$gb irqmode=0 || { echo 'vm.sh: modprobe null_blk failed' >&2; exit 125; }"
		echo 'udevadm settle 2>/dev/null || true'
	fi
	cat <<'EOF'
if [ -n "$AIPU_DISK" ]; then
	for _ in $(seq 50); do [ -b "$AIPU_DISK" ] && break; sleep 0.1; done
	[ -b "$AIPU_DISK" ] || { echo "vm.sh: test disk $AIPU_DISK did not appear in the guest" >&2; exit 125; }
fi
EOF
	printf 'cd %q || exit 125\n' "$PWD"
	printf '%q ' "$@"
	echo
	cat <<'EOF'
rc=$?
echo "$rc" >"$ctl/rc"
exit "$rc"
EOF
} >"$wrapper"
chmod +x "$wrapper"

cap=""
[ "$bps" -eq 0 ] || cap=" and at most $bps B/s"
echo "$prog: booting $kver${ktree:+ from $ktree}$([ "$icount" -eq 0 ] || echo ', icount') (disk: $disk${iops:+ at $iops IOPS}${serial_ms:+, $serial_ms ms a request}$cap, memory $memory, $cpus cpus, out: $out, timeout ${tmo}s)" >&2
# QEMU reopens /proc/self/fd/1 and 2 for each console port: on a regular
# file every open truncates it and writes at its own offset, so lines
# overwrite each other. A pipe keeps the output whole when ours is a file.
boot() {
	{
		rc=0
		timeout -k 20 "$tmo" vng --run "$kimg" --disable-kvm \
			--memory "$memory" --cpus "$cpus" \
			--rwdir "$out" --rwdir "$ctl" \
			"${qemu_opts[@]}" "${vng_opts[@]}" \
			--exec "bash $wrapper" </dev/null 2>&1 || rc=$?
		echo "$rc" >"$ctl/vng_rc"
	} | tee "$ctl/console"
}
# QEMU's TCG sometimes kills a 6.12 guest while the kernel patches its own
# text ("Oops: int3", see README, Tests). When that happens in an untainted
# kernel (aipu.ko, out of tree, taints it once loaded) aipu cannot be the
# cause: boot once more, and say so.
emulator_int3() {
	[ ! -f "$ctl/rc" ] && grep -A1 'Oops: int3' "$ctl/console" | grep -q 'Not tainted'
}
boot
if emulator_int3; then
	echo "$prog: the guest died of QEMU TCG's int3 bug before aipu was loaded (untainted kernel): booting once more" >&2
	boot
fi
vng_rc=$(cat "$ctl/vng_rc")

if [ "$vng_rc" -eq 124 ] || [ "$vng_rc" -eq 137 ]; then
	echo "$prog: the guest ran longer than ${tmo}s and was killed: raise --timeout or look for a hang in the console output above." >&2
	exit 124
fi
if [ ! -f "$ctl/rc" ]; then
	echo "$prog: the guest did not finish the command (vng exit status $vng_rc): see the console output above (boot failure, kernel panic, or a setup step that failed)." >&2
	[ "$vng_rc" -ne 0 ] && exit "$vng_rc"
	exit 125
fi
rc=$(cat "$ctl/rc")
[ "$rc" = "$vng_rc" ] || echo "$prog: note: vng exited $vng_rc, the command $rc" >&2
exit "$rc"
