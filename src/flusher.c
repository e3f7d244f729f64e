// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the pending queue and the flusher (Mogul's bflush_smooth()).
 *
 * Once a period the flusher kthread runs two phases.  Phase 1, under the
 * tracking lock and without blocking, moves the runs the policy says are due
 * from the head of the age list onto the pending list.  Phase 2 takes them
 * off the pending list oldest first and starts asynchronous writeback
 * (WB_SYNC_NONE) of each run's pages; this may block in the block layer.
 * Pages that stay dirty (locked, already under writeback) keep their time
 * and are retried next period; pages found clean are dropped.
 *
 * A mapping can be evicted at any moment.  Inodes are freed after an RCU
 * grace period and the eviction hook marks the tracker dead under the lock,
 * so a tracker seen alive inside rcu_read_lock() has a valid inode and super
 * block; s_umount taken shared keeps umount out until we are done, as the
 * kernel's own writeback does, and igrab() refuses an inode being freed.
 */
#include <linux/blkdev.h>
#include <linux/freezer.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/pagemap.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"

static struct task_struct *flusher;
static bool sleeping, inheriting;
static unsigned long inherit_time;

/* Per issued run: what happened to its pages. */
struct outcome {
	unsigned long written, clean, meta, retried;
};

/*
 * Pages the flusher itself dirties while writing an inode's metadata (the
 * inode table block of a non-journalled file system) carry that metadata's
 * first-dirty time and go out in the same pass, so metadata keeps the bound.
 */
bool aipu_flusher_inherits(unsigned long *time)
{
	if (current != READ_ONCE(flusher) || !READ_ONCE(inheriting))
		return false;
	*time = READ_ONCE(inherit_time);
	return true;
}

/*
 * Take a reference on @t's inode and its super block's s_umount, shared,
 * so neither eviction nor umount can pull the mapping away while we write.
 */
enum aipu_pin_result aipu_pin(struct aipu_tracker *t, struct aipu_pin *p)
{
	enum aipu_pin_result res = AIPU_PIN_GONE;
	unsigned long flags;
	struct inode *inode;
	bool alive;

	rcu_read_lock();
	spin_lock_irqsave(&aipu_lock, flags);
	alive = !t->dead;
	inode = t->host;
	spin_unlock_irqrestore(&aipu_lock, flags);
	if (alive) {
		p->sb = inode->i_sb;
		res = AIPU_PIN_BUSY;
		if (down_read_trylock(&p->sb->s_umount)) {
			p->inode = aipu_sb_usable(p->sb) ? igrab(inode) : NULL;
			res = p->inode ? AIPU_PIN_OK : AIPU_PIN_GONE;
			if (!p->inode)
				up_read(&p->sb->s_umount);
		}
	}
	rcu_read_unlock();
	/* Still being set up by its creator: not ours to write yet. */
	if (res == AIPU_PIN_OK && (aipu_inode_state(p->inode) & I_NEW)) {
		aipu_unpin(p);
		res = AIPU_PIN_BUSY;
	}
	return res;
}

void aipu_unpin(struct aipu_pin *p)
{
	iput(p->inode);
	up_read(&p->sb->s_umount);
}

static void requeue(struct aipu_run *r, pgoff_t start, pgoff_t end,
		    struct outcome *o)
{
	unsigned long flags;

	if (start >= end)
		return;
	spin_lock_irqsave(&aipu_lock, flags);
	o->retried += track_requeue(&aipu_tr, r, start, end);
	spin_unlock_irqrestore(&aipu_lock, flags);
}

/*
 * Put back the pages of [start, end) that are still dirty; returns how many
 * are dirty, including those dirtied again that already have runs.  The
 * folio's dirty flag, not the dirty tag, decides: the probe fires after the
 * flag is set but before the tag is, and a page dropped in that window would
 * stay dirty untracked.
 */
static unsigned long requeue_dirty(struct aipu_run *r,
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
				requeue(r, rs, re, o);
				rs = fs;
			}
			re = fe;
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	requeue(r, rs, re, o);
	return dirty;
}

static void issue_pages(struct aipu_run *r, struct inode *inode, bool write,
			struct outcome *o)
{
	bool whole = r->kind == AIPU_WHOLE;
	pgoff_t start = whole ? 0 : r->start;
	pgoff_t end = whole ? ULONG_MAX : r->end;
	unsigned long dirty;

	if (write) {
		o->written = aipu_write_range(&inode->i_data, start, end);
		if (o->written && READ_ONCE(aipu_write_alloc) == AIPU_WRITE_PURGE)
			aipu_purge_add(r->t, start, end);
	}
	dirty = requeue_dirty(r, &inode->i_data, start, end, o);
	if (!whole && end - start > o->written + dirty)
		o->clean = end - start - o->written - dirty;
}

static void issue_meta(struct aipu_run *r, struct inode *inode, bool write,
		       struct outcome *o)
{
	unsigned long flags;

	if (write && (aipu_inode_state(inode) & I_DIRTY_INODE)) {
		WRITE_ONCE(inherit_time, r->time);
		WRITE_ONCE(inheriting, true);
		sync_inode_metadata(inode, 0);
		WRITE_ONCE(inheriting, false);
		o->meta = 1;
	}
	if (aipu_inode_state(inode) & I_DIRTY_INODE) {
		spin_lock_irqsave(&aipu_lock, flags);
		track_requeue_embedded(&aipu_tr, r);
		spin_unlock_irqrestore(&aipu_lock, flags);
	}
}

/* A run we could not pin because umount or remount holds s_umount. */
static void requeue_busy(struct aipu_run *r, struct outcome *o)
{
	unsigned long flags;

	if (r->kind == AIPU_PAGES) {
		requeue(r, r->start, r->end, o);
		return;
	}
	spin_lock_irqsave(&aipu_lock, flags);
	track_requeue_embedded(&aipu_tr, r);
	spin_unlock_irqrestore(&aipu_lock, flags);
}

/*
 * Issued later than the bound promises (max_batch, a slow device, a late
 * tick); @taken is when phase 2 took the run, before the write's own time.
 */
static unsigned long late_pages(struct aipu_run *r, unsigned long written,
				unsigned long taken)
{
	unsigned long bound = msecs_to_jiffies(READ_ONCE(aipu_max_age_ms) +
					       READ_ONCE(aipu_period_ms));

	if (!written || !aipu_policy_bounded() ||
	    !time_after(taken, r->time + bound))
		return 0;
	return written;
}

static unsigned long issue_one(struct aipu_run *r, bool write)
{
	unsigned long taken = jiffies;
	struct outcome o = { 0 };
	struct aipu_pin p;
	unsigned long flags;

	switch (aipu_pin(r->t, &p)) {
	case AIPU_PIN_OK:
		if (r->kind == AIPU_META)
			issue_meta(r, p.inode, write, &o);
		else
			issue_pages(r, p.inode, write, &o);
		aipu_unpin(&p);
		break;
	case AIPU_PIN_BUSY:
		requeue_busy(r, &o);
		break;
	case AIPU_PIN_GONE:
		break;
	}
	spin_lock_irqsave(&aipu_lock, flags);
	track_written(&aipu_tr, o.written, jiffies_to_msecs(jiffies - r->time));
	/* Under "kernel" nothing was issued: a re-check is not a retry. */
	if (write)
		aipu_tr.st.pages_retried += o.retried;
	aipu_tr.st.pages_clean += o.clean;
	aipu_tr.st.meta_written += o.meta;
	aipu_tr.st.pages_late += late_pages(r, o.written, taken);
	track_done(&aipu_tr, r);
	spin_unlock_irqrestore(&aipu_lock, flags);
	return o.written;
}

/*
 * Under aipu a run is written only once it is older than max_age_ms.  Paced,
 * phase 1 queued the runs that come due within this period, and each is
 * issued when it does, so the device sees the writes spaced as they were
 * dirtied, not one burst a period.  Jiffies until the next is due, -1 if
 * none.
 */
static long due_left(void)
{
	unsigned long flags, time, due;
	bool any;

	spin_lock_irqsave(&aipu_lock, flags);
	any = track_next_time(&aipu_tr, &time);
	spin_unlock_irqrestore(&aipu_lock, flags);
	if (!any)
		return -1;
	due = time + msecs_to_jiffies(READ_ONCE(aipu_max_age_ms)) + 1;
	return time_before(jiffies, due) ? due - jiffies : 0;
}

/*
 * Phase 2: linear in the pending runs; each is taken off exactly once.  The
 * policy is asked per run, so a switch to "kernel" stops writing at once.
 */
static unsigned long issue_pending(void)
{
	unsigned long flags, written = 0, cutoff;
	struct blk_plug plug;
	struct aipu_run *r;
	bool aged;
	long left;

	blk_start_plug(&plug);
	while (!kthread_should_stop()) {
		aged = READ_ONCE(aipu_policy) == AIPU_POLICY_AIPU;
		left = aged ? due_left() : 0;
		/* Not due this period (max_age_ms was raised): next pass. */
		if (left < 0 ||
		    left > msecs_to_jiffies(READ_ONCE(aipu_period_ms)))
			break;
		if (left) {
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule_timeout(left);
			__set_current_state(TASK_RUNNING);
			try_to_freeze();
			continue;
		}
		cutoff = jiffies - msecs_to_jiffies(READ_ONCE(aipu_max_age_ms));
		spin_lock_irqsave(&aipu_lock, flags);
		r = track_take(&aipu_tr, cutoff, !aged);
		spin_unlock_irqrestore(&aipu_lock, flags);
		if (!r)
			break;
		written += issue_one(r, aipu_policy_writes());
		cond_resched();
	}
	blk_finish_plug(&plug);
	return written;
}

static void flusher_pass(void)
{
	unsigned long flags, written;

	aipu_mem_refill();
	aipu_kupdate_update();
	aipu_purge_run();
	spin_lock_irqsave(&aipu_lock, flags);
	aipu_policy_scan(jiffies);
	spin_unlock_irqrestore(&aipu_lock, flags);
	written = issue_pending();
	spin_lock_irqsave(&aipu_lock, flags);
	track_end_pass(&aipu_tr, written);
	spin_unlock_irqrestore(&aipu_lock, flags);
}

/*
 * The 1-second wheel: wake on a fixed grid, not a period after the last
 * pass; staging may ask for an earlier wake-up.
 */
static int flusher_fn(void *unused)
{
	unsigned long next = jiffies + msecs_to_jiffies(aipu_period_ms);
	long timeout;

	set_freezable();
	while (!kthread_should_stop()) {
		/* A pass that overran a tick is followed by one at once. */
		if (!time_before(jiffies, next)) {
			next += msecs_to_jiffies(READ_ONCE(aipu_period_ms));
			if (!time_before(jiffies, next))
				next = jiffies;
		}
		timeout = aipu_policy_timeout(jiffies, next);
		if (timeout) {
			/* Sleeping is announced after the state: no lost poke. */
			set_current_state(TASK_INTERRUPTIBLE);
			WRITE_ONCE(sleeping, true);
			if (!kthread_should_stop())
				schedule_timeout(timeout);
			__set_current_state(TASK_RUNNING);
			WRITE_ONCE(sleeping, false);
		}
		try_to_freeze();
		if (kthread_should_stop())
			break;
		flusher_pass();
		cond_resched();
	}
	return 0;
}

int aipu_flusher_start(void)
{
	struct task_struct *t = kthread_run(flusher_fn, NULL, AIPU_NAME);

	if (IS_ERR(t))
		return PTR_ERR(t);
	WRITE_ONCE(flusher, t);
	return 0;
}

void aipu_flusher_stop(void)
{
	if (flusher)
		kthread_stop(flusher);
	WRITE_ONCE(flusher, NULL);
}

/* A knob or the policy changed: start a new period now. */
void aipu_flusher_kick(void)
{
	if (flusher)
		wake_up_process(flusher);
}

/*
 * Probe context (any lock, interrupts off): wake a sleeping flusher once.
 * Only the scheduler's own locks are taken, which nest inside any other.
 */
void aipu_flusher_poke(void)
{
	struct task_struct *t = READ_ONCE(flusher);

	if (t && READ_ONCE(sleeping) && xchg(&sleeping, false))
		wake_up_process(t);
}
