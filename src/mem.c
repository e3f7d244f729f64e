// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
/*
 * aipu: memory for the files' queues (src/queue/log.c, src/queue/live.c,
 * src/queue/flog.c) and their trackers.
 *
 * The probes allocate with a device's lock held inside the mapping's i_pages
 * lock, interrupts off: GFP_NOWAIT only.  When the slab says no they dip
 * into a small reserve that the flusher refills in process context, so a
 * burst of dirtying under memory pressure still gets per-page times; only
 * when the reserve is empty too does tracking degrade (a file bounded as a
 * whole, src/queue/queue.c).
 *
 * PREEMPT_RT: a device's lock is a raw spinlock, and RT's slab may be called
 * neither to allocate nor to free under one (its own locks sleep there).  So
 * on RT every object comes from the reserve alone, a larger one that every
 * flusher pass and the tick refill.  Dirtying faster than a period's reserve
 * degrades, counted, as on any kernel when memory runs out.  The flusher's
 * own allocations under the lock (retries) take the same path.
 *
 * Frees, on every kernel, go back to the reserve or onto a list that the
 * same process-context refill frees, or the eviction probe once it has let
 * go of the lock: never to the slab under a lock (but under KASAN, which
 * must see every object poisoned the moment it is freed).  On 6.12 one
 * kmem_cache_free() can flush SLUB's per-CPU partial slabs into the page
 * allocator's bulk free: 0.7 million instructions for one log segment, up to
 * 4 million for a hold of 64 frees at a large file's eviction, counted under
 * QEMU's icount (docs/design.md §3), all with interrupts off.
 *
 * Every cache is SLAB_ACCOUNT: tracking memory is charged to the memory
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
/*
 * Free to the slab at once?  Only under KASAN: an object parked for the
 * drain is not poisoned, and a use after its free would go unseen.  A
 * build with AIPU_FREE_LATER=1 parks them there too, so that the debug
 * kernel's lockdep, kmemleak and slab checks see the drains (make
 * debugtest FREE_LATER=1).
 */
#ifdef AIPU_FREE_LATER
#define AIPU_FREE_AT_ONCE	false
#else
#define AIPU_FREE_AT_ONCE	(AIPU_SLAB_ATOMIC && IS_ENABLED(CONFIG_KASAN))
#endif
/* Reserves are larger on RT: a few periods of a fast writer's needs. */
#define AIPU_RESERVE_SCALE	(AIPU_SLAB_ATOMIC ? 1 : 16)

struct reserve {
	struct kmem_cache *cache;
	raw_spinlock_t lock;		/* @nr, @obj: see aipu.h */
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

enum { SEG64, SEG512, SEG4096, CHUNK, MOVED, RETRY, TRACKER, NR_RESERVES };

static struct reserve reserves[NR_RESERVES] = {
	[SEG64] = { .cap = 512 * AIPU_RESERVE_SCALE },
	[SEG512] = { .cap = 64 * AIPU_RESERVE_SCALE },
	[SEG4096] = { .cap = 16 * AIPU_RESERVE_SCALE },
	[CHUNK] = { .cap = 128 * AIPU_RESERVE_SCALE },
	[MOVED] = { .cap = 128 * AIPU_RESERVE_SCALE },
	[RETRY] = { .cap = 64 * AIPU_RESERVE_SCALE },
	[TRACKER] = { .cap = 32 * AIPU_RESERVE_SCALE },
};

static const char * const reserve_names[NR_RESERVES] = {
	"aipu_seg64", "aipu_seg512", "aipu_seg4096", "aipu_live_chunk",
	"aipu_moved", "aipu_retry", "aipu_tracker",
};

static const size_t reserve_sizes[NR_RESERVES] = {
	64, 512, 4096, sizeof(struct aipu_live_chunk),
	sizeof(struct aipu_moved), sizeof(struct aipu_retry),
	sizeof(struct aipu_mapping),
};

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
	if (AIPU_FREE_AT_ONCE) {
		kmem_cache_free(rs->cache, p);
		return;
	}
	/*
	 * RT refills its reserve first; elsewhere the reserve is the slab's
	 * stand-in only when it fails, and a shared lock per free would bring
	 * back the contention the per-CPU slab avoids.
	 */
	if (!AIPU_SLAB_ATOMIC) {
		raw_spin_lock_irqsave(&rs->lock, flags);
		if (rs->nr < rs->cap) {
			rs->obj[rs->nr++] = p;
			p = NULL;
		}
		raw_spin_unlock_irqrestore(&rs->lock, flags);
	}
	if (p)
		llist_add(p, &rs->to_free);	/* a dead object is node enough */
}

/* No lock of aipu's held: what was freed under one, to the slab. */
static void reserve_drain(struct reserve *rs)
{
	struct llist_node *n, *next;

	/* Every eviction drains: no atomic exchange on a list with nothing. */
	if (llist_empty(&rs->to_free))
		return;
	llist_for_each_safe(n, next, llist_del_all(&rs->to_free))
		kmem_cache_free(rs->cache, n);
}

/*
 * After a lock aipu held to free a file's queue (eviction, the shrinker):
 * give the memory back now, not at the next period's refill.  Not on RT,
 * where these callers may not call the slab either (the refill does it).
 */
void aipu_mem_drain(void)
{
	unsigned int i;

	if (!AIPU_SLAB_ATOMIC)
		return;
	for (i = 0; i < NR_RESERVES; i++)
		reserve_drain(&reserves[i]);
}

/* A log segment's size class: aipu_seg_bytes[] in src/queue/log.c. */
static struct reserve *seg_reserve(unsigned int bytes)
{
	return &reserves[bytes <= 64 ? SEG64 : bytes <= 512 ? SEG512 : SEG4096];
}

struct aipu_seg *aipu_seg_alloc(unsigned int bytes)
{
	return reserve_alloc(seg_reserve(bytes));
}

void aipu_seg_free(struct aipu_seg *s, unsigned int bytes)
{
	reserve_free(seg_reserve(bytes), s);
}

struct aipu_live_chunk *aipu_live_chunk_alloc(void)
{
	return reserve_alloc(&reserves[CHUNK]);
}

void aipu_live_chunk_free(struct aipu_live_chunk *c)
{
	reserve_free(&reserves[CHUNK], c);
}

/*
 * A file's live-bit directory (src/queue/live.c): a speed-up the tree does
 * without, so it never takes from the reserve, which the probes need for
 * what has no substitute, and is not made where the slab may not be called
 * under a raw spinlock (PREEMPT_RT).  The 4-KiB segments' cache fits it.
 */
struct aipu_live_dir *aipu_live_dir_alloc(void)
{
	struct reserve *rs = &reserves[SEG4096];
	void *p;

	BUILD_BUG_ON(sizeof(struct aipu_live_dir) > 4096);
	if (!AIPU_SLAB_ATOMIC)
		return NULL;
	p = kmem_cache_alloc(rs->cache, GFP_NOWAIT | __GFP_NOWARN);
	if (p)
		percpu_counter_inc(&rs->live);
	return p;
}

void aipu_live_dir_free(struct aipu_live_dir *dir)
{
	reserve_free(&reserves[SEG4096], dir);
}

struct aipu_moved *aipu_moved_alloc(void)
{
	return reserve_alloc(&reserves[MOVED]);
}

void aipu_moved_free(struct aipu_moved *m)
{
	reserve_free(&reserves[MOVED], m);
}

struct aipu_retry *aipu_retry_alloc(void)
{
	return reserve_alloc(&reserves[RETRY]);
}

void aipu_retry_free(struct aipu_retry *r)
{
	reserve_free(&reserves[RETRY], r);
}

/*
 * debugfs fail_trackers (src/debugfs.c): the next this many trackers fail
 * as if the slab and the reserve were empty, so that tests can make the
 * fallback happen on kernels without fault injection (Debian's).
 */
atomic_t aipu_fail_trackers = ATOMIC_INIT(0);

struct aipu_file *aipu_file_alloc(void)
{
	struct aipu_mapping *m;

	if (unlikely(atomic_read(&aipu_fail_trackers)) &&
	    atomic_dec_if_positive(&aipu_fail_trackers) >= 0)
		return NULL;
	m = reserve_alloc(&reserves[TRACKER]);

	if (!m)
		return NULL;
	raw_spin_lock_init(&m->lock);
	return &m->t;
}

static void tracker_free_rcu(struct rcu_head *head)
{
	reserve_free(&reserves[TRACKER],
		     container_of(head, struct aipu_mapping, rcu));
}

void aipu_file_free(struct aipu_file *t)
{
	call_rcu(&container_of(t, struct aipu_mapping, t)->rcu,
		 tracker_free_rcu);
}

/* Bytes of tracking memory in use (objects handed out, by their caches). */
u64 aipu_mem_bytes(void)
{
	u64 bytes = 0;
	unsigned int i;

	for (i = 0; i < NR_RESERVES; i++)
		bytes += percpu_counter_sum_positive(&reserves[i].live) *
			 kmem_cache_size(reserves[i].cache);
	return bytes;
}

/*
 * Queue objects handed out: what the shrinker can give back.  Summed, not
 * read: a file's queue is a few objects (a 4-KiB segment holds 500 pages),
 * fewer than the per-CPU counters' batch, so a plain read would say none.
 */
u64 aipu_mem_objects(void)
{
	u64 n = 0;
	unsigned int i;

	for (i = 0; i < NR_RESERVES; i++)
		if (i != TRACKER)
			n += percpu_counter_sum_positive(&reserves[i].live);
	return n;
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
	unsigned int i;

	for (i = 0; i < NR_RESERVES; i++)
		reserve_refill(&reserves[i]);
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
	unsigned int i;

	for (i = 0; i < NR_RESERVES; i++) {
		if (reserve_init(&reserves[i], reserve_names[i],
				 reserve_sizes[i])) {
			aipu_mem_exit();
			return -ENOMEM;
		}
	}
	if (IS_ENABLED(CONFIG_KASAN) && !AIPU_FREE_AT_ONCE)
		pr_info("frees parked for the drain (AIPU_FREE_LATER)\n");
	return 0;
}

/* Every object must have been freed already (rcu_barrier first). */
void aipu_mem_exit(void)
{
	unsigned int i;

	rcu_barrier();
	for (i = 0; i < NR_RESERVES; i++)
		reserve_exit(&reserves[i]);
}
