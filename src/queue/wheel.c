// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the wheel that orders a device's files by their oldest queued page.
 * See include/aipu_wheel.h; callers hold the device's lock.
 */
#include <linux/jiffies.h>
#include <linux/kernel.h>

#include "aipu_wheel.h"

/* The slot that holds nodes of @time. */
struct list_head *aipu_wheel_slot(struct aipu_wheel *w, unsigned long time)
{
	return &w->slot[((time - w->base) / w->width) % w->nslots];
}

/* The start of @time's slot. */
static unsigned long align(const struct aipu_wheel *w, unsigned long time)
{
	return time - (time - w->base) % w->width;
}

void aipu_wheel_init(struct aipu_wheel *w, struct list_head *slots,
		     unsigned int nslots, unsigned long width,
		     unsigned long now)
{
	unsigned int i;

	w->slot = slots;
	w->nslots = nslots ? nslots : 1;
	for (i = 0; i < w->nslots; i++)
		INIT_LIST_HEAD(&w->slot[i]);
	INIT_LIST_HEAD(&w->seen);
	INIT_LIST_HEAD(&w->late);
	w->width = width ? width : 1;
	/* Far enough back that no cutoff comes before it. */
	w->base = now - (unsigned long)w->width * w->nslots * 1024;
	w->clock = align(w, now);
	w->nodes = 0;
}

/*
 * @n goes into the slot of @time, its oldest queued page's; a time before
 * the clock (a file whose pages were put back at their old time) onto the
 * late list, which phase 1 looks at first, not into the slot of a turn to
 * come.
 */
void aipu_wheel_add(struct aipu_wheel *w, struct aipu_wheel_node *n,
		    unsigned long time)
{
	n->time = time;
	list_add_tail(&n->link, time_before(time, w->clock) ?
				&w->late : aipu_wheel_slot(w, time));
	w->nodes++;
}

void aipu_wheel_del(struct aipu_wheel *w, struct aipu_wheel_node *n)
{
	list_del_init(&n->link);
	w->nodes--;
}

/*
 * The start of the slot of the oldest node, false if none.  Slot order is
 * age order only within the clock's turn: with max_age above the wheel's
 * span the clock (phase 1's cutoff, now - max_age) trails the nodes by a
 * turn or more.  So the first slot whose first node is of the clock's turn
 * ends the walk; a node of a later turn offers its own slot's start and the
 * walk goes on.  Never older than a node; in a wheel wider than max_age,
 * exact.  A walk of at most every slot (for `stat`), one division for the
 * first, an index stepped for the rest.
 */
bool aipu_wheel_first(struct aipu_wheel *w, unsigned long *time)
{
	unsigned long turn = (unsigned long)w->width * w->nslots;
	unsigned int i = aipu_wheel_slot(w, w->clock) - w->slot, s;
	struct aipu_wheel_node *n;
	bool found = false;

	for (s = 0; s < w->nslots; s++) {
		n = list_first_entry_or_null(&w->slot[i],
					     struct aipu_wheel_node, link);
		if (++i == w->nslots)
			i = 0;
		if (!n)
			continue;
		if (!found || time_before(align(w, n->time), *time))
			*time = align(w, n->time);
		found = true;
		if (time_before(n->time, w->clock + turn))
			break;	/* older than any node of a later turn */
	}
	return found;
}

/*
 * One slot: its nodes older than @cutoff move to @due, the others (of a
 * later turn of the wheel, or not yet due) stay.  Those looked at wait on
 * @w->seen until the slot is done, so a call that runs out of budget resumes
 * where it stopped.
 */
static bool visit(struct aipu_wheel *w, struct list_head *slot,
		  unsigned long cutoff, struct list_head *due,
		  unsigned int *budget)
{
	struct aipu_wheel_node *n, *tmp;

	list_for_each_entry_safe(n, tmp, slot, link) {
		if (!*budget)
			return false;
		(*budget)--;
		if (time_before(n->time, cutoff)) {
			list_move_tail(&n->link, due);
			w->nodes--;
		} else {
			list_move_tail(&n->link, &w->seen);
		}
	}
	/*
	 * Whatever the clock did meanwhile, all of them came from one slot:
	 * back in one splice, however many there are.
	 */
	if (!list_empty(&w->seen)) {
		n = list_first_entry(&w->seen, struct aipu_wheel_node, link);
		list_splice_tail_init(&w->seen, aipu_wheel_slot(w, n->time));
	}
	return true;
}

/*
 * The late list: what is due goes, the rest (the cutoff went back since it
 * was added) into the slots of its times.  Not through @w->seen, which may
 * hold the rest of a slot whose visit ran out of budget.
 */
static bool visit_late(struct aipu_wheel *w, unsigned long cutoff,
		       struct list_head *due, unsigned int *budget)
{
	struct aipu_wheel_node *n, *tmp;

	list_for_each_entry_safe(n, tmp, &w->late, link) {
		if (!*budget)
			return false;
		(*budget)--;
		if (time_before(n->time, cutoff)) {
			list_move_tail(&n->link, due);
			w->nodes--;
		} else {
			list_move_tail(&n->link, aipu_wheel_slot(w, n->time));
		}
	}
	return true;
}

/*
 * Phase 1: move the nodes dirtied before @cutoff onto @due, visiting at most
 * *@budget nodes (counted down).  Returns true when done, false when the
 * budget ran out: call again (the lock may be dropped in between).  The
 * caller takes each due file's pages and puts it back with aipu_wheel_add() at
 * its next time if it still has some.
 */
bool aipu_wheel_due(struct aipu_wheel *w, unsigned long cutoff,
		    struct list_head *due, unsigned int *budget)
{
	unsigned long steps;

	if (!visit_late(w, cutoff, due, budget))
		return false;
	/* max_age_ms was raised: the cutoff went back, and so must the clock. */
	if (time_before(cutoff, w->clock))
		w->clock = align(w, cutoff);
	steps = (cutoff - w->clock) / w->width;
	if (steps >= w->nslots) {
		/*
		 * A whole turn or more: every slot once, ending at @cutoff's.
		 * The loop skips that one when @cutoff starts it, but it holds
		 * nodes of a turn back too: then one slot earlier, the same.
		 */
		steps = w->nslots - (align(w, cutoff) == cutoff ? 0 : 1);
		w->clock = align(w, cutoff) - steps * w->width;
	}
	for (;;) {
		/* @cutoff's own slot holds nothing due if it starts there. */
		if (!steps && w->clock == cutoff)
			return true;
		if (!visit(w, aipu_wheel_slot(w, w->clock), cutoff, due,
			   budget))
			return false;
		if (!steps--)
			return true;	/* @cutoff's slot: visited again next time */
		w->clock += w->width;
	}
}
