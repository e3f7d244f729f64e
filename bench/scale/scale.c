// SPDX-License-Identifier: GPL-2.0
/*
 * aipu's tracking at scale: src/track.c, compiled as the unit tests compile
 * it, timed in user space on the host's CPU (the guests run under QEMU's TCG,
 * which would time the emulator, not the code).  bench/scale/README.md says
 * what each table measures.
 *
 * What the kernel glue does is stood in for here:
 *   - one pthread spinlock per simulated backing device guards that device's
 *     struct aipu_track, as src/dev.c's per-device spinlock does;
 *   - runs and trackers come from per-"CPU" caches, mapped and touched before
 *     anything is timed and handed out by a free-list pop or a pointer bump:
 *     the slab's per-CPU fast path (slab refills are not in the figures);
 *   - aipu_tracker_lookup/insert/remove: a chained hash table, 64 buckets at
 *     first, doubled whenever it holds more than 3/4 of its size in entries.
 *     It is a STAND-IN for the kernel's rhashtable (src/mapping.c), not that
 *     code; like rhashtable's deferred worker it grows between timed batches,
 *     never inside an insert, and it never shrinks.
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
 * Interrupts and the hypervisor's steal cannot be seen this way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
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

#include "aipu_track.h"

#ifndef AIPU_SCAN_BATCH
#error "AIPU_SCAN_BATCH: build with make, which reads it from src/flusher.c"
#endif
#ifndef AIPU_KILL_BATCH
#error "AIPU_KILL_BATCH: build with make, which reads it from src/mapping.c"
#endif
#ifndef AIPU_SHRINK_BATCH
#error "AIPU_SHRINK_BATCH: build with make, which reads it from src/shrink.c"
#endif

#define BATCH		64	/* transitions timed together */
#define NCPUS		2	/* the host's cores: at most two threads */
#define NDEVS		2
#define SPREAD		32768	/* runs per file when a backlog is spread */
#define T0		1000UL	/* first "jiffy" */
#define JIFFY_PAGES	1024	/* transitions per jiffy (random patterns) */
#define MAX_ROUNDS	64
#define CACHELINE	128	/* two lines: the adjacent-line prefetcher */

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

/* ---- memory: the slab's per-CPU caches, fast path only ---- */

struct cache {
	const char *name;
	size_t size;
	char *base, *next, *end;
	void *free;		/* freed objects, last in first out */
	long live;
};

struct cpu {
	struct cache runs, maps;
} __attribute__((aligned(CACHELINE)));

/*
 * A tracker as the kernel allocates it (struct aipu_mapping, include/aipu.h):
 * the tracker, a struct rhash_head (one pointer, here the hash chain) and a
 * struct rcu_head (two pointers), so its size is the kernel's.
 */
struct bench_mapping {
	struct aipu_tracker t;
	struct bench_mapping *hnext;
	struct {
		void *next, *func;
	} rcu;
};

#define CPU_CACHES {							\
	.runs = { .name = "run", .size = sizeof(struct aipu_run) },	\
	.maps = { .name = "tracker", .size = sizeof(struct bench_mapping) }, \
}

static struct cpu cpus[NCPUS] = { CPU_CACHES, CPU_CACHES };

static __thread struct cpu *this_cpu = &cpus[0];

static void *cache_alloc(struct cache *c)
{
	void *p = c->free;

	if (p) {
		c->free = *(void **)p;
	} else if (c->next + c->size <= c->end) {
		p = c->next;
		c->next += c->size;
	} else {
		die("%s cache exhausted: reserved too little", c->name);
	}
	c->live++;
	return p;
}

static void cache_free(struct cache *c, void *p)
{
	*(void **)p = c->free;
	c->free = p;
	c->live--;
}

/*
 * Room for @n objects, from the start of the cache's memory: objects are
 * handed out in address order, as from fresh slabs.  Transparent huge pages
 * where the kernel allows them, as the kernel's direct map is huge-paged.
 */
static void cache_reserve(struct cache *c, unsigned long n)
{
	size_t want = (n + 64) * c->size, have = c->end - c->base;

	c->free = NULL;
	c->live = 0;
	if (have < want) {
		want = (want + (2 << 20) - 1) & ~(size_t)((2 << 20) - 1);
		if (c->base)
			munmap(c->base, have);
		c->base = mmap(NULL, want, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c->base == MAP_FAILED)
			die("mmap %zu bytes: %s", want, strerror(errno));
		madvise(c->base, want, MADV_HUGEPAGE);
		memset(c->base, 0, want);
		c->end = c->base + want;
	}
	c->next = c->base;
}

/*
 * The first @n objects handed out in random address order, as a slab that
 * has served a long-running workload would: consecutive allocations land in
 * unrelated cache lines.
 */
static void cache_scatter(struct cache *c, unsigned long n, u64 seed)
{
	u32 *order = malloc(n * sizeof(*order));
	unsigned long i;

	if (!order)
		die("out of memory");
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n; i > 1; i--) {
		unsigned long j = rng_next(&seed) % i;
		u32 x = order[i - 1];

		order[i - 1] = order[j];
		order[j] = x;
	}
	c->free = NULL;
	for (i = n; i > 0; i--) {
		void *p = c->base + (size_t)order[i - 1] * c->size;

		*(void **)p = c->free;
		c->free = p;
	}
	c->next = c->base + n * c->size;
	free(order);
}

struct aipu_run *aipu_run_alloc(void)
{
	return cache_alloc(&this_cpu->runs);
}

void aipu_run_free(struct aipu_run *r)
{
	cache_free(&this_cpu->runs, r);
}

struct aipu_tracker *aipu_tracker_alloc(void)
{
	struct bench_mapping *m = cache_alloc(&this_cpu->maps);

	return &m->t;
}

static struct bench_mapping *to_mapping(struct aipu_tracker *t)
{
	return container_of(t, struct bench_mapping, t);
}

void aipu_tracker_free(struct aipu_tracker *t)
{
	cache_free(&this_cpu->maps, to_mapping(t));
}

/* ---- the tracker table: a stand-in for the kernel's rhashtable ---- */

#define TABLE_MIN_BITS 6	/* rhashtable's HASH_DEFAULT_SIZE, 64 */

static struct {
	struct bench_mapping **b;
	unsigned int bits;
	unsigned long nelems, grows;
} table;

static inline unsigned long key_hash(const void *key, unsigned int bits)
{
	return (u64)(uintptr_t)key * 0x61c8864680b583ebull >> (64 - bits);
}

static void table_set(unsigned int bits)
{
	struct bench_mapping **old = table.b, *m, *n;
	unsigned long i, size = 1UL << table.bits;

	table.b = calloc(1UL << bits, sizeof(*table.b));
	if (!table.b)
		die("out of memory for the table");
	for (i = 0; old && i < size; i++) {
		for (m = old[i]; m; m = n) {
			unsigned long h = key_hash(m->t.key, bits);

			n = m->hnext;
			m->hnext = table.b[h];
			table.b[h] = m;
		}
	}
	free(old);
	table.bits = bits;
}

/* rhashtable's deferred worker: above 75% load, double.  Never timed. */
static void table_grow(void)
{
	while (table.nelems > (3UL << table.bits) / 4) {
		table_set(table.bits + 1);
		table.grows++;
	}
}

static void table_reset(void)
{
	if (table.nelems)
		die("table: %lu trackers left after track_clear()",
		    table.nelems);
	free(table.b);
	table.b = NULL;
	table.bits = 0;
	table_set(TABLE_MIN_BITS);
	table.grows = 0;
}

struct aipu_tracker *aipu_tracker_lookup(const void *key)
{
	struct bench_mapping *m = table.b[key_hash(key, table.bits)];

	for (; m; m = m->hnext)
		if (m->t.key == key)
			return &m->t;
	return NULL;
}

int aipu_tracker_insert(struct aipu_tracker *t)
{
	struct bench_mapping *m = to_mapping(t), **head;

	if (aipu_tracker_lookup(t->key))
		return -EEXIST;
	head = &table.b[key_hash(t->key, table.bits)];
	m->hnext = *head;
	*head = m;
	table.nelems++;
	return 0;
}

void aipu_tracker_remove(struct aipu_tracker *t)
{
	struct bench_mapping *m = to_mapping(t), **p;

	for (p = &table.b[key_hash(t->key, table.bits)]; *p; p = &(*p)->hnext) {
		if (*p == m) {
			*p = m->hnext;
			table.nelems--;
			return;
		}
	}
	die("aipu_tracker_remove: tracker not in the table");
}

/* ---- devices ---- */

struct dev {
	pthread_spinlock_t lock;
	struct aipu_track tr;
} __attribute__((aligned(CACHELINE)));

static struct dev devs[NDEVS];

/* The key of file @i of device @dev: an address, never dereferenced. */
static inline const void *file_key(unsigned int dev, unsigned long i)
{
	return (const void *)(uintptr_t)(((u64)(dev + 1) << 40) + 4096 +
					 (u64)i * 1024);
}

/* The probe's work: find or make the tracker, record the page; lock held. */
static inline void probe(struct dev *d, const void *key, pgoff_t index,
			 unsigned long time)
{
	struct aipu_tracker *t;

	pthread_spin_lock(&d->lock);
	t = track_get(&d->tr, key, (void *)key);
	if (t)
		track_pages(&d->tr, t, index, 1, time, false);
	pthread_spin_unlock(&d->lock);
	if (!t)
		die("track_get failed");
}

/*
 * Forget everything: track_clear() on every device, then check that it gave
 * back every run and tracker (a leak in track.c would show here), and start
 * the caches and the table afresh with room for @runs and @maps.
 */
static void world_reset(unsigned long runs, unsigned long maps)
{
	long live_runs = 0, live_maps = 0;
	unsigned int i;

	this_cpu = &cpus[0];
	for (i = 0; i < NDEVS; i++) {
		struct aipu_stats *st = &devs[i].tr.st;

		track_clear(&devs[i].tr);
		if (st->runs_tracked || st->pages_tracked || st->trackers)
			die("track_clear left runs %llu pages %llu trackers %llu",
			    (unsigned long long)st->runs_tracked,
			    (unsigned long long)st->pages_tracked,
			    (unsigned long long)st->trackers);
		track_init(&devs[i].tr);
	}
	for (i = 0; i < NCPUS; i++) {
		live_runs += cpus[i].runs.live;
		live_maps += cpus[i].maps.live;
	}
	if (live_runs || live_maps)
		die("after track_clear: %ld runs, %ld trackers not freed",
		    live_runs, live_maps);
	table_reset();
	for (i = 0; i < NCPUS; i++) {
		cache_reserve(&cpus[i].runs, i ? 0 : runs);
		cache_reserve(&cpus[i].maps, i ? 0 : maps);
	}
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
	double round_max[MAX_ROUNDS];
	double round_median[MAX_ROUNDS];	/* set by stats_of() */
	size_t round_start[MAX_ROUNDS];		/* index in @s */
	unsigned int rounds;
	bool rounds_sorted;		/* @s sorted: round medians taken */
};

static void timed_clear(struct timed *t)
{
	t->s.n = 0;
	t->n = 0;
	t->disturbed = 0;
	t->raw_max = 0;
	t->rounds = 0;
	t->rounds_sorted = false;
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
	t->n++;
	if (ns > t->raw_max)
		t->raw_max = ns;
	if (disturbed) {
		t->disturbed++;
		return;
	}
	samples_add(&t->s, ns);
	if (t->rounds && ns > t->round_max[t->rounds - 1])
		t->round_max[t->rounds - 1] = ns;
}

static void timed_free(struct timed *t)
{
	free(t->s.v);
	t->s.v = NULL;
	t->s.cap = 0;
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
	double sum = 0;
	size_t i;

	st.round_max = median_of(t->round_max, t->rounds);
	if (!t->rounds_sorted)
		round_medians(t);
	if (!s->n)
		return st;
	qsort(s->v, s->n, sizeof(*s->v), cmp_float);
	for (i = 0; i < s->n; i++)
		sum += s->v[i];
	st.mean = sum / s->n;
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
		"\"involuntary_switches\": %ld}", s, steal, cs);
}

/* ---- generating transitions ---- */

enum pattern {
	P_RANDOM_ONE,		/* random single pages of one file */
	P_RANDOM_SPREAD,	/* the same over files of about SPREAD runs */
	P_SEQ_1024,		/* sequential, a new jiffy every 1,024 pages */
	P_SEQ_1,		/* sequential, a new jiffy every page */
	P_NR,
};

static const char * const pattern_names[P_NR] = {
	"random pages, one file",
	"random pages, files of <= 32,768 runs",
	"sequential, 1,024 pages a jiffy",
	"sequential, a page a jiffy",
};

static const char * const pattern_ids[P_NR] = {
	"random_one", "random_spread", "seq_1024", "seq_1",
};

struct gen {
	enum pattern p;
	unsigned int dev;
	unsigned long nfiles;
	u32 seed;
	u64 rng;
};

static unsigned long files_for(enum pattern p, unsigned long n)
{
	return p == P_RANDOM_SPREAD ? (n + SPREAD - 1) / SPREAD : 1;
}

static void gen_init(struct gen *g, enum pattern p, unsigned int dev,
		     unsigned long n, u32 seed)
{
	g->p = p;
	g->dev = dev;
	g->nfiles = files_for(p, n);
	g->seed = seed;
	g->rng = 0x9e3779b97f4a7c15ull ^ seed;
}

static inline void gen_step(struct gen *g, unsigned long i,
			    const void **key, pgoff_t *index,
			    unsigned long *time)
{
	unsigned long file = 0;

	switch (g->p) {
	case P_RANDOM_SPREAD:
		file = rng_next(&g->rng) % g->nfiles;
		/* fall through */
	case P_RANDOM_ONE:
		*index = mix32((u32)i + g->seed);
		*time = T0 + i / JIFFY_PAGES;
		break;
	case P_SEQ_1024:
		*index = i;
		*time = T0 + i / 1024;
		break;
	default:
		*index = i;
		*time = T0 + i;
		break;
	}
	*key = file_key(g->dev, file);
}

/* Upper bounds of the runs @n transitions of @p can make. */
static unsigned long runs_for(enum pattern p, unsigned long n)
{
	switch (p) {
	case P_RANDOM_SPREAD:
		return n;
	case P_SEQ_1024:
		return n / 1024 + 2;
	default:
		return n < AIPU_RUNS_PER_TRACKER_MAX ? n :
		       AIPU_RUNS_PER_TRACKER_MAX;
	}
}

/*
 * @n transitions of @g on @d, a batch at a time.  Batches that start at or
 * after @keep_from and are whole go into @keep (ns per transition).  The
 * table grows between batches, untimed.
 */
static void fill(struct dev *d, struct gen *g, unsigned long n,
		 struct timed *keep, unsigned long keep_from)
{
	const void *k[BATCH];
	unsigned long tm[BATCH], i, j, m;
	pgoff_t ix[BATCH];
	long cs = 0;
	u64 t0, t1;

	for (i = 0; i < n; i += m) {
		m = n - i < BATCH ? n - i : BATCH;
		for (j = 0; j < m; j++)
			gen_step(g, i + j, &k[j], &ix[j], &tm[j]);
		if (keep)
			cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < m; j++)
			probe(d, k[j], ix[j], tm[j]);
		t1 = now_ns();
		if (keep && i >= keep_from && m == BATCH)
			timed_add(keep, (double)(t1 - t0) / BATCH,
				  disturbances() != cs);
		table_grow();
	}
}

/* ---- what a device tracks: the memory table's input ---- */

struct mem_row {
	char what[96];
	unsigned long dirtied, pages, runs, trackers, fallbacks, buckets;
};

static struct mem_row mem_rows[64];
static unsigned int nr_mem_rows;

static struct mem_row *mem_note(struct dev *d)
{
	struct aipu_stats *st = &d->tr.st;
	struct mem_row *r;

	if (nr_mem_rows == ARRAY_SIZE(mem_rows))
		die("too many memory rows");
	r = &mem_rows[nr_mem_rows++];
	r->dirtied = st->pages_dirtied;
	r->pages = st->pages_tracked;
	r->runs = st->runs_tracked;
	r->trackers = st->trackers;
	r->fallbacks = st->fallbacks;
	r->buckets = 1UL << table.bits;
	return r;
}

static void print_rounds(const double *v, unsigned int n, double scale)
{
	unsigned int r;

	for (r = 0; r < n; r++)
		printf("%s%.*f", r ? ", " : "", scale > 1 ? 1 : 0, v[r] / scale);
}

/* ---- 1. cost per transition against runs per file ---- */

static unsigned long min_batches(void)
{
	return quick ? 256 : 1024;
}

static void runs_row(FILE *f, enum pattern p, unsigned long n,
		     struct timed *all, bool first)
{
	unsigned long keep = (n / 2 + BATCH - 1) / BATCH * BATCH, per, reps;
	unsigned int r, rep;
	struct mem_row *mr;
	struct stats st;
	struct gen g;
	char b1[32];

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
			world_reset(runs_for(p, n), files_for(p, n) + 1);
			gen_init(&g, p, 0, n, 77 + r * 1000 + rep);
			fill(&devs[0], &g, n, all, keep);
		}
	}
	mr = mem_note(&devs[0]);
	snprintf(mr->what, sizeof(mr->what), "%s, N = %s", pattern_names[p],
		 with_commas(n, b1));
	fprintf(f, "%s{\"pattern\": \"%s\", \"pattern_name\": \"%s\", "
		"\"n\": %lu, \"fills_per_round\": %lu, \"runs_tracked\": %lu, "
		"\"pages_tracked\": %lu, \"pages_dirtied\": %lu, "
		"\"fallbacks\": %lu, \"trackers\": %lu", first ? "" : ",\n",
		pattern_ids[p], pattern_names[p], n, reps, mr->runs, mr->pages,
		mr->dirtied, mr->fallbacks, mr->trackers);
	st = json_timed(f, "ns", all);
	fprintf(f, "}");
	printf("| %s | %s | %.0f | %.0f | %.0f | ", pattern_names[p],
	       with_commas(n, b1), st.median, st.p99, st.p999);
	print_rounds(all->round_median, all->rounds, 1);
	printf(" | %.1f | %lu of %lu | %lu | %lu | %lu | %lu |\n",
	       st.max * BATCH / 1e3, all->disturbed, all->n, mr->runs,
	       mr->pages, mr->fallbacks, mr->trackers);
	fflush(stdout);
}

static void measure_runs(const unsigned long *sizes, unsigned int nsizes)
{
	static const enum pattern pats[] = {
		P_RANDOM_ONE, P_RANDOM_SPREAD, P_SEQ_1024, P_SEQ_1,
	};
	struct noise nz = noise_begin();
	FILE *f = json_open("runs");
	struct timed all = { 0 };
	unsigned int pi, si;

	printf("\n## 1. ns per clean->dirty transition against runs per file\n\n");
	printf("Lock, track_get(), track_pages(), unlock, for one page each; batches of %d transitions timed with clock_gettime and divided by %d; median, p99 and p99.9 over the batches of the second half of each fill (the file holds N/2 to N pages when they run), pooled over %u rounds; a fill is repeated until at least %lu batches are timed. A new jiffy every 1,024 transitions for the random patterns. \"max batch\": the longest batch of %d transitions not disturbed, an upper bound of the longest single probe. Runs, pages in runs, fallbacks and files: the device at the end of the last fill.\n\n",
	       BATCH, BATCH, rounds, min_batches(), BATCH);
	printf("| pattern | N pages dirtied | median ns | p99 ns | p99.9 ns | round medians ns | max batch µs | disturbed batches | runs tracked | pages in runs | fallbacks | files |\n");
	printf("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"runs\", \"batch\": %d, \"rounds\": %u, "
		"\"unit\": \"ns per transition\", \"rows\": [\n", BATCH, rounds);
	for (pi = 0; pi < ARRAY_SIZE(pats); pi++)
		for (si = 0; si < nsizes; si++)
			runs_row(f, pats[pi], sizes[si], &all, !pi && !si);
	fprintf(f, "\n], ");
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(0, 0);
	timed_free(&all);
}

/* ---- 2. cost per transition against tracked files ---- */

/*
 * Make @nfiles trackers (a page of each, in order), timing those
 * transitions into @create, then @n transitions, each a new page of a random
 * file, into @steady.
 */
static void files_rep(unsigned long nfiles, unsigned long n, u32 seed,
		      struct timed *create, struct timed *steady)
{
	const void *k[BATCH];
	unsigned long tm[BATCH], i, j, m;
	u64 rng = 0x2545f4914f6cdd1dull ^ seed, t0, t1;
	pgoff_t ix[BATCH];
	long cs;

	for (i = 0; i < nfiles; i += m) {
		m = nfiles - i < BATCH ? nfiles - i : BATCH;
		for (j = 0; j < m; j++) {
			k[j] = file_key(0, i + j);
			ix[j] = mix32((u32)(i + j) + seed);
			tm[j] = T0 + (i + j) / JIFFY_PAGES;
		}
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < m; j++)
			probe(&devs[0], k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(create, (double)(t1 - t0) / m, disturbances() != cs);
		table_grow();
	}
	for (i = 0; i < n; i += BATCH) {
		for (j = 0; j < BATCH; j++) {
			unsigned long c = nfiles + i + j;

			k[j] = file_key(0, rng_next(&rng) % nfiles);
			ix[j] = mix32((u32)c + seed);
			tm[j] = T0 + c / JIFFY_PAGES;
		}
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < BATCH; j++)
			probe(&devs[0], k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(steady, (double)(t1 - t0) / BATCH, disturbances() != cs);
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
	printf("F files on one device, each given one page first (\"first page of a file\": its tracker is made and inserted in the table), then %s transitions, each a new page of a file picked at random (\"new page, random file\"); batches of %d, median, p99 and p99.9 over batches, %lu fill(s) per round, %u rounds. The table is the hash stand-in; it grows between batches.\n\n",
	       with_commas(n, b1), BATCH, reps, rounds);
	printf("| files F | new page, random file: median ns | p99 ns | p99.9 ns | round medians ns | max batch µs | disturbed batches | first page of a file: median ns | p99 ns | table buckets | runs tracked |\n");
	printf("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"files\", \"batch\": %d, \"rounds\": "
		"%u, \"transitions\": %lu, \"fills_per_round\": %lu, "
		"\"unit\": \"ns per transition\", \"rows\": [\n", BATCH, rounds,
		n, reps);
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
				world_reset(nf + n, nf + 1);
				files_rep(nf, n, 991 + r * 100 + rep, &create,
					  &steady);
			}
		}
		mr = mem_note(&devs[0]);
		snprintf(mr->what, sizeof(mr->what),
			 "random files, F = %s, %s pages", with_commas(nf, b1),
			 with_commas(nf + n, b2));
		fprintf(f, "%s{\"files\": %lu, \"table_buckets\": %lu, "
			"\"runs_tracked\": %lu, \"trackers\": %lu",
			si ? ",\n" : "", nf, mr->buckets, mr->runs,
			mr->trackers);
		ss = json_timed(f, "ns", &steady);
		sc = json_timed(f, "create_ns", &create);
		fprintf(f, "}");
		printf("| %s | %.0f | %.0f | %.0f | ", with_commas(nf, b1),
		       ss.median, ss.p99, ss.p999);
		print_rounds(steady.round_median, steady.rounds, 1);
		printf(" | %.1f | %lu of %lu | %.0f | %.0f | %lu | %lu |\n",
		       ss.max * BATCH / 1e3, steady.disturbed, steady.n,
		       sc.median, sc.p99, mr->buckets, mr->runs);
		fflush(stdout);
	}
	fprintf(f, "\n], ");
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(0, 0);
	timed_free(&create);
	timed_free(&steady);
}

/* ---- 3. one thread against two ---- */

struct worker {
	pthread_t th;
	unsigned int slot;	/* its per-CPU caches */
	struct dev *d;
	unsigned long first_file, nfiles, n;
	u32 seed;
	pthread_barrier_t *go;
	struct timed t;
	u64 ns, cpu;
} __attribute__((aligned(CACHELINE)));

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	const void *k[BATCH];
	unsigned long tm[BATCH], i, j;
	u64 rng = 0x9e3779b97f4a7c15ull ^ w->seed, t0, t1, start;
	pgoff_t ix[BATCH];
	long cs;

	this_cpu = &cpus[w->slot];
	pthread_barrier_wait(w->go);
	w->cpu = cpu_ns();
	start = now_ns();
	for (i = 0; i < w->n; i += BATCH) {
		for (j = 0; j < BATCH; j++) {
			unsigned long c = w->nfiles + i + j;

			k[j] = file_key(0, w->first_file +
					rng_next(&rng) % w->nfiles);
			ix[j] = mix32((u32)c + w->seed);
			tm[j] = T0 + c / JIFFY_PAGES;
		}
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < BATCH; j++)
			probe(w->d, k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(&w->t, (double)(t1 - t0) / BATCH, disturbances() != cs);
	}
	w->ns = now_ns() - start;
	w->cpu = cpu_ns() - w->cpu;
	return NULL;
}

enum thread_cfg { ONE_THREAD, TWO_SHARED, TWO_OWN, NR_CFG };

static const char * const cfg_names[NR_CFG] = {
	"1 thread, 1 device",
	"2 threads, same device (one lock, one aipu_track)",
	"2 threads, a device each (own lock, own aipu_track)",
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
	u64 cpu = 0;
	unsigned int nw = cfg == ONE_THREAD ? 1 : 2, i;
	pthread_barrier_t go;
	unsigned long f, before;
	u64 t0, t1;
	size_t j;

	world_reset(0, 0);
	for (i = 0; i < nw; i++) {
		struct worker *w = &workers[i];

		w->slot = i;
		w->d = &devs[cfg == TWO_OWN ? i : 0];
		w->first_file = i * nfiles;
		w->nfiles = nfiles;
		w->n = n;
		w->seed = seed + i * 7919;
		w->go = &go;
		timed_clear(&w->t);
		w->t.s.cap = n / BATCH + 1;
		w->t.s.v = realloc(w->t.s.v, w->t.s.cap * sizeof(float));
		if (!w->t.s.v)
			die("out of memory for samples");
		cache_reserve(&cpus[i].runs, n + nfiles);
		cache_reserve(&cpus[i].maps, nfiles + 1);
		/* Every tracker exists before the clock starts. */
		this_cpu = &cpus[i];
		for (f = 0; f < nfiles; f++)
			probe(w->d, file_key(0, i * nfiles + f),
			      mix32((u32)f + w->seed), T0);
		table_grow();
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
	printf("Each thread dirties %s new pages, each of a random file among its own %lu (trackers made before the clock starts, so the table is only read); total transitions per second from the start barrier to the last thread's end; %u rounds, the three set-ups taken in turn within a round. \"CPU ns per transition\": the threads' CPU time (CLOCK_THREAD_CPUTIME_ID) per transition, and \"CPUs busy\": their CPU time over the wall time, both medians of rounds: on a shared host the wall-clock rate also measures how much CPU the threads got. Batch figures: ns per transition per batch of %d (wall), pooled over threads and rounds. The host has 2 cores, shared with other work.\n\n",
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
	fprintf(f, "\n], ");
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(0, 0);
	for (c = 0; c < 2; c++)
		timed_free(&workers[c].t);
}

/* ---- 4. phase 1 and phase 2 holds against the backlog ---- */

/* Every run back on the age list, as before the scan (untimed). */
static void scan_undo(struct aipu_track *tr)
{
	struct aipu_run *r;

	track_end_pass(tr, 0);
	if (!list_empty(&tr->waiting))
		die("the scan left due runs on the age list");
	list_splice_init(&tr->pending, &tr->waiting);
	list_for_each_entry(r, &tr->waiting, lru)
		r->state = AIPU_WAITING;
}

/*
 * Phase 1 as src/flusher.c's scan() runs it under policy aipu (no
 * max_batch): lock, track_scan() with a budget of @budget entries, unlock,
 * until it is done.  Each hold into @holds; returns the holds.
 */
static unsigned long scan_timed(struct dev *d, unsigned long cutoff,
				unsigned int budget, struct timed *holds)
{
	unsigned long n = 0;
	unsigned int b;
	bool done;
	u64 t0, t1;
	long cs;

	do {
		b = budget;
		cs = disturbances();
		pthread_spin_lock(&d->lock);
		t0 = now_ns();
		done = track_scan(&d->tr, cutoff, false, 0, &b);
		t1 = now_ns();
		pthread_spin_unlock(&d->lock);
		timed_add(holds, t1 - t0, disturbances() != cs);
		n++;
	} while (!done);
	return n;
}

/* The whole scan in one hold: its wall time, and its CPU time in *@cpu. */
static double scan_one_hold(struct dev *d, unsigned long cutoff, double *cpu)
{
	unsigned int b = UINT32_MAX;
	u64 c0, c1, t0, t1;

	c0 = cpu_ns();
	pthread_spin_lock(&d->lock);
	t0 = now_ns();
	if (!track_scan(&d->tr, cutoff, false, 0, &b))
		die("an unlimited scan ran out of budget");
	t1 = now_ns();
	pthread_spin_unlock(&d->lock);
	c1 = cpu_ns();
	*cpu = c1 - c0;
	return t1 - t0;
}

/*
 * Phase 2 as issue_pending() and issue_one() hold the lock: track_take() in
 * one hold, track_done() (with the counters issue_one() updates) in another.
 * At most @max takes.  Returns the takes.
 */
static unsigned long take_timed(struct dev *d, unsigned long cutoff,
				unsigned long max, struct timed *take,
				struct timed *done)
{
	unsigned long n = 0, t0, t1, t2, t3;
	struct aipu_run *r;
	bool disturbed;
	long cs;

	while (n < max) {
		cs = disturbances();
		pthread_spin_lock(&d->lock);
		t0 = now_ns();
		r = track_take(&d->tr, cutoff, false);
		t1 = now_ns();
		pthread_spin_unlock(&d->lock);
		if (!r)
			break;
		pthread_spin_lock(&d->lock);
		t2 = now_ns();
		track_written(&d->tr, r->kind == AIPU_PAGES ?
			      r->end - r->start : 0, 30000);
		track_done(&d->tr, r);
		t3 = now_ns();
		pthread_spin_unlock(&d->lock);
		disturbed = disturbances() != cs;
		timed_add(take, t1 - t0, disturbed);
		timed_add(done, t3 - t2, disturbed);
		n++;
	}
	return n;
}

static const char * const layout_names[2] = {
	"in order", "scattered",
};

static void scan_row(FILE *f, unsigned long n, int layout, bool first)
{
	static struct timed batched, take, done;
	unsigned long max_takes = quick ? 100000 : 1000000, holds = 0, takes;
	unsigned long cutoff = T0 + n / JIFFY_PAGES + 1;	/* all due */
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], wmin = 1e18;
	struct stats sb, stk, sd;
	unsigned int r;
	struct gen g;
	char b1[32], b2[32];

	world_reset(n, files_for(P_RANDOM_SPREAD, n) + 1);
	if (layout)
		cache_scatter(&cpus[0].runs, n, 0x5ca77e7 + n);
	gen_init(&g, P_RANDOM_SPREAD, 0, n, 5 + n);
	fill(&devs[0], &g, n, NULL, 0);
	timed_clear(&batched);
	timed_clear(&take);
	timed_clear(&done);
	for (r = 0; r < rounds; r++) {
		timed_round(&batched);
		holds = scan_timed(&devs[0], cutoff, AIPU_SCAN_BATCH,
				   &batched);
		scan_undo(&devs[0].tr);
		wall[r] = scan_one_hold(&devs[0], cutoff, &cpu[r]);
		if (wall[r] < wmin)
			wmin = wall[r];
		scan_undo(&devs[0].tr);
	}
	scan_timed(&devs[0], cutoff, UINT32_MAX, &take);
	timed_clear(&take);
	takes = take_timed(&devs[0], cutoff, max_takes, &take, &done);
	fprintf(f, "%s{\"n\": %lu, \"layout\": \"%s\", \"files\": %lu, "
		"\"holds\": %lu, \"takes\": %lu", first ? "" : ",\n", n,
		layout_names[layout], files_for(P_RANDOM_SPREAD, n), holds,
		takes);
	sb = json_timed(f, "batched", &batched);
	json_doubles(f, "one_hold_wall", wall, rounds);
	json_doubles(f, "one_hold_cpu", cpu, rounds);
	stk = json_timed(f, "take", &take);
	sd = json_timed(f, "done", &done);
	fprintf(f, "}");
	printf("| %s | %s | %s | %.2f | %.2f | %.1f | %.1f | %.1f | %lu | %.0f | %.0f | %.2f | %.1f | %.1f |\n",
	       with_commas(n, b1), layout_names[layout], with_commas(holds, b2),
	       sb.median / 1e3, sb.p99 / 1e3, sb.p999 / 1e3, sb.max / 1e3,
	       sb.round_max / 1e3, batched.disturbed, wmin / 1e3,
	       median_of(cpu, rounds) / 1e3, stk.p99 / 1e3, stk.max / 1e3,
	       sd.max / 1e3);
	fflush(stdout);
}

/* Phase 2 at its worst: every take folds AIPU_ABSORB_MAX neighbours. */
static void absorb_row(FILE *f)
{
	unsigned long n = AIPU_RUNS_PER_TRACKER_MAX, takes = 0;
	struct timed take = { 0 }, done = { 0 }, scan = { 0 };
	struct stats stk, sd;
	unsigned int r;
	struct gen g;
	char b1[32];

	for (r = 0; r < rounds; r++) {
		world_reset(n, 2);
		gen_init(&g, P_SEQ_1, 0, n, 1);
		fill(&devs[0], &g, n, NULL, 0);
		scan_timed(&devs[0], T0 + n + 1, UINT32_MAX, &scan);
		timed_round(&take);
		takes = take_timed(&devs[0], T0 + n + 1, n, &take, &done);
	}
	fprintf(f, ",\n\"absorb\": {\"n\": %lu, \"absorb_max\": %d, "
		"\"takes_per_round\": %lu", n, AIPU_ABSORB_MAX, takes);
	stk = json_timed(f, "take", &take);
	sd = json_timed(f, "done", &done);
	fprintf(f, "}, ");
	printf("\nPhase 2 folding neighbours: one file written a page a jiffy, %s one-page runs (the cap), all due, so each take folds up to AIPU_ABSORB_MAX = %d pending neighbours into the run it writes: %lu takes a round, %u rounds. Take hold: median %.1f µs, p99 %.1f µs, max %.1f µs (round maxima: ",
	       with_commas(n, b1), AIPU_ABSORB_MAX, takes, rounds,
	       stk.median / 1e3, stk.p99 / 1e3, stk.max / 1e3);
	print_rounds(take.round_max, take.rounds, 1e3);
	printf(" µs; %lu of %lu disturbed); done hold max %.1f µs.\n",
	       take.disturbed, take.n, sd.max / 1e3);
	timed_free(&take);
	timed_free(&done);
	timed_free(&scan);
}

static void measure_scan(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("scan");
	unsigned int si;
	char b1[32];
	int layout;

	printf("\n## 4. Longest lock hold of phase 1 (and phase 2) against the backlog\n\n");
	printf("N due pages: random single-page runs spread over files of at most 32,768 runs (under the cap of %d), then phase 1 as src/flusher.c runs it: track_scan() with a budget of AIPU_SCAN_BATCH = %d entries a hold (read from src/flusher.c), the lock dropped in between, each hold timed; %u rounds on the same backlog, put back on the age list in between (untimed). \"max (rounds)\": the median of the rounds' longest holds. For contrast the same backlog moved in one hold (an unlimited budget): its wall time (least of the rounds) and CPU time (median; the thread may be disturbed in a hold that long). Phase 2: track_take() in one hold and track_done() in the next, as issue_pending() and issue_one() do, for the first %s runs. Layout \"in order\": runs allocated in address order, so the age list walks memory in order; \"scattered\": runs handed out in random address order (a slab after long use). Holds in µs, disturbed ones left out.\n\n",
	       AIPU_RUNS_PER_TRACKER_MAX, AIPU_SCAN_BATCH, rounds,
	       with_commas(quick ? 100000 : 1000000, b1));
	printf("| backlog N | layout | phase 1 holds a pass | batched: median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds | one hold: wall µs | CPU µs | phase 2 take: p99 µs | max µs | done: max µs |\n");
	printf("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"scan\", \"scan_batch\": %d, "
		"\"rounds\": %u, \"unit\": \"ns per hold\", \"rows\": [\n",
		AIPU_SCAN_BATCH, rounds);
	for (si = 0; si < nsizes; si++)
		for (layout = 0; layout < 2; layout++)
			scan_row(f, sizes[si], layout, !si && !layout);
	fprintf(f, "\n]");
	world_reset(0, 0);
	absorb_row(f);
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(0, 0);
}

/* ---- 5. eviction holds ---- */

/*
 * File A (the one killed) and file B (the rest of the device) get @n random
 * one-page runs each, alternately, so that A's runs sit between B's on the
 * age list, as files dirtied together do.
 */
static struct aipu_tracker *kill_setup(unsigned long n, u32 seed)
{
	unsigned long i;

	world_reset(2 * n, 3);
	for (i = 0; i < 2 * n; i++)
		probe(&devs[0], file_key(0, i & 1), mix32((u32)(i >> 1) + seed),
		      T0 + i / JIFFY_PAGES);
	return track_find(&devs[0].tr, file_key(0, 0));
}

/* aipu_mapping_kill(): track_kill() a batch a hold, until it is done. */
static unsigned long kill_timed(struct aipu_tracker *t, struct timed *holds)
{
	unsigned long n = 0;
	bool done;
	u64 t0, t1;
	long cs;

	do {
		cs = disturbances();
		pthread_spin_lock(&devs[0].lock);
		t0 = now_ns();
		done = track_kill(&devs[0].tr, t, AIPU_KILL_BATCH);
		t1 = now_ns();
		pthread_spin_unlock(&devs[0].lock);
		timed_add(holds, t1 - t0, disturbances() != cs);
		n++;
	} while (!done);
	return n;
}

static double kill_one_hold(struct aipu_tracker *t, double *cpu)
{
	u64 c0, c1, t0, t1;

	c0 = cpu_ns();
	pthread_spin_lock(&devs[0].lock);
	t0 = now_ns();
	if (!track_kill(&devs[0].tr, t, ~0UL))
		die("an unlimited kill left runs");
	t1 = now_ns();
	pthread_spin_unlock(&devs[0].lock);
	c1 = cpu_ns();
	*cpu = c1 - c0;
	return t1 - t0;
}

static void measure_kill(void)
{
	static const unsigned long sizes[] = {
		1024, 4096, 16384, AIPU_RUNS_PER_TRACKER_MAX,
	};
	unsigned int nr = quick ? 3 : 5 * rounds, si, r;
	struct noise nz = noise_begin();
	struct timed batched = { 0 };
	FILE *f = json_open("kill");
	char b1[32], b2[32];

	if (nr > MAX_ROUNDS)
		nr = MAX_ROUNDS;
	printf("\n## 5. Longest lock hold of eviction\n\n");
	printf("A file with N one-page runs (its runs alternate on the age list with another file's N), killed as aipu_mapping_kill() does: track_kill() freeing at most AIPU_KILL_BATCH = %d runs a hold (read from src/mapping.c), each hold timed; for contrast in one hold (an unlimited budget): wall time (least of the rounds) and CPU time (median). %u rounds, each on a fresh fill; holds in µs, disturbed ones left out; \"max (rounds)\": the median of the rounds' longest holds.\n\n",
	       AIPU_KILL_BATCH, nr);
	printf("| runs N | holds | batched: median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds | one hold: wall µs | CPU µs |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"kill\", \"kill_batch\": %d, "
		"\"rounds\": %u, \"unit\": \"ns per hold\", \"rows\": [\n",
		AIPU_KILL_BATCH, nr);
	for (si = 0; si < ARRAY_SIZE(sizes); si++) {
		unsigned long n = sizes[si], holds = 0;
		double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], wmin = 1e18;
		struct stats sb;

		timed_clear(&batched);
		for (r = 0; r < nr; r++) {
			timed_round(&batched);
			holds = kill_timed(kill_setup(n, 11 + r), &batched);
			wall[r] = kill_one_hold(kill_setup(n, 11 + r), &cpu[r]);
			if (wall[r] < wmin)
				wmin = wall[r];
		}
		fprintf(f, "%s{\"n\": %lu, \"holds\": %lu", si ? ",\n" : "", n,
			holds);
		sb = json_timed(f, "batched", &batched);
		json_doubles(f, "one_hold_wall", wall, nr);
		json_doubles(f, "one_hold_cpu", cpu, nr);
		fprintf(f, "}");
		printf("| %s | %s | %.2f | %.2f | %.1f | %.1f | %.1f | %lu | %.0f | %.0f |\n",
		       with_commas(n, b1), with_commas(holds, b2),
		       sb.median / 1e3, sb.p99 / 1e3, sb.p999 / 1e3,
		       sb.max / 1e3,
		       sb.round_max / 1e3, batched.disturbed, wmin / 1e3,
		       median_of(cpu, nr) / 1e3);
		fflush(stdout);
	}
	fprintf(f, "\n], ");
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(0, 0);
	timed_free(&batched);
}

/* ---- 7. not batched: phase 2 putting a whole-file run's pages back ---- */

enum rq_case { RQ_GAPS, RQ_COVERED, RQ_NR };

static const char * const rq_names[RQ_NR] = {
	"runs on every other page, the pages between dirtied after the shrinker",
	"a page a jiffy: every page its own run",
};

static const char * const rq_ids[RQ_NR] = { "gaps", "covered" };

/*
 * A file with @n one-page runs is degraded by one shrinker batch
 * (track_degrade(), as src/shrink.c calls it): its whole-file run is queued
 * at the oldest time and the rest of its runs stay.  RQ_GAPS: the runs are on
 * even pages and the odd pages are dirtied afterwards (no run: the whole-file
 * run covers them).  The whole-file run comes due, phase 2 takes it, finds
 * every page still dirty (policy kernel writes nothing; under a writing
 * policy, pages locked or under writeback) and, as requeue_dirty() in
 * src/flusher.c does for each contiguous dirty extent, calls track_requeue()
 * once for the extent, in one hold of the lock.  Returns its wall time; CPU
 * time, pages put back and runs made in the others.
 */
static double requeue_once(enum rq_case c, unsigned long n, double *cpu,
			   unsigned long *put_back, unsigned long *made)
{
	struct aipu_track *tr = &devs[0].tr;
	unsigned long i, before, end = c == RQ_GAPS ? 2 * n : n;
	unsigned int b = UINT32_MAX;
	struct aipu_tracker *t;
	u64 c0, c1, t0, t1;
	struct aipu_run *r;

	world_reset(2 * n, 2);
	t = track_get(tr, file_key(0, 0), NULL);
	for (i = 0; i < n; i++)
		track_pages(tr, t, c == RQ_GAPS ? 2 * i : i, 1, T0 + 1 + i,
			    false);
	track_degrade(tr, t, AIPU_SHRINK_BATCH, T0 + 1 + n);
	if (c == RQ_GAPS)
		for (i = 0; i < n; i++)
			track_pages(tr, t, 2 * i + 1, 1, T0 + 2 + n, false);
	/* Only the whole-file run, at the oldest time, is due. */
	track_scan(tr, T0 + 2, false, 0, &b);
	r = track_take(tr, T0 + 2, false);
	if (!r || r->kind != AIPU_WHOLE)
		die("requeue: the whole-file run was not taken first");
	before = tr->st.runs_tracked;
	c0 = cpu_ns();
	pthread_spin_lock(&devs[0].lock);
	t0 = now_ns();
	*put_back = track_requeue(tr, r, 0, end);
	t1 = now_ns();
	pthread_spin_unlock(&devs[0].lock);
	c1 = cpu_ns();
	*made = tr->st.runs_tracked - before;
	*cpu = c1 - c0;
	track_done(tr, r);
	return t1 - t0;
}

static void measure_requeue(void)
{
	static const unsigned long sizes[RQ_NR][4] = {
		{ 1024, 4096, 16384, AIPU_RUNS_PER_TRACKER_MAX / 2 },
		{ 1024, 4096, 16384, AIPU_RUNS_PER_TRACKER_MAX },
	};
	struct noise nz = noise_begin();
	FILE *f = json_open("requeue");
	unsigned int si, r;
	char b1[32];
	int c;

	printf("\n## 7. Not batched: phase 2 putting back a whole-file run's dirty pages\n\n");
	printf("A file with N one-page runs loses one shrinker batch of AIPU_SHRINK_BATCH = %d runs to track_degrade() (read from src/shrink.c): its whole-file run is queued at the device's oldest time, its other runs stay. The whole-file run comes due, phase 2 takes it and finds its pages still dirty (policy kernel writes nothing; under a writing policy, pages locked or under writeback), and requeue_dirty() (src/flusher.c) calls track_requeue() once per contiguous dirty extent, each call in one hold of the lock. Here the extent is the whole file. \"gaps\": runs on even pages, odd pages dirtied after the degrade (they get no run: the whole-file run covers them), so track_requeue() makes a run per gap; \"covered\": a page a jiffy, every page its own run, so it walks them. %u rounds; wall time (least of the rounds) and CPU time (median).\n\n",
	       AIPU_SHRINK_BATCH, rounds);
	printf("| case | runs N | pages put back | runs made | one hold: wall µs | CPU µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"requeue\", \"shrink_batch\": %d, "
		"\"rounds\": %u, \"unit\": \"ns per hold\", \"rows\": [\n",
		AIPU_SHRINK_BATCH, rounds);
	for (c = 0; c < RQ_NR; c++) {
		for (si = 0; si < 4; si++) {
			unsigned long n = sizes[c][si], back = 0, made = 0;
			double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], wmin = 1e18;

			for (r = 0; r < rounds; r++) {
				wall[r] = requeue_once(c, n, &cpu[r], &back,
						       &made);
				if (wall[r] < wmin)
					wmin = wall[r];
			}
			fprintf(f, "%s{\"case\": \"%s\", \"case_name\": \"%s\", "
				"\"n\": %lu, \"put_back\": %lu, \"made\": %lu",
				c || si ? ",\n" : "", rq_ids[c], rq_names[c], n,
				back, made);
			json_doubles(f, "wall", wall, rounds);
			json_doubles(f, "cpu", cpu, rounds);
			fprintf(f, "}");
			printf("| %s | %s | %lu | %lu | %.0f | %.0f |\n",
			       rq_ids[c], with_commas(n, b1), back, made,
			       wmin / 1e3, median_of(cpu, rounds) / 1e3);
			fflush(stdout);
		}
	}
	fprintf(f, "\n], ");
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(0, 0);
}

/* ---- 6. memory ---- */

static void measure_memory(void)
{
	size_t rs = sizeof(struct aipu_run), ms = sizeof(struct bench_mapping);
	FILE *f = json_open("memory");
	unsigned int i;

	printf("\n## 6. Memory per tracked page\n\n");
	printf("sizeof(struct aipu_run) = %zu B; sizeof(struct aipu_tracker) = %zu B, and as the kernel allocates it (struct aipu_mapping: + rhash_head + rcu_head) %zu B. Bytes = runs x %zu + trackers x %zu, divided by the pages in runs (\"per tracked page\") and by the pages dirtied (they differ once a file fell back to its whole-mapping run at the cap). Not counted: the table's buckets (8 B each, 1.3 to 2.7 a tracker), slab rounding and memcg's per-object pointer (SLAB_ACCOUNT). States at the end of the last fill of tables 1 and 2. Target: 16 B a page.\n\n",
	       rs, sizeof(struct aipu_tracker), ms, rs, ms);
	printf("| state | pages dirtied | pages in runs | runs | trackers | B per tracked page | B per dirtied page |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"memory\", \"sizeof_run\": %zu, "
		"\"sizeof_tracker\": %zu, \"sizeof_mapping\": %zu, "
		"\"rows\": [\n", rs, sizeof(struct aipu_tracker), ms);
	for (i = 0; i < nr_mem_rows; i++) {
		struct mem_row *m = &mem_rows[i];
		double bytes = (double)m->runs * rs + (double)m->trackers * ms;
		double per = m->pages ? bytes / m->pages : 0;
		double perd = m->dirtied ? bytes / m->dirtied : 0;

		printf("| %s | %lu | %lu | %lu | %lu | %.1f | %.1f |\n",
		       m->what, m->dirtied, m->pages, m->runs, m->trackers,
		       per, perd);
		fprintf(f, "%s{\"state\": \"%s\", \"pages_dirtied\": %lu, "
			"\"pages_tracked\": %lu, \"runs\": %lu, \"trackers\": "
			"%lu, \"fallbacks\": %lu, \"table_buckets\": %lu, "
			"\"bytes\": %.0f, \"bytes_per_tracked_page\": %.2f, "
			"\"bytes_per_dirtied_page\": %.2f}", i ? ",\n" : "",
			m->what, m->dirtied, m->pages, m->runs, m->trackers,
			m->fallbacks, m->buckets, bytes, per, perd);
	}
	fprintf(f, "\n]}\n");
	json_close(f);
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
	u64 t0, t1;
	long cs;

	for (i = 0; i < n; i++) {
		if (i % (n / 4) == 0)
			timed_round(&t);
		cs = disturbances();
		pthread_spin_lock(&devs[0].lock);
		t0 = now_ns();
		fixed_work(iters);
		t1 = now_ns();
		pthread_spin_unlock(&devs[0].lock);
		timed_add(&t, t1 - t0, disturbances() != cs);
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
		printf("\n## 0. The host's noise: holds of a fixed computation\n\n");
		printf("Before and after the measurements: holds of the lock around a fixed chain of dependent multiplies (no memory traffic), calibrated to about 1 µs and 10 µs, timed and filtered exactly as the real holds (disturbed ones left out). Their spread is the host's (the hypervisor's steal, interrupts, the other core's tenant), not aipu's: a real hold's maximum no higher than these maxima says nothing about the code. Holds in µs; \"max (rounds)\": the median of four quarters' maxima.\n\n");
		printf("| when | work µs | holds | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	}
	noise_row(when, 1000, quick ? 20000 : 200000, it1);
	noise_row(when, 10000, quick ? 4000 : 100000, it10);
}

static void noise_finish(void)
{
	if (!noise_json)
		return;
	fprintf(noise_json, "\n]}\n");
	json_close(noise_json);
	noise_json = NULL;
}

/* ---- main ---- */

static double timer_overhead(void)
{
	struct timed t = { 0 };
	unsigned int i;
	double med;
	u64 t0, t1;

	for (i = 0; i < 100000; i++) {
		pthread_spin_lock(&devs[0].lock);
		t0 = now_ns();
		t1 = now_ns();
		pthread_spin_unlock(&devs[0].lock);
		timed_add(&t, t1 - t0, false);
	}
	med = stats_of(&t).median;
	timed_free(&t);
	return med;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: scale [--quick] [--rounds N] [--out DIR] [--only LIST]\n"
		"  --quick     sizes up to 100,000, fewer rounds (a few seconds)\n"
		"  --rounds N  rounds per measurement (default 3, 1..12)\n"
		"  --out DIR   an existing directory for the JSON files (default .)\n"
		"  --only LIST comma-separated: noise,runs,files,threads,scan,kill,\n"
		"              requeue\n"
		"              (the memory table comes with runs and files)\n");
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
	for (i = 0; i < NDEVS; i++) {
		pthread_spin_init(&devs[i].lock, PTHREAD_PROCESS_PRIVATE);
		track_init(&devs[i].tr);
	}
	world_reset(0, 0);
	start = now_ns();
	timer = timer_overhead();
	printf("# aipu scale benchmark: src/track.c in user space\n\n");
	printf("Constants: AIPU_SCAN_BATCH = %d (src/flusher.c), AIPU_KILL_BATCH = %d (src/mapping.c), AIPU_SHRINK_BATCH = %d (src/shrink.c), AIPU_RUNS_PER_TRACKER_MAX = %d, AIPU_ABSORB_MAX = %d (include/aipu_track.h). Mode: %s, %u rounds. Two clock_gettime() calls back to back inside a hold: %.0f ns (median), included in every hold below.\n\n",
	       AIPU_SCAN_BATCH, AIPU_KILL_BATCH, AIPU_SHRINK_BATCH,
	       AIPU_RUNS_PER_TRACKER_MAX, AIPU_ABSORB_MAX,
	       quick ? "quick" : "full", rounds, timer);
	printf("The tracker table is a STAND-IN for the kernel's rhashtable (a chained hash table, 64 buckets, doubled above 75%% load between timed batches as rhashtable's deferred worker would), not the kernel's code. Runs and trackers come from per-CPU free lists reserved before timing (the slab's fast path). A batch or hold during which the thread was switched out or took a page fault (\"disturbed\", read with getrusage() outside the timed window) is counted apart and left out of percentiles and maxima: the kernel holds the lock with interrupts off. Interrupts and the hypervisor's steal are not detected.\n");
	fflush(stdout);
	if (wanted(only, "noise"))
		measure_noise("before");
	if (wanted(only, "runs"))
		measure_runs(full, nsz);
	if (wanted(only, "files"))
		measure_files(nfiles, nfs);
	if (wanted(only, "threads"))
		measure_threads();
	if (wanted(only, "scan"))
		measure_scan(full, nsz);
	if (wanted(only, "kill"))
		measure_kill();
	if (nr_mem_rows)
		measure_memory();
	if (wanted(only, "requeue"))
		measure_requeue();
	if (wanted(only, "noise")) {
		printf("\n## 0. (again) The host's noise, after\n\n");
		printf("| when | work µs | holds | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
		measure_noise("after");
		noise_finish();
	}
	f = json_open("meta");
	fprintf(f, "{\"mode\": \"%s\", \"rounds\": %u, \"batch\": %d, "
		"\"scan_batch\": %d, \"kill_batch\": %d, \"shrink_batch\": %d, "
		"\"runs_per_tracker_max\": %d, \"absorb_max\": %d, "
		"\"timer_ns\": %.1f, \"seconds\": %.1f, \"hash\": \"stand-in "
		"for the kernel's rhashtable: chained, 64 buckets, doubling "
		"above 75%% load between timed batches, no shrinking\"}\n",
		quick ? "quick" : "full", rounds, BATCH, AIPU_SCAN_BATCH,
		AIPU_KILL_BATCH, AIPU_SHRINK_BATCH, AIPU_RUNS_PER_TRACKER_MAX,
		AIPU_ABSORB_MAX, timer, (now_ns() - start) / 1e9);
	json_close(f);
	fprintf(stderr, "scale: done in %.1f s\n", (now_ns() - start) / 1e9);
	return 0;
}
