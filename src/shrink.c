// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: giving tracking memory back under memory pressure.
 *
 * A shrinker counts the objects of the files' queues and, asked to free
 * some, bounds files as a whole instead, the coarser bound aipu already uses
 * when an allocation fails or a file reaches its cap: the file is written
 * whole, at its oldest time (early, never late), and its queue's memory goes
 * back.  Each degraded file counts in fallbacks.  Files are taken from the
 * front of their device's list and moved to the back, so pressure spreads
 * over files instead of emptying one and sparing the rest; the device's lock
 * is held for at most a batch of objects.
 */
#include <linux/jiffies.h>
#include <linux/rcupdate.h>
#include <linux/shrinker.h>

#include "aipu.h"
#include "aipu_compat.h"
#include "aipu_trace.h"

/* Files looked at per device and scan, with a queue or not. */
#define AIPU_SHRINK_FILES 64

static struct shrinker *shrinker;

/* The files' queue objects: segments, live chunks, moved pages, retries. */
static unsigned long count_objects(struct shrinker *s,
				   struct shrink_control *sc)
{
	unsigned long n = aipu_mem_objects();

	return n ? n : SHRINK_EMPTY;
}

static unsigned long shrink_dev(struct aipu_dev *d, unsigned long want)
{
	unsigned int files = AIPU_SHRINK_FILES;
	unsigned long flags, freed = 0;
	struct aipu_file *t;

	while (freed < want && files--) {
		flags = aipu_dev_lock(d);
		t = list_first_entry_or_null(&d->tr.trackers,
					     struct aipu_file, link);
		if (t) {
			u64 fb = aipu_trace_fallbacks(d);

			list_move_tail(&t->link, &d->tr.trackers);
			freed += aipu_queue_degrade(&d->tr, t,
					       min_t(unsigned long, want - freed,
						     AIPU_DRAIN_BATCH),
					       jiffies);
			aipu_trace_fallback_since(d, fb, (void *)t->key,
						  AIPU_FB_SHRINK, 0);
		}
		aipu_dev_unlock(d, flags);
		if (!t)
			break;
	}
	return freed;
}

static unsigned long scan_objects(struct shrinker *s, struct shrink_control *sc)
{
	unsigned long freed = 0;
	struct aipu_dev *d;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d && freed < sc->nr_to_scan;
	     d = aipu_dev_next(d))
		freed += shrink_dev(d, sc->nr_to_scan - freed);
	rcu_read_unlock();
	aipu_mem_drain();
	return freed ? freed : SHRINK_STOP;
}

int aipu_shrink_init(void)
{
	shrinker = aipu_shrinker_new(AIPU_NAME, count_objects, scan_objects);
	return shrinker ? 0 : -ENOMEM;
}

void aipu_shrink_exit(void)
{
	if (shrinker)
		aipu_shrinker_free(shrinker);
	shrinker = NULL;
}
