#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Two CPUs dirtying different files of one device share no lock of aipu's
# (docs/design.md, section 2): a page of a file already queued is recorded
# under that file's lock alone (stat's pages_fast), and those pages still
# reach the disk.
#
# Two writers, pinned to CPU 0 and CPU 1, each write every page of its own
# 16-MiB file on ext4 once, in random order (the files were written and
# synced first, so only their pages are dirtied, no blocks allocated). Then:
# 1. nearly every clean -> dirty transition of those writes took the fast
#    path (pages_fast went up by at least 90 % of pages_dirtied, and by at
#    least the pages written less one a file);
# 2. aipu wrote them all: nothing tracked once they are due, no page of
#    either file left in the cache after drop_caches with no sync (a dirty
#    page would stay), and both files read back from the disk as written.
set -euo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

aipu_require_ko
aipu_loaded && die "aipu is already loaded"
[ "$(nproc)" -ge 2 ] || die "the guest has $(nproc) CPU: this test needs 2"

PAGES=4096
dev=$(disk_get)
disk_prepare "$dev"
fs_make ext4 "$dev"
for i in 0 1; do
	dd if=/dev/zero of="$AIPU_MNT/f$i" bs=1M count=$((PAGES / 256)) status=none
done
sync

aipu_load policy=aipu max_age_ms=2000 period_ms=500 handover_ms=0
d0=$(aipu_stat pages_dirtied)
f0=$(aipu_stat pages_fast)

# The writer: every page of FILE once, in an order and with contents that
# SEED decides; prints the SHA-256 of the file as written.
cat >"$TEST_TMP/writer.py" <<'PY'
import hashlib, os, random, sys
path, seed, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
order = list(range(pages))
rng.shuffle(order)
data = [rng.randbytes(16) * 256 for _ in range(pages)]
fd = os.open(path, os.O_WRONLY)
for p in order:
    os.pwrite(fd, data[p], p * 4096)
os.close(fd)
print(hashlib.sha256(b"".join(data)).hexdigest())
PY
taskset -c 0 python3 "$TEST_TMP/writer.py" "$AIPU_MNT/f0" 1 "$PAGES" >"$TEST_TMP/sum0" &
w0=$!
taskset -c 1 python3 "$TEST_TMP/writer.py" "$AIPU_MNT/f1" 2 "$PAGES" >"$TEST_TMP/sum1" &
w1=$!
wait "$w0" || die "the writer on CPU 0 failed"
wait "$w1" || die "the writer on CPU 1 failed"

nd=$(($(aipu_stat pages_dirtied) - d0))
nf=$(($(aipu_stat pages_fast) - f0))
log "while the two writers ran: pages_dirtied +$nd, pages_fast +$nf"
assert_ge "$nd" $((2 * PAGES)) "every page written was a clean -> dirty transition seen ($nd)"
assert_ge "$nf" $((2 * PAGES - 2)) "every page but at most each file's first took the fast path ($nf of $((2 * PAGES)))"
assert_ge $((nf * 10)) $((nd * 9)) "at least 90 % of all transitions took the fast path ($nf of $nd)"

# 2. Written by aipu, and on the disk as written: no sync, so a page aipu
#    lost track of would still be dirty, and drop_caches would leave it
#    cached (the files are not mapped).
nothing_tracked() { [ "$(aipu_stat pages_tracked)" -eq 0 ]; }
wait_until 30 nothing_tracked || fail "aipu still tracks $(aipu_stat pages_tracked) pages 30 s on"
assert_ge "$(aipu_stat pages_written)" $((2 * PAGES)) "aipu wrote the pages ($(aipu_stat pages_written))"
echo 3 >/proc/sys/vm/drop_caches
for i in 0 1; do
	assert_eq 0 "$(fincore --noheadings --raw --output PAGES "$AIPU_MNT/f$i")" \
		"file $i: no page left in the cache after drop_caches (none dirty)"
done
for i in 0 1; do
	assert_eq "$(cat "$TEST_TMP/sum$i")" "$(sha256sum <"$AIPU_MNT/f$i" | cut -d' ' -f1)" \
		"file $i read back from the disk as written"
done
aipu_dump
aipu_unload
