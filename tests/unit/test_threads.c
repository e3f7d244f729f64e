// SPDX-License-Identifier: GPL-2.0
/*
 * The two locks of a device's queue (include/aipu_queue.h) under real
 * concurrency, built with ThreadSanitizer: two writer threads dirty pages of
 * the files of one device as src/hook.c does (the fast path under the file's
 * lock alone, else the device's lock), while a flusher thread runs passes
 * as src/flusher.c does (phase 1 and each take under the device's lock, the
 * pages written outside it, handed back under it), the clock crossing the
 * jiffies wrap.  A mutex per file stands for the mapping's i_pages lock,
 * under which the kernel's probe runs.  Trackers are freed at the end, not
 * when the queue lets go of them: that is RCU's grace period here.
 *
 * Checked: no entry the flusher takes is later than the first-dirty time of
 * a page it finds dirty (never late); after each pass no page dirtied
 * before its cutoff is still dirty (the file's place in the wheel is right
 * whoever queued its pages); after the writers stop and the queue drains,
 * every page is clean and the device's counters (the queue's plus the fast
 * path's per-writer shares) add up to the transitions made; no memory is
 * held; and ThreadSanitizer reports no data race (any report fails the run).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/jiffies.h>

#include "aipu_queue.h"
#include "unit.h"

#define NF 8
#define PAGES 512
#define WRITERS 2
#define MAX_AGE 6			/* jiffies */
#define WIDTH 2				/* jiffies a wheel slot */
#define T0 ((unsigned long)-3000)	/* before the jiffies wrap */
#define RUN_NS 1500000000L		/* the writers' time */

struct utracker {
	struct aipu_file t;
	pthread_spinlock_t lock;
	struct utracker *next_dead;	/* freed, kept till the end */
};

static pthread_spinlock_t dev_lock;
static struct aipu_queue tr;
static struct list_head slots[AIPU_QUEUE_SLOTS];
static unsigned long now;		/* jiffies: the flusher moves it */
static int stop;

static char keys[NF];
static struct aipu_file *table[NF];
static struct utracker *dead;		/* @dev_lock */

/* The pages' state, each file's under its "i_pages" lock. */
static pthread_mutex_t ipages[NF];
static bool dirty[NF][PAGES];
static unsigned long first[NF][PAGES];

static struct aipu_queue_delta fast[WRITERS];
static unsigned long transitions[WRITERS], fast_done[WRITERS];
static unsigned long late, left_dirty, lost_tracker, passes;

static unsigned long load_now(void)
{
	return __atomic_load_n(&now, __ATOMIC_RELAXED);
}

static struct utracker *to_u(struct aipu_file *t)
{
	return container_of(t, struct utracker, t);
}

struct aipu_file *aipu_file_alloc(void)
{
	struct utracker *u = calloc(1, sizeof(*u));

	pthread_spin_init(&u->lock, PTHREAD_PROCESS_PRIVATE);
	__atomic_add_fetch(&unit_mem.trackers, 1, __ATOMIC_RELAXED);
	return &u->t;
}

/* Called with the device's lock held, as in the kernel. */
void aipu_file_free(struct aipu_file *t)
{
	to_u(t)->next_dead = dead;
	dead = to_u(t);
}

struct aipu_file *aipu_file_lookup(const void *key)
{
	return __atomic_load_n(&table[(const char *)key - keys],
			       __ATOMIC_ACQUIRE);
}

int aipu_file_insert(struct aipu_file *t)
{
	__atomic_store_n(&table[(const char *)t->key - keys], t,
			 __ATOMIC_RELEASE);
	return 0;
}

void aipu_file_remove(struct aipu_file *t)
{
	__atomic_store_n(&table[(const char *)t->key - keys], NULL,
			 __ATOMIC_RELEASE);
}

void aipu_file_lock(struct aipu_file *t)
{
	pthread_spin_lock(&to_u(t)->lock);
}

void aipu_file_unlock(struct aipu_file *t)
{
	pthread_spin_unlock(&to_u(t)->lock);
}

/* src/hook.c's probe: page @p of file @f went clean -> dirty at @time. */
static void probe(int w, int f, pgoff_t p, unsigned long time)
{
	struct aipu_file *t = aipu_file_lookup(&keys[f]);
	int r = AIPU_FAST_NO;

	if (t) {
		aipu_file_lock(t);
		r = aipu_queue_pages_fast(t, p, 1, time, &fast[w], false);
		aipu_file_unlock(t);
	}
	if (r == AIPU_FAST_DONE) {
		fast_done[w]++;
		return;
	}
	pthread_spin_lock(&dev_lock);
	if (!t || !t->hashed)
		t = aipu_queue_get(&tr, &keys[f], NULL);
	if (!t)
		lost_tracker++;
	else if (r == AIPU_FAST_SHORT)
		aipu_queue_whole(&tr, t, time);
	else
		aipu_queue_pages(&tr, t, p, 1, time);
	pthread_spin_unlock(&dev_lock);
}

static void *writer(void *arg)
{
	int w = (int)(long)arg, f;
	unsigned int seed = 17 + w;
	pgoff_t p;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		/* Mostly its own half of the files, now and then the other's. */
		f = (rand_r(&seed) % 8 ? w * NF / WRITERS : 0) +
		    rand_r(&seed) % (NF / WRITERS);
		p = rand_r(&seed) % PAGES;
		pthread_mutex_lock(&ipages[f]);
		if (!dirty[f][p]) {
			dirty[f][p] = true;
			first[f][p] = load_now();
			probe(w, f, p, first[f][p]);
			transitions[w]++;
		}
		pthread_mutex_unlock(&ipages[f]);
	}
	return NULL;
}

/* Write the dirty pages of [index, index + nr) of @f: none dirty before @time. */
static void write_pages(int f, pgoff_t index, unsigned long nr,
			unsigned long time, bool check)
{
	pgoff_t p;

	pthread_mutex_lock(&ipages[f]);
	for (p = index; p < index + nr && p < PAGES; p++) {
		if (!dirty[f][p])
			continue;
		if (check && time_before(first[f][p], time))
			late++;
		dirty[f][p] = false;
	}
	pthread_mutex_unlock(&ipages[f]);
}

static void write_batch(struct aipu_batch *b)
{
	int f = (const char *)b->t->key - keys;
	unsigned int i, n = aipu_flog_merge(b->x, b->n);

	for (i = 0; i < n; i++) {
		write_pages(f, b->x[i].index, b->x[i].nr, b->x[i].time, true);
		pthread_spin_lock(&dev_lock);
		aipu_queue_done_pages(&tr, b->t, b->x[i].index, b->x[i].nr,
				      b->x[i].time, false);
		pthread_spin_unlock(&dev_lock);
	}
	pthread_spin_lock(&dev_lock);
	aipu_queue_put(&tr, b->t);
	pthread_spin_unlock(&dev_lock);
}

/* A whole-file entry: every dirty page of the file, whatever its time. */
static void write_entry(struct aipu_entry *e)
{
	write_pages((const char *)e->t->key - keys, 0, PAGES, e->time, false);
	pthread_spin_lock(&dev_lock);
	aipu_queue_done_entry(&tr, e);
	pthread_spin_unlock(&dev_lock);
}

static void pass(unsigned long cutoff)
{
	static struct aipu_batch b;
	struct aipu_entry *e;
	unsigned int budget;
	bool done;
	int f;
	pgoff_t p;

	do {
		budget = 8;
		pthread_spin_lock(&dev_lock);
		done = aipu_queue_scan(&tr, cutoff, &budget);
		pthread_spin_unlock(&dev_lock);
	} while (!done);
	for (;;) {
		b.max_pages = 0;
		pthread_spin_lock(&dev_lock);
		e = aipu_queue_take(&tr, cutoff, &b);
		pthread_spin_unlock(&dev_lock);
		if (e)
			write_entry(e);
		else if (b.t)
			write_batch(&b);
		else if (!b.again)
			break;
	}
	do {
		budget = 8;
		pthread_spin_lock(&dev_lock);
		done = aipu_queue_end_pass(&tr, &budget);
		pthread_spin_unlock(&dev_lock);
	} while (!done);
	/* Writers dirty at the clock, later than @cutoff: none of theirs. */
	for (f = 0; f < NF; f++) {
		pthread_mutex_lock(&ipages[f]);
		for (p = 0; p < PAGES; p++)
			if (dirty[f][p] && time_before(first[f][p], cutoff))
				left_dirty++;
		pthread_mutex_unlock(&ipages[f]);
	}
	passes++;
}

static long elapsed_ns(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000000000L + b.tv_nsec - a->tv_nsec;
}

static int test_two_writers_one_flusher(void)
{
	pthread_t th[WRITERS];
	unsigned long sum = 0, fast_sum = 0;
	struct utracker *u;
	struct timespec t0;
	long bytes, pages;
	bool done;
	int w, f;

	pthread_spin_init(&dev_lock, PTHREAD_PROCESS_PRIVATE);
	for (f = 0; f < NF; f++)
		pthread_mutex_init(&ipages[f], NULL);
	now = T0;
	aipu_queue_init(&tr, slots, WIDTH, now);
	for (w = 0; w < WRITERS; w++)
		pthread_create(&th[w], NULL, writer, (void *)(long)w);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ns(&t0) < RUN_NS) {
		__atomic_add_fetch(&now, 1, __ATOMIC_RELAXED);
		pass(load_now() - MAX_AGE);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (w = 0; w < WRITERS; w++)
		pthread_join(th[w], NULL);
	/* Everything due: the queue drains, and every page is written. */
	for (w = 0; w < 4 && !aipu_queue_idle(&tr); w++) {
		now += MAX_AGE;
		pass(now);
	}
	CHECK(aipu_queue_idle(&tr));
	for (f = 0; f < NF; f++)
		for (w = 0; w < PAGES; w++)
			CHECK(!dirty[f][w]);
	bytes = tr.st.bytes;
	pages = tr.st.pages;
	for (w = 0; w < WRITERS; w++) {
		sum += transitions[w];
		fast_sum += fast_done[w];
		bytes += fast[w].bytes;
		pages += fast[w].pages;
		tr.st.pages_dirtied += fast[w].pages_dirtied;
	}
	CHECK(tr.st.pages_dirtied == sum);
	CHECK(!bytes && !pages);
	CHECK(!late && !left_dirty && !lost_tracker);
	/* Both ways were walked, and the flusher ran meanwhile. */
	CHECK(fast_sum > sum / 4 && fast_sum < sum && passes > 50);
	printf("  %lu transitions by %d writers, %lu on the fast path; %lu passes; %llu taken\n",
	       sum, WRITERS, fast_sum, passes,
	       (unsigned long long)tr.st.pages_taken);
	/* rmmod: forget every tracker. */
	for (f = 0; f < NF; f++) {
		struct aipu_file *t = aipu_file_lookup(&keys[f]);

		do
			done = !t || aipu_queue_kill(&tr, t, AIPU_DRAIN_BATCH);
		while (!done);
	}
	while (dead) {
		u = dead;
		dead = u->next_dead;
		pthread_spin_destroy(&u->lock);
		free(u);
		__atomic_sub_fetch(&unit_mem.trackers, 1, __ATOMIC_RELAXED);
	}
	CHECK(unit_no_memory_held());
	return 0;
}

int main(void)
{
	RUN(test_two_writers_one_flusher);
	return unit_done();
}
