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
 * and fsync are untouched.  Dirty data aipu never saw (dirtied before
 * insmod, or when tracking memory ran out completely) is handed to Linux:
 * periodic writeback stays on for handover_ms after load and for
 * AIPU_UNTRACKED_MS after such a fallback.
 */
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/writeback.h>

#include "aipu.h"

/* Linux's default bound, dirty_expire 30 s + dirty_writeback 5 s, + slack. */
#define AIPU_UNTRACKED_MS 40000

#define KUPDATE_SYSCTL "/proc/sys/vm/dirty_writeback_centisecs"

static unsigned long loaded_at, untracked_until, last_pu, next_stage;

static DEFINE_MUTEX(kupdate_mutex);
static bool kupdate_off, stopping;
static unsigned int kupdate_saved;

static unsigned long ms(unsigned int *knob)
{
	return msecs_to_jiffies(READ_ONCE(*knob));
}

/*
 * Strictly older than max_age: a page dirtied late in jiffy j is never
 * written before max_age has passed.  Under "kernel" the same scan only
 * drops the runs Linux has cleaned.
 */
static void scan_aged(unsigned long now, unsigned long limit)
{
	track_scan(&aipu_tr, now - ms(&aipu_max_age_ms), false, limit);
}

static void scan_kernel(unsigned long now)
{
	scan_aged(now, 0);
}

/*
 * Paced, phase 1 also queues what comes due before the next tick; phase 2
 * issues each run as it does (pure interval periodic update).
 */
static void scan_aipu(unsigned long now)
{
	unsigned long ahead = aipu_policy_paced() ? ms(&aipu_period_ms) : 0;

	track_scan(&aipu_tr, now + ahead - ms(&aipu_max_age_ms), false,
		   READ_ONCE(aipu_max_batch));
}

static void scan_pu(unsigned long now)
{
	if (time_before(now, last_pu + ms(&aipu_pu_interval_ms)))
		return;
	last_pu = now;
	track_scan(&aipu_tr, now, true, 0);
}

/*
 * C = 0 stages everything as it is dirtied: write-through at page
 * granularity.  Whatever C, at most one batch a jiffy, so a run that cannot
 * be written yet (umount holds the super block) cannot spin the flusher.
 */
static void scan_stage(unsigned long now)
{
	unsigned int c = READ_ONCE(aipu_stage_interval_ms);

	scan_aged(now, 0);
	if (time_before(now, next_stage) ||
	    !track_stage(&aipu_tr, c ? READ_ONCE(aipu_stage_batch) : UINT_MAX))
		return;
	next_stage = now + max(msecs_to_jiffies(c), 1UL);
}

struct policy_ops {
	void (*scan)(unsigned long now);
	bool writes;
	bool bounded;		/* max_age_ms bounds every page */
};

static const struct policy_ops ops[AIPU_NR_POLICIES] = {
	[AIPU_POLICY_KERNEL] = { scan_kernel, false, false },
	[AIPU_POLICY_AIPU] = { scan_aipu, true, true },
	[AIPU_POLICY_PU] = { scan_pu, true, false },
	[AIPU_POLICY_STAGE] = { scan_stage, true, true },
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

/* Phase 1 for the current policy; tracking lock held. */
void aipu_policy_scan(unsigned long now)
{
	cur()->scan(now);
}

/*
 * How long the flusher may sleep: until the next tick of the period, or
 * sooner when staging has something to stage.
 */
long aipu_policy_timeout(unsigned long now, unsigned long next_tick)
{
	long t = time_after(next_tick, now) ? next_tick - now : 0;
	unsigned long flags;
	bool idle;

	if (READ_ONCE(aipu_policy) != AIPU_POLICY_STAGE)
		return t;
	spin_lock_irqsave(&aipu_lock, flags);
	idle = track_idle(&aipu_tr);
	spin_unlock_irqrestore(&aipu_lock, flags);
	if (idle)
		return t;
	return min_t(long, t, time_after(next_stage, now) ?
		     next_stage - now : 0);
}

/* Probe context: staging wants to hear about new dirty data at once. */
void aipu_policy_dirtied(void)
{
	if (READ_ONCE(aipu_policy) == AIPU_POLICY_STAGE)
		aipu_flusher_poke();
}

/* A store changed the policy (knob_mutex held). */
void aipu_policy_changed(void)
{
	last_pu = jiffies;
	next_stage = jiffies;
	if (READ_ONCE(aipu_policy) == AIPU_POLICY_KERNEL &&
	    READ_ONCE(aipu_write_alloc) == AIPU_WRITE_PURGE) {
		WRITE_ONCE(aipu_write_alloc, AIPU_WRITE_UPDATE);
		pr_info("policy kernel: write_alloc back to update\n");
	}
}

/* Atomic context: only note the time; the flusher acts on it. */
void aipu_policy_untracked(void)
{
	WRITE_ONCE(untracked_until,
		   jiffies + msecs_to_jiffies(AIPU_UNTRACKED_MS));
}

static bool handing_over(void)
{
	unsigned long now = jiffies;

	return time_before(now, loaded_at +
			   msecs_to_jiffies(READ_ONCE(aipu_handover_ms))) ||
	       time_before(now, READ_ONCE(untracked_until));
}

unsigned long aipu_handover_left_ms(void)
{
	unsigned long now = jiffies, a, b;

	a = loaded_at + msecs_to_jiffies(READ_ONCE(aipu_handover_ms));
	b = READ_ONCE(untracked_until);
	if (time_before(a, b))
		a = b;
	return time_before(now, a) ? jiffies_to_msecs(a - now) : 0;
}

/*
 * Through the sysctl file when we can: its handler wakes the flusher
 * threads, without which a restored interval only takes effect the next
 * time an inode is dirtied.
 */
static void kupdate_set(unsigned int centisecs)
{
	char buf[16];
	struct file *f;
	loff_t pos = 0;
	int len;

	len = scnprintf(buf, sizeof(buf), "%u\n", centisecs);
	f = filp_open(KUPDATE_SYSCTL, O_WRONLY, 0);
	if (!IS_ERR(f)) {
		if (kernel_write(f, buf, len, &pos) == len) {
			filp_close(f, NULL);
			return;
		}
		filp_close(f, NULL);
	}
	WRITE_ONCE(dirty_writeback_interval, centisecs);
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
	loaded_at = jiffies;
	untracked_until = loaded_at;
	last_pu = loaded_at;
	next_stage = loaded_at;
	aipu_kupdate_update();
}

void aipu_policy_exit(void)
{
	WRITE_ONCE(aipu_policy, AIPU_POLICY_KERNEL);
	mutex_lock(&kupdate_mutex);
	stopping = true;
	mutex_unlock(&kupdate_mutex);
	aipu_kupdate_update();
}
