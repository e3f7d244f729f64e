// SPDX-License-Identifier: GPL-2.0
/*
 * aipu's device queue at scale: src/queue/queue.c with src/queue/flog.c,
 * src/queue/log.c, src/queue/live.c and src/queue/wheel.c, compiled as the unit
 * tests compile them, timed in user space on the host's CPU (the guests run
 * under QEMU's TCG, which would time the emulator, not the code).
 * bench/scale/README.md says what each table measures.
 *
 * What the kernel glue does is stood in for here:
 *   - one pthread spinlock per simulated backing device guards that device's
 *     struct aipu_queue, as src/dev.c's raw spinlock does, and every hold
 *     reads the clock after taking it and before dropping it, as
 *     aipu_dev_lock()/aipu_dev_unlock() do for lock_hold_max_ns;
 *   - the probe (src/hook.c) looks the file's tracker up without a lock and
 *     tries aipu_queue_pages_fast() under the file's own lock (a pthread
 *     spinlock in the tracker, as struct aipu_mapping's raw spinlock),
 *     adding to this thread's share of the device's counters (the kernel's
 *     per-CPU ones); when that will not do, it takes the device's lock,
 *     checks the tracker (aipu_queue_get() if it has none) and calls
 *     aipu_queue_pages() (aipu_queue_whole() after a short fast path);
 *   - the flusher (src/flusher.c) runs phase 1 in holds of AIPU_SCAN_BATCH
 *     files, takes a batch a hold, merges it outside the lock and hands its
 *     extents back AIPU_HANDBACK_MAX stretches or AIPU_HANDBACK_PAGES pages
 *     a hold (aipu_queue_handback()), then aipu_queue_put() in a hold of its
 * own;
 *     eviction and rmmod (src/mapping.c), the shrinker and the park free
 *     AIPU_DRAIN_BATCH objects a hold (include/aipu_queue.h).  The
 *     constants of src/ are read from those files at build time (Makefile);
 *   - queue objects and trackers come from per-"CPU" caches, mapped and
 *     touched before they are timed and handed out by a free-list pop or a
 *     pointer bump: the slab's per-CPU fast path (slab refills are not in
 *     the figures);
 *   - the tracker table has the kernel's layout (src/mapping.c: hlist
 *     buckets, hash_ptr()'s multiplicative hash, a fixed size from the
 *     machine's memory, read from the same constants) but is not its code:
 *     no RCU, and trackers are freed at once, not after a grace period.
 *
 * Every figure is clock_gettime(CLOCK_MONOTONIC) on the host: transitions in
 * batches of BATCH (the batch's time divided by BATCH; percentiles are over
 * batches), holds of the lock one by one (the two clock reads inside the
 * hold are included: "timer" in meta.json).  In user space the scheduler can
 * preempt a hold and a page fault can stall it, which the kernel's hold
 * (interrupts off, memory mapped) never suffers: the thread's context
 * switches and page faults are read before and after each batch or hold,
 * outside the timed window, and a sample during which one happened is
 * counted apart ("disturbed") and left out of the percentiles and maxima.
 * Interrupts and the hypervisor's steal cannot be seen this way: table 0,
 * a fixed computation timed the same way, shows them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <linux/jiffies.h>
#include <linux/kernel.h>

#include "aipu_queue.h"

#ifndef AIPU_SCAN_BATCH
#error "AIPU_SCAN_BATCH: build with make, which reads it from src/flusher.c"
#endif
#if !defined(AIPU_TABLE_PAGES_PER_BUCKET) || !defined(AIPU_TABLE_MIN_BITS) || \
	!defined(AIPU_TABLE_MAX_BITS)
#error "AIPU_TABLE_*: build with make, which reads them from src/mapping.c"
#endif
#ifndef AIPU_SLOT_JIFFIES
#error "AIPU_SLOT_JIFFIES: build with make, which reads it from src/dev.c"
#endif
#if !defined(AIPU_MAX_AGE_MS) || !defined(AIPU_PERIOD_MS)
#error "AIPU_MAX_AGE_MS, AIPU_PERIOD_MS: build with make (include/aipu_knobs.h)"
#endif
#ifndef HZ
#error "HZ: build with make"
#endif

#define BATCH		64	/* transitions timed together */
#define NCPUS		2	/* the host's cores: at most two threads */
#define NDEVS		2
#define SPREAD		262144	/* pages a file when a backlog is spread */
#define SMALL_PAGES	4	/* pages of a small file */
#define T0		1000UL	/* first "jiffy" */
#define JIFFY_PAGES	1024	/* transitions per jiffy */
#define MAX_ROUNDS	64
#define CACHELINE	128	/* two lines: the adjacent-line prefetcher */
#define ENSURE		1024	/* objects of each cache ready before a sample */
#define TARGET_NS	50000	/* issue 14: the longest interrupts-off section */
#define MS_TO_J(ms)	(((unsigned long)(ms) * HZ + 999) / 1000)

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("scale: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static inline u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CPU time of this thread: a system call, never inside a timed window. */
static u64 cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Context switches (either kind) and page faults of this thread so far: if
 * this moves across a timed window, something other than the code under
 * test ran in it.
 */
static long disturbances(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nivcsw + ru.ru_nvcsw + ru.ru_minflt + ru.ru_majflt;
}

/* murmur3's finalizer: a bijection on 32 bits, so distinct i, distinct pages */
static inline u32 mix32(u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static inline u64 rng_next(u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/*
 * A pseudo-random permutation of [0, n): a bijection of [0, 2^bits) (xor,
 * odd multiplies and xor-shifts within the bits), walked until it lands
 * below n.  perm_at(p, i) for i = 0, 1, ... visits every value once.
 */
struct perm {
	u64 n, mask, seed, k1, k2;
	unsigned int shift;
};

static void perm_init(struct perm *p, u64 n, u64 seed)
{
	unsigned int bits = 2;

	while (bits < 63 && (1ull << bits) < n)
		bits++;
	p->n = n;
	p->mask = (1ull << bits) - 1;
	p->seed = mix32(seed) * 0x9e3779b97f4a7c15ull;
	p->k1 = 0xff51afd7ed558ccdull | 1;
	p->k2 = 0xc4ceb9fe1a85ec53ull | 1;
	p->shift = (bits + 1) / 2;
}

static inline u64 perm_round(const struct perm *p, u64 x)
{
	x = (x ^ p->seed) & p->mask;
	x = (x * p->k1) & p->mask;
	x ^= x >> p->shift;
	x = (x * p->k2) & p->mask;
	x ^= x >> p->shift;
	return x;
}

static inline u64 perm_at(const struct perm *p, u64 i)
{
	u64 x = perm_round(p, i);

	while (x >= p->n)
		x = perm_round(p, x);
	return x;
}

/* ---- memory: the slab's per-CPU caches, fast path only ---- */

enum {
	C_SEG64, C_SEG512, C_SEG4096, C_CHUNK, C_MOVED, C_RETRY, C_TRACKER,
	NR_CACHES
};

static const char * const cache_names[NR_CACHES] = {
	"seg64", "seg512", "seg4096", "live_chunk", "moved", "retry",
	"tracker",
};

#define MAX_REGIONS 64

struct cache {
	size_t size;
	char *next, *end;	/* the current region's untouched part */
	void *free;		/* freed objects, last in first out */
	unsigned long nfree;
	long live;
	struct {
		char *base;
		size_t size;
	} r[MAX_REGIONS];
	unsigned int nr, cur;
};

struct cpu {
	struct cache c[NR_CACHES];
} __attribute__((aligned(CACHELINE)));

/*
 * A tracker as the kernel allocates it (struct aipu_mapping, include/aipu.h):
 * the tracker, its hash node and an rcu_head (two pointers), so its size is
 * the kernel's.
 */
struct bench_mapping {
	struct aipu_file t;
	pthread_spinlock_t lock;	/* the kernel's raw_spinlock_t: 4 B */
	struct hlist_node node;
	struct {
		void *next, *func;
	} rcu;
};

static const size_t cache_sizes[NR_CACHES] = {
	64, 512, 4096, sizeof(struct aipu_live_chunk),
	sizeof(struct aipu_moved), sizeof(struct aipu_retry),
	sizeof(struct bench_mapping),
};

static struct cpu cpus[NCPUS];
static __thread struct cpu *this_cpu = &cpus[0];

/*
 * A new region of memory for @c, at least @objs objects, huge-paged where
 * the kernel allows it (the kernel's direct map is) and touched, so that
 * no page fault lands in a timed window.
 */
static void cache_map(struct cache *c, unsigned long objs)
{
	size_t have = 0, want;
	unsigned int i;
	char *p;

	if (c->nr == MAX_REGIONS)
		die("cache of %zu-byte objects: too many regions", c->size);
	for (i = 0; i < c->nr; i++)
		have += c->r[i].size;
	want = objs * c->size;
	if (want < have / 2)
		want = have / 2;
	if (want < (4 << 20))
		want = 4 << 20;
	want = (want + (2 << 20) - 1) & ~(size_t)((2 << 20) - 1);
	p = mmap(NULL, want, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", want, strerror(errno));
	madvise(p, want, MADV_HUGEPAGE);
	memset(p, 0, want);
	c->r[c->nr].base = p;
	c->r[c->nr].size = want;
	c->nr++;
}

/* Objects handed out from here on come from region @i, in address order. */
static void cache_use(struct cache *c, unsigned int i)
{
	c->cur = i;
	c->next = c->r[i].base;
	c->end = c->r[i].base + c->r[i].size / c->size * c->size;
}

/* At least @n objects ready without mapping memory. */
static void cache_ensure(struct cache *c, unsigned long n)
{
	if (c->nfree + (c->end - c->next) / c->size >= n)
		return;
	/* What is left of this region goes onto the free list. */
	for (; c->next + c->size <= c->end; c->next += c->size) {
		*(void **)c->next = c->free;
		c->free = c->next;
		c->nfree++;
	}
	if (c->cur + 1 >= c->nr)
		cache_map(c, n);
	cache_use(c, c->cur + 1);
}

static void *cache_alloc(struct cache *c)
{
	void *p = c->free;

	if (p) {
		c->free = *(void **)p;
		c->nfree--;
	} else {
		cache_ensure(c, 1);
		p = c->next;
		c->next += c->size;
	}
	c->live++;
	return p;
}

static void cache_free(struct cache *c, void *p)
{
	*(void **)p = c->free;
	c->free = p;
	c->nfree++;
	c->live--;
}

/* Every region unmapped. */
static void cache_release(struct cache *c)
{
	unsigned int i;

	for (i = 0; i < c->nr; i++)
		munmap(c->r[i].base, c->r[i].size);
	c->nr = 0;
}

/* Empty, its regions kept (or unmapped with @release). */
static void cache_reset(struct cache *c, bool release)
{
	if (c->live)
		die("cache of %zu-byte objects: %ld objects not freed",
		    c->size, c->live);
	c->free = NULL;
	c->nfree = 0;
	if (release)
		cache_release(c);
	if (!c->nr)
		cache_map(c, 0);
	cache_use(c, 0);
}

/*
 * The first @n objects handed out in random address order, as a slab that
 * has served a long-running workload would: consecutive allocations land in
 * unrelated cache lines.  The cache must be empty (just reset).
 */
static void cache_scatter(struct cache *c, unsigned long n, u64 seed)
{
	struct perm p;
	unsigned long i;

	if (c->r[0].size / c->size < n) {
		cache_release(c);
		cache_map(c, n);
		cache_use(c, 0);
	}
	perm_init(&p, n, seed);
	c->free = NULL;
	for (i = 0; i < n; i++) {
		void *o = c->r[0].base + perm_at(&p, i) * c->size;

		*(void **)o = c->free;
		c->free = o;
	}
	c->nfree = n;
	c->next = c->r[0].base + n * c->size;
}

/* Every cache of this thread ready for a timed batch or hold. */
static void caches_ensure(void)
{
	unsigned int i;

	for (i = 0; i < NR_CACHES; i++)
		cache_ensure(&this_cpu->c[i], ENSURE);
}

static struct cache *seg_cache(unsigned int bytes)
{
	return &this_cpu->c[bytes <= 64 ? C_SEG64 :
			    bytes <= 512 ? C_SEG512 : C_SEG4096];
}

struct aipu_seg *aipu_seg_alloc(unsigned int bytes)
{
	return cache_alloc(seg_cache(bytes));
}

void aipu_seg_free(struct aipu_seg *s, unsigned int bytes)
{
	cache_free(seg_cache(bytes), s);
}

struct aipu_live_chunk *aipu_live_chunk_alloc(void)
{
	return cache_alloc(&this_cpu->c[C_CHUNK]);
}

void aipu_live_chunk_free(struct aipu_live_chunk *c)
{
	cache_free(&this_cpu->c[C_CHUNK], c);
}

/* As src/mem.c: the 4-KiB segments' cache. */
struct aipu_live_dir *aipu_live_dir_alloc(void)
{
	return cache_alloc(&this_cpu->c[C_SEG4096]);
}

void aipu_live_dir_free(struct aipu_live_dir *dir)
{
	cache_free(&this_cpu->c[C_SEG4096], dir);
}

struct aipu_moved *aipu_moved_alloc(void)
{
	return cache_alloc(&this_cpu->c[C_MOVED]);
}

void aipu_moved_free(struct aipu_moved *m)
{
	cache_free(&this_cpu->c[C_MOVED], m);
}

struct aipu_retry *aipu_retry_alloc(void)
{
	return cache_alloc(&this_cpu->c[C_RETRY]);
}

void aipu_retry_free(struct aipu_retry *r)
{
	cache_free(&this_cpu->c[C_RETRY], r);
}

struct aipu_file *aipu_file_alloc(void)
{
	struct bench_mapping *m = cache_alloc(&this_cpu->c[C_TRACKER]);

	pthread_spin_init(&m->lock, PTHREAD_PROCESS_PRIVATE);
	return &m->t;
}

static struct bench_mapping *to_mapping(struct aipu_file *t)
{
	return container_of(t, struct bench_mapping, t);
}

void aipu_file_lock(struct aipu_file *t)
{
	pthread_spin_lock(&to_mapping(t)->lock);
}

void aipu_file_unlock(struct aipu_file *t)
{
	pthread_spin_unlock(&to_mapping(t)->lock);
}

void aipu_file_free(struct aipu_file *t)
{
	cache_free(&this_cpu->c[C_TRACKER], to_mapping(t));
}

/* Objects of every cache of every CPU: what the queue holds. */
static void objects_live(long *n)
{
	unsigned int i, k;

	for (k = 0; k < NR_CACHES; k++)
		for (n[k] = 0, i = 0; i < NCPUS; i++)
			n[k] += cpus[i].c[k].live;
}

/* ---- the tracker table: the kernel's layout (src/mapping.c) ---- */

static struct {
	struct hlist_head *b;
	unsigned int bits;
	unsigned long nelems;
} table;

/* hash_ptr() of include/linux/hash.h on 64 bits. */
static inline unsigned long key_hash(const void *key)
{
	return (u64)(uintptr_t)key * 0x61c8864680b583ebull >> (64 - table.bits);
}

/* One bucket per AIPU_TABLE_PAGES_PER_BUCKET pages of this host's memory. */
static void table_init(void)
{
	unsigned long want = sysconf(_SC_PHYS_PAGES) /
			     AIPU_TABLE_PAGES_PER_BUCKET;
	unsigned int bits = 0;

	while (want >> (bits + 1))
		bits++;
	if (bits < AIPU_TABLE_MIN_BITS)
		bits = AIPU_TABLE_MIN_BITS;
	if (bits > AIPU_TABLE_MAX_BITS)
		bits = AIPU_TABLE_MAX_BITS;
	table.bits = bits;
	table.b = calloc(1UL << bits, sizeof(*table.b));
	if (!table.b)
		die("out of memory for the table");
}

struct aipu_file *aipu_file_lookup(const void *key)
{
	struct bench_mapping *m;

	hlist_for_each_entry(m, &table.b[key_hash(key)], node)
		if (m->t.key == key)
			return &m->t;
	return NULL;
}

int aipu_file_insert(struct aipu_file *t)
{
	hlist_add_head(&to_mapping(t)->node, &table.b[key_hash(t->key)]);
	table.nelems++;
	return 0;
}

void aipu_file_remove(struct aipu_file *t)
{
	hlist_del(&to_mapping(t)->node);
	table.nelems--;
}

/* ---- devices and their lock ---- */

/* A CPU's share of a device's counters (struct aipu_dev's @fast). */
struct fast_share {
	struct aipu_queue_delta dl;
} __attribute__((aligned(CACHELINE)));

struct dev {
	pthread_spinlock_t lock;
	u64 locked_at, held;
	struct aipu_queue tr;
	struct list_head slots[AIPU_QUEUE_SLOTS];
	struct fast_share fast[NCPUS];
} __attribute__((aligned(CACHELINE)));

static struct dev devs[NDEVS];
/* The wheel's slot width in jiffies: the module's, AIPU_SLOT_JIFFIES. */
static unsigned long module_slot, slot_width;

/* aipu_dev_lock(): the lock, and the clock read that times the hold. */
static inline void dev_lock(struct dev *d)
{
	pthread_spin_lock(&d->lock);
	d->locked_at = now_ns();
}

/* aipu_dev_unlock(): returns the hold, the clock reads included. */
static inline u64 dev_unlock(struct dev *d)
{
	u64 held = now_ns() - d->locked_at;

	d->held = held;
	pthread_spin_unlock(&d->lock);
	return held;
}

/* The key of file @i of device @dev: an address, never dereferenced. */
static inline const void *file_key(unsigned int dev, unsigned long i)
{
	return (const void *)(uintptr_t)(((u64)(dev + 1) << 40) + 4096 +
					 (u64)i * 1024);
}

/*
 * The probe's part of a clean -> dirty transition (src/hook.c): the tracker
 * looked up without a lock; the fast path under the file's lock if it
 * will, else under the device's lock the tracker checked (made if there is
 * none) and aipu_queue_pages() for the page.
 */
static inline void probe(struct dev *d, const void *key, pgoff_t index,
			 unsigned long time)
{
	struct aipu_file *t = aipu_file_lookup(key);
	int r = AIPU_FAST_NO;

	if (t) {
		aipu_file_lock(t);
		r = aipu_queue_pages_fast(t, index, 1, time,
					  &d->fast[this_cpu - cpus].dl, false);
		aipu_file_unlock(t);
		if (r == AIPU_FAST_DONE)
			return;
	}
	dev_lock(d);
	if (!t || !t->hashed)
		t = aipu_queue_get(&d->tr, key, (void *)key);
	if (t && r == AIPU_FAST_SHORT)
		aipu_queue_whole(&d->tr, t, time);
	else if (t)
		aipu_queue_pages(&d->tr, t, index, 1, time);
	dev_unlock(d);
	if (!t)
		die("aipu_queue_get failed");
}

/*
 * The fast path's shares added into the device's own counters, as the
 * kernel's stat adds them up: before anything reads tr.st.
 */
static void dev_fold(struct dev *d)
{
	struct aipu_queue_stats *st = &d->tr.st;
	unsigned int i;

	for (i = 0; i < NCPUS; i++) {
		st->pages_dirtied += d->fast[i].dl.pages_dirtied;
		st->bytes += d->fast[i].dl.bytes;
		st->pages += d->fast[i].dl.pages;
		memset(&d->fast[i].dl, 0, sizeof(d->fast[i].dl));
	}
}

/* Every file of @d forgotten (rmmod's loop, no budget), untimed. */
static void dev_clear(struct dev *d)
{
	struct aipu_file *t;

	while ((t = list_first_entry_or_null(&d->tr.trackers,
					     struct aipu_file, link)))
		if (!aipu_queue_kill(&d->tr, t, ~0UL))
			die("aipu_queue_kill with no budget did not finish");
}

/*
 * Forget everything: every file of every device killed, then check that
 * every object and tracker came back (a leak in the queue would show here),
 * and start the caches afresh (@release: their memory unmapped).
 */
static void world_reset(bool release)
{
	unsigned int i, k;

	this_cpu = &cpus[0];
	for (i = 0; i < NDEVS; i++) {
		struct aipu_queue_stats *st = &devs[i].tr.st;

		dev_clear(&devs[i]);
		dev_fold(&devs[i]);
		if (st->trackers || st->bytes || st->pages)
			die("after every kill: trackers %llu bytes %llu pages %llu",
			    (unsigned long long)st->trackers,
			    (unsigned long long)st->bytes,
			    (unsigned long long)st->pages);
		aipu_queue_init(&devs[i].tr, devs[i].slots, slot_width, T0);
	}
	if (table.nelems)
		die("table: %lu trackers left after every kill", table.nelems);
	for (i = 0; i < NCPUS; i++)
		for (k = 0; k < NR_CACHES; k++)
			cache_reset(&cpus[i].c[k], release);
}

/* ---- samples and statistics ---- */

struct samples {
	float *v;
	size_t n, cap;
};

static void samples_add(struct samples *s, double x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			die("out of memory for samples");
	}
	s->v[s->n++] = x;
}

/*
 * Timed batches or holds of one table row: those during which the thread was
 * disturbed are counted, not kept; the longest kept one of each round too.
 */
struct timed {
	struct samples s;
	unsigned long n, disturbed;
	double raw_max;			/* disturbed ones included */
	double sum;			/* of those kept */
	double round_max[MAX_ROUNDS];
	double round_median[MAX_ROUNDS];	/* set by stats_of() */
	size_t round_start[MAX_ROUNDS];		/* index in @s */
	unsigned int rounds;
	bool rounds_sorted;		/* @s sorted: round medians taken */
	bool keep_order;		/* every hold also into @order */
	struct samples order;		/* in order, disturbed = INFINITY */
};

static void timed_clear(struct timed *t)
{
	t->s.n = 0;
	t->n = 0;
	t->disturbed = 0;
	t->raw_max = 0;
	t->sum = 0;
	t->rounds = 0;
	t->rounds_sorted = false;
	t->order.n = 0;
}

static void timed_round(struct timed *t)
{
	if (t->rounds == MAX_ROUNDS)
		die("more than %d rounds", MAX_ROUNDS);
	t->round_start[t->rounds] = t->s.n;
	t->round_max[t->rounds++] = 0;
}

static void timed_add(struct timed *t, double ns, bool disturbed)
{
	if (t->keep_order)
		samples_add(&t->order, disturbed ? INFINITY : ns);
	t->n++;
	if (ns > t->raw_max)
		t->raw_max = ns;
	if (disturbed) {
		t->disturbed++;
		return;
	}
	samples_add(&t->s, ns);
	t->sum += ns;
	if (t->rounds && ns > t->round_max[t->rounds - 1])
		t->round_max[t->rounds - 1] = ns;
}

static void timed_free(struct timed *t)
{
	free(t->s.v);
	free(t->order.v);
	t->s.v = NULL;
	t->s.cap = 0;
	t->order.v = NULL;
	t->order.cap = 0;
	timed_clear(t);
}

struct stats {
	size_t n;
	double median, p99, p999, max, mean, round_max;
};

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted @v. */
static double pct(const float *v, size_t n, double p)
{
	size_t k = (size_t)(p * n + 0.999999);

	return v[k ? k - 1 : 0];
}

static double median_of(const double *v, unsigned int n)
{
	double c[MAX_ROUNDS];
	unsigned int i;

	if (!n)
		return 0;
	for (i = 0; i < n && i < MAX_ROUNDS; i++)
		c[i] = v[i];
	qsort(c, i, sizeof(*c), cmp_double);
	return c[(i - 1) / 2];
}

/* Median of each round's kept samples, before they are sorted together. */
static void round_medians(struct timed *t)
{
	unsigned int r;

	for (r = 0; r < t->rounds; r++) {
		size_t a = t->round_start[r];
		size_t b = r + 1 < t->rounds ? t->round_start[r + 1] : t->s.n;
		float *c;

		t->round_median[r] = 0;
		if (b <= a)
			continue;
		c = malloc((b - a) * sizeof(*c));
		if (!c)
			die("out of memory");
		memcpy(c, t->s.v + a, (b - a) * sizeof(*c));
		qsort(c, b - a, sizeof(*c), cmp_float);
		t->round_median[r] = pct(c, b - a, 0.5);
		free(c);
	}
	t->rounds_sorted = true;
}

/* Sorts the kept samples in place (after taking each round's median). */
static struct stats stats_of(struct timed *t)
{
	struct stats st = { .n = t->s.n };
	struct samples *s = &t->s;

	st.round_max = median_of(t->round_max, t->rounds);
	if (!t->rounds_sorted)
		round_medians(t);
	if (!s->n)
		return st;
	qsort(s->v, s->n, sizeof(*s->v), cmp_float);
	st.mean = t->sum / s->n;
	st.median = pct(s->v, s->n, 0.5);
	st.p99 = pct(s->v, s->n, 0.99);
	st.p999 = pct(s->v, s->n, 0.999);
	st.max = s->v[s->n - 1];
	return st;
}

/* ---- output ---- */

static const char *out_dir = ".";
static unsigned int rounds = 3;
static bool quick;

static FILE *json_open(const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.json", out_dir, name);
	f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	return f;
}

static void json_close(FILE *f)
{
	if (fclose(f))
		die("writing JSON: %s", strerror(errno));
}

static void json_doubles(FILE *f, const char *name, const double *v,
			 unsigned int n)
{
	unsigned int i;

	fprintf(f, ", \"%s\": [", name);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%.1f", i ? ", " : "", v[i]);
	fputc(']', f);
}

/* ", NAME: {...}": the statistics of @t (sorting it). */
static struct stats json_timed(FILE *f, const char *name, struct timed *t)
{
	struct stats st = stats_of(t);

	fprintf(f, ", \"%s\": {\"n\": %lu, \"kept\": %zu, \"disturbed\": %lu, "
		"\"median\": %.1f, \"p99\": %.1f, \"p999\": %.1f, "
		"\"max\": %.1f, \"mean\": %.1f, \"raw_max\": %.1f, "
		"\"round_max_median\": %.1f", name, t->n, st.n, t->disturbed,
		st.median, st.p99, st.p999, st.max, st.mean, t->raw_max,
		st.round_max);
	json_doubles(f, "round_max", t->round_max, t->rounds);
	json_doubles(f, "round_median", t->round_median, t->rounds);
	fputc('}', f);
	return st;
}

static const char *with_commas(unsigned long v, char *buf)
{
	char tmp[32];
	int len, i, j = 0;

	len = snprintf(tmp, sizeof(tmp), "%lu", v);
	for (i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = tmp[i];
	}
	buf[j] = '\0';
	return buf;
}

/* Hypervisor steal time of all CPUs so far, in seconds (/proc/stat). */
static double steal_s(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int got;

	if (!f)
		return 0;
	got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		     &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	return got == 8 ? (double)v[7] / sysconf(_SC_CLK_TCK) : 0;
}

/* What else was going on while a table was measured. */
struct noise {
	u64 t;
	long cs;
	double steal;
};

static struct noise noise_begin(void)
{
	struct noise n = { now_ns(), disturbances(), steal_s() };

	return n;
}

static void noise_end(FILE *f, const struct noise *n)
{
	double s = (now_ns() - n->t) / 1e9, steal = steal_s() - n->steal;
	long cs = disturbances() - n->cs;

	printf("\nMeasured in %.2f s; meanwhile the hypervisor stole %.2f CPU-s from this host's 2 CPUs, and the main thread was disturbed %ld times (samples disturbed are left out above and counted in the JSON).\n",
	       s, steal, cs);
	fprintf(f, "\"noise\": {\"seconds\": %.2f, \"steal_s\": %.2f, "
		"\"disturbances\": %ld}", s, steal, cs);
}

static void print_rounds(const double *v, unsigned int n, double scale)
{
	unsigned int r;

	for (r = 0; r < n; r++)
		printf("%s%.*f", r ? ", " : "", scale > 1 ? 1 : 0, v[r] / scale);
}

static void table_end(FILE *f, const struct noise *nz)
{
	fprintf(f, "\n], ");
	noise_end(f, nz);
	fprintf(f, "}\n");
	json_close(f);
}

/* ---- generating transitions ---- */

enum pattern {
	P_RANDOM_ONE,		/* every page of one file once, random order */
	P_RANDOM_SPREAD,	/* the same over files of at most SPREAD pages */
	P_RANDOM_SPARSE,	/* random pages anywhere in 2^32: a chunk each */
	P_SEQ_1024,		/* sequential, a new jiffy every 1,024 pages */
	P_SEQ_1,		/* sequential, a new jiffy every page */
	P_SMALL,		/* files of SMALL_PAGES pages, written whole */
	P_NR,
};

static const char * const pattern_names[P_NR] = {
	"random pages, one file",
	"random pages, files of <= 262,144 pages",
	"random pages, sparse (a 512-page live chunk each)",
	"sequential, 1,024 pages a jiffy",
	"sequential, a page a jiffy",
	"files of 4 pages, written whole",
};

static const char * const pattern_ids[P_NR] = {
	"random_one", "random_spread", "random_sparse", "seq_1024", "seq_1",
	"small",
};

struct gen {
	enum pattern p;
	unsigned int dev;
	unsigned long nfiles;
	u32 seed;
	struct perm perm;
};

static unsigned long files_for(enum pattern p, unsigned long n)
{
	if (p == P_RANDOM_SPREAD)
		return (n + SPREAD - 1) / SPREAD;
	if (p == P_SMALL)
		return (n + SMALL_PAGES - 1) / SMALL_PAGES;
	return 1;
}

static void gen_init(struct gen *g, enum pattern p, unsigned int dev,
		     unsigned long n, u32 seed)
{
	g->p = p;
	g->dev = dev;
	g->nfiles = files_for(p, n);
	g->seed = seed;
	perm_init(&g->perm, n, seed);
}

static inline void gen_step(struct gen *g, unsigned long i,
			    const void **key, pgoff_t *index,
			    unsigned long *time)
{
	unsigned long file = 0;
	u64 x;

	*time = T0 + i / JIFFY_PAGES;
	switch (g->p) {
	case P_RANDOM_ONE:
		*index = perm_at(&g->perm, i);
		break;
	case P_RANDOM_SPREAD:
		x = perm_at(&g->perm, i);
		file = x % g->nfiles;
		*index = x / g->nfiles;
		break;
	case P_RANDOM_SPARSE:
		*index = mix32((u32)i + g->seed);
		break;
	case P_SMALL:
		file = i / SMALL_PAGES;
		*index = i % SMALL_PAGES;
		break;
	case P_SEQ_1024:
		*index = i;
		break;
	default:
		*index = i;
		*time = T0 + i;
		break;
	}
	*key = file_key(g->dev, file);
}

/* The time after every transition of @n of @p: every page due before it. */
static unsigned long gen_end(enum pattern p, unsigned long n)
{
	return p == P_SEQ_1 ? T0 + n + 1 : T0 + n / JIFFY_PAGES + 1;
}

/*
 * @n transitions of @g on @d, a batch at a time.  Batches that start at or
 * after @keep_from and are whole go into @keep (ns per transition); with
 * @holds, every hold of the lock of every batch not disturbed, one by one.
 */
static void fill(struct dev *d, struct gen *g, unsigned long n,
		 struct timed *keep, unsigned long keep_from,
		 struct timed *holds)
{
	unsigned long tm[BATCH], i, j, m;
	const void *k[BATCH];
	pgoff_t ix[BATCH];
	double h[BATCH];
	bool disturbed;
	long cs = 0;
	u64 t0, t1;

	for (i = 0; i < n; i += m) {
		m = n - i < BATCH ? n - i : BATCH;
		for (j = 0; j < m; j++)
			gen_step(g, i + j, &k[j], &ix[j], &tm[j]);
		caches_ensure();
		if (keep || holds)
			cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < m; j++) {
			probe(d, k[j], ix[j], tm[j]);
			h[j] = d->held;
		}
		t1 = now_ns();
		if (!keep && !holds)
			continue;
		disturbed = disturbances() != cs;
		if (keep && i >= keep_from && m == BATCH)
			timed_add(keep, (double)(t1 - t0) / BATCH, disturbed);
		for (j = 0; holds && j < m; j++)
			timed_add(holds, h[j], disturbed);
	}
}

/* ---- what a device holds: the memory table's input ---- */

struct mem_row {
	char what[112];
	unsigned long dirtied, pages, files, fallbacks;
	long objs[NR_CACHES];
};

static struct mem_row mem_rows[128];
static unsigned int nr_mem_rows;

static struct mem_row *mem_note(struct dev *d, const char *fmt, ...)
{
	struct aipu_queue_stats *st = &d->tr.st;
	struct mem_row *r;
	va_list ap;

	if (nr_mem_rows == ARRAY_SIZE(mem_rows))
		die("too many memory rows");
	dev_fold(d);
	r = &mem_rows[nr_mem_rows++];
	va_start(ap, fmt);
	vsnprintf(r->what, sizeof(r->what), fmt, ap);
	va_end(ap);
	r->dirtied = st->pages_dirtied;
	r->pages = st->pages;
	r->files = st->trackers;
	r->fallbacks = st->fallbacks;
	objects_live(r->objs);
	return r;
}

static double mem_bytes(const struct mem_row *r, bool trackers)
{
	double b = 0;
	unsigned int k;

	for (k = 0; k < NR_CACHES; k++)
		if (trackers || k != C_TRACKER)
			b += (double)r->objs[k] * cache_sizes[k];
	return b;
}

/* ---- 1. cost per transition against pages dirtied per file ---- */

static unsigned long min_batches(void)
{
	return quick ? 256 : 1024;
}

static void pages_row(FILE *f, enum pattern p, unsigned long n,
		      struct timed *all, bool first)
{
	unsigned long keep = (n / 2 + BATCH - 1) / BATCH * BATCH, per, reps;
	unsigned int r, rep;
	struct mem_row *mr;
	struct stats st;
	struct gen g;
	char b1[32], b2[32], b3[32];

	per = n > keep ? (n - keep) / BATCH : 0;
	if (!per) {
		keep = 0;
		per = n / BATCH;
	}
	reps = per ? (min_batches() + per - 1) / per : 1;
	timed_clear(all);
	for (r = 0; r < rounds; r++) {
		timed_round(all);
		for (rep = 0; rep < reps; rep++) {
			world_reset(false);
			gen_init(&g, p, 0, n, 77 + r * 1000 + rep);
			fill(&devs[0], &g, n, all, keep, NULL);
		}
	}
	mr = mem_note(&devs[0], "%s, N = %s", pattern_names[p],
		      with_commas(n, b1));
	fprintf(f, "%s{\"pattern\": \"%s\", \"pattern_name\": \"%s\", "
		"\"n\": %lu, \"fills_per_round\": %lu, \"pages_dirtied\": %lu, "
		"\"pages_tracked\": %lu, \"pages_by_fallback\": %lu, "
		"\"fallbacks\": %lu, \"files\": %lu, \"bytes\": %.0f",
		first ? "" : ",\n", pattern_ids[p], pattern_names[p], n, reps,
		mr->dirtied, mr->pages, mr->dirtied - mr->pages, mr->fallbacks,
		mr->files, mem_bytes(mr, true));
	st = json_timed(f, "ns", all);
	fprintf(f, "}");
	printf("| %s | %s | %.0f | %.0f | %.0f | ", pattern_names[p],
	       with_commas(n, b1), st.median, st.p99, st.p999);
	print_rounds(all->round_median, all->rounds, 1);
	printf(" | %.1f | %lu of %lu | %s | %s | %lu | %lu |\n",
	       st.max * BATCH / 1e3, all->disturbed, all->n,
	       with_commas(mr->pages, b2),
	       with_commas(mr->dirtied - mr->pages, b3), mr->fallbacks,
	       mr->files);
	fflush(stdout);
}

static void measure_pages(const unsigned long *sizes, unsigned int nsizes)
{
	static const enum pattern pats[] = {
		P_RANDOM_ONE, P_RANDOM_SPREAD, P_RANDOM_SPARSE, P_SEQ_1024,
		P_SEQ_1,
	};
	struct noise nz = noise_begin();
	FILE *f = json_open("pages");
	struct timed all = { 0 };
	unsigned int pi, si;

	printf("\n## 1. ns per clean->dirty transition against pages dirtied per file\n\n");
	printf("The probe's part of a transition, as src/hook.c does it: the tracker looked up in the table before the lock, the lock taken and the clock read (aipu_dev_lock()), the tracker checked (aipu_queue_get() if the file has none), aipu_queue_pages() for one page, the clock read and the lock dropped. Batches of %d transitions timed with clock_gettime and divided by %d; median, p99 and p99.9 over the batches of the second half of each fill (the file holds N/2 to N pages when they run), pooled over %u rounds; a fill is repeated until at least %lu batches are timed. A new jiffy every %d transitions (sequential, a page a jiffy: every page). \"Random pages, one file\": a file of N pages, each dirtied once in random order; \"files of <= 262,144 pages\": the same N pages over N/262,144 files, picked at random, so that no file reaches the cap; \"sparse\": random pages anywhere in a 2^32-page file, each in a live chunk of its own (the live set's worst case). \"max batch\": the longest batch of %d transitions not disturbed, an upper bound of the longest single probe. A file whose log holds AIPU_QUEUE_BYTES_MAX = %lu bytes (about %lu single-page entries) is bounded as a whole from then on (its whole-file entry, one fallback), so its later pages are not tracked one by one: \"pages tracked one by one\" are those in the files' logs, \"pages bounded by fallback\" the rest, at the end of the last fill.\n\n",
	       BATCH, BATCH, rounds, min_batches(), JIFFY_PAGES, BATCH,
	       AIPU_QUEUE_BYTES_MAX, AIPU_QUEUE_BYTES_MAX / 4096 *
	       ((4096 - sizeof(struct aipu_seg)) / 8));
	printf("| pattern | N pages dirtied | median ns | p99 ns | p99.9 ns | round medians ns | max batch µs | disturbed batches | pages tracked one by one | pages bounded by fallback | fallbacks | files |\n");
	printf("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"pages\", \"batch\": %d, \"rounds\": %u, "
		"\"bytes_max\": %lu, \"unit\": \"ns per transition\", "
		"\"rows\": [\n", BATCH, rounds, AIPU_QUEUE_BYTES_MAX);
	for (pi = 0; pi < ARRAY_SIZE(pats); pi++)
		for (si = 0; si < nsizes; si++)
			pages_row(f, pats[pi], sizes[si], &all, !pi && !si);
	table_end(f, &nz);
	world_reset(true);
	timed_free(&all);
}

/* ---- 2. cost per transition against tracked files ---- */

/*
 * Transitions of files [first, first + nfiles) of device @dev: transition
 * @c is a new page of a file picked at random (the first page of every file
 * was dirtied before, in file order).
 */
struct files_gen {
	unsigned int dev;
	unsigned long first, nfiles;
	struct perm perm;
};

static void files_gen_init(struct files_gen *fg, unsigned int dev,
			   unsigned long first, unsigned long nfiles,
			   unsigned long n, u32 seed)
{
	fg->dev = dev;
	fg->first = first;
	fg->nfiles = nfiles;
	perm_init(&fg->perm, nfiles * ((n + nfiles - 1) / nfiles + 1), seed);
}

static inline void files_step(const struct files_gen *fg, unsigned long c,
			      const void **key, pgoff_t *index,
			      unsigned long *time)
{
	u64 x = perm_at(&fg->perm, c);

	*key = file_key(fg->dev, fg->first + x % fg->nfiles);
	*index = 1 + x / fg->nfiles;
	*time = T0 + (fg->nfiles + c) / JIFFY_PAGES;
}

/*
 * Make @nfiles trackers (page 0 of each, in order), timing those
 * transitions into @create, then @n transitions, each a new page of a random
 * file, into @steady.
 */
static void files_rep(unsigned long nfiles, unsigned long n, u32 seed,
		      struct timed *create, struct timed *steady)
{
	unsigned long tm[BATCH], i, j, m;
	const void *k[BATCH];
	struct files_gen fg;
	pgoff_t ix[BATCH];
	u64 t0, t1;
	long cs;

	for (i = 0; i < nfiles; i += m) {
		m = nfiles - i < BATCH ? nfiles - i : BATCH;
		for (j = 0; j < m; j++) {
			k[j] = file_key(0, i + j);
			ix[j] = 0;
			tm[j] = T0 + (i + j) / JIFFY_PAGES;
		}
		caches_ensure();
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < m; j++)
			probe(&devs[0], k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(create, (double)(t1 - t0) / m, disturbances() != cs);
	}
	files_gen_init(&fg, 0, 0, nfiles, n, seed);
	for (i = 0; i < n; i += BATCH) {
		for (j = 0; j < BATCH; j++)
			files_step(&fg, i + j, &k[j], &ix[j], &tm[j]);
		caches_ensure();
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < BATCH; j++)
			probe(&devs[0], k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(steady, (double)(t1 - t0) / BATCH,
			  disturbances() != cs);
	}
}

static void measure_files(const unsigned long *sizes, unsigned int nsizes)
{
	unsigned long n = quick ? 16384 : 32768, reps = quick ? 1 : 2;
	struct timed create = { 0 }, steady = { 0 };
	struct noise nz = noise_begin();
	FILE *f = json_open("files");
	unsigned int si, r, rep;
	char b1[32], b2[32];

	printf("\n## 2. ns per transition against tracked files\n\n");
	printf("F files on one device, each given its page 0 first (\"first page of a file\": its tracker is made and inserted in the table), then %s transitions, each a new page of a file picked at random (\"new page, random file\"); batches of %d, median, p99 and p99.9 over batches, %lu fill(s) per round, %u rounds. The table has the kernel's layout and size for this host's memory: %lu buckets (src/mapping.c: one per %d pages of memory, 2^%d to 2^%d), so past about one file a bucket its chains grow.\n\n",
	       with_commas(n, b1), BATCH, reps, rounds, 1UL << table.bits,
	       AIPU_TABLE_PAGES_PER_BUCKET, AIPU_TABLE_MIN_BITS,
	       AIPU_TABLE_MAX_BITS);
	printf("| files F | new page, random file: median ns | p99 ns | p99.9 ns | round medians ns | max batch µs | disturbed batches | first page of a file: median ns | p99 ns | files a bucket | pages tracked |\n");
	printf("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"files\", \"batch\": %d, \"rounds\": "
		"%u, \"transitions\": %lu, \"fills_per_round\": %lu, "
		"\"table_buckets\": %lu, \"unit\": \"ns per transition\", "
		"\"rows\": [\n", BATCH, rounds, n, reps, 1UL << table.bits);
	for (si = 0; si < nsizes; si++) {
		unsigned long nf = sizes[si];
		struct stats sc, ss;
		struct mem_row *mr;

		timed_clear(&create);
		timed_clear(&steady);
		for (r = 0; r < rounds; r++) {
			timed_round(&steady);
			timed_round(&create);
			for (rep = 0; rep < reps; rep++) {
				world_reset(false);
				files_rep(nf, n, 991 + r * 100 + rep, &create,
					  &steady);
			}
		}
		mr = mem_note(&devs[0], "random files, F = %s, %s pages",
			      with_commas(nf, b1), with_commas(nf + n, b2));
		fprintf(f, "%s{\"files\": %lu, \"pages_tracked\": %lu, "
			"\"trackers\": %lu", si ? ",\n" : "", nf, mr->pages,
			mr->files);
		ss = json_timed(f, "ns", &steady);
		sc = json_timed(f, "create_ns", &create);
		fprintf(f, "}");
		printf("| %s | %.0f | %.0f | %.0f | ", with_commas(nf, b1),
		       ss.median, ss.p99, ss.p999);
		print_rounds(steady.round_median, steady.rounds, 1);
		printf(" | %.1f | %lu of %lu | %.0f | %.0f | %.2f | %lu |\n",
		       ss.max * BATCH / 1e3, steady.disturbed, steady.n,
		       sc.median, sc.p99,
		       (double)nf / (1UL << table.bits), mr->pages);
		fflush(stdout);
	}
	table_end(f, &nz);
	world_reset(true);
	timed_free(&create);
	timed_free(&steady);
}

/* ---- 3. one thread against two ---- */

struct worker {
	pthread_t th;
	unsigned int slot;	/* its per-CPU caches */
	struct dev *d;
	struct files_gen fg;
	unsigned long n;
	pthread_barrier_t *go;
	struct timed t;
	u64 ns, cpu;
} __attribute__((aligned(CACHELINE)));

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned long tm[BATCH], i, j;
	const void *k[BATCH];
	pgoff_t ix[BATCH];
	u64 t0, t1, start;
	long cs;

	this_cpu = &cpus[w->slot];
	pthread_barrier_wait(w->go);
	w->cpu = cpu_ns();
	start = now_ns();
	for (i = 0; i < w->n; i += BATCH) {
		for (j = 0; j < BATCH; j++)
			files_step(&w->fg, i + j, &k[j], &ix[j], &tm[j]);
		caches_ensure();
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < BATCH; j++)
			probe(w->d, k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(&w->t, (double)(t1 - t0) / BATCH,
			  disturbances() != cs);
	}
	w->ns = now_ns() - start;
	w->cpu = cpu_ns() - w->cpu;
	return NULL;
}

enum thread_cfg { ONE_THREAD, TWO_SHARED, TWO_OWN, NR_CFG };

static const char * const cfg_names[NR_CFG] = {
	"1 thread, 1 device",
	"2 threads, same device (one queue, a lock per file)",
	"2 threads, a device each (own queue)",
};

static const char * const cfg_ids[NR_CFG] = {
	"one", "two_shared", "two_own",
};

static struct worker workers[2];

/*
 * One timed run of @cfg: transitions a second, all threads together.  The
 * batches go into @t; the threads' CPU time per transition into *@cpu_per,
 * their CPU time over the wall time into *@busy.
 */
static double threads_run(enum thread_cfg cfg, unsigned long n,
			  unsigned long nfiles, u32 seed, struct timed *t,
			  double *cpu_per, double *busy)
{
	unsigned int nw = cfg == ONE_THREAD ? 1 : 2, i;
	unsigned long f, before;
	pthread_barrier_t go;
	u64 t0, t1, cpu = 0;
	size_t j;

	world_reset(false);
	for (i = 0; i < nw; i++) {
		struct worker *w = &workers[i];

		w->slot = i;
		w->d = &devs[cfg == TWO_OWN ? i : 0];
		files_gen_init(&w->fg, 0, i * nfiles, nfiles, n,
			       seed + i * 7919);
		w->n = n;
		w->go = &go;
		timed_clear(&w->t);
		w->t.s.cap = n / BATCH + 1;
		w->t.s.v = realloc(w->t.s.v, w->t.s.cap * sizeof(float));
		if (!w->t.s.v)
			die("out of memory for samples");
		/* Every tracker exists before the clock starts. */
		this_cpu = &cpus[i];
		for (f = 0; f < nfiles; f++) {
			caches_ensure();
			probe(w->d, file_key(0, i * nfiles + f), 0, T0);
		}
	}
	this_cpu = &cpus[0];
	before = table.nelems;
	pthread_barrier_init(&go, NULL, nw + 1);
	for (i = 0; i < nw; i++)
		if (pthread_create(&workers[i].th, NULL, worker_fn,
				   &workers[i]))
			die("pthread_create failed");
	pthread_barrier_wait(&go);
	t0 = now_ns();
	for (i = 0; i < nw; i++)
		pthread_join(workers[i].th, NULL);
	t1 = now_ns();
	pthread_barrier_destroy(&go);
	if (table.nelems != before)
		die("a tracker was made during the threaded run");
	timed_round(t);
	for (i = 0; i < nw; i++) {
		struct worker *w = &workers[i];

		for (j = 0; j < w->t.s.n; j++)
			timed_add(t, w->t.s.v[j], false);
		t->n += w->t.disturbed;
		t->disturbed += w->t.disturbed;
		if (w->t.raw_max > t->raw_max)
			t->raw_max = w->t.raw_max;
		cpu += w->cpu;
	}
	/* Objects a thread made are freed into its own caches. */
	for (i = 0; i < NDEVS; i++) {
		struct aipu_file *tk;

		while ((tk = list_first_entry_or_null(&devs[i].tr.trackers,
						      struct aipu_file,
						      link))) {
			this_cpu = &cpus[(to_mapping(tk)->t.key >=
					  file_key(0, nfiles)) ? 1 : 0];
			aipu_queue_kill(&devs[i].tr, tk, ~0UL);
		}
	}
	this_cpu = &cpus[0];
	*cpu_per = (double)cpu / (nw * n);
	*busy = (double)cpu / (t1 - t0);
	return (double)nw * n / ((t1 - t0) / 1e9);
}

static void measure_threads(void)
{
	unsigned long n = quick ? 262144 : 2097152, nfiles = 1000;
	unsigned int nr = quick ? 3 : 5, c, r;
	double tput[NR_CFG][MAX_ROUNDS], cpu[NR_CFG][MAX_ROUNDS];
	double busy[NR_CFG][MAX_ROUNDS], best, med1 = 0;
	struct noise nz = noise_begin();
	FILE *f = json_open("threads");
	struct timed t[NR_CFG];
	char b1[32];

	memset(t, 0, sizeof(t));
	printf("\n## 3. One thread against two\n\n");
	printf("Each thread dirties %s new pages, each of a random file among its own %lu (trackers made before the clock starts, so the table is only read; each thread allocates from its own per-CPU caches); total transitions per second from the start barrier to the last thread's end; %u rounds, the three set-ups taken in turn within a round. \"CPU ns per transition\": the threads' CPU time (CLOCK_THREAD_CPUTIME_ID) per transition, and \"CPUs busy\": their CPU time over the wall time, both medians of rounds: on a shared host the wall-clock rate also measures how much CPU the threads got. Batch figures: ns per transition per batch of %d (wall), pooled over threads and rounds. Files already queued take only their own lock (the probe's fast path); both set-ups share nothing but the table, read. The host has 2 cores, shared with other work; a pthread spinlock stands for the kernel's raw spinlock, but a preempted holder keeps the other thread spinning, which interrupts-off holds never do.\n\n",
	       with_commas(n, b1), nfiles, nr, BATCH);
	printf("| set-up | transitions/s, median of rounds | best round | median vs 1 thread | CPU ns per transition | CPUs busy | batch median ns | batch p99 ns | disturbed batches | per round, M/s |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
	fprintf(f, "{\"measurement\": \"threads\", \"batch\": %d, "
		"\"rounds\": %u, \"transitions_per_thread\": %lu, "
		"\"files_per_thread\": %lu, \"rows\": [\n", BATCH, nr, n,
		nfiles);
	for (r = 0; r < nr; r++)
		for (c = 0; c < NR_CFG; c++)
			tput[c][r] = threads_run(c, n, nfiles, 4242 + r * 31,
						 &t[c], &cpu[c][r],
						 &busy[c][r]);
	for (c = 0; c < NR_CFG; c++) {
		double med = median_of(tput[c], nr);
		struct stats st;

		best = 0;
		for (r = 0; r < nr; r++)
			if (tput[c][r] > best)
				best = tput[c][r];
		if (c == ONE_THREAD)
			med1 = med;
		fprintf(f, "%s{\"config\": \"%s\", \"name\": \"%s\", "
			"\"threads\": %d, \"per_s_median\": %.0f, "
			"\"per_s_best\": %.0f", c ? ",\n" : "", cfg_ids[c],
			cfg_names[c], c == ONE_THREAD ? 1 : 2, med, best);
		json_doubles(f, "per_s_rounds", tput[c], nr);
		json_doubles(f, "cpu_ns_per_transition", cpu[c], nr);
		json_doubles(f, "cpus_busy", busy[c], nr);
		st = json_timed(f, "ns", &t[c]);
		fprintf(f, "}");
		printf("| %s | %.2f M | %.2f M | %.2fx | %.0f | %.2f | %.0f | %.0f | %lu | ",
		       cfg_names[c], med / 1e6, best / 1e6, med / med1,
		       median_of(cpu[c], nr), median_of(busy[c], nr),
		       st.median, st.p99, t[c].disturbed);
		for (r = 0; r < nr; r++)
			printf("%s%.2f", r ? ", " : "", tput[c][r] / 1e6);
		printf(" |\n");
		timed_free(&t[c]);
	}
	table_end(f, &nz);
	world_reset(true);
	for (c = 0; c < 2; c++)
		timed_free(&workers[c].t);
}

/* ---- 4. the flusher's holds against the backlog ---- */

/* Timed sets of one backlog, pooled over rounds. */
enum hold_kind {
	H_PROBE, H_SCAN, H_TAKE, H_HANDBACK, H_END, H_FORGET, H_NR
};

static const char * const hold_ids[H_NR] = {
	"probe", "scan", "take", "handback", "end_pass", "forget",
};

static const char *const hold_names[H_NR] = {
	"a transition (probe)",
	"phase 1 (aipu_queue_scan)",
	"phase 2 take (aipu_queue_take)",
	"phase 2 hand-back (aipu_queue_done_pages, aipu_queue_put)",
	"end of pass (aipu_queue_end_pass)",
	"rmmod (aipu_queue_kill of every file)",
};

/* Worst hold at 1 M pages, for the criterion line. */
struct worst {
	double p99, p999, max;
	char p99_what[96], p999_what[96], max_what[96];
};

static struct worst crit;
static bool crit_seen, wanted_holds;
/*
 * At 1 M pages, a pass that puts every page back: its hand-back, and its
 * longest end-of-pass hold (wall, disturbed or not, and CPU time: too long
 * to escape preemption in user space).
 */
static struct {
	struct stats hb;
	double end_wall, end_cpu;
	bool seen;
} dirty_crit;

/*
 * A set's p99 counts only from 100 holds, its p99.9 from 1,000: below that
 * they are its maximum, which counts as one.
 */
static void crit_note(const char *what, const struct stats *st)
{
	if (!st->n)
		return;
	crit_seen = true;
	if (st->n >= 100 && st->p99 > crit.p99) {
		crit.p99 = st->p99;
		snprintf(crit.p99_what, sizeof(crit.p99_what), "%s", what);
	}
	if (st->n >= 1000 && st->p999 > crit.p999) {
		crit.p999 = st->p999;
		snprintf(crit.p999_what, sizeof(crit.p999_what), "%s", what);
	}
	if (st->max > crit.max) {
		crit.max = st->max;
		snprintf(crit.max_what, sizeof(crit.max_what), "%s", what);
	}
}

/* A hold of @d's lock around @call, timed into @holds. */
#define TIMED_HOLD(d, holds, call)					\
	do {								\
		long cs_;						\
									\
		caches_ensure();					\
		cs_ = disturbances();					\
		dev_lock(d);						\
		call;							\
		timed_add((holds), dev_unlock(d),			\
			  disturbances() != cs_);			\
	} while (0)

/* Phase 1 as src/flusher.c's scan() runs it: AIPU_SCAN_BATCH files a hold. */
static unsigned long scan_timed(struct dev *d, unsigned long cutoff,
				struct timed *holds)
{
	unsigned long n = 0;
	unsigned int b;
	bool done;

	do {
		b = AIPU_SCAN_BATCH;
		TIMED_HOLD(d, holds,
			   done = aipu_queue_scan(&d->tr, cutoff, &b));
		n++;
	} while (!done);
	return n;
}

/*
 * Taken pages go back as src/flusher.c hands them back: collected by
 * aipu_queue_handback_add(), a hold of aipu_queue_handback() for each
 * AIPU_HANDBACK_MAX stretches or AIPU_HANDBACK_PAGES pages.
 */
struct handback {
	struct aipu_handback hb;
	struct dev *d;
	struct timed *holds;
};

static void handback_flush(struct aipu_handback *hb)
{
	struct handback *h = container_of(hb, struct handback, hb);

	if (!hb->n)
		return;
	TIMED_HOLD(h->d, h->holds, aipu_queue_handback(&h->d->tr, hb));
}

struct pass_counts {
	unsigned long takes, entries, batches, extents, written, pages;
};

enum took { TOOK, TOOK_NOTHING_AGAIN, NOTHING };

/*
 * One take of phase 2, as issue_pending() and issue_batch() hold the lock:
 * aipu_queue_take() in a hold; a whole-file entry handed back in a hold; a
 * batch merged outside the lock (aipu_flog_merge()), every page written (or,
 * @dirty, found still dirty and put back, as under policy kernel or for
 * pages locked or under writeback) and handed back, then aipu_queue_put() in a
 * hold of its own.  Nothing of the writing itself is timed.
 */
static enum took take_one(struct dev *d, unsigned long cutoff, bool dirty,
			  struct timed *take, struct timed *handback,
			  struct pass_counts *pc)
{
	static struct aipu_batch b;
	struct aipu_entry *e;
	unsigned int i, n;

	b.max_pages = 0;
	TIMED_HOLD(d, take, e = aipu_queue_take(&d->tr, cutoff, &b));
	pc->takes++;
	if (e) {
		pc->entries++;
		TIMED_HOLD(d, handback,
			   if (dirty)
				aipu_queue_requeue_entry(&d->tr, e);
			   aipu_queue_done_entry(&d->tr, e));
		return TOOK;
	}
	if (!b.t)
		return b.again ? TOOK_NOTHING_AGAIN : NOTHING;
	n = aipu_flog_merge(b.x, b.n);
	pc->batches++;
	pc->extents += b.n;
	pc->written += n;
	{
		struct handback h = { .hb.t = b.t, .d = d, .holds = handback };

		for (i = 0; i < n; i++) {
			pc->pages += b.x[i].nr;
			aipu_queue_handback_add(&h.hb, b.x[i].index, b.x[i].nr,
						b.x[i].time, dirty,
						handback_flush);
		}
		handback_flush(&h.hb);
	}
	TIMED_HOLD(d, handback, aipu_queue_put(&d->tr, b.t));
	return TOOK;
}

/*
 * src/flusher.c's end_pass(): AIPU_SCAN_BATCH files a hold.  With @cpu_max,
 * the longest hold's CPU time too (read outside the hold).
 */
static void end_pass_timed(struct dev *d, struct timed *end, double *cpu_max)
{
	unsigned int budget;
	u64 c0 = 0;
	bool done;

	do {
		budget = AIPU_SCAN_BATCH;
		caches_ensure();	/* not in the hold's CPU time */
		if (cpu_max)
			c0 = cpu_ns();
		TIMED_HOLD(d, end, done = aipu_queue_end_pass(&d->tr, &budget));
		if (cpu_max && cpu_ns() - c0 > *cpu_max)
			*cpu_max = cpu_ns() - c0;
	} while (!done);
}

/* Phase 2 until nothing is due at @cutoff, then the end of the pass. */
static void pass_timed(struct dev *d, unsigned long cutoff, bool dirty,
		       struct timed *take, struct timed *handback,
		       struct timed *end, double *end_cpu,
		       struct pass_counts *pc)
{
	while (take_one(d, cutoff, dirty, take, handback, pc) != NOTHING)
		;
	end_pass_timed(d, end, end_cpu);
}

/* rmmod: aipu_mapping_forget(), AIPU_DRAIN_BATCH objects a hold. */
static void forget_timed(struct dev *d, struct timed *holds)
{
	struct aipu_file *t;
	bool done;

	for (;;) {
		TIMED_HOLD(d, holds,
			   t = list_first_entry_or_null(&d->tr.trackers,
							struct aipu_file,
							link);
			   done = !t || aipu_queue_kill(&d->tr, t,
							AIPU_DRAIN_BATCH));
		if (!t)
			return;
		while (!done)
			TIMED_HOLD(d, holds,
				   done = aipu_queue_kill(&d->tr, t,
							  AIPU_DRAIN_BATCH));
	}
}

enum backlog { B_BIG, B_SMALL, B_SMALL_SCATTERED, B_NR };

static const char * const backlog_names[B_NR] = {
	"random pages, files of <= 262,144 pages",
	"files of 4 pages, in address order",
	"files of 4 pages, scattered",
};

static const char * const backlog_ids[B_NR] = {
	"big", "small", "small_scattered",
};

/* A fresh device holding the backlog: @n pages, all due at *@cutoff. */
static void backlog_fill(enum backlog bl, unsigned long n, u32 seed,
			 struct timed *probe_holds, unsigned long *cutoff)
{
	enum pattern p = bl == B_BIG ? P_RANDOM_SPREAD : P_SMALL;
	unsigned long files = files_for(p, n);
	struct gen g;

	world_reset(false);
	if (bl == B_SMALL_SCATTERED) {
		cache_scatter(&cpus[0].c[C_TRACKER], files + 1, seed);
		cache_scatter(&cpus[0].c[C_SEG64], files + 1, seed + 1);
		cache_scatter(&cpus[0].c[C_CHUNK], files + 1, seed + 2);
	}
	gen_init(&g, p, 0, n, seed);
	fill(&devs[0], &g, n, NULL, 0, probe_holds);
	*cutoff = gen_end(p, n);
}

static void holds_row(FILE *f, enum backlog bl, unsigned long n, bool first)
{
	static struct timed h[H_NR], dirty_hb, dirty_end, scratch;
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], wmin = 1e18;
	struct pass_counts pc = { 0 }, dpc = { 0 };
	unsigned long cutoff, holds = 0;
	struct stats st[H_NR], sdh;
	double end_cpu = 0;
	unsigned int r, k;
	char b1[32], what[96];

	for (k = 0; k < H_NR; k++)
		timed_clear(&h[k]);
	timed_clear(&dirty_hb);
	timed_clear(&dirty_end);
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < H_NR; k++)
			timed_round(&h[k]);
		/* A pass that writes everything. */
		backlog_fill(bl, n, 5 + n + r, &h[H_PROBE], &cutoff);
		if (r == rounds - 1 && bl == B_SMALL)
			mem_note(&devs[0], "%s, N = %s", backlog_names[bl],
				 with_commas(n, b1));
		holds = scan_timed(&devs[0], cutoff, &h[H_SCAN]);
		memset(&pc, 0, sizeof(pc));
		pass_timed(&devs[0], cutoff, false, &h[H_TAKE],
			   &h[H_HANDBACK], &h[H_END], NULL, &pc);
		dev_fold(&devs[0]);
		if (devs[0].tr.st.trackers || devs[0].tr.st.pages)
			die("a pass that wrote everything left %llu files",
			    (unsigned long long)devs[0].tr.st.trackers);
		/* Phase 1 in one hold, then rmmod. */
		backlog_fill(bl, n, 5 + n + r, NULL, &cutoff);
		{
			unsigned int b = UINT32_MAX;
			u64 c0 = cpu_ns();

			dev_lock(&devs[0]);
			if (!aipu_queue_scan(&devs[0].tr, cutoff, &b))
				die("an unlimited scan ran out of budget");
			wall[r] = dev_unlock(&devs[0]);
			cpu[r] = cpu_ns() - c0;
			if (wall[r] < wmin)
				wmin = wall[r];
		}
		forget_timed(&devs[0], &h[H_FORGET]);
	}
	/* Once: a pass that finds every page still dirty. */
	if (bl == B_BIG) {
		backlog_fill(bl, n, 7 + n, NULL, &cutoff);
		timed_clear(&scratch);
		scan_timed(&devs[0], cutoff, &scratch);
		timed_clear(&scratch);
		timed_round(&dirty_hb);
		timed_round(&dirty_end);
		pass_timed(&devs[0], cutoff, true, &scratch, &dirty_hb,
			   &dirty_end, &end_cpu, &dpc);
	}
	fprintf(f, "%s{\"backlog\": \"%s\", \"backlog_name\": \"%s\", "
		"\"n\": %lu, \"files\": %lu, \"scan_holds\": %lu, "
		"\"takes\": %lu, \"batches\": %lu, \"extents_taken\": %lu, "
		"\"extents_written\": %lu, \"pages_written\": %lu",
		first ? "" : ",\n", backlog_ids[bl], backlog_names[bl], n,
		files_for(bl == B_BIG ? P_RANDOM_SPREAD : P_SMALL, n), holds,
		pc.takes, pc.batches, pc.extents, pc.written, pc.pages);
	for (k = 0; k < H_NR; k++)
		st[k] = json_timed(f, hold_ids[k], &h[k]);
	json_doubles(f, "one_hold_wall", wall, rounds);
	json_doubles(f, "one_hold_cpu", cpu, rounds);
	if (bl == B_BIG) {
		sdh = json_timed(f, "dirty_handback", &dirty_hb);
		json_timed(f, "dirty_end_pass", &dirty_end);
		fprintf(f, ", \"dirty_end_pass_longest_wall\": %.1f, "
			"\"dirty_end_pass_longest_cpu\": %.1f, "
			"\"dirty_pages_put_back\": %lu", dirty_end.raw_max,
			end_cpu, dpc.pages);
	}
	fprintf(f, "}");
	printf("| %s | %s | %s | %.2f / %.2f | %.2f / %.1f / %.1f / %.1f | %.0f / %.0f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %lu |\n",
	       with_commas(n, b1), backlog_names[bl], with_commas(holds, what),
	       st[H_PROBE].p999 / 1e3, st[H_PROBE].max / 1e3,
	       st[H_SCAN].median / 1e3, st[H_SCAN].p99 / 1e3,
	       st[H_SCAN].p999 / 1e3, st[H_SCAN].max / 1e3,
	       wmin / 1e3, median_of(cpu, rounds) / 1e3,
	       st[H_TAKE].p999 / 1e3, st[H_TAKE].max / 1e3,
	       st[H_HANDBACK].p999 / 1e3, st[H_HANDBACK].max / 1e3,
	       st[H_END].p999 / 1e3, st[H_END].max / 1e3,
	       st[H_FORGET].p999 / 1e3, st[H_FORGET].max / 1e3,
	       h[H_SCAN].disturbed + h[H_TAKE].disturbed +
	       h[H_HANDBACK].disturbed + h[H_END].disturbed +
	       h[H_FORGET].disturbed);
	if (bl == B_BIG)
		printf("| | *the same, every page still dirty after its write: end of pass, the longest hold's wall (disturbed or not) / CPU time* | | | | | | %.1f / %.1f | **%.0f / %.0f** | | |\n",
		       sdh.p999 / 1e3, sdh.max / 1e3, dirty_end.raw_max / 1e3,
		       end_cpu / 1e3);
	if (n == 1000000) {
		for (k = 0; k < H_NR; k++) {
			snprintf(what, sizeof(what), "%s, %s",
				 hold_names[k], backlog_names[bl]);
			crit_note(what, &st[k]);
		}
	}
	if (bl == B_BIG && n == 1000000) {
		dirty_crit.hb = sdh;
		dirty_crit.end_wall = dirty_end.raw_max;
		dirty_crit.end_cpu = end_cpu;
		dirty_crit.seen = true;
	}
	fflush(stdout);
}

/* ---- 5. eviction of one huge file ---- */

static const enum pattern evict_pats[] = { P_RANDOM_ONE, P_RANDOM_SPARSE };

/*
 * The other two that free a file's queue a budget a hold, with the same
 * drain() and budget (AIPU_DRAIN_BATCH) as eviction: the shrinker
 * (aipu_queue_degrade(), src/shrink.c) and the park of a file an umount holds
 * (aipu_queue_park(), src/flusher.c).  Each keeps calling
 * while a call frees its whole budget, as the module does for one file.
 */
enum freer { F_SHRINK, F_PARK, F_NR };

struct freer_row {
	enum pattern p;
	unsigned long n;
	struct stats st[F_NR];
};

static struct freer_row freer_rows[32];
static unsigned int nfreer_rows;

static unsigned long freer_call(enum freer w, struct aipu_file *t,
				unsigned long now)
{
	if (w == F_SHRINK)
		return aipu_queue_degrade(&devs[0].tr, t, AIPU_DRAIN_BATCH,
					  now);
	return aipu_queue_park(&devs[0].tr, t, now, AIPU_DRAIN_BATCH);
}

static void freer_rounds(FILE *f, enum pattern p, unsigned long n)
{
	static const char * const names[F_NR] = { "shrink", "park" };
	struct freer_row *row;
	unsigned int w, r;

	if (nfreer_rows == ARRAY_SIZE(freer_rows))
		die("more than %zu eviction rows", ARRAY_SIZE(freer_rows));
	row = &freer_rows[nfreer_rows++];

	row->p = p;
	row->n = n;
	for (w = 0; w < F_NR; w++) {
		struct timed holds = { 0 };

		for (r = 0; r < rounds; r++) {
			unsigned long now = gen_end(p, n), freed;
			struct aipu_file *t;
			struct gen g;

			world_reset(false);
			gen_init(&g, p, 0, n, 41 + r);
			fill(&devs[0], &g, n, NULL, 0, NULL);
			t = aipu_file_lookup(file_key(0, 0));
			timed_round(&holds);
			do
				TIMED_HOLD(&devs[0], &holds,
					   freed = freer_call(w, t, now));
			while (freed == AIPU_DRAIN_BATCH);
		}
		row->st[w] = json_timed(f, names[w], &holds);
		if (n == 1000000) {
			char what[96];

			snprintf(what, sizeof(what), "%s freeing one file, %s",
				 w == F_SHRINK ? "the shrinker" : "a park",
				 pattern_names[p]);
			crit_note(what, &row->st[w]);
		}
		timed_free(&holds);
	}
}

static void evict_row(FILE *f, enum pattern p, unsigned long n, bool first)
{
	unsigned int nr = rounds * 3, r;
	double wall[MAX_ROUNDS] = { 0 }, cpu[MAX_ROUNDS] = { 0 }, wmin = 1e18;
	struct timed holds = { 0 };
	long objs[NR_CACHES], total = 0;
	unsigned long tracked = 0;
	struct stats st;
	struct gen g;
	unsigned int k;
	char b1[32], b2[32], what[96];

	if (nr > MAX_ROUNDS)
		nr = MAX_ROUNDS;
	for (r = 0; r < nr; r++) {
		struct aipu_file *t;
		bool done;

		world_reset(false);
		gen_init(&g, p, 0, n, 31 + r);
		fill(&devs[0], &g, n, NULL, 0, NULL);
		dev_fold(&devs[0]);
		tracked = devs[0].tr.st.pages;
		objects_live(objs);
		for (total = 0, k = 0; k < NR_CACHES; k++)
			total += k == C_TRACKER ? 0 : objs[k];
		t = aipu_file_lookup(file_key(0, 0));
		timed_round(&holds);
		if (r % 3 == 2) {
			/* For contrast: everything in one hold. */
			u64 c0 = cpu_ns();

			dev_lock(&devs[0]);
			if (!aipu_queue_kill(&devs[0].tr, t, ~0UL))
				die("eviction with no budget did not finish");
			wall[r / 3] = dev_unlock(&devs[0]);
			cpu[r / 3] = cpu_ns() - c0;
			if (wall[r / 3] < wmin)
				wmin = wall[r / 3];
			continue;
		}
		/* aipu_mapping_kill(): the first call, then the rest. */
		TIMED_HOLD(&devs[0], &holds,
			   done = !t->hashed ||
				  aipu_queue_kill(&devs[0].tr, t,
						  AIPU_DRAIN_BATCH));
		while (!done)
			TIMED_HOLD(&devs[0], &holds,
				   done = aipu_queue_kill(&devs[0].tr, t,
							  AIPU_DRAIN_BATCH));
	}
	fprintf(f, "%s{\"pattern\": \"%s\", \"pattern_name\": \"%s\", "
		"\"n\": %lu, \"pages_tracked\": %lu, \"objects\": %ld",
		first ? "" : ",\n", pattern_ids[p], pattern_names[p], n,
		tracked, total);
	st = json_timed(f, "batched", &holds);
	json_doubles(f, "one_hold_wall", wall, nr / 3);
	json_doubles(f, "one_hold_cpu", cpu, nr / 3);
	freer_rounds(f, p, n);
	fprintf(f, "}");
	printf("| %s | %s | %s | %ld | %lu | %.2f | %.2f | %.1f | %.1f | %.1f | %lu | %.0f | %.0f |\n",
	       pattern_names[p], with_commas(n, b1),
	       with_commas(tracked, b2), total, holds.n - holds.disturbed,
	       st.median / 1e3, st.p99 / 1e3, st.p999 / 1e3, st.max / 1e3,
	       st.round_max / 1e3, holds.disturbed, wmin / 1e3,
	       median_of(cpu, nr / 3) / 1e3);
	if (n == 1000000) {
		snprintf(what, sizeof(what), "eviction of one file, %s",
			 pattern_names[p]);
		crit_note(what, &st);
	}
	fflush(stdout);
	timed_free(&holds);
}

/* ---- 0. the environment's noise: holds of a fixed computation ---- */

static volatile u64 sink;

/* A chain of dependent multiplies: no memory traffic, not vectorized away. */
static void fixed_work(unsigned long iters)
{
	u64 x = iters;
	unsigned long i;

	for (i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + i;
	sink = x;
}

/* Iterations of fixed_work() that take about @ns here, now. */
static unsigned long calibrate(double ns)
{
	unsigned long iters = 1000;
	struct timed t = { 0 };
	double med;
	int i;

	for (i = 0; i < 101; i++) {
		u64 t0 = now_ns();

		fixed_work(iters);
		timed_add(&t, now_ns() - t0, false);
	}
	med = stats_of(&t).median;
	timed_free(&t);
	return med > 0 ? (unsigned long)(iters * ns / med) + 1 : iters;
}

static FILE *noise_json;
static struct stats control[2];	/* 10 us of work: before, after */
static unsigned int ncontrol;

/*
 * @n holds of a fixed computation of about @target ns, timed and filtered as
 * the real holds are: whatever spread they show is the host's, not aipu's.
 */
static void noise_row(const char *when, double target, unsigned long n,
		      unsigned long iters)
{
	struct timed t = { 0 };
	unsigned long i;
	struct stats st;

	for (i = 0; i < n; i++) {
		if (i % (n / 4) == 0)
			timed_round(&t);
		TIMED_HOLD(&devs[0], &t, fixed_work(iters));
	}
	fprintf(noise_json, "%s{\"when\": \"%s\", \"target_ns\": %.0f, "
		"\"iters\": %lu", ftell(noise_json) > 60 ? ",\n" : "", when,
		target, iters);
	st = json_timed(noise_json, "hold", &t);
	fprintf(noise_json, "}");
	printf("| %s | %.0f | %lu | %.2f | %.2f | %.1f | %.1f | %.1f | %lu |\n",
	       when, target / 1e3, n, st.median / 1e3, st.p99 / 1e3,
	       st.p999 / 1e3, st.max / 1e3, st.round_max / 1e3, t.disturbed);
	fflush(stdout);
	if (target >= 10000 && ncontrol < 2)
		control[ncontrol++] = st;
	timed_free(&t);
}

static void measure_noise(const char *when)
{
	static unsigned long it1, it10;

	if (!noise_json) {
		noise_json = json_open("noise");
		fprintf(noise_json, "{\"measurement\": \"noise\", \"unit\": "
			"\"ns per hold\", \"rows\": [\n");
		it1 = calibrate(1000);
		it10 = calibrate(10000);
		printf("\n## 0. The host's noise: holds of a fixed computation (the control)\n\n");
		printf("Before and after the measurements: holds of the lock around a fixed chain of dependent multiplies (no memory traffic), calibrated to about 1 µs and 10 µs, timed and filtered exactly as the real holds (disturbed ones left out). Their spread is the host's (the hypervisor's steal, interrupts, the other core's tenant), not aipu's: a real hold's maximum no higher than these maxima says nothing about the code. Holds in µs; \"max (rounds)\": the median of four quarters' maxima.\n\n");
		printf("| when | work µs | holds | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	}
	noise_row(when, 1000, quick ? 20000 : 200000, it1);
	noise_row(when, 10000, quick ? 4000 : 100000, it10);
}

/*
 * The host's cost of touching memory left idle: one cache line in each
 * 2-MiB page of a written region, after the thread spun for @idle_s (its
 * CPU busy, the memory untouched).  On the host this was written on the
 * first touch of most such pages takes 10-670 µs after a second, with no
 * page fault in the guest: whatever the hypervisor does with idle memory.
 * A phase's first hold touches memory idle since its pages were dirtied.
 */
static void first_touch_row(FILE *f, double idle_s, unsigned int round)
{
	size_t huge = 2UL << 20, sz = (quick ? 64UL : 256UL) << 20, i, n;
	size_t slow = 0;
	struct timed t = { 0 };
	volatile char sink;
	struct stats st;
	char *map, *p;
	u64 until;

	map = mmap(NULL, sz + huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		die("mmap %zu bytes: %s", sz + huge, strerror(errno));
	p = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(p, sz, MADV_HUGEPAGE);
	memset(p, 1, sz);
	until = now_ns() + (u64)(idle_s * 1e9);
	while (now_ns() < until)
		;
	n = sz / huge;
	for (i = 0; i < n; i++) {
		u64 t0 = now_ns();

		sink = p[i * huge + 64];
		t0 = now_ns() - t0;
		slow += t0 > 20000;
		timed_add(&t, t0, false);
	}
	(void)sink;
	st = stats_of(&t);
	printf("| %u | %.1f | %zu | %zu | %.2f | %.1f | %.1f |\n", round,
	       idle_s, n, slow, st.median / 1e3, st.p99 / 1e3, st.max / 1e3);
	fprintf(f, "%s{\"round\": %u, \"idle_s\": %.1f, \"pages\": %zu, "
		"\"over_20us\": %zu, \"median\": %.1f, \"p99\": %.1f, "
		"\"max\": %.1f}", round ? ",\n" : "", round, idle_s, n, slow,
		st.median, st.p99, st.max);
	timed_free(&t);
	munmap(map, sz + huge);
}

static void measure_first_touch(void)
{
	FILE *f = json_open("first_touch");
	double idle_s = quick ? 0.2 : 1.0;
	unsigned int r;

	printf("\n## 0b. The host's cost of touching idle memory\n\n");
	printf("A region of %d MiB in 2-MiB pages (MADV_HUGEPAGE) written, left untouched while the thread spins for the idle time, then one cache line of each 2-MiB page read, each read timed; three rounds. Not aipu's code: what a hold pays, whatever its code, for the first touch of memory idle that long (a phase's first hold touches objects idle since their pages were dirtied). µs.\n\n",
	       quick ? 64 : 256);
	printf("| round | idle s | pages | over 20 µs | median µs | p99 µs | max µs |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"first_touch\", \"unit\": "
		"\"ns per first read of a 2-MiB page\", \"rows\": [\n");
	for (r = 0; r < 3; r++)
		first_touch_row(f, idle_s, r);
	fprintf(f, "\n]}\n");
	json_close(f);
	fflush(stdout);
}

static void noise_finish(void)
{
	if (!noise_json)
		return;
	fprintf(noise_json, "\n]}\n");
	json_close(noise_json);
	noise_json = NULL;
}

/*
 * Phase 1 when its cutoff falls inside a slot: @n files of one page each,
 * dirtied evenly over one slot of the module's width, the cutoff at the
 * slot's middle.  Phase 1 moves the due half in budgeted holds; the hold
 * that finishes the slot splices the files it looked at and left (the
 * not-due half, on the wheel's seen list) back into the slot.
 */
/* The slot's last hold (median of rounds): 10,000 and 100,000 files. */
static double cut_crit[2];

static void cut_slot_row(FILE *f, unsigned long n, bool first)
{
	double last[MAX_ROUNDS] = { 0 };
	struct timed holds = { 0 };
	unsigned long i, cutoff = T0 + module_slot / 2;
	unsigned int r;
	struct stats st;
	char b1[32];

	for (r = 0; r < rounds; r++) {
		world_reset(false);
		for (i = 0; i < n; i++) {
			if (i % BATCH == 0)
				caches_ensure();
			probe(&devs[0], file_key(0, i), 0,
			      T0 + i * module_slot / n);
		}
		timed_round(&holds);
		scan_timed(&devs[0], cutoff, &holds);
		last[r] = devs[0].held;
	}
	fprintf(f, "%s{\"files\": %lu, \"slot_jiffies\": %lu", first ? "" :
		",\n", n, module_slot);
	st = json_timed(f, "scan", &holds);
	json_doubles(f, "last_hold", last, rounds);
	fprintf(f, "}");
	printf("| %s | %lu | %.2f | %.1f | %.1f | %.1f | %.1f | %lu |\n",
	       with_commas(n, b1), holds.n / rounds, st.median / 1e3,
	       st.p99 / 1e3, st.p999 / 1e3, st.max / 1e3,
	       median_of(last, rounds) / 1e3, holds.disturbed);
	if (n == 10000)
		cut_crit[0] = median_of(last, rounds);
	if (n == 100000)
		cut_crit[1] = median_of(last, rounds);
	fflush(stdout);
	timed_free(&holds);
}

/*
 * stat's read of a device's oldest time (aipu_queue_oldest(), src/dev.c), in
 * its worst cases, whatever the backlog: one file, in the last of the
 * wheel's slots from its clock, so the read walks every slot before it;
 * and a file in every slot a turn ahead (max_age over the wheel's span),
 * so it reads every slot's first file.  (It also looks at up to
 * AIPU_OLDEST_LATE files put back at old times; none here.)  Its JSON:
 * ", \"stat_oldest\": {\"read\": ..., \"read_turn_ahead\": ...}".
 */
static struct stats oldest_st;

/*
 * @files files queued, the i-th at the start of slot @first + i from the
 * wheel's clock; 1,000 reads of the oldest time per round, timed.
 */
static struct stats oldest_reads(FILE *f, const char *name,
				 unsigned int files, unsigned int first,
				 const char *what)
{
	struct timed holds = { 0 };
	struct stats st;
	unsigned long time;
	unsigned int r, i;

	for (r = 0; r < rounds; r++) {
		world_reset(false);
		caches_ensure();
		for (i = 0; i < files; i++)
			probe(&devs[0], file_key(0, i), 0,
			      T0 + (first + i) * slot_width);
		timed_round(&holds);
		for (i = 0; i < 1000; i++)
			TIMED_HOLD(&devs[0], &holds,
				   aipu_queue_oldest(&devs[0].tr, &time));
	}
	st = json_timed(f, name, &holds);
	printf("%s: %lu reads: **median %.2f µs, p99.9 %.1f µs, max %.1f µs** (%lu disturbed, left out).\n",
	       what, holds.n, st.median / 1e3, st.p999 / 1e3, st.max / 1e3,
	       holds.disturbed);
	timed_free(&holds);
	return st;
}

static void oldest_row(FILE *f)
{
	fprintf(f, ", \"stat_oldest\": {\"slots\": %d", AIPU_QUEUE_SLOTS);
	printf("\nstat's read of a device's oldest dirty time (aipu_queue_oldest(), a hold of the device's lock per device read).\n");
	oldest_st = oldest_reads(f, "read", 1, AIPU_QUEUE_SLOTS - 1,
				 "Worst case within the wheel's span: the one queued file in the last slot from the clock, every slot before it looked at");
	/*
	 * max_age over the wheel's span: every slot's file a turn ahead of
	 * the clock, so each slot's first file is read, none ending the walk.
	 */
	oldest_reads(f, "read_turn_ahead", AIPU_QUEUE_SLOTS, AIPU_QUEUE_SLOTS,
		     "Worst case with max_age over the wheel's span: a file in every slot, each a turn ahead of the clock, every slot's first file read");
	fprintf(f, "}");
}

static void measure_holds(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("holds");
	unsigned int si;
	int bl;

	printf("\n## 4. The longest lock holds against the backlog\n\n");
	printf("N pages dirtied on one device (\"probe\": each transition's hold of the lock while the backlog is made, timed one by one), all of them then due, and one flusher pass as src/flusher.c runs it: phase 1 (aipu_queue_scan()) with a budget of AIPU_SCAN_BATCH = %d files a hold; phase 2 takes (aipu_queue_take(), a hold each; a batch is up to AIPU_FLOG_TAKE_ENTRIES = %d entries and AIPU_FLOG_TAKE_PAGES = %d pages) and hand-backs (aipu_queue_handback() for at most AIPU_HANDBACK_MAX = %d stretches or AIPU_HANDBACK_PAGES = %d pages a hold, then aipu_queue_put() in a hold; every page written, so the files end empty and are freed); the end of the pass (aipu_queue_end_pass(), %d files a hold). Then the same backlog made again, phase 1 in one hold with no budget (for contrast: its wall time, least of the rounds, and CPU time, median; not what the module does), and rmmod's teardown (aipu_mapping_forget(): aipu_queue_kill() of every file, AIPU_DRAIN_BATCH = %d objects a hold). %u rounds. Backlogs: random pages over files of at most 262,144 pages (few files, long logs), and files of 4 pages written whole (N/4 files: phase 1's worst), with their trackers, segments and live chunks in address order or handed out in random address order (\"scattered\", a slab after long use). For the first backlog a last pass finds every page still dirty after its write (policy kernel, or pages locked or under writeback) and puts it back: its hand-back and end of pass (aipu_flog_end_pass() moves a file's retries within the hold's budget). Cells: p99.9 / max in µs (phase 1: median / p99 / p99.9 / max), disturbed holds left out; the constants are read from src/ at build time.\n\n",
	       AIPU_SCAN_BATCH, AIPU_FLOG_TAKE_ENTRIES, AIPU_FLOG_TAKE_PAGES,
	       AIPU_HANDBACK_MAX, AIPU_HANDBACK_PAGES, AIPU_SCAN_BATCH,
	       AIPU_DRAIN_BATCH, rounds);
	printf("| backlog N pages | backlog | phase 1 holds a pass | probe µs | phase 1 batched µs | phase 1 in one hold: wall / CPU µs | take µs | hand-back µs | end of pass µs | rmmod µs | disturbed holds |\n");
	printf("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"holds\", \"rounds\": %u, "
		"\"scan_batch\": %d, \"kill_batch\": %d, \"handback_pages\": %d, "
		"\"handback_max\": %d, \"unit\": \"ns per hold\", \"rows\": [\n",
		rounds, AIPU_SCAN_BATCH, AIPU_DRAIN_BATCH, AIPU_HANDBACK_PAGES,
		AIPU_HANDBACK_MAX);
	for (bl = 0; bl < B_NR; bl++)
		for (si = 0; si < nsizes; si++)
			holds_row(f, bl, sizes[si], !bl && !si);
	fprintf(f, "\n]");
	oldest_row(f);
	printf("\nPhase 1 when its cutoff falls inside a slot (the backlogs above have every page due, so the cutoff is past every slot): N files of one page each, dirtied evenly over one slot of AIPU_SLOT_JIFFIES = %lu jiffies (src/dev.c), the cutoff at the slot's middle, phase 1 in holds of AIPU_SCAN_BATCH = %d files. The due half moves to the due list a budget a hold; the hold that finishes the slot puts every file it looked at and left (the not-due half, on wheel.c's seen list) back into the slot at once. Trackers in address order. %u rounds.\n\n",
	       module_slot, AIPU_SCAN_BATCH, rounds);
	printf("| files in the slot | holds a pass | median µs | p99 µs | p99.9 µs | max µs | the slot's last hold µs (wall, disturbed or not; median of rounds) | disturbed holds |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, ", \"cut_slot\": [\n");
	for (si = 0; si < nsizes && sizes[si] <= 1000000; si++)
		cut_slot_row(f, sizes[si], !si);
	table_end(f, &nz);
	world_reset(true);
}

static void freer_table(void)
{
	const struct freer_row *row;
	char b1[32];

	printf("\nThe same files freed by the shrinker (aipu_queue_degrade(), src/shrink.c) and by the park of a file an umount holds (aipu_queue_park(), src/flusher.c), AIPU_DRAIN_BATCH = %d objects a hold as eviction, each called again while it frees its whole budget, every hold timed; %u rounds each.\n\n",
	       AIPU_DRAIN_BATCH, rounds);
	printf("| file | N pages dirtied | shrinker: holds | median µs | p99.9 µs | max µs | park: holds | median µs | p99.9 µs | max µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (row = freer_rows; row < freer_rows + nfreer_rows; row++)
		printf("| %s | %s | %zu | %.2f | %.1f | %.1f | %zu | %.2f | %.1f | %.1f |\n",
		       pattern_names[row->p], with_commas(row->n, b1),
		       row->st[F_SHRINK].n, row->st[F_SHRINK].median / 1e3,
		       row->st[F_SHRINK].p999 / 1e3,
		       row->st[F_SHRINK].max / 1e3, row->st[F_PARK].n,
		       row->st[F_PARK].median / 1e3,
		       row->st[F_PARK].p999 / 1e3, row->st[F_PARK].max / 1e3);
	nfreer_rows = 0;
}

static void measure_evict(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("evict");
	unsigned int pi, si;

	printf("\n## 5. The longest hold of evicting one huge file\n\n");
	printf("One file, N pages dirtied in it (random pages of an N-page file, or sparse: a live chunk each; past AIPU_QUEUE_BYTES_MAX the file is bounded as a whole and its queue stops growing), then evicted as aipu_mapping_kill() does it: aipu_queue_kill() with AIPU_DRAIN_BATCH = %d objects a hold until it reports done, each hold timed. %u evictions batched and, for contrast, %u in one hold (no budget: wall time least, CPU time median). \"objects\": segments, live chunks and moved entries the file held.\n\n",
	       AIPU_DRAIN_BATCH, rounds * 2, rounds);
	printf("| file | N pages dirtied | pages tracked one by one | objects | holds kept | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds | one hold: wall µs | CPU µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"evict\", \"rounds\": %u, "
		"\"kill_batch\": %d, \"unit\": \"ns per hold\", \"rows\": [\n",
		rounds, AIPU_DRAIN_BATCH);
	for (pi = 0; pi < ARRAY_SIZE(evict_pats); pi++)
		for (si = 0; si < nsizes; si++)
			evict_row(f, evict_pats[pi], sizes[si], !pi && !si);
	freer_table();
	table_end(f, &nz);
	world_reset(true);
}

/* ---- 6. the steady state: files looked at per extent written ---- */

#define STEADY_RATE 50	/* pages a jiffy: one file's backlog under the cap */
#define PERIOD_J MS_TO_J(AIPU_PERIOD_MS)
#define MAX_AGE_J MS_TO_J(AIPU_MAX_AGE_MS)

struct steady_cfg {
	const char *id, *name;
	unsigned long width, offset;	/* width 0: the module's */
	bool paced, hot, in_quick;
};

static const struct steady_cfg steady_cfgs[] = {
	{ "module", "the module's slots, paced (its default)",
	  0, 0, true, false, true },
	{ "module_unpaced", "the module's slots, pace=0",
	  0, 0, false, false, false },
	{ "module_hot", "the module's slots, paced, a few hot files",
	  0, 0, true, true, false },
	{ "quarter", "slots of a quarter period (the module's before 2026-11-27), paced",
	  PERIOD_J / 4, 0, true, false, false },
	{ "eighth", "slots of an eighth of a period (docs/design.md §4), paced",
	  PERIOD_J / 8, 0, true, false, false },
	{ "period_aligned", "slots of a period, ticks on slot boundaries, pace=0",
	  PERIOD_J, 0, false, false, false },
	{ "period_skewed", "slots of a period, ticks half a slot off, pace=0",
	  PERIOD_J, PERIOD_J / 2, false, false, true },
};

struct steady_out {
	unsigned long dirtied, scanned, passes;
	struct pass_counts pc;
	struct timed scan;
};

/* The pass is over: src/flusher.c's end_pass(). */
static void steady_end(struct dev *d, struct timed *scratch, bool *in_pass)
{
	end_pass_timed(d, scratch, NULL);
	*in_pass = false;
}

/*
 * @nfiles files on one device, STEADY_RATE random new pages a jiffy (a file
 * picked at random, or from a few hot ones), the flusher's pass on its grid
 * of period_ms as src/flusher.c runs it under policy aipu: phase 1 with a
 * cutoff of max_age_ms back (a period less, paced), then phase 2 taking each
 * due file as it comes due, then the end of the pass.  After max_age_ms and
 * a few periods to fill the queue, what a number of periods cost.
 */
static void steady_run(const struct steady_cfg *c, unsigned long nfiles,
		       u32 seed, struct steady_out *o)
{
	unsigned long warm = MAX_AGE_J + 4 * PERIOD_J;
	unsigned long span = (quick ? 10 : 60) * PERIOD_J;
	unsigned long now = T0, next_tick = T0 + c->offset, j, i, f, time;
	unsigned long scanned0 = 0, dirtied0 = 0, cutoff, due;
	struct pass_counts pc0 = { 0 };
	struct dev *d = &devs[0];
	struct timed scratch = { 0 };
	u32 *count = calloc(nfiles, sizeof(*count));
	u64 rng = 0x9e3779b97f4a7c15ull ^ seed;
	bool in_pass = false;

	if (!count)
		die("out of memory");
	slot_width = c->width ? c->width : module_slot;
	world_reset(false);
	memset(o, 0, sizeof(*o));
	for (j = 0; j < warm + span; j++, now++) {
		if (j == warm) {
			dev_fold(d);
			scanned0 = d->tr.st.entries_scanned;
			dirtied0 = d->tr.st.pages_dirtied;
			pc0 = o->pc;
			timed_clear(&o->scan);
			o->passes = 0;
		}
		caches_ensure();
		for (i = 0; i < STEADY_RATE; i++) {
			if (c->hot) {
				double u = (double)(rng_next(&rng) >> 11) /
					   (1ull << 53);

				f = (unsigned long)(nfiles * u * u * u);
			} else {
				f = rng_next(&rng) % nfiles;
			}
			probe(d, file_key(0, f), mix32(count[f]++ ^ mix32(f)),
			      now);
		}
		if (!in_pass && !time_before(now, next_tick)) {
			while (!time_before(now, next_tick))
				next_tick += PERIOD_J;
			cutoff = now - MAX_AGE_J + (c->paced ? PERIOD_J : 0);
			scan_timed(d, cutoff, &o->scan);
			o->passes++;
			in_pass = true;
		}
		while (in_pass) {
			if (!aipu_queue_next_time(&d->tr, &time)) {
				steady_end(d, &scratch, &in_pass);
				break;
			}
			due = time + MAX_AGE_J + 1;
			if (time_before(now, due) && due - now > PERIOD_J) {
				steady_end(d, &scratch, &in_pass);
				break;
			}
			if (time_before(now, due))
				break;		/* waits for it */
			timed_clear(&scratch);
			if (take_one(d, now - MAX_AGE_J, false, &scratch,
				     &scratch, &o->pc) == NOTHING)
				steady_end(d, &scratch, &in_pass);
		}
		timed_clear(&scratch);
	}
	dev_fold(d);
	o->scanned = d->tr.st.entries_scanned - scanned0;
	o->dirtied = d->tr.st.pages_dirtied - dirtied0;
	o->pc.takes -= pc0.takes;
	o->pc.entries -= pc0.entries;
	o->pc.batches -= pc0.batches;
	o->pc.extents -= pc0.extents;
	o->pc.written -= pc0.written;
	o->pc.pages -= pc0.pages;
	timed_free(&scratch);
	free(count);
	slot_width = module_slot;
}

static void measure_steady(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("steady");
	double worst = 0;
	unsigned long worst_files = 0;
	unsigned int ci, si;
	char b1[32];

	printf("\n## 6. The steady state: files phase 1 looks at per extent written\n\n");
	printf("F files on one device, %d new random pages a jiffy (%d a second at HZ = %d), each of a file picked at random (\"hot\": file = F x u^3, u uniform, so a few files get most pages); the flusher's pass every period_ms = %d ms (%lu jiffies) on a fixed grid, as src/flusher.c runs it under policy aipu with max_age_ms = %d (%lu jiffies; both defaults read from include/aipu_knobs.h): phase 1 with a cutoff of max_age_ms back (paced: a period later, the module's default), phase 2 taking each due file as it comes due (every page written), the end of the pass. The first max_age_ms and 4 periods fill the queue; then %d periods are counted. \"looked at\": files phase 1 visited (entries_scanned, the budget it spent); \"extents written\": the merged extents of the batches, what the flusher writes; aipu_flog_take() looks at no entry it does not take here (nothing is stale). The module's slots: AIPU_SLOT_JIFFIES = %lu jiffies (src/dev.c), %d of them. The other widths are for contrast, not what the module uses. Issue 14's target: at most 1.05 looked at per extent written.\n\n",
	       STEADY_RATE, STEADY_RATE * HZ, HZ, AIPU_PERIOD_MS, PERIOD_J,
	       AIPU_MAX_AGE_MS, MAX_AGE_J, quick ? 10 : 60,
	       (unsigned long)AIPU_SLOT_JIFFIES, AIPU_QUEUE_SLOTS);
	printf("| set-up | slot jiffies | files F | pages dirtied | passes | files looked at | extents taken | extents written | files taken | looked at per extent written | per file taken | phase 1 holds: p99.9 / max µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"steady\", \"rate_per_jiffy\": %d, "
		"\"hz\": %d, \"period_jiffies\": %lu, \"max_age_jiffies\": %lu, "
		"\"slot_jiffies\": %lu, \"target\": 1.05, \"rows\": [\n",
		STEADY_RATE, HZ, PERIOD_J, MAX_AGE_J,
		(unsigned long)AIPU_SLOT_JIFFIES);
	for (ci = 0; ci < ARRAY_SIZE(steady_cfgs); ci++) {
		const struct steady_cfg *c = &steady_cfgs[ci];

		if (quick && !c->in_quick)
			continue;
		for (si = 0; si < nsizes; si++) {
			struct steady_out o;
			double per, perf;
			struct stats st;

			steady_run(c, sizes[si], 17 + si, &o);
			per = o.pc.written ? (double)o.scanned / o.pc.written : 0;
			perf = o.pc.batches ? (double)o.scanned / o.pc.batches :
					      0;
			if (ci == 0 && per > worst) {
				worst = per;
				worst_files = sizes[si];
			}
			fprintf(f, "%s{\"config\": \"%s\", \"name\": \"%s\", "
				"\"slot_jiffies\": %lu, \"paced\": %s, "
				"\"hot\": %s, \"tick_offset\": %lu, "
				"\"files\": %lu, \"pages_dirtied\": %lu, "
				"\"passes\": %lu, \"looked_at\": %lu, "
				"\"extents_taken\": %lu, "
				"\"extents_written\": %lu, "
				"\"files_taken\": %lu, "
				"\"per_extent_written\": %.4f, "
				"\"per_file_taken\": %.4f",
				ci || si ? ",\n" : "", c->id, c->name,
				c->width ? c->width : module_slot, c->paced ? "true" : "false",
				c->hot ? "true" : "false", c->offset,
				sizes[si], o.dirtied, o.passes, o.scanned,
				o.pc.extents, o.pc.written, o.pc.batches, per,
				perf);
			st = json_timed(f, "scan", &o.scan);
			fprintf(f, "}");
			printf("| %s | %lu | %s | %lu | %lu | %lu | %lu | %lu | %lu | %s%.3f%s | %.3f | %.1f / %.1f |\n",
			       c->name, c->width ? c->width : module_slot,
			       with_commas(sizes[si], b1),
			       o.dirtied, o.passes, o.scanned, o.pc.extents,
			       o.pc.written, o.pc.batches,
			       per > 1.05 ? "**" : "", per,
			       per > 1.05 ? "**" : "", perf, st.p999 / 1e3,
			       st.max / 1e3);
			fflush(stdout);
			timed_free(&o.scan);
		}
	}
	if (worst > 1.05)
		printf("\nWith the module's slots (%lu jiffies, paced), phase 1 looks at up to %.3f files per extent written (at %s files): MORE than issue 14's 1.05. The files of the slot the cutoff cuts are looked at and left for the next pass, which looks at them again.\n",
		       (unsigned long)AIPU_SLOT_JIFFIES, worst,
		       with_commas(worst_files, b1));
	else
		printf("\nWith the module's slots (%lu jiffies, paced), phase 1 looks at no more than %.3f files per extent written: within issue 14's 1.05.\n",
		       (unsigned long)AIPU_SLOT_JIFFIES, worst);
	fprintf(f, "\n], \"module_worst\": %.4f, \"module_worst_files\": %lu, ",
		worst, worst_files);
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(true);
}

/* ---- 7. memory ---- */

static void measure_memory(void)
{
	FILE *f = json_open("memory");
	unsigned int i, k;
	char b1[32], b2[32];

	printf("\n## 7. Memory per page, from the objects' sizes\n\n");
	printf("Bytes = the objects the queue holds x their sizes: log segments of 64, 512 and 4,096 B (the 4,096 column also counts a file's live-bit directory, struct aipu_live_dir, from the same cache); live chunks of %zu B (struct aipu_live_chunk, %d pages each); moved entries %zu B; retries %zu B; trackers as the kernel allocates them, %zu B (struct aipu_file %zu B + hash node + rcu_head, struct aipu_mapping). Divided by the pages tracked one by one (in the logs) and by the pages dirtied (they differ once a file is bounded as a whole). Not counted: slab rounding and slab pages, memcg's per-object pointer (SLAB_ACCOUNT), the table's buckets (8 B each, fixed at load). States at the end of the last fill of tables 1, 2 and 4. Target (issue 14): 16 B a page.\n\n",
	       sizeof(struct aipu_live_chunk), AIPU_LIVE_CHUNK_PAGES,
	       sizeof(struct aipu_moved), sizeof(struct aipu_retry),
	       sizeof(struct bench_mapping), sizeof(struct aipu_file));
	printf("| state | pages dirtied | tracked one by one | files | segments 64 / 512 / 4096 | live chunks | moved | B per tracked page, queue only | with trackers | B per dirtied page |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"memory\", \"sizes\": {");
	for (k = 0; k < NR_CACHES; k++)
		fprintf(f, "%s\"%s\": %zu", k ? ", " : "", cache_names[k],
			cache_sizes[k]);
	fprintf(f, "}, \"sizeof_file\": %zu, \"rows\": [\n",
		sizeof(struct aipu_file));
	for (i = 0; i < nr_mem_rows; i++) {
		struct mem_row *m = &mem_rows[i];
		double q = mem_bytes(m, false), all = mem_bytes(m, true);
		double perq = m->pages ? q / m->pages : 0;
		double per = m->pages ? all / m->pages : 0;
		double perd = m->dirtied ? all / m->dirtied : 0;

		printf("| %s | %s | %s | %lu | %ld / %ld / %ld | %ld | %ld | %.2f | %.2f | %.2f |\n",
		       m->what, with_commas(m->dirtied, b1),
		       with_commas(m->pages, b2), m->files, m->objs[C_SEG64],
		       m->objs[C_SEG512], m->objs[C_SEG4096], m->objs[C_CHUNK],
		       m->objs[C_MOVED], perq, per, perd);
		fprintf(f, "%s{\"state\": \"%s\", \"pages_dirtied\": %lu, "
			"\"pages_tracked\": %lu, \"files\": %lu, "
			"\"fallbacks\": %lu, \"objects\": {", i ? ",\n" : "",
			m->what, m->dirtied, m->pages, m->files, m->fallbacks);
		for (k = 0; k < NR_CACHES; k++)
			fprintf(f, "%s\"%s\": %ld", k ? ", " : "",
				cache_names[k], m->objs[k]);
		fprintf(f, "}, \"bytes_queue\": %.0f, \"bytes\": %.0f, "
			"\"bytes_per_tracked_page_queue\": %.3f, "
			"\"bytes_per_tracked_page\": %.3f, "
			"\"bytes_per_dirtied_page\": %.3f}", q, all, perq, per,
			perd);
	}
	fprintf(f, "\n]}\n");
	json_close(f);
}

/* ---- 8. each hold timed again over the same backlog ---- */

/*
 * A hold's wall time is its code's time plus whatever the host did in it
 * (here a timer tick alone costs 20-50 µs, some 100-300 µs), which
 * getrusage() does not see: table 0's control reads p99.9 and maxima far
 * above its fixed work.  The same backlog made again from the same seed
 * gives the same holds in the same order over the same objects, so the
 * i-th hold of every repeat is the same work, and as the host only adds
 * time, the least of its readings is the closest to the code's own: the
 * criterion's reading.  Their median is kept beside it.  The control,
 * fixed work read the same way, shows that neither hides work.
 */
#define REPEATS 5

/* One way of reading a hold from its REPEATS readings, over all holds. */
struct rep_est {
	double median, p99, p999, max;
	size_t at;			/* the hold with the max */
	float at_max[REPEATS];		/* its readings */
};

enum { EST_LEAST, EST_MEDIAN, EST_NR };

struct rep_row {
	char what[112];
	unsigned long n;		/* backlog, pages */
	size_t holds;			/* a repeat */
	struct rep_est est[EST_NR];
	size_t unresolved;		/* median: disturbed in most repeats */
	double single_max;		/* the longest reading not disturbed */
};

static struct {
	struct rep_row control[2];	/* 10 and 40 us of work */
	unsigned int ncontrol;
	double max[EST_NR];		/* the worst at 1 M pages */
	char what[EST_NR][112];
	bool seen;
} rep_crit;

static FILE *rep_json;

/* The statistics of @v (@n readings of holds, sorted here). */
static void rep_stats(float *v, size_t n, struct rep_est *e)
{
	qsort(v, n, sizeof(*v), cmp_float);
	e->median = n ? pct(v, n, 0.5) : 0;
	e->p99 = n ? pct(v, n, 0.99) : 0;
	e->p999 = n ? pct(v, n, 0.999) : 0;
}

/* Each hold's least and median reading over the repeats of @t[]. */
static void rep_reduce(struct timed *t, struct rep_row *row)
{
	size_t len = t[0].order.n, i, nv[EST_NR] = { 0 };
	float c[REPEATS], *v[EST_NR];
	unsigned int r, k;

	for (r = 1; r < REPEATS; r++)
		if (t[r].order.n != len)
			die("%s: repeat %u made %zu holds, the first %zu: the backlog was not made the same way",
			    row->what, r, t[r].order.n, len);
	memset(row->est, 0, sizeof(row->est));
	row->holds = len;
	row->unresolved = 0;
	row->single_max = 0;
	for (k = 0; k < EST_NR; k++) {
		v[k] = malloc((len ? len : 1) * sizeof(*v[k]));
		if (!v[k])
			die("out of memory");
	}
	for (i = 0; i < len; i++) {
		for (r = 0; r < REPEATS; r++) {
			c[r] = t[r].order.v[i];
			if (isfinite(c[r]) && c[r] > row->single_max)
				row->single_max = c[r];
		}
		qsort(c, REPEATS, sizeof(*c), cmp_float);
		for (k = 0; k < EST_NR; k++) {
			float x = c[k == EST_LEAST ? 0 : REPEATS / 2];
			struct rep_est *e = &row->est[k];

			if (!isfinite(x)) {
				row->unresolved += k == EST_MEDIAN;
				continue;
			}
			if (x > e->max) {
				e->max = x;
				e->at = i;
			}
			v[k][nv[k]++] = x;
		}
	}
	for (k = 0; k < EST_NR; k++) {
		for (r = 0; r < REPEATS && len; r++)
			row->est[k].at_max[r] = t[r].order.v[row->est[k].at];
		rep_stats(v[k], nv[k], &row->est[k]);
		free(v[k]);
	}
}

static void rep_print(const struct rep_row *row)
{
	const struct rep_est *l = &row->est[EST_LEAST];
	const struct rep_est *m = &row->est[EST_MEDIAN];
	char b1[32], b2[32], at[128];
	unsigned int r, k;
	int len = 0;

	for (r = 0; r < REPEATS; r++)
		len += snprintf(at + len, sizeof(at) - len, "%s%.1f",
				r ? ", " : "", isfinite(l->at_max[r]) ?
				l->at_max[r] / 1e3 : -1.0);
	printf("| %s | %s | %s | %.2f | %.2f | %.1f | **%.1f** | %s | %.1f / **%.1f** | %zu | %.1f |\n",
	       row->what, row->n ? with_commas(row->n, b1) : "",
	       with_commas(row->holds, b2), l->median / 1e3, l->p99 / 1e3,
	       l->p999 / 1e3, l->max / 1e3, at, m->p999 / 1e3, m->max / 1e3,
	       row->unresolved, row->single_max / 1e3);
	fprintf(rep_json, "%s{\"what\": \"%s\", \"n\": %lu, \"holds\": %zu, "
		"\"unresolved\": %zu, \"single_max\": %.1f",
		ftell(rep_json) > 120 ? ",\n" : "", row->what, row->n,
		row->holds, row->unresolved, row->single_max);
	for (k = 0; k < EST_NR; k++) {
		const struct rep_est *e = &row->est[k];

		fprintf(rep_json, ", \"%s\": {\"median\": %.1f, \"p99\": %.1f, "
			"\"p999\": %.1f, \"max\": %.1f, \"max_index\": %zu, "
			"\"max_readings\": [", k == EST_LEAST ? "least" : "median",
			e->median, e->p99, e->p999, e->max, e->at);
		for (r = 0; r < REPEATS; r++)
			fprintf(rep_json, "%s%.1f", r ? ", " : "",
				isfinite(e->at_max[r]) ? e->at_max[r] : -1.0);
		fprintf(rep_json, "]}");
	}
	fprintf(rep_json, "}");
	fflush(stdout);
}

/* Reduce, print, and count towards the criterion at 1 M pages. */
static void rep_done(struct timed *t, const char *what, unsigned long n)
{
	struct rep_row row = { .n = n };
	unsigned int r, k;

	snprintf(row.what, sizeof(row.what), "%s", what);
	rep_reduce(t, &row);
	rep_print(&row);
	for (k = 0; n == 1000000 && k < EST_NR; k++) {
		rep_crit.seen = true;
		if (row.est[k].max <= rep_crit.max[k])
			continue;
		rep_crit.max[k] = row.est[k].max;
		snprintf(rep_crit.what[k], sizeof(rep_crit.what[k]), "%s",
			 what);
	}
	for (r = 0; r < REPEATS; r++)
		timed_free(&t[r]);
}

static void rep_start(struct timed *t)
{
	unsigned int r;

	for (r = 0; r < REPEATS; r++) {
		timed_clear(&t[r]);
		t[r].keep_order = true;
	}
}

/* The control: @n holds of a fixed computation of about @target ns. */
static void rep_control(double target, unsigned long n)
{
	static struct timed t[REPEATS];
	unsigned long iters = calibrate(target), i;
	struct rep_row *row;
	unsigned int r;

	rep_start(t);
	for (r = 0; r < REPEATS; r++)
		for (i = 0; i < n; i++)
			TIMED_HOLD(&devs[0], &t[r], fixed_work(iters));
	row = &rep_crit.control[rep_crit.ncontrol++];
	snprintf(row->what, sizeof(row->what),
		 "control: %.0f µs of fixed work", target / 1e3);
	row->n = 0;
	rep_reduce(t, row);
	rep_print(row);
	for (r = 0; r < REPEATS; r++)
		timed_free(&t[r]);
}

/* holds_row()'s holds, REPEATS times over one backlog. */
static void rep_backlog(enum backlog bl, unsigned long n)
{
	static struct timed h[H_NR][REPEATS], dhb[REPEATS], dend[REPEATS];
	static struct timed scratch;
	struct pass_counts pc;
	unsigned long cutoff;
	char what[112];
	unsigned int r, k;

	for (k = 0; k < H_NR; k++)
		rep_start(h[k]);
	rep_start(dhb);
	rep_start(dend);
	for (r = 0; r < REPEATS; r++) {
		memset(&pc, 0, sizeof(pc));
		backlog_fill(bl, n, 5 + n, &h[H_PROBE][r], &cutoff);
		scan_timed(&devs[0], cutoff, &h[H_SCAN][r]);
		pass_timed(&devs[0], cutoff, false, &h[H_TAKE][r],
			   &h[H_HANDBACK][r], &h[H_END][r], NULL, &pc);
		backlog_fill(bl, n, 5 + n, NULL, &cutoff);
		forget_timed(&devs[0], &h[H_FORGET][r]);
		if (bl != B_BIG)
			continue;
		backlog_fill(bl, n, 7 + n, NULL, &cutoff);
		timed_clear(&scratch);
		scan_timed(&devs[0], cutoff, &scratch);
		pass_timed(&devs[0], cutoff, true, &scratch, &dhb[r], &dend[r],
			   NULL, &pc);
	}
	timed_free(&scratch);
	for (k = 0; k < H_NR; k++) {
		snprintf(what, sizeof(what), "%s, %s", hold_names[k],
			 backlog_names[bl]);
		rep_done(h[k], what, n);
	}
	if (bl != B_BIG)
		return;
	snprintf(what, sizeof(what),
		 "every page still dirty: hand-back, %s", backlog_names[bl]);
	rep_done(dhb, what, n);
	snprintf(what, sizeof(what),
		 "every page still dirty: end of pass, %s", backlog_names[bl]);
	rep_done(dend, what, n);
}

/* One file freed a budget a hold: eviction (0), the shrinker, a park. */
static void rep_free_file(struct timed *t, unsigned int w, enum pattern p,
			  unsigned long n)
{
	unsigned long now = gen_end(p, n), freed;
	struct aipu_file *tr;
	struct gen g;
	bool done;

	world_reset(false);
	gen_init(&g, p, 0, n, 31);
	fill(&devs[0], &g, n, NULL, 0, NULL);
	tr = aipu_file_lookup(file_key(0, 0));
	if (w == 0) {
		TIMED_HOLD(&devs[0], t, done = !tr->hashed ||
			   aipu_queue_kill(&devs[0].tr, tr, AIPU_DRAIN_BATCH));
		while (!done)
			TIMED_HOLD(&devs[0], t,
				   done = aipu_queue_kill(&devs[0].tr, tr,
							  AIPU_DRAIN_BATCH));
		return;
	}
	do
		TIMED_HOLD(&devs[0], t,
			   freed = freer_call(w == 1 ? F_SHRINK : F_PARK, tr,
					      now));
	while (freed == AIPU_DRAIN_BATCH);
}

/* evict_row()'s and freer_rounds()'s holds, REPEATS times over one file. */
static void rep_evict(enum pattern p, unsigned long n)
{
	static const char * const names[] = {
		"eviction of one file", "the shrinker freeing one file",
		"a park freeing one file",
	};
	static struct timed t[REPEATS];
	unsigned int w, r;
	char what[112];

	for (w = 0; w < ARRAY_SIZE(names); w++) {
		rep_start(t);
		for (r = 0; r < REPEATS; r++)
			rep_free_file(&t[r], w, p, n);
		snprintf(what, sizeof(what), "%s, %s", names[w],
			 pattern_names[p]);
		rep_done(t, what, n);
	}
}

static void measure_repeat(void)
{
	static const unsigned long sizes[] = { 10000, 100000, 1000000 };
	unsigned int nsizes = quick ? 1 : ARRAY_SIZE(sizes), si, pi;
	struct noise nz = noise_begin();
	int bl;

	rep_json = json_open("repeat");
	printf("\n## 8. Each hold timed %d times over the same backlog (the criterion's reading)\n\n",
	       REPEATS);
	printf("Tables 4 and 5 time every hold once, and a hold's wall time is its code's time plus whatever the host did in it (on this host a timer tick alone takes 20-50 µs, some 100-300 µs; getrusage() does not see it): table 0's control, fixed work, reads p99.9 and maxima far above that work, so they cannot tell a 50 µs section from a 10 µs one interrupted. Here each backlog of tables 4 and 5 is made %d times from the same seed: the same holds in the same order over the same objects (a repeat that makes a different number of holds stops the benchmark), so the i-th hold of every repeat is the same work. The host only adds time, so **the least of a hold's %d readings is the closest to its code's time**; the columns \"least\" are over the holds' least readings (the criterion's reading), \"median of %d\" over their medians (a hold the host slowed in most repeats stays slow there; \"unresolved\": disturbed by getrusage() in most). The control, %d sequences of holds of fixed work read the same way, shows that the reading neither hides work nor keeps the host's: its max should stay near the work. \"readings\": those of the hold with the longest least reading (-1: disturbed). \"longest single reading\": the longest hold not disturbed, as tables 4 and 5 read it. Holds in µs.\n\n",
	       REPEATS, REPEATS, REPEATS, REPEATS);
	printf("| set | N pages | holds a repeat | least: median µs | p99 µs | p99.9 µs | max µs | readings µs | median of %d: p99.9 / max µs | unresolved | longest single reading µs |\n",
	       REPEATS);
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n");
	fprintf(rep_json, "{\"measurement\": \"repeat\", \"repeats\": %d, "
		"\"unit\": \"ns per hold\", \"rows\": [\n", REPEATS);
	memset(&rep_crit, 0, sizeof(rep_crit));
	rep_control(10000, quick ? 4000 : 100000);
	rep_control(40000, quick ? 1000 : 10000);
	for (si = 0; si < nsizes; si++) {
		for (bl = 0; bl < B_NR; bl++)
			rep_backlog(bl, sizes[si]);
		for (pi = 0; pi < ARRAY_SIZE(evict_pats); pi++)
			rep_evict(evict_pats[pi], sizes[si]);
	}
	table_end(rep_json, &nz);
	rep_json = NULL;
	world_reset(true);
}

/* ---- the criterion ---- */

/* Table 8's reading of the criterion, and whether its control allows it. */
static void rep_criterion(void)
{
	const struct rep_row *c10 = &rep_crit.control[0];
	const struct rep_row *c40 = &rep_crit.control[1];
	double l10 = c10->est[EST_LEAST].max, l40 = c40->est[EST_LEAST].max;
	double worst = rep_crit.max[EST_LEAST];
	bool clean;
	FILE *f;

	if (!rep_crit.seen)
		return;
	clean = rep_crit.ncontrol == 2 && l10 <= 1.5 * 10000 &&
		l40 <= 1.25 * 40000;
	printf("- **by each hold's least of %d readings over the same backlog (table 8): %s** (worst %.1f µs: %s); the control's longest least reading was %.1f µs for 10 µs of work and %.1f µs for 40 µs: %s; by the holds' medians of %d the worst is %.1f µs (%s)\n",
	       REPEATS, worst <= TARGET_NS ? "met" : "NOT met", worst / 1e3,
	       rep_crit.what[EST_LEAST], l10 / 1e3, l40 / 1e3, clean ?
	       "the reading keeps the work and drops the host's interruptions, so this figure is the code's" :
	       "the control is still far above its work, so this figure carries host noise too",
	       REPEATS, rep_crit.max[EST_MEDIAN] / 1e3,
	       rep_crit.what[EST_MEDIAN]);
	f = json_open("criterion_repeat");
	fprintf(f, "{\"target_ns\": %d, \"pages\": 1000000, \"repeats\": %d, "
		"\"worst_least_ns\": %.1f, \"worst_least_what\": \"%s\", "
		"\"met\": %s, \"worst_median_ns\": %.1f, "
		"\"worst_median_what\": \"%s\", "
		"\"control_10us_least_max_ns\": %.1f, "
		"\"control_40us_least_max_ns\": %.1f, "
		"\"control_10us_median_max_ns\": %.1f, "
		"\"control_40us_median_max_ns\": %.1f, "
		"\"control_clean\": %s}\n", TARGET_NS, REPEATS, worst,
		rep_crit.what[EST_LEAST], worst <= TARGET_NS ? "true" : "false",
		rep_crit.max[EST_MEDIAN], rep_crit.what[EST_MEDIAN], l10, l40,
		c10->est[EST_MEDIAN].max, c40->est[EST_MEDIAN].max,
		clean ? "true" : "false");
	json_close(f);
}

static void print_criterion(void)
{
	double c99 = 0, cp = 0, cm = 0, work = 10000;
	bool noisy_max, noisy_p999;
	unsigned int i;
	FILE *f;

	if (!crit_seen && !rep_crit.seen) {
		if (wanted_holds)
			printf("\n## Criterion (issue 14): with 1,000,000 pages tracked, the longest interrupts-off section at most 50 µs on the host CPU\n\nNot measured: this run had no backlog of 1,000,000 pages (--quick stops at 100,000).\n");
		return;
	}
	printf("\n## Criterion (issue 14): with 1,000,000 pages tracked, the longest interrupts-off section at most 50 µs on the host CPU\n\n");
	rep_criterion();
	if (!crit_seen)
		return;
	for (i = 0; i < ncontrol; i++) {
		c99 = max(c99, control[i].p99);
		cp = max(cp, control[i].p999);
		cm = max(cm, control[i].max);
	}
	noisy_max = !ncontrol || cm > TARGET_NS;
	noisy_p999 = !ncontrol || cp > 2 * work;
	printf("Every hold timed at N = 1,000,000 in tables 4 and 5 (probe, phase 1, take, hand-back, end of pass, rmmod, eviction; not phase 1 in one hold, which the module does not do), against the control, a fixed 10 µs computation timed the same way (table 0: p99.9 up to %.1f µs, max up to %.1f µs%s). A set's p99.9 counts only if it has 1,000 holds or more, its p99 100 or more (below that they are its maximum).\n\n",
	       cp / 1e3, cm / 1e3, ncontrol ? "" : "; not measured: run with noise");
	printf("- **by p99.9: %s** (worst %.1f µs: %s)%s\n",
	       crit.p999 <= TARGET_NS ? "met" : "NOT met", crit.p999 / 1e3,
	       crit.p999_what, noisy_p999 ?
	       "; the control's p99.9 is also disturbed, so this figure carries host noise too" :
	       "; the control's p99.9 is close to its 10 µs of work: this figure is the code's");
	printf("- **by max: %s** (worst %.1f µs: %s)%s\n",
	       crit.max <= TARGET_NS ? "met" : "NOT met", crit.max / 1e3,
	       crit.max_what, noisy_max ?
	       "; DISTURBED by host noise: the control's own max exceeds 50 µs, so a maximum here cannot tell the code's longest hold from the host's interruptions" :
	       "; the control's max stays under 50 µs, so the maxima are readable");
	printf("- for reference, by p99 (the control's p99 was %.1f µs for its 10 µs of work): worst %.1f µs (%s): %s\n",
	       c99 / 1e3, crit.p99 / 1e3, crit.p99_what,
	       crit.p99 <= TARGET_NS ? "within 50 µs" : "NOT within 50 µs");
	if (dirty_crit.seen)
		printf("- not counted above: a pass that finds every page still dirty after its write (policy kernel; pages locked or under writeback) and puts all back, 1,000,000 pages over files of <= 262,144: hand-back p99.9 %.1f / max %.1f µs; **the end of the pass holds the lock %.0f µs (wall) / %.0f µs (CPU): %s** (aipu_queue_end_pass() counts files and retries against its budget of AIPU_SCAN_BATCH a hold)\n",
		       dirty_crit.hb.p999 / 1e3, dirty_crit.hb.max / 1e3,
		       dirty_crit.end_wall / 1e3, dirty_crit.end_cpu / 1e3,
		       dirty_crit.end_cpu <= TARGET_NS ? "within 50 µs" :
							 "NOT within 50 µs");
	if (cut_crit[0] > 0)
		printf("- not counted above: phase 1's hold that finishes a slot its cutoff cuts puts the slot's not-due files back (wheel.c splices its seen list back: one step however many): **%.1f µs with 10,000 files dirtied within the slot, %.1f µs with 100,000** (median of rounds, wall)\n",
		       cut_crit[0] / 1e3, cut_crit[1] / 1e3);
	if (oldest_st.n)
		printf("- not counted above, as it does not grow with the backlog: stat's read of a device's oldest time walks the wheel's %d slots at most, **median %.2f µs, p99.9 %.1f µs, max %.1f µs** (table 4)\n",
		       AIPU_QUEUE_SLOTS, oldest_st.median / 1e3,
		       oldest_st.p999 / 1e3, oldest_st.max / 1e3);
	f = json_open("criterion");
	fprintf(f, "{\"target_ns\": %d, \"pages\": 1000000, "
		"\"worst_p99_ns\": %.1f, \"worst_p99_what\": \"%s\", "
		"\"worst_p999_ns\": %.1f, \"worst_p999_what\": \"%s\", "
		"\"worst_max_ns\": %.1f, \"worst_max_what\": \"%s\", "
		"\"met_p999\": %s, \"met_max\": %s, "
		"\"control_p99_ns\": %.1f, "
		"\"control_p999_ns\": %.1f, \"control_max_ns\": %.1f, "
		"\"max_disturbed_by_noise\": %s, "
		"\"p999_disturbed_by_noise\": %s, "
		"\"dirty_handback_p999_ns\": %.1f, "
		"\"dirty_handback_max_ns\": %.1f, "
		"\"dirty_end_pass_wall_ns\": %.1f, "
		"\"dirty_end_pass_cpu_ns\": %.1f, "
		"\"cut_slot_10k_max_ns\": %.1f, "
		"\"cut_slot_100k_max_ns\": %.1f, "
		"\"stat_oldest_p999_ns\": %.1f, "
		"\"stat_oldest_max_ns\": %.1f}\n", TARGET_NS,
		crit.p99, crit.p99_what, crit.p999, crit.p999_what, crit.max,
		crit.max_what,
		crit.p999 <= TARGET_NS ? "true" : "false",
		crit.max <= TARGET_NS ? "true" : "false", c99, cp, cm,
		noisy_max ? "true" : "false", noisy_p999 ? "true" : "false",
		dirty_crit.hb.p999, dirty_crit.hb.max, dirty_crit.end_wall,
		dirty_crit.end_cpu, cut_crit[0], cut_crit[1], oldest_st.p999,
		oldest_st.max);
	json_close(f);
}

/* ---- main ---- */

static double timer_overhead(void)
{
	struct timed t = { 0 };
	unsigned int i;
	double med;

	for (i = 0; i < 100000; i++) {
		dev_lock(&devs[0]);
		timed_add(&t, dev_unlock(&devs[0]), false);
	}
	med = stats_of(&t).median;
	timed_free(&t);
	return med;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: scale [--quick] [--rounds N] [--out DIR] [--only LIST]\n"
		"  --quick     sizes up to 100,000, fewer rounds (seconds)\n"
		"  --rounds N  rounds per measurement (default 3, 1..12)\n"
		"  --out DIR   an existing directory for the JSON files (default .)\n"
		"  --only LIST comma-separated: noise,pages,files,threads,holds,\n"
		"              evict,steady,repeat (memory comes with pages,\n"
		"              files and holds; the criterion with holds, evict\n"
		"              and repeat)\n");
	exit(2);
}

static bool wanted(const char *only, const char *name)
{
	const char *p = only;
	size_t len = strlen(name);

	if (!only)
		return true;
	while ((p = strstr(p, name))) {
		if ((p == only || p[-1] == ',') &&
		    (p[len] == '\0' || p[len] == ','))
			return true;
		p += len;
	}
	return false;
}

static void check_only(const char *only)
{
	static const char * const names[] = {
		"noise", "pages", "files", "threads", "holds", "evict",
		"steady", "repeat",
	};
	const char *p = only;
	unsigned int i;
	size_t len;

	while (p && *p) {
		len = strcspn(p, ",");
		for (i = 0; i < ARRAY_SIZE(names); i++)
			if (strlen(names[i]) == len && !strncmp(p, names[i], len))
				break;
		if (i == ARRAY_SIZE(names)) {
			fprintf(stderr, "scale: --only: no section '%.*s'\n",
				(int)len, p);
			usage();
		}
		p += len + (p[len] == ',');
	}
}

int main(int argc, char **argv)
{
	static const unsigned long full[] = {
		1000, 10000, 100000, 1000000, 10000000,
	};
	static const unsigned long nfiles[] = {
		1, 10, 100, 1000, 10000, 100000, 1000000,
	};
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "out", required_argument, NULL, 'o' },
		{ "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int nsz, nfs, i;
	const char *only = NULL;
	bool rounds_set = false;
	double timer;
	FILE *f;
	u64 start;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quick = true;
			break;
		case 'r':
			rounds = atoi(optarg);
			rounds_set = true;
			if (rounds < 1 || rounds > 12)
				usage();
			break;
		case 'o':
			out_dir = optarg;
			break;
		case 'O':
			only = optarg;
			check_only(only);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (quick && !rounds_set)
		rounds = 2;
	nsz = quick ? 3 : ARRAY_SIZE(full);
	nfs = quick ? 6 : ARRAY_SIZE(nfiles);
	for (i = 0; i < NCPUS; i++)
		for (c = 0; c < NR_CACHES; c++)
			cpus[i].c[c].size = cache_sizes[c];
	module_slot = AIPU_SLOT_JIFFIES;
	slot_width = module_slot;
	table_init();
	for (i = 0; i < NDEVS; i++) {
		pthread_spin_init(&devs[i].lock, PTHREAD_PROCESS_PRIVATE);
		aipu_queue_init(&devs[i].tr, devs[i].slots, slot_width, T0);
	}
	world_reset(false);
	start = now_ns();
	timer = timer_overhead();
	printf("# aipu scale benchmark: the log-based queue (src/queue/queue.c) in user space\n\n");
	printf("Constants read from src/ at build time: AIPU_SCAN_BATCH = %d (src/flusher.c), a table bucket per %d pages of memory, 2^%d to 2^%d (src/mapping.c), AIPU_SLOT_JIFFIES = %lu at HZ = %d (src/dev.c), max_age_ms = %d and period_ms = %d (include/aipu_knobs.h); from the headers: AIPU_DRAIN_BATCH = %d, AIPU_HANDBACK_MAX = %d, AIPU_HANDBACK_PAGES = %d, AIPU_QUEUE_BYTES_MAX = %lu, AIPU_QUEUE_SLOTS = %d, AIPU_FLOG_TAKE_ENTRIES = %d, AIPU_FLOG_TAKE_PAGES = %d. Mode: %s, %u rounds. A hold's two clock reads (clock_gettime() here, local_clock() in aipu_dev_lock()/aipu_dev_unlock()) back to back: %.0f ns (median), included in every hold and transition below.\n\n",
	       AIPU_SCAN_BATCH, AIPU_TABLE_PAGES_PER_BUCKET,
	       AIPU_TABLE_MIN_BITS, AIPU_TABLE_MAX_BITS,
	       (unsigned long)AIPU_SLOT_JIFFIES, HZ, AIPU_MAX_AGE_MS,
	       AIPU_PERIOD_MS, AIPU_DRAIN_BATCH, AIPU_HANDBACK_MAX,
	       AIPU_HANDBACK_PAGES, AIPU_QUEUE_BYTES_MAX, AIPU_QUEUE_SLOTS,
	       AIPU_FLOG_TAKE_ENTRIES, AIPU_FLOG_TAKE_PAGES,
	       quick ? "quick" : "full", rounds, timer);
	printf("The tracker table has the kernel's layout and size (%lu buckets for this host's memory) but not its code (no RCU; trackers freed at once). Queue objects and trackers come from per-CPU free lists mapped and touched before timing (the slab's fast path). A batch or hold during which the thread was switched out or took a page fault (\"disturbed\", read with getrusage() outside the timed window) is counted apart and left out of percentiles and maxima: the kernel holds the lock with interrupts off. Interrupts and the hypervisor's steal are not detected: table 0 measures them.\n",
	       1UL << table.bits);
	fflush(stdout);
	if (wanted(only, "noise"))
		measure_noise("before");
	if (wanted(only, "pages"))
		measure_pages(full, nsz);
	if (wanted(only, "files"))
		measure_files(nfiles, nfs);
	if (wanted(only, "threads"))
		measure_threads();
	wanted_holds = wanted(only, "holds") || wanted(only, "evict");
	if (wanted(only, "holds"))
		measure_holds(full, nsz);
	if (wanted(only, "evict"))
		measure_evict(full, nsz);
	if (wanted(only, "steady"))
		measure_steady(nfiles, nfs);
	if (wanted(only, "repeat"))
		measure_repeat();
	if (nr_mem_rows)
		measure_memory();
	if (wanted(only, "noise")) {
		printf("\n## 0. (again) The host's noise, after\n\n");
		printf("| when | work µs | holds | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
		measure_noise("after");
		noise_finish();
		measure_first_touch();
	}
	print_criterion();
	f = json_open("meta");
	fprintf(f, "{\"mode\": \"%s\", \"rounds\": %u, \"batch\": %d, "
		"\"scan_batch\": %d, \"kill_batch\": %d, "
		"\"handback_pages\": %d, \"handback_max\": %d, "
		"\"slot_jiffies\": %lu, \"hz\": %d, \"max_age_ms\": %d, "
		"\"period_ms\": %d, \"bytes_max\": %lu, "
		"\"take_entries\": %d, \"take_pages\": %d, "
		"\"table_buckets\": %lu, \"timer_ns\": %.1f, "
		"\"seconds\": %.1f}\n", quick ? "quick" : "full", rounds,
		BATCH, AIPU_SCAN_BATCH, AIPU_DRAIN_BATCH, AIPU_HANDBACK_PAGES,
		AIPU_HANDBACK_MAX, (unsigned long)AIPU_SLOT_JIFFIES, HZ,
		AIPU_MAX_AGE_MS, AIPU_PERIOD_MS, AIPU_QUEUE_BYTES_MAX,
		AIPU_FLOG_TAKE_ENTRIES, AIPU_FLOG_TAKE_PAGES,
		1UL << table.bits, timer, (now_ns() - start) / 1e9);
	json_close(f);
	fprintf(stderr, "scale: done in %.1f s\n", (now_ns() - start) / 1e9);
	return 0;
}
