// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: memory for runs and trackers.
 *
 * The probes allocate with a device's lock held inside the mapping's i_pages
 * lock, interrupts off: GFP_NOWAIT only.  When the slab says no they dip
 * into a small reserve that the flusher refills in process context, so a
 * burst of dirtying under memory pressure still gets per-page times; only
 * when the reserve is empty too does tracking degrade (see track.c).
 *
 * PREEMPT_RT: a device's lock is a raw spinlock, and RT's slab may be called
 * neither to allocate nor to free under one (its own locks sleep there).  So
 * on RT runs and trackers come from the reserve alone, a larger one that
 * every flusher pass and the tick refill, and objects freed under a lock go
 * back to it, or onto a list that the same process-context refill frees.
 * Dirtying faster than a period's reserve degrades, counted, as on any
 * kernel when memory runs out.
 *
 * Both caches are SLAB_ACCOUNT: a run or tracker is charged to the memory
 * cgroup of the task that dirtied the page, like the page cache it
 * describes, so a container's writers cannot make aipu use memory outside
 * the container's limit.  A charge that fails is a failed allocation: the
 * coarser bound, counted in fallbacks.  Trackers are freed after an RCU
 * grace period (lookups take no lock: src/mapping.c).
 */
#include <linux/llist.h>
#include <linux/percpu_counter.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "aipu.h"

/* May the slab be called with a device's lock held, interrupts off? */
#define AIPU_SLAB_ATOMIC	(!IS_ENABLED(CONFIG_PREEMPT_RT))
#define AIPU_RESERVE_RUNS	(AIPU_SLAB_ATOMIC ? 512 : 8192)
#define AIPU_RESERVE_TRACKERS	(AIPU_SLAB_ATOMIC ? 32 : 512)

struct reserve {
	struct kmem_cache *cache;
	raw_spinlock_t lock;		/* @nr and @obj */
	unsigned int nr, cap;
	void **obj;
	struct llist_head to_free;	/* !AIPU_SLAB_ATOMIC: freed under a lock */
	/*
	 * Objects handed out, not yet freed: per CPU, so that CPUs dirtying
	 * pages of different files touch a shared line only once a batch
	 * (percpu_counter's fold), not at every run allocated.
	 */
	struct percpu_counter live;
};

static struct reserve runs = { .cap = AIPU_RESERVE_RUNS };
static struct reserve trackers = { .cap = AIPU_RESERVE_TRACKERS };

static void *reserve_alloc(struct reserve *rs)
{
	void *p = NULL;
	unsigned long flags;

	if (AIPU_SLAB_ATOMIC)
		p = kmem_cache_alloc(rs->cache, GFP_NOWAIT | __GFP_NOWARN);
	if (!p && READ_ONCE(rs->nr)) {
		raw_spin_lock_irqsave(&rs->lock, flags);
		if (rs->nr)
			p = rs->obj[--rs->nr];
		raw_spin_unlock_irqrestore(&rs->lock, flags);
	}
	if (p)
		percpu_counter_inc(&rs->live);
	return p;
}

static void reserve_free(struct reserve *rs, void *p)
{
	unsigned long flags;

	percpu_counter_dec(&rs->live);
	if (AIPU_SLAB_ATOMIC) {
		kmem_cache_free(rs->cache, p);
		return;
	}
	raw_spin_lock_irqsave(&rs->lock, flags);
	if (rs->nr < rs->cap) {
		rs->obj[rs->nr++] = p;
		p = NULL;
	}
	raw_spin_unlock_irqrestore(&rs->lock, flags);
	if (p)
		llist_add(p, &rs->to_free);	/* a dead object is node enough */
}

/* Process context: what was freed where the slab could not be called. */
static void reserve_drain(struct reserve *rs)
{
	struct llist_node *n, *next;

	llist_for_each_safe(n, next, llist_del_all(&rs->to_free))
		kmem_cache_free(rs->cache, n);
}

struct aipu_run *aipu_run_alloc(void)
{
	return reserve_alloc(&runs);
}

void aipu_run_free(struct aipu_run *r)
{
	reserve_free(&runs, r);
}

struct aipu_tracker *aipu_tracker_alloc(void)
{
	struct aipu_mapping *m = reserve_alloc(&trackers);

	return m ? &m->t : NULL;
}

static void tracker_free_rcu(struct rcu_head *head)
{
	reserve_free(&trackers, container_of(head, struct aipu_mapping, rcu));
}

void aipu_tracker_free(struct aipu_tracker *t)
{
	call_rcu(&container_of(t, struct aipu_mapping, t)->rcu,
		 tracker_free_rcu);
}

/* Bytes of tracking memory in use (runs and trackers handed out). */
u64 aipu_mem_bytes(void)
{
	return percpu_counter_sum_positive(&runs.live) *
	       kmem_cache_size(runs.cache) +
	       percpu_counter_sum_positive(&trackers.live) *
	       kmem_cache_size(trackers.cache);
}

static void reserve_refill(struct reserve *rs)
{
	unsigned long flags;
	void *p;

	reserve_drain(rs);
	while (READ_ONCE(rs->nr) < rs->cap) {
		p = kmem_cache_alloc(rs->cache, GFP_KERNEL | __GFP_NOWARN);
		if (!p)
			return;
		raw_spin_lock_irqsave(&rs->lock, flags);
		if (rs->nr < rs->cap) {
			rs->obj[rs->nr++] = p;
			p = NULL;
		}
		raw_spin_unlock_irqrestore(&rs->lock, flags);
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
	raw_spin_lock_init(&rs->lock);
	init_llist_head(&rs->to_free);
	if (percpu_counter_init(&rs->live, 0, GFP_KERNEL))
		return -ENOMEM;
	rs->cache = kmem_cache_create(name, size, 0, SLAB_ACCOUNT, NULL);
	rs->obj = kcalloc(rs->cap, sizeof(*rs->obj), GFP_KERNEL);
	if (!rs->cache || !rs->obj)
		return -ENOMEM;
	reserve_refill(rs);
	return 0;
}

static void reserve_exit(struct reserve *rs)
{
	if (rs->cache)
		reserve_drain(rs);
	while (rs->nr)
		kmem_cache_free(rs->cache, rs->obj[--rs->nr]);
	kfree(rs->obj);
	kmem_cache_destroy(rs->cache);
	percpu_counter_destroy(&rs->live);
	rs->obj = NULL;
	rs->cache = NULL;
}

int aipu_mem_init(void)
{
	if (reserve_init(&runs, "aipu_run", sizeof(struct aipu_run)) ||
	    reserve_init(&trackers, "aipu_tracker",
			 sizeof(struct aipu_mapping))) {
		aipu_mem_exit();
		return -ENOMEM;
	}
	return 0;
}

/* Every run and tracker must have been freed already (rcu_barrier first). */
void aipu_mem_exit(void)
{
	rcu_barrier();
	reserve_exit(&runs);
	reserve_exit(&trackers);
}
