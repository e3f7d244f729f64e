// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the live-page set (src/queue/live.c) in user space.
 *
 * A model-based test drives one file: a writer dirties pages (an entry is
 * queued at each clean -> dirty transition, as the probe would append to
 * the log), someone else cleans pages (fsync), and the flusher takes the
 * oldest entries, skips the stale ones, writes the rest (some stay dirty
 * and are put back; some are dirtied again during the write), with
 * allocation failures now and then.  After every step: every dirty page has
 * exactly one queued entry that is not stale, and it carries the page's
 * first-dirty time (or, after a failed allocation, an earlier one: written
 * early, never late); the bits set are the pages with a queued entry.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aipu_live.h"
#include "unit.h"

static int test_directed(void)
{
	struct aipu_live l;

	aipu_live_init(&l);
	CHECK(aipu_live_dirty(&l, 5, 10) == AIPU_LIVE_NEW &&
	      aipu_live_test(&l, 5));
	CHECK(!aipu_live_test(&l, 6) && l.nr_chunks == 1);
	/* Cleaned by someone else, dirtied again: the first entry is stale. */
	CHECK(aipu_live_dirty(&l, 5, 20) == AIPU_LIVE_AGAIN && l.nr_moved == 1);
	CHECK(!aipu_live_take(&l, 5, 10));
	/* The live entry, written: the page is forgotten. */
	CHECK(aipu_live_take(&l, 5, 20) && l.nr_moved == 0);
	aipu_live_done(&l, 5, false);
	CHECK(!aipu_live_test(&l, 5) && l.nr_chunks == 0);
	/* Dirtied again while the flusher writes it: stays live. */
	CHECK(aipu_live_dirty(&l, 700, 30) == AIPU_LIVE_NEW);
	CHECK(aipu_live_take(&l, 700, 30));
	CHECK(aipu_live_dirty(&l, 700, 30) == AIPU_LIVE_AGAIN);	/* same jiffy */
	aipu_live_done(&l, 700, false);
	CHECK(aipu_live_test(&l, 700));
	/* Put back at its time: still live. */
	CHECK(aipu_live_take(&l, 700, 30));
	aipu_live_done(&l, 700, true);
	CHECK(aipu_live_test(&l, 700) && l.nr_moved == 0);
	CHECK(aipu_live_take(&l, 700, 30));
	aipu_live_done(&l, 700, false);
	CHECK(!aipu_live_test(&l, 700) && l.pages == 0);
	/* Chunks: one per 512 pages, freed when empty. */
	CHECK(aipu_live_dirty(&l, 0, 1) == AIPU_LIVE_NEW);
	CHECK(aipu_live_dirty(&l, 511, 1) == AIPU_LIVE_NEW && l.nr_chunks == 1);
	CHECK(aipu_live_dirty(&l, 512, 1) == AIPU_LIVE_NEW && l.nr_chunks == 2);
	aipu_live_drop(&l, &(unsigned long){ ~0UL });
	CHECK(l.nr_chunks == 0 && unit_mem.chunks == 0 && unit_mem.moved == 0);
	return 0;
}

#define PAGES 3000
#define MAXQ 400000

struct entry {
	unsigned int page;
	unsigned long time;
};

static struct entry q[MAXQ];		/* the log, oldest first */
static unsigned int qh, qt;
static long first[PAGES];		/* first-dirty time, -1 if clean */
static bool whole[PAGES];		/* bounded by the whole-file run */
/* Model page i is the file's page base + i * spread. */
static pgoff_t base, spread = 1;

static pgoff_t idx(unsigned int i)
{
	return base + i * spread;
}

/* Every dirty page has one non-stale queued entry, no later than its time. */
static int check(struct aipu_live *l)
{
	static unsigned int nlive[PAGES], nq[PAGES];
	unsigned int i, bits = 0;

	memset(nlive, 0, sizeof(nlive));
	memset(nq, 0, sizeof(nq));
	for (i = qh; i < qt; i++) {
		nq[q[i].page]++;
		if (!unit_moved_stale(l, idx(q[i].page), q[i].time) &&
		    first[q[i].page] >= 0 &&
		    (long)q[i].time <= first[q[i].page])
			nlive[q[i].page]++;
	}
	for (i = 0; i < PAGES; i++) {
		if (first[i] >= 0 && !(nlive[i] >= 1 || whole[i]))
			printf("  page %u first %ld bit %d queued %u\n", i,
			       first[i], aipu_live_test(l, idx(i)), nq[i]);
		if (first[i] >= 0)
			CHECK(nlive[i] >= 1 || whole[i]);
		CHECK(aipu_live_test(l, idx(i)) == (nq[i] > 0));
		bits += aipu_live_test(l, idx(i));
	}
	CHECK(bits == l->pages);
	return 0;
}

static void dirty(struct aipu_live *l, unsigned int p, unsigned long now)
{
	if (first[p] >= 0)
		return;		/* already dirty: no transition */
	first[p] = now;
	if (aipu_live_dirty(l, idx(p), now) == -ENOMEM) {
		whole[p] = true;	/* the file's whole-file run, early */
		return;
	}
	q[qt].page = p;
	q[qt++].time = now;
}

/*
 * The model over pages @b, @b + @s, ...: with @s 1 the file's 3,000 pages
 * are 6 chunks (the tree alone); with a wider @s it has hundreds of chunks
 * across two directory windows, a directory made, dropped with the last
 * chunk and made again, sometimes refused (allocation failures).
 */
static int model(pgoff_t b, pgoff_t s)
{
	unsigned long now = 1000, step;
	struct aipu_live l;
	unsigned int i;

	base = b;
	spread = s;
	qh = 0;
	qt = 0;
	memset(whole, 0, sizeof(whole));
	srand(unit_seed(11 + (unsigned int)s));
	aipu_live_init(&l);
	for (i = 0; i < PAGES; i++)
		first[i] = -1;
	unit_fail_every = 50;
	for (step = 0; step < 200000 && qt < MAXQ - 10; step++) {
		unsigned int r = rand() % 100, p = rand() % PAGES;

		if (r < 50) {
			dirty(&l, p, now);
		} else if (r < 60) {
			/* fsync: cleaned by someone, in a later jiffy. */
			if (first[p] >= 0 && first[p] < (long)now) {
				first[p] = -1;
				now++;
			}
		} else if (r < 70) {
			now += 1 + rand() % 3;
		} else if (qh < qt && q[qh].time + 2 <= now) {
			/* The flusher takes the oldest entry, once aged. */
			struct entry e = q[qh++];
			bool still;

			if (!aipu_live_take(&l, idx(e.page), e.time))
				continue;
			still = first[e.page] >= 0 && rand() % 10 == 0;
			if (!still)
				first[e.page] = -1;	/* written */
			if (rand() % 10 == 0)
				dirty(&l, e.page, now);	/* during the write */
			if (still)
				q[qt++] = e;	/* put back at its time */
			aipu_live_done(&l, idx(e.page), still);
		}
		if (step % 101 == 0 && check(&l))
			return 1;
	}
	unit_fail_every = 0;
	if (check(&l))
		return 1;
	aipu_live_drop(&l, &(unsigned long){ ~0UL });
	CHECK(unit_mem.chunks == 0 && unit_mem.moved == 0 && !unit_mem.bytes);
	return 0;
}

static int test_model(void)
{
	return model(0, 1);
}

/* Pages 97 apart, from 150,000 pages before a window's end. */
static int test_model_dir(void)
{
	return model(3 * AIPU_LIVE_DIR_PAGES - 150000, 97);
}

/*
 * The directory: made at AIPU_LIVE_DIR_MIN chunks for the window of the
 * chunk that made it, filled from the tree; pages outside it still found
 * in the tree; refused, tried again when the chunks double; gone with the
 * last chunk.
 */
static int test_dir(void)
{
	const pgoff_t w = 5 * AIPU_LIVE_DIR_PAGES;
	struct aipu_live l;
	unsigned int i;

	aipu_live_init(&l);
	/* Seven chunks, one in the window before: no directory yet. */
	CHECK(aipu_live_dirty(&l, w - 1, 1) == AIPU_LIVE_NEW);
	for (i = 1; i < AIPU_LIVE_DIR_MIN - 1; i++)
		CHECK(aipu_live_dirty(&l, w + i * 1000, 1) == AIPU_LIVE_NEW);
	CHECK(l.nr_chunks == AIPU_LIVE_DIR_MIN - 1 && !l.dir);
	/* The eighth makes it, for its window, with the six chunks there. */
	CHECK(aipu_live_dirty(&l, w + 200000, 1) == AIPU_LIVE_NEW);
	CHECK(l.dir && l.dir_base == w && unit_mem.bytes == sizeof(*l.dir));
	for (i = 1; i < AIPU_LIVE_DIR_MIN - 1; i++) {
		CHECK(aipu_live_test(&l, w + i * 1000));
		CHECK(!aipu_live_test(&l, w + i * 1000 + 1));
		CHECK(aipu_live_dirty(&l, w + i * 1000, 2) == AIPU_LIVE_AGAIN);
	}
	CHECK(aipu_live_test(&l, w - 1) && !aipu_live_test(&l, w - 2));
	CHECK(aipu_live_test(&l, w + 200000));
	/* A page past the window: the tree. */
	CHECK(aipu_live_dirty(&l, w + AIPU_LIVE_DIR_PAGES + 3, 1) ==
	      AIPU_LIVE_NEW);
	CHECK(aipu_live_test(&l, w + AIPU_LIVE_DIR_PAGES + 3));
	CHECK(!aipu_live_test(&l, w + AIPU_LIVE_DIR_PAGES + 4));
	/* A chunk freed in the window leaves its slot empty, and is made anew. */
	CHECK(aipu_live_take(&l, w + 200000, 1));
	aipu_live_done(&l, w + 200000, false);
	CHECK(!aipu_live_test(&l, w + 200000) &&
	      l.nr_chunks == AIPU_LIVE_DIR_MIN);
	CHECK(aipu_live_dirty(&l, w + 200001, 3) == AIPU_LIVE_NEW);
	CHECK(aipu_live_test(&l, w + 200001) &&
	      !aipu_live_test(&l, w + 200000));
	aipu_live_drop(&l, &(unsigned long){ ~0UL });
	CHECK(!l.dir && !unit_mem.bytes && !unit_mem.chunks);

	/* Refused at 8 chunks: the tree serves; tried again at 16. */
	aipu_live_init(&l);
	unit_no_dir = true;
	for (i = 0; i < 8; i++)
		CHECK(aipu_live_dirty(&l, i * 600, 1) == AIPU_LIVE_NEW);
	CHECK(l.nr_chunks == 8 && !l.dir);
	unit_no_dir = false;
	/* A page of a chunk the file has, at 8 chunks still: no new try. */
	CHECK(aipu_live_dirty(&l, 3, 1) == AIPU_LIVE_NEW && !l.dir);
	CHECK(aipu_live_dirty(&l, 7 * 600 + 3, 1) == AIPU_LIVE_NEW && !l.dir);
	for (i = 8; i < 15; i++)
		CHECK(aipu_live_dirty(&l, i * 600, 1) == AIPU_LIVE_NEW &&
		      !l.dir);
	for (i = 0; i < 15; i++)
		CHECK(aipu_live_test(&l, i * 600) &&
		      !aipu_live_test(&l, i * 600 + 1));
	CHECK(aipu_live_dirty(&l, 15 * 600, 1) == AIPU_LIVE_NEW);
	CHECK(l.nr_chunks == 16 && l.dir && l.dir_base == 0);
	for (i = 0; i < 16; i++)
		CHECK(aipu_live_test(&l, i * 600) &&
		      !aipu_live_test(&l, i * 600 + 1));
	/* Gone with the last chunk, whatever order they go in. */
	aipu_live_done(&l, 7 * 600 + 3, false);
	aipu_live_done(&l, 3, false);
	for (i = 16; i-- > 0;) {
		CHECK(aipu_live_take(&l, i * 600, 1));
		aipu_live_done(&l, i * 600, false);
		CHECK(!aipu_live_test(&l, i * 600));
	}
	CHECK(!l.nr_chunks && !l.dir && !unit_mem.bytes && !unit_mem.chunks);
	return 0;
}

/* aipu_live_done_range() does what aipu_live_done() a page at a time does. */
static int test_range(void)
{
	struct aipu_live a, b;
	unsigned int trial, i;

	srand(5);
	for (trial = 0; trial < 200; trial++) {
		unsigned long index = rand() % 3000, nr = 1 + rand() % 1500;
		bool again = trial % 4 == 0;	/* some pages in the moved map */

		aipu_live_init(&a);
		aipu_live_init(&b);
		for (i = 0; i < 1500; i++) {
			unsigned int p = rand() % 4000;

			if (aipu_live_test(&a, p))
				continue;	/* moved entries only on purpose */
			CHECK(aipu_live_dirty(&a, p, 1) >= 0);
			CHECK(aipu_live_dirty(&b, p, 1) >= 0);
			if (again && rand() % 20 == 0) {
				CHECK(aipu_live_dirty(&a, p, 2) >= 0);
				CHECK(aipu_live_dirty(&b, p, 2) >= 0);
			}
		}
		CHECK(again || !a.nr_moved);
		aipu_live_done_range(&a, index, nr);
		for (i = 0; i < nr; i++)
			aipu_live_done(&b, index + i, false);
		for (i = 0; i < 4600; i++)
			CHECK(aipu_live_test(&a, i) == aipu_live_test(&b, i));
		CHECK(a.pages == b.pages && a.nr_chunks == b.nr_chunks);
		aipu_live_drop(&a, &(unsigned long){ ~0UL });
		aipu_live_drop(&b, &(unsigned long){ ~0UL });
	}
	CHECK(unit_mem.chunks == 0 && unit_mem.moved == 0 && !unit_mem.bytes);
	return 0;
}

/*
 * aipu_live_any() against aipu_live_test() page by page: ranges across chunks,
 * whole zero words and a directory's window, on files sparse and dense.
 */
static int test_any(void)
{
	struct aipu_live l;
	unsigned int trial, i;

	srand(7);
	for (trial = 0; trial < 300; trial++) {
		unsigned long span = trial % 3 ? 5000 : 2 * AIPU_LIVE_DIR_PAGES;
		unsigned int n = trial % 5 ? 1 + rand() % 40 : 3000;

		aipu_live_init(&l);
		for (i = 0; i < n; i++)
			CHECK(aipu_live_dirty(&l, rand() % span, 1) >= 0);
		for (i = 0; i < 200; i++) {
			unsigned long index = rand() % span, p;
			unsigned long nr = 1 + rand() % (i % 4 ? 8 : 1500);
			bool want = false;

			for (p = index; p < index + nr; p++)
				want |= aipu_live_test(&l, p);
			CHECK(aipu_live_any(&l, index, nr) == want);
		}
		aipu_live_drop(&l, &(unsigned long){ ~0UL });
	}
	CHECK(unit_mem.chunks == 0 && unit_mem.moved == 0 && !unit_mem.bytes);
	return 0;
}

int main(void)
{
	RUN(test_directed);
	RUN(test_model);
	RUN(test_model_dir);
	RUN(test_dir);
	RUN(test_range);
	RUN(test_any);
	return unit_done();
}
