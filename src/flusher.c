// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the pending queue and the flusher (Mogul's bflush_smooth()), one
 * per backing device.
 *
 * Once a period each device's flusher thread runs two phases.  Phase 1, under
 * the device's lock and without blocking, moves the runs the policy says are
 * due from the head of the age list onto the pending list, a batch at a time
 * with the lock dropped in between.  Phase 2 takes them off the pending list
 * oldest first and starts asynchronous writeback (WB_SYNC_NONE) of each
 * run's pages; this may block in the block layer, and then only this
 * device's thread waits, as with Linux's own per-device writeback.  Pages
 * that stay dirty (locked, already under writeback) keep their time and are
 * retried next period; pages found clean are dropped.
 *
 * A tick work, once a period, does what is not per device: Linux's periodic
 * writeback on or off, the probes' memory reserves, a thread for each device
 * the probes made since, and freeing the queue of a device long idle.
 */
#include <linux/blkdev.h>
#include <linux/freezer.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/pid.h>
#include <linux/pagemap.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/workqueue.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"
#include "aipu_trace.h"

/* Due runs moved to the pending list per hold of the device's lock. */
#define AIPU_SCAN_BATCH 32
/* Pages put back per hold of the device's lock after a write. */
#define AIPU_REQUEUE_BATCH 256
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

/* Per issued run: what happened to its pages. */
struct outcome {
	unsigned long written, clean, meta, retried;
};

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
 * Put back the still-dirty pages [start, end), AIPU_REQUEUE_BATCH pages per
 * hold of the lock: a stretch holds at most that many runs and gaps, and a
 * whole-file run's stretch can span a file's every run.
 */
static void requeue(struct aipu_dev *d, struct aipu_run *r, pgoff_t start,
		    pgoff_t end, struct outcome *o)
{
	unsigned long flags;
	pgoff_t stop;

	for (; start < end; start = stop) {
		stop = end - start > AIPU_REQUEUE_BATCH ?
		       start + AIPU_REQUEUE_BATCH : end;
		flags = aipu_dev_lock(d);
		o->retried += track_requeue(&d->tr, r, start, stop);
		aipu_dev_unlock(d, flags);
	}
}

static void requeue_embedded(struct aipu_dev *d, struct aipu_run *r)
{
	unsigned long flags = aipu_dev_lock(d);

	track_requeue_embedded(&d->tr, r);
	aipu_dev_unlock(d, flags);
}

/*
 * Put back the pages of [start, end) that are still dirty; returns how many
 * are dirty, including those dirtied again that already have runs.  The
 * folio's dirty flag, not the dirty tag, decides: the probe fires after the
 * flag is set but before the tag is, and staging may issue that very run at
 * once, so a page skipped in that window would stay dirty untracked (the
 * tag walk tried in this place lost a page so in t_stage).
 */
static unsigned long requeue_dirty(struct aipu_dev *d, struct aipu_run *r,
				   struct address_space *m,
				   pgoff_t start, pgoff_t end, struct outcome *o)
{
	pgoff_t idx = start, rs = start, re = start;
	unsigned long dirty = 0;
	struct folio_batch fb;
	unsigned int i;

	folio_batch_init(&fb);
	while (idx < end && filemap_get_folios(m, &idx, end - 1, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++) {
			struct folio *f = fb.folios[i];
			pgoff_t fs = max(f->index, start);
			pgoff_t fe = min(f->index + folio_nr_pages(f), end);

			if (fs >= fe || !folio_test_dirty(f))
				continue;
			dirty += fe - fs;
			if (fs != re) {
				requeue(d, r, rs, re, o);
				rs = fs;
			}
			re = fe;
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	requeue(d, r, rs, re, o);
	return dirty;
}

/* The tracked mapping itself: not always the inode's i_data (gfs2). */
static struct address_space *run_mapping(struct aipu_run *r)
{
	return (struct address_space *)r->t->key;
}

/*
 * ->writepages counts a page it declined (folio_redirty_for_writepage()) as
 * written; the probe counted it in @t->declined while this run was issued.
 */
static unsigned long declined(struct aipu_dev *d, struct aipu_tracker *t)
{
	unsigned long flags, n;

	flags = aipu_dev_lock(d);
	n = t->declined;
	aipu_dev_unlock(d, flags);
	return n;
}

static void issue_pages(struct aipu_dev *d, struct aipu_run *r, bool write,
			struct outcome *o)
{
	bool whole = r->kind == AIPU_WHOLE;
	pgoff_t start = whole ? 0 : r->start;
	pgoff_t end = whole ? ULONG_MAX : r->end;
	struct address_space *m = run_mapping(r);
	unsigned long dirty;

	if (write) {
		o->written = aipu_write_range(m, start, end);
		o->written -= min(o->written, declined(d, r->t));
		aipu_trace_issue(d, r, m, start, end, o->written);
		if (o->written && READ_ONCE(aipu_write_alloc) == AIPU_WRITE_PURGE)
			aipu_purge_add(d, r->t, start, end);
	}
	dirty = requeue_dirty(d, r, m, start, end, o);
	if (!whole && end - start > o->written + dirty)
		o->clean = end - start - o->written - dirty;
}

static void issue_meta(struct aipu_dev *d, struct aipu_run *r,
		       struct inode *inode, bool write, struct outcome *o)
{
	if (write && (aipu_inode_state(inode) & I_DIRTY_INODE)) {
		WRITE_ONCE(d->inherit_time, r->time);
		WRITE_ONCE(d->inheritor, current);
		sync_inode_metadata(inode, 0);
		WRITE_ONCE(d->inheritor, NULL);
		o->meta = 1;
	}
	if (aipu_inode_state(inode) & I_DIRTY_INODE)
		requeue_embedded(d, r);
}

/* Is @now past the bound of @r's pages, max_age_ms + period_ms? */
static bool past_bound(struct aipu_run *r, unsigned long now)
{
	return time_after(now, r->time +
			  msecs_to_jiffies(READ_ONCE(aipu_max_age_ms) +
					   READ_ONCE(aipu_period_ms)));
}

/* A run we could not pin this period: the inode is busy. */
static void requeue_busy(struct aipu_dev *d, struct aipu_run *r,
			 struct outcome *o)
{
	if (r->kind == AIPU_PAGES)
		requeue(d, r, r->start, r->end, o);
	else
		requeue_embedded(d, r);
}

/*
 * Umount or remount holds the super block.  A remount is over by the next
 * period: put the run back.  Once the run is late, the wait is long (an
 * umount writing a backlog to a slow disk, which writes the file too):
 * park the whole mapping rather than put each of its runs back every
 * period.
 */
static void requeue_unmounting(struct aipu_dev *d, struct aipu_run *r,
			       struct outcome *o)
{
	unsigned long flags, freed;

	if (r->kind != AIPU_PAGES || !past_bound(r, jiffies)) {
		requeue_busy(d, r, o);
		return;
	}
	o->retried += r->end - r->start;
	do {
		flags = aipu_dev_lock(d);
		freed = track_park(&d->tr, r->t, r->time, AIPU_REQUEUE_BATCH,
				   jiffies);
		aipu_dev_unlock(d, flags);
	} while (freed);
}

/*
 * Issued later than the bound promises (max_batch, a slow device, a late
 * tick); @taken is when phase 2 took the run, before the write's own time.
 */
static unsigned long late_pages(struct aipu_run *r, unsigned long written,
				unsigned long taken)
{
	if (!written || !aipu_policy_bounded() || !past_bound(r, taken))
		return 0;
	return written;
}

static unsigned long issue_one(struct aipu_dev *d, struct aipu_run *r,
			       bool write)
{
	unsigned long taken = jiffies, flags;
	struct outcome o = { 0 };
	struct aipu_pin p;

	switch (aipu_pin(r->t, &p, r->kind == AIPU_META ? AIPU_PIN_REF :
							 AIPU_PIN_SYNC)) {
	case AIPU_PIN_OK:
		if (r->kind == AIPU_META)
			issue_meta(d, r, p.inode, write, &o);
		else
			issue_pages(d, r, write, &o);
		aipu_unpin(&p);
		break;
	case AIPU_PIN_BUSY:
		requeue_busy(d, r, &o);
		break;
	case AIPU_PIN_UNMOUNTING:
		requeue_unmounting(d, r, &o);
		break;
	case AIPU_PIN_GONE:
		break;
	}
	flags = aipu_dev_lock(d);
	track_written(&d->tr, o.written, jiffies_to_msecs(jiffies - r->time));
	/* Under "kernel" nothing was issued: a re-check is not a retry. */
	if (write)
		d->tr.st.pages_retried += o.retried;
	d->tr.st.pages_clean += o.clean;
	d->tr.st.meta_written += o.meta;
	d->tr.st.pages_late += late_pages(r, o.written, taken);
	track_done(&d->tr, r);
	aipu_dev_unlock(d, flags);
	return o.written;
}

/*
 * Under aipu a run is written only once it is older than max_age_ms.  Paced,
 * phase 1 queued the runs that come due within this period, and each is
 * issued when it does, so the device sees the writes spaced as they were
 * dirtied, not one burst a period.  Jiffies until the next is due, -1 if
 * none.
 */
static long due_left(struct aipu_dev *d)
{
	unsigned long flags, time, due;
	bool any;

	flags = aipu_dev_lock(d);
	any = track_next_time(&d->tr, &time);
	aipu_dev_unlock(d, flags);
	if (!any)
		return -1;
	due = time + msecs_to_jiffies(READ_ONCE(aipu_max_age_ms)) + 1;
	return time_before(jiffies, due) ? due - jiffies : 0;
}

/* A paced pass waits for its next run, or for a kick or kthread_stop(). */
static void wait_due(long left)
{
	set_current_state(TASK_INTERRUPTIBLE);
	if (!kthread_should_stop())
		schedule_timeout(left);
	__set_current_state(TASK_RUNNING);
	try_to_freeze();
}

/*
 * Phase 2: linear in the pending runs; each is taken off exactly once.  The
 * policy is asked per run, so a switch to "kernel" stops writing at once.
 */
static unsigned long issue_pending(struct aipu_dev *d)
{
	unsigned long flags, written = 0, cutoff;
	struct blk_plug plug;
	struct aipu_run *r;
	bool aged;
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
		cutoff = jiffies - msecs_to_jiffies(READ_ONCE(aipu_max_age_ms));
		flags = aipu_dev_lock(d);
		r = track_take(&d->tr, cutoff, !aged);
		aipu_dev_unlock(d, flags);
		if (!r)
			break;
		written += issue_one(d, r, aipu_policy_writes());
		cond_resched();
	}
	blk_finish_plug(&plug);
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

static void flusher_pass(struct aipu_dev *d)
{
	struct aipu_pass_trace pt;
	unsigned long flags, written;

	aipu_trace_pass_begin(d, &pt);
	aipu_mem_refill();
	aipu_purge_run(d);
	aipu_trace_scan_begin(&pt);
	scan(d);
	aipu_trace_scan_end(&pt);
	aipu_lazytime_write(d);
	written = issue_pending(d);
	flags = aipu_dev_lock(d);
	aipu_trace_pass_end(d, &pt, written);
	track_end_pass(&d->tr, written);
	aipu_dev_unlock(d, flags);
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
	struct task_struct *t = kthread_run(flusher_fn, d, AIPU_NAME);

	if (IS_ERR(t))
		return;		/* no memory: the next tick tries again */
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
		if (!list_empty(&d->tr.trackers) || !track_idle(&d->tr)) {
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
