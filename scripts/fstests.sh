#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run fstests (xfstests), the file systems' own test suite, on ext4 and xfs
# twice in one QEMU boot per kernel and file system: once without aipu,
# once with aipu loaded (policy=aipu max_age_ms=1000 period_ms=100
# handover_ms=0: aipu then writes nearly every dirty page), each on freshly
# made file systems; then print the tests whose result differs.
#
#   scripts/fstests.sh [--src DIR|TARBALL] [--kernels "KVER..."] [--fs "ext4 xfs"]
#                      [--tests "generic/001 ..."] [--group G]... [--exclude "T..."]
#                      [--part K/N]
#                      [--out DIR] [--test-timeout S] [--timeout S] [--memory 6G]
#                      [--build-only] [--list]
#
# --src        fstests' source: a checkout (a kernel developer's own) or a
#              .tar.gz of one. Default $FSTESTS_SRC, else the pinned
#              snapshot ../shared/vendor/xfstests-*.tar.gz beside this
#              checkout when there is one. It is copied and built (nice 19,
#              make -j2) in $AIPU_CACHE/fstests-<id> (AIPU_CACHE defaulting
#              to /var/cache/aipu; <id> hashes the tarball, or the tree's
#              file names, sizes and times), reused while the source is
#              unchanged. Nothing of fstests goes into this repository.
# --kernels    installed kernels to boot (default: the 6.1 and 6.12 ones
#              in /boot, not -rt); also $KVERS.
# --fs         file systems (default "ext4 xfs"); also $FS.
# --tests      run these tests instead of the default list; also $TESTS.
# --group G    run fstests' group G instead (repeatable: the union).
# --exclude    more tests to leave out, besides tests/fstests/exclude;
#              taken out after --part cuts the list, so the parts stay
#              the same tests, less these.
# --part K/N   run only the K-th of N equal consecutive parts of each file
#              system's list (1/4 ... 4/4), so that a comparison too long
#              for one sitting is made in parts; the parts of one N cover
#              the list exactly once. Also $PART.
# --list       print the tests each file system would run, and stop.
# --build-only install the build dependencies and build fstests, and stop.
#
# The default list, computed from fstests' group lists (tests/*/group.list,
# made by fstests' build) for each file system's directories (generic and
# the file system's own):
#   1. every test in both groups "log" and "quick" (crash consistency:
#      most use dm-flakey to drop what was not flushed);
#   2. generic tests in group "auto" and "rw" or "mmap" whose script runs
#      fsx or fsstress ($FSX_PROG, $FSSTRESS_PROG, or a helper of
#      common/: run_fsx, *_fsx, *_fsstress*), except the "soak" and "long_rw" ones (they run for
#      as long as they are given);
#   3. generic tests in both groups "mmap" and "quick".
# Minus tests/fstests/exclude (each line says why) and --exclude.
#
# The disks: two memory-backed null_blk devices made in the guest (test
# 2 GiB, scratch 3 GiB, discard on so mkfs gives the memory back), so the
# guest gets 6 GiB of memory. One ./check runs the list in each half; a
# test running longer than --test-timeout (default 900 s) is killed and
# counted as timed out. The kernel log of each half is split by test and
# each part checked with the VM tests' check (tests/vm/dmesg-bad.ere).
#
# Output in --out (default build/fstests/<date>/): per kernel and file
# system, <kver>/<fs>/: aipu.ko (the module tested), console.txt,
# {noaipu,aipu}/ (fstests' results/ with each test's .out.bad, .full and
# .dmesg; check.log; results.txt, one "test result seconds klog" a line;
# dmesg.txt, klog-bad.txt; with aipu also aipu-stat.txt, its counters at
# the end, and aipu-by-test.txt, "test pages_written pages_late" while each
# test ran, from aipu-samples.txt) and compare.txt; then report.md, a table row
# per run. The last line is "N passed, N failed": a test fails when it
# fails, times out or does not run only with aipu, or its kernel log has a
# bad line only with aipu; a guest that does not finish fails the run.
#
# Environment: FSTESTS_SRC, KVERS, FS, TESTS, PART, AIPU_CACHE.
set -euo pipefail

prog=fstests
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${AIPU_CACHE:-/var/cache/aipu}
src=${FSTESTS_SRC:-}
kernels=${KVERS:-}
fss=${FS:-ext4 xfs}
tests=${TESTS:-}
part=${PART:-}
groups=()
excludes=""
out=""
test_tmo=900
vm_tmo=""
memory=6G
build_only=0
list_only=0

while [ $# -gt 0 ]; do
	case "$1" in
	--src)
		need_arg "$@"
		src=$2
		shift 2
		;;
	--kernels)
		need_arg "$@"
		kernels=$2
		shift 2
		;;
	--fs)
		need_arg "$@"
		fss=$2
		shift 2
		;;
	--tests)
		need_arg "$@"
		tests=$2
		shift 2
		;;
	--group)
		need_arg "$@"
		groups+=("$2")
		shift 2
		;;
	--exclude)
		need_arg "$@"
		excludes="$excludes $2"
		shift 2
		;;
	--out)
		need_arg "$@"
		out=$2
		shift 2
		;;
	--part)
		need_arg "$@"
		part=$2
		shift 2
		;;
	--test-timeout)
		need_arg "$@"
		test_tmo=$2
		shift 2
		;;
	--timeout)
		need_arg "$@"
		vm_tmo=$2
		shift 2
		;;
	--memory)
		need_arg "$@"
		memory=$2
		shift 2
		;;
	--build-only)
		build_only=1
		shift
		;;
	--list)
		list_only=1
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1' (see --help)." ;;
	esac
done

[[ $test_tmo =~ ^[1-9][0-9]*$ ]] || die "--test-timeout must be a positive number of seconds, not '$test_tmo'."
[ -z "$vm_tmo" ] || [[ $vm_tmo =~ ^[1-9][0-9]*$ ]] ||
	die "--timeout must be a positive number of seconds, not '$vm_tmo'."
[[ $memory =~ ^[1-9][0-9]*G$ ]] || die "--memory must be whole GiB like 6G, not '$memory'."
for f in $fss; do
	case "$f" in
	ext4 | xfs) ;;
	*) die "--fs takes ext4 and xfs, not '$f'." ;;
	esac
done
[ -n "${fss// /}" ] || die "--fs is empty: name ext4, xfs or both."
if [ -n "$tests" ] && [ ${#groups[@]} -gt 0 ]; then
	die "give --tests or --group, not both."
fi
for t in $tests $excludes; do
	[[ $t =~ ^[a-z0-9]+/[0-9]+$ ]] || die "'$t' is not an fstests test name like generic/001."
done
for g in "${groups[@]}"; do
	[[ $g =~ ^[a-z0-9_]+$ ]] || die "'$g' is not an fstests group name like quick."
done
part_k=1 part_n=1
if [ -n "$part" ]; then
	[[ $part =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] ||
		die "--part must be K/N with 1 <= K <= N, like 2/4, not '$part'."
	part_k=${BASH_REMATCH[1]} part_n=${BASH_REMATCH[2]}
	[ "$part_k" -le "$part_n" ] || die "--part must be K/N with 1 <= K <= N, like 2/4, not '$part'."
fi

# --- the source -------------------------------------------------------
if [ -z "$src" ]; then
	for f in "$root"/../shared/vendor/xfstests-*.tar.gz; do
		[ -f "$f" ] && src=$f
	done
	[ -n "$src" ] ||
		die "no fstests source: set FSTESTS_SRC (or --src) to an fstests checkout or a .tar.gz of one (git://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git)."
fi
if [ -d "$src" ]; then
	src=$(cd "$src" && pwd)
	{ [ -x "$src/check" ] && [ -d "$src/tests/generic" ]; } ||
		die "$src is not an fstests tree (no check script, no tests/generic): point FSTESTS_SRC at an xfstests-dev checkout."
	# The tree's file names, sizes and times (not .git, not build output).
	id=$(cd "$src" && find . -path ./.git -prune -o -type f \( -name '*.[ch]' -o -name '*.in' \
		-o -name '*.ac' -o -name '*.m4' -o -name Makefile -o -path './tests/*' -o -path './common/*' \
		-o -name check \) -printf '%P %s %T@\n' | LC_ALL=C sort | sha256sum | cut -c1-12)
elif [ -f "$src" ]; then
	case "$src" in
	*.tar.gz | *.tgz) ;;
	*) die "FSTESTS_SRC=$src is a file but not a .tar.gz: give an fstests checkout or a .tar.gz of one." ;;
	esac
	src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
	tar tzf "$src" 2>/dev/null | awk '/^[^\/]+\/check$/ { f = 1 } END { exit !f }' ||
		die "$src holds no fstests tree (no <dir>/check inside): give an fstests checkout or a tarball of one."
	id=$(sha256sum "$src" | cut -c1-12)
else
	die "FSTESTS_SRC=$src is neither a directory nor a .tar.gz file: point it at an fstests checkout or tarball."
fi
tree=$cache/fstests-$id/xfstests

# --- build dependencies -------------------------------------------------
# From shared/notes/environment.md: what fstests' configure and make need on
# Debian 12, and the tools its tests call (xfsprogs, e2fsprogs, ...).
deps=(acl attr automake autoconf bc dbench dump e2fsprogs gawk gcc indent
	libacl1-dev libaio-dev libcap-dev libgdbm-dev libgdbm-compat-dev libinih-dev
	libtool libtool-bin liburing-dev lvm2 make pkg-config psmisc quota sqlite3
	uuid-dev uuid-runtime xfsdump xfslibs-dev xfsprogs)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "fstests needs ${missing[*]}: run as root, or apt-get install them."
	echo "$prog: installing fstests' build dependencies: ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		die "apt-get install ${missing[*]} failed: run apt-get update, then try again."
fi

# --- fstests, built once per source --------------------------------------
if [ -f "$cache/fstests-$id/built" ] && [ -x "$tree/ltp/fsx" ]; then
	echo "$prog: fstests $id already built in $tree" >&2
else
	mkdir -p "$cache" || die "cannot create $cache: set AIPU_CACHE to a writable directory."
	rm -rf "$cache/fstests-$id"
	mkdir -p "$tree"
	echo "$prog: building fstests from $src in $tree (nice 19, make -j2, a few minutes)" >&2
	if [ -d "$src" ]; then
		(cd "$src" && tar cf - --exclude=.git .) | (cd "$tree" && tar xf -)
	else
		tar xzf "$src" -C "$tree" --strip-components=1
	fi
	(cd "$tree" && nice -n 19 make -j2 >"$cache/fstests-$id/build.log" 2>&1) ||
		die "fstests did not build: see $cache/fstests-$id/build.log."
	{ [ -x "$tree/ltp/fsx" ] && [ -f "$tree/tests/generic/group.list" ]; } ||
		die "fstests built without ltp/fsx or tests/generic/group.list: see $cache/fstests-$id/build.log."
	echo "$src" >"$cache/fstests-$id/built"
fi
[ "$build_only" -eq 0 ] || {
	echo "$tree"
	exit 0
}

# --- the tests ----------------------------------------------------------
# group_tests DIR GROUP...: the tests of tests/DIR in every GROUP.
group_tests() {
	local d=$1
	shift
	[ -f "$tree/tests/$d/group.list" ] || return 0
	awk -v d="$d" -v want="$*" '
		/^[ \t]*#/ || NF < 2 { next }
		{
			n = split(want, w, " "); ok = 1
			delete g; for (i = 2; i <= NF; i++) g[$i] = 1
			for (i = 1; i <= n; i++) if (!(w[i] in g)) ok = 0
			if (ok) print d "/" $1
		}' "$tree/tests/$d/group.list"
}
# The generic tests in "auto" and "rw" or "mmap", not "soak" or "long_rw",
# whose script runs fsx or fsstress.
fsx_tests() {
	local t long
	long=$(group_tests generic soak; group_tests generic long_rw)
	{
		group_tests generic auto rw
		group_tests generic auto mmap
	} | sort -u | while read -r t; do
		grep -qxF "$t" <<<"$long" && continue
		grep -qE 'FSX_PROG|FSSTRESS_PROG|run_fsx|_fsx\b|_fsstress' "$tree/tests/$t" && echo "$t"
	done
	return 0
}
# The file's exclusions shape the list that --part cuts; --exclude's are
# taken out of the part afterwards, so that excluding a test does not move
# the parts' boundaries (part K of N stays the tests it was, less those).
excluded_by_file() {
	sed 's/#.*//' "$root/tests/fstests/exclude"
}
excluded_by_option() {
	# shellcheck disable=SC2086 # a list of names, checked above
	printf '%s\n' $excludes
}
without() { # LIST-FUNCTION
	grep -vxF -f <("$1" | awk 'NF { print $1 }') || true
}
test_list() { # FS
	local fs=$1 g
	{
		if [ -n "$tests" ]; then
			# shellcheck disable=SC2086 # a list of names, checked above
			printf '%s\n' $tests
		elif [ ${#groups[@]} -gt 0 ]; then
			for g in "${groups[@]}"; do
				group_tests generic "$g"
				group_tests "$fs" "$g"
			done
		else
			group_tests generic log quick
			group_tests "$fs" log quick
			fsx_tests
			group_tests generic mmap quick
		fi
	} | awk 'NF' | sort -u | without excluded_by_file | in_part |
		without excluded_by_option
}
# Lines i = 0, 1, ... of T with floor(i * N / T) = K - 1: the K-th of N parts.
in_part() {
	local all
	all=$(cat)
	[ -n "$all" ] || return 0
	awk -v k="$part_k" -v n="$part_n" -v t="$(wc -l <<<"$all")" \
		'int((NR - 1) * n / t) == k - 1' <<<"$all"
}

for f in $fss; do
	n=$(test_list "$f" | wc -l)
	[ "$n" -gt 0 ] || die "no test to run on $f: check --tests/--group against $tree/tests/*/group.list."
	if [ "$list_only" -eq 1 ]; then
		echo "# $f: $n tests$([ "$part_n" -eq 1 ] || echo ", part $part_k of $part_n")"
		test_list "$f"
	fi
done
[ "$list_only" -eq 0 ] || exit 0
for t in $tests; do
	[ -f "$tree/tests/$t" ] || die "no test $t in $tree/tests: name one that exists (ls $tree/tests/generic)."
done

# --- kernels and the module ---------------------------------------------
if [ -z "$kernels" ]; then
	for f in /boot/vmlinuz-6.1.* /boot/vmlinuz-6.12.*; do
		[ -f "$f" ] || continue
		case "$f" in *-rt-*) continue ;; esac
		kernels="$kernels ${f#/boot/vmlinuz-}"
	done
	[ -n "$kernels" ] || die "no 6.1 or 6.12 kernel in /boot: run scripts/install-deps.sh, or name kernels with --kernels."
fi
for k in $kernels; do
	[ -f "/boot/vmlinuz-$k" ] || die "no kernel /boot/vmlinuz-$k: name an installed one ($(cd /boot && echo vmlinuz-* | sed 's/vmlinuz-//g'))."
done
echo "$prog: building aipu.ko (scripts/build-all.sh)"
nice -n 19 "$root/scripts/build-all.sh" >/dev/null || die "scripts/build-all.sh failed: see build/<kver>/build.log."
for k in $kernels; do
	[ -f "$root/build/$k/aipu.ko" ] || die "no build/$k/aipu.ko: install that kernel's headers (scripts/install-deps.sh)."
done

if [ -z "$out" ]; then
	out=$root/build/fstests/$(date +%Y%m%d-%H%M%S)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
report=$out/report.md
{
	echo "# fstests with and without aipu"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), aipu $commit$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (modified)'), fstests $id ($(basename "$src"))$([ "$part_n" -eq 1 ] || echo ", part $part_k of $part_n of the list")"
	echo
	echo "| kernel | fs | tests | pass / fail / not run without aipu | with aipu | differ | wall time |"
	echo "| --- | --- | ---: | --- | --- | --- | ---: |"
} >"$report"

# Killing this script must stop the guest too: QEMU runs under vm.sh's
# `timeout`, in a process group of its own, which relays TERM to it.
kill_tree() { # SIGNAL PID
	local c
	for c in $(ps -o pid= --ppid "$2" 2>/dev/null); do kill_tree "$1" "$c"; done
	kill "-$1" "$2" 2>/dev/null || true
}
vm_pid=""
# shellcheck disable=SC2317 # called by the trap
on_signal() {
	[ -z "$vm_pid" ] || kill_tree TERM "$vm_pid"
	echo "$prog: interrupted; the guest was told to stop" >&2
	exit 130
}
trap on_signal INT TERM

passed=0
failed=0
for k in $kernels; do
	for f in $fss; do
		d=$out/$k/$f
		mkdir -p "$d"
		test_list "$f" >"$d/tests.txt"
		n=$(wc -l <"$d/tests.txt")
		tmo=${vm_tmo:-$((n * 2 * (test_tmo / 3) + 900))}
		# The module under test, kept with the results (and safe from a
		# make clean while the guest runs).
		cp "$root/build/$k/aipu.ko" "$d/aipu.ko"
		echo "$prog: $k $f: $n tests, twice (without aipu, with aipu), out: $d"
		start=$(date +%s)
		rc=0
		nice -n 10 "$root/scripts/vm.sh" --kernel "$k" --disk none --memory "$memory" \
			--rodir "$tree" --out "$d" --timeout "$tmo" -- \
			"$root/tests/fstests/fstests-guest.sh" --fs "$f" --fstests "$tree" \
			--tests "$d/tests.txt" --test-timeout "$test_tmo" --ko "$d/aipu.ko" \
			>"$d/console.txt" 2>&1 &
		vm_pid=$!
		wait "$vm_pid" || rc=$?
		vm_pid=""
		secs=$(($(date +%s) - start))
		echo "$prog: $k $f: guest exit status $rc after ${secs}s (console: $d/console.txt)"
		python3 "$root/tests/fstests/compare.py" --tests "$d/tests.txt" \
			--without "$d/noaipu" --with "$d/aipu" --label "$k $f" \
			--secs "$secs" --table "$report" | tee "$d/compare.txt" || true
		p=$(awk 'END { print $1 }' "$d/compare.txt")
		q=$(awk 'END { print $3 }' "$d/compare.txt")
		passed=$((passed + p))
		failed=$((failed + q))
		if [ "$rc" -ne 0 ] && [ "$q" -eq 0 ]; then
			echo "FAIL: $k $f: the guest did not finish (exit status $rc): see $d/console.txt"
			failed=$((failed + 1))
		fi
	done
done
echo
echo "$prog: report: $report"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
