// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the pending queue and the flusher (Mogul's bflush_smooth()), one
 * per backing device.
 *
 * Once a period each device's flusher thread runs two phases.  Phase 1,
 * under the device's lock and without blocking, moves the files the policy
 * says are due from the wheel onto the due list (src/queue/queue.c), a batch
 * of files at a time with the lock dropped in between.  Phase 2 takes from
 * the due list, oldest first, a file's due whole-file or metadata entry or
 * a batch of its due pages and writes it (src/issue.c): asynchronous
 * writeback (WB_SYNC_NONE) that may block in the block layer, and then only
 * this device's thread waits, as with Linux's own per-device writeback.  A
 * file whose writes are charged to a cgroup's writeback context is written
 * by that context's worker instead (src/wbq.c), so that a cgroup its
 * throttle makes wait holds up only its own files.
 *
 * A tick work, once a period, does what is not per device: the eviction
 * probe's canary (src/canary.c), Linux's periodic writeback on or off, the
 * probes' memory reserves, a thread for each device the probes made since,
 * and freeing the queue of a device long idle.
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

/*
 * Files phase 1 (and the end of a pass) looks at per hold of the device's
 * lock: a hold costs its files' cache misses, cold ones in a phase's first
 * hold (docs/design.md §3, 32 until 2026-11-30).
 */
#define AIPU_SCAN_BATCH 8
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
	if (aipu_queue_next_staged(&d->tr) && s->stage_pages != ULONG_MAX) {
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

static unsigned long batch_pages(struct aipu_batch *b)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < b->n; i++)
		n += b->x[i].nr;
	return n;
}

/*
 * A take's write: by the flusher itself, or, for a file in a cgroup's
 * writeback context (@wb), by that context's worker (src/wbq.c), so that a
 * cgroup held by its throttle delays only its own files.  Metadata stays
 * here: its write is not throttled (REQ_META), and the pages it dirties
 * inherit its time from the thread that wrote it.  Returns what the
 * flusher wrote itself.
 */
static unsigned long issue_take(struct aipu_dev *d, struct aipu_entry *e,
				struct aipu_batch *b, const void *wb,
				enum aipu_issue_how how)
{
	struct aipu_file *t = e ? e->t : b->t;
	struct aipu_extent *x = e ? NULL : b->x;
	unsigned int n = e ? 0 : aipu_flog_merge(x, b->n);

	if (wb && how == AIPU_ISSUE_WRITE) {
		switch (aipu_wbq_queue(d, wb, t, e, x, n, how)) {
		case AIPU_WBQ_QUEUED:
			return 0;
		case AIPU_WBQ_FULL:
			how = AIPU_ISSUE_BUSY;
			break;
		case AIPU_WBQ_INLINE:
			break;
		}
	}
	return e ? aipu_issue_entry(d, e, how) :
		   aipu_issue_batch(d, t, x, n, how);
}

/* One take of phase 2, collected under the device's lock. */
struct pending {
	struct aipu_entry *e;	/* an entry, else the batch in d->batch */
	const void *wb;		/* the writeback context it is charged to */
	bool staged;		/* the batch is of a file staging moved */
};

/*
 * Collect, under the lock: the next due entry or batch of pages at
 * @cutoff and whose writeback context it is, as dm-delay collects its
 * expired bios.  False: this pass takes no more (take_room()).
 */
static bool collect(struct aipu_dev *d, unsigned long cutoff,
		    unsigned long taken, struct pending *k)
{
	struct aipu_batch *b = d->batch;
	unsigned long flags;
	bool room;

	flags = aipu_dev_lock(d);
	k->staged = aipu_queue_next_staged(&d->tr);
	room = take_room(d, taken, &b->max_pages);
	k->e = room ? aipu_queue_take(&d->tr, cutoff, b) : NULL;
	if (k->e && k->e->kind != AIPU_ENTRY_META)
		k->wb = aipu_tracker_wb(d, k->e->t);
	else
		k->wb = b->t && room ? aipu_tracker_wb(d, b->t) : NULL;
	aipu_dev_unlock(d, flags);
	return room;
}

/*
 * Phase 2: each due entry and page is taken off exactly once, collected
 * under the lock and issued outside it.  What is due and when is the
 * policy's (aipu_policy_due_in(), aipu_policy_cutoff()), asked per take,
 * so a switch to "kernel" stops writing at once.
 */
static unsigned long issue_pending(struct aipu_dev *d)
{
	unsigned long written = 0, taken = 0, pages;
	struct aipu_batch *b = d->batch;
	enum aipu_issue_how how;
	struct blk_plug plug;
	struct pending k;
	long left;

	blk_start_plug(&plug);
	while (!kthread_should_stop()) {
		left = aipu_policy_due_in(d);
		if (left < 0)
			break;
		if (left) {
			wait_due(left);
			continue;
		}
		if (!collect(d, aipu_policy_cutoff(d), taken, &k))
			break;
		how = aipu_policy_writes() ? AIPU_ISSUE_WRITE :
					     AIPU_ISSUE_CHECK;
		if (k.e) {
			written += issue_take(d, k.e, NULL, k.wb, how);
		} else if (b->t) {
			pages = batch_pages(b);
			taken += pages;
			if (k.staged && d->scan.stage_pages != ULONG_MAX)
				d->scan.stage_pages -= min(pages,
							   d->scan.stage_pages);
			written += issue_take(d, NULL, b, k.wb, how);
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

	written += atomic_long_xchg(&d->wbq_written, 0);
	flags = aipu_dev_lock(d);
	aipu_trace_pass_end(d, pt, written);
	aipu_dev_pass(d, written);
	aipu_dev_unlock(d, flags);
	do {
		budget = AIPU_SCAN_BATCH;
		flags = aipu_dev_lock(d);
		done = aipu_queue_end_pass(&d->tr, &budget);
		aipu_dev_unlock(d, flags);
	} while (!done);
}

/*
 * A probe found no tracker memory for a mapping of @d (hook.c): adopt
 * @d's dirty inodes that may hold its pages (src/handover.c), each bounded
 * as a whole from its dirtied_when, so the fallback bounds this device's
 * files alone; only if that finds no memory either does Linux's periodic
 * writeback take them, for the whole machine (policy.c).  After the
 * refill: the reserve is full again.  A miss meanwhile asks again.
 */
static void adopt_missed(struct aipu_dev *d)
{
	unsigned long flags;
	u16 since, upto;

	flags = aipu_dev_lock(d);
	WRITE_ONCE(d->adopt_wanted, false);
	since = d->adopted_misses;
	upto = d->tr.misses;
	d->adopted_misses = upto;
	aipu_dev_unlock(d, flags);
	if (!aipu_handover_adopt_bdi(d->bdi, &d->tr, since, upto))
		aipu_policy_untracked();
}

static void flusher_pass(struct aipu_dev *d)
{
	struct aipu_pass_trace pt;
	unsigned long written;

	aipu_trace_pass_begin(d, &pt);
	aipu_mem_refill();
	if (READ_ONCE(d->adopt_wanted))
		adopt_missed(d);
	aipu_purge_run(d);
	aipu_trace_scan_begin(&pt);
	scan(d);
	aipu_trace_scan_end(&pt);
	aipu_lazytime_write(d);
	written = issue_pending(d);
	end_pass(d, &pt, written);
	aipu_wbq_pass(d);
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
 * it (a dirtying that finds it then goes to a new device for the same
 * backing device, see aipu_dev_lock_live()); one a tick.
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
		if (!list_empty(&d->tr.trackers) || !aipu_queue_idle(&d->tr)) {
			d->idle_ticks = 0;
			d->idle_since = now;
		} else {
			d->idle_ticks++;
		}
		if (!idle && d->idle_ticks >= AIPU_DEV_IDLE_TICKS &&
		    time_after(now, d->idle_since +
			       msecs_to_jiffies(AIPU_DEV_IDLE_MIN_MS))) {
			WRITE_ONCE(d->dead, true);	/* dev_find() reads it unlocked */
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
	WRITE_ONCE(d->stopping, true);
	kthread_stop(d->task);
	aipu_wbq_stop(d);
	aipu_purge_exit(d);
	aipu_dev_retire(d);
	synchronize_rcu();
	aipu_dev_free(d);
}

/* What is not per device, once a period. */
static void tick_fn(struct work_struct *w)
{
	struct aipu_dev *d;

	aipu_canary_check();
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
	int ret = aipu_wbq_init();

	if (ret)
		return ret;
	WRITE_ONCE(stopping, false);
	queue_delayed_work(system_unbound_wq, &tick_work, 0);
	return 0;
}

/*
 * On return no flusher or worker runs and none will; the queues stay as
 * they are.  Batches out end at their next extent.
 */
void aipu_flusher_stop(void)
{
	struct aipu_dev *d;

	WRITE_ONCE(stopping, true);
	cancel_delayed_work_sync(&tick_work);
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d))
		WRITE_ONCE(d->stopping, true);
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d)) {
		if (started(d))
			kthread_stop(d->task);
		aipu_wbq_stop(d);
	}
	aipu_wbq_exit();
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

/* aipu_flusher_want()'s: any context, the tick now unless stopping. */
void aipu_flusher_tick_soon(void)
{
	if (!READ_ONCE(stopping))
		mod_delayed_work(system_unbound_wq, &tick_work, 0);
}

/*
 * Probe context (any lock, interrupts off, an RCU reader: see reap()):
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
