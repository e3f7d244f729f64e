// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: update policies, and Linux's own periodic writeback.
 *
 *   kernel  aipu writes nothing; Linux's writeback runs as without aipu.
 *           Pages are still timestamped, so a switch bounds them at once.
 *   aipu    every period, write pages dirty for longer than max_age_ms
 *           (Mogul's AIPU), at most max_batch pages a pass; paced, each
 *           page as it comes of age instead.
 *   pu      every pu_interval_ms, write everything tracked in one burst.
 *   stage   asynchronous staging (Akyurek & Salem): every
 *           stage_interval_ms write the stage_batch oldest runs whatever
 *           their age; max_age_ms still bounds every page.
 *
 * While a policy that writes is active, Linux's periodic ("kupdate")
 * writeback is off; background writeback above dirty_background_ratio, sync
 * and fsync are untouched.  What was dirty at insmod is adopted once the
 * probes are in (src/handover.c): periodic writeback stays on until then
 * and for handover_ms after load.  Dirty data aipu never saw (tracking
 * memory ran out completely, or for the adoption) is handed to Linux:
 * periodic writeback stays on for AIPU_UNTRACKED_MS after such a fallback,
 * and after that for as long as Linux still holds an inode dirtied before.
 */
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"

/* Linux's default bound, dirty_expire 30 s + dirty_writeback 5 s, + slack. */
#define AIPU_UNTRACKED_MS 40000

/* When the probes began to see every dirtying, and the last they missed. */
static unsigned long watched_from, untracked_at;
static bool untracked_seen;
static unsigned int policy_gen = 1;	/* bumped by every switch; 0: never */

/* Guards the three below (locking: include/aipu.h). */
static DEFINE_MUTEX(kupdate_mutex);
static bool kupdate_off, stopping;
static unsigned int kupdate_saved;

static unsigned long ms(unsigned int *knob)
{
	return msecs_to_jiffies(READ_ONCE(*knob));
}

struct policy_ops {
	/* Decide what this pass's phase 1 moves (the device's scan). */
	void (*plan)(struct aipu_dev *d, struct aipu_scan *s);
	bool writes;
	bool bounded;		/* max_age_ms bounds every page */
};

/*
 * Strictly older than max_age: a page dirtied late in jiffy j is never
 * written before max_age has passed.  Under "kernel" the same scan only
 * drops the runs Linux has cleaned.
 */
static void plan_kernel(struct aipu_dev *d, struct aipu_scan *s)
{
}

/*
 * Paced, phase 1 also queues what comes due before the next tick; phase 2
 * issues each run as it does (pure interval periodic update).
 */
static void plan_aipu(struct aipu_dev *d, struct aipu_scan *s)
{
	if (aipu_policy_paced())
		s->cutoff += ms(&aipu_period_ms);
	s->limit = READ_ONCE(aipu_max_batch);
}

static void plan_pu(struct aipu_dev *d, struct aipu_scan *s)
{
	if (time_before(s->now, d->last_pu + ms(&aipu_pu_interval_ms))) {
		s->aged_done = true;	/* nothing this pass */
		return;
	}
	d->last_pu = s->now;
	s->all = true;
	s->cutoff = s->now + 1;	/* everything dirtied up to now */
}

/*
 * C = 0 stages everything as it is dirtied: write-through at page
 * granularity.  Whatever C, at most one batch a jiffy, so a run that cannot
 * be written yet (umount holds the super block) cannot spin the flusher.
 */
static void plan_stage(struct aipu_dev *d, struct aipu_scan *s)
{
	unsigned int c = READ_ONCE(aipu_stage_interval_ms);

	if (time_before(s->now, d->next_stage))
		return;
	s->stage = c ? READ_ONCE(aipu_stage_batch) : UINT_MAX;
	/* A batch of files moves, and at most stage_batch of their pages go. */
	if (c)
		s->stage_pages = READ_ONCE(aipu_stage_batch);
}

static const struct policy_ops ops[AIPU_NR_POLICIES] = {
	[AIPU_POLICY_KERNEL] = { plan_kernel, false, false },
	[AIPU_POLICY_AIPU] = { plan_aipu, true, true },
	[AIPU_POLICY_PU] = { plan_pu, true, false },
	[AIPU_POLICY_STAGE] = { plan_stage, true, true },
};

static const struct policy_ops *cur(void)
{
	return &ops[READ_ONCE(aipu_policy)];
}

bool aipu_policy_writes(void)
{
	return cur()->writes;
}

bool aipu_policy_paced(void)
{
	return READ_ONCE(aipu_pace) &&
	       READ_ONCE(aipu_policy) == AIPU_POLICY_AIPU;
}

bool aipu_policy_bounded(void)
{
	return cur()->bounded;
}

/* The device's own clocks start again at a policy switch. */
static void sync_gen(struct aipu_dev *d, unsigned long now)
{
	unsigned int gen = READ_ONCE(policy_gen);

	if (d->policy_gen == gen)
		return;
	d->policy_gen = gen;
	d->last_pu = now;
	d->next_stage = now;
}

/* Start of a pass: what phase 1 moves this time.  The device's work only. */
void aipu_policy_plan(struct aipu_dev *d, unsigned long now)
{
	struct aipu_scan *s = &d->scan;

	sync_gen(d, now);
	memset(s, 0, sizeof(*s));
	s->stage_pages = ULONG_MAX;
	s->now = now;
	s->cutoff = now - ms(&aipu_max_age_ms);
	cur()->plan(d, s);
}

/*
 * Phase 2's cutoff: pages first dirtied at or before it are due.  Under
 * aipu, strictly older than max_age_ms now (paced, phase 1 queued what
 * comes due within the period, and each file is taken as it does);
 * under the others, what the plan chose.
 */
unsigned long aipu_policy_cutoff(struct aipu_dev *d)
{
	if (READ_ONCE(aipu_policy) != AIPU_POLICY_AIPU)
		return d->scan.cutoff;
	return jiffies - ms(&aipu_max_age_ms);
}

/*
 * Jiffies until phase 2's next take is due: 0 now, -1 none this period
 * (nothing queued, or max_age_ms was raised: the next pass).  Only aipu
 * waits: the device's writes are then spaced as the pages were dirtied,
 * not one burst a period.
 */
long aipu_policy_due_in(struct aipu_dev *d)
{
	unsigned long flags, time, due, now = jiffies;
	bool any;

	if (READ_ONCE(aipu_policy) != AIPU_POLICY_AIPU)
		return 0;
	flags = aipu_dev_lock(d);
	any = aipu_queue_next_time(&d->tr, &time);
	aipu_dev_unlock(d, flags);
	if (!any)
		return -1;
	due = time + ms(&aipu_max_age_ms) + 1;
	if (!time_before(now, due))
		return 0;
	return due - now > ms(&aipu_period_ms) ? -1 : due - now;
}

/*
 * Phase 1 for the plan, at most @budget entries; device's lock held.  True
 * when phase 1 is done for this pass.
 */
bool aipu_policy_scan(struct aipu_dev *d, unsigned int budget)
{
	struct aipu_scan *s = &d->scan;

	if (!s->aged_done) {
		if (!aipu_queue_scan(&d->tr, s->cutoff, &budget))
			return false;
		s->aged_done = true;
	}
	if (s->stage) {
		s->staged +=
			aipu_queue_stage(&d->tr, s->now, &s->stage, &budget);
		if (s->stage && !budget && d->tr.wheel.nodes)
			return false;
		s->stage = 0;
	}
	return true;
}

/*
 * The pass staged files and its writes have left the plug: the next batch
 * may start C from now, not from the pass's start, so consecutive batches
 * reach the device more than C - 1 jiffy apart however long this one took
 * to issue.
 */
void aipu_policy_staged(struct aipu_dev *d)
{
	d->next_stage = jiffies + max(ms(&aipu_stage_interval_ms), 1UL);
}

/*
 * How long the device's flusher may sleep: until the next tick of the
 * period, or sooner when staging has something to stage.
 */
long aipu_policy_timeout(struct aipu_dev *d, unsigned long now,
			 unsigned long next_tick)
{
	long t = time_after(next_tick, now) ? next_tick - now : 0;
	unsigned long flags;
	bool idle;

	if (READ_ONCE(aipu_policy) != AIPU_POLICY_STAGE)
		return t;
	flags = aipu_dev_lock(d);
	idle = !d->tr.wheel.nodes;
	aipu_dev_unlock(d, flags);
	if (idle)
		return t;
	return min_t(long, t, time_after(d->next_stage, now) ?
		     d->next_stage - now : 0);
}

/* A store changed the policy (knob_mutex held). */
void aipu_policy_changed(void)
{
	WRITE_ONCE(policy_gen, policy_gen + 1);
	if (READ_ONCE(aipu_policy) == AIPU_POLICY_KERNEL &&
	    READ_ONCE(aipu_write_alloc) == AIPU_WRITE_PURGE) {
		WRITE_ONCE(aipu_write_alloc, AIPU_WRITE_UPDATE);
		pr_info("policy kernel: write_alloc back to update\n");
	}
}

/* Atomic context: only note the time; the flusher acts on it. */
void aipu_policy_untracked(void)
{
	WRITE_ONCE(untracked_at, jiffies);
	smp_store_release(&untracked_seen, true);	/* after the time */
}

/* The last untracked page's time in @at, if there was one since load. */
static bool untracked(unsigned long *at)
{
	/* Pairs with aipu_policy_untracked(): the time is there if seen is. */
	if (!smp_load_acquire(&untracked_seen))
		return false;
	*at = READ_ONCE(untracked_at);
	return true;
}

/* When the untracked page's clock runs out (@now: none since load). */
static unsigned long untracked_until(unsigned long now)
{
	unsigned long at;

	return untracked(&at) ? at + msecs_to_jiffies(AIPU_UNTRACKED_MS) : now;
}

static bool clock_running(unsigned long now)
{
	return time_before(now, READ_ONCE(watched_from) +
			   ms(&aipu_handover_ms)) ||
	       time_before(now, untracked_until(now));
}

/*
 * The marks the handover asks about: the load, if the adoption left
 * inodes to Linux (unless handover_ms is 0: the user synced), and the last
 * page aipu could not track.  Returns how many of @mark[2] are set.
 */
static int handover_marks(unsigned long *mark)
{
	bool failed;
	int n = 0;

	if (READ_ONCE(aipu_handover_ms) && aipu_handover_adopted(&failed) &&
	    failed)
		mark[n++] = READ_ONCE(watched_from);
	if (untracked(&mark[n]))
		n++;
	return n;
}

/* Linux still holds an inode dirtied at or before one of the marks. */
static bool linux_holds(void)
{
	unsigned long mark[2];
	int i, n = handover_marks(mark);

	for (i = 0; i < n; i++)
		if (aipu_handover_holds(mark[i]))
			return true;
	return false;
}

/*
 * Linux's periodic writeback must still find @inode by its dirtied_when:
 * dirtied at or before a mark the handover asks about, it may hold pages
 * aipu never saw, and only that time brings them to Linux's writeback.
 * The kernel's bookkeeping after a write (writeback_single_inode():
 * redirty_tail_locked()) gives an inode with pages still dirty a new
 * dirtied_when, which would end the handover with them unwritten; so
 * aipu leaves such an inode where it is, to be written whole at its
 * expiry, as Linux would have.  i_lock held (dirtied_when).
 */
bool aipu_handover_owns_locked(struct inode *inode)
{
	unsigned long mark[2], when = inode->dirtied_when;
	int i, n;

	lockdep_assert_held(&inode->i_lock);
	if (!(aipu_inode_state(inode) & I_DIRTY_PAGES) ||
	    !mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY))
		return false;
	n = handover_marks(mark);
	for (i = 0; i < n; i++)
		if (!time_after(when, mark[i]))
			return true;
	return false;
}

bool aipu_handover_owns(struct inode *inode)
{
	bool owns;

	spin_lock(&inode->i_lock);
	owns = aipu_handover_owns_locked(inode);
	spin_unlock(&inode->i_lock);
	return owns;
}

/* Looked at under the clocks too, so that their end finds an answer. */
static bool handing_over(void)
{
	bool holds = linux_holds(), failed;

	return clock_running(jiffies) || !aipu_handover_adopted(&failed) ||
	       holds;
}

/* 1 while the handover outlasts its clocks, waiting for Linux's writes. */
bool aipu_handover_waiting(void)
{
	bool failed;

	return !READ_ONCE(kupdate_off) && aipu_policy_writes() &&
	       !clock_running(jiffies) &&
	       (!aipu_handover_adopted(&failed) || linux_holds());
}

unsigned long aipu_handover_left_ms(void)
{
	unsigned long now = jiffies, a, b;

	a = READ_ONCE(watched_from) +
	    msecs_to_jiffies(READ_ONCE(aipu_handover_ms));
	b = untracked_until(now);
	if (time_before(a, b))
		a = b;
	return time_before(now, a) ? jiffies_to_msecs(a - now) : 0;
}

/*
 * The variable itself (exported), not through its sysctl file: the file's
 * handler follows a new non-zero value with
 * wakeup_flusher_threads(WB_REASON_PERIODIC), which starts writeback of
 * every dirty page on every device, the burst an update policy exists to
 * prevent.  Restored, Linux's periodic writeback is armed again as its own
 * dirtying would arm it (src/handover.c): pages younger than
 * dirty_expire_centisecs stay dirty until that expiry takes them.
 */
static void kupdate_set(unsigned int centisecs)
{
	WRITE_ONCE(dirty_writeback_interval, centisecs);
	if (centisecs)
		aipu_handover_rearm();
}

/* Process context: the flusher each period, sysfs stores, module exit. */
void aipu_kupdate_update(void)
{
	bool off;

	mutex_lock(&kupdate_mutex);
	off = !stopping && aipu_policy_writes() && !handing_over();
	if (off && !kupdate_off) {
		kupdate_saved = READ_ONCE(dirty_writeback_interval);
		if (kupdate_saved)
			kupdate_set(0);
		kupdate_off = true;
	} else if (!off && kupdate_off) {
		/* A value root set meanwhile wins over ours. */
		if (!READ_ONCE(dirty_writeback_interval) && kupdate_saved)
			kupdate_set(kupdate_saved);
		kupdate_off = false;
	}
	mutex_unlock(&kupdate_mutex);
}

bool aipu_kupdate_is_off(void)
{
	return READ_ONCE(kupdate_off);
}

void aipu_policy_init(void)
{
	watched_from = jiffies;
}

/*
 * The probes are in: what is dirtied from now on, aipu sees, and only now
 * may Linux's periodic writeback go off (with handover_ms 0, at once): a
 * page dirtied before would be neither tracked nor periodically written.
 */
void aipu_policy_watching(void)
{
	WRITE_ONCE(watched_from, jiffies);
	aipu_handover_adopt();
	aipu_kupdate_update();
}

void aipu_policy_exit(void)
{
	WRITE_ONCE(aipu_policy, AIPU_POLICY_KERNEL);
	mutex_lock(&kupdate_mutex);
	stopping = true;
	mutex_unlock(&kupdate_mutex);
	aipu_kupdate_update();
	aipu_handover_stop();
}
