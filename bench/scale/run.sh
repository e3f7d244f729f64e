#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The scale benchmark (bench/scale/README.md): builds bench/scale/scale (the
# module's log-based queue, src/queue/queue.c with src/queue/flog.c, src/queue/log.c,
# src/queue/live.c and src/queue/wheel.c, in user space), runs it on the host's CPU at
# nice 5, and writes build/bench/<date>-host-scale/ (-quick appended with
# --quick):
#
#   summary.md   how it was run (command, date, commit, host CPU, compiler,
#                load), the key figures, every table and report.py's prose
#   tables.md    scale's own output: its headings and tables, no prose
#   env.txt      the same facts, one "key: value" a line, with the sha256
#                of every timed source
#   *.json       scale's measurements (noise, pages, files, threads, holds,
#                evict, steady, repeat, first_touch, memory,
#                criterion, criterion_repeat, meta)
#   plots/*.png  report.py's plots (the hold plots with the 50 us line)
#
# Usage: bench/scale/run.sh [--quick] [--rounds N] [--out DIR] [--only LIST]
#   --quick      sizes up to 100,000 pages and files, 2 rounds (under a minute)
#   --rounds N   rounds per measurement (default 3)
#   --out DIR    results directory (default build/bench/<date>-host-scale)
#   --only LIST  comma-separated sections: noise, pages, files, threads,
#                holds, evict, steady, repeat (memory comes with pages,
#                files and holds; the 50-us criterion with holds, evict
#                and repeat)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-/usr/bin/python3}

quick=0
out=
args=()
usage() {
	sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}
while [ $# -gt 0 ]; do
	case $1 in
	--quick)
		quick=1
		args+=(--quick)
		;;
	--rounds | --only)
		[ $# -ge 2 ] || usage 2
		args+=("$1" "$2")
		shift
		;;
	--out)
		[ $# -ge 2 ] || usage 2
		out=$2
		shift
		;;
	-h | --help) usage 0 ;;
	*)
		echo "run.sh: unknown argument '$1'" >&2
		usage 2
		;;
	esac
	shift
done

date=$(date -u +%Y-%m-%d)
suffix=
[ "$quick" -eq 0 ] || suffix=-quick
dir=${out:-$root/build/bench/$date-host-scale$suffix}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Called from make (make bench-scale), a command line's variables would
# reach these makes too and override their own (OUT, say): not wanted.
unset MAKEFLAGS MFLAGS MAKEOVERRIDES MAKELEVEL
make -s -C "$here" >/dev/null
bin=$root/build/bench/scale/scale

# What was measured: the commit, and whether the sources scale compiles
# differ from it (other work in progress in the same tree).
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
# The timed code, then what the benchmark reads its constants from.
timed=(src/queue/queue.c src/queue/flog.c src/queue/log.c src/queue/live.c src/queue/wheel.c
	include/aipu_queue.h include/aipu_flog.h include/aipu_log.h
	include/aipu_live.h include/aipu_wheel.h)
sources=("${timed[@]}" src/flusher.c src/mapping.c src/dev.c src/knobs.c include/aipu_knobs.h tests/unit bench/scale)
dirty=$(git -C "$root" status --porcelain -- "${sources[@]}" 2>/dev/null || true)
cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
cores=$(nproc)
compiler=$(${CC:-cc} --version | head -1)
cflags=$(make -s --no-print-directory -C "$here" cflags)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
busy_before=$(ps -eo pcpu=,ni=,comm= --sort=-pcpu | head -5 | awk '{printf "%s%s %s%% (nice %s)", (NR > 1 ? ", " : ""), $3, $1, $2}')
start=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
cmd="bench/scale/run.sh${args[*]:+ ${args[*]}}${out:+ --out $out}"

{
	echo "date: $start"
	echo "command: $cmd"
	echo "binary: nice -n 5 build/bench/scale/scale${args[*]:+ ${args[*]}} --out <dir>"
	echo "commit: $commit"
	if [ -n "$dirty" ]; then
		echo "sources differ from the commit: $(echo "$dirty" | tr '\n' ';')"
	else
		echo "sources differ from the commit: no"
	fi
	for f in "${timed[@]}"; do
		echo "sha256 $f: $(sha256sum "$root/$f" | cut -d' ' -f1)"
	done
	echo "host CPU: $cpu, $cores cores ($(uname -m))"
	echo "host kernel: $(uname -r)"
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
	echo "transparent hugepages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
	echo "compiler: $compiler"
	echo "CFLAGS: $cflags"
	echo "load before: $load_before"
	echo "busiest processes before: $busy_before"
} >"$dir/env.txt"

echo "run.sh: results in $dir" >&2
nice -n 5 "$bin" "${args[@]}" --out "$dir" | tee "$dir/tables.md"

{
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "busiest processes after: $(ps -eo pcpu=,ni=,comm= --sort=-pcpu | head -5 | awk '{printf "%s%s %s%% (nice %s)", (NR > 1 ? ", " : ""), $3, $1, $2}')"
	echo "end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
} >>"$dir/env.txt"

key=$("$python" "$here/report.py" "$dir")

{
	echo "# Scale benchmark of the log-based queue (src/queue/queue.c) on the host's CPU"
	echo
	echo "Produced by \`$cmd\` (the binary at nice 5), $start, commit $commit."
	if [ -n "$dirty" ]; then
		echo "**The measured sources differed from that commit** (see env.txt)."
	fi
	echo "Host CPU: $cpu, $cores cores; $compiler; load average before: $load_before."
	echo "The host is shared: other engineers' QEMU guests and builds may have run meanwhile"
	echo "(env.txt lists the busiest processes before and after; each table gives the"
	echo "hypervisor's steal time and the disturbed samples, and table 0 the host's own noise)."
	echo
	echo "$key"
	echo
	# scale's tables with report.py's prose around them, less the title.
	"$python" "$here/report.py" "$dir" --prose | sed '1d'
	echo
	echo '## Environment'
	echo
	echo '```'
	cat "$dir/env.txt"
	echo '```'
} >"$dir/summary.md"
echo "run.sh: wrote $dir/summary.md" >&2
