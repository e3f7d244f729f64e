/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wheel (FreeBSD's syncer, sys/kern/vfs_subr.c): a device's files with
 * queued pages, each in the slot of its oldest queued page's first-dirty
 * time, @nslots slots of @width jiffies each.  Part of a device's queue
 * (src/queue/queue.c; docs/design.md, section 4).
 *
 * Phase 1 visits the slots up to the cutoff and hands over the files with
 * due pages; each rejoins the wheel at its next page's slot once the flusher
 * has taken what is due.  A file that had nothing queued joins the slot of
 * its first page's time, the current one: O(1) in the probe.  Slots are
 * found by time modulo the wheel, so a file whose time has wrapped round is
 * checked, not trusted, and put back; times count from the wheel's base,
 * 1,024 turns before its start, not from 0, so that slots stay in order
 * where jiffies wrap (ULONG_MAX + 1 is no multiple of the wheel's span).
 * Callers hold the device's lock.
 */
#ifndef AIPU_WHEEL_H
#define AIPU_WHEEL_H

#include <linux/list.h>
#include <linux/types.h>

struct aipu_wheel_node {
	struct list_head link;		/* in a slot, or the caller's list */
	unsigned long time;		/* the slot's key: oldest page's time */
};

/*
 * The caller sizes the wheel: slots of a fraction of the period (the one
 * slot the cutoff cuts is visited twice, so narrower slots mean fewer
 * files looked at for nothing), enough of them to span max_age and a few
 * periods (a file whose slot has wrapped round is looked at, not written).
 */
struct aipu_wheel {
	struct list_head *slot;
	unsigned int nslots;
	struct list_head seen;		/* looked at in the slot being visited */
	struct list_head late;		/* added with a time before the clock */
	unsigned long width;		/* jiffies a slot */
	unsigned long base;		/* slots count from here: see above */
	unsigned long clock;		/* slots before this time are visited */
	unsigned long nodes;		/* files in the wheel */
};

void aipu_wheel_init(struct aipu_wheel *w, struct list_head *slots,
		     unsigned int nslots, unsigned long width,
		     unsigned long now);
struct list_head *aipu_wheel_slot(struct aipu_wheel *w, unsigned long time);
void aipu_wheel_add(struct aipu_wheel *w, struct aipu_wheel_node *n,
		    unsigned long time);
void aipu_wheel_del(struct aipu_wheel *w, struct aipu_wheel_node *n);
bool aipu_wheel_due(struct aipu_wheel *w, unsigned long cutoff,
		    struct list_head *due, unsigned int *budget);
bool aipu_wheel_first(struct aipu_wheel *w, unsigned long *time);

#endif /* AIPU_WHEEL_H */
