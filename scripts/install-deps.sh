#!/usr/bin/env bash
# Install everything aipu's build, tests and benchmarks need on a fresh
# Debian 12 machine: the 6.1 and 6.12 kernels and 6.1's PREEMPT_RT flavour
# (images and headers), QEMU,
# the guest-side tools, the style checkers, dkms, bpftrace, trace-cmd and
# virtme-ng. Idempotent. (The 7.2 source and a newer sparse are fetched
# by scripts/kernel-source.sh and scripts/sparse-build.sh when make check
# needs them, into /var/cache/aipu, without changing apt's configuration.)
set -euo pipefail

die() { echo "install-deps: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (apt-get and pip install system-wide)."
command -v apt-get >/dev/null || die "this script expects Debian 12 (apt-get not found)."

export DEBIAN_FRONTEND=noninteractive

stamp=/var/lib/aipu-deps.stamp
want_version=8
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_version" ] &&
	command -v vng >/dev/null && command -v ruff >/dev/null && command -v nbdkit >/dev/null &&
	command -v dkms >/dev/null && command -v bpftrace >/dev/null && command -v trace-cmd >/dev/null &&
	command -v perf >/dev/null &&
	ls /lib/modules/*/build >/dev/null 2>&1; then
	echo "install-deps: already installed ($stamp)"
	exit 0
fi

apt-get update -qq

# Newest Debian 6.12 kernel built for Debian 12 (name changes with point releases).
k612=$(apt-cache search --names-only '^linux-headers-6\.12\.[0-9]+\+deb12-amd64$' |
	awk '{print $1}' | sed 's/^linux-headers-//' | sort -V | tail -n 1)
[ -n "$k612" ] || die "no linux-headers-6.12.*+deb12-amd64 in the apt lists; check /etc/apt/sources.list (bookworm-backports or bookworm main)."

apt-get install -y -qq --no-install-recommends \
	build-essential bc kmod cpio flex bison libelf-dev libssl-dev \
	linux-image-amd64 linux-headers-amd64 \
	linux-image-rt-amd64 linux-headers-rt-amd64 \
	"linux-image-${k612}-unsigned" "linux-headers-${k612}" \
	linux-source-6.1 \
	qemu-system-x86 qemu-utils nbdkit \
	fio blktrace e2fsprogs xfsprogs dosfstools exfatprogs gfs2-utils util-linux procps \
	busybox-static sparse shellcheck \
	dkms bpftrace trace-cmd linux-perf xz-utils debian-archive-keyring \
	python3-numpy python3-matplotlib \
	udev iproute2 file >/dev/null

# checkpatch.pl and its spelling list, from Debian's 6.1 source.
if [ ! -x /opt/aipu/checkpatch/checkpatch.pl ]; then
	mkdir -p /opt/aipu/checkpatch
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C /opt/aipu/checkpatch \
		--strip-components=2 --wildcards \
		'linux-source-6.1/scripts/checkpatch.pl' \
		'linux-source-6.1/scripts/spelling.txt' \
		'linux-source-6.1/scripts/const_structs.checkpatch'
fi

if ! command -v vng >/dev/null; then
	pip install -q 'virtme-ng==1.42' || pip install -q virtme-ng
fi
if ! command -v ruff >/dev/null; then
	pip install -q 'ruff==0.8.4' || pip install -q ruff
fi
if ! command -v vng >/dev/null || ! command -v ruff >/dev/null; then
	die "pip installed virtme-ng/ruff but they are not on PATH ($PATH): add pip's script directory to PATH."
fi


echo "$want_version" >"$stamp"
echo "install-deps: done (kernels: $(cd /lib/modules && echo *))"
