#!/usr/bin/env bash
# Style checks, each reported as one PASS/FAIL line:
#   checkpatch --strict on the module, shellcheck on every script,
#   ruff (lint + format check) on every Python file.
# Ends with "N passed, N failed"; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

checkpatch=${CHECKPATCH:-/opt/aipu/checkpatch/checkpatch.pl}
pass=0
fail=0

result() { # name status
	if [ "$2" -eq 0 ]; then
		echo "PASS lint/$1"
		pass=$((pass + 1))
	else
		echo "FAIL lint/$1"
		fail=$((fail + 1))
	fi
}

if [ ! -x "$checkpatch" ]; then
	echo "lint: $checkpatch not found: run scripts/install-deps.sh (or set CHECKPATCH=)" >&2
	result checkpatch 1
else
	rc=0
	cfiles=()
	for f in src/*.c src/queue/*.c include/*.h conftest/*.c tests/vm/decline/*.c; do
		[ "$f" = include/aipu_trace.h ] || cfiles+=("$f")
	done
	out=$("$checkpatch" --strict --no-tree --quiet -f "${cfiles[@]}" 2>&1) || rc=$?
	# The trace events keep the layout of the kernel's own
	# include/trace/events/*.h, which three --strict checks dislike.
	out2=$("$checkpatch" --strict --no-tree --quiet \
		--ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT,COMPLEX_MACRO \
		-f include/aipu_trace.h 2>&1) || rc=$?
	out=$out$out2
	[ -z "$out" ] || echo "$out"
	result checkpatch "$rc"
fi

mapfile -t shells < <(git ls-files '*.sh' .ci/run)
rc=0
shellcheck -x "${shells[@]}" || rc=$?
result shellcheck "$rc"

mapfile -t pys < <(git ls-files '*.py')
if [ "${#pys[@]}" -gt 0 ]; then
	rc=0
	ruff check --quiet "${pys[@]}" || rc=$?
	result ruff-check "$rc"
	rc=0
	ruff format --quiet --check "${pys[@]}" || rc=$?
	result ruff-format "$rc"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
