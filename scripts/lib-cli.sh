# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the scripts that take --option VALUE arguments: the check that
# an option has its value. The caller defines die().

need_arg() { # OPTION [VALUE]
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		die "option $1 needs a value (see --help)."
	fi
}
