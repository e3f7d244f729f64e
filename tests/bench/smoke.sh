#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's smoke test of the benchmark suite: scripts/bench.sh --smoke
# (one VM boot, fifo94, the random workload, rows kernel and aipu, one
# short trial, then the report), and tests/bench/check_smoke.py on what it
# left. Ends with "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/build/bench-smoke
rc=0
"$root/scripts/bench.sh" --smoke --out "$out" || rc=$?
python3 "$root/tests/bench/check_smoke.py" "$out" "$rc"
