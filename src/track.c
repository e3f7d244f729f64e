// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: age-ordered tracking of first-dirty times.  See include/aipu_track.h
 * for the data structure; every function here runs under the lock of the
 * device whose queue @tr is, and never sleeps.
 */
#include <linux/bitops.h>
#include <linux/jiffies.h>
#include <linux/string.h>

#include "aipu_track.h"

static struct aipu_run *node_run(struct rb_node *n)
{
	return n ? rb_entry(n, struct aipu_run, node) : NULL;
}

static unsigned long run_pages(const struct aipu_run *r)
{
	return r->end - r->start;
}

void track_init(struct aipu_track *tr)
{
	memset(tr, 0, sizeof(*tr));
	INIT_LIST_HEAD(&tr->waiting);
	INIT_LIST_HEAD(&tr->retry);
	INIT_LIST_HEAD(&tr->pending);
	INIT_LIST_HEAD(&tr->deferred);
	INIT_LIST_HEAD(&tr->times);
	INIT_LIST_HEAD(&tr->trackers);
}

/* The live tracker of @key, if it is this device's. */
struct aipu_tracker *track_find(struct aipu_track *tr, const void *key)
{
	struct aipu_tracker *t = aipu_tracker_lookup(key);

	return t && t->hashed && !t->dead ? t : NULL;
}

static void embed_init(struct aipu_run *r, struct aipu_tracker *t, u8 kind)
{
	memset(r, 0, sizeof(*r));
	INIT_LIST_HEAD(&r->lru);
	RB_CLEAR_NODE(&r->node);
	r->t = t;
	r->kind = kind;
	r->state = AIPU_IDLE;
}

struct aipu_tracker *track_get(struct aipu_track *tr, const void *key,
			       void *host)
{
	struct aipu_tracker *t = track_find(tr, key);

	if (t)
		return t;
	t = aipu_tracker_alloc();
	if (!t)
		return NULL;
	t->tr = tr;
	t->key = key;
	t->host = host;
	t->runs = RB_ROOT;
	t->users = 0;
	t->nr_runs = 0;
	t->dead = false;
	embed_init(&t->whole, t, AIPU_WHOLE);
	embed_init(&t->meta, t, AIPU_META);
	embed_init(&t->times, t, AIPU_TIMES);
	t->issuing = NULL;
	if (aipu_tracker_insert(t)) {
		aipu_tracker_free(t);
		return NULL;
	}
	t->hashed = true;
	list_add_tail(&t->link, &tr->trackers);
	tr->st.trackers++;
	return t;
}

/* Nobody can find @t any more: new dirtying of its mapping gets a new one. */
static void tracker_unhash(struct aipu_track *tr, struct aipu_tracker *t)
{
	if (!t->hashed)
		return;
	t->hashed = false;
	aipu_tracker_remove(t);
	list_del_init(&t->link);
	tr->st.trackers--;
}

static void tracker_free(struct aipu_track *tr, struct aipu_tracker *t)
{
	tracker_unhash(tr, t);
	aipu_tracker_free(t);
}

/* The run that contains @index, or else the first run after it. */
static struct aipu_run *run_from(struct aipu_tracker *t, pgoff_t index)
{
	struct rb_node *n = t->runs.rb_node;
	struct aipu_run *best = NULL;

	while (n) {
		struct aipu_run *r = node_run(n);

		if (index < r->end) {
			best = r;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

static void run_insert(struct aipu_track *tr, struct aipu_run *r)
{
	struct rb_node **p = &r->t->runs.rb_node, *parent = NULL;

	while (*p) {
		parent = *p;
		if (r->start < node_run(parent)->start)
			p = &parent->rb_left;
		else
			p = &parent->rb_right;
	}
	rb_link_node(&r->node, parent, p);
	rb_insert_color(&r->node, &r->t->runs);
	tr->st.pages_tracked += run_pages(r);
}

/*
 * A new run, unless memory or the mapping's cap on runs says no: past
 * AIPU_RUNS_PER_TRACKER_MAX runs the mapping is bounded as a whole instead,
 * so one file dirtied at random cannot take unbounded memory.
 */
static struct aipu_run *run_new(struct aipu_track *tr, struct aipu_tracker *t,
				pgoff_t start, pgoff_t end, unsigned long time,
				u8 state)
{
	struct aipu_run *r;

	if (t->nr_runs >= AIPU_RUNS_PER_TRACKER_MAX)
		return NULL;
	r = aipu_run_alloc();
	if (!r)
		return NULL;
	INIT_LIST_HEAD(&r->lru);
	RB_CLEAR_NODE(&r->node);
	r->t = t;
	r->start = start;
	r->end = end;
	r->time = time;
	r->kind = AIPU_PAGES;
	r->state = state;
	t->nr_runs++;
	tr->st.runs_tracked++;
	return r;
}

static void run_free(struct aipu_track *tr, struct aipu_run *r)
{
	r->t->nr_runs--;
	tr->st.runs_tracked--;
	aipu_run_free(r);
}

/* Take a tracked run out of its tree and list and free it. */
static void run_destroy(struct aipu_track *tr, struct aipu_run *r)
{
	rb_erase(&r->node, &r->t->runs);
	list_del(&r->lru);
	tr->st.pages_tracked -= run_pages(r);
	run_free(tr, r);
}

/* Keep the retry list in first-dirty order; it is short. */
static void retry_insert(struct aipu_track *tr, struct aipu_run *r)
{
	struct aipu_run *p;

	r->state = AIPU_WAITING;
	list_for_each_entry_reverse(p, &tr->retry, lru) {
		if (!time_before(r->time, p->time)) {
			list_add(&r->lru, &p->lru);
			return;
		}
	}
	list_add(&r->lru, &tr->retry);
}

/*
 * Pages in [start, end) went clean -> dirty again, so whatever run still
 * covers them holds the time of an earlier dirtying that somebody else
 * cleaned.  Cut them out, starting at @r, the first run that overlaps.
 * Splitting a run needs memory; without it the pages keep the older time
 * (written early, never late) and false is returned.
 */
static bool carve(struct aipu_track *tr, struct aipu_run *r,
		  pgoff_t start, pgoff_t end)
{
	struct aipu_run *next, *f;

	for (; r && r->start < end; r = next) {
		next = node_run(rb_next(&r->node));
		if (r->start < start && r->end > end) {
			f = run_new(tr, r->t, end, r->end, r->time, r->state);
			if (!f)
				return false;
			tr->st.pages_tracked -= r->end - start;
			r->end = start;
			run_insert(tr, f);
			list_add(&f->lru, &r->lru);
			return true;
		}
		if (r->start >= start && r->end <= end) {
			run_destroy(tr, r);
		} else if (r->start < start) {
			tr->st.pages_tracked -= r->end - start;
			r->end = start;
		} else {
			tr->st.pages_tracked -= end - r->start;
			r->start = end;
		}
	}
	return true;
}

static bool joins(const struct aipu_run *r, unsigned long time, u8 state)
{
	return r && r->time == time && r->state == state;
}

/*
 * Grow a neighbour dirtied in the same jiffy instead of adding a run;
 * @prev and @next are the runs either side of [start, end).
 */
static bool extend(struct aipu_track *tr, struct aipu_run *prev,
		   struct aipu_run *next, pgoff_t start, pgoff_t end,
		   unsigned long time, u8 state)
{
	bool nj = joins(next, time, state) && next->start == end;

	if (joins(prev, time, state) && prev->end == start) {
		pgoff_t last = end;

		if (nj) {
			last = next->end;
			run_destroy(tr, next);
		}
		tr->st.pages_tracked += last - prev->end;
		prev->end = last;
		return true;
	}
	if (nj) {
		tr->st.pages_tracked += end - start;
		next->start = start;
		return true;
	}
	return false;
}

/*
 * Link @r between its neighbours without a second descent: the successor's
 * empty left slot, or else the predecessor's right slot, which is empty
 * because it is the rightmost node of that left subtree (or of the tree).
 */
static void link_between(struct aipu_track *tr, struct aipu_run *r,
			 struct aipu_run *prev, struct aipu_run *next)
{
	struct rb_node *parent = NULL, **link = &r->t->runs.rb_node;

	if (next && !next->node.rb_left) {
		parent = &next->node;
		link = &parent->rb_left;
	} else if (prev) {
		parent = &prev->node;
		link = &parent->rb_right;
	}
	rb_link_node(&r->node, parent, link);
	rb_insert_color(&r->node, &r->t->runs);
	tr->st.pages_tracked += run_pages(r);
}

/*
 * Pages [start, start + nr) of @t went clean -> dirty at @time.  @pending
 * puts them straight on the pending list: the flusher itself dirtied them
 * while writing older metadata, and they inherit its age.  One descent of
 * the tree in the common case (no run covers the pages yet).
 */
void track_pages(struct aipu_track *tr, struct aipu_tracker *t,
		 pgoff_t start, unsigned long nr, unsigned long time,
		 bool pending)
{
	u8 state = pending ? AIPU_PENDING : AIPU_WAITING;
	struct aipu_run *r, *prev, *next;
	pgoff_t end = start + nr;

	tr->st.pages_dirtied += nr;
	/*
	 * The whole mapping is queued at an older time already: it will write
	 * these pages too (early, never late), so they need no memory.
	 */
	if (!pending && (t->whole.state == AIPU_WAITING ||
			 t->whole.state == AIPU_PENDING))
		return;
	next = run_from(t, start);
	if (next && next->start < end) {
		if (!carve(tr, next, start, end)) {
			tr->st.fallbacks++;
			return;
		}
		next = run_from(t, start);
	}
	prev = next ? node_run(rb_prev(&next->node)) :
		      node_run(rb_last(&t->runs));
	if (extend(tr, prev, next, start, end, time, state))
		return;
	r = run_new(tr, t, start, end, time, state);
	if (!r) {
		tr->st.fallbacks++;
		track_whole(tr, t, time);
		return;
	}
	link_between(tr, r, prev, next);
	list_add_tail(&r->lru, pending ? &tr->pending : &tr->waiting);
}

/* Will the flusher put [start, end) back at its issued run's time? */
static bool being_issued(const struct aipu_tracker *t, pgoff_t start,
			 pgoff_t end)
{
	const struct aipu_run *i = t->issuing;

	return i && (i->kind == AIPU_WHOLE ||
		     (i->kind == AIPU_PAGES && i->start <= start && end <= i->end));
}

/*
 * Pages [start, start + nr) were dirtied again without having been written:
 * a ->writepage declined them (folio_redirty_for_writepage(): a buffer it
 * could not lock, reclaim).  That is no new first dirtying, so no page may
 * get a later time for it.  Pages a run covers keep it; pages of the run the
 * flusher is writing are put back at that run's time once the write returns
 * (track_requeue()); only pages aipu never knew get @time.
 */
void track_redirty(struct aipu_track *tr, struct aipu_tracker *t,
		   pgoff_t start, unsigned long nr, unsigned long time)
{
	pgoff_t pos = start, end = start + nr, stop;
	struct aipu_run *c;

	tr->st.pages_redirtied += nr;
	if (being_issued(t, start, end)) {
		t->declined += nr;
		return;
	}
	while (pos < end) {
		c = run_from(t, pos);
		if (c && c->start <= pos) {
			pos = c->end;
			continue;
		}
		stop = (c && c->start < end) ? c->start : end;
		track_pages(tr, t, pos, stop - pos, time, false);
		pos = stop;
	}
}

static void embed_queue(struct aipu_track *tr, struct aipu_run *r,
			unsigned long time)
{
	r->time = time;
	r->state = AIPU_WAITING;
	list_add_tail(&r->lru, &tr->waiting);
}

/*
 * Run memory ran out: bound the whole mapping by the oldest time anything in
 * it went untracked.  Already queued means an older time is set; being issued
 * means the flusher re-reads the mapping's dirty pages after writing.
 */
void track_whole(struct aipu_track *tr, struct aipu_tracker *t,
		 unsigned long time)
{
	if (t->whole.state == AIPU_IDLE)
		embed_queue(tr, &t->whole, time);
}

/*
 * Memory pressure (the shrinker): give back @t's runs, at most @budget a
 * call, and bound the whole mapping instead.  The whole-mapping run takes
 * the device's oldest time, at the head of the age list, so it is no later
 * than any run it replaces and the list stays in order.  Returns the runs
 * freed; the caller calls again while @t has runs and it needs memory.
 */
unsigned long track_degrade(struct aipu_track *tr, struct aipu_tracker *t,
			    unsigned long budget, unsigned long now)
{
	struct aipu_run *w = &t->whole;
	unsigned long freed = 0;
	struct rb_node *n;

	/*
	 * Not while the whole mapping is being written: the flusher's walk of
	 * its dirty pages afterwards may be past a page whose run we would
	 * free, and nothing would cover that page any more.
	 */
	if (RB_EMPTY_ROOT(&t->runs) || w->state == AIPU_ISSUING)
		return 0;
	if (w->state == AIPU_IDLE || w->state == AIPU_WAITING) {
		unsigned long oldest = now - track_oldest(tr, now);

		if (w->state == AIPU_WAITING)
			list_del(&w->lru);
		else
			tr->st.fallbacks++;
		w->time = w->state == AIPU_WAITING &&
			  time_before(w->time, oldest) ? w->time : oldest;
		w->state = AIPU_WAITING;
		list_add(&w->lru, &tr->waiting);
	}
	while (freed < budget && (n = rb_first(&t->runs))) {
		struct aipu_run *r = node_run(n);

		rb_erase(n, &t->runs);
		list_del(&r->lru);
		tr->st.pages_tracked -= run_pages(r);
		run_free(tr, r);
		freed++;
	}
	return freed;
}

void track_meta(struct aipu_track *tr, struct aipu_tracker *t,
		unsigned long time, bool was_clean)
{
	struct aipu_run *r = &t->meta;

	if (was_clean)
		tr->st.meta_dirtied++;
	if (r->state == AIPU_IDLE) {
		embed_queue(tr, r, time);
	} else if (r->state == AIPU_WAITING && was_clean) {
		/* Written by someone else since: a new first-dirty time. */
		list_del(&r->lru);
		embed_queue(tr, r, time);
	}
}

/*
 * Lazytime: the inode's timestamps alone became dirty (I_DIRTY_TIME), to be
 * written once dirtytime_expire_seconds old, as Linux's periodic writeback
 * would (src/lazytime.c).  Their own list, in time order: the expiry is not
 * max_age_ms.  @time is the first such dirtying since they were last
 * written; a dirtying that finds them clean moves them to the tail.
 */
void track_times(struct aipu_track *tr, struct aipu_tracker *t,
		 unsigned long time, bool was_clean)
{
	struct aipu_run *r = &t->times, *last;

	if (was_clean)
		tr->st.times_dirtied++;
	if (r->state == AIPU_ISSUING) {
		if (was_clean)
			r->time = time;	/* written meanwhile: requeued at it */
		return;
	}
	if (r->state == AIPU_WAITING) {
		if (!was_clean)
			return;
		list_del(&r->lru);
	}
	/* Dirty before we saw it: no earlier than the newest, to keep order. */
	last = list_empty(&tr->times) ? NULL :
	       list_last_entry(&tr->times, struct aipu_run, lru);
	if (last && time_before(time, last->time))
		time = last->time;
	r->time = time;
	r->state = AIPU_WAITING;
	list_add_tail(&r->lru, &tr->times);
}

/* The oldest timestamps dirtied at or before @cutoff, taken for writing. */
struct aipu_run *track_take_times(struct aipu_track *tr, unsigned long cutoff)
{
	struct aipu_run *r = list_first_entry_or_null(&tr->times,
						      struct aipu_run, lru);

	if (!r || time_after(r->time, cutoff))
		return NULL;
	list_del_init(&r->lru);
	track_hold(r->t);
	r->state = AIPU_ISSUING;
	return r;
}

/*
 * Still dirty after the flusher's try (Linux had not yet let them expire,
 * or the inode was busy): back in order.  A retry at the same time goes to
 * the head; one dirtied anew meanwhile goes near the tail, where its time
 * belongs, so the walk is over the few newer entries.
 */
void track_requeue_times(struct aipu_track *tr, struct aipu_run *r)
{
	struct list_head *pos = tr->times.prev;
	struct aipu_run *head = list_first_entry_or_null(&tr->times,
							 struct aipu_run, lru);

	if (r->t->dead || r->state != AIPU_ISSUING)
		return;
	r->state = AIPU_WAITING;
	if (!head || !time_after(r->time, head->time)) {
		list_add(&r->lru, &tr->times);
		return;
	}
	while (time_before(r->time, list_entry(pos, struct aipu_run, lru)->time))
		pos = pos->prev;
	list_add(&r->lru, pos);
}

static unsigned long weight(const struct aipu_run *r)
{
	return r->kind == AIPU_PAGES ? run_pages(r) : 1;
}

static void make_pending(struct aipu_track *tr, struct aipu_run *r)
{
	list_move_tail(&r->lru, &tr->pending);
	r->state = AIPU_PENDING;
}

/*
 * Phase 1.  Move runs dirtied before @cutoff (all runs if @all) from the head
 * of the age list to the pending list, at most @limit pages a pass if
 * non-zero; aged runs beyond the limit are set aside on the deferred list
 * (counted in pages_deferred) and go back to the head of the age list when
 * the scan is done.  Touches only the aged runs plus the one that stops it,
 * at most *@budget of them a call: returns true when the scan is done, false
 * when the budget ran out and the caller should call again (after dropping
 * the lock, so that no hold of it grows with the backlog).  The pass's count
 * of pages moved is kept in @tr until track_end_pass().
 */
bool track_scan(struct aipu_track *tr, unsigned long cutoff, bool all,
		unsigned long limit, unsigned int *budget)
{
	struct aipu_run *r;

	while ((r = list_first_entry_or_null(&tr->waiting, struct aipu_run,
					     lru))) {
		if (!*budget)
			return false;
		(*budget)--;
		tr->st.entries_scanned++;
		if (!all && !time_before(r->time, cutoff))
			break;
		/* Always one run, so a large one cannot block the queue. */
		if (limit && tr->scan_moved &&
		    tr->scan_moved + weight(r) > limit) {
			tr->st.pages_deferred += weight(r);
			list_move_tail(&r->lru, &tr->deferred);
			continue;
		}
		tr->scan_moved += weight(r);
		make_pending(tr, r);
	}
	list_splice_init(&tr->deferred, &tr->waiting);
	return true;
}

/*
 * Staging: the *@runs oldest runs go, whatever their age, at most *@budget
 * of them a call; both count down.  Returns the pages moved.
 */
unsigned long track_stage(struct aipu_track *tr, unsigned int *runs,
			  unsigned int *budget)
{
	unsigned long moved = 0;
	struct aipu_run *r;

	while (*runs && *budget &&
	       (r = list_first_entry_or_null(&tr->waiting, struct aipu_run,
					     lru))) {
		(*runs)--;
		(*budget)--;
		tr->st.entries_scanned++;
		moved += weight(r);
		make_pending(tr, r);
	}
	tr->st.pages_staged += moved;
	return moved;
}

/* Nothing waits to be written. */
bool track_idle(struct aipu_track *tr)
{
	return list_empty(&tr->waiting) && list_empty(&tr->pending) &&
	       list_empty(&tr->times);
}

static struct aipu_run *first(struct list_head *head)
{
	return list_first_entry_or_null(head, struct aipu_run, lru);
}

/* Age in jiffies of the oldest dirty data aipu tracks, 0 if none. */
unsigned long track_oldest(struct aipu_track *tr, unsigned long now)
{
	struct aipu_run *c[4] = { first(&tr->pending), first(&tr->retry),
				  first(&tr->deferred), first(&tr->waiting) };
	unsigned long oldest = now;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(c); i++)
		if (c[i] && time_before(c[i]->time, oldest))
			oldest = c[i]->time;
	return now - oldest;
}

/* Drop neighbour @n of @r; @r now covers its pages (counted with @r). */
static void merge(struct aipu_track *tr, struct aipu_run *r,
		  struct aipu_run *n)
{
	unsigned long len = run_pages(n);

	if (time_before(n->time, r->time))
		r->time = n->time;
	run_destroy(tr, n);
	tr->st.pages_tracked += len;
}

static bool absorbable(const struct aipu_run *n, unsigned long cutoff,
		       bool all)
{
	return n && n->state == AIPU_PENDING &&
	       (all || time_before(n->time, cutoff));
}

/*
 * Fold pending neighbours of @r into it: contiguous pages, one write.  Only
 * those dirtied before @cutoff (all if @all): paced AIPU queues runs before
 * they are due and must not write them early.  At most AIPU_ABSORB_MAX of
 * them, so that a file written a page a jiffy (a million one-page runs in a
 * row) costs the lock no more than a batch; the rest go in later takes.
 */
static void absorb(struct aipu_track *tr, struct aipu_run *r,
		   unsigned long cutoff, bool all)
{
	unsigned int left = AIPU_ABSORB_MAX;
	struct aipu_run *n;

	while (left && (n = node_run(rb_prev(&r->node))) &&
	       absorbable(n, cutoff, all) && n->end == r->start) {
		r->start = n->start;
		merge(tr, r, n);
		left--;
	}
	while (left && (n = node_run(rb_next(&r->node))) &&
	       absorbable(n, cutoff, all) && n->start == r->end) {
		r->end = n->end;
		merge(tr, r, n);
		left--;
	}
}

/* First-dirty time of the run phase 2 takes next; false if none. */
bool track_next_time(struct aipu_track *tr, unsigned long *time)
{
	struct aipu_run *r = first(&tr->pending);

	if (r)
		*time = r->time;
	return r;
}

/*
 * Phase 2.  Take the oldest pending run for issuing.  It leaves the tree, so
 * pages dirtied again while it is written get runs of their own; the tracker
 * stays allocated until track_done().
 */
struct aipu_run *track_take(struct aipu_track *tr, unsigned long cutoff,
			    bool all)
{
	struct aipu_run *r = first(&tr->pending);

	if (!r)
		return NULL;
	list_del_init(&r->lru);
	track_hold(r->t);
	if (r->kind == AIPU_PAGES) {
		absorb(tr, r, cutoff, all);
		rb_erase(&r->node, &r->t->runs);
		RB_CLEAR_NODE(&r->node);
		tr->st.pages_tracked -= run_pages(r);
	}
	r->state = AIPU_ISSUING;
	r->t->issuing = r;
	r->t->declined = 0;
	return r;
}

/* Retry @time for the whole mapping, as the coarse fallback does. */
static void requeue_whole(struct aipu_track *tr, struct aipu_tracker *t,
			  unsigned long time)
{
	struct aipu_run *w = &t->whole;

	/*
	 * Written later in this same pass; what it then finds still dirty it
	 * puts back at its own time, so that must be the older one.
	 */
	if (w->state == AIPU_PENDING) {
		if (time_before(time, w->time))
			w->time = time;
		return;
	}
	if (w->state == AIPU_WAITING) {
		if (!time_before(time, w->time))
			return;
		list_del(&w->lru);
	}
	w->time = time;
	retry_insert(tr, w);
}

/*
 * Nothing of @t can be written for now (umount or remount holds its super
 * block) and its run dirtied at @time is already late: rather than put each
 * of its runs back every period, bound the mapping as a whole at the
 * device's oldest time (written early, never late; counted in fallbacks)
 * and give its runs back, at most @budget a call.  Returns the runs freed:
 * the caller calls again, dropping the lock in between, while it is not 0.
 */
unsigned long track_park(struct aipu_track *tr, struct aipu_tracker *t,
			 unsigned long time, unsigned long budget,
			 unsigned long now)
{
	if (t->dead)
		return 0;
	if (t->whole.state == AIPU_IDLE)
		tr->st.fallbacks++;
	requeue_whole(tr, t, time);
	return track_degrade(tr, t, budget, now);
}

/*
 * Pages [start, end) of the issued run @r are still dirty: locked, already
 * under writeback, or dirtied again.  Those dirtied again already have runs
 * of their own; the rest keep @r's time and are retried next period.
 * Returns the number of pages put back.
 *
 * They go into new runs, never into @r itself: once in the tree a run
 * belongs to the tracker, and eviction (the flusher's own iput) or a
 * re-dirtying may free it while the flusher still holds @r.
 */
unsigned long track_requeue(struct aipu_track *tr, struct aipu_run *r,
			    pgoff_t start, pgoff_t end)
{
	struct aipu_tracker *t = r->t;
	struct aipu_run *c = run_from(t, start), *g;
	unsigned long n = 0;
	pgoff_t pos = start;

	if (t->dead)
		return 0;
	while (pos < end) {
		pgoff_t stop = (c && c->start < end) ? c->start : end;

		if (pos < stop) {
			g = run_new(tr, t, pos, stop, r->time, AIPU_WAITING);
			if (!g) {
				tr->st.fallbacks++;
				requeue_whole(tr, t, r->time);
				break;
			}
			run_insert(tr, g);
			retry_insert(tr, g);
			n += stop - pos;
		}
		if (stop == end)
			break;
		pos = c->end;
		c = node_run(rb_next(&c->node));
	}
	return n;
}

/* The issued metadata or whole-mapping run @r needs another try. */
void track_requeue_embedded(struct aipu_track *tr, struct aipu_run *r)
{
	if (!r->t->dead && r->state == AIPU_ISSUING)
		retry_insert(tr, r);
}

void track_end_pass(struct aipu_track *tr, unsigned long issued)
{
	list_splice_init(&tr->deferred, &tr->waiting);
	list_splice_init(&tr->retry, &tr->waiting);
	tr->scan_moved = 0;
	tr->hist[min_t(unsigned long, fls_long(issued),
		       AIPU_HIST_BUCKETS - 1)]++;
	tr->st.flusher_runs++;
}

/* Counters add up over devices; gauges too; maxima take the largest. */
void track_stats_add(struct aipu_stats *sum, const struct aipu_stats *s)
{
	sum->pages_dirtied += s->pages_dirtied;
	sum->meta_dirtied += s->meta_dirtied;
	sum->entries_scanned += s->entries_scanned;
	sum->pages_written += s->pages_written;
	sum->meta_written += s->meta_written;
	sum->pages_clean += s->pages_clean;
	sum->pages_retried += s->pages_retried;
	sum->pages_tracked += s->pages_tracked;
	sum->runs_tracked += s->runs_tracked;
	sum->trackers += s->trackers;
	sum->flusher_runs += s->flusher_runs;
	sum->fallbacks += s->fallbacks;
	sum->pages_deferred += s->pages_deferred;
	sum->pages_late += s->pages_late;
	sum->pages_staged += s->pages_staged;
	sum->pages_purged += s->pages_purged;
	sum->pages_not_purged += s->pages_not_purged;
	sum->pages_evicting += s->pages_evicting;
	sum->pages_redirtied += s->pages_redirtied;
	sum->times_dirtied += s->times_dirtied;
	sum->times_written += s->times_written;
	sum->lock_hold_max_ns = max(sum->lock_hold_max_ns, s->lock_hold_max_ns);
}

/* @pages were written at @age_ms after they first became dirty. */
void track_written(struct aipu_track *tr, unsigned long pages,
		   unsigned long age_ms)
{
	tr->st.pages_written += pages;
	tr->age_hist[min_t(unsigned long, fls_long(age_ms),
			   AIPU_AGE_BUCKETS - 1)] += pages;
}

/* The flusher keeps @t allocated (not its mapping) until track_put(). */
void track_hold(struct aipu_tracker *t)
{
	t->users++;
}

void track_put(struct aipu_track *tr, struct aipu_tracker *t)
{
	if (--t->users)
		return;
	if (!t->dead && !(RB_EMPTY_ROOT(&t->runs) &&
			  t->whole.state == AIPU_IDLE &&
			  t->meta.state == AIPU_IDLE &&
			  t->times.state == AIPU_IDLE))
		return;
	tracker_free(tr, t);	/* evicted, or nothing left to track */
}

/* The flusher is finished with @r; it may have been reused by a requeue. */
void track_done(struct aipu_track *tr, struct aipu_run *r)
{
	struct aipu_tracker *t = r->t;

	if (t->issuing == r)
		t->issuing = NULL;
	if (r->state == AIPU_ISSUING) {
		if (r->kind == AIPU_PAGES)
			run_free(tr, r);
		else
			r->state = AIPU_IDLE;
	}
	track_put(tr, t);
}

static void embed_drop(struct aipu_run *r)
{
	if (r->state == AIPU_WAITING || r->state == AIPU_PENDING) {
		list_del_init(&r->lru);
		r->state = AIPU_IDLE;
	}
}

/*
 * The mapping is going away (inode eviction): forget it, freeing at most
 * @budget runs a call.  Returns true once every run is gone; until then the
 * caller calls again, and may drop the lock in between so that a file with
 * many runs does not hold the device's lock for all of them.  From the first
 * call nobody can find @t and no run is added to it; it stays allocated
 * until the last call (and until the flusher lets go of it).
 */
bool track_kill(struct aipu_track *tr, struct aipu_tracker *t,
		unsigned long budget)
{
	struct rb_node *n;

	if (!t->dead) {
		embed_drop(&t->whole);
		embed_drop(&t->meta);
		embed_drop(&t->times);
		tracker_unhash(tr, t);
		t->dead = true;
		track_hold(t);		/* until the last call */
	}
	while (budget-- && (n = rb_first(&t->runs))) {
		struct aipu_run *r = node_run(n);

		rb_erase(n, &t->runs);
		list_del(&r->lru);
		tr->st.pages_tracked -= run_pages(r);
		run_free(tr, r);
	}
	if (!RB_EMPTY_ROOT(&t->runs))
		return false;
	track_put(tr, t);
	return true;
}

/* Forget everything; the flusher must hold no run. */
void track_clear(struct aipu_track *tr)
{
	struct aipu_tracker *t, *tmp;

	list_for_each_entry_safe(t, tmp, &tr->trackers, link)
		track_kill(tr, t, ~0UL);
}
