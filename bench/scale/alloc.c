// SPDX-License-Identifier: GPL-2.0
/*
 * The scale benchmark's memory: the per-"CPU" caches that stand in for the
 * slab's per-CPU fast path, the allocator shims the queue code links
 * against (aipu_seg_alloc() ... aipu_file_free()), and the tracker table
 * with the kernel's layout (aipu_file_lookup(), _insert(), _remove()).
 */
#include "scale.h"

/* ---- memory: the slab's per-CPU caches, fast path only ---- */

const size_t cache_sizes[NR_CACHES] = {
	64, 512, 4096, sizeof(struct aipu_live_chunk),
	sizeof(struct aipu_moved), sizeof(struct aipu_retry),
	sizeof(struct bench_mapping),
};

struct cpu cpus[NCPUS];
__thread struct cpu *this_cpu = &cpus[0];

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
void cache_reset(struct cache *c, bool release)
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
void cache_scatter(struct cache *c, unsigned long n, u64 seed)
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
void caches_ensure(void)
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
void objects_live(long *n)
{
	unsigned int i, k;

	for (k = 0; k < NR_CACHES; k++)
		for (n[k] = 0, i = 0; i < NCPUS; i++)
			n[k] += cpus[i].c[k].live;
}

/* ---- the tracker table: the kernel's layout (src/mapping.c) ---- */

struct tracker_table table;

/* hash_ptr() of include/linux/hash.h on 64 bits. */
static inline unsigned long key_hash(const void *key)
{
	return (u64)(uintptr_t)key * 0x61c8864680b583ebull >> (64 - table.bits);
}

/* One bucket per AIPU_TABLE_PAGES_PER_BUCKET pages of this host's memory. */
void table_init(void)
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
