#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make crashtest`: the crash bound, measured. Each trial boots a kernel
# under QEMU on a fresh FIFO disk image (100 IOPS), lets a writer write 4 KiB
# records at 20 a second without fsync under one policy, and hard-resets the
# guest (sysrq b) at a random moment 6-14 s in. Variants (--fs, --mode):
#
#   overwrite  (the default) random records of a preallocated file are
#              overwritten. The host reads the records straight from the
#              image (the file's extents were recorded before the writes),
#              then, as a second check, as the file system recovered by
#              e2fsck sees them (below).
#   append     records are appended to a file that starts empty. Where they
#              land is not known before the writes (ext4 allocates at
#              writeback), so the host recovers the file without mounting:
#              `e2fsck -fy` on the image (it replays the ext4 journal in user
#              space; on ext2 it repairs), then `debugfs -R "dump /rec.dat"`.
#   ext4       (the default) mounted with commit=5 (Linux's default, named).
#   ext2       no journal (Debian's kernels mount it with the ext4 driver).
#
# The host checks that every record written more than BOUND before the
# reset is there, in that version or a newer one, BOUND being the policy's
# nominal bound, plus the journal's commit interval where the journal holds
# what makes the data reachable, plus one second for the I/O:
#
#   aipu    max_age_ms + period_ms + 1 s
#   pu      pu_interval_ms + period_ms + 1 s
#   kernel  (no module) dirty_expire + dirty_writeback + 1 s, set to the
#           same numbers: reported, not judged (Linux promises no bound)
#   linux   (no module) Linux as booted: dirty_expire 30 s, dirty_writeback
#           5 s, and writeback throttling on (wbt_lat_usec 75 ms; the other
#           policies run with it off): 30 s + 5 s + 1 s, the run 40-80 s
#           (+ the commit for ext4 append): reported, not judged
#   off     (no module, Linux's periodic writeback off) the control: nothing
#           is written before the reset, so the check must find violations;
#           a trial without any fails (the test could not tell)
#   ext4 append: + the commit interval (5 s): the new blocks' allocation and
#           the file's on-disk size reach the disk only with the jbd2 commit
#           after the data's writeback started, so the run is lengthened to
#           bound + 4 to bound + 14 s; the plain bound is also counted there,
#           measured, not judged.
#
#   scripts/crashtest.sh [--kernels "KVER ..."] [--policies "aipu pu kernel linux off"]
#                        [--fs "ext4 ext2"] [--mode "overwrite append"]
#                        [--trials N] [--max-age-ms MS] [--period-ms MS]
#                        [--out DIR] [--seed N]
#
# Defaults: every installed kernel but PREEMPT_RT ones, aipu pu kernel
# off, ext4, overwrite, 10 trials each, max_age 3000 ms, period 1000 ms (a
# 5-s bound), out build/crash/. A trial takes about 45 s under TCG (a minute for ext4
# append). Writes DIR/<kver>/<policy>-<n>/ (ext4 overwrite) or
# DIR/<kver>/<fs>-<mode>/<policy>-<n>/ (the guest's log, trial.txt,
# result.json, e2fsck.log) and DIR/summary.txt; prints a table, one row per
# kernel, variant and policy with its bound, then "N passed, N failed": a
# trial of aipu or pu passes with no violation, a kernel or linux trial if
# it ran, an
# off trial with violations. "oldest lost" is the largest age at the reset
# of any record lost, over the row's trials: every record older than that
# was safe in all of them. Exit status 1 on any failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
prog=crashtest
die_rc=2
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-cli.sh"

kernels="" policies="aipu pu kernel off" trials=10 max_age=3000 period=1000
fss=ext4 modes=overwrite
# ext4's journal commit interval (crash-guest.sh mounts with commit=this).
commit_s=5
out=build/crash seed=${AIPU_CRASH_SEED:-$RANDOM}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "option $1 needs a value."
	case "$1" in
	--kernels) kernels=$2 ;;
	--policies) policies=$2 ;;
	--fs) fss=$2 ;;
	--mode) modes=$2 ;;
	--trials) trials=$2 ;;
	--max-age-ms) max_age=$2 ;;
	--period-ms) period=$2 ;;
	--out) out=$2 ;;
	--seed) seed=$2 ;;
	*) die "unknown argument '$1': see the header of scripts/crashtest.sh." ;;
	esac
	shift 2
done
for v in trials max_age period seed; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "--${v//_/-} must be a positive whole number, not '${!v}'."
done
for p in $policies; do
	case "$p" in aipu | pu | kernel | linux | off) ;; *) die "unknown policy '$p' in --policies: use aipu, pu, kernel, linux or off." ;; esac
done
for f in $fss; do
	case "$f" in ext4 | ext2) ;; *) die "unknown file system '$f' in --fs: use ext4 or ext2." ;; esac
done
for m in $modes; do
	case "$m" in overwrite | append) ;; *) die "unknown mode '$m' in --mode: use overwrite or append." ;; esac
done
if [ -z "${fss// /}" ] || [ -z "${modes// /}" ] || [ -z "${policies// /}" ]; then
	die "--fs, --mode and --policies need at least one value each."
fi
if [ -z "$kernels" ]; then
	for d in /lib/modules/*/build; do
		case "$d" in *-rt-*) continue ;; esac # PREEMPT_RT: only when named
		[ -e "$d" ] && kernels+=" $(basename "$(dirname "$d")")"
	done
fi
[ -n "${kernels// /}" ] || die "no kernel with headers in /lib/modules: run scripts/install-deps.sh."
# The plain bound (every policy's nominal max_age + period here, plus 1 s
# for the I/O), and the bound of a variant: ext4 append adds the commit.
plain=$((max_age + period + 1000))
# Linux's defaults (dirty_expire_centisecs 3000, dirty_writeback 500) + 1 s.
linux_plain=$((30000 + 5000 + 1000))
bound_of() { # FS MODE
	if [ "$1" = ext4 ] && [ "$2" = append ]; then
		echo $((plain + commit_s * 1000))
	else
		echo "$plain"
	fi
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aipu-crash.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
summary=$out/summary.txt
longer=""
if [[ " $fss " == *" ext4 "* && " $modes " == *" append "* ]]; then
	longer=", ext4 append $(bound_of ext4 append) ms (+ the ${commit_s}-s commit interval; see each row)"
fi
echo "crash bound: records older than ${plain} ms at the reset must be on disk${longer} (seed $seed)" | tee "$summary"

pass=0 fail=0
# What in a trial's console fails it: the kernel's own reports, the VM
# tests' list (tests/vm/dmesg-bad.ere) and a panic.
[ -s tests/vm/dmesg-bad.ere ] || die "tests/vm/dmesg-bad.ere is missing or empty: restore it from git."
complaint="$(<tests/vm/dmesg-bad.ere)|Kernel panic"
# judged RESULT_JSON: print "VIOLATIONS OLDEST_LOST ALSO_VIOLATIONS" (the last
# -1 when no second bound was measured).
judged() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["violations"], r["oldest_lost_ms"], r.get("also_violations", -1))' "$1"
}
# run_trials: the trials of policy $p on kernel $k, variant $fs $mode, with
# $bound, $vdir, $run_opts and $also set by the loop below; one summary row.
run_trials() {
	local ntr=0 nviol=0 worst=0 lost=0 nalso=0 i s tdir note from rc line v o a rv ro ra name extra
	for i in $(seq "$trials"); do
		s=$((seed + i))
		tdir=$vdir/$p-$i
		name="$k $p trial $i"
		[ "$vdir" = "$out/$k" ] || name="$k $fs $mode $p trial $i"
		rm -rf "$tdir"
		mkdir -p "$tdir"
		truncate -s 0 "$tmp/disk.img"
		truncate -s 256M "$tmp/disk.img"
		# The guest never returns: it resets itself.
		scripts/vm.sh --kernel "$k" --disk fifo:100 --image "$tmp/disk.img" --out "$tdir" \
			--timeout 400 --verbose -- tests/crash/crash-guest.sh --policy "$p" --seed "$s" \
			--fs "$fs" --mode "$mode" --commit-s "$commit_s" \
			--max-age-ms "$max_age" --period-ms "$period" "${run_opts[@]}" >"$tdir/console.log" 2>&1 || true
		# After vm.sh's second boot (the emulator's int3 bug killed the
		# first, untainted), only the second counts.
		note="" from=1
		if grep -q "int3 bug before aipu was loaded" "$tdir/console.log"; then
			note=" (booted twice: QEMU TCG's int3 bug killed the first boot)"
			from=$(grep -n "int3 bug before aipu was loaded" "$tdir/console.log" | tail -n 1 | cut -d: -f1)
		fi
		# grep reads a file, not a pipe: under pipefail, tail killed by
		# SIGPIPE when grep stops early would hide a report in a long log.
		tail -n +"$from" "$tdir/console.log" >"$tmp/console.tail"
		if grep -qE "$complaint" "$tmp/console.tail"; then
			echo "FAIL $name: the kernel complained (see $tdir/console.log)"
			# The log stays on the machine that ran it: show the report
			# here, so that a CI run says what it was.
			grep -E -m 1 -B 5 -A 40 "$complaint" "$tmp/console.tail" |
				sed 's/^/#   console: /'
			fail=$((fail + 1))
			continue
		fi
		# Overwrites: the records at the extents recorded before the writes,
		# read before e2fsck touches the image.
		if [ "$mode" = overwrite ]; then
			rc=0
			line=$(python3 tests/crash/records.py check "$tmp/disk.img" "$tdir/extents.json" \
				"$tdir/writes.log" --bound-ms "$bound" "${also[@]}" --json "$tdir/result.json" 2>&1) || rc=$?
			echo "# $name (seed $s): $line$note"
			if [ "$rc" -ge 2 ] || [ ! -f "$tdir/result.json" ]; then
				echo "FAIL $name: no result (see $tdir/console.log)"
				fail=$((fail + 1))
				continue
			fi
		fi
		# The file as the file system recovered by e2fsck has it: the
		# only check of appends, a second one of overwrites.
		rc=0
		line=$(python3 tests/crash/records.py recover "$tmp/disk.img" "$tmp/rec.dat" \
			--fsck-log "$tdir/e2fsck.log" 2>&1) || rc=$?
		if [ "$rc" -ne 0 ]; then
			echo "# $name: $line"
			echo "FAIL $name: the file system could not be recovered (see $tdir/e2fsck.log)"
			fail=$((fail + 1))
			continue
		fi
		rc=0
		line="$line; $(python3 tests/crash/records.py check-file "$tmp/rec.dat" "$tdir/writes.log" \
			--bound-ms "$bound" "${also[@]}" --json "$tdir/recovered.json" 2>&1)" || rc=$?
		if [ "$mode" = overwrite ]; then
			echo "#   recovered by e2fsck: $line"
		else
			echo "# $name (seed $s): $line$note"
		fi
		if [ "$rc" -ge 2 ] || [ ! -f "$tdir/recovered.json" ]; then
			echo "FAIL $name: no result (see $tdir/console.log)"
			fail=$((fail + 1))
			continue
		fi
		[ "$mode" = overwrite ] || cp "$tdir/recovered.json" "$tdir/result.json"
		ntr=$((ntr + 1))
		read -r v o a < <(judged "$tdir/result.json")
		if [ "$mode" = overwrite ]; then
			# Both readings count: they must agree (ordered data is not
			# journalled, the replay changes no data block).
			read -r rv ro ra < <(judged "$tdir/recovered.json")
			if [ "$rv" -ne "$v" ] || [ "$ro" -ne "$o" ]; then
				echo "# $name: the image and the recovered file system disagree (violations $v and $rv, oldest lost $o and $ro ms)"
			fi
			[ "$rv" -gt "$v" ] && v=$rv
			[ "$ro" -gt "$o" ] && o=$ro
			[ "$ra" -gt "$a" ] && a=$ra
		fi
		[ "$v" -gt 0 ] && nviol=$((nviol + 1))
		[ "$o" -gt "$worst" ] && worst=$o
		[ "$o" -gt 0 ] && lost=$((lost + 1))
		[ "$a" -gt 0 ] && nalso=$((nalso + 1))
		if [ "$p" = off ] && [ "$v" -gt 0 ]; then
			pass=$((pass + 1))
		elif [ "$p" = off ]; then
			echo "FAIL $name: with no writeback at all the check found nothing lost"
			fail=$((fail + 1))
		elif [ "$p" = kernel ] || [ "$p" = linux ] || [ "$v" -eq 0 ]; then
			pass=$((pass + 1))
		else
			echo "FAIL $name: $v records older than ${bound} ms were lost"
			cp "$tmp/rec.dat" "$tdir/recovered.dat"
			fail=$((fail + 1))
		fi
	done
	extra=""
	[ "${#also[@]}" -eq 0 ] || extra="  plain bound ${plain} ms, measured: violated in $nalso of $ntr"
	printf '%-24s %-14s %-7s trials %3d  with violations %3d  with any loss %3d  oldest lost %6d ms  (bound %d ms)%s\n' \
		"$k" "$fs/$mode" "$p" "$ntr" "$nviol" "$lost" "$worst" "$bound" "$extra" | tee -a "$summary"
}
for k in $kernels; do
	[ -f "build/$k/aipu.ko" ] || scripts/build-all.sh >/dev/null || die "cannot build aipu.ko for $k"
	for fs in $fss; do
		for mode in $modes; do
			vbound=$(bound_of "$fs" "$mode")
			vdir=$out/$k
			if [ "$fs $mode" != "ext4 overwrite" ]; then
				vdir=$out/$k/$fs-$mode
			fi
			for p in $policies; do
				bound=$vbound run_opts=() also=()
				if [ "$p" = linux ]; then
					# Linux's 36 s (+ the commit): runs of 40-80 s.
					bound=$((vbound - plain + linux_plain))
					run_opts=(--run-min $((bound / 1000 + 4)) --run-max $((bound / 1000 + 44)))
				elif [ "$bound" -ne "$plain" ]; then
					# Long enough for records older than the longer bound.
					run_opts=(--run-min $((bound / 1000 + 4)) --run-max $((bound / 1000 + 14)))
					also=(--also-bound-ms "$plain")
				fi
				run_trials
			done
		done
	done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
