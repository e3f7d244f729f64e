// SPDX-License-Identifier: GPL-2.0
/*
 * The append-only log (src/log.c) and the queue built on it, timed on the
 * host's CPU as scale.c times the former src/track.c: what a page costs to
 * record and to take, and the bytes a page, for the patterns that decide the
 * design (docs/design.md §4).
 *
 *   logbench [--max-pages N]
 *
 * Time is a simulated jiffies counter, so "one page a jiffy" is a pattern,
 * not a wait.  Appends are timed in batches of BATCH pages (the batch's time
 * divided by BATCH; median and 99th percentile over batches); phase 1 (the
 * wheel's scan and the takes it leads to) in holds of at most HOLD logs and
 * HOLD_EXTENTS extents, as the kernel's flusher would drop its lock between
 * them; the 99.9th percentile and the longest hold are reported.  Memory
 * is the segments' bytes, the same allocation sizes the kernel would use.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/jiffies.h>

#include "aipu_log.h"
#include "aipu_track_log.h"
#include "aipu_wheel.h"

#define BATCH 1000
#define HOLD 256
#define HOLD_EXTENTS 512

static long live_bytes;		/* segments */
static long dev_bytes;			/* the rest of the device queue's */

struct aipu_seg *aipu_seg_alloc(unsigned int bytes)
{
	live_bytes += bytes;
	return malloc(bytes);
}

void aipu_seg_free(struct aipu_seg *s, unsigned int bytes)
{
	live_bytes -= bytes;
	free(s);
}

/*
 * The device queue's other objects, counted at their size (the kernel's
 * slab caches round up a little: aipu_run's 80 B objects take 81.3 B).
 */
#define COUNTED_ALLOC(type, alloc, release)				\
	type *alloc(void)						\
	{								\
		dev_bytes += sizeof(type);				\
		return malloc(sizeof(type));				\
	}								\
	void release(type *p)						\
	{								\
		dev_bytes -= sizeof(type);				\
		free(p);						\
	}
COUNTED_ALLOC(struct aipu_live_chunk, aipu_live_chunk_alloc,
	      aipu_live_chunk_free)
COUNTED_ALLOC(struct aipu_moved, aipu_moved_alloc, aipu_moved_free)
COUNTED_ALLOC(struct aipu_retry, aipu_retry_alloc, aipu_retry_free)
COUNTED_ALLOC(struct aipu_ltracker, aipu_ltracker_alloc, aipu_ltracker_free)

/* Trackers by key: the key is the file's index, the table a plain array. */
static struct aipu_ltracker **table;

struct aipu_ltracker *aipu_ltracker_lookup(const void *key)
{
	return table[(uintptr_t)key];
}

int aipu_ltracker_insert(struct aipu_ltracker *t)
{
	table[(uintptr_t)t->key] = t;
	return 0;
}

void aipu_ltracker_remove(struct aipu_ltracker *t)
{
	table[(uintptr_t)t->key] = NULL;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t i = (size_t)(p * n);

	return v[i < n ? i : n - 1];
}

static unsigned long long rng = 88172645463325252ULL;

static unsigned long long xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

enum pattern { RANDOM_DENSE, RANDOM_SLOW, SEQ_SLOW, SEQ_FAST, SMALL_FILES };

static const char *const names[] = {
	"random, 100 pages a jiffy, one file",
	"random, 1 page a jiffy, one file",
	"sequential, 1 page a jiffy (a log appender)",
	"sequential, 100 pages a jiffy, one file",
	"files of 4 pages, written whole, 100 pages a jiffy",
};

struct file {
	struct aipu_log log;
	struct aipu_wheel_node node;
};

static void run(enum pattern p, unsigned long pages)
{
	unsigned long nfiles = p == SMALL_FILES ? pages / 4 : 1;
	unsigned long i, n = 0, now = -30000UL, due = 0, taken = 0, file_pages;
	struct file *f = calloc(nfiles, sizeof(*f));
	size_t nb = pages / BATCH + 1, b = 0;
	double *per = malloc(nb * sizeof(*per)), *hold = malloc((nb * 2 + 64) *
								 sizeof(*hold));
	struct aipu_extent *x = malloc(HOLD_EXTENTS * sizeof(*x));
	unsigned long long t, holds = 0;
	static struct list_head slots[64];
	struct aipu_wheel w;
	LIST_HEAD(due_logs);

	file_pages = p == SMALL_FILES ? 4 : pages * 2;
	for (i = 0; i < nfiles; i++)
		log_init(&f[i].log);
	wheel_init(&w, slots, 64, 25, now);	/* a 100-ms period at HZ=250 */
	while (n < pages) {
		t = now_ns();
		for (i = 0; i < BATCH && n < pages; i++, n++) {
			struct file *fi = &f[p == SMALL_FILES ? n / 4 : 0];
			pgoff_t idx;
			bool was_empty = log_empty(&fi->log);

			switch (p) {
			case RANDOM_DENSE:
			case RANDOM_SLOW:
				idx = xorshift() % file_pages;
				break;
			case SMALL_FILES:
				idx = n % 4;
				break;
			default:
				idx = n;
			}
			if (log_append(&fi->log, idx, 1, now))
				abort();
			if (was_empty)
				wheel_add(&w, &fi->node, now);
			if (p == RANDOM_SLOW || p == SEQ_SLOW || n % 100 == 99)
				now++;
		}
		per[b++] = (double)(now_ns() - t) / i;
	}
	qsort(per, b, sizeof(*per), cmp_double);
	printf("%-52s %9lu %7.1f %7.1f %7.2f", names[p], pages, pct(per, b, 0.5),
	       pct(per, b, 0.99), (double)live_bytes / pages);

	/* Phase 1 with everything due: holds of HOLD logs, HOLD_EXTENTS extents. */
	t = now_ns();
	for (;;) {
		unsigned int budget = HOLD, room = HOLD_EXTENTS, got;
		unsigned long long h = now_ns();
		bool done = wheel_due(&w, now + 1, &due_logs, &budget);
		struct file *fi, *tmp;

		list_for_each_entry_safe(fi, tmp, &due_logs, node.link) {
			got = log_take(&fi->log, now + 1, x, room);
			room -= got;
			taken += got;
			if (log_empty(&fi->log)) {
				list_del_init(&fi->node.link);
				due++;
			}
			if (!room)
				break;
		}
		hold[holds++] = now_ns() - h;
		if (done && list_empty(&due_logs))
			break;
	}
	t = now_ns() - t;
	qsort(hold, holds, sizeof(*hold), cmp_double);
	printf(" %8lu %7.1f %7.1f %7.1f\n", taken, (double)t / pages,
	       pct(hold, holds, 0.999) / 1000, hold[holds - 1] / 1000);
	for (i = 0; i < nfiles; i++)
		log_drop(&f[i].log, &(unsigned long){ ~0UL });
	free(f);
	free(per);
	free(hold);
	free(x);
}

/*
 * Steady state: @nfiles files, 100 random pages dirtied a jiffy, phase 1
 * every PERIOD jiffies with a cutoff MAX_AGE jiffies back, as the flusher
 * runs it.  What the scan costs against what it writes: files looked at
 * (wheel visits, the budget spent) per extent taken.
 */
#define PERIOD 25		/* 100 ms at HZ=250 */
#define MAX_AGE 250		/* 1 s */

static void steady(unsigned long nfiles, unsigned long pages,
		   unsigned long width, unsigned long skew)
{
	struct file *f = calloc(nfiles, sizeof(*f));
	struct aipu_extent *x = malloc(HOLD_EXTENTS * sizeof(*x));
	unsigned long i, now = -30000UL, visited = 0, taken = 0, scanned_ns = 0;
	unsigned int nslots = (MAX_AGE + 2 * PERIOD) / width + 1;
	struct list_head *slots = calloc(nslots, sizeof(*slots));
	unsigned long long t;
	struct aipu_wheel w;
	LIST_HEAD(due);

	for (i = 0; i < nfiles; i++)
		log_init(&f[i].log);
	wheel_init(&w, slots, nslots, width, now);
	for (i = 0; i < pages; i++) {
		struct file *fi = &f[xorshift() % nfiles];
		bool was_empty = log_empty(&fi->log);

		if (log_append(&fi->log, xorshift() % 100000, 1, now))
			abort();
		if (was_empty)
			wheel_add(&w, &fi->node, now);
		if (i % 100 != 99)
			continue;
		if ((++now + skew) % PERIOD)
			continue;
		t = now_ns();
		for (;;) {
			unsigned int budget = HOLD, got;
			bool done = wheel_due(&w, now - MAX_AGE, &due, &budget);
			struct file *fi, *tmp;

			visited += HOLD - budget;
			list_for_each_entry_safe(fi, tmp, &due, node.link) {
				list_del_init(&fi->node.link);
				while ((got = log_take(&fi->log, now - MAX_AGE,
						       x, HOLD_EXTENTS)))
					taken += got;
				if (!log_empty(&fi->log))
					wheel_add(&w, &fi->node,
						  log_oldest(&fi->log));
			}
			if (done)
				break;
		}
		scanned_ns += now_ns() - t;
	}
	printf("%5lu %5lu %9lu %9lu %10lu %10lu %9.3f %9.1f\n", width, skew,
	       nfiles, pages, taken,
	       visited, taken ? (double)visited / taken : 0.0,
	       taken ? (double)scanned_ns / taken : 0.0);
	for (i = 0; i < nfiles; i++)
		log_drop(&f[i].log, &(unsigned long){ ~0UL });
	free(f);
	free(x);
	free(slots);
}

/*
 * The device queue (src/track_log.c) under the same patterns: what the
 * probe's part costs a page (ltrack_pages(), a tracker per file found in a
 * plain table), the bytes a page of everything the queue holds, and the
 * lock holds of a flusher pass that writes it all (phase 1 in holds of
 * HOLD files; each take, and the hand-back of each batch, a hold of its
 * own) and of evicting every file (HOLD objects freed a hold).
 */
static void hold_stats(double *hold, size_t n, double *p999, double *max)
{
	qsort(hold, n, sizeof(*hold), cmp_double);
	*p999 = pct(hold, n, 0.999) / 1000;
	*max = n ? hold[n - 1] / 1000 : 0;
}

static volatile unsigned long long sink;

/* A chain of dependent multiplies taking about @ns, @n times: the noise. */
static void control(double ns, size_t n)
{
	unsigned long long x = 1, t;
	unsigned long iters = 1000, i;
	double *hold = malloc(n * sizeof(*hold)), p999, max;
	size_t k;

	for (k = 0; k < 2; k++) {	/* calibrate, then measure */
		t = now_ns();
		for (i = 0; i < iters; i++)
			x = x * 6364136223846793005ULL + i;
		iters = iters * ns / (double)(now_ns() - t + 1) + 1;
	}
	for (k = 0; k < n; k++) {
		t = now_ns();
		for (i = 0; i < iters; i++)
			x = x * 6364136223846793005ULL + i;
		hold[k] = now_ns() - t;
	}
	sink = x;
	hold_stats(hold, n, &p999, &max);
	printf("%-52s %9zu %7s %7s %7s %9s %7.1f %7.1f\n",
	       "control: a fixed computation of about 10 us", n, "", "", "",
	       "", p999, max);
	free(hold);
}

static void device(enum pattern p, unsigned long pages)
{
	unsigned long nfiles = p == SMALL_FILES ? pages / 4 : 1;
	unsigned long i, n = 0, now = -30000UL, taken = 0, file_pages;
	size_t nb = pages / BATCH + 1, b = 0, nh = 0, maxh = pages + 1024;
	double *per = malloc(nb * sizeof(*per));
	double *hold = malloc(maxh * sizeof(*hold)), sp, sm, kp, km;
	static struct aipu_lbatch batch;
	static struct aipu_ltrack tr;
	unsigned long long t;
	struct aipu_lentry *e;
	unsigned int k, m;

	table = calloc(nfiles, sizeof(*table));
	file_pages = p == SMALL_FILES ? 4 : pages * 2;
	ltrack_init(&tr, 25, now);
	while (n < pages) {
		t = now_ns();
		for (i = 0; i < BATCH && n < pages; i++, n++) {
			unsigned long fi = p == SMALL_FILES ? n / 4 : 0;
			struct aipu_ltracker *tk;
			pgoff_t idx;

			switch (p) {
			case RANDOM_DENSE:
			case RANDOM_SLOW:
				idx = xorshift() % file_pages;
				break;
			case SMALL_FILES:
				idx = n % 4;
				break;
			default:
				idx = n;
			}
			tk = ltrack_get(&tr, (void *)fi, NULL);
			if (!tk)
				abort();
			if (!live_test(&tk->q.live, idx))
				ltrack_pages(&tr, tk, idx, 1, now);
			if (p == RANDOM_SLOW || p == SEQ_SLOW || n % 100 == 99)
				now++;
		}
		per[b++] = (double)(now_ns() - t) / i;
	}
	qsort(per, b, sizeof(*per), cmp_double);
	printf("%-52s %9lu %7.1f %7.1f %7.2f", names[p], pages,
	       pct(per, b, 0.5), pct(per, b, 0.99),
	       (double)(live_bytes + dev_bytes) / pages);

	/* One pass writes everything: the flusher's holds. */
	for (;;) {
		k = HOLD;
		t = now_ns();
		if (ltrack_scan(&tr, now + 1, &k) && nh < maxh) {
			hold[nh++] = now_ns() - t;
			break;
		}
		if (nh < maxh)
			hold[nh++] = now_ns() - t;
	}
	for (;;) {
		t = now_ns();
		e = ltrack_take(&tr, now + 1, &batch);
		if (nh < maxh)
			hold[nh++] = now_ns() - t;
		if (e) {
			ltrack_done_entry(&tr, e);
			continue;
		}
		if (!batch.t && batch.again)
			continue;
		if (!batch.t)
			break;
		m = flog_merge(batch.x, batch.n);	/* outside the lock */
		t = now_ns();
		for (k = 0; k < m; k++) {
			ltrack_done_pages(&tr, batch.t, batch.x[k].index,
					  batch.x[k].nr, batch.x[k].time,
					  false);
			taken += batch.x[k].nr;
		}
		ltrack_put(&tr, batch.t);
		if (nh < maxh)
			hold[nh++] = now_ns() - t;
	}
	k = ~0U;
	ltrack_end_pass(&tr, &k);
	hold_stats(hold, nh, &sp, &sm);

	/* Dirty it all again, then evict every file. */
	for (n = 0; n < pages; n++) {
		unsigned long fi = p == SMALL_FILES ? n / 4 : 0;
		struct aipu_ltracker *tk = ltrack_get(&tr, (void *)fi, NULL);

		ltrack_pages(&tr, tk, p == SMALL_FILES ? n % 4 :
				      xorshift() % file_pages, 1, now);
	}
	nh = 0;
	for (i = 0; i < nfiles; i++) {
		struct aipu_ltracker *tk = table[i];
		bool done;

		if (!tk)
			continue;
		do {
			t = now_ns();
			done = ltrack_kill(&tr, tk, HOLD);
			if (nh < maxh)
				hold[nh++] = now_ns() - t;
		} while (!done);
	}
	hold_stats(hold, nh, &kp, &km);
	printf(" %9lu %7.1f %7.1f %7.1f %7.1f %s\n", taken, sp, sm, kp, km,
	       live_bytes || dev_bytes ? "LEAK" : "");
	free(table);
	free(per);
	free(hold);
}

int main(int argc, char **argv)
{
	unsigned long max = 10000000, pages;
	int p;

	if (argc == 3 && !strcmp(argv[1], "--max-pages")) {
		max = strtoul(argv[2], NULL, 0);
	} else if (argc != 1) {
		fprintf(stderr, "usage: logbench [--max-pages N]\n");
		return 2;
	}
	/* Freed segments stay in the process, as a slab keeps its pages. */
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	printf("%-52s %9s %7s %7s %7s %8s %7s %7s %7s\n", "pattern", "pages",
	       "ns/pg", "p99", "B/page", "extents", "ns/pg", "hold", "hold");
	printf("%-52s %9s %7s %7s %7s %8s %7s %7s %7s\n", "", "", "append",
	       "append", "", "taken", "phase1", "p99.9us", "max us");
	for (p = RANDOM_DENSE; p <= SMALL_FILES; p++)
		for (pages = 1000; pages <= max; pages *= 10)
			run(p, pages);
	printf("\nthe device queue (src/track_log.c): tracker lookup, live bits, wheel, batches\n");
	printf("%-52s %9s %7s %7s %7s %9s %7s %7s %7s %7s\n", "pattern",
	       "pages", "ns/pg", "p99", "B/page", "written", "pass", "pass",
	       "evict", "evict");
	printf("%-52s %9s %7s %7s %7s %9s %7s %7s %7s %7s\n", "", "", "dirty",
	       "dirty", "", "", "p99.9us", "max us", "p99.9us", "max us");
	control(10000, 10000);
	for (p = RANDOM_DENSE; p <= SMALL_FILES; p++)
		for (pages = 1000; pages <= max; pages *= 10)
			device(p, pages);
	control(10000, 10000);
	printf("\nsteady state: 100 random pages a jiffy over N files, phase 1 every %d jiffies, max_age %d jiffies\n",
	       PERIOD, MAX_AGE);
	printf("%5s %5s %9s %9s %10s %10s %9s %9s\n", "width", "skew", "files",
	       "pages", "extents", "visited", "visit/ext", "ns/ext");
	for (pages = 1; pages <= 1000000; pages *= 10) {
		steady(pages, max < 2000000 ? max : 2000000, PERIOD, 0);
		steady(pages, max < 2000000 ? max : 2000000, PERIOD, 12);
		steady(pages, max < 2000000 ? max : 2000000, PERIOD / 8, 12);
	}
	return 0;
}
