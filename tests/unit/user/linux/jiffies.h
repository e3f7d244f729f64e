/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Written for aipu's unit tests: the kernel's tools/ tree has no jiffies.h.
 * The tests pass jiffies as plain numbers; the queue's sources and the tests
 * need only the wrap-safe comparisons, defined as include/linux/jiffies.h
 * does.
 */
#ifndef AIPU_UNIT_JIFFIES_H
#define AIPU_UNIT_JIFFIES_H
#include <linux/types.h>
#define time_after(a, b) ((long)((b) - (a)) < 0)
#define time_before(a, b) time_after(b, a)
#endif
