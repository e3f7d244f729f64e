// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: a queue of takes per cgroup writeback context (docs/design.md, 1).
 *
 * With cgroup writeback an inode's writes are charged to the cgroup that
 * dirtied it (its struct bdi_writeback, inode->i_wb), and some throttles
 * (blk-iocost, blk-iolatency) make the task that submits them sleep until
 * that cgroup has paid its debt: minutes, for a starved cgroup.  Linux's
 * own writeback runs one work item per writeback context for this reason.
 * So phase 2 keeps its take on the device's flusher (the age order and its
 * lock are the device's), but the write of a take whose file belongs to a
 * cgroup's context goes to that context's queue, issued by a work item of
 * its own on an unbound workqueue: a context that sleeps in its throttle
 * holds up its own files only.  Files of the device's own context (the
 * root cgroup, or no cgroup writeback) are written by the flusher itself,
 * as before.
 *
 * A context has at most AIPU_WBQ_TAKES takes and AIPU_WBQ_EXTENTS extents
 * out (queued or being issued): enough that a file taken a jiffy at a time
 * (paced) flows through while the worker writes, few enough that a
 * starved cgroup holds little; the flusher puts a further take of it back,
 * still dirty, to be retried next pass.  A device
 * keeps at most AIPU_WBQ_MAX queues; beyond that, or without memory, the
 * flusher issues the take itself (today's behaviour, never a lost page).
 * Queues idle for AIPU_WBQ_IDLE_PASSES passes are freed by the flusher.
 *
 * Only the device's flusher adds queues, removes them and queues takes, so
 * @d->wbqs needs no lock; a queue's lock guards its takes against its work
 * item.  Each take holds its file (the tracker's users count, from the
 * take) as a take issued by the flusher does; the inode is pinned by the
 * work item itself, for its write only.
 */
#include <linux/blkdev.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "aipu.h"

/* What a context may have out: takes, and extents in them (24 B each). */
#define AIPU_WBQ_TAKES 16
#define AIPU_WBQ_EXTENTS 1024
/* Contexts a device issues through queues of their own. */
#define AIPU_WBQ_MAX 64
/* Passes a queue with nothing out lives on. */
#define AIPU_WBQ_IDLE_PASSES 30

struct aipu_take {
	struct list_head list;		/* in its queue's takes */
	struct aipu_file *t;	/* a batch's file, */
	struct aipu_entry *e;		/* or an entry (then @n is 0) */
	enum aipu_issue_how how;
	unsigned int n;
	struct aipu_extent x[];		/* the batch, merged */
};

struct aipu_wbq {
	struct list_head node;		/* in its device's wbqs */
	struct aipu_dev *d;
	const void *wb;			/* the context: compared, not followed */
	spinlock_t lock;		/* @takes, @out: see aipu.h */
	struct list_head takes;
	unsigned int out;		/* takes queued or being issued */
	unsigned int extents;		/* in them */
	unsigned int idle;		/* passes with none out */
	struct work_struct work;
};

static struct workqueue_struct *aipu_wq;

static struct aipu_take *next_take(struct aipu_wbq *q)
{
	struct aipu_take *k;

	spin_lock(&q->lock);
	k = list_first_entry_or_null(&q->takes, struct aipu_take, list);
	if (k)
		list_del(&k->list);
	spin_unlock(&q->lock);
	return k;
}

/* The work item: the context's takes in order, each under a plug of its own. */
static void wbq_work(struct work_struct *w)
{
	struct aipu_wbq *q = container_of(w, struct aipu_wbq, work);
	unsigned long written;
	struct blk_plug plug;
	struct aipu_take *k;

	while ((k = next_take(q))) {
		/* A switch to "kernel" meanwhile stops writing here too. */
		if (k->how == AIPU_ISSUE_WRITE && !aipu_policy_writes())
			k->how = AIPU_ISSUE_CHECK;
		blk_start_plug(&plug);
		written = k->e ? aipu_issue_entry(q->d, k->e, k->how) :
				 aipu_issue_batch(q->d, k->t, k->x, k->n,
						  k->how);
		blk_finish_plug(&plug);
		atomic_long_add(written, &q->d->wbq_written);
		spin_lock(&q->lock);
		q->out--;
		q->extents -= k->n;
		spin_unlock(&q->lock);
		kfree(k);
		cond_resched();
	}
}

static struct aipu_wbq *wbq_find(struct aipu_dev *d, const void *wb)
{
	struct aipu_wbq *q;

	list_for_each_entry(q, &d->wbqs, node)
		if (q->wb == wb)
			return q;
	if (d->nr_wbqs >= AIPU_WBQ_MAX)
		return NULL;
	q = kzalloc(sizeof(*q), GFP_KERNEL | __GFP_NOWARN);
	if (!q)
		return NULL;
	q->d = d;
	q->wb = wb;
	spin_lock_init(&q->lock);
	INIT_LIST_HEAD(&q->takes);
	INIT_WORK(&q->work, wbq_work);
	list_add(&q->node, &d->wbqs);
	d->nr_wbqs++;
	return q;
}

static void count(struct aipu_dev *d, u64 *counter)
{
	unsigned long flags = aipu_dev_lock(d);

	(*counter)++;
	aipu_dev_unlock(d, flags);
}

/*
 * The flusher's take of @t (an entry @e, or the batch @x[0..@n), merged),
 * whose inode is in context @wb: to that context's work item, if it has
 * room.  QUEUED: the take is the work item's now (the extents copied);
 * FULL: put it back; INLINE: issue it yourself.
 */
enum aipu_wbq_result aipu_wbq_queue(struct aipu_dev *d, const void *wb,
				    struct aipu_file *t,
				    struct aipu_entry *e,
				    const struct aipu_extent *x, unsigned int n,
				    enum aipu_issue_how how)
{
	struct aipu_wbq *q = wbq_find(d, wb);
	struct aipu_take *k;
	bool full;

	if (!q)
		return AIPU_WBQ_INLINE;
	q->idle = 0;
	spin_lock(&q->lock);
	/* One take always fits: a batch has at most AIPU_BATCH_MAX extents. */
	full = q->out && (q->out >= AIPU_WBQ_TAKES ||
			  q->extents + n > AIPU_WBQ_EXTENTS);
	if (!full) {
		q->out++;
		q->extents += n;
	}
	spin_unlock(&q->lock);
	if (full) {
		count(d, &d->st.wb_full);
		return AIPU_WBQ_FULL;
	}
	k = kmalloc(struct_size(k, x, n), GFP_KERNEL | __GFP_NOWARN);
	if (!k) {
		spin_lock(&q->lock);
		q->out--;
		q->extents -= n;
		spin_unlock(&q->lock);
		return AIPU_WBQ_INLINE;
	}
	k->t = t;
	k->e = e;
	k->how = how;
	k->n = n;
	if (n)
		memcpy(k->x, x, flex_array_size(k, x, n));
	spin_lock(&q->lock);
	list_add_tail(&k->list, &q->takes);
	spin_unlock(&q->lock);
	count(d, &d->st.wb_takes);
	queue_work(aipu_wq, &q->work);
	return AIPU_WBQ_QUEUED;
}

/* Wait for @q's work item to end, then free @q; nothing queues to it. */
static void wbq_free(struct aipu_wbq *q)
{
	list_del(&q->node);
	q->d->nr_wbqs--;
	flush_work(&q->work);
	WARN_ON_ONCE(!list_empty(&q->takes));
	kfree(q);
}

/* Once a pass, from the flusher: free queues long idle. */
void aipu_wbq_pass(struct aipu_dev *d)
{
	struct aipu_wbq *q, *tmp;
	unsigned int out;

	list_for_each_entry_safe(q, tmp, &d->wbqs, node) {
		spin_lock(&q->lock);
		out = q->out;
		spin_unlock(&q->lock);
		if (out)
			q->idle = 0;
		else if (++q->idle >= AIPU_WBQ_IDLE_PASSES)
			wbq_free(q);
	}
}

/*
 * The flusher is stopped and @d->stopping set (batches end at their next
 * extent): wait for every work item of @d, then free its queues.
 */
void aipu_wbq_stop(struct aipu_dev *d)
{
	struct aipu_wbq *q, *tmp;

	list_for_each_entry_safe(q, tmp, &d->wbqs, node)
		wbq_free(q);
}

int aipu_wbq_init(void)
{
	/*
	 * As Linux's bdi_wq: unbound, so a work item asleep in its cgroup's
	 * throttle holds no other; a rescuer, for writeback frees memory;
	 * frozen for suspend with the flusher.
	 */
	aipu_wq = alloc_workqueue(AIPU_NAME, WQ_UNBOUND | WQ_MEM_RECLAIM |
				  WQ_FREEZABLE, 0);
	return aipu_wq ? 0 : -ENOMEM;
}

void aipu_wbq_exit(void)
{
	destroy_workqueue(aipu_wq);
}
