#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Where the probe's instructions go (issue 14): each PATCH, a diff against
# the committed HEAD that removes one part of the dirtying probe (the
# dirty-tag lookup, the file's lock, the tracking call, ...), is applied to
# a clone of HEAD, aipu.ko built from it for each kernel, and measured with
# bench/scale/guest-run.sh --icount --quick --phases random: the extra
# instructions a page dirtied at random (QEMU's icount: one vCPU, the
# guest's clock counting instructions; trials agree within a few tens of
# instructions a page, 619-630 for HEAD's three on 2026-11-30). The variant "head" is HEAD unchanged; what a part costs
# is head's extra minus the variant's.
#
#   bench/scale/ablate.sh [--kernel KVER]... [--trials N] [--report-only]
#                         --out DIR PATCH...
#
# --kernel: default 6.1.0-57-amd64 (headers in /lib/modules/KVER/build, the
# image in /boot); --trials: default 3. Each variant takes about 2 minutes
# of one host CPU a kernel (a 64-MiB file, 16,384 pages). Writes DIR/NAME/KVER/
# (guest-run.sh's results for variant NAME, the patch's file name without
# .patch), DIR/patches/ (the patches) and DIR/summary.md; --report-only
# writes summary.md again from DIR's results. Uncommitted changes are not
# measured: the clones are of HEAD.
set -euo pipefail
prog=ablate
die_rc=2
# shellcheck source=scripts/lib-cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib-cli.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

kernels=() trials=3 out="" report_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--kernel | --trials | --out)
		if [ $# -lt 2 ] || [ -z "$2" ]; then die "option $1 needs a value."; fi
		case $1 in
		--kernel) kernels+=("$2") ;;
		--trials) trials=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	--report-only)
		report_only=1
		shift
		;;
	-h | --help)
		sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	-*) die "unknown option '$1': see bench/scale/ablate.sh --help." ;;
	*) break ;;
	esac
done
[ -n "$out" ] || die "say where the results go: --out DIR."
[[ $trials =~ ^[1-9][0-9]*$ ]] || die "--trials must be a positive whole number, not '$trials'."
[ $# -gt 0 ] || die "give at least one patch (a diff against HEAD) to measure against HEAD."
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1.0-57-amd64)
for k in "${kernels[@]}"; do
	if [ ! -f "/lib/modules/$k/build/include/config/kernel.release" ] || [ ! -f "/boot/vmlinuz-$k" ]; then
		die "kernel $k needs its headers (/lib/modules/$k/build) and image (/boot/vmlinuz-$k): install them."
	fi
done
for p in "$@"; do
	[ -f "$p" ] || [ "$report_only" -eq 1 ] || die "no patch file '$p'."
done

mkdir -p "$out/patches"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/aipu-ablate.XXXXXX")
trap 'rm -rf "$work"' EXIT
names=(head)
for p in "$@"; do
	[ "$report_only" -eq 1 ] || cp "$p" "$out/patches/"
	names+=("$(basename "$p" .patch)")
done
# The commit now: the checkout may move on while the variants run.
head=$(git -C "$root" rev-parse --short HEAD)
head_full=$(git -C "$root" rev-parse HEAD)

for name in "${names[@]}"; do
	[ "$report_only" -eq 0 ] || break
	src=$work/$name
	git clone -q "$root" "$src"
	git -C "$src" checkout -q "$head_full"
	if [ "$name" != head ]; then
		git -C "$src" apply "$out/patches/$name.patch" ||
			die "patch $name.patch does not apply to HEAD ($head): make it against HEAD."
	fi
	for k in "${kernels[@]}"; do
		echo "$prog: $name on $k" >&2
		"$src/scripts/build-all.sh" --tree "/lib/modules/$k/build" >"$work/$name-$k.build" 2>&1 ||
			die "variant $name did not build for $k: $(tail -n 3 "$work/$name-$k.build")"
		"$src/bench/scale/guest-run.sh" --icount --quick --phases random --trials "$trials" \
			--kernel "$k" --out "$out/$name/$k"
	done
done

python3 - "$out" "$head" "${kernels[*]}" "${names[@]}" >"$out/summary.md" <<'EOF'
import json
import statistics
import sys

out, head, kernels, names = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]


def trials(name, k):
    with open(f"{out}/{name}/{k}/summary.json") as f:
        # under icount the guest's clock ("wall") counts instructions
        return json.load(f)["random"]["wall"]["trials"]


def extra(name, k):
    return [t["extra_us_per_page"] * 1000 for t in trials(name, k)]


def row(name, k, key):
    return statistics.median(t[key] * 1000 for t in trials(name, k))


with open(f"{out}/head/{kernels[0]}/env.txt") as f:
    head = next((ln.split()[1] for ln in f if ln.startswith("commit:")), head)
print(f"# The probe's instructions, part by part (HEAD {head})\n")
print("Produced by `bench/scale/ablate.sh`: each variant is HEAD with one patch")
print("(patches/), measured by `bench/scale/guest-run.sh --icount --quick --phases")
print("random` (16,384 pages of a cached 64-MiB file dirtied at random, rows none")
print("and aipu alternating in one boot, one vCPU under QEMU's icount). 'extra' is")
print("the instructions aipu adds to a page's write (aipu's minus none's, per page);")
print("'saves' is head's extra minus the variant's: what the removed part costs.")
print("The rows' own medians (instructions a page written with aipu loaded and")
print("without) show which row moved: a busy host adds noise to both.\n")
for k in kernels:
    base = statistics.median(extra("head", k))
    print(f"## {k}\n")
    print("| variant | extra instructions a page (median) | range over trials | saves | aipu row a page | none row a page |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in names:
        e = extra(n, k)
        m = statistics.median(e)
        a, z = row(n, k, "us_per_page_aipu"), row(n, k, "us_per_page_none")
        print(f"| {n} | {m:.0f} | {min(e):.0f}-{max(e):.0f} | {base - m:.0f} | {a:.0f} | {z:.0f} |")
    print()
EOF
cat "$out/summary.md"
