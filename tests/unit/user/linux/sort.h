/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Written for aipu's unit tests: the kernel's sort() (lib/sort.c), which the
 * kernel's tools/include lacks, as the C library's qsort().  The swap
 * function is always NULL in aipu.
 */
#ifndef AIPU_UNIT_SORT_H
#define AIPU_UNIT_SORT_H
#include <stdlib.h>

#define sort(base, num, size, cmp, swap) qsort(base, num, size, cmp)
#endif
