/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Written for aipu's unit tests: the kernel's tools/include/linux/types.h
 * (extracted at build time, see ../../Makefile) lacks pgoff_t, which the
 * kernel's own include/linux/types.h defines.
 */
#ifndef AIPU_UNIT_TYPES_H
#define AIPU_UNIT_TYPES_H
#include_next <linux/types.h>
typedef unsigned long pgoff_t;
#endif
