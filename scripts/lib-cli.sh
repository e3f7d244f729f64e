# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by aipu's host scripts: die, usage, and the check that an option
# has its value. The caller sets prog (the name die() prints; the script's
# name if unset) and may set die_rc (die()'s exit status, 1 if unset).

# die MESSAGE...: one line on stderr, then exit.
die() {
	echo "${prog:-${0##*/}}: $*" >&2
	exit "${die_rc:-1}"
}

# usage: the script's header comment, from line 3 to `set -euo`, as --help.
usage() {
	sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
}

need_arg() { # OPTION [VALUE]
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		die "option $1 needs a value (see --help)."
	fi
}
