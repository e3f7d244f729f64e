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
#include <linux/pagevec.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"

static struct task_struct *flusher;
static bool inheriting;
static unsigned long inherit_time;

/* Per issued run: what happened to its pages. */
struct outcome {
	unsigned long written, clean, meta;
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

enum pin_result { PIN_OK, PIN_BUSY, PIN_GONE };

struct pin {
	struct inode *inode;
	struct super_block *sb;
};

static enum pin_result pin(struct aipu_run *r, struct pin *p)
{
	enum pin_result res = PIN_GONE;
	unsigned long flags;
	struct inode *inode;
	bool alive;

	rcu_read_lock();
	spin_lock_irqsave(&aipu_lock, flags);
	alive = !r->t->dead;
	inode = r->t->host;
	spin_unlock_irqrestore(&aipu_lock, flags);
	if (alive) {
		p->sb = inode->i_sb;
		res = PIN_BUSY;
		if (down_read_trylock(&p->sb->s_umount)) {
			p->inode = aipu_sb_usable(p->sb) ? igrab(inode) : NULL;
			res = p->inode ? PIN_OK : PIN_GONE;
			if (!p->inode)
				up_read(&p->sb->s_umount);
		}
	}
	rcu_read_unlock();
	return res;
}

static void unpin(struct pin *p)
{
	iput(p->inode);
	up_read(&p->sb->s_umount);
}

static unsigned long requeue(struct aipu_run *r, pgoff_t start, pgoff_t end)
{
	unsigned long flags, n;

	if (start >= end)
		return 0;
	spin_lock_irqsave(&aipu_lock, flags);
	n = track_requeue(&aipu_tr, r, start, end);
	spin_unlock_irqrestore(&aipu_lock, flags);
	return n;
}

/*
 * Put back the pages of [start, end) that are still dirty; returns how many
 * are dirty, including those dirtied again that already have runs.
 */
static unsigned long requeue_dirty(struct aipu_run *r,
				   struct address_space *m,
				   pgoff_t start, pgoff_t end)
{
	pgoff_t idx = start, rs = start, re = start;
	unsigned long dirty = 0;
	struct folio_batch fb;
	unsigned int i;

	folio_batch_init(&fb);
	while (idx < end && filemap_get_folios_tag(m, &idx, end - 1,
						   PAGECACHE_TAG_DIRTY, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++) {
			struct folio *f = fb.folios[i];
			pgoff_t fs = max(f->index, start);
			pgoff_t fe = min(f->index + folio_nr_pages(f), end);

			if (fs >= fe)
				continue;
			dirty += fe - fs;
			if (fs != re) {
				requeue(r, rs, re);
				rs = fs;
			}
			re = fe;
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	requeue(r, rs, re);
	return dirty;
}

static void issue_pages(struct aipu_run *r, struct inode *inode, bool write,
			struct outcome *o)
{
	bool whole = r->kind == AIPU_WHOLE;
	pgoff_t start = whole ? 0 : r->start;
	pgoff_t end = whole ? ULONG_MAX : r->end;
	struct writeback_control wbc = {
		.sync_mode = WB_SYNC_NONE,
		.nr_to_write = whole ? LONG_MAX : end - start,
		.range_start = (loff_t)start << PAGE_SHIFT,
		.range_end = whole ? LLONG_MAX : ((loff_t)end << PAGE_SHIFT) - 1,
	};
	long budget = wbc.nr_to_write;
	unsigned long dirty;

	if (write) {
		filemap_fdatawrite_wbc(&inode->i_data, &wbc);
		o->written = budget - wbc.nr_to_write;
	}
	dirty = requeue_dirty(r, &inode->i_data, start, end);
	if (!whole && end - start > o->written + dirty)
		o->clean = end - start - o->written - dirty;
}

static void issue_meta(struct aipu_run *r, struct inode *inode, bool write,
		       struct outcome *o)
{
	unsigned long flags;

	if (write && (READ_ONCE(inode->i_state) & I_DIRTY_INODE)) {
		WRITE_ONCE(inherit_time, r->time);
		WRITE_ONCE(inheriting, true);
		sync_inode_metadata(inode, 0);
		WRITE_ONCE(inheriting, false);
		o->meta = 1;
	}
	if (READ_ONCE(inode->i_state) & I_DIRTY_INODE) {
		spin_lock_irqsave(&aipu_lock, flags);
		track_requeue_embedded(&aipu_tr, r);
		spin_unlock_irqrestore(&aipu_lock, flags);
	}
}

/* A run we could not pin because umount or remount holds s_umount. */
static void requeue_busy(struct aipu_run *r)
{
	unsigned long flags;

	if (r->kind == AIPU_PAGES) {
		requeue(r, r->start, r->end);
		return;
	}
	spin_lock_irqsave(&aipu_lock, flags);
	track_requeue_embedded(&aipu_tr, r);
	spin_unlock_irqrestore(&aipu_lock, flags);
}

static unsigned long issue_one(struct aipu_run *r, bool write)
{
	struct outcome o = { 0 };
	unsigned long flags;
	struct pin p;

	switch (pin(r, &p)) {
	case PIN_OK:
		if (r->kind == AIPU_META)
			issue_meta(r, p.inode, write, &o);
		else
			issue_pages(r, p.inode, write, &o);
		unpin(&p);
		break;
	case PIN_BUSY:
		requeue_busy(r);
		break;
	case PIN_GONE:
		break;
	}
	spin_lock_irqsave(&aipu_lock, flags);
	aipu_tr.st.pages_written += o.written;
	aipu_tr.st.pages_clean += o.clean;
	aipu_tr.st.meta_written += o.meta;
	track_done(&aipu_tr, r);
	spin_unlock_irqrestore(&aipu_lock, flags);
	return o.written;
}

/* Phase 2: linear in the pending runs; each is taken off exactly once. */
static unsigned long issue_pending(bool write)
{
	unsigned long flags, written = 0;
	struct blk_plug plug;
	struct aipu_run *r;

	blk_start_plug(&plug);
	while (!kthread_should_stop()) {
		spin_lock_irqsave(&aipu_lock, flags);
		r = track_take(&aipu_tr);
		spin_unlock_irqrestore(&aipu_lock, flags);
		if (!r)
			break;
		written += issue_one(r, write);
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
	spin_lock_irqsave(&aipu_lock, flags);
	aipu_policy_scan(jiffies);
	spin_unlock_irqrestore(&aipu_lock, flags);
	written = issue_pending(aipu_policy_writes());
	spin_lock_irqsave(&aipu_lock, flags);
	track_end_pass(&aipu_tr, written);
	spin_unlock_irqrestore(&aipu_lock, flags);
}

/* The 1-second wheel: wake on a fixed grid, not period after the last pass. */
static int flusher_fn(void *unused)
{
	unsigned long next = jiffies;

	set_freezable();
	while (!kthread_should_stop()) {
		next += msecs_to_jiffies(READ_ONCE(aipu_period_ms));
		if (time_after_eq(jiffies, next))
			next = jiffies;
		else
			schedule_timeout_interruptible(next - jiffies);
		try_to_freeze();
		if (kthread_should_stop())
			break;
		flusher_pass();
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
