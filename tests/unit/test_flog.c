// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of one file's queue (src/queue/flog.c: the log, the live pages and
 * the retries together) in user space.
 *
 * Directed tests pin down stale entries, retries at their old time, the
 * merge and the room aipu_flog_take() needs.  A model-based test drives one
 * file over a clock that crosses the jiffies wrap: a writer dirties ranges of
 * pages, someone else cleans pages (fsync), and the flusher takes what is
 * due in random amounts, merges it, writes it (some pages stay dirty, some
 * are dirtied again during the write) and hands it back, with allocations
 * failing now and then.  After every step every dirty page has a queued
 * entry that is not stale and carries its first-dirty time or an earlier
 * one, or was handed to the caller to bound as a whole; every take returns
 * only due pages, in time order, with nothing due left behind.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/jiffies.h>

#include "aipu_flog.h"
#include "unit.h"

#define T0 ((unsigned long)-3000)	/* 3000 jiffies before the wrap */

/* A take with no page limit of the caller's. */
#define TAKE(f, cutoff, x, max) \
	aipu_flog_take(f, cutoff, x, max, AIPU_FLOG_TAKE_PAGES)

/* aipu_flog_oldest(), or T0 - 1 when nothing can be taken. */
static unsigned long oldest(struct aipu_flog *f)
{
	unsigned long t;

	return aipu_flog_oldest(f, &t) ? t : T0 - 1;
}

/* Take everything due at @cutoff into @x (room for 1,024), merged. */
static unsigned int take_all(struct aipu_flog *f, unsigned long cutoff,
			     struct aipu_extent *x)
{
	unsigned int n = 0, k;

	for (;;) {
		k = TAKE(f, cutoff, x + n, 1024 - n);
		n += k;
		if (!k && (oldest(f) == T0 - 1 ||
			   !time_before(oldest(f), cutoff)))
			break;
	}
	return aipu_flog_merge(x, n);
}

static int test_take_and_retry(void)
{
	struct aipu_extent x[1024];
	struct aipu_flog f;

	aipu_flog_init(&f);
	CHECK(aipu_flog_empty(&f));
	CHECK(aipu_flog_dirty(&f, 10, 5, T0) == 5);
	CHECK(aipu_flog_dirty(&f, 100, 1, T0 + 1) == 1);
	CHECK(oldest(&f) == T0);
	CHECK(take_all(&f, T0, x) == 0);
	CHECK(take_all(&f, T0 + 1, x) == 1);
	CHECK(x[0].index == 10 && x[0].nr == 5 && x[0].time == T0);
	/* Pages 12-13 declined: queued again at their old time. */
	CHECK(!aipu_flog_done(&f, 10, 2, T0, false));
	CHECK(!aipu_flog_done(&f, 12, 2, T0, true));
	CHECK(!aipu_flog_done(&f, 14, 1, T0, false));
	/* Not again in the same pass. */
	CHECK(aipu_flog_retried(&f) && oldest(&f) == T0 + 1);
	CHECK(take_all(&f, T0 + 1, x) == 0 && !aipu_flog_empty(&f));
	aipu_flog_end_pass(&f, &(unsigned int){ ~0U });
	CHECK(!aipu_flog_retried(&f));
	CHECK(oldest(&f) == T0 && f.retry_pages == 2);
	CHECK(take_all(&f, T0 + 5000, x) == 2);
	CHECK(x[0].index == 12 && x[0].nr == 2 && x[0].time == T0);
	CHECK(x[1].index == 100 && x[1].time == T0 + 1);
	CHECK(!aipu_flog_done(&f, 12, 2, T0, false));
	CHECK(!aipu_flog_done(&f, 100, 1, T0 + 1, false));
	CHECK(aipu_flog_empty(&f) && f.live.pages == 0);
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

/*
 * @n single pages dirtied one a jiffy in random page order, all declined
 * and handed back in page order (as the flusher does), so their retries
 * arrive in random time order; the end of the pass then moves them a few a
 * call.  The retries must end in time order, each at its page's time or,
 * dated back (a retry that fit neither end's first AIPU_RETRY_WALK nodes),
 * earlier, never later; every page is taken again exactly once.
 */
static int check_retry_order(unsigned int n, bool may_date_back)
{
	static unsigned long when[2 * 1024];
	unsigned int i, j, k, perm[1024], budget, early = 0;
	struct aipu_extent x[1024];
	struct aipu_retry *r;
	unsigned long prev = T0;
	struct aipu_flog f;

	aipu_flog_init(&f);
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rand() % (i + 1);
		k = perm[i];
		perm[i] = perm[j];
		perm[j] = k;
	}
	for (i = 0; i < n; i++) {
		when[2 * perm[i]] = T0 + i;
		CHECK(aipu_flog_dirty(&f, 2 * perm[i], 1, T0 + i) == 1);
	}
	CHECK(take_all(&f, T0 + n, x) == n);
	for (i = 0; i < n; i++)
		CHECK(!aipu_flog_done(&f, x[i].index, 1, x[i].time, true));
	do {
		budget = 3;
	} while (!aipu_flog_end_pass(&f, &budget));
	list_for_each_entry(r, &f.retry, link) {
		CHECK(!time_before(r->x.time, prev));
		CHECK(!time_after(r->x.time, when[r->x.index]));
		early += r->x.time != when[r->x.index];
		prev = r->x.time;
	}
	CHECK(may_date_back ? early > 0 : early == 0);
	CHECK(take_all(&f, T0 + n, x) == n);
	for (i = 0; i < n; i++)
		CHECK(x[i].index == 2 * i && x[i].nr == 1);
	for (i = 0; i < n; i++)
		CHECK(!aipu_flog_done(&f, x[i].index, 1, x[i].time, false));
	CHECK(aipu_flog_empty(&f));
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

/* Few retries are placed exactly; many are placed within a short walk. */
static int test_retry_order(void)
{
	srand(unit_seed(3));
	CHECK(!check_retry_order(2 * AIPU_RETRY_WALK, false));
	CHECK(!check_retry_order(1000, true));
	return 0;
}

/* Cleaned by someone else and dirtied again: the old entry is skipped. */
static int test_stale(void)
{
	struct aipu_extent x[1024];
	struct aipu_flog f;

	aipu_flog_init(&f);
	CHECK(aipu_flog_dirty(&f, 0, 4, T0) == 4);
	/* fsync cleaned page 2; it is dirtied again later. */
	CHECK(aipu_flog_dirty(&f, 2, 1, T0 + 50) == 1);
	CHECK(take_all(&f, T0 + 10, x) == 2);
	CHECK(x[0].index == 0 && x[0].nr == 2 && x[1].index == 3);
	CHECK(!aipu_flog_done(&f, 0, 2, T0, false));
	CHECK(!aipu_flog_done(&f, 3, 1, T0, false));
	CHECK(take_all(&f, T0 + 51, x) == 1);
	CHECK(x[0].index == 2 && x[0].nr == 1 && x[0].time == T0 + 50);
	CHECK(!aipu_flog_done(&f, 2, 1, T0 + 50, false));
	CHECK(aipu_flog_empty(&f) && f.live.pages == 0 && !f.live.nr_moved);
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

/*
 * A page dirtied again during its write in the jiffy of its entry (the
 * write staged at once): its retry would be a second entry of one time,
 * which outlives the first and would cover a later dirtying too early.
 */
static int test_same_jiffy(void)
{
	struct aipu_extent x[1024];
	struct aipu_flog f;

	aipu_flog_init(&f);
	CHECK(aipu_flog_dirty(&f, 7, 1, T0) == 1);
	CHECK(take_all(&f, T0 + 1, x) == 1);
	CHECK(aipu_flog_dirty(&f, 7, 1, T0) == 1);	/* during the write */
	CHECK(!aipu_flog_done(&f, 7, 1, T0, true));	/* it is dirty again */
	aipu_flog_end_pass(&f, &(unsigned int){ ~0U });
	/* One page a take (max_batch): a second entry would be left queued. */
	CHECK(aipu_flog_take(&f, T0 + 2, x, AIPU_FLOG_TAKE_MIN, 1) == 1);
	CHECK(x[0].index == 7);
	CHECK(!aipu_flog_done(&f, 7, 1, T0, false));
	CHECK(aipu_flog_empty(&f) && !aipu_live_test(&f.live, 7));
	CHECK(aipu_flog_dirty(&f, 7, 1, T0 + 5) == 1);
	CHECK(take_all(&f, T0 + 3, x) == 0);	/* nothing due: no ghost */
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

/* A take looks at AIPU_FLOG_TAKE_ENTRIES entries at most, stale or not. */
static int test_stale_run(void)
{
	const unsigned int n = AIPU_FLOG_TAKE_ENTRIES + 100;
	struct aipu_extent x[AIPU_FLOG_TAKE_MIN];
	struct aipu_flog f;
	unsigned int i;

	aipu_flog_init(&f);
	for (i = 0; i < n; i++)
		CHECK(aipu_flog_dirty(&f, 2 * i, 1, T0) == 1);
	for (i = 0; i < n; i++)		/* fsync, dirtied again */
		CHECK(aipu_flog_dirty(&f, 2 * i, 1, T0 + 50) == 1);
	CHECK(TAKE(&f, T0 + 10, x, AIPU_FLOG_TAKE_MIN) == 0);
	CHECK(oldest(&f) == T0);	/* 100 stale entries still due */
	CHECK(TAKE(&f, T0 + 10, x, AIPU_FLOG_TAKE_MIN) == 0);
	CHECK(oldest(&f) == T0 + 50);
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

/* An entry whose every other page is stale fits AIPU_FLOG_TAKE_MIN. */
static int test_take_room(void)
{
	struct aipu_extent x[AIPU_FLOG_TAKE_MIN];
	const unsigned int len = AIPU_LOG_LEN_MAX;
	struct aipu_flog f;
	unsigned int i, n;

	aipu_flog_init(&f);
	CHECK(aipu_flog_dirty(&f, 0, len, T0) == len);
	CHECK(aipu_flog_dirty(&f, 1000, len, T0 + 1) == len);
	for (i = 1; i < len; i += 2) {
		CHECK(aipu_flog_dirty(&f, i, 1, T0 + 9) == 1);
		CHECK(aipu_flog_dirty(&f, 1000 + i, 1, T0 + 9) == 1);
	}
	n = TAKE(&f, T0 + 1, x, AIPU_FLOG_TAKE_MIN);
	CHECK(n == len / 2);
	for (i = 0; i < n; i++)
		CHECK(x[i].index == 2 * i && x[i].nr == 1);
	/* No room for the pieces of the next entry: not taken, not lost. */
	CHECK(TAKE(&f, T0 + 2, x, len / 2 - 1) == 0);
	CHECK(oldest(&f) == T0 + 1);
	CHECK(TAKE(&f, T0 + 2, x, len / 2) == len / 2);
	CHECK(x[0].index == 1000 && x[0].time == T0 + 1);
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

static int test_merge(void)
{
	struct aipu_extent x[] = {
		{ 20, 5, 7 }, { 0, 10, 9 }, { 10, 3, 4 }, { 22, 10, 8 },
		{ 40, 1, 1 },
	};

	CHECK(aipu_flog_merge(x, 5) == 3);
	CHECK(x[0].index == 0 && x[0].nr == 13 && x[0].time == 4);
	CHECK(x[1].index == 20 && x[1].nr == 12 && x[1].time == 7);
	CHECK(x[2].index == 40 && x[2].nr == 1 && x[2].time == 1);
	CHECK(aipu_flog_merge(x, 0) == 0);
	return 0;
}

#define PAGES 2000

static long first[PAGES];		/* first-dirty time - T0, -1 if clean */
static bool whole[PAGES];		/* bounded by the whole-file entry */
static bool early_ok[PAGES];		/* an older entry may stay live */
static bool retried[PAGES];		/* declined when due: requeued early */

static unsigned int good[PAGES];

static void count_good(struct aipu_flog *f, const struct aipu_extent *x)
{
	pgoff_t p;

	for (p = x->index; p < x->index + x->nr; p++)
		if (first[p] >= 0 && !unit_moved_stale(&f->live, p, x->time) &&
		    !time_after(x->time, T0 + first[p]))
			good[p]++;
}

/* Every dirty page: a queued live entry no later than its time, or whole. */
static int check(struct aipu_flog *f)
{
	struct aipu_extent x;
	struct aipu_retry *r;
	struct aipu_seg *s;
	unsigned int i;
	u64 e;

	memset(good, 0, sizeof(good));
	for (s = f->log.head; s; s = s->next) {
		for (i = s == f->log.head ? f->log.pos : 0; i < s->n; i++) {
			e = s->e[i];
			x.index = e >> (AIPU_LOG_DT_BITS + AIPU_LOG_LEN_BITS);
			x.nr = ((e >> AIPU_LOG_DT_BITS) &
				(AIPU_LOG_LEN_MAX - 1)) + 1;
			x.time = s->base + (e & AIPU_LOG_DT_MAX);
			count_good(f, &x);
		}
	}
	list_for_each_entry(r, &f->retry, link)
		count_good(f, &r->x);
	for (i = 0; i < PAGES; i++)
		CHECK(first[i] < 0 || whole[i] || good[i]);
	return 0;
}

static void dirty(struct aipu_flog *f, pgoff_t p, unsigned int k,
		  unsigned long now)
{
	pgoff_t end = p + k > PAGES ? PAGES : p + k, s, q;
	unsigned long done, imprecise;

	for (s = p; s < end; s = q) {
		for (; s < end && first[s] >= 0; s++)
			;
		for (q = s; q < end && first[q] < 0; q++)
			first[q] = now - T0;
		if (q == s)
			break;
		imprecise = f->imprecise;
		done = aipu_flog_dirty(f, s, q - s, now);
		while (s + done < q)
			whole[s + done++] = true;
		while (imprecise != f->imprecise && s < q)
			early_ok[s++] = true;
	}
}

/* The flusher's pass: take what is due, write it, hand it back. */
static int flush(struct aipu_flog *f, unsigned long cutoff, unsigned long now)
{
	static struct aipu_extent x[4 * AIPU_FLOG_TAKE_MIN];
	unsigned int n, i, max;
	pgoff_t p;

	max = AIPU_FLOG_TAKE_MIN + rand() % (3 * AIPU_FLOG_TAKE_MIN);
	n = TAKE(f, cutoff, x, max);
	for (i = 0; i < n; i++) {
		CHECK(time_before(x[i].time, cutoff));
		CHECK(!i || !time_after(x[i - 1].time, x[i].time));
		/*
	 * Dirty pages are due: a stale entry is not written.  A page declined
	 * when due is queued again at its merged extent's time, which may be a
	 * neighbour's, earlier than its own (as track_requeue() does today).
	 */
		for (p = x[i].index; p < x[i].index + x[i].nr; p++)
			CHECK(first[p] < 0 || whole[p] || early_ok[p] ||
			      retried[p] || time_before(T0 + first[p], cutoff));
	}
	/* Nothing due left behind unless @x filled up. */
	if (max - n >= AIPU_FLOG_TAKE_MIN)
		CHECK(oldest(f) == T0 - 1 || !time_before(oldest(f), cutoff));
	n = aipu_flog_merge(x, n);
	for (i = 0; i < n; i++) {
		for (p = x[i].index; p < x[i].index + x[i].nr; p++) {
			bool still = first[p] >= 0 && rand() % 10 == 0;

			if (!still)
				first[p] = -1;		/* written */
			retried[p] = still;
			if (rand() % 20 == 0)
				dirty(f, p, 1, now);	/* during the write */
			/* The flusher sees a dirty page: declined or new. */
			still = first[p] >= 0 && (still || rand() % 2);
			if (aipu_flog_done(f, p, 1, x[i].time, still))
				whole[p] = true;
		}
	}
	aipu_flog_end_pass(f, &(unsigned int){ ~0U });
	return 0;
}

static int test_model(void)
{
	unsigned long now = T0, step;
	struct aipu_flog f;
	unsigned int i;

	srand(unit_seed(7));
	aipu_flog_init(&f);
	for (i = 0; i < PAGES; i++)
		first[i] = -1;
	unit_fail_every = 60;
	for (step = 0; step < 60000; step++) {
		unsigned int r = rand() % 100;
		pgoff_t p = rand() % PAGES;

		if (r < 45) {
			dirty(&f, p, 1 + rand() % (r < 5 ? 300 : 8), now);
		} else if (r < 55) {
			/* fsync: cleaned by someone, in a later jiffy. */
			if (first[p] >= 0 && first[p] < (long)(now - T0)) {
				first[p] = -1;
				retried[p] = false;
				now++;
			}
		} else if (r < 75) {
			now += 1 + rand() % 3;
		} else if (flush(&f, now - rand() % 6, now)) {
			return 1;
		}
		if (step % 97 == 0 && check(&f))
			return 1;
	}
	unit_fail_every = 0;
	if (check(&f))
		return 1;
	aipu_flog_drop(&f, &(unsigned long){ ~0UL });
	CHECK(unit_no_memory_held());
	return 0;
}

int main(void)
{
	RUN(test_take_and_retry);
	RUN(test_retry_order);
	RUN(test_stale);
	RUN(test_same_jiffy);
	RUN(test_stale_run);
	RUN(test_take_room);
	RUN(test_merge);
	RUN(test_model);
	return unit_done();
}
