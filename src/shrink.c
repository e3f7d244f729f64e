// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: giving tracking memory back under memory pressure.
 *
 * A shrinker counts aipu's runs and, asked to free some, replaces files'
 * runs by their whole-file run, the coarser bound aipu already uses when an
 * allocation fails or a file reaches its cap on runs: the file is written
 * whole, at the device's oldest time (early, never late), and its runs'
 * memory goes back.  Each degraded file counts in fallbacks.  Files are
 * taken from the front of their device's list and moved to the back, so
 * pressure spreads over files instead of emptying one and sparing the
 * rest; the device's lock is held for at most a batch of runs.
 */
#include <linux/jiffies.h>
#include <linux/rcupdate.h>
#include <linux/shrinker.h>

#include "aipu.h"
#include "aipu_compat.h"
#include "aipu_trace.h"

#define AIPU_SHRINK_BATCH 256
/* Files looked at per device and scan, runs or not. */
#define AIPU_SHRINK_FILES 64

static struct shrinker *shrinker;

static unsigned long count_runs(struct shrinker *s, struct shrink_control *sc)
{
	unsigned long n = 0;
	struct aipu_dev *d;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d))
		n += READ_ONCE(d->tr.st.runs_tracked);
	rcu_read_unlock();
	return n ? n : SHRINK_EMPTY;
}

static unsigned long shrink_dev(struct aipu_dev *d, unsigned long want)
{
	unsigned int files = AIPU_SHRINK_FILES;
	unsigned long flags, freed = 0;
	struct aipu_tracker *t;

	while (freed < want && files--) {
		flags = aipu_dev_lock(d);
		t = list_first_entry_or_null(&d->tr.trackers,
					     struct aipu_tracker, link);
		if (t) {
			u64 fb = aipu_trace_fallbacks(d);

			list_move_tail(&t->link, &d->tr.trackers);
			freed += track_degrade(&d->tr, t,
					       min_t(unsigned long, want - freed,
						     AIPU_SHRINK_BATCH),
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

static unsigned long scan_runs(struct shrinker *s, struct shrink_control *sc)
{
	unsigned long freed = 0;
	struct aipu_dev *d;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d && freed < sc->nr_to_scan;
	     d = aipu_dev_next(d))
		freed += shrink_dev(d, sc->nr_to_scan - freed);
	rcu_read_unlock();
	return freed ? freed : SHRINK_STOP;
}

int aipu_shrink_init(void)
{
	shrinker = aipu_shrinker_new(AIPU_NAME, count_runs, scan_runs);
	return shrinker ? 0 : -ENOMEM;
}

void aipu_shrink_exit(void)
{
	if (shrinker)
		aipu_shrinker_free(shrinker);
	shrinker = NULL;
}
