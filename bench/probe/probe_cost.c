// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of aipu's dirty-folio probe per clean->dirty transition: lock, find
 * or create the tracker, record the page (src/track.c), unlock.  Allocation
 * comes from a free list, as the slab's per-CPU cache would serve it.
 *
 * Patterns: sequential pages in one jiffy (runs grow), random pages of one
 * file (a run each), pages dirtied again after a cleaning (carve + new run),
 * and random pages over 1,000 files (hash lookups).  Prints ns per
 * transition, best of 5 rounds.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "aipu_track.h"

#define NMAX (1 << 20)

static unsigned long N = NMAX;

struct node {
	struct node *next;
};

static struct node *free_runs;

struct aipu_run *aipu_run_alloc(void)
{
	struct node *n = free_runs;

	if (!n)
		return malloc(sizeof(struct aipu_run));
	free_runs = n->next;
	return (struct aipu_run *)n;
}

void aipu_run_free(struct aipu_run *r)
{
	struct node *n = (struct node *)r;

	n->next = free_runs;
	free_runs = n;
}

struct aipu_tracker *aipu_tracker_alloc(void)
{
	return calloc(1, sizeof(struct aipu_tracker));
}

void aipu_tracker_free(struct aipu_tracker *t)
{
	free(t);
}

static struct aipu_track tr;
static pthread_spinlock_t lock;
static char files[1000];
static unsigned long idx[NMAX];
static unsigned int key[NMAX];

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void probe(const void *k, unsigned long index, unsigned long time)
{
	struct aipu_tracker *t;

	pthread_spin_lock(&lock);
	t = track_get(&tr, k, NULL);
	if (t)
		track_pages(&tr, t, index, 1, time, false);
	pthread_spin_unlock(&lock);
}

enum { SEQ, RANDOM, REDIRTY, MANY };

static double round_ns(int pattern)
{
	unsigned long i, time = 1000;
	double t0, t1;

	track_clear(&tr);
	track_init(&tr);
	for (i = 0; i < N; i++) {
		idx[i] = pattern == SEQ ? i : (unsigned long)rand() * 7919 % (1UL << 30);
		key[i] = pattern == MANY ? rand() % 1000 : 0;
	}
	if (pattern == REDIRTY)		/* dirty them all once, then again */
		for (i = 0; i < N; i++)
			probe(&files[0], idx[i], time);
	t0 = now_ns();
	for (i = 0; i < N; i++) {
		if (pattern == SEQ && i % 1024 == 0)
			time++;		/* a new jiffy every 1,024 pages */
		probe(&files[key[i]], idx[i], pattern == REDIRTY ? time + 1 : time);
	}
	t1 = now_ns();
	return (t1 - t0) / N;
}

int main(void)
{
	static const char * const names[] = {
		"sequential, one file", "random, one file",
		"dirtied again (carve)", "random, 1,000 files",
	};
	int p, r;

	static const unsigned long sizes[] = { 1 << 10, 1 << 14, 1 << 17, 1 << 20 };
	unsigned int s;

	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	track_init(&tr);
	printf("ns per clean->dirty transition, best of 5 rounds; columns: pages\n");
	printf("dirtied per round (= runs tracked at the end for the random patterns)\n\n");
	printf("| pattern |");
	for (s = 0; s < ARRAY_SIZE(sizes); s++)
		printf(" %lu |", sizes[s]);
	printf("\n| --- |");
	for (s = 0; s < ARRAY_SIZE(sizes); s++)
		printf(" --- |");
	printf("\n");
	for (p = SEQ; p <= MANY; p++) {
		printf("| %s |", names[p]);
		for (s = 0; s < ARRAY_SIZE(sizes); s++) {
			double best = 1e18, ns;

			N = sizes[s];
			for (r = 0; r < 5; r++) {
				ns = round_ns(p);
				if (ns < best)
					best = ns;
			}
			printf(" %.0f |", best);
		}
		printf("\n");
	}
	return 0;
}
