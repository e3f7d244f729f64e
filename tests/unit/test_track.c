// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of aipu's age-ordered tracking (src/track.c) in user space.
 *
 * Directed tests pin down each rule; a model-based test then drives random
 * dirtying, cleaning by "someone else", writes declined by ->writepage,
 * flusher passes with locked pages and allocation failures, and checks after
 * every step that each dirty page is covered exactly once, never by a time
 * later than its first dirtying (and exactly its time while memory lasts),
 * that the age list is sorted and that the counters match the structure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/jiffies.h>

#include "aipu_track.h"

static int passed, failed;
static const char *cur;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("  %s: %s:%d: %s\n", cur, __FILE__, __LINE__, \
			       #cond);                                     \
			return 1;                                          \
		}                                                          \
	} while (0)

/* ---- memory with failure injection and leak accounting ---- */

static long live_runs, live_trackers;
static int fail_runs;		/* fail the next N run allocations */
static int fail_every;		/* or every Nth, randomly */

struct aipu_run *aipu_run_alloc(void)
{
	if (fail_runs > 0) {
		fail_runs--;
		return NULL;
	}
	if (fail_every && rand() % fail_every == 0)
		return NULL;
	live_runs++;
	return calloc(1, sizeof(struct aipu_run));
}

void aipu_run_free(struct aipu_run *r)
{
	live_runs--;
	free(r);
}

struct aipu_tracker *aipu_tracker_alloc(void)
{
	live_trackers++;
	return calloc(1, sizeof(struct aipu_tracker));
}

void aipu_tracker_free(struct aipu_tracker *t)
{
	live_trackers--;
	free(t);
}

/* ---- the table that finds a tracker by its key (the kernel's rhashtable) ---- */

#define TABLE_MAX 16
static struct aipu_tracker *table[TABLE_MAX];
static int fail_inserts;	/* fail the next N inserts */

struct aipu_tracker *aipu_tracker_lookup(const void *key)
{
	int i;

	for (i = 0; i < TABLE_MAX; i++)
		if (table[i] && table[i]->key == key)
			return table[i];
	return NULL;
}

int aipu_tracker_insert(struct aipu_tracker *t)
{
	int i;

	if (fail_inserts > 0) {
		fail_inserts--;
		return -1;
	}
	if (aipu_tracker_lookup(t->key))
		return -1;	/* -EEXIST */
	for (i = 0; i < TABLE_MAX; i++) {
		if (!table[i]) {
			table[i] = t;
			return 0;
		}
	}
	return -1;
}

void aipu_tracker_remove(struct aipu_tracker *t)
{
	int i;

	for (i = 0; i < TABLE_MAX; i++)
		if (table[i] == t)
			table[i] = NULL;
}

/* ---- helpers ---- */

static struct aipu_track tr;
static char keys[8];

static void reset(void)
{
	track_clear(&tr);
	track_init(&tr);
	fail_runs = 0;
	fail_every = 0;
	fail_inserts = 0;
}

/*
 * Phase 1 as one pass, in batches of three entries (the kernel's are larger)
 * so that every scan also tests resuming after the lock was dropped.
 * Returns the pages moved.
 */
static unsigned long scan(unsigned long cutoff, bool all, unsigned long limit)
{
	unsigned int budget;

	tr.scan_moved = 0;
	do {
		budget = 3;
	} while (!track_scan(&tr, cutoff, all, limit, &budget));
	return tr.scan_moved;
}

/* Staging of the @runs oldest runs, in batches of two. */
static unsigned long stage(unsigned int runs)
{
	unsigned long moved = 0;
	unsigned int budget;

	do {
		budget = 2;
		moved += track_stage(&tr, &runs, &budget);
	} while (runs && !list_empty(&tr.waiting));
	return moved;
}

static void kill(struct aipu_tracker *t)
{
	while (!track_kill(&tr, t, 2))
		;
}

static struct aipu_run *run_at(struct aipu_tracker *t, pgoff_t index)
{
	struct rb_node *n;

	for (n = rb_first(&t->runs); n; n = rb_next(n)) {
		struct aipu_run *r = rb_entry(n, struct aipu_run, node);

		if (r->start <= index && index < r->end)
			return r;
	}
	return NULL;
}

static unsigned long count_runs(struct aipu_tracker *t)
{
	unsigned long n = 0;
	struct rb_node *p;

	for (p = rb_first(&t->runs); p; p = rb_next(p))
		n++;
	return n;
}

static int list_sorted(struct list_head *head)
{
	struct aipu_run *r, *prev = NULL;

	list_for_each_entry(r, head, lru) {
		if (prev && time_before(r->time, prev->time))
			return 0;
		prev = r;
	}
	return 1;
}

/* ---- directed tests ---- */

static int t_first_dirty_time(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);

	track_pages(&tr, t, 5, 1, 100, false);
	CHECK(run_at(t, 5)->time == 100);
	/* Not aged at 100 + 50: nothing moves, one entry looked at. */
	CHECK(scan(100, false, 0) == 0);
	CHECK(tr.st.entries_scanned == 1);
	/* Cleaned by someone and dirtied again: a new time. */
	track_pages(&tr, t, 5, 1, 200, false);
	CHECK(run_at(t, 5)->time == 200);
	CHECK(count_runs(t) == 1 && tr.st.pages_tracked == 1);
	CHECK(scan(150, false, 0) == 0);
	CHECK(scan(201, false, 0) == 1);
	return 0;
}

static int t_extend_same_jiffy(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	pgoff_t i;

	for (i = 0; i < 10; i++)
		track_pages(&tr, t, i, 1, 100, false);
	CHECK(count_runs(t) == 1);
	for (i = 20; i > 10; i--)	/* backwards writer */
		track_pages(&tr, t, i, 1, 100, false);
	CHECK(count_runs(t) == 2);
	track_pages(&tr, t, 10, 1, 100, false);	/* fills the hole: merge */
	CHECK(count_runs(t) == 1 && run_at(t, 0)->end == 21);
	track_pages(&tr, t, 21, 1, 101, false);	/* next jiffy: new run */
	CHECK(count_runs(t) == 2);
	CHECK(tr.st.pages_tracked == 22 && tr.st.runs_tracked == 2);
	return 0;
}

static int t_carve_split(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);

	track_pages(&tr, t, 0, 10, 100, false);
	track_pages(&tr, t, 5, 1, 200, false);
	CHECK(count_runs(t) == 3);
	CHECK(run_at(t, 4)->time == 100 && run_at(t, 6)->time == 100);
	CHECK(run_at(t, 5)->time == 200);
	CHECK(tr.st.pages_tracked == 10 && list_sorted(&tr.waiting));
	/* A large folio over several runs replaces them. */
	track_pages(&tr, t, 2, 6, 300, false);
	CHECK(run_at(t, 2)->time == 300 && run_at(t, 7)->time == 300);
	CHECK(run_at(t, 1)->time == 100 && run_at(t, 9)->time == 100);
	CHECK(tr.st.pages_tracked == 10 && list_sorted(&tr.waiting));
	return 0;
}

static int t_scan_touches_aged_plus_one(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	unsigned long i;

	for (i = 0; i < 1000; i++)
		track_pages(&tr, t, 2 * i, 1, 1000 + i, false);
	CHECK(scan(1010, false, 0) == 10);
	CHECK(tr.st.entries_scanned == 11);
	/* PU: everything, each entry once. */
	CHECK(scan(0, true, 0) == 990);
	CHECK(tr.st.entries_scanned == 11 + 990);
	/* A limit stops the scan early. */
	reset();
	t = track_get(&tr, &keys[0], NULL);
	for (i = 0; i < 100; i++)
		track_pages(&tr, t, 2 * i, 1, 1000 + i, false);
	CHECK(scan(5000, false, 30) == 30);
	CHECK(tr.st.pages_deferred == 70);
	/* The deferred stay first in line, oldest first. */
	CHECK(list_first_entry(&tr.waiting, struct aipu_run, lru)->time == 1030);
	CHECK(list_sorted(&tr.waiting));
	return 0;
}

static int t_stage_oldest_first(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r;

	track_pages(&tr, t, 10, 2, 100, false);
	track_pages(&tr, t, 0, 1, 101, false);
	track_pages(&tr, t, 20, 1, 102, false);
	CHECK(!track_idle(&tr));
	CHECK(stage(2) == 3 && tr.st.pages_staged == 3);
	r = track_take(&tr, 0, true);
	CHECK(r->start == 10 && r->time == 100);
	track_done(&tr, r);
	r = track_take(&tr, 0, true);
	CHECK(r->start == 0 && r->time == 101);
	track_done(&tr, r);
	CHECK(track_take(&tr, 0, true) == NULL && !track_idle(&tr));
	CHECK(stage(5) == 1);
	r = track_take(&tr, 0, true);
	track_done(&tr, r);
	CHECK(track_idle(&tr));
	return 0;
}

static int t_take_absorbs_neighbours(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r;

	track_pages(&tr, t, 0, 5, 100, false);
	track_pages(&tr, t, 5, 5, 101, false);
	track_pages(&tr, t, 10, 5, 300, false);	/* not aged: stays */
	CHECK(scan(200, false, 0) == 10);
	r = track_take(&tr, 0, true);
	CHECK(r && r->start == 0 && r->end == 10 && r->time == 100);
	CHECK(r->state == AIPU_ISSUING && t->users == 1);
	CHECK(track_take(&tr, 0, true) == NULL);
	CHECK(tr.st.pages_tracked == 5);
	track_done(&tr, r);
	CHECK(t->users == 0 && tr.st.runs_tracked == 1);
	/* The last run written: the tracker goes too. */
	scan(400, false, 0);
	r = track_take(&tr, 0, true);
	track_done(&tr, r);
	CHECK(track_find(&tr, &keys[0]) == NULL && live_trackers == 0);
	return 0;
}

/* Paced AIPU queues runs ahead of time: take writes only the due ones. */
static int t_take_due_only(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	unsigned long time = 0;
	struct aipu_run *r;

	CHECK(!track_next_time(&tr, &time));
	track_pages(&tr, t, 0, 5, 100, false);
	track_pages(&tr, t, 5, 5, 150, false);
	track_pages(&tr, t, 10, 5, 160, false);
	CHECK(scan(200, false, 0) == 15);
	CHECK(track_next_time(&tr, &time) && time == 100);
	r = track_take(&tr, 151, false);
	CHECK(r && r->start == 0 && r->end == 10 && r->time == 100);
	track_done(&tr, r);
	CHECK(track_next_time(&tr, &time) && time == 160);
	r = track_take(&tr, 161, false);
	CHECK(r && r->start == 10 && r->end == 15);
	track_done(&tr, r);
	CHECK(track_idle(&tr));
	return 0;
}

static int t_requeue_keeps_old_time(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r, *w;

	track_pages(&tr, t, 0, 10, 100, false);
	track_pages(&tr, t, 50, 1, 250, false);
	scan(200, false, 0);
	r = track_take(&tr, 0, true);
	/* Page 3 dirtied again while the run was being written. */
	track_pages(&tr, t, 3, 1, 300, false);
	/* Pages 0-9 still dirty (locked): put back all but page 3. */
	CHECK(track_requeue(&tr, r, 0, 10) == 9);
	track_done(&tr, r);
	CHECK(run_at(t, 0)->time == 100 && run_at(t, 9)->time == 100);
	CHECK(run_at(t, 3)->time == 300);
	CHECK(tr.st.pages_tracked == 11);
	track_end_pass(&tr, 0);
	/* Retried runs go to the head, oldest first: list stays sorted. */
	CHECK(list_sorted(&tr.waiting));
	w = list_first_entry(&tr.waiting, struct aipu_run, lru);
	CHECK(w->time == 100);
	CHECK(tr.hist[0] == 1 && tr.st.flusher_runs == 1);
	return 0;
}

/*
 * The pages put back must not live in the run the flusher still holds: the
 * tracker owns them from then on and may free them before track_done():
 * eviction when the flusher drops its inode reference (found by KASAN in
 * the debug kernel's stress run), or pages cleaned and dirtied again.
 */
static int t_requeued_pages_outlive_issued_run(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r;

	track_pages(&tr, t, 0, 10, 100, false);
	scan(101, false, 0);
	r = track_take(&tr, 0, true);
	CHECK(track_requeue(&tr, r, 0, 10) == 10);
	CHECK(run_at(t, 0) && run_at(t, 0) != r && run_at(t, 0)->time == 100);
	kill(t);		/* the last iput, before track_done() */
	track_done(&tr, r);
	CHECK(live_trackers == 0 && live_runs == 0);

	t = track_get(&tr, &keys[1], NULL);
	track_pages(&tr, t, 0, 10, 100, false);
	scan(101, false, 0);
	r = track_take(&tr, 0, true);
	CHECK(track_requeue(&tr, r, 0, 10) == 10);
	track_pages(&tr, t, 0, 10, 300, false);	/* cleaned, dirtied again */
	track_done(&tr, r);
	CHECK(run_at(t, 0)->time == 300 && run_at(t, 9)->time == 300);
	CHECK(tr.st.runs_tracked == 1 && live_runs == 1);
	CHECK(tr.st.pages_tracked == 10);
	return 0;
}

/*
 * A write declined by ->writepage (folio_redirty_for_writepage()) dirties
 * the page again without its having been written: it keeps its first-dirty
 * time, whether its run is waiting or being written.
 */
static int t_redirty_keeps_time(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r;

	track_pages(&tr, t, 0, 10, 100, false);
	track_pages(&tr, t, 20, 1, 150, false);
	track_redirty(&tr, t, 20, 1, 300);	/* waiting: keeps 150 */
	CHECK(run_at(t, 20)->time == 150 && count_runs(t) == 2);
	scan(200, false, 0);
	r = track_take(&tr, 0, true);
	CHECK(r && r->start == 0 && r->end == 10 && t->issuing == r);
	/* Declined while its run is being written: no run of its own ... */
	track_redirty(&tr, t, 3, 1, 300);
	CHECK(!run_at(t, 3) && t->declined == 1);
	/* ... and put back at the run's time when the write returns. */
	CHECK(track_requeue(&tr, r, 3, 4) == 1);
	track_done(&tr, r);
	CHECK(!t->issuing);
	CHECK(run_at(t, 3)->time == 100);
	/* A page aipu never knew (dirty before load) gets the time given. */
	track_redirty(&tr, t, 2, 3, 400);
	CHECK(run_at(t, 2)->time == 400 && run_at(t, 3)->time == 100 &&
	      run_at(t, 4)->time == 400);
	CHECK(tr.st.pages_redirtied == 5 && tr.st.pages_tracked == 4);
	CHECK(tr.st.pages_dirtied == 13);
	return 0;
}

/*
 * Lazytime timestamps: one entry per inode on the device's times list, in
 * first-dirty order; a dirtying that finds them clean moves the entry to
 * the tail; a retry goes back to the head, one dirtied anew in order.
 */
static int t_times(void)
{
	struct aipu_tracker *a = track_get(&tr, &keys[0], NULL);
	struct aipu_tracker *b = track_get(&tr, &keys[1], NULL);
	struct aipu_tracker *c = track_get(&tr, &keys[2], NULL);
	struct aipu_run *r;

	track_times(&tr, a, 100, true);
	track_times(&tr, b, 110, true);
	track_times(&tr, a, 120, false);	/* still dirty: keeps 100 */
	track_times(&tr, c, 130, true);
	CHECK(a->times.time == 100 && tr.st.times_dirtied == 3);
	CHECK(list_sorted(&tr.times) && !track_idle(&tr));
	CHECK(!track_take_times(&tr, 99));
	r = track_take_times(&tr, 105);
	CHECK(r == &a->times && r->state == AIPU_ISSUING);
	CHECK(!track_take_times(&tr, 105));
	track_requeue_times(&tr, r);		/* not yet expired: retry */
	track_done(&tr, r);
	CHECK(list_first_entry(&tr.times, struct aipu_run, lru) == r);
	/* Written by someone else, then dirtied again at 140: to the tail. */
	track_times(&tr, a, 140, true);
	CHECK(list_last_entry(&tr.times, struct aipu_run, lru) == &a->times);
	CHECK(list_sorted(&tr.times));
	/* Dirtied anew while being written: requeued where 135 belongs. */
	r = track_take_times(&tr, 200);
	CHECK(r == &b->times);
	track_times(&tr, b, 135, true);
	track_requeue_times(&tr, r);
	track_done(&tr, r);
	CHECK(list_sorted(&tr.times) && b->times.time == 135);
	CHECK(list_first_entry(&tr.times, struct aipu_run, lru) == &c->times);
	/* Written: the tracker has nothing else, so it goes. */
	r = track_take_times(&tr, 200);
	CHECK(r == &c->times);
	track_done(&tr, r);
	CHECK(tr.st.trackers == 2 && live_trackers == 2);
	kill(a);
	CHECK(list_first_entry(&tr.times, struct aipu_run, lru) == &b->times);
	CHECK(list_is_singular(&tr.times));
	return 0;
}

static int t_alloc_failure_degrades(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);

	track_pages(&tr, t, 0, 10, 100, false);
	/* Split impossible: page 5 keeps the older time (written early). */
	fail_runs = 1;
	track_pages(&tr, t, 5, 1, 200, false);
	CHECK(run_at(t, 5)->time == 100 && tr.st.fallbacks == 1);
	/* New run impossible: the whole mapping at the oldest such time. */
	fail_runs = 1;
	track_pages(&tr, t, 40, 1, 300, false);
	CHECK(t->whole.state == AIPU_WAITING && t->whole.time == 300);
	/* While it waits, new pages need no memory: it covers them. */
	track_pages(&tr, t, 60, 1, 400, false);
	CHECK(!run_at(t, 60) && live_runs == 1 && tr.st.pages_dirtied == 13);
	CHECK(tr.st.fallbacks == 2 && list_sorted(&tr.waiting));
	CHECK(scan(301, false, 0) == 11);
	return 0;
}

static int t_meta(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r;

	track_meta(&tr, t, 100, true);
	track_meta(&tr, t, 150, false);		/* still dirty: keeps 100 */
	CHECK(t->meta.time == 100);
	track_meta(&tr, t, 200, true);		/* cleaned meanwhile */
	CHECK(t->meta.time == 200 && tr.st.meta_dirtied == 2);
	CHECK(scan(201, false, 0) == 1);
	r = track_take(&tr, 0, true);
	CHECK(r == &t->meta && r->state == AIPU_ISSUING);
	track_requeue_embedded(&tr, r);
	track_done(&tr, r);
	CHECK(t->meta.state == AIPU_WAITING && t->users == 0);
	return 0;
}

static int t_kill_while_issuing(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r;

	track_pages(&tr, t, 0, 4, 100, false);
	track_pages(&tr, t, 10, 4, 100, false);
	track_meta(&tr, t, 100, true);
	scan(101, true, 0);
	r = track_take(&tr, 0, true);
	kill(t);		/* evicted while the flusher holds r */
	CHECK(live_trackers == 1 && track_find(&tr, &keys[0]) == NULL);
	CHECK(track_requeue(&tr, r, 0, 4) == 0);
	CHECK(list_empty(&tr.pending) && list_empty(&tr.waiting));
	track_done(&tr, r);
	CHECK(live_trackers == 0 && live_runs == 0);
	CHECK(tr.st.pages_tracked == 0 && tr.st.runs_tracked == 0);
	return 0;
}

static int t_pending_inherit(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[1], NULL);
	struct aipu_run *r;

	track_pages(&tr, t, 7, 1, 50, true);
	r = track_take(&tr, 0, true);
	CHECK(r && r->start == 7 && r->time == 50);
	track_done(&tr, r);
	return 0;
}

static int t_oldest(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);

	CHECK(track_oldest(&tr, 1000) == 0);
	track_pages(&tr, t, 0, 1, 400, false);
	track_pages(&tr, t, 9, 1, 700, false);
	CHECK(track_oldest(&tr, 1000) == 600);
	return 0;
}

/*
 * Eviction of a mapping with many runs frees them a batch at a time; in
 * between, the flusher may take and finish one of them.  The tracker stays
 * allocated until the last batch and nobody can find it from the first.
 */
static int t_kill_in_batches(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	struct aipu_run *r1, *r2;
	unsigned long i;

	for (i = 0; i < 10; i++)
		track_pages(&tr, t, 2 * i, 1, 100 + i, false);
	scan(103, false, 0);
	r1 = track_take(&tr, 0, true);
	r2 = track_take(&tr, 0, true);
	CHECK(r1 && r1->start == 0 && r2 && r2->start == 2);
	CHECK(!track_kill(&tr, t, 2));
	CHECK(track_find(&tr, &keys[0]) == NULL && live_trackers == 1);
	/* The lock dropped: the flusher finishes one run. */
	CHECK(track_requeue(&tr, r1, 0, 1) == 0);
	track_done(&tr, r1);
	CHECK(live_trackers == 1);
	while (!track_kill(&tr, t, 2))
		;
	CHECK(live_trackers == 1);	/* the flusher still holds r2 */
	track_done(&tr, r2);
	CHECK(live_trackers == 0 && live_runs == 0);
	CHECK(tr.st.pages_tracked == 0 && tr.st.trackers == 0);
	CHECK(list_empty(&tr.waiting) && list_empty(&tr.pending));
	return 0;
}

/*
 * Past AIPU_RUNS_PER_TRACKER_MAX runs a mapping takes no more: a new page is
 * bounded by the whole-mapping run at its time (written early, never late),
 * counted as a fallback; the runs it has keep their times.
 */
static int t_runs_cap(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	unsigned long i;

	for (i = 0; i < AIPU_RUNS_PER_TRACKER_MAX; i++)
		track_pages(&tr, t, 2 * i, 1, 100, false);
	CHECK(t->nr_runs == AIPU_RUNS_PER_TRACKER_MAX && tr.st.fallbacks == 0);
	CHECK(t->whole.state == AIPU_IDLE);
	track_pages(&tr, t, 2 * i, 1, 200, false);
	CHECK(t->nr_runs == AIPU_RUNS_PER_TRACKER_MAX && tr.st.fallbacks == 1);
	CHECK(t->whole.state == AIPU_WAITING && t->whole.time == 200);
	/* While the whole-mapping run waits, new pages take nothing. */
	track_pages(&tr, t, 1, 1, 300, false);
	CHECK(tr.st.fallbacks == 1 && !run_at(t, 1));
	CHECK(t->nr_runs == AIPU_RUNS_PER_TRACKER_MAX && list_sorted(&tr.waiting));
	return 0;
}

/*
 * A file written a page a jiffy: one take folds at most AIPU_ABSORB_MAX
 * neighbours into its run, the next take the rest; every page once.
 */
static int t_absorb_bounded(void)
{
	struct aipu_tracker *t = track_get(&tr, &keys[0], NULL);
	unsigned long i, n = AIPU_ABSORB_MAX + 50, pages = 0;
	struct aipu_run *r;

	for (i = 0; i < n; i++)
		track_pages(&tr, t, i, 1, 100 + i, false);
	CHECK(scan(100 + n, false, 0) == n);
	while ((r = track_take(&tr, 0, true))) {
		CHECK(r->end - r->start <= AIPU_ABSORB_MAX + 1);
		pages += r->end - r->start;
		track_done(&tr, r);
	}
	CHECK(pages == n && tr.st.pages_tracked == 0);
	return 0;
}

/*
 * Memory pressure: a file's runs go, a batch at a time, and its whole-file
 * run takes the device's oldest time at the head of the age list, so every
 * page it now covers is written no later than its own run would have been.
 */
static int t_degrade(void)
{
	struct aipu_tracker *a = track_get(&tr, &keys[0], NULL);
	struct aipu_tracker *b = track_get(&tr, &keys[1], NULL);
	unsigned long i;

	track_pages(&tr, a, 100, 1, 50, false);		/* the device's oldest */
	for (i = 0; i < 10; i++)
		track_pages(&tr, b, 2 * i, 1, 100 + i, false);
	CHECK(track_degrade(&tr, b, 4, 200) == 4 && b->nr_runs == 6);
	CHECK(b->whole.state == AIPU_WAITING && b->whole.time == 50);
	CHECK(list_first_entry(&tr.waiting, struct aipu_run, lru) == &b->whole);
	CHECK(tr.st.fallbacks == 1 && list_sorted(&tr.waiting));
	CHECK(track_degrade(&tr, b, 100, 200) == 6 && b->nr_runs == 0);
	CHECK(tr.st.fallbacks == 1 && tr.st.pages_tracked == 1);
	CHECK(track_degrade(&tr, b, 100, 200) == 0);
	/* Due with the oldest page: written early, never late. */
	CHECK(scan(51, false, 0) == 2);
	/* Not while the whole mapping is being written. */
	track_pages(&tr, b, 7, 1, 300, false);	/* covered by the whole run */
	CHECK(!run_at(b, 7));
	{
		struct aipu_run *r;

		while ((r = track_take(&tr, 0, true)) && r != &b->whole)
			track_done(&tr, r);
		CHECK(r == &b->whole && r->state == AIPU_ISSUING);
		track_pages(&tr, b, 9, 1, 400, false);	/* a run again */
		CHECK(run_at(b, 9) && track_degrade(&tr, b, 100, 500) == 0);
		track_done(&tr, r);
	}
	return 0;
}

/*
 * Umount holds the file system for long: the run being issued and every
 * other run of its file go under the whole-file run, at the device's
 * oldest time, and the file is then put back once a period, not per run.
 */
static int t_park(void)
{
	struct aipu_tracker *a = track_get(&tr, &keys[0], NULL);
	struct aipu_tracker *b = track_get(&tr, &keys[1], NULL);
	struct aipu_run *r;
	unsigned long i;

	track_pages(&tr, a, 100, 1, 50, false);		/* the device's oldest */
	for (i = 0; i < 10; i++)
		track_pages(&tr, b, 2 * i, 1, 100 + i, false);
	CHECK(scan(101, false, 0) == 2);
	r = track_take(&tr, 0, true);
	CHECK(r && r->t == a);
	track_done(&tr, r);
	r = track_take(&tr, 0, true);
	CHECK(r && r->t == b && r->start == 0 && r->time == 100);
	/* Issuing page 0 of b failed: umount holds its super block. */
	CHECK(track_park(&tr, b, r->time, 4, 300) == 4 && b->nr_runs == 6);
	CHECK(b->whole.state == AIPU_WAITING && b->whole.time == 100);
	CHECK(tr.st.fallbacks == 1);
	CHECK(track_park(&tr, b, r->time, 4, 300) == 4);
	CHECK(track_park(&tr, b, r->time, 4, 300) == 1);
	CHECK(track_park(&tr, b, r->time, 4, 300) == 0 && b->nr_runs == 1);
	CHECK(tr.st.fallbacks == 1 && tr.st.pages_tracked == 0);
	CHECK(list_sorted(&tr.waiting));
	track_done(&tr, r);
	/* The whole-file run covers page 0 too, and is due with it. */
	track_end_pass(&tr, 0);
	CHECK(scan(101, false, 0) == 1);
	r = track_take(&tr, 0, true);
	CHECK(r == &b->whole && r->time <= 100);
	track_done(&tr, r);
	/* A file whose one run is being issued: that run's pages stay covered. */
	a = track_get(&tr, &keys[3], NULL);
	track_pages(&tr, a, 7, 1, 200, false);
	track_end_pass(&tr, 0);
	CHECK(scan(201, false, 0) == 1);
	r = track_take(&tr, 0, true);
	CHECK(r && r->t == a && RB_EMPTY_ROOT(&a->runs));
	CHECK(track_park(&tr, a, r->time, 4, 300) == 0);
	CHECK(a->whole.state == AIPU_WAITING && a->whole.time == 200);
	CHECK(tr.st.fallbacks == 2);
	track_done(&tr, r);
	track_end_pass(&tr, 0);
	CHECK(scan(201, false, 0) == 1);
	r = track_take(&tr, 0, true);
	CHECK(r == &a->whole);
	track_done(&tr, r);
	/* Nothing to park on a dead tracker. */
	a = track_get(&tr, &keys[2], NULL);
	track_pages(&tr, a, 5, 1, 400, false);
	track_hold(a);
	track_kill(&tr, a, ~0UL);
	CHECK(track_park(&tr, a, 400, 4, 500) == 0 && tr.st.fallbacks == 2);
	CHECK(a->whole.state == AIPU_IDLE);
	track_put(&tr, a);
	return 0;
}

/* The table cannot take the tracker: no tracker, no leak. */
static int t_insert_failure(void)
{
	fail_inserts = 1;
	CHECK(track_get(&tr, &keys[0], NULL) == NULL && live_trackers == 0);
	CHECK(track_get(&tr, &keys[0], NULL) != NULL && live_trackers == 1);
	CHECK(tr.st.trackers == 1);
	return 0;
}

/* ---- model-based test ---- */

#define MAPS 3
#define PAGES 96

struct model {
	bool dirty[MAPS][PAGES];
	unsigned long first[MAPS][PAGES];
	bool degraded[MAPS];	/* some fallback touched this mapping */
	bool retried[MAPS][PAGES];	/* kept by a pass: may carry the
					 * older time of a merged neighbour */
};

static int covered_once(struct aipu_tracker *t, pgoff_t i,
			struct aipu_run **found)
{
	int n = 0;
	struct rb_node *p;

	for (p = rb_first(&t->runs); p; p = rb_next(p)) {
		struct aipu_run *r = rb_entry(p, struct aipu_run, node);

		if (r->start <= i && i < r->end) {
			*found = r;
			n++;
		}
	}
	return n;
}

static int check_model(struct model *m, struct aipu_tracker **ts)
{
	unsigned long pages = 0, runs = 0;
	int k;
	pgoff_t i;

	CHECK(list_sorted(&tr.waiting));
	for (k = 0; k < MAPS; k++) {
		struct aipu_run *prev = NULL, *r;
		struct rb_node *p;

		for (p = rb_first(&ts[k]->runs); p; p = rb_next(p)) {
			r = rb_entry(p, struct aipu_run, node);
			CHECK(r->start < r->end);
			CHECK(!prev || prev->end <= r->start);
			pages += r->end - r->start;
			runs++;
			prev = r;
		}
		for (i = 0; i < PAGES; i++) {
			struct aipu_run *w = &ts[k]->whole;

			if (!m->dirty[k][i])
				continue;
			r = NULL;
			if (covered_once(ts[k], i, &r) == 0) {
				/* Only the whole-mapping fallback may cover. */
				CHECK(w->state == AIPU_WAITING);
				CHECK(!time_after(w->time, m->first[k][i]));
				continue;
			}
			CHECK(!time_after(r->time, m->first[k][i]));
			if (!m->degraded[k] && !m->retried[k][i])
				CHECK(r->time == m->first[k][i]);
		}
	}
	CHECK(tr.st.pages_tracked == pages);
	CHECK(tr.st.runs_tracked == runs && live_runs == (long)runs);
	return 0;
}

/* Trackers come and go (an empty one is freed): look them up again. */
static void refresh(struct aipu_tracker **ts)
{
	int k;

	for (k = 0; k < MAPS; k++)
		ts[k] = track_get(&tr, &keys[k], NULL);
}

/* One flusher pass: write aged pages; some are locked and stay dirty. */
static int model_pass(struct model *m, struct aipu_tracker **ts,
		      unsigned long now, unsigned long age)
{
	struct aipu_run *r;
	int k;
	pgoff_t i;

	scan(now - age, false, 0);
	while ((r = track_take(&tr, 0, true))) {
		pgoff_t s = r->kind == AIPU_WHOLE ? 0 : r->start;
		pgoff_t e = r->kind == AIPU_WHOLE ? PAGES : r->end;

		for (k = 0; ts[k] != r->t; k++)
			;
		if (r->kind == AIPU_META) {
			track_done(&tr, r);
			continue;
		}
		for (i = s; i < e; i++) {
			if (m->dirty[k][i] && rand() % 5)
				m->dirty[k][i] = false;	/* written */
			else if (m->dirty[k][i] && rand() % 2)
				track_redirty(&tr, r->t, i, 1, now); /* declined */
		}
		/* Requeue each still-dirty stretch, as requeue_dirty() does. */
		for (i = s; i < e; i++) {
			pgoff_t j = i;

			while (j < e && m->dirty[k][j])
				j++;
			if (j > i) {
				pgoff_t x;

				for (x = i; x < j; x++)
					m->retried[k][x] = true;
				if (fail_every)
					m->degraded[k] = true;
				track_requeue(&tr, r, i, j);
			}
			i = j;
		}
		track_done(&tr, r);
	}
	track_end_pass(&tr, 0);
	refresh(ts);
	/* The age bound: nothing aged is left untracked-for-writing. */
	for (k = 0; k < MAPS; k++)
		for (i = 0; i < PAGES; i++)
			if (m->dirty[k][i] && !m->degraded[k])
				CHECK(run_at(ts[k], i) != NULL);
	return 0;
}

static int t_model(void)
{
	static struct model m;
	struct aipu_tracker *ts[MAPS];
	unsigned long now = 1000, age = 40;

	refresh(ts);
	int step, k;

	memset(&m, 0, sizeof(m));
	for (step = 0; step < 20000; step++) {
		int op = rand() % 100;
		pgoff_t i = rand() % PAGES;
		unsigned long nr = 1 + (rand() % 8 == 0 ? rand() % 4 : 0);

		refresh(ts);

		k = rand() % MAPS;
		if (i + nr > PAGES)
			nr = PAGES - i;
		fail_every = (step / 5000) % 2 ? 7 : 0;
		if (op < 55) {
			/* A folio goes clean -> dirty (only if all clean). */
			pgoff_t j;
			bool clean = true;

			for (j = i; j < i + nr; j++)
				clean &= !m.dirty[k][j];
			if (!clean)
				continue;
			for (j = i; j < i + nr; j++) {
				m.dirty[k][j] = true;
				m.first[k][j] = now;
				m.retried[k][j] = false;
			}
			if (fail_every)
				m.degraded[k] = true;
			track_pages(&tr, ts[k], i, nr, now, false);
		} else if (op < 70) {
			m.dirty[k][i] = false;	/* fsync / reclaim */
		} else if (op < 92) {
			now += rand() % 3;
		} else if (op < 95) {
			/* Someone's write of a dirty folio was declined. */
			pgoff_t j;
			bool dirty = true;

			for (j = i; j < i + nr; j++)
				dirty &= m.dirty[k][j];
			if (dirty)
				track_redirty(&tr, ts[k], i, nr, now);
		} else {
			if (model_pass(&m, ts, now, age))
				return 1;
		}
		if (check_model(&m, ts))
			return 1;
	}
	return 0;
}

struct test {
	const char *name;
	int (*fn)(void);
};

static const struct test tests[] = {
	{ "first_dirty_time", t_first_dirty_time },
	{ "extend_same_jiffy", t_extend_same_jiffy },
	{ "carve_split", t_carve_split },
	{ "scan_touches_aged_plus_one", t_scan_touches_aged_plus_one },
	{ "take_absorbs_neighbours", t_take_absorbs_neighbours },
	{ "take_due_only", t_take_due_only },
	{ "stage_oldest_first", t_stage_oldest_first },
	{ "requeue_keeps_old_time", t_requeue_keeps_old_time },
	{ "requeued_pages_outlive_issued_run", t_requeued_pages_outlive_issued_run },
	{ "redirty_keeps_time", t_redirty_keeps_time },
	{ "times", t_times },
	{ "alloc_failure_degrades", t_alloc_failure_degrades },
	{ "meta", t_meta },
	{ "kill_while_issuing", t_kill_while_issuing },
	{ "pending_inherit", t_pending_inherit },
	{ "oldest", t_oldest },
	{ "kill_in_batches", t_kill_in_batches },
	{ "runs_cap", t_runs_cap },
	{ "insert_failure", t_insert_failure },
	{ "absorb_bounded", t_absorb_bounded },
	{ "degrade", t_degrade },
	{ "park", t_park },
	{ "model", t_model },
};

int main(void)
{
	unsigned int i;

	srand(42);
	track_init(&tr);
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		cur = tests[i].name;
		reset();
		if (tests[i].fn()) {
			printf("FAIL unit/%s\n", cur);
			failed++;
		} else {
			printf("PASS unit/%s\n", cur);
			passed++;
		}
	}
	reset();
	if (live_runs || live_trackers) {
		printf("FAIL unit/no_leaks: %ld runs, %ld trackers\n",
		       live_runs, live_trackers);
		failed++;
	} else {
		printf("PASS unit/no_leaks\n");
		passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
