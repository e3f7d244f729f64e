// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the pending queue and the flusher (Mogul's bflush_smooth()), one
 * per backing device.
 *
 * Once a period each device's flusher thread runs two phases.  Phase 1,
 * under the device's lock and without blocking, moves the files the policy
 * says are due from the wheel onto the due list (src/track_log.c), a batch
 * of files at a time with the lock dropped in between.  Phase 2 takes from
 * the due list, oldest first, a file's due whole-file or metadata entry or
 * a batch of its due pages, merges the batch into extents outside the lock,
 * pins the inode once for the batch and starts asynchronous writeback
 * (WB_SYNC_NONE) of each extent; this may block in the block layer, and
 * then only this device's thread waits, as with Linux's own per-device
 * writeback.  Pages that stay dirty (locked, already under writeback) keep
 * their time and are retried next period; pages found clean are dropped.
 *
 * A tick work, once a period, does what is not per device: Linux's periodic
 * writeback on or off, the probes' memory reserves, a thread for each device
 * the probes made since, and freeing the queue of a device long idle.
 */
#include <linux/blkdev.h>
#include <linux/freezer.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/pagemap.h>
#include <linux/rcupdate.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/workqueue.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"
#include "aipu_trace.h"

/* Files phase 1 looks at per hold of the device's lock. */
#define AIPU_SCAN_BATCH 32
/* And the longest a batch's counts wait to reach stat. */
#define AIPU_HANDBACK_JIFFIES (HZ / 10)
/* A device must track nothing this many periods, and this long, to go. */
#define AIPU_DEV_IDLE_TICKS 30
#define AIPU_DEV_IDLE_MIN_MS 10000

static void tick_fn(struct work_struct *w);
static DECLARE_DELAYED_WORK(tick_work, tick_fn);
/*
 * Until aipu_flusher_start() nothing may queue the tick: the probes run
 * from aipu_hook_init() on, and if loading fails before the flusher starts,
 * no work item may outlive the module.
 */
static bool stopping = true;

/*
 * Per take (an entry or a batch): what happened to its pages, added to the
 * device's counters in one hold at the end.
 */
struct outcome {
	unsigned long written, clean, meta, retried, late;
	unsigned long age[AIPU_AGE_BUCKETS];	/* written, by age */
	unsigned long uncounted;		/* in @age, not yet in stat */
};

/* @written pages first dirtied at @time went out now. */
static void outcome_written(struct outcome *o, unsigned long written,
			    unsigned long time)
{
	o->written += written;
	o->uncounted += written;
	o->age[aipu_age_bucket(jiffies_to_msecs(jiffies - time))] += written;
}

/*
 * Taken pages go back to the queue in stretches, each written or found
 * clean (done) or still dirty (retried at its time in the next pass), a
 * hold's worth at a time (ltrack_handback_add()); the pages written
 * meanwhile (@o->age) are counted in the same hold, and at least every
 * AIPU_HANDBACK_JIFFIES, so stat follows a batch to a slow device.
 */
struct handback {
	struct aipu_handback hb;
	struct aipu_dev *d;
	struct outcome *o;
	unsigned long flushed;
};

static void handback_flush(struct handback *h)
{
	unsigned long flags;

	if (!h->hb.n && !h->o->uncounted)
		return;
	flags = aipu_dev_lock(h->d);
	ltrack_handback(&h->d->tr, &h->hb);
	aipu_dev_written(h->d, h->o->age);
	aipu_dev_unlock(h->d, flags);
	memset(h->o->age, 0, sizeof(h->o->age));
	h->o->uncounted = 0;
	h->flushed = jiffies;
}

static void handback_full(struct aipu_handback *hb)
{
	handback_flush(container_of(hb, struct handback, hb));
}

static void handback_add(struct handback *h, pgoff_t index, unsigned long nr,
			 unsigned long time, bool dirty)
{
	ltrack_handback_add(&h->hb, index, nr, time, dirty, handback_full);
}

/*
 * Pages the flusher itself dirties while writing an inode's metadata (the
 * inode table block of a non-journalled file system, on the same device)
 * carry that metadata's first-dirty time and go out in the same pass, so
 * metadata keeps the bound.
 */
bool aipu_flusher_inherits(struct aipu_dev *d, unsigned long *time)
{
	if (READ_ONCE(d->inheritor) != current)
		return false;
	*time = READ_ONCE(d->inherit_time);
	return true;
}

/*
 * Hand back taken pages [start, end) first dirtied at @time or later: those
 * still dirty to be retried, the rest done.  Returns how many are dirty,
 * including those dirtied again meanwhile, which have newer entries (the
 * queue gives them no retry).  The folio's dirty flag, not the dirty tag,
 * decides: the probe fires after the flag is set but before the tag is, and
 * staging may take that very page at once, so a page skipped in that window
 * would stay dirty untracked (a tag walk here lost a page so in t_stage).
 */
static unsigned long handback_range(struct handback *h,
				    struct address_space *m, pgoff_t start,
				    pgoff_t end, unsigned long time)
{
	pgoff_t idx = start, pos = start;
	unsigned long dirty = 0;
	struct folio_batch fb;
	unsigned int i;

	folio_batch_init(&fb);
	while (idx < end && filemap_get_folios(m, &idx, end - 1, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++) {
			struct folio *f = fb.folios[i];
			pgoff_t fs = max(f->index, pos);
			pgoff_t fe = min(f->index + folio_nr_pages(f), end);

			if (fs >= fe || !folio_test_dirty(f))
				continue;
			if (fs > pos)
				handback_add(h, pos, fs - pos, time, false);
			handback_add(h, fs, fe - fs, time, true);
			dirty += fe - fs;
			pos = fe;
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	if (end > pos)
		handback_add(h, pos, end - pos, time, false);
	return dirty;
}

/*
 * ->writepages counts a page it declined (folio_redirty_for_writepage()) as
 * written; the probe counts such pages in @t->declined while a batch or an
 * entry of @t is out.  Only this thread resets the count, and the read of
 * a counter that only grows meanwhile needs no lock.
 */
static unsigned long declined(struct aipu_ltracker *t)
{
	return READ_ONCE(t->declined);
}

/*
 * Write pages [start, end) of @m, first dirtied at @time or later; returns
 * how many went to writeback.
 */
static unsigned long write_range(struct aipu_dev *d, struct aipu_ltracker *t,
				 struct address_space *m, pgoff_t start,
				 pgoff_t end, unsigned long time)
{
	unsigned long before = declined(t), written;

	written = aipu_write_range(m, start, end);
	written -= min(written, declined(t) - before);
	aipu_trace_issue(d, m, start, end, written, time);
	if (written && READ_ONCE(aipu_write_alloc) == AIPU_WRITE_PURGE)
		aipu_purge_add(d, t, start, end);
	return written;
}

/* Is @now past the bound of pages first dirtied at @time? */
static bool past_bound(unsigned long time, unsigned long now)
{
	return time_after(now, time +
			  msecs_to_jiffies(READ_ONCE(aipu_max_age_ms) +
					   READ_ONCE(aipu_period_ms)));
}

/*
 * Issued later than the bound promises (max_batch, a slow device, a late
 * tick); @taken is when phase 2 took them, before the write's own time.
 */
static unsigned long late_pages(unsigned long time, unsigned long written,
				unsigned long taken)
{
	if (!written || !aipu_policy_bounded() || !past_bound(time, taken))
		return 0;
	return written;
}

/* One merged extent of a batch, its inode pinned. */
static void issue_extent(struct handback *h, struct address_space *m,
			 const struct aipu_extent *x, bool write,
			 unsigned long taken, struct outcome *o)
{
	pgoff_t start = x->index, end = x->index + x->nr;
	unsigned long written = 0, dirty;

	if (write)
		written = write_range(h->d, h->hb.t, m, start, end, x->time);
	dirty = handback_range(h, m, start, end, x->time);
	outcome_written(o, written, x->time);
	o->retried += dirty;
	o->late += late_pages(x->time, written, taken);
	if (x->nr > written + dirty)
		o->clean += x->nr - written - dirty;
	if (time_after_eq(jiffies, h->flushed + AIPU_HANDBACK_JIFFIES))
		handback_flush(h);
}

/* Hand back every extent of @b at once, as still dirty or as done. */
static void handback_all(struct handback *h, struct aipu_lbatch *b,
			 unsigned int n, bool dirty, struct outcome *o)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		handback_add(h, b->x[i].index, b->x[i].nr, b->x[i].time, dirty);
		if (dirty)
			o->retried += b->x[i].nr;
	}
}

/* The oldest first-dirty time of @b's @n extents. */
static unsigned long batch_time(struct aipu_lbatch *b, unsigned int n)
{
	unsigned long time = b->x[0].time;
	unsigned int i;

	for (i = 1; i < n; i++)
		if (time_before(b->x[i].time, time))
			time = b->x[i].time;
	return time;
}

/*
 * Umount or remount holds the super block.  A remount is over by the next
 * period: put the pages back.  Once they are late, the wait is long (an
 * umount writing a backlog to a slow disk, which writes the file too):
 * bound the whole file at its oldest time and free its queue rather than
 * put each of its pages back every period.
 */
static void park(struct aipu_dev *d, struct aipu_ltracker *t,
		 unsigned long time)
{
	unsigned long flags, freed;

	if (!past_bound(time, jiffies))
		return;
	do {
		flags = aipu_dev_lock(d);
		freed = ltrack_park(&d->tr, t, time, AIPU_DRAIN_BATCH);
		aipu_dev_unlock(d, flags);
	} while (freed == AIPU_DRAIN_BATCH);
}

/* Phase 2's batch @b of one file's pages: pinned once, each extent written. */
static unsigned long issue_batch(struct aipu_dev *d, struct aipu_lbatch *b,
				 bool write)
{
	struct aipu_ltracker *t = b->t;
	struct address_space *m = (struct address_space *)t->key;
	unsigned long taken = jiffies, flags;
	struct outcome o = { 0 };
	struct handback h = { .hb.t = t, .d = d, .o = &o, .flushed = taken };
	struct aipu_pin p;
	unsigned int i, n = flog_merge(b->x, b->n);

	switch (aipu_pin(t, &p, AIPU_PIN_SYNC)) {
	case AIPU_PIN_OK:
		/*
		 * A batch holds s_umount shared: an umount or remount waiting
		 * for it (a slow device can take minutes for a batch) ends the
		 * batch, and the next pass finds the file unmounting.
		 */
		for (i = 0; i < n && !kthread_should_stop() &&
		     !rwsem_is_contended(&p.sb->s_umount); i++)
			issue_extent(&h, m, &b->x[i], write, taken, &o);
		/* Stopped: what is left is not written, so still dirty. */
		for (; i < n; i++) {
			handback_add(&h, b->x[i].index, b->x[i].nr,
				     b->x[i].time, true);
			o.retried += b->x[i].nr;
		}
		handback_flush(&h);
		aipu_unpin(&p);
		break;
	case AIPU_PIN_UNMOUNTING:
		park(d, t, batch_time(b, n));
		fallthrough;
	case AIPU_PIN_BUSY:
		handback_all(&h, b, n, true, &o);
		break;
	case AIPU_PIN_GONE:
		handback_all(&h, b, n, false, &o);
		break;
	}
	handback_flush(&h);
	flags = aipu_dev_lock(d);
	/* Under "kernel" nothing was issued: a re-check is not a retry. */
	if (write)
		d->st.pages_retried += o.retried;
	d->st.pages_clean += o.clean;
	d->st.pages_late += o.late;
	ltrack_put(&d->tr, t);
	aipu_dev_unlock(d, flags);
	return o.written;
}

/* The whole file: written, and again next pass if pages stayed dirty. */
static bool issue_whole(struct aipu_dev *d, struct aipu_lentry *e,
			bool write, struct outcome *o)
{
	struct address_space *m = (struct address_space *)e->t->key;

	if (write)
		outcome_written(o, write_range(d, e->t, m, 0, ULONG_MAX,
					       e->time), e->time);
	/*
	 * Pages dirtied again since have entries of their own; one that stayed
	 * dirty (declined, locked) is bounded by this entry, put back at its
	 * time: early at worst for the others, never late.
	 */
	return mapping_tagged(m, PAGECACHE_TAG_DIRTY);
}

static bool issue_meta(struct aipu_dev *d, struct aipu_lentry *e,
		       struct inode *inode, bool write, struct outcome *o)
{
	if (write && (aipu_inode_state(inode) & I_DIRTY_INODE)) {
		WRITE_ONCE(d->inherit_time, e->time);
		WRITE_ONCE(d->inheritor, current);
		sync_inode_metadata(inode, 0);
		WRITE_ONCE(d->inheritor, NULL);
		o->meta = 1;
	}
	return aipu_inode_state(inode) & I_DIRTY_INODE;
}

/* A whole-file or metadata entry phase 2 took. */
static unsigned long issue_entry(struct aipu_dev *d, struct aipu_lentry *e,
				 bool write)
{
	bool meta = e->kind == AIPU_L_META, again = false;
	unsigned long taken = jiffies, flags;
	struct outcome o = { 0 };
	struct aipu_pin p;

	switch (aipu_pin(e->t, &p, meta ? AIPU_PIN_REF : AIPU_PIN_SYNC)) {
	case AIPU_PIN_OK:
		again = meta ? issue_meta(d, e, p.inode, write, &o) :
			       issue_whole(d, e, write, &o);
		aipu_unpin(&p);
		break;
	case AIPU_PIN_BUSY:
	case AIPU_PIN_UNMOUNTING:
		again = true;
		break;
	case AIPU_PIN_GONE:
		break;
	}
	flags = aipu_dev_lock(d);
	if (again)
		ltrack_requeue_entry(&d->tr, e);
	aipu_dev_written(d, o.age);
	d->st.meta_written += o.meta;
	d->st.pages_late += late_pages(e->time, o.written, taken);
	ltrack_done_entry(&d->tr, e);
	aipu_dev_unlock(d, flags);
	return o.written;
}

/*
 * Under aipu a page is written only once it is older than max_age_ms.
 * Paced, phase 1 queued the files that come due within this period, and
 * each is taken when it does, so the device sees the writes spaced as they
 * were dirtied, not one burst a period.  Jiffies until the next is due, -1
 * if none.
 */
static long due_left(struct aipu_dev *d)
{
	unsigned long flags, time, due;
	bool any;

	flags = aipu_dev_lock(d);
	any = ltrack_next_time(&d->tr, &time);
	aipu_dev_unlock(d, flags);
	if (!any)
		return -1;
	due = time + msecs_to_jiffies(READ_ONCE(aipu_max_age_ms)) + 1;
	return time_before(jiffies, due) ? due - jiffies : 0;
}

/* A paced pass waits for its next file, or for a kick or kthread_stop(). */
static void wait_due(long left)
{
	set_current_state(TASK_INTERRUPTIBLE);
	if (!kthread_should_stop())
		schedule_timeout(left);
	__set_current_state(TASK_RUNNING);
	try_to_freeze();
}

/*
 * The pages the next batch may hold, in *@max_pages (0: no limit of the
 * pass's own): max_batch bounds the pages a pass takes (always at least one
 * batch, so a large file cannot block the queue), stage_batch the pages it
 * takes of staged files.  False: this pass takes no more.  Lock held.
 */
static bool take_room(struct aipu_dev *d, unsigned long taken,
		      unsigned long *max_pages)
{
	struct aipu_scan *s = &d->scan;

	*max_pages = 0;
	if (ltrack_next_staged(&d->tr) && s->stage_pages != ULONG_MAX) {
		if (!s->stage_pages)
			return false;
		*max_pages = s->stage_pages;
	} else if (s->limit) {
		if (taken >= s->limit)
			return false;
		*max_pages = s->limit - taken;
	}
	return true;
}

static unsigned long batch_pages(struct aipu_lbatch *b)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < b->n; i++)
		n += b->x[i].nr;
	return n;
}

/*
 * Phase 2: each due entry and page is taken off exactly once.  The policy is
 * asked per take, so a switch to "kernel" stops writing at once.
 */
static unsigned long issue_pending(struct aipu_dev *d)
{
	unsigned long flags, written = 0, taken = 0, cutoff, pages;
	struct aipu_lbatch *b = d->batch;
	struct aipu_lentry *e;
	struct blk_plug plug;
	bool aged, staged, room;
	long left;

	blk_start_plug(&plug);
	while (!kthread_should_stop()) {
		aged = READ_ONCE(aipu_policy) == AIPU_POLICY_AIPU;
		left = aged ? due_left(d) : 0;
		/* Not due this period (max_age_ms was raised): next pass. */
		if (left < 0 ||
		    left > msecs_to_jiffies(READ_ONCE(aipu_period_ms)))
			break;
		if (left) {
			wait_due(left);
			continue;
		}
		cutoff = aged ? jiffies -
				msecs_to_jiffies(READ_ONCE(aipu_max_age_ms)) :
				d->scan.cutoff;
		flags = aipu_dev_lock(d);
		staged = ltrack_next_staged(&d->tr);
		room = take_room(d, taken, &b->max_pages);
		e = room ? ltrack_take(&d->tr, cutoff, b) : NULL;
		aipu_dev_unlock(d, flags);
		if (!room)
			break;
		if (e) {
			written += issue_entry(d, e, aipu_policy_writes());
		} else if (b->t) {
			pages = batch_pages(b);
			taken += pages;
			if (staged && d->scan.stage_pages != ULONG_MAX)
				d->scan.stage_pages -= min(pages,
							   d->scan.stage_pages);
			written += issue_batch(d, b, aipu_policy_writes());
		} else if (!b->again) {
			break;
		}
		cond_resched();
	}
	blk_finish_plug(&plug);
	if (d->scan.staged)
		aipu_policy_staged(d);
	return written;
}

/*
 * Phase 1 in batches: no hold of the device's lock is longer than a batch,
 * however long the backlog, so the probes on other CPUs never wait long.
 */
static void scan(struct aipu_dev *d)
{
	unsigned long flags;
	bool done;

	aipu_policy_plan(d, jiffies);
	do {
		flags = aipu_dev_lock(d);
		done = aipu_policy_scan(d, AIPU_SCAN_BATCH);
		aipu_dev_unlock(d, flags);
		cond_resched();
	} while (!done && !kthread_should_stop());
}

/* What this pass left due goes back, counted; a batch of files a hold. */
static void end_pass(struct aipu_dev *d, struct aipu_pass_trace *pt,
		     unsigned long written)
{
	unsigned int budget;
	unsigned long flags;
	bool done;

	flags = aipu_dev_lock(d);
	aipu_trace_pass_end(d, pt, written);
	aipu_dev_pass(d, written);
	aipu_dev_unlock(d, flags);
	do {
		budget = AIPU_SCAN_BATCH;
		flags = aipu_dev_lock(d);
		done = ltrack_end_pass(&d->tr, &budget);
		aipu_dev_unlock(d, flags);
	} while (!done);
}

static void flusher_pass(struct aipu_dev *d)
{
	struct aipu_pass_trace pt;
	unsigned long written;

	aipu_trace_pass_begin(d, &pt);
	aipu_mem_refill();
	aipu_purge_run(d);
	aipu_trace_scan_begin(&pt);
	scan(d);
	aipu_trace_scan_end(&pt);
	aipu_lazytime_write(d);
	written = issue_pending(d);
	end_pass(d, &pt, written);
}

/*
 * The 1-second wheel: each device's passes fall on a fixed grid, not a
 * period after the last pass; a pass that overran a tick is followed by one
 * at once, and staging may ask for an earlier one.  One thread a device,
 * all named "aipu" (blktrace and ps show who wrote; `devices` gives each
 * device's pid): a thread blocked on its device's full queue holds up no
 * other device.
 */
static int flusher_fn(void *data)
{
	struct aipu_dev *d = data;
	unsigned long next = jiffies + msecs_to_jiffies(aipu_period_ms);
	long timeout;

	set_freezable();
	while (!kthread_should_stop()) {
		if (!time_before(jiffies, next)) {
			next += msecs_to_jiffies(READ_ONCE(aipu_period_ms));
			if (!time_before(jiffies, next))
				next = jiffies;
		}
		timeout = aipu_policy_timeout(d, jiffies, next);
		if (timeout) {
			/* Sleeping is announced after the state: no lost poke. */
			set_current_state(TASK_INTERRUPTIBLE);
			WRITE_ONCE(d->sleeping, true);
			if (!kthread_should_stop())
				schedule_timeout(timeout);
			__set_current_state(TASK_RUNNING);
			WRITE_ONCE(d->sleeping, false);
		}
		try_to_freeze();
		if (kthread_should_stop())
			break;
		flusher_pass(d);
		cond_resched();
	}
	return 0;
}

/* Whether @d has a thread to wake. */
static bool started(struct aipu_dev *d)
{
	/* Pairs with dev_start()'s release: the thread exists. */
	return smp_load_acquire(&d->started);
}

/* The pid of @d's flusher thread, 0 if it has none yet. */
pid_t aipu_flusher_pid(struct aipu_dev *d)
{
	return started(d) ? task_pid_nr(d->task) : 0;
}

/* Process context: the tick gives a device the probes made its thread. */
static void dev_start(struct aipu_dev *d)
{
	struct task_struct *t;

	if (!d->batch)
		d->batch = kvmalloc(sizeof(*d->batch), GFP_KERNEL);
	if (!d->batch)
		return;		/* no memory: the next tick tries again */
	t = kthread_run(flusher_fn, d, AIPU_NAME);
	if (IS_ERR(t))
		return;
	d->task = t;
	d->idle_since = jiffies;
	/* d->task is set before anyone sees started: see started(). */
	smp_store_release(&d->started, true);
}

/*
 * A device that has tracked nothing for AIPU_DEV_IDLE_TICKS periods and at
 * least AIPU_DEV_IDLE_MIN_MS (a loop device long detached, a disk whose file
 * systems are unmounted) is marked dead under its lock, so no probe adds to
 * it; one a tick.
 */
static struct aipu_dev *find_idle(void)
{
	unsigned long flags, now = jiffies;
	struct aipu_dev *d, *idle = NULL;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d)) {
		if (!started(d) || d->dead)
			continue;
		flags = aipu_dev_lock(d);
		if (!list_empty(&d->tr.trackers) || !ltrack_idle(&d->tr)) {
			d->idle_ticks = 0;
			d->idle_since = now;
		} else {
			d->idle_ticks++;
		}
		if (!idle && d->idle_ticks >= AIPU_DEV_IDLE_TICKS &&
		    time_after(now, d->idle_since +
			       msecs_to_jiffies(AIPU_DEV_IDLE_MIN_MS))) {
			d->dead = true;
			idle = d;
		}
		aipu_dev_unlock(d, flags);
	}
	rcu_read_unlock();
	return idle;
}

/*
 * Free a dead device's queue.  Every probe, kick and poke checks dead inside
 * an RCU read section, so after a grace period none can wake its thread and
 * the thread can be stopped; its counters then go to the reaped devices'
 * sums, and after a second grace period no reader of the list sees it.
 */
static void reap(struct aipu_dev *d)
{
	synchronize_rcu();
	kthread_stop(d->task);
	aipu_purge_exit(d);
	aipu_dev_retire(d);
	synchronize_rcu();
	aipu_dev_free(d);
}

/* What is not per device, once a period. */
static void tick_fn(struct work_struct *w)
{
	struct aipu_dev *d;

	aipu_mem_refill();
	aipu_dev_refill();
	aipu_kupdate_update();
	aipu_lazytime_update();
	/* Only the tick adds threads or removes devices: no RCU needed. */
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d))
		if (!d->started && !READ_ONCE(stopping))
			dev_start(d);
	d = READ_ONCE(stopping) ? NULL : find_idle();
	if (d)
		reap(d);
	if (!READ_ONCE(stopping))
		queue_delayed_work(system_unbound_wq, &tick_work,
				   msecs_to_jiffies(READ_ONCE(aipu_period_ms)));
}

int aipu_flusher_start(void)
{
	WRITE_ONCE(stopping, false);
	queue_delayed_work(system_unbound_wq, &tick_work, 0);
	return 0;
}

/* On return no flusher runs and none will; the queues stay as they are. */
void aipu_flusher_stop(void)
{
	struct aipu_dev *d;

	WRITE_ONCE(stopping, true);
	cancel_delayed_work_sync(&tick_work);
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d))
		if (started(d))
			kthread_stop(d->task);
}

/* A knob or the policy changed: start a new period now, on every device. */
void aipu_flusher_kick(void)
{
	struct aipu_dev *d;

	if (READ_ONCE(stopping))
		return;
	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d))
		if (started(d) && !READ_ONCE(d->dead))
			wake_up_process(d->task);
	rcu_read_unlock();
	mod_delayed_work(system_unbound_wq, &tick_work, 0);
}

/*
 * Probe context: a device the probes just made gets its thread from the
 * tick, which is run now rather than at its next period (up to 60 s away).
 */
void aipu_flusher_want(struct aipu_dev *d)
{
	if (!started(d) && !READ_ONCE(stopping))
		mod_delayed_work(system_unbound_wq, &tick_work, 0);
}

/*
 * Probe context (any lock, interrupts off, RCU read lock held: see reap()):
 * wake a sleeping device's thread once.  Only the scheduler's own locks are
 * taken, which nest inside any other; a device without a thread yet gets
 * one from the tick, which is run now instead.
 */
void aipu_flusher_poke(struct aipu_dev *d)
{
	if (READ_ONCE(stopping) || READ_ONCE(d->dead))
		return;
	if (!started(d)) {
		mod_delayed_work(system_unbound_wq, &tick_work, 0);
		return;
	}
	if (READ_ONCE(d->sleeping) && xchg(&d->sleeping, false))
		wake_up_process(d->task);
}
