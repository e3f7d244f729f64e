// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: one file's queued first dirtyings, its live pages and its retries.
 * See include/aipu_flog.h; callers hold the file's lock.
 */
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/sort.h>

#include "aipu_flog.h"

void aipu_flog_init(struct aipu_flog *f)
{
	aipu_log_init(&f->log);
	aipu_live_init(&f->live);
	INIT_LIST_HEAD(&f->retry);
	INIT_LIST_HEAD(&f->retry_new);
	f->retry_pages = 0;
	f->imprecise = 0;
}

/* Nothing queued, this pass's retries included. */
bool aipu_flog_empty(const struct aipu_flog *f)
{
	return aipu_log_empty(&f->log) && list_empty(&f->retry) &&
	       list_empty(&f->retry_new);
}

static struct aipu_retry *retry_first(const struct aipu_flog *f)
{
	return list_empty(&f->retry) ? NULL :
	       list_entry(f->retry.next, struct aipu_retry, link);
}

/*
 * First-dirty time of the oldest page aipu_flog_take() can take, false if none
 * (this pass's retries wait for aipu_flog_end_pass()).
 */
bool aipu_flog_oldest(const struct aipu_flog *f, unsigned long *time)
{
	struct aipu_retry *r = retry_first(f);
	unsigned long t;

	if (aipu_log_empty(&f->log)) {
		if (r)
			*time = r->x.time;
		return r;
	}
	t = aipu_log_oldest(&f->log);
	*time = r && time_before(r->x.time, t) ? r->x.time : t;
	return true;
}

/*
 * Pages [index, index + nr) went clean -> dirty at @time, no earlier than
 * any time given before.  Returns how many of them are queued, from @index
 * on: the others are the caller's to bound some other way (the file's
 * whole-file entry at @time).  A page whose live bit could not be recorded
 * is still queued; an older entry of it then stays live too, and the page
 * may be written before its new time has aged (early, never late; counted
 * in @f->imprecise).
 */
unsigned long aipu_flog_dirty(struct aipu_flog *f, pgoff_t index,
			      unsigned long nr, unsigned long time)
{
	unsigned long before = f->log.pages, done, i;

	done = aipu_log_append(&f->log, index, nr, time) ?
	       f->log.pages - before : nr;
	for (i = 0; i < done; i++)
		if (aipu_live_dirty(&f->live, index + i, time) < 0)
			f->imprecise++;
	return done;
}

/*
 * The oldest queued extent (a retry first on a tie), if it was dirtied
 * before @cutoff.
 */
static bool next_due(const struct aipu_flog *f, unsigned long cutoff,
		     struct aipu_extent *x, bool *retry)
{
	struct aipu_retry *r = retry_first(f);
	struct aipu_extent l;
	bool has_l = aipu_log_peek(&f->log, &l);

	if (r && (!has_l || !time_after(r->x.time, l.time))) {
		*x = r->x;
		*retry = true;
	} else if (has_l) {
		*x = l;
		*retry = false;
	} else {
		return false;
	}
	return time_before(x->time, cutoff);
}

static void consume(struct aipu_flog *f, const struct aipu_extent *x,
		    bool retry)
{
	struct aipu_retry *r = retry_first(f);
	struct aipu_extent taken;

	if (!retry) {
		aipu_log_take(&f->log, x->time + 1, &taken, 1);
		return;
	}
	list_del(&r->link);
	f->retry_pages -= r->x.nr;
	aipu_retry_free(r);
}

/*
 * The pages of @x whose entry it is (aipu_live_take()), as extents in @out:
 * stale pages, dirtied again after someone else cleaned them, wait for
 * their newer entry.
 */
static unsigned int live_pieces(struct aipu_flog *f,
				const struct aipu_extent *x,
				struct aipu_extent *out)
{
	pgoff_t p, end = x->index + x->nr;
	unsigned int n = 0;

	for (p = x->index; p < end; p++) {
		if (!aipu_live_take(&f->live, p, x->time))
			continue;
		if (n && out[n - 1].index + out[n - 1].nr == p) {
			out[n - 1].nr++;
			continue;
		}
		out[n].index = p;
		out[n].nr = 1;
		out[n].time = x->time;
		n++;
	}
	return n;
}

/*
 * Take the queued pages dirtied before @cutoff, oldest first, into @out (at
 * least AIPU_FLOG_TAKE_MIN long; up to @max extents), looking at no more
 * than AIPU_FLOG_TAKE_ENTRIES entries and going past no more than
 * @max_pages pages (the caller's limit; AIPU_FLOG_TAKE_PAGES at most), so
 * that neither a run of stale entries nor long extents make the hold (and
 * the hand-back's, a page at a time) long.  The last entry taken may go
 * up to AIPU_LOG_LEN_MAX - 1 pages past @max_pages.  Returns how many
 * extents; 0 may only mean that every entry looked at was stale, so call
 * again while aipu_flog_oldest() is due.
 * Every page taken must be handed back with aipu_flog_done().
 */
unsigned int aipu_flog_take(struct aipu_flog *f, unsigned long cutoff,
			    struct aipu_extent *out, unsigned int max,
			    unsigned long max_pages)
{
	unsigned int n = 0, entries = 0, k;
	unsigned long pages = 0;
	struct aipu_extent x;
	bool retry;

	max_pages = min_t(unsigned long, max_pages, AIPU_FLOG_TAKE_PAGES);
	while (entries++ < AIPU_FLOG_TAKE_ENTRIES && pages < max_pages &&
	       next_due(f, cutoff, &x, &retry) && max - n >= (x.nr + 1) / 2) {
		consume(f, &x, retry);
		k = live_pieces(f, &x, out + n);
		pages += x.nr;
		n += k;
	}
	return n;
}

static int by_index(const void *a, const void *b)
{
	const struct aipu_extent *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return 0;
}

/*
 * Sort @n taken extents by page and fold neighbours and overlaps together,
 * each at the oldest time it folds in (the flusher writes them as one).
 * Outside the lock: the extents are the caller's.  Returns how many are left.
 */
unsigned int aipu_flog_merge(struct aipu_extent *x, unsigned int n)
{
	unsigned int i, m = 0;
	pgoff_t end;

	if (!n)
		return 0;
	sort(x, n, sizeof(*x), by_index, NULL);
	for (i = 1; i < n; i++) {
		end = x[m].index + x[m].nr;
		if (x[i].index > end) {
			x[++m] = x[i];
			continue;
		}
		if (x[i].index + x[i].nr > end)
			x[m].nr = x[i].index + x[i].nr - x[m].index;
		if (time_before(x[i].time, x[m].time))
			x[m].time = x[i].time;
	}
	return m + 1;
}

static struct aipu_retry *retry_of(struct list_head *pos)
{
	return list_entry(pos, struct aipu_retry, link);
}

/*
 * Into the retries in time order: looked for from the newest end (a pass
 * puts most back in the order it took them), then from the oldest.  One
 * that fits neither within AIPU_RETRY_WALK nodes goes in after the oldest
 * AIPU_RETRY_WALK, dated back to the time of the node it then precedes:
 * it was due when put back, so it is written early, never late, and its
 * hold stays short however many retries the file has (walking the whole
 * list took 110 us of CPU a hold at 1 M pages in bench/scale).
 */
static void retry_insert(struct aipu_flog *f, struct aipu_retry *r)
{
	struct list_head *pos = f->retry.prev;
	unsigned int i;

	for (i = 0; i < AIPU_RETRY_WALK && pos != &f->retry; i++) {
		if (!time_before(r->x.time, retry_of(pos)->x.time))
			break;
		pos = pos->prev;
	}
	if (i < AIPU_RETRY_WALK || pos == &f->retry) {
		list_add(&r->link, pos);
		return;
	}
	/* More than AIPU_RETRY_WALK nodes, the newest of them all later. */
	pos = f->retry.next;
	for (i = 0; !time_before(r->x.time, retry_of(pos)->x.time); i++) {
		if (i == AIPU_RETRY_WALK) {
			r->x.time = retry_of(pos)->x.time;
			break;
		}
		pos = pos->next;
	}
	list_add_tail(&r->link, pos);
}

/*
 * Queue [index, index + nr) at @time among the retries: due in this pass
 * if @now, else from the next (aipu_flog_end_pass()).
 */
static int retry_add(struct aipu_flog *f, pgoff_t index, unsigned long nr,
		     unsigned long time, bool now)
{
	struct aipu_retry *r;
	unsigned int n;

	while (nr) {
		r = aipu_retry_alloc();
		if (!r)
			return -ENOMEM;
		n = min_t(unsigned long, nr, AIPU_LOG_LEN_MAX);
		r->x.index = index;
		r->x.nr = n;
		r->x.time = time;
		if (now)
			retry_insert(f, r);
		else
			list_add_tail(&r->link, &f->retry_new);
		f->retry_pages += n;
		index += n;
		nr -= n;
	}
	return 0;
}

/* Pages were put back in this pass. */
bool aipu_flog_retried(const struct aipu_flog *f)
{
	return !list_empty(&f->retry_new);
}

/*
 * The pass is over: its retries join the others, in time order, at most
 * *@budget of them a call (counted down).  True once all have; until then
 * the caller calls again, and may drop the lock in between.
 */
bool aipu_flog_end_pass(struct aipu_flog *f, unsigned int *budget)
{
	struct aipu_retry *r, *tmp;

	list_for_each_entry_safe(r, tmp, &f->retry_new, link) {
		if (!*budget)
			return false;
		(*budget)--;
		list_del(&r->link);
		retry_insert(f, r);
	}
	return true;
}

/*
 * Pages [index, index + nr) went clean -> dirty, but are to be dated @time,
 * older than what the log holds: the flusher dirtied them itself, writing
 * something of that age, and they inherit it.  Queued among the retries,
 * due at once.  -ENOMEM if they could not be: the caller bounds the file
 * as a whole at @time.
 */
int aipu_flog_inherit(struct aipu_flog *f, pgoff_t index, unsigned long nr,
		      unsigned long time)
{
	unsigned long i;
	int err = retry_add(f, index, nr, time, true);

	if (err)
		return err;
	for (i = 0; i < nr; i++)
		if (aipu_live_dirty(&f->live, index + i, time) < 0)
			f->imprecise++;
	return 0;
}

/*
 * Done with taken pages [index, index + nr), first dirtied at @time or
 * later: written or found clean, or (@still_dirty) to be queued again at
 * @time.  -ENOMEM if they could not be: the caller bounds the file as a
 * whole.
 */
int aipu_flog_done(struct aipu_flog *f, pgoff_t index, unsigned long nr,
		   unsigned long time, bool still_dirty)
{
	pgoff_t p, from;
	int err;

	if (!still_dirty) {
		aipu_live_done_range(&f->live, index, nr);
		return 0;
	}
	/* Still dirty: their live bits stay, for the retry. */
	if (!f->live.nr_moved)
		return retry_add(f, index, nr, time, false);
	/*
	 * A page dirtied again during its write has a newer entry already (in
	 * the moved map): a retry would be stale, or, dirtied in the jiffy of
	 * this one, a second live entry of one time, which outlives the first
	 * and covers a later dirtying too early.
	 */
	for (p = from = index; p <= index + nr; p++) {
		if (p < index + nr && !aipu_live_is_moved(&f->live, p))
			continue;
		if (p > from) {
			err = retry_add(f, from, p - from, time, false);
			if (err)
				return err;
		}
		from = p + 1;
	}
	return 0;
}

/*
 * Forget everything (eviction, or the file bounded as a whole), freeing at
 * most *@budget objects (counted down).  Returns true once @f holds no
 * memory; until then call again, and use @f for nothing else meanwhile.
 */
bool aipu_flog_drop(struct aipu_flog *f, unsigned long *budget)
{
	struct aipu_retry *r, *tmp;

	f->retry_pages = 0;
	list_splice_init(&f->retry_new, &f->retry);
	list_for_each_entry_safe(r, tmp, &f->retry, link) {
		if (!*budget)
			return false;
		(*budget)--;
		list_del(&r->link);
		aipu_retry_free(r);
	}
	return aipu_log_drop(&f->log, budget) &&
	       aipu_live_drop(&f->live, budget);
}
