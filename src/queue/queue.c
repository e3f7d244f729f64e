// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: a device's queue built from logs.  See include/aipu_queue.h;
 * every function here but aipu_queue_pages_fast() runs under the lock of the
 * device whose queue @tr is, takes the lock of each file it changes (one at
 * a time, inside the device's), and never sleeps.
 */
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "aipu_queue.h"

void aipu_queue_init(struct aipu_queue *tr, struct list_head *slots,
		     unsigned long width, unsigned long now)
{
	memset(tr, 0, sizeof(*tr));
	aipu_wheel_init(&tr->wheel, slots, AIPU_QUEUE_SLOTS, width, now);
	INIT_LIST_HEAD(&tr->due);
	INIT_LIST_HEAD(&tr->drain);
	INIT_LIST_HEAD(&tr->retried);
	INIT_LIST_HEAD(&tr->times);
	INIT_LIST_HEAD(&tr->trackers);
}

static void entry_init(struct aipu_entry *e, struct aipu_file *t, u8 kind)
{
	INIT_LIST_HEAD(&e->lru);
	e->t = t;
	e->kind = kind;
	e->state = AIPU_ENTRY_IDLE;
}

struct aipu_file *aipu_queue_get(struct aipu_queue *tr, const void *key,
				 void *host)
{
	struct aipu_file *t = aipu_file_lookup(key);

	if (t && t->hashed && !t->dead)
		return t->tr == tr ? t : NULL;
	t = aipu_file_alloc();
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->tr = tr;
	t->key = key;
	t->host = host;
	t->born = tr->misses;
	aipu_flog_init(&t->q);
	INIT_LIST_HEAD(&t->node.link);
	INIT_LIST_HEAD(&t->retried);
	INIT_LIST_HEAD(&t->drain);
	entry_init(&t->whole, t, AIPU_ENTRY_WHOLE);
	entry_init(&t->meta, t, AIPU_ENTRY_META);
	entry_init(&t->times, t, AIPU_ENTRY_TIMES);
	if (aipu_file_insert(t)) {
		aipu_file_free(t);
		return NULL;
	}
	/* Findable from here: the fast path may be waiting for it. */
	aipu_file_lock(t);
	t->hashed = true;
	aipu_file_unlock(t);
	list_add_tail(&t->link, &tr->trackers);
	tr->st.trackers++;
	return t;
}

static bool entry_queued(const struct aipu_entry *e)
{
	return e->state == AIPU_ENTRY_WAITING || e->state == AIPU_ENTRY_RETRY;
}

static bool entry_due(const struct aipu_entry *e, unsigned long cutoff)
{
	return e->state == AIPU_ENTRY_WAITING && time_before(e->time, cutoff);
}

static void older(unsigned long time, unsigned long *oldest, bool *found)
{
	if (!*found || time_before(time, *oldest))
		*oldest = time;
	*found = true;
}

/* The oldest time of what phase 2 could take of @t; false if nothing. */
static bool file_time(const struct aipu_file *t, unsigned long *time)
{
	bool found = false;
	unsigned long x;

	if (!t->draining && aipu_flog_oldest(&t->q, &x))
		older(x, time, &found);
	if (t->whole.state == AIPU_ENTRY_WAITING)
		older(t->whole.time, time, &found);
	if (t->meta.state == AIPU_ENTRY_WAITING)
		older(t->meta.time, time, &found);
	return found;
}

static void unlink_node(struct aipu_queue *tr, struct aipu_file *t)
{
	if (t->where == AIPU_AT_WHEEL)
		aipu_wheel_del(&tr->wheel, &t->node);
	else
		list_del_init(&t->node.link);
	t->where = AIPU_AT_NOWHERE;
}

/*
 * Put @t where its oldest takeable thing says: the wheel's slot of that
 * time (moved only to an earlier one: O(1)), or nowhere if it has none.  A
 * file on the due list stays there: phase 2 comes to it.
 */
static void requeue(struct aipu_queue *tr, struct aipu_file *t)
{
	unsigned long time;

	if (t->dead || t->where == AIPU_AT_DUE)
		return;
	if (!file_time(t, &time)) {
		if (t->where != AIPU_AT_NOWHERE)
			unlink_node(tr, t);
		return;
	}
	if (t->where == AIPU_AT_WHEEL) {
		if (!time_before(time, t->node.time))
			return;		/* its slot is still right */
		aipu_wheel_del(&tr->wheel, &t->node);
	}
	aipu_wheel_add(&tr->wheel, &t->node, time);
	t->where = AIPU_AT_WHEEL;
}

/* Due in this pass, whatever phase 1 found: onto the due list. */
static void make_due(struct aipu_queue *tr, struct aipu_file *t,
		     unsigned long time)
{
	if (t->dead)
		return;
	if (t->where == AIPU_AT_DUE) {
		if (time_before(time, t->node.time))
			t->node.time = time;
		return;
	}
	if (t->where == AIPU_AT_WHEEL)
		aipu_wheel_del(&tr->wheel, &t->node);
	t->node.time = time;
	list_add_tail(&t->node.link, &tr->due);
	t->where = AIPU_AT_DUE;
}

/*
 * Bring the device's gauges up to date with @t's queue: called after every
 * change to it, so they add up to the files' queues exactly.
 */
static void account(struct aipu_queue *tr, struct aipu_file *t)
{
	unsigned long pages = t->q.log.pages + t->q.retry_pages + t->out_pages;

	tr->st.bytes += t->q.log.bytes - t->counted_bytes;
	tr->st.pages += pages - t->counted_pages;
	t->counted_bytes = t->q.log.bytes;
	t->counted_pages = pages;
}

/*
 * The whole-file entry waits at @time, unless it waits at an older one; one
 * put back in this pass stays due in the next.
 */
static void whole_by(struct aipu_queue *tr, struct aipu_file *t,
		     unsigned long time)
{
	struct aipu_entry *w = &t->whole;

	if (entry_queued(w) && !time_before(time, w->time))
		return;
	w->time = time;
	if (w->state == AIPU_ENTRY_RETRY)
		return;
	w->state = AIPU_ENTRY_WAITING;
	requeue(tr, t);
}

/*
 * The whole-file entry is being written and pages of @time are dirty: it
 * goes back when done (aipu_queue_done_entry()), at the oldest such time if the
 * write covered the file (aipu_queue_requeue_whole_since()).
 */
static void whole_again(struct aipu_entry *w, unsigned long time)
{
	if (!w->again || time_before(time, w->again_time))
		w->again_time = time;
	w->again = true;
}

/*
 * Bound the whole file by @time.  Already queued means an older time is
 * set; being written, that the flusher puts it back when done
 * (aipu_queue_done_entry()).  True if it was idle: queued now.
 */
static bool whole_queue(struct aipu_queue *tr, struct aipu_file *t,
			unsigned long time)
{
	if (t->whole.state == AIPU_ENTRY_ISSUING)
		whole_again(&t->whole, time);
	if (t->whole.state != AIPU_ENTRY_IDLE)
		return false;
	whole_by(tr, t, time);
	return true;
}

/* Memory ran out, or the cap: a fallback, counted. */
static void whole_fallback(struct aipu_queue *tr, struct aipu_file *t,
			   unsigned long time)
{
	if (whole_queue(tr, t, time))
		tr->st.fallbacks++;
}

void aipu_queue_whole(struct aipu_queue *tr, struct aipu_file *t,
		      unsigned long time)
{
	aipu_file_lock(t);
	whole_fallback(tr, t, time);
	aipu_file_unlock(t);
}

/*
 * A DAX mapping was dirtied (src/hook.c): no page of it is in the page
 * cache to date, so the whole file is due at @time, as a fallback's is,
 * but not counted as one: this is how such a file is bounded.
 */
void aipu_queue_whole_dax(struct aipu_queue *tr, struct aipu_file *t,
			  unsigned long time)
{
	aipu_file_lock(t);
	whole_queue(tr, t, time);
	aipu_file_unlock(t);
}

/*
 * Bound @t's pages dirtied at @time or later by its whole-file entry: queue
 * it at @time (a fallback) or move it earlier, wherever it is (one being
 * written puts back what it finds still dirty at its own time).
 */
static void whole_cover(struct aipu_queue *tr, struct aipu_file *t,
			unsigned long time)
{
	struct aipu_entry *w = &t->whole;

	if (w->state == AIPU_ENTRY_IDLE)
		tr->st.fallbacks++;
	if (w->state == AIPU_ENTRY_ISSUING) {
		if (time_before(time, w->time))
			w->time = time;
		whole_again(w, time);
		return;
	}
	whole_by(tr, t, time);
}

/*
 * Pages [start, start + nr) of @t went clean -> dirty at @time.  A file
 * bounded as a whole needs nothing more for them (its whole-file entry is
 * older: they are written early, never late); a file past its memory cap,
 * being drained, or whose log cannot grow, is bounded so from here.
 */
static void pages_locked(struct aipu_queue *tr, struct aipu_file *t,
			 pgoff_t start, unsigned long nr, unsigned long time)
{
	unsigned long done;

	aipu_file_assert_held(t);
	tr->st.pages_dirtied += nr;
	if (entry_queued(&t->whole))
		return;
	if (t->draining || t->q.log.bytes >= AIPU_QUEUE_BYTES_MAX) {
		whole_fallback(tr, t, time);
		return;
	}
	done = aipu_flog_dirty(&t->q, start, nr, time);
	account(tr, t);
	if (done < nr)
		whole_fallback(tr, t, time);
	/*
	 * The common case, a file already in the wheel at its oldest time:
	 * nothing newer moves it, and the probe skips finding that time.
	 */
	if (t->where != AIPU_AT_WHEEL || time_before(time, t->node.time))
		requeue(tr, t);
}

void aipu_queue_pages(struct aipu_queue *tr, struct aipu_file *t,
		      pgoff_t start, unsigned long nr, unsigned long time)
{
	aipu_file_lock(t);
	pages_locked(tr, t, start, nr, time);
	aipu_file_unlock(t);
}

/*
 * The common page: one, its live chunk at hand, its bit clear, the log's
 * newest segment with room; inline all the way (the probe's instructions,
 * docs/design.md §4).  AIPU_FAST_DONE, AIPU_FAST_ASK if whether the write
 * was declined matters (aipu_queue_may_redirty(): here its bit set or the
 * flusher writing the file) and has not been asked, or -1 for the general
 * path.
 */
static int page_near(struct aipu_file *t, pgoff_t index,
		     unsigned long time, bool ask)
{
	struct aipu_live_chunk *c = aipu_live_chunk_near(&t->q.live, index);

	if (!c)
		return -1;
	if (aipu_live_chunk_test(c, index) || t->users)
		return ask ? AIPU_FAST_ASK : -1;
	if (!aipu_log_append_page(&t->q.log, index, time))
		return -1;
	aipu_live_chunk_set(&t->q.live, c, index);
	return AIPU_FAST_DONE;
}

/*
 * The probe's common case under @t's lock alone, not the device's, so that
 * CPUs dirtying different files of one device share nothing: pages
 * [start, start + nr) of a file that is queued (in the wheel at @time or
 * earlier, or due) and tracked page by page, dirtied at @time.  Changes
 * nothing and returns AIPU_FAST_NO when the device's queue has to change
 * too (the file to be queued or moved earlier, or bounded as a whole):
 * then the caller takes the device's lock and calls aipu_queue_pages().
 * AIPU_FAST_ASK, nothing changed either, if @ask and the answer to whether
 * the pages' write was declined matters (aipu_queue_may_redirty()): the caller
 * asks, and calls again without @ask if it was not, else goes to
 * aipu_queue_redirty().  AIPU_FAST_SHORT: the log could not hold them all; the
 * caller bounds the file with aipu_queue_whole() at @time under the device's
 * lock.  The device's counters this changes go to @dl, the caller's
 * (per-CPU) share of them.
 */
/* The device's counters @t changed, into @dl: see aipu_queue_pages_fast(). */
static void fast_count(struct aipu_file *t, struct aipu_queue_delta *dl,
		       unsigned long nr)
{
	unsigned long pages = t->q.log.pages + t->q.retry_pages + t->out_pages;

	/*
	 * Only this CPU writes @dl (interrupts off), but stat sums every CPU's
	 * share meanwhile, locklessly: marked stores for its marked loads.
	 */
	WRITE_ONCE(dl->pages_dirtied, dl->pages_dirtied + nr);
	WRITE_ONCE(dl->bytes,
		   dl->bytes + (long)(t->q.log.bytes - t->counted_bytes));
	WRITE_ONCE(dl->pages, dl->pages + (long)(pages - t->counted_pages));
	t->counted_bytes = t->q.log.bytes;
	t->counted_pages = pages;
}

/*
 * fast_count() for page_near()'s page: one page more, no memory more.  The
 * device's gauges hold what the files' counted_* say, so they stay exact
 * by adding to both.
 */
static void count_page(struct aipu_file *t, struct aipu_queue_delta *dl)
{
	WRITE_ONCE(dl->pages_dirtied, dl->pages_dirtied + 1);
	WRITE_ONCE(dl->pages, dl->pages + 1);
	t->counted_pages++;
}

/*
 * aipu_queue_pages_fast() past page_near(): any extent, through
 * aipu_flog_dirty().
 */
static noinline int pages_fast_general(struct aipu_file *t,
				       pgoff_t start, unsigned long nr,
				       unsigned long time,
				       struct aipu_queue_delta *dl, bool ask)
{
	unsigned long done;

	if (ask && aipu_queue_may_redirty(t, start, nr))
		return AIPU_FAST_ASK;
	done = aipu_flog_dirty(&t->q, start, nr, time);
	fast_count(t, dl, nr);
	return done < nr ? AIPU_FAST_SHORT : AIPU_FAST_DONE;
}

int aipu_queue_pages_fast(struct aipu_file *t, pgoff_t start,
			  unsigned long nr, unsigned long time,
			  struct aipu_queue_delta *dl, bool ask)
{
	int r;

	if (!t->hashed || t->dead || t->draining || entry_queued(&t->whole) ||
	    t->q.log.bytes >= AIPU_QUEUE_BYTES_MAX ||
	    t->where == AIPU_AT_NOWHERE ||
	    (t->where == AIPU_AT_WHEEL && time_before(time, t->node.time)))
		return AIPU_FAST_NO;
	r = nr == 1 ? page_near(t, start, time, ask) : -1;
	if (r < 0)
		return pages_fast_general(t, start, nr, time, dl, ask);
	if (r == AIPU_FAST_DONE)
		count_page(t, dl);
	return r;
}

void aipu_queue_meta(struct aipu_queue *tr, struct aipu_file *t,
		     unsigned long time, bool was_clean)
{
	struct aipu_entry *e = &t->meta;

	aipu_file_lock(t);
	if (e->state == AIPU_ENTRY_ISSUING)
		e->again = true;
	/* Written by someone since: queued anew. */
	if (entry_queued(e) && was_clean)
		e->state = AIPU_ENTRY_IDLE;
	if (e->state == AIPU_ENTRY_IDLE) {
		e->time = time;
		e->state = AIPU_ENTRY_WAITING;
		requeue(tr, t);
	}
	aipu_file_unlock(t);
}

/*
 * aipu_queue_meta() where it changes nothing the device's lock guards: the
 * inode was dirty already (!@was_clean) and its entry waits or is being
 * written (then to be put back: @again).  Under @t's lock alone, as the
 * probe's fast path; false, nothing done, where aipu_queue_meta() is needed.
 */
bool aipu_queue_meta_fast(struct aipu_file *t, bool was_clean)
{
	struct aipu_entry *e = &t->meta;

	if (!t->hashed || t->dead || was_clean || e->state == AIPU_ENTRY_IDLE)
		return false;
	if (e->state == AIPU_ENTRY_ISSUING)
		e->again = true;
	return true;
}

/*
 * Need the probe ask whether a clean -> dirty transition of pages [start,
 * start + nr) is a declined write's (the page's dirty tag still set: a
 * walk of the mapping's xarray, a quarter of the probe's instructions,
 * docs/design.md §4)?  Only if aipu_queue_redirty() would treat it otherwise
 * than aipu_queue_pages(): when a page has a queued entry, which a redirtying
 * keeps, or the flusher is writing the file (its declines are redirtied
 * before the batch comes back), or the file is bounded as a whole or being
 * freed.  Otherwise the two differ in the counters alone (pages_dirtied,
 * not pages_redirtied: a page dirtied before aipu was loaded, declined by
 * Linux's writeback).  Under @t's lock.
 */
bool aipu_queue_may_redirty(struct aipu_file *t, pgoff_t start,
			    unsigned long nr)
{
	return t->users || t->draining || entry_queued(&t->whole) ||
	       aipu_live_any(&t->q.live, start, nr);
}

/*
 * Pages [start, start + nr) were dirtied again without having been written:
 * a ->writepage declined them (folio_redirty_for_writepage()).  That is no
 * new first dirtying: a page with a queued entry keeps it (one the flusher
 * is writing comes back through aipu_queue_done_pages() still dirty, at its
 * time, and is counted in @t->declined: ->writepages counts it written);
 * only pages aipu never knew get @time.
 */
void aipu_queue_redirty(struct aipu_queue *tr, struct aipu_file *t,
			pgoff_t start, unsigned long nr, unsigned long time)
{
	u64 dirtied = tr->st.pages_dirtied;
	pgoff_t pos;

	aipu_file_lock(t);
	tr->st.pages_redirtied += nr;
	if (entry_queued(&t->whole) || t->draining)
		pages_locked(tr, t, start, nr, time);
	else
		for (pos = start; pos < start + nr; pos++)
			if (!aipu_live_test(&t->q.live, pos))
				pages_locked(tr, t, pos, 1, time);
			else if (t->users)
				/* maybe of the batch out; read unlocked */
				WRITE_ONCE(t->declined, t->declined + 1);
	tr->st.pages_dirtied = dirtied;	/* no transitions of their own */
	aipu_file_unlock(t);
}

/*
 * Pages [start, start + nr) went clean -> dirty while the flusher wrote
 * something first dirtied at @time (the inode's metadata into the block
 * device's pages): they inherit that age and are due in this pass.
 */
static void inherit_locked(struct aipu_queue *tr, struct aipu_file *t,
			   pgoff_t start, unsigned long nr, unsigned long time)
{
	aipu_file_assert_held(t);
	tr->st.pages_dirtied += nr;
	if (entry_queued(&t->whole) || t->draining ||
	    aipu_flog_inherit(&t->q, start, nr, time)) {
		account(tr, t);
		whole_cover(tr, t, time);
		if (t->whole.state == AIPU_ENTRY_RETRY)
			t->whole.state = AIPU_ENTRY_WAITING;
		if (t->whole.state == AIPU_ENTRY_WAITING)
			make_due(tr, t, t->whole.time);
		return;
	}
	account(tr, t);
	make_due(tr, t, time);
}

void aipu_queue_inherit(struct aipu_queue *tr, struct aipu_file *t,
			pgoff_t start, unsigned long nr, unsigned long time)
{
	aipu_file_lock(t);
	inherit_locked(tr, t, start, nr, time);
	aipu_file_unlock(t);
}

/*
 * Lazytime: the inode's timestamps alone became dirty (I_DIRTY_TIME), to be
 * written once dirtytime_expire_seconds old, as Linux's periodic writeback
 * would.  Their own list, in time order: the expiry is not max_age_ms.  A
 * dirtying that finds them clean moves them to the tail.
 */
static void times_locked(struct aipu_queue *tr, struct aipu_file *t,
			 unsigned long time, bool was_clean)
{
	struct aipu_entry *e = &t->times, *last;

	aipu_file_assert_held(t);
	if (e->state == AIPU_ENTRY_ISSUING) {
		if (was_clean)
			e->time = time;	/* written meanwhile: requeued at it */
		e->again = true;
		return;
	}
	if (e->state == AIPU_ENTRY_WAITING) {
		if (!was_clean)
			return;
		list_del(&e->lru);
	}
	/* Dirty before we saw it: no earlier than the newest, to keep order. */
	last = list_empty(&tr->times) ? NULL :
	       list_last_entry(&tr->times, struct aipu_entry, lru);
	if (last && time_before(time, last->time))
		time = last->time;
	e->time = time;
	e->state = AIPU_ENTRY_WAITING;
	list_add_tail(&e->lru, &tr->times);
}

void aipu_queue_times(struct aipu_queue *tr, struct aipu_file *t,
		      unsigned long time, bool was_clean)
{
	aipu_file_lock(t);
	times_locked(tr, t, time, was_clean);
	aipu_file_unlock(t);
}

/*
 * @t was dirty before the probes were in (src/handover.c's adoption at
 * load): the entries the probes would have queued for what @what names,
 * at @time (the inode's dirtied_when, or for its lazytime timestamps
 * dirtied_time_when), and nothing a later dirtying queued is made younger.
 * The pages are bounded as a whole, as a fallback's are, but not counted
 * as one: no page-level time exists for them.  True, and counted in
 * inodes_adopted, if it queued an entry that was not there yet.
 */
bool aipu_queue_adopt(struct aipu_queue *tr, struct aipu_file *t,
		      unsigned int what, unsigned long time)
{
	bool queued = false;

	aipu_file_lock(t);
	if (what & AIPU_ADOPT_PAGES) {
		queued |= t->whole.state == AIPU_ENTRY_IDLE;
		if (t->whole.state == AIPU_ENTRY_ISSUING)
			whole_again(&t->whole, time);
		else
			whole_by(tr, t, time);
	}
	if ((what & AIPU_ADOPT_META) && t->meta.state == AIPU_ENTRY_IDLE) {
		t->meta.time = time;
		t->meta.state = AIPU_ENTRY_WAITING;
		requeue(tr, t);
		queued = true;
	}
	if ((what & AIPU_ADOPT_TIMES) && t->times.state == AIPU_ENTRY_IDLE) {
		times_locked(tr, t, time, false);
		queued = true;
	}
	tr->st.inodes_adopted += queued;
	aipu_file_unlock(t);
	return queued;
}

/* The oldest timestamps dirtied at or before @cutoff, taken for writing. */
struct aipu_entry *aipu_queue_take_times(struct aipu_queue *tr,
					 unsigned long cutoff)
{
	struct aipu_entry *e = list_first_entry_or_null(&tr->times,
							struct aipu_entry,
							lru);

	if (!e || time_after(e->time, cutoff))
		return NULL;
	aipu_file_lock(e->t);
	list_del_init(&e->lru);
	e->t->users++;
	e->state = AIPU_ENTRY_ISSUING;
	aipu_file_unlock(e->t);
	return e;
}

/* Still dirty after the flusher's try: back in time order. */
static void requeue_times_locked(struct aipu_queue *tr, struct aipu_entry *e)
{
	struct list_head *pos = tr->times.prev;

	aipu_file_assert_held(e->t);
	if (e->t->dead || e->state != AIPU_ENTRY_ISSUING)
		return;
	while (pos != &tr->times &&
	       time_before(e->time, list_entry(pos, struct aipu_entry,
					       lru)->time))
		pos = pos->prev;
	list_add(&e->lru, pos);
	e->state = AIPU_ENTRY_WAITING;
}

void aipu_queue_requeue_times(struct aipu_queue *tr, struct aipu_entry *e)
{
	aipu_file_lock(e->t);
	requeue_times_locked(tr, e);
	aipu_file_unlock(e->t);
}

/*
 * Free at most *@budget objects of @t's queue (counted down); true once
 * nothing is left.  @t is on the drain list, and its queue unused, until
 * then.
 */
static bool drain(struct aipu_queue *tr, struct aipu_file *t,
		  unsigned long *budget)
{
	bool done;

	if (!t->draining) {
		t->draining = true;
		list_add_tail(&t->drain, &tr->drain);
	}
	done = aipu_flog_drop(&t->q, budget);
	if (done) {
		list_del_init(&t->drain);
		t->draining = false;
		aipu_flog_init(&t->q);
	}
	account(tr, t);
	return done;
}

/*
 * Phase 1: queues left half freed by the shrinker first, then the due files
 * from the wheel to the due list, looking at most at *@budget of them
 * (counted down).  Returns true when done, false when the budget ran out:
 * call again after dropping the lock.
 */
bool aipu_queue_scan(struct aipu_queue *tr, unsigned long cutoff,
		     unsigned int *budget)
{
	struct aipu_file *t, *tmp;
	unsigned int before;
	unsigned long left;
	LIST_HEAD(due);
	bool done;

	list_for_each_entry_safe(t, tmp, &tr->drain, drain) {
		if (t->dead)
			continue;	/* aipu_queue_kill() frees it */
		left = *budget;
		aipu_file_lock(t);
		done = drain(tr, t, &left);
		if (done)
			requeue(tr, t);
		aipu_file_unlock(t);
		*budget = left;
		if (!done)
			return false;
	}
	tr->scan_cutoff = cutoff;
	before = *budget;
	done = aipu_wheel_due(&tr->wheel, cutoff, &due, budget);
	tr->st.entries_scanned += before - *budget;
	list_for_each_entry(t, &due, node.link) {
		aipu_file_lock(t);
		t->where = AIPU_AT_DUE;
		aipu_file_unlock(t);
	}
	list_splice_tail(&due, &tr->due);
	return done;
}

/*
 * Staging: the *@files oldest files go whole, whatever their age (pages
 * dirtied before @now), at most *@budget of them looked at; both count
 * down.  Returns the pages (and entries) moved.
 */
unsigned long aipu_queue_stage(struct aipu_queue *tr, unsigned long now,
			       unsigned int *files, unsigned int *budget)
{
	struct aipu_wheel *w = &tr->wheel;
	struct aipu_wheel_node *n;
	struct aipu_file *t;
	unsigned long moved = 0;
	struct list_head *slot;
	unsigned int s;

	/*
	 * Not the pages of this jiffy: dirtied again during their write, they
	 * would have a second entry of the same time (see aipu_flog_done()).
	 */
	tr->stage_cutoff = now;
	for (s = 0; s <= w->nslots && *files && *budget; s++) {
		slot = s ? aipu_wheel_slot(w, w->clock + (s - 1) * w->width) :
			   &w->late;
		while (*files && *budget &&
		       (n = list_first_entry_or_null(slot,
						     struct aipu_wheel_node,
						     link))) {
			t = container_of(n, struct aipu_file, node);
			(*files)--;
			(*budget)--;
			aipu_file_lock(t);
			aipu_wheel_del(w, n);
			list_add_tail(&n->link, &tr->due);
			t->where = AIPU_AT_DUE;
			t->staged = true;
			moved += (t->draining ? 0 : t->q.log.pages +
				  t->q.retry_pages) +
				 (t->whole.state == AIPU_ENTRY_WAITING) +
				 (t->meta.state == AIPU_ENTRY_WAITING);
			aipu_file_unlock(t);
		}
	}
	tr->st.pages_staged += moved;
	return moved;
}

/* Something of @t is due at @cutoff. */
static bool file_due(const struct aipu_file *t, unsigned long cutoff)
{
	unsigned long time;

	return entry_due(&t->whole, cutoff) || entry_due(&t->meta, cutoff) ||
	       (!t->draining && aipu_flog_oldest(&t->q, &time) &&
		time_before(time, cutoff));
}

/*
 * @t leaves the due list once nothing of it is due at @cutoff, the take's,
 * or at phase 1's if that is later: a paced pass found it due within the
 * period, and the flusher takes the rest as it comes due, waiting for the
 * file's next time (kept here, for aipu_queue_next_time()).
 */
static void leave_if_done(struct aipu_queue *tr, struct aipu_file *t,
			  unsigned long cutoff)
{
	unsigned long time;

	if (!t->staged && time_after(tr->scan_cutoff, cutoff))
		cutoff = tr->scan_cutoff;
	if (file_due(t, cutoff)) {
		if (file_time(t, &time) && time_after(time, t->node.time))
			t->node.time = time;
		return;
	}
	list_del_init(&t->node.link);
	t->where = AIPU_AT_NOWHERE;
	t->staged = false;
	requeue(tr, t);
}

/* The first due file's pages into @b, as many as fit: one aipu_flog_take(). */
static void take_pages(struct aipu_queue *tr, struct aipu_file *t,
		       unsigned long cutoff, struct aipu_batch *b)
{
	unsigned long out = 0;
	unsigned int i;

	if (!t->draining)
		b->n = aipu_flog_take(&t->q, cutoff, b->x, AIPU_BATCH_MAX,
				      b->max_pages ? b->max_pages :
						AIPU_FLOG_TAKE_PAGES);
	account(tr, t);
	leave_if_done(tr, t, cutoff);
	if (!b->n) {
		b->again = !list_empty(&tr->due);
		return;
	}
	for (i = 0; i < b->n; i++)
		out += b->x[i].nr;
	tr->st.pages_taken += out;
	if (!t->users || time_before(b->x[0].time, t->out_time))
		t->out_time = b->x[0].time;
	if (!tr->out_pages || time_before(b->x[0].time, tr->out_time))
		tr->out_time = b->x[0].time;
	t->out_pages += out;
	tr->out_pages += out;
	account(tr, t);
	if (!t->users)
		WRITE_ONCE(t->declined, 0);
	t->users++;
	b->t = t;
}

/*
 * Phase 2: from the first due file, dirtied before @cutoff (a staged file:
 * everything), its whole-file or metadata entry (returned; hand it back
 * with aipu_queue_done_entry()), or else a batch of its extents in @b (NULL
 * returned, @b->t set: merge them with aipu_flog_merge() outside the lock, hand
 * each back with aipu_queue_done_pages(), then call aipu_queue_put(@b->t)).
 * NULL with @b->t NULL and @b->again false: nothing is left; with @b->again, a
 * hold went on stale entries only: call again (after dropping the lock).
 * @b->max_pages, the caller's, bounds the pages of a batch (0: no bound of
 * its own).
 */
struct aipu_entry *aipu_queue_take(struct aipu_queue *tr, unsigned long cutoff,
				   struct aipu_batch *b)
{
	struct aipu_file *t = list_first_entry_or_null(&tr->due,
						       struct aipu_file,
						       node.link);
	struct aipu_entry *e = NULL;

	b->t = NULL;
	b->n = 0;
	b->again = false;
	if (!t)
		return NULL;
	aipu_file_lock(t);
	if (t->staged)
		cutoff = tr->stage_cutoff;
	if (entry_due(&t->whole, cutoff))
		e = &t->whole;
	else if (entry_due(&t->meta, cutoff))
		e = &t->meta;
	if (e) {
		e->state = AIPU_ENTRY_ISSUING;
		t->users++;
		leave_if_done(tr, t, cutoff);
	} else {
		take_pages(tr, t, cutoff, b);
	}
	aipu_file_unlock(t);
	return e;
}

/*
 * Taken pages [index, index + nr) of @t, first dirtied at @time or later,
 * were written or found clean, or (@still_dirty) are to be written again at
 * @time, in the next pass.  Nothing to do for an evicted file.  A file
 * bounded as a whole meanwhile, or being drained, keeps them under its
 * whole-file entry, no later than @time.
 */
static void done_pages_locked(struct aipu_queue *tr,
			      struct aipu_file *t, pgoff_t index,
			      unsigned long nr, unsigned long time,
			      bool still_dirty)
{
	unsigned long back = min(nr, t->out_pages);

	aipu_file_assert_held(t);
	t->out_pages -= back;
	tr->out_pages -= min(back, tr->out_pages);
	if (t->dead) {
		account(tr, t);
		return;
	}
	if (still_dirty)
		tr->st.pages_retried += nr;
	if (t->draining || t->whole.state != AIPU_ENTRY_IDLE) {
		if (!t->draining)
			aipu_flog_done(&t->q, index, nr, time, false);
		account(tr, t);
		if (still_dirty)
			whole_cover(tr, t, time);
		return;
	}
	if (aipu_flog_done(&t->q, index, nr, time, still_dirty))
		whole_cover(tr, t, time);
	account(tr, t);
	if (aipu_flog_retried(&t->q) && list_empty(&t->retried))
		list_add_tail(&t->retried, &tr->retried);
}

void aipu_queue_done_pages(struct aipu_queue *tr, struct aipu_file *t,
			   pgoff_t index, unsigned long nr, unsigned long time,
			   bool still_dirty)
{
	aipu_file_lock(t);
	done_pages_locked(tr, t, index, nr, time, still_dirty);
	aipu_file_unlock(t);
}

/*
 * Collect [index, index + nr) of a batch for the hand-back; @flush takes the
 * lock and calls aipu_queue_handback() each time the collection holds a hold's
 * worth (AIPU_HANDBACK_MAX stretches or AIPU_HANDBACK_PAGES pages), so no
 * hold grows with the batch.
 */
void aipu_queue_handback_add(struct aipu_handback *h, pgoff_t index,
			     unsigned long nr, unsigned long time, bool dirty,
			     void (*flush)(struct aipu_handback *h))
{
	unsigned long part;

	while (nr) {
		part = min(nr, AIPU_HANDBACK_PAGES - h->pages);
		h->s[h->n].index = index;
		h->s[h->n].nr = part;
		h->s[h->n].time = time;
		h->s[h->n].dirty = dirty;
		h->n++;
		h->pages += part;
		index += part;
		nr -= part;
		if (h->n == AIPU_HANDBACK_MAX || h->pages == AIPU_HANDBACK_PAGES)
			flush(h);
	}
}

/* The collection back to its file's queue, and emptied.  Lock held. */
void aipu_queue_handback(struct aipu_queue *tr, struct aipu_handback *h)
{
	unsigned int i;

	aipu_file_lock(h->t);
	for (i = 0; i < h->n; i++)
		done_pages_locked(tr, h->t, h->s[i].index, h->s[i].nr,
				  h->s[i].time, h->s[i].dirty);
	aipu_file_unlock(h->t);
	h->n = 0;
	h->pages = 0;
}

/* The embedded entry @e, being written, needs another try: next pass. */
static void requeue_entry_locked(struct aipu_queue *tr, struct aipu_entry *e)
{
	struct aipu_file *t = e->t;

	aipu_file_assert_held(t);
	if (!t->dead && e->state == AIPU_ENTRY_ISSUING) {
		e->state = AIPU_ENTRY_RETRY;
		if (list_empty(&t->retried))
			list_add_tail(&t->retried, &tr->retried);
	}
}

void aipu_queue_requeue_entry(struct aipu_queue *tr, struct aipu_entry *e)
{
	aipu_file_lock(e->t);
	requeue_entry_locked(tr, e);
	aipu_file_unlock(e->t);
}

/*
 * The whole-file entry @e, being written, covered the file and pages are
 * dirty after: those dirtied while it was out (@e->again) are no older than
 * the oldest dirtying seen meanwhile, which it takes, so a file kept hot
 * is not written whole every period (a database's or a VM image's
 * write-through); with none seen, what stayed dirty (a page under
 * writeback, skipped) keeps its old time.
 */
void aipu_queue_requeue_whole_since(struct aipu_queue *tr, struct aipu_entry *e)
{
	aipu_file_lock(e->t);
	if (e->again && e->state == AIPU_ENTRY_ISSUING)
		e->time = e->again_time;
	requeue_entry_locked(tr, e);
	aipu_file_unlock(e->t);
}

/*
 * The whole-file entry @e, being written, was refused by its file system
 * (->writepages failed): it takes @time, so it is due again one max_age
 * later, as refused page runs are (src/issue.c); a dirtying seen while it
 * was out is refused the same way.
 */
void aipu_queue_requeue_whole_refused(struct aipu_queue *tr,
				      struct aipu_entry *e, unsigned long time)
{
	aipu_file_lock(e->t);
	if (e->state == AIPU_ENTRY_ISSUING && time_after(time, e->time))
		e->time = time;
	e->again = false;
	requeue_entry_locked(tr, e);
	aipu_file_unlock(e->t);
}

static void tracker_unhash(struct aipu_queue *tr, struct aipu_file *t)
{
	if (!t->hashed)
		return;
	t->hashed = false;
	aipu_file_remove(t);
	list_del_init(&t->link);
	tr->st.trackers--;
}

/* Nothing queued, nothing held: the tracker can go. */
static bool finished(const struct aipu_file *t)
{
	return t->where == AIPU_AT_NOWHERE && !t->draining &&
	       list_empty(&t->retried) && aipu_flog_empty(&t->q) &&
	       !t->q.live.nr_chunks && !t->q.live.nr_moved &&
	       t->whole.state == AIPU_ENTRY_IDLE &&
	       t->meta.state == AIPU_ENTRY_IDLE &&
	       t->times.state == AIPU_ENTRY_IDLE;
}

/*
 * A batch or entry of @t is handed back: true if @t is finished and
 * unhashed, for the caller to free once it has dropped @t's lock.
 */
static bool put_locked(struct aipu_queue *tr, struct aipu_file *t)
{
	aipu_file_assert_held(t);
	if (--t->users)
		return false;
	/*
	 * No batch is out.  A page an imprecise live set let a batch take
	 * twice was handed back once: what the count still holds is that.
	 */
	if (t->out_pages) {
		tr->out_pages -= min(t->out_pages, tr->out_pages);
		t->out_pages = 0;
		account(tr, t);
	}
	if (!t->dead && !finished(t))
		return false;
	tracker_unhash(tr, t);
	return true;
}

void aipu_queue_put(struct aipu_queue *tr, struct aipu_file *t)
{
	bool free;

	aipu_file_lock(t);
	free = put_locked(tr, t);
	aipu_file_unlock(t);
	if (free)
		aipu_file_free(t);
}

/*
 * The flusher is done with @e (written, or put back).  Dirtied again while
 * it was out (@e->again): the flusher's last look at the file (its dirty
 * tag, I_DIRTY_INODE, I_DIRTY_TIME) may have come before, so it is put
 * back as if the flusher had seen that: early at worst, never lost.
 */
void aipu_queue_done_entry(struct aipu_queue *tr, struct aipu_entry *e)
{
	struct aipu_file *t = e->t;
	bool free;

	aipu_file_lock(t);
	if (e->again && e->kind == AIPU_ENTRY_TIMES) {
		requeue_times_locked(tr, e);
	} else if (e->again) {
		/* Written clean since: what is dirty now came later. */
		if (e->kind == AIPU_ENTRY_WHOLE &&
		    e->state == AIPU_ENTRY_ISSUING)
			e->time = e->again_time;
		requeue_entry_locked(tr, e);
	}
	e->again = false;
	if (e->state == AIPU_ENTRY_ISSUING)
		e->state = AIPU_ENTRY_IDLE;
	free = put_locked(tr, t);
	aipu_file_unlock(t);
	if (free)
		aipu_file_free(t);
}

/*
 * The pass is over: what it put back is due in the next, and what the
 * flusher left (max_batch) goes back, counted in pages_deferred: the queued
 * pages of the files left due (exact when all of a file's pages are due,
 * as in a backlog; an upper bound otherwise) and their waiting entries.  At
 * most *@budget files and retries a call (counted down; a pass may have put
 * back every page it took): returns true when done, false to be called
 * again after dropping the lock.
 */
bool aipu_queue_end_pass(struct aipu_queue *tr, unsigned int *budget)
{
	struct aipu_file *t, *tmp;

	list_for_each_entry_safe(t, tmp, &tr->due, node.link) {
		if (!*budget)
			return false;
		(*budget)--;
		aipu_file_lock(t);
		tr->st.pages_deferred +=
			(t->draining ? 0 : t->q.log.pages + t->q.retry_pages) +
			(t->whole.state == AIPU_ENTRY_WAITING) +
			(t->meta.state == AIPU_ENTRY_WAITING);
		list_del_init(&t->node.link);
		t->where = AIPU_AT_NOWHERE;
		t->staged = false;
		requeue(tr, t);
		aipu_file_unlock(t);
	}
	list_for_each_entry_safe(t, tmp, &tr->retried, retried) {
		if (!*budget)
			return false;
		aipu_file_lock(t);
		/* Each retry moved counts, then the file (if budget is left). */
		if (!t->draining && !aipu_flog_end_pass(&t->q, budget)) {
			aipu_file_unlock(t);
			return false;
		}
		if (*budget)
			(*budget)--;
		list_del_init(&t->retried);
		account(tr, t);
		if (t->whole.state == AIPU_ENTRY_RETRY)
			t->whole.state = AIPU_ENTRY_WAITING;
		if (t->meta.state == AIPU_ENTRY_RETRY)
			t->meta.state = AIPU_ENTRY_WAITING;
		requeue(tr, t);
		aipu_file_unlock(t);
	}
	return true;
}

/* Late-list nodes aipu_queue_oldest() looks at, at most. */
#define AIPU_OLDEST_LATE 64

/*
 * The first-dirty time of the oldest thing queued, to a wheel slot's width,
 * false if none: the first due file (the due list is in slot order), the
 * batch the flusher is writing, the first AIPU_OLDEST_LATE files put back
 * at old times, and the start of the wheel's first non-empty slot from its
 * clock.  A hold of at most the wheel's slots, whatever the files (bench/
 * scale times its worst case): for `stat`, not for a bound (the shrinker
 * and the park use the file's own times).
 */
bool aipu_queue_oldest(struct aipu_queue *tr, unsigned long *time)
{
	struct aipu_file *t = list_first_entry_or_null(&tr->due,
						       struct aipu_file,
						       node.link);
	struct aipu_wheel_node *n;
	unsigned long first;
	unsigned int late = 0;
	bool found = false;

	if (t)
		older(t->node.time, time, &found);
	if (tr->out_pages)
		older(tr->out_time, time, &found);
	list_for_each_entry(n, &tr->wheel.late, link) {
		if (late++ == AIPU_OLDEST_LATE)
			break;
		older(n->time, time, &found);
	}
	if (aipu_wheel_first(&tr->wheel, &first))
		older(first, time, &found);
	return found;
}

/*
 * The oldest first-dirty time of anything of @t's aipu knows: its queue,
 * this pass's retries, its entries, and a batch the flusher holds (whose
 * pages may be put back).  @now if none.
 */
static unsigned long file_oldest(const struct aipu_file *t,
				 unsigned long now)
{
	unsigned long oldest = now;
	bool found = false;
	struct aipu_retry *r;

	found = file_time(t, &oldest);
	if (!t->draining)
		list_for_each_entry(r, &t->q.retry_new, link)
			older(r->x.time, &oldest, &found);
	if (entry_queued(&t->whole))
		older(t->whole.time, &oldest, &found);
	if (entry_queued(&t->meta))
		older(t->meta.time, &oldest, &found);
	if (t->users)
		older(t->out_time, &oldest, &found);
	return oldest;
}

/* First-dirty time of what phase 2 takes next, false if nothing. */
bool aipu_queue_next_time(struct aipu_queue *tr, unsigned long *time)
{
	struct aipu_file *t = list_first_entry_or_null(&tr->due,
						       struct aipu_file,
						       node.link);

	if (t)
		*time = t->node.time;
	return t;
}

/* Nothing waits to be written. */
bool aipu_queue_idle(struct aipu_queue *tr)
{
	return !tr->wheel.nodes && list_empty(&tr->due) &&
	       list_empty(&tr->times) && list_empty(&tr->retried);
}

/*
 * Bound @t as a whole at the older of @time and its own oldest (no later
 * than any page it replaces: written early, never late) and free its queue,
 * at most @budget objects a call.  Returns the objects freed; the caller
 * calls again while that is @budget, and phase 1 finishes what it leaves.
 */
static unsigned long whole_drain_locked(struct aipu_queue *tr,
					struct aipu_file *t,
					unsigned long time,
					unsigned long budget)
{
	unsigned long left = budget;

	aipu_file_assert_held(t);
	if (t->dead || t->whole.state == AIPU_ENTRY_ISSUING)
		return 0;	/* its walk may be past a page we would free */
	if (!t->draining) {
		/* It stands for pages that may be due in this pass. */
		if (t->whole.state == AIPU_ENTRY_RETRY)
			t->whole.state = AIPU_ENTRY_WAITING;
		whole_cover(tr, t, file_oldest(t, time));
	}
	drain(tr, t, &left);
	requeue(tr, t);
	return budget - left;
}

static unsigned long whole_drain(struct aipu_queue *tr,
				 struct aipu_file *t, unsigned long time,
				 unsigned long budget)
{
	unsigned long ret;

	aipu_file_lock(t);
	ret = whole_drain_locked(tr, t, time, budget);
	aipu_file_unlock(t);
	return ret;
}

/* Memory pressure (the shrinker): give back @t's queue. */
unsigned long aipu_queue_degrade(struct aipu_queue *tr, struct aipu_file *t,
				 unsigned long budget, unsigned long now)
{
	return whole_drain(tr, t, now, budget);
}

/*
 * Nothing of @t can be written for now (umount holds its super block) and
 * its pages dirtied at @time are already late: rather than put them back
 * every period, bound the file as a whole.
 */
unsigned long aipu_queue_park(struct aipu_queue *tr, struct aipu_file *t,
			      unsigned long time, unsigned long budget)
{
	return whole_drain(tr, t, time, budget);
}

/*
 * The mapping is going away (inode eviction): forget it, freeing at most
 * @budget objects a call.  Returns true once everything is gone; until
 * then the caller calls again, and may drop the lock in between.  From the
 * first call nobody can find @t and nothing is added to it; it stays
 * allocated until the flusher lets go of it too.
 */
bool aipu_queue_kill(struct aipu_queue *tr, struct aipu_file *t,
		     unsigned long budget)
{
	bool done, free = false;

	aipu_file_lock(t);
	if (!t->dead) {
		if (t->times.state == AIPU_ENTRY_WAITING)
			list_del_init(&t->times.lru);
		if (t->whole.state != AIPU_ENTRY_ISSUING)
			t->whole.state = AIPU_ENTRY_IDLE;
		if (t->meta.state != AIPU_ENTRY_ISSUING)
			t->meta.state = AIPU_ENTRY_IDLE;
		if (t->times.state != AIPU_ENTRY_ISSUING)
			t->times.state = AIPU_ENTRY_IDLE;
		if (t->where != AIPU_AT_NOWHERE)
			unlink_node(tr, t);
		list_del_init(&t->retried);
		tracker_unhash(tr, t);
		t->dead = true;
		t->users++;		/* until the last call */
	}
	done = drain(tr, t, &budget);
	if (done)
		free = put_locked(tr, t);
	aipu_file_unlock(t);
	if (free)
		aipu_file_free(t);
	return done;
}
