#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The scale benchmark in a guest (issue 14, item 5; bench/scale/README.md,
# "In a guest"): boots one QEMU (TCG) VM per kernel with scripts/vm.sh at
# nice 10 and runs bench/scale/guest.sh in it: rows none and aipu (policy
# kernel: tracking without writing), alternating, N trials each, of random
# 4-KiB writes over every page of a cached 1-GiB file and of extracting
# Debian's linux-source-6.1 tree onto ext4, and the two-device case (a
# fast device's write times against its pages' dirty times while a slow
# one holds a backlog, under aipu and under Linux's writeback). Then
# bench/scale/guest_report.py writes summary.md, summary.json and
# plots/guest-scale.png into
# build/bench/<date>-<kver>-guest-scale[-quick]/.
#
#   bench/scale/guest-run.sh [--quick] [--kernel KVER]... [--trials N]
#                            [--tree-trials N] [--mib M] [--phases "calib random tree two look"]
#                            [--memory 6G] [--icount] [--out DIR]
#
# --kernel: default the newest installed 6.1 (not -rt) with a built
# build/<kver>/aipu.ko; repeat it (or give "KVER KVER") for 6.12 too.
# --quick: one trial, a 64-MiB file and the first 4,000 members of the
# tree (about 10 minutes); default: three trials, 1 GiB and the whole
# tree (83,732 members, 1.36 GB). The default needs about an hour of one
# host CPU (estimated from the CPU times measured on 2026-11-25: 8-14 s of
# QEMU CPU a random trial, and about 220 s an extraction of the whole tree
# scaled from 7-9 s for its first 4,000 members, plus boot, copies and
# rm); on that day's overloaded host (the VM got 13-40 % of a CPU) its
# first whole-tree extraction had not finished after 13 minutes. Measured
# on an idle host on 2026-11-30: an extraction 68-79 s of QEMU CPU, and
# "--phases tree --tree-trials 2" 8 minutes in all, boot included.
# --icount: one vCPU under QEMU's -icount shift=0,sleep=on (scripts/vm.sh
# --icount), phases random and tree by default (not two or look, which
# time devices, nor profile: under icount perf's cpu-clock samples land on
# the idle loop and function_graph's own cost, about 700 instructions a
# traced call, swamps the probe's). The guest's clock then counts emulated
# instructions, so the rows' ratio by the guest's clock is a ratio of
# instruction counts: repeatable within a fraction of a percent whatever
# else the host runs, where QEMU's CPU time varies by 5-15 % a trial. It
# counts no cache miss or lock wait, which the host's user-space figures
# (bench/scale/run.sh) measure. Results go to
# build/bench/<date>-<kver>-guest-scale-icount/.
# The uncompressed tar is made once on the host from
# /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)
# into /var/tmp/aipu-scale-guest/ (xz under TCG would take minutes and is
# not what is measured; not under build/, which make clean removes), and
# linked into the results directory for the run. aipu.ko is copied there
# first as aipu.kmod, so that neither a rebuild nor a make clean (whose
# kbuild clean deletes every *.ko under the tree) can change or remove the
# module mid-run; the copies are removed at the end.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-/usr/bin/python3}
prog=guest-run.sh

usage() {
	sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "${1:-0}"
}
die() {
	echo "$prog: $*" >&2
	exit 2
}

quick=0
kernels=""
trials=""
tree_trials=""
mib=""
phases=""
memory=6G
icount=0
out=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--icount) icount=1 ;;
	--kernel | --kernels)
		[ $# -ge 2 ] || usage 2
		kernels+=" $2"
		shift
		;;
	--trials | --tree-trials | --mib | --phases | --memory | --out)
		[ $# -ge 2 ] || usage 2
		case $1 in
		--trials) trials=$2 ;;
		--tree-trials) tree_trials=$2 ;;
		--mib) mib=$2 ;;
		--phases) phases=$2 ;;
		--memory) memory=$2 ;;
		--out) out=$2 ;;
		esac
		shift
		;;
	-h | --help) usage 0 ;;
	*)
		echo "$prog: unknown argument '$1'" >&2
		usage 2
		;;
	esac
	shift
done

if [ -z "$phases" ]; then
	phases="calib random tree two"
	[ "$icount" -eq 0 ] || phases="random tree"
fi
if [ "$icount" -eq 1 ]; then
	for p in two look profile; do
		[[ " $phases " != *" $p "* ]] ||
			die "--icount counts instructions, phase $p times devices or samples: run it without --icount."
	done
fi

newest() { # PATTERN: the newest kernel matching it with an image and aipu.ko
	find /lib/modules -mindepth 1 -maxdepth 1 -name "$1" ! -name '*-rt-*' -printf '%f\n' 2>/dev/null |
		while read -r k; do
			[ -f "/boot/vmlinuz-$k" ] && [ -f "$root/build/$k/aipu.ko" ] && echo "$k"
		done | sort -V | tail -n 1
}
[ -n "${kernels// /}" ] || kernels=$(newest '6.1.*')
[ -n "${kernels// /}" ] || die "no 6.1 kernel with a built build/<kver>/aipu.ko: run scripts/build-all.sh."
for k in $kernels; do
	[ -f "$root/build/$k/aipu.ko" ] || die "no build/$k/aipu.ko: run scripts/build-all.sh."
done

# The tree: uncompressed once on the host (quick: its first 4,000 members).
xzsrc=/usr/src/linux-source-6.1.tar.xz
cache=${AIPU_SCALE_CACHE:-/var/tmp/aipu-scale-guest}
mkdir -p "$cache"
tarfile=""
if [[ " $phases " == *" tree "* ]]; then
	[ -f "$xzsrc" ] || die "no $xzsrc: apt-get install linux-source-6.1 (scripts/install-deps.sh)."
	full=$cache/linux-source-6.1.tar
	if [ ! -f "$full" ] || [ "$full" -ot "$xzsrc" ]; then
		echo "$prog: uncompressing $xzsrc into $full (once)" >&2
		nice -n 10 xz -dc "$xzsrc" >"$full.part"
		mv "$full.part" "$full"
	fi
	tarfile=$full
	if [ "$quick" -eq 1 ]; then
		tarfile=$cache/linux-source-6.1-head4000.tar
		if [ ! -f "$tarfile" ] || [ "$tarfile" -ot "$full" ]; then
			"$python" - "$full" "$tarfile.part" 4000 <<'EOF'
import sys
import tarfile

with tarfile.open(sys.argv[1]) as src, tarfile.open(sys.argv[2], "w", format=tarfile.GNU_FORMAT) as dst:
    for i, m in enumerate(src):
        if i >= int(sys.argv[3]):
            break
        dst.addfile(m, src.extractfile(m) if m.isfile() else None)
EOF
			mv "$tarfile.part" "$tarfile"
		fi
	fi
fi

gargs=()
[ "$quick" -eq 0 ] || gargs+=(--quick)
[ -z "$trials" ] || gargs+=(--trials "$trials")
[ -z "$tree_trials" ] || gargs+=(--tree-trials "$tree_trials")
[ -z "$mib" ] || gargs+=(--mib "$mib")
gargs+=(--phases "$phases")

suffix=-guest-scale
[ "$quick" -eq 0 ] || suffix+=-quick
vmargs=(--cpus 2)
iarg=""
if [ "$icount" -eq 1 ]; then
	suffix+=-icount
	vmargs=(--cpus 1 --icount)
	iarg=" --icount"
fi
nk=$(wc -w <<<"$kernels")
status=0
for k in $kernels; do
	if [ -z "$out" ]; then
		dir=$root/build/bench/$(date -u +%Y-%m-%d)-$k$suffix
	elif [ "$nk" -gt 1 ]; then
		dir=$out/$k
	else
		dir=$out
	fi
	rm -rf "$dir"
	mkdir -p "$dir/guest"
	dir=$(cd "$dir" && pwd)
	cp "$root/build/$k/aipu.ko" "$dir/guest/aipu.kmod"
	gtar=""
	if [ -n "$tarfile" ]; then
		gtar=$dir/guest/linux-source.tar
		ln -f "$tarfile" "$gtar" 2>/dev/null || cp "$tarfile" "$gtar"
	fi
	# The random phase's writer (randwrite.c), built here for the guest.
	gcc -O2 -Wall -Wextra -o "$dir/guest/randwrite" "$here/randwrite.c"
	# calib: bench/scale's binary (src/queue/queue.c in user space), on the host
	# now and in the guest (guest.sh): TCG's factor for aipu's own code.
	scalebin=""
	if [[ " $phases " == *" calib "* ]]; then
		make -s -C "$here" >/dev/null
		scalebin=$dir/guest/scale
		cp "$root/build/bench/scale/scale" "$scalebin"
		mkdir -p "$dir/host-calib"
		nice -n 10 "$scalebin" --quick --only pages --rounds 3 --out "$dir/host-calib" \
			>"$dir/host-calib/tables.md" 2>&1 || echo "$prog: the host's calibration run failed" >&2
	fi
	commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
	srcdirty=$(git -C "$root" status --porcelain -- src include Kbuild 2>/dev/null | tr '\n' ';' || true)
	start=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
	cmd="bench/scale/guest-run.sh${gargs[*]:+ ${gargs[*]}}$iarg --kernel $k"
	busy() { ps -eo pcpu=,ni=,comm= --sort=-pcpu | head -5 | awk '{printf "%s%s %s%% (nice %s)", (NR > 1 ? ", " : ""), $3, $1, $2}'; }
	{
		echo "date: $start"
		echo "command: $cmd"
		echo "commit: $commit"
		echo "module sources differ from the commit: ${srcdirty:-no}"
		echo "aipu.ko sha256: $(sha256sum "$dir/guest/aipu.kmod" | cut -d' ' -f1) (build/$k/aipu.ko, built $(date -u -r "$root/build/$k/aipu.ko" '+%Y-%m-%d %H:%M:%S UTC'))"
		echo "kernel: $k"
		echo "vm: scripts/vm.sh --disk fifo:1000000 --disk-size 8192 --memory $memory ${vmargs[*]}, at nice 10"
		[ "$icount" -eq 0 ] || echo "icount: shift=0,sleep=on (the guest's clock counts emulated instructions, 1 ns each)"
		echo "qemu: $(qemu-system-x86_64 --version | head -n 1)"
		echo "host CPU: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(nproc) cores"
		echo "host kernel: $(uname -r)"
		echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "busiest processes before: $(busy)"
	} >"$dir/env.txt"
	echo "$prog: ===== $k: results in $dir" >&2
	set +e
	AIPU_SCALE_KO=$dir/guest/aipu.kmod AIPU_SCALE_BIN=$scalebin AIPU_SCALE_RANDWRITE=$dir/guest/randwrite nice -n 10 "$root/scripts/vm.sh" --kernel "$k" \
		--disk fifo:1000000 --disk-size 8192 --memory "$memory" "${vmargs[@]}" \
		--timeout 7200 --out "$dir/guest" --verbose -- \
		"$here/guest.sh" "${gargs[@]}" ${gtar:+--tar "$gtar"} 2>&1 |
		"$python" "$here/guest_cpu.py" "$dir/guest/host-cpu.txt" "$dir/guest"
	rc=${PIPESTATUS[0]}
	set -e
	rm -f "$dir/guest/aipu.kmod" "$dir/guest/scale" "$dir/guest/randwrite" "$dir/guest/linux-source.tar"
	{
		echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "busiest processes after: $(busy)"
		echo "end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		echo "guest exit status: $rc"
	} >>"$dir/env.txt"
	if [ "$rc" -ne 0 ]; then
		echo "$prog: $k: the guest run failed (exit status $rc): see $dir/guest/guest.log" >&2
		status=1
	fi
	if [ -s "$dir/guest/results.txt" ]; then
		"$python" "$here/guest_report.py" "$dir" || status=1
	fi
	echo "$prog: $k: results in $dir" >&2
done
exit "$status"
