// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: memory for runs and trackers.
 *
 * The probes allocate with the tracking lock held inside the mapping's
 * i_pages lock, interrupts off: GFP_NOWAIT only.  When the slab says no they
 * dip into a small reserve that the flusher refills in process context, so a
 * burst of dirtying under memory pressure still gets per-page times; only
 * when the reserve is empty too does tracking degrade (see track.c).
 */
#include <linux/slab.h>

#include "aipu.h"

#define AIPU_RESERVE_RUNS	512
#define AIPU_RESERVE_TRACKERS	32

struct reserve {
	struct kmem_cache *cache;
	unsigned int nr, cap;
	void **obj;
};

static struct reserve runs = { .cap = AIPU_RESERVE_RUNS };
static struct reserve trackers = { .cap = AIPU_RESERVE_TRACKERS };

static void *reserve_alloc(struct reserve *rs)
{
	void *p = kmem_cache_alloc(rs->cache, GFP_NOWAIT | __GFP_NOWARN);

	if (!p && rs->nr)
		p = rs->obj[--rs->nr];
	return p;
}

struct aipu_run *aipu_run_alloc(void)
{
	return reserve_alloc(&runs);
}

void aipu_run_free(struct aipu_run *r)
{
	kmem_cache_free(runs.cache, r);
}

struct aipu_tracker *aipu_tracker_alloc(void)
{
	return reserve_alloc(&trackers);
}

void aipu_tracker_free(struct aipu_tracker *t)
{
	kmem_cache_free(trackers.cache, t);
}

static void reserve_refill(struct reserve *rs)
{
	unsigned long flags;
	void *p;

	while (READ_ONCE(rs->nr) < rs->cap) {
		p = kmem_cache_alloc(rs->cache, GFP_KERNEL | __GFP_NOWARN);
		if (!p)
			return;
		spin_lock_irqsave(&aipu_lock, flags);
		if (rs->nr < rs->cap) {
			rs->obj[rs->nr++] = p;
			p = NULL;
		}
		spin_unlock_irqrestore(&aipu_lock, flags);
		if (p) {
			kmem_cache_free(rs->cache, p);
			return;
		}
	}
}

/* Flusher context: top the reserves up for the next period's probes. */
void aipu_mem_refill(void)
{
	reserve_refill(&runs);
	reserve_refill(&trackers);
}

static int reserve_init(struct reserve *rs, const char *name, size_t size)
{
	rs->cache = kmem_cache_create(name, size, 0, 0, NULL);
	rs->obj = kcalloc(rs->cap, sizeof(*rs->obj), GFP_KERNEL);
	if (!rs->cache || !rs->obj)
		return -ENOMEM;
	reserve_refill(rs);
	return 0;
}

static void reserve_exit(struct reserve *rs)
{
	while (rs->nr)
		kmem_cache_free(rs->cache, rs->obj[--rs->nr]);
	kfree(rs->obj);
	kmem_cache_destroy(rs->cache);
	rs->obj = NULL;
	rs->cache = NULL;
}

int aipu_mem_init(void)
{
	if (reserve_init(&runs, "aipu_run", sizeof(struct aipu_run)) ||
	    reserve_init(&trackers, "aipu_tracker",
			 sizeof(struct aipu_tracker))) {
		aipu_mem_exit();
		return -ENOMEM;
	}
	return 0;
}

/* Every run and tracker must have been freed already. */
void aipu_mem_exit(void)
{
	reserve_exit(&runs);
	reserve_exit(&trackers);
}
