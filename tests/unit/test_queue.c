// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of a device's queue built from logs (src/queue/queue.c, with
 * src/queue/flog.c, src/queue/log.c, src/queue/live.c and src/queue/wheel.c) in
 * user space.
 *
 * A model-based test drives several files of one device over a clock that
 * crosses the jiffies wrap, now and then jumping more than the wheel's turn
 * (a stalled flusher) and with cutoffs up to one and a half turns back (a
 * max_age beyond the wheel's span: files wrapped round in it): writers
 * dirty ranges of pages, timestamps (lazytime) and inodes, someone else
 * cleans pages (fsync), reclaim declines writes (through the probe's test,
 * aipu_queue_may_redirty(), of whether that needs a look), files are evicted,
 * degraded by the shrinker and parked, in bounded steps; the flusher runs
 * passes (phase 1 with random budgets, staging now and then, phase 2
 * until nothing is left or max_batch stops it) that write what is due,
 * with pages declined, dirtied again, or dirtying other files' pages
 * (which inherit the write's age) during their write, and allocations
 * fail now and then (a second run).  Checked: between steps, every dirty
 * page is covered by a live queued entry or its file's whole-file entry, no
 * later than its first-dirty time, and dirty timestamps are queued; in a
 * pass, no page is written before it is due (except where a fallback, a
 * decline or staging made it early), a batch goes past max_batch by less
 * than an entry, staged files go whole, and after a pass nothing due is
 * left but what was put back; at the end no memory is held.  Writers take
 * the probe's fast path (aipu_queue_pages_fast()) when it will have them, half
 * the time; every change to a file is made under its lock, one file's at a
 * time (the lock hooks below abort otherwise).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/jiffies.h>

#include "aipu_queue.h"
#include "unit.h"

#define NF 8
#define PAGES 600

static char keys[NF];
static struct aipu_file *table[NF];

/* A tracker and its lock, as struct aipu_mapping in the kernel. */
struct utracker {
	struct aipu_file t;
	bool held;
};

static unsigned int locks_held;		/* file locks held: 0 or 1 */

struct aipu_file *aipu_file_alloc(void)
{
	struct utracker *u;

	if (unit_fail())
		return NULL;
	unit_mem.trackers++;
	u = calloc(1, sizeof(*u));
	return &u->t;
}

void aipu_file_free(struct aipu_file *t)
{
	struct utracker *u = container_of(t, struct utracker, t);

	if (u->held) {
		printf("  tracker freed with its lock held\n");
		abort();
	}
	unit_mem.trackers--;
	memset(u, 0x5a, sizeof(*u));	/* a use after free shows */
	free(u);
}

/* One file's lock at a time, never taken twice: what lockdep would say. */
void aipu_file_lock(struct aipu_file *t)
{
	struct utracker *u = container_of(t, struct utracker, t);

	if (u->held || locks_held) {
		printf("  file lock taken twice or nested in another\n");
		abort();
	}
	u->held = true;
	locks_held++;
}

void aipu_file_unlock(struct aipu_file *t)
{
	struct utracker *u = container_of(t, struct utracker, t);

	if (!u->held) {
		printf("  file lock released but not held\n");
		abort();
	}
	u->held = false;
	locks_held--;
}

/* What the fast path added: the probe's per-CPU share of the counters. */
static struct aipu_queue_delta fast;
static unsigned long fast_taken, fast_refused;
static unsigned long redirty_asked, redirty_skipped, meta_fast;

struct aipu_file *aipu_file_lookup(const void *key)
{
	return table[(const char *)key - keys];
}

int aipu_file_insert(struct aipu_file *t)
{
	table[(const char *)t->key - keys] = t;
	return 0;
}

void aipu_file_remove(struct aipu_file *t)
{
	table[(const char *)t->key - keys] = NULL;
}

#define T0 ((unsigned long)-5000)	/* 5000 jiffies before the wrap */
/* Jiffies a slot, and a whole turn of the wheel: files wrap round in it. */
#define WHEEL_WIDTH 4
#define WHEEL_TURN (WHEEL_WIDTH * AIPU_QUEUE_SLOTS)

static struct aipu_queue tr;
static struct list_head slots[AIPU_QUEUE_SLOTS];
static unsigned long now;
static long first[NF][PAGES];		/* first-dirty time - T0, -1 clean */
/*
 * A fallback may write the page early: an entry whose live bit could not
 * be recorded stays live past later dirtyings, until it is taken; kept
 * until the file is evicted.
 */
static bool early_ok[NF][PAGES];
static bool declined[NF][PAGES];	/* put back in the last pass */
static bool retried[NF][PAGES];		/* put back when due: early later */
static bool fresh[NF][PAGES];		/* dirtied during this pass */
/*
 * Jiffy in which a whole-file write last cleaned the page: a write that
 * does not go through the page's entries, like fsync; dirtied again in that
 * jiffy, the page has two entries of one time, and once one is written the
 * other may cover a later dirtying early (aipu_live.h: early, never late).
 */
static long whole_clean[NF][PAGES];
static struct aipu_file *dying[NF];	/* being evicted */
static long times_first[NF];		/* lazytime timestamps dirty since */
static long meta_first[NF];		/* the inode dirty since */
static bool meta_declined[NF];		/* its write declined this pass */
static bool whole_declined[NF];		/* so for the whole-file entry */

/*
 * Takes a cgroup context's worker holds (src/wbq.c): written later, maybe
 * passes later, after the file's eviction, in any order.
 */
#define NHELD 4
static struct {
	struct aipu_batch b;
	struct aipu_entry *e;
	bool used;
} held[NHELD];
/* Held takes so far: the model must have held some. */
static unsigned long held_taken;

static const struct aipu_file *held_tracker(int k)
{
	if (!held[k].used)
		return NULL;
	return held[k].e ? held[k].e->t : held[k].b.t;
}

/* The model's last pass: every held take written, none held again. */
static bool drain_held;

/* Is page @p of file @f in a held take no later than its first time? */
static bool held_covers(int f, pgoff_t p)
{
	const struct aipu_batch *b;
	unsigned int i, k;

	for (k = 0; k < NHELD; k++) {
		if (!held[k].used)
			continue;
		if (held[k].e) {
			if (held[k].e->t == table[f] &&
			    held[k].e->kind == AIPU_ENTRY_WHOLE &&
			    !time_after(held[k].e->time, T0 + first[f][p]))
				return true;
			continue;
		}
		b = &held[k].b;
		if (b->t != table[f])
			continue;
		for (i = 0; i < b->n; i++)
			if (p >= b->x[i].index &&
			    p < b->x[i].index + b->x[i].nr &&
			    !time_after(b->x[i].time, T0 + first[f][p]))
				return true;
	}
	return false;
}

/*
 * File @f's queue is drained (the shrinker, an umount's park) while takes
 * of it are held: the live bits of their pages go with it, so a page
 * cleaned by someone else meanwhile and dirtied again has no "moved"
 * record, and the held take may put it back at its older time: early,
 * never late.
 */
static void held_early(int f)
{
	const struct aipu_batch *b;
	unsigned int i, k;
	pgoff_t p;

	for (k = 0; k < NHELD; k++) {
		if (!held[k].used || held[k].e || held[k].b.t != table[f])
			continue;
		b = &held[k].b;
		for (i = 0; i < b->n; i++)
			for (p = b->x[i].index;
			     p < b->x[i].index + b->x[i].nr && p < PAGES; p++)
				early_ok[f][p] = true;
	}
}

/* Pages of @f with a live queued entry no later than their time. */
static unsigned int good[PAGES];

static void count(struct aipu_file *t, int f, const struct aipu_extent *x)
{
	pgoff_t p;

	for (p = x->index; p < x->index + x->nr && p < PAGES; p++)
		if (first[f][p] >= 0 && !unit_moved_stale(&t->q.live, p, x->time) &&
		    !time_after(x->time, T0 + first[f][p]))
			good[p]++;
}

static bool may_redirty(struct aipu_file *t, pgoff_t p)
{
	bool may;

	aipu_file_lock(t);
	may = aipu_queue_may_redirty(t, p, 1);
	aipu_file_unlock(t);
	return may;
}

static int check_file(int f)
{
	struct aipu_file *t = table[f];
	struct aipu_extent x;
	struct aipu_retry *r;
	struct aipu_seg *s;
	unsigned int i;
	u64 e;

	memset(good, 0, sizeof(good));
	if (!t) {
		for (i = 0; i < PAGES; i++)
			CHECK(first[f][i] < 0);
		CHECK(meta_first[f] < 0);
		return 0;
	}
	CHECK(!t->dead && t->hashed);
	if (t->draining)
		goto whole;
	for (s = t->q.log.head; s; s = s->next) {
		for (i = s == t->q.log.head ? t->q.log.pos : 0; i < s->n; i++) {
			e = s->e[i];
			x.index = e >> (AIPU_LOG_DT_BITS + AIPU_LOG_LEN_BITS);
			x.nr = ((e >> AIPU_LOG_DT_BITS) &
				(AIPU_LOG_LEN_MAX - 1)) + 1;
			x.time = s->base + (e & AIPU_LOG_DT_MAX);
			count(t, f, &x);
		}
	}
	list_for_each_entry(r, &t->q.retry, link)
		count(t, f, &r->x);
	list_for_each_entry(r, &t->q.retry_new, link)
		count(t, f, &r->x);
whole:
	for (i = 0; i < PAGES; i++) {
		bool by_whole = (t->whole.state == AIPU_ENTRY_WAITING ||
				 t->whole.state == AIPU_ENTRY_RETRY) &&
				!time_after(t->whole.time, T0 + first[f][i]);

		if (first[f][i] >= 0 && !good[i] && !by_whole &&
		    !held_covers(f, i))
			printf("  file %d page %u first %ld where %d whole %d\n",
			       f, i, first[f][i], t->where, t->whole.state);
		CHECK(first[f][i] < 0 || good[i] || by_whole ||
		      held_covers(f, i));
	}
	CHECK(meta_first[f] < 0 ||
	      ((t->meta.state == AIPU_ENTRY_WAITING ||
		t->meta.state == AIPU_ENTRY_RETRY) &&
	       !time_after(t->meta.time, T0 + meta_first[f])));
	CHECK(times_first[f] < 0 || (t->times.state == AIPU_ENTRY_WAITING &&
				      !list_empty(&t->times.lru)));
	/* Queued somewhere phase 1 looks, if it has anything to take. */
	CHECK(t->where != AIPU_AT_NOWHERE || t->draining ||
	      aipu_flog_empty(&t->q) || !list_empty(&t->retried) || t->users);
	CHECK(t->where != AIPU_AT_NOWHERE ||
	      (t->whole.state != AIPU_ENTRY_WAITING &&
	       t->meta.state != AIPU_ENTRY_WAITING));
	/* ... and at a time no later than anything it holds. */
	if (t->where == AIPU_AT_WHEEL) {
		unsigned long o;

		if (!t->draining && aipu_flog_oldest(&t->q, &o))
			CHECK(!time_after(t->node.time, o));
		if (t->whole.state == AIPU_ENTRY_WAITING)
			CHECK(!time_after(t->node.time, t->whole.time));
		if (t->meta.state == AIPU_ENTRY_WAITING)
			CHECK(!time_after(t->node.time, t->meta.time));
	}
	return 0;
}

/*
 * The tracker of held take @k if no file or eviction knows it any more (it
 * was killed while held) and no earlier held take has it: counted once.
 */
static const struct aipu_file *held_dead(int k)
{
	const struct aipu_file *t = held_tracker(k);
	int f;

	if (!t)
		return NULL;
	for (f = 0; f < NF; f++)
		if (t == table[f] || t == dying[f])
			return NULL;
	for (f = 0; f < k; f++)
		if (t == held_tracker(f))
			return NULL;
	return t;
}

/* The device's gauges are the sums over its files' queues, live or dying. */
static int check_gauges(void)
{
	unsigned long bytes = 0, pages = 0, out = 0;
	const struct aipu_file *t;
	int f;

	for (f = 0; f < NF + NHELD; f++) {
		t = f >= NF ? held_dead(f - NF) : dying[f] ? dying[f] : table[f];
		if (!t)
			continue;
		bytes += t->q.log.bytes;
		pages += t->q.log.pages + t->q.retry_pages + t->out_pages;
		out += t->out_pages;
	}
	CHECK(tr.out_pages == out);
	CHECK(tr.st.bytes + fast.bytes == bytes);
	CHECK(tr.st.pages + fast.pages == pages);
	CHECK(!locks_held);
	CHECK((long)bytes == unit_mem.bytes);
	return 0;
}

static int check_all(void)
{
	unsigned long time;
	int f, p;

	for (f = 0; f < NF; f++)
		if (check_file(f))
			return 1;
	/* An idle queue has nothing dirty to answer for. */
	for (f = 0; f < NF && aipu_queue_idle(&tr); f++)
		for (p = 0; p < PAGES; p++)
			CHECK(first[f][p] < 0 || held_covers(f, p));
	/* aipu_queue_oldest() is no later than any file's time, to a slot. */
	if (aipu_queue_oldest(&tr, &time))
		for (f = 0; f < NF; f++)
			if (table[f] && (table[f]->where == AIPU_AT_WHEEL ||
					 table[f]->where == AIPU_AT_DUE))
				CHECK(!time_after(time, table[f]->node.time +
						  tr.wheel.width));
	/* Not idle: something to be written (timestamps are not "oldest"). */
	CHECK(aipu_queue_idle(&tr) || aipu_queue_oldest(&tr, &time) ||
	      !list_empty(&tr.retried) || !list_empty(&tr.times));
	return check_gauges();
}

/*
 * The probe: the fast path under the file's lock alone if it will, half
 * the time, else aipu_queue_pages() (with aipu_queue_whole() when the fast path
 * fell short), as src/hook.c does.
 */
static void probe_pages(struct aipu_file *t, pgoff_t s, unsigned long n,
			unsigned long time)
{
	int r = AIPU_FAST_NO;

	if (rand() % 2) {
		aipu_file_lock(t);
		r = aipu_queue_pages_fast(t, s, n, time, &fast, true);
		if (r == AIPU_FAST_ASK)	/* a new dirtying: not declined */
			r = aipu_queue_pages_fast(t, s, n, time, &fast, false);
		aipu_file_unlock(t);
	}
	if (r == AIPU_FAST_NO) {
		fast_refused++;
		aipu_queue_pages(&tr, t, s, n, time);
	} else {
		fast_taken++;
	}
	if (r == AIPU_FAST_SHORT)
		aipu_queue_whole(&tr, t, time);
}

/*
 * A declined write's redirtying as src/hook.c sees it: the fast path, half
 * the time, asks whether it was declined only where aipu_queue_may_redirty()
 * says it matters (and then, as it was, aipu_queue_redirty()); where it does
 * not, it is taken as a new dirtying.  Without the fast path the device's
 * lock and aipu_queue_redirty().  The checks between steps then show no page
 * lost its first-dirty time.
 */
static int probe_redirty(struct aipu_file *t, pgoff_t p)
{
	bool may = may_redirty(t, p);
	int r = AIPU_FAST_NO;

	if (rand() % 2) {
		aipu_file_lock(t);
		r = aipu_queue_pages_fast(t, p, 1, now, &fast, true);
		aipu_file_unlock(t);
	}
	if (r == AIPU_FAST_NO || r == AIPU_FAST_ASK) {
		aipu_queue_redirty(&tr, t, p, 1, now);
		redirty_asked++;
		return 0;
	}
	/* Taken as a dirtying: only where asking would not have mattered. */
	CHECK(!may);
	fast_taken++;
	redirty_skipped++;
	if (r == AIPU_FAST_SHORT)
		aipu_queue_whole(&tr, t, now);
	return 0;
}

static void dirty(int f, pgoff_t p, unsigned int k)
{
	pgoff_t end = p + k > PAGES ? PAGES : p + k, s, q;
	struct aipu_file *t;
	unsigned long imprecise, fb;
	bool bywhole;

	if (dying[f])
		return;		/* the inode is being evicted */
	t = aipu_queue_get(&tr, &keys[f], NULL);
	if (!t) {
		/* No tracker: the kernel leaves the file to Linux. */
		return;
	}
	for (s = p; s < end; s = q) {
		for (; s < end && first[f][s] >= 0; s++)
			;
		for (q = s; q < end && first[f][q] < 0; q++) {
			first[f][q] = now - T0;
			fresh[f][q] = true;
			if (whole_clean[f][q] == (long)(now - T0))
				early_ok[f][q] = true;
		}
		if (q == s)
			break;
		imprecise = t->q.imprecise;
		fb = tr.st.fallbacks;
		/* Under the whole-file entry: written early, never late. */
		bywhole = t->whole.state != AIPU_ENTRY_IDLE ||
			  t->draining;
		probe_pages(t, s, q - s, now);
		if (bywhole || imprecise != t->q.imprecise ||
		    fb != tr.st.fallbacks)
			for (; s < q; s++)
				early_ok[f][s] = true;
	}
}

static void clean_file(int f)
{
	int i;

	times_first[f] = -1;
	meta_first[f] = -1;
	for (i = 0; i < PAGES; i++) {
		first[f][i] = -1;
		whole_clean[f][i] = -1;
		early_ok[f][i] = false;
		declined[f][i] = false;
		retried[f][i] = false;
	}
}

/* The flusher's write dirtied page @p of file @f: it inherits @time. */
static void inherit(int f, pgoff_t p, unsigned long time)
{
	struct aipu_file *t;

	if (dying[f] || first[f][p] >= 0)
		return;
	t = aipu_queue_get(&tr, &keys[f], NULL);
	if (!t)
		return;
	if (t->whole.state == AIPU_ENTRY_RETRY)
		whole_declined[f] = false;	/* due again: for these */
	first[f][p] = time - T0;
	early_ok[f][p] = true;	/* dated back: "due" says nothing of it */
	fresh[f][p] = true;
	aipu_queue_inherit(&tr, t, p, 1, time);
}

/* An entry of file @f other than its pages, dirty since *@first (< 0: clean). */
static void dirty_entry(int f, long *first,
			void (*mark)(struct aipu_queue *, struct aipu_file *,
				     unsigned long, bool))
{
	struct aipu_file *t = dying[f] ? NULL :
				  aipu_queue_get(&tr, &keys[f], NULL);
	bool was_clean = *first < 0;

	if (!t)
		return;
	if (was_clean)
		*first = now - T0;
	mark(&tr, t, now, was_clean);
}

/* A lazytime timestamp of file @f changed. */
static void dirty_times(int f)
{
	dirty_entry(f, &times_first[f], aipu_queue_times);
}

/*
 * src/hook.c's metadata probe: aipu_queue_meta_fast() under the file's lock
 * alone if it will, half the time, else aipu_queue_meta().
 */
static void meta_probe(struct aipu_queue *tr, struct aipu_file *t,
		       unsigned long time, bool was_clean)
{
	bool done = false;

	if (rand() % 2) {
		aipu_file_lock(t);
		done = aipu_queue_meta_fast(t, was_clean);
		aipu_file_unlock(t);
	}
	meta_fast += done;
	if (!done)
		aipu_queue_meta(tr, t, time, was_clean);
}

/* The inode of file @f was dirtied (I_DIRTY_INODE). */
static void dirty_meta(int f)
{
	dirty_entry(f, &meta_first[f], meta_probe);
}

/*
 * Whether to dirty again what the flusher has just looked at: after its
 * last check (the dirty tag, I_DIRTY_INODE, I_DIRTY_TIME), before its hold
 * that is done with the entry, as a CPU may (src/flusher.c, lazytime.c).
 */
static bool in_window(void)
{
	return rand() % 4 == 0;
}

/* Timestamps: written when due, or declined and put back. */
static int write_times(unsigned long cutoff)
{
	bool back[NF] = { false };
	struct aipu_entry *e;
	int f;

	while ((e = aipu_queue_take_times(&tr, cutoff))) {
		f = (const char *)e->t->key - keys;
		CHECK(e->kind == AIPU_ENTRY_TIMES &&
		      !time_after(e->time, cutoff));
		if (rand() % 10) {
			times_first[f] = -1;
		} else {
			back[f] = true;
			aipu_queue_requeue_times(&tr, e);
		}
		if (in_window())
			dirty_times(f);
		aipu_queue_done_entry(&tr, e);
		if (back[f] || rand() % 10 == 0)
			return 0;	/* due again, or the rest: next call */
	}
	/* Nothing due is left. */
	list_for_each_entry(e, &tr.times, lru)
		CHECK(time_after(e->time, cutoff));
	return 0;
}

/* One flusher pass with @cutoff: everything due is written or put back. */
/*
 * One flusher pass with @cutoff: everything due is written or put back,
 * unless @limit (max_batch) stops it; @stage files are staged first, their
 * pages written whatever their age.
 */
static void evict_step(int f);

/*
 * The flusher drops the lock between the holds that end a pass: a probe
 * dirties pages, an eviction goes on, the shrinker degrades a file.
 */
static void between_holds(void)
{
	int f = rand() % NF;

	switch (rand() % 8) {
	case 0:
		if (dying[f])
			evict_step(f);
		else
			dirty(f, rand() % PAGES, 1 + rand() % 6);
		break;
	case 1:
		evict_step(f);
		break;
	case 2:
		if (table[f] && !dying[f]) {
			held_early(f);
			aipu_queue_degrade(&tr, table[f], 1 + rand() % 30, now);
		}
		break;
	}
}

/*
 * Phase 2's write of batch @b of file @f's pages, merged: each page written
 * or still dirty (declined), maybe dirtied again or inheriting meanwhile.
 * A file evicted since the take (a batch held by a context's worker,
 * src/wbq.c) has no pages left: its batch goes back as done.
 */
static void write_batch(struct aipu_batch *b)
{
	int f = (const char *)b->t->key - keys;
	unsigned int i, n = aipu_flog_merge(b->x, b->n);
	pgoff_t p;

	for (i = 0; i < n; i++) {
		for (p = b->x[i].index; p < b->x[i].index + b->x[i].nr; p++) {
			bool still = !b->t->dead && first[f][p] >= 0 &&
				     rand() % 12 == 0;

			if (b->t->dead) {
				aipu_queue_done_pages(&tr, b->t, p, 1,
						      b->x[i].time, false);
				continue;
			}
			if (still) {
				declined[f][p] = true;
				retried[f][p] = true;
			} else {
				first[f][p] = -1;
				retried[f][p] = false;
			}
			if (rand() % 30 == 0)
				dirty(f, p, 1);	/* during the write */
			if (rand() % 40 == 0)
				inherit(rand() % NF, rand() % PAGES,
					b->x[i].time);
			still = first[f][p] >= 0 && (still || rand() % 2);
			aipu_queue_done_pages(&tr, b->t, p, 1, b->x[i].time,
					      still);
		}
	}
	aipu_queue_put(&tr, b->t);
}

/*
 * Phase 2's write of whole-file entry @e: every dirty page written but
 * those declined, which put the entry back.  An evicted file's entry is
 * done.
 */
static void write_entry(struct aipu_entry *e)
{
	int f = (const char *)e->t->key - keys;
	bool again = false;
	pgoff_t p;

	for (p = 0; p < PAGES && !e->t->dead; p++) {
		if (first[f][p] < 0)
			continue;
		if (rand() % 15 == 0) {
			declined[f][p] = again = true;
			retried[f][p] = true;
			continue;
		}
		first[f][p] = -1;
		retried[f][p] = false;
		whole_clean[f][p] = now - T0;
	}
	if (!e->t->dead && in_window())
		dirty(f, rand() % PAGES, 1 + rand() % 6);
	if (again) {
		whole_declined[f] = true;
		aipu_queue_requeue_entry(&tr, e);
	}
	aipu_queue_done_entry(&tr, e);
}

/* Hold batch @b or entry @e, now and then, if a slot is free. */
static bool hold(struct aipu_batch *b, struct aipu_entry *e)
{
	int i;

	if (drain_held || rand() % 5)
		return false;
	for (i = 0; i < NHELD; i++) {
		if (held[i].used)
			continue;
		held[i].used = true;
		held[i].e = e;
		held_taken++;
		if (b)
			held[i].b = *b;
		return true;
	}
	return false;
}


/* A held take is written now (@all: every one). */
static void release_held(bool all)
{
	int i = rand() % NHELD, k;

	for (k = 0; k < NHELD; k++, i = (i + 1) % NHELD) {
		if (!held[i].used)
			continue;
		held[i].used = false;
		if (held[i].e)
			write_entry(held[i].e);
		else
			write_batch(&held[i].b);
		if (!all)
			return;
	}
}


static int pass(unsigned long cutoff, unsigned long limit, unsigned int stage)
{
	static struct aipu_batch b;
	bool staged[NF] = { false }, due[NF] = { false };
	bool stopped = false, staging = stage;
	unsigned long issued = 0, tc, next;
	struct aipu_file *t;
	struct aipu_entry *e;
	unsigned int budget, i;
	int f;
	pgoff_t p;

	do {
		budget = 1 + rand() % 6;
	} while (!aipu_queue_scan(&tr, cutoff, &budget));
	/* Staged: the files staging put on the due list (not phase 1). */
	list_for_each_entry(t, &tr.due, node.link)
		due[(const char *)t->key - keys] = true;
	while (stage) {
		budget = 1 + rand() % 3;
		aipu_queue_stage(&tr, now, &stage, &budget);
		if (budget)
			break;	/* nothing more to stage */
	}
	list_for_each_entry(t, &tr.due, node.link)
		if (!due[(const char *)t->key - keys])
			staged[(const char *)t->key - keys] = true;
	memset(declined, 0, sizeof(declined));
	memset(fresh, 0, sizeof(fresh));
	memset(meta_declined, 0, sizeof(meta_declined));
	memset(whole_declined, 0, sizeof(whole_declined));
	/*
	 * Paced (pace=1): phase 2 takes each file as it comes due, with a
	 * cutoff behind phase 1's, waiting (the cutoff moving on) for the
	 * first due file's next time, as aipu_policy_due_in() does.
	 */
	tc = rand() % 3 ? cutoff : cutoff - rand() % 8;
	if (drain_held)
		release_held(true);
	for (;;) {
		if (rand() % 8 == 0)
			release_held(false);
		if (limit && issued >= limit) {
			stopped = true;
			break;
		}
		if (aipu_queue_next_time(&tr, &next) &&
		    time_before(tc, next + 1))
			tc = time_before(next + 1, cutoff) ? next + 1 : cutoff;
		b.max_pages = limit ? limit - issued : 0;
		e = aipu_queue_take(&tr, tc, &b);
		if (e) {
			f = (const char *)e->t->key - keys;
			issued++;
			CHECK(staging || time_before(e->time, cutoff));
			if (e->kind == AIPU_ENTRY_WHOLE) {
				CHECK(!whole_declined[f]);
				if (!hold(NULL, e))
					write_entry(e);
				continue;
			} else if (e->kind == AIPU_ENTRY_META) {
				/*
				 * Dirtied again while out, the inode dirty
				 * still: the write may have missed it, so it
				 * stays dirty since its first time (the entry
				 * goes back: again).
				 */
				bool kept = meta_first[f] >= 0 && in_window();

				/* Put back: due in the next pass, not this. */
				CHECK(!meta_declined[f]);
				if (kept) {
					dirty_meta(f);
					meta_declined[f] = true;
				} else if (rand() % 8) {
					meta_first[f] = -1;
				} else {
					meta_declined[f] = true;
					aipu_queue_requeue_entry(&tr, e);
				}
				if (in_window())
					dirty_meta(f);
			}
			aipu_queue_done_entry(&tr, e);
			continue;
		}
		if (!b.t && b.again)
			continue;
		if (!b.t)
			break;
		f = (const char *)b.t->key - keys;
		for (i = 0; i < b.n; i++)
			issued += b.x[i].nr;
		for (i = 0; i < b.n; i++)
			for (p = b.x[i].index; p < b.x[i].index + b.x[i].nr;
			     p++) {
				if (staged[f])
					continue;	/* early: staging */
				if (!(first[f][p] < 0 || early_ok[f][p] ||
				      retried[f][p] ||
				      time_before(T0 + first[f][p], cutoff)))
					printf("f %d p %lu first %ld x.time %ld cutoff %ld\n",
					       f, p, first[f][p],
					       (long)(b.x[i].time - T0),
					       (long)(cutoff - T0));
				CHECK(first[f][p] < 0 || early_ok[f][p] ||
				      retried[f][p] ||
				      time_before(T0 + first[f][p], cutoff));
			}
		if (!hold(&b, NULL))
			write_batch(&b);
	}
	/* A batch goes past max_batch by less than an entry. */
	CHECK(!limit || issued < limit + AIPU_LOG_LEN_MAX);
	/*
	 * Staged files went whole, but for what was put back, came later or
	 * was dirtied in this jiffy (aipu_queue_stage() leaves that).
	 */
	for (f = 0; f < NF && !stopped; f++)
		for (p = 0; p < PAGES && staged[f]; p++)
			CHECK(first[f][p] < 0 || declined[f][p] ||
			      fresh[f][p] || first[f][p] == (long)(now - T0) ||
			      (table[f] &&
			       table[f]->whole.state != AIPU_ENTRY_IDLE) ||
			      held_covers(f, p));
	for (f = 0; f < NF && !stopped; f++)
		CHECK(meta_first[f] < 0 || meta_declined[f] ||
		      !time_before(T0 + meta_first[f], cutoff));
	/* Nothing due is left but what was put back, or max_batch left. */
	for (f = 0; f < NF && !stopped; f++)
		for (p = 0; p < PAGES; p++) {
			if (held_covers(f, p))
				continue;	/* out with a worker */
			if (!(first[f][p] < 0 || declined[f][p] ||
			      !time_before(T0 + first[f][p], cutoff))) {
				struct aipu_file *t = table[f];
				unsigned long o = 0;
				bool has = t && aipu_flog_oldest(&t->q, &o);

				printf("f %d p %lu first %ld cutoff %ld t %p where %d whole %d/%ld has %d oldest %ld node %ld clock %ld users %u\n",
				       f, p, first[f][p], (long)(cutoff - T0), (void *)t,
				       t ? t->where : -1, t ? t->whole.state : -1,
				       t ? (long)(t->whole.time - T0) : 0, has, (long)(o - T0),
				       t ? (long)(t->node.time - T0) : 0, (long)(tr.wheel.clock - T0),
				       t ? t->users : 0);
			}
			CHECK(first[f][p] < 0 || declined[f][p] ||
			      !time_before(T0 + first[f][p], cutoff));
		}
	do {
		between_holds();
		budget = 1 + rand() % 4;
	} while (!aipu_queue_end_pass(&tr, &budget));
	return 0;
}

static void evict_step(int f)
{
	unsigned long budget = 1 + rand() % 40;

	if (!dying[f]) {
		dying[f] = table[f];
		if (!dying[f])
			return;
		clean_file(f);	/* truncated with the inode */
	}
	if (aipu_queue_kill(&tr, dying[f], budget))
		dying[f] = NULL;
}

static int model(unsigned int seed, int fail_rate)
{
	unsigned long step, cutoff;
	int f, i;

	srand(seed);
	memset(&tr, 0, sizeof(tr));
	memset(dying, 0, sizeof(dying));
	memset(table, 0, sizeof(table));
	memset(&fast, 0, sizeof(fast));
	memset(held, 0, sizeof(held));
	drain_held = false;
	held_taken = 0;
	fast_taken = 0;
	fast_refused = 0;
	redirty_asked = 0;
	redirty_skipped = 0;
	meta_fast = 0;
	now = T0;
	aipu_queue_init(&tr, slots, WHEEL_WIDTH, now);
	for (f = 0; f < NF; f++)
		clean_file(f);
	unit_fail_every = fail_rate;
	for (step = 0; step < 40000; step++) {
		unsigned int r = rand() % 100;
		pgoff_t p = rand() % PAGES;

		f = rand() % NF;
		if (dying[f] && r < 70) {
			evict_step(f);
			continue;
		}
		if (r < 40) {
			dirty(f, p, 1 + rand() % (r < 4 ? 200 : 6));
		} else if (r < 47) {
			if (first[f][p] >= 0 && first[f][p] < (long)(now - T0)) {
				first[f][p] = -1;	/* fsync */
				retried[f][p] = false;
				now++;
			}
		} else if (r < 48) {
			evict_step(f);
		} else if (r < 50) {
			if (table[f] && !dying[f])
				held_early(f);
			if (table[f] && !dying[f] && rand() % 2)
				aipu_queue_degrade(&tr, table[f],
						   1 + rand() % 30, now);
			else if (table[f] && !dying[f])
				aipu_queue_park(&tr, table[f], now,
						1 + rand() % 30);
		} else if (r < 53) {
			/* reclaim declined the write of a dirty page */
			int k = 0;

			while (k < PAGES && first[f][(p + k) % PAGES] < 0)
				k++;
			if (table[f] && !dying[f] && k < PAGES)
				CHECK(!probe_redirty(table[f], (p + k) % PAGES));
		} else if (r < 55) {
			dirty_times(f);
		} else if (r < 57) {
			if (write_times(now - rand() % 20))
				return 1;
		} else if (r < 60) {
			dirty_meta(f);
		} else if (r < 70) {
			/* Now and then a stall longer than the wheel's turn. */
			now += rand() % 400 ? 1 + rand() % 4 :
					      WHEEL_TURN + rand() % WHEEL_TURN;
		} else {
			/* A max_age of up to one and a half turns, at times. */
			cutoff = now - (rand() % 16 ? rand() % 20 :
					rand() % (WHEEL_TURN * 3 / 2));
			if (pass(cutoff, rand() % 4 ? 0 : 1 + rand() % 200,
				 rand() % 5 ? 0 : 1 + rand() % 3))
				return 1;
		}
		if (step % 53 == 0 && check_all())
			return 1;
	}
	unit_fail_every = 0;
	now++;
	drain_held = true;
	if (pass(now, 0, 0) || check_all())	/* all dirtied before now */
		return 1;
	for (f = 0; f < NF; f++) {
		if (!dying[f] && table[f]) {
			dying[f] = table[f];
			clean_file(f);
		}
		for (i = 0; dying[f]; i++)
			evict_step(f);
	}
	CHECK(unit_no_memory_held());
	CHECK(!tr.st.trackers && !(tr.st.bytes + fast.bytes) &&
	      !(tr.st.pages + fast.pages));
	CHECK(tr.st.pages_staged && tr.st.pages_deferred);
	CHECK(aipu_queue_idle(&tr));
	/* Both ways were walked: the fast path and the device's. */
	CHECK(fast_taken > 100 && fast_refused > 100);
	/* Declines, each asked about where aipu_queue_may_redirty() said so. */
	CHECK(redirty_asked > 100);
	/* Metadata dirtied again, under the file's lock alone. */
	CHECK(meta_fast > 20);
	/* Takes were held across passes, and all written in the end. */
	CHECK(held_taken > 50 && !held_tracker(0) && !held_tracker(1) &&
	      !held_tracker(2) && !held_tracker(3));
	printf("  model (allocations failing 1 in %d, 0: none): %llu pages dirtied, %llu taken, %llu retried, %llu fallbacks; %lu probes on the fast path, %lu refused or not tried\n",
	       fail_rate,
	       (unsigned long long)(tr.st.pages_dirtied + fast.pages_dirtied),
	       (unsigned long long)tr.st.pages_taken,
	       (unsigned long long)tr.st.pages_retried,
	       (unsigned long long)tr.st.fallbacks, fast_taken, fast_refused);
	printf("  declines: %lu with the dirty tag asked, %lu taken as a dirtying; %lu metadata dirtyings under the file's lock alone\n",
	       redirty_asked, redirty_skipped, meta_fast);
	return 0;
}

/* Without failures early_ok comes only from the shrinker: a strict run. */
/* What each flush of a hand-back held: stretches, pages, and the pages. */
static unsigned int hb_flushes, hb_bad;
static unsigned long hb_next, hb_time;

static void hb_flush(struct aipu_handback *h)
{
	unsigned int i;

	hb_flushes++;
	if (!h->n || h->n > AIPU_HANDBACK_MAX ||
	    h->pages > AIPU_HANDBACK_PAGES)
		hb_bad++;
	for (i = 0; i < h->n; i++) {
		if (h->s[i].index != hb_next || h->s[i].time != hb_time ||
		    h->s[i].dirty != (h->s[i].index % 2))
			hb_bad++;
		hb_next += h->s[i].nr;
	}
	h->n = 0;
	h->pages = 0;
}

/*
 * aipu_queue_handback_add() splits what it collects into holds of at most
 * AIPU_HANDBACK_MAX stretches and AIPU_HANDBACK_PAGES pages, in order, and
 * loses nothing: one long extent, then single pages, alternately dirty.
 */
static int test_handback(void)
{
	struct aipu_handback h = { 0 };
	unsigned long p;

	hb_time = T0 + 5;
	aipu_queue_handback_add(&h, 0, 1000, hb_time, false, hb_flush);
	CHECK(hb_flushes == 3 && h.n == 1 && h.pages == 1000 - 768);
	for (p = 1000; p < 1100; p++)
		aipu_queue_handback_add(&h, p, 1, hb_time, p % 2, hb_flush);
	hb_flush(&h);
	CHECK(!hb_bad && hb_next == 1100);
	/* 3 x 256 pages; 232 + 15 pages (16 stretches); 5 x 16; the last 5. */
	CHECK(hb_flushes == 3 + 1 + 5 + 1);
	return 0;
}

/* Phase 1 at @cutoff, then phase 2's first take (NULL: none due). */
static struct aipu_entry *take_at(unsigned long cutoff, struct aipu_batch *b)
{
	unsigned int budget = UINT_MAX;

	while (!aipu_queue_scan(&tr, cutoff, &budget))
		budget = UINT_MAX;
	return aipu_queue_take(&tr, cutoff, b);
}

static void end_of_pass(void)
{
	unsigned int budget = UINT_MAX;

	while (!aipu_queue_end_pass(&tr, &budget))
		budget = UINT_MAX;
}

/*
 * A whole-file entry put back after a write that covered the file, with
 * pages dirty after it (aipu_queue_requeue_whole_since()), takes the oldest
 * time the file was dirtied at while the entry was out, not its old time:
 * a file kept hot past its cap is written about once a max_age, not every
 * pass (it used to be due again at once).  With no dirtying seen while it
 * was out, what stayed dirty keeps the old time; one written clean with a
 * dirtying seen meanwhile (aipu_queue_done_entry()) goes back at that time.
 */
/*
 * One file bounded as a whole at T0 and taken at T0 + 100: the entry out,
 * its tracker in *@t.
 */
static struct aipu_entry *whole_taken(struct aipu_file **t,
				      struct aipu_batch *b)
{
	struct aipu_entry *e;

	now = T0;
	aipu_queue_init(&tr, slots, WHEEL_WIDTH, now);
	*t = aipu_queue_get(&tr, &keys[0], NULL);
	if (!*t)
		return NULL;
	aipu_queue_whole(&tr, *t, T0);
	now = T0 + 100;
	e = take_at(T0 + 1, b);
	return e && e->kind == AIPU_ENTRY_WHOLE && e->time == T0 ? e : NULL;
}

static int test_whole_since(void)
{
	struct aipu_batch b;
	struct aipu_entry *e;
	struct aipu_file *t;

	e = whole_taken(&t, &b);
	CHECK(e);
	aipu_queue_whole(&tr, t, T0 + 60);		/* dirtied while out */
	aipu_queue_whole(&tr, t, T0 + 50);
	aipu_queue_requeue_whole_since(&tr, e);
	aipu_queue_done_entry(&tr, e);
	end_of_pass();
	CHECK(!take_at(T0 + 50, &b) && !b.t);	/* not at its old time */
	end_of_pass();
	e = take_at(T0 + 51, &b);
	CHECK(e && e->kind == AIPU_ENTRY_WHOLE && e->time == T0 + 50);
	aipu_queue_requeue_whole_since(&tr, e);	/* none seen: the old time */
	aipu_queue_done_entry(&tr, e);
	end_of_pass();
	e = take_at(T0 + 51, &b);
	CHECK(e && e->time == T0 + 50);
	/* written clean, then dirtied */
	aipu_queue_whole(&tr, t, T0 + 80);
	aipu_queue_done_entry(&tr, e);
	end_of_pass();
	CHECK(!take_at(T0 + 80, &b) && !b.t);
	end_of_pass();
	e = take_at(T0 + 81, &b);
	CHECK(e && e->time == T0 + 80);
	aipu_queue_done_entry(&tr, e);	/* written clean: the file is freed */
	end_of_pass();
	CHECK(!take_at(now, &b) && !b.t && aipu_queue_idle(&tr));
	return 0;
}

/* A refused whole-file write is due again one max_age after the refusal. */
static int test_whole_refused(void)
{
	struct aipu_batch b;
	struct aipu_entry *e;
	struct aipu_file *t;

	e = whole_taken(&t, &b);
	CHECK(e);
	aipu_queue_whole(&tr, t, T0 + 60);		/* dirtied while out */
	aipu_queue_requeue_whole_refused(&tr, e, now);
	aipu_queue_done_entry(&tr, e);
	end_of_pass();
	CHECK(!take_at(T0 + 61, &b) && !b.t);	/* not at its old times */
	end_of_pass();
	CHECK(!take_at(now, &b) && !b.t);
	end_of_pass();
	e = take_at(now + 1, &b);
	CHECK(e && e->kind == AIPU_ENTRY_WHOLE && e->time == now);
	aipu_queue_done_entry(&tr, e);	/* written clean: the file is freed */
	end_of_pass();
	CHECK(!take_at(now + 1, &b) && !b.t && aipu_queue_idle(&tr));
	return 0;
}

/*
 * An inode dirty at load (aipu_queue_adopt()): its pages bounded as a whole
 * at its dirtied_when, its metadata at the same time, not counted as a
 * fallback; adopted again (a second super block on the same device) it
 * keeps the older time and is not counted twice.
 */
static int test_adopt(void)
{
	struct aipu_batch b;
	struct aipu_entry *e;
	struct aipu_file *t;

	now = T0;
	aipu_queue_init(&tr, slots, WHEEL_WIDTH, now);
	t = aipu_queue_get(&tr, &keys[0], NULL);
	CHECK(t);
	aipu_queue_pages(&tr, t, 5, 1, T0 + 40);	/* seen by the probe */
	CHECK(aipu_queue_adopt(&tr, t, AIPU_ADOPT_PAGES | AIPU_ADOPT_META,
			       T0 + 10));
	CHECK(!aipu_queue_adopt(&tr, t, AIPU_ADOPT_PAGES, T0 + 5));
	CHECK(tr.st.inodes_adopted == 1 && tr.st.fallbacks == 0);
	now = T0 + 100;
	CHECK(!take_at(T0 + 5, &b) && !b.t);	/* strictly older */
	end_of_pass();
	e = take_at(T0 + 6, &b);
	CHECK(e && e->kind == AIPU_ENTRY_WHOLE && e->time == T0 + 5);
	aipu_queue_done_entry(&tr, e);
	end_of_pass();
	e = take_at(T0 + 11, &b);
	CHECK(e && e->kind == AIPU_ENTRY_META && e->time == T0 + 10);
	aipu_queue_done_entry(&tr, e);
	end_of_pass();
	/* The probe's page keeps its own time. */
	CHECK(!take_at(T0 + 40, &b) && !b.t);
	end_of_pass();
	CHECK(aipu_queue_oldest(&tr, &now) && now == T0 + 40);
	while (!aipu_queue_kill(&tr, t, AIPU_DRAIN_BATCH))
		;			/* evicted: every object freed */
	CHECK(aipu_queue_idle(&tr));
	return 0;
}

static int test_model(void)
{
	return model(unit_seed(3), 0);
}

static int test_model_failing(void)
{
	return model(unit_seed(5), 80);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	RUN(test_handback);
	RUN(test_whole_since);
	RUN(test_whole_refused);
	RUN(test_adopt);
	RUN(test_model);
	RUN(test_model_failing);
	return unit_done();
}
