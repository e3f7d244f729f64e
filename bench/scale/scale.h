/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The scale benchmark's shared header (scale.c says what the benchmark
 * does): the includes and constants, the types more than one file uses,
 * the inline helpers of the timed paths (the clock, the generators'
 * randomness, a device's lock, the probe, a timed hold) and the
 * declarations of what each file gives the others.
 */
#ifndef AIPU_BENCH_SCALE_H
#define AIPU_BENCH_SCALE_H

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

/* scale.c (die() is __noreturn, as GCC found it when it was static) */
void __noreturn die(const char *fmt, ...);
extern const char *out_dir;
extern unsigned int rounds;
extern bool quick;

static inline u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CPU time of this thread: a system call, never inside a timed window. */
static inline u64 cpu_ns(void)
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
static inline long disturbances(void)
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

/* world.c */
void perm_init(struct perm *p, u64 n, u64 seed);

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

/* ---- stats.c: samples, timed sets, statistics, output ---- */

struct samples {
	float *v;
	size_t n, cap;
};

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

void timed_clear(struct timed *t);
void timed_round(struct timed *t);
void timed_add(struct timed *t, double ns, bool disturbed);
void timed_free(struct timed *t);

struct stats {
	size_t n;
	double median, p99, p999, max, mean, round_max;
};

int cmp_float(const void *a, const void *b);
double pct(const float *v, size_t n, double p);
double median_of(const double *v, unsigned int n);
struct stats stats_of(struct timed *t);

FILE *json_open(const char *name);
void json_close(FILE *f);
void json_doubles(FILE *f, const char *name, const double *v,
		  unsigned int n);
struct stats json_timed(FILE *f, const char *name, struct timed *t);
const char *with_commas(unsigned long v, char *buf);

/* What else was going on while a table was measured. */
struct noise {
	u64 t;
	long cs;
	double steal;
};

struct noise noise_begin(void);
void noise_end(FILE *f, const struct noise *n);
void table_end(FILE *f, const struct noise *nz);

/* ---- alloc.c: the slab's per-CPU caches and the tracker table ---- */

enum {
	C_SEG64, C_SEG512, C_SEG4096, C_CHUNK, C_MOVED, C_RETRY, C_TRACKER,
	NR_CACHES
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

extern const size_t cache_sizes[NR_CACHES];
extern struct cpu cpus[NCPUS];
extern __thread struct cpu *this_cpu;

static inline struct bench_mapping *to_mapping(struct aipu_file *t)
{
	return container_of(t, struct bench_mapping, t);
}

void cache_reset(struct cache *c, bool release);
void cache_scatter(struct cache *c, unsigned long n, u64 seed);
void caches_ensure(void);
void objects_live(long *n);

struct tracker_table {
	struct hlist_head *b;
	unsigned int bits;
	unsigned long nelems;
};

extern struct tracker_table table;

void table_init(void);

/* ---- world.c: devices and their lock, generating transitions ---- */

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

extern struct dev devs[NDEVS];
/* The wheel's slot width in jiffies: the module's, AIPU_SLOT_JIFFIES. */
extern unsigned long module_slot, slot_width;

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
 * none) and aipu_queue_pages() for the page.  The file's lock is taken
 * inline, as src/hook.c takes aipu_file_lock_of(t) (and as the compiler
 * inlined aipu_file_lock() here when the benchmark was one file).
 */
static inline void probe(struct dev *d, const void *key, pgoff_t index,
			 unsigned long time)
{
	struct aipu_file *t = aipu_file_lookup(key);
	int r = AIPU_FAST_NO;

	if (t) {
		pthread_spin_lock(&to_mapping(t)->lock);
		r = aipu_queue_pages_fast(t, index, 1, time,
					  &d->fast[this_cpu - cpus].dl, false);
		pthread_spin_unlock(&to_mapping(t)->lock);
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

void dev_fold(struct dev *d);
void world_reset(bool release);

enum pattern {
	P_RANDOM_ONE,		/* every page of one file once, random order */
	P_RANDOM_SPREAD,	/* the same over files of at most SPREAD pages */
	P_RANDOM_SPARSE,	/* random pages anywhere in 2^32: a chunk each */
	P_SEQ_1024,		/* sequential, a new jiffy every 1,024 pages */
	P_SEQ_1,		/* sequential, a new jiffy every page */
	P_SMALL,		/* files of SMALL_PAGES pages, written whole */
	P_NR,
};

extern const char * const pattern_names[P_NR];
extern const char * const pattern_ids[P_NR];

struct gen {
	enum pattern p;
	unsigned int dev;
	unsigned long nfiles;
	u32 seed;
	struct perm perm;
};

unsigned long files_for(enum pattern p, unsigned long n);
void gen_init(struct gen *g, enum pattern p, unsigned int dev,
	      unsigned long n, u32 seed);
unsigned long gen_end(enum pattern p, unsigned long n);
void fill(struct dev *d, struct gen *g, unsigned long n,
	  struct timed *keep, unsigned long keep_from,
	  struct timed *holds);

/* ---- memory.c: what a device holds, table 7 ---- */

struct mem_row {
	char what[112];
	unsigned long dirtied, pages, files, fallbacks;
	long objs[NR_CACHES];
};

extern unsigned int nr_mem_rows;

struct mem_row *mem_note(struct dev *d, const char *fmt, ...);
double mem_bytes(const struct mem_row *r, bool trackers);
void measure_memory(void);

/* ---- pages.c: tables 1 to 3 ---- */

/* The batches table 1 times at least per row (meta.json: min_batches). */
unsigned long min_batches(void);
void measure_pages(const unsigned long *sizes, unsigned int nsizes);
void measure_files(const unsigned long *sizes, unsigned int nsizes);
void measure_threads(void);

/* ---- holds.c: tables 4 and 5, the flusher's holds and eviction ---- */

/* Timed sets of one backlog, pooled over rounds. */
enum hold_kind {
	H_PROBE, H_SCAN, H_TAKE, H_HANDBACK, H_END, H_FORGET, H_NR
};

extern const char * const hold_names[H_NR];

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

unsigned long scan_timed(struct dev *d, unsigned long cutoff,
			 struct timed *holds);

struct pass_counts {
	unsigned long takes, entries, batches, extents, written, pages;
};

enum took { TOOK, TOOK_NOTHING_AGAIN, NOTHING };

enum took take_one(struct dev *d, unsigned long cutoff, bool dirty,
		   struct timed *take, struct timed *handback,
		   struct pass_counts *pc);
void end_pass_timed(struct dev *d, struct timed *end, double *cpu_max);
void pass_timed(struct dev *d, unsigned long cutoff, bool dirty,
		struct timed *take, struct timed *handback,
		struct timed *end, double *end_cpu,
		struct pass_counts *pc);
void forget_timed(struct dev *d, struct timed *holds);

enum backlog { B_BIG, B_SMALL, B_SMALL_SCATTERED, B_NR };

extern const char * const backlog_names[B_NR];

void backlog_fill(enum backlog bl, unsigned long n, u32 seed,
		  struct timed *probe_holds, unsigned long *cutoff);

extern const enum pattern evict_pats[2];

/*
 * The other two that free a file's queue a budget a hold, with the same
 * drain() and budget (AIPU_DRAIN_BATCH) as eviction: the shrinker
 * (aipu_queue_degrade(), src/shrink.c) and the park of a file an umount holds
 * (aipu_queue_park(), src/flusher.c).  Each keeps calling
 * while a call frees its whole budget, as the module does for one file.
 */
enum freer { F_SHRINK, F_PARK, F_NR };

static inline unsigned long freer_call(enum freer w, struct aipu_file *t,
				       unsigned long now)
{
	if (w == F_SHRINK)
		return aipu_queue_degrade(&devs[0].tr, t, AIPU_DRAIN_BATCH,
					  now);
	return aipu_queue_park(&devs[0].tr, t, now, AIPU_DRAIN_BATCH);
}

/*
 * At 1 M pages, a pass that puts every page back: its hand-back, and its
 * longest end-of-pass hold (wall, disturbed or not, and CPU time: too long
 * to escape preemption in user space).  Measured by holds.c for
 * criterion.c.
 */
struct dirty_crit {
	struct stats hb;
	double end_wall, end_cpu;
	bool seen;
};

extern struct dirty_crit dirty_crit;
/* The slot's last hold, and stat's read of the oldest time (holds.c). */
extern double cut_crit[2];
extern struct stats oldest_st;

void measure_holds(const unsigned long *sizes, unsigned int nsizes);
void measure_evict(const unsigned long *sizes, unsigned int nsizes);

/* ---- noise.c: table 0, the host's noise ---- */

extern volatile u64 sink;

/* A chain of dependent multiplies: no memory traffic, not vectorized away. */
static inline void fixed_work(unsigned long iters)
{
	u64 x = iters;
	unsigned long i;

	for (i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + i;
	sink = x;
}

unsigned long calibrate(double ns);

extern struct stats control[2];
extern unsigned int ncontrol;

void measure_noise(const char *when);
void measure_first_touch(void);
void noise_finish(void);

/* ---- steady.c: table 6 ---- */

/* The periods table 6 counts, after the queue fills. */
#define STEADY_PERIODS	(quick ? 10 : 60)
void measure_steady(const unsigned long *sizes, unsigned int nsizes);

/* ---- repeat.c: table 8, each hold timed REPEATS times ---- */

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

struct rep_crit {
	struct rep_row control[2];	/* 10 and 40 us of work */
	unsigned int ncontrol;
	double max[EST_NR];		/* the worst at 1 M pages */
	char what[EST_NR][112];
	bool seen;
};

extern struct rep_crit rep_crit;

void measure_repeat(void);

/* ---- criterion.c: issue 14's criterion ---- */

extern bool wanted_holds;

void crit_note(const char *what, const struct stats *st);
void print_criterion(void);

#endif /* AIPU_BENCH_SCALE_H */
