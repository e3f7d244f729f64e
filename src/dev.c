// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the backing devices aipu tracks, one queue each.
 *
 * Linux writes back per device (one bdi_writeback per backing device, see
 * fs/fs-writeback.c) so that a device that stalls holds up only its own
 * pages.  aipu does the same: every backing device gets a struct aipu_dev
 * with its own lock, its own age-ordered queue and its own flusher thread
 * (src/flusher.c).  A device is made the first time a page of it is dirtied,
 * in probe context, and lives until it has tracked nothing for a while (the
 * flusher's tick reaps it) or rmmod; it holds a reference on its
 * backing_dev_info so that the pointer that finds it cannot be reused by
 * another device.  The list of devices is read under RCU.
 */
#include <linux/backing-dev.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/rculist.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "aipu.h"

/* A bound on what a storm of short-lived devices (loop, nbd) can cost. */
#define AIPU_DEVS_MAX 1024
/*
 * The wheel's slots: a sixteenth of a second each, 1,024 of them, 61-64 s
 * in all.  A sixteenth of the default period, so phase 1 rarely looks at a
 * file whose slot the cutoff cuts for nothing (bench/scale's steady table:
 * 1.02 files looked at per extent written at 1 M files, 1.11 with slots
 * of HZ / 4); wider than max_age plus a period for every max_age up to a
 * minute, so files rarely wrap round (a wrapped file is looked at and put
 * back, never written early).
 */
#define AIPU_SLOT_JIFFIES max(HZ / 16, 1)

static LIST_HEAD(devs);			/* RCU */
static DEFINE_RAW_SPINLOCK(devs_lock);	/* changing @devs; see aipu.h */
static unsigned int nr_devs;
static struct aipu_sums retired;	/* of devices reaped; @devs_lock */
static unsigned int retire_seq;		/* bumped by each reap; @devs_lock */
/*
 * A device allocated beforehand in process context: on PREEMPT_RT the
 * probes may not call the slab (src/mem.c), and elsewhere their
 * GFP_NOWAIT allocation of a device (its slots are 16 KiB) may fail
 * where this one did not, leaving a new disk's pages untracked.
 */
static struct aipu_dev *spare;		/* @devs_lock */

static struct aipu_dev *dev_find(struct backing_dev_info *bdi)
{
	struct aipu_dev *d;

	/* A device being reaped takes nothing more: the bdi gets a new one. */
	list_for_each_entry_rcu(d, &devs, node)
		if (d->bdi == bdi && !READ_ONCE(d->dead))
			return d;
	return NULL;
}

/*
 * A device and its wheel's slots, apart: 16 KiB of slots inside the device
 * would make it a 32-KiB (order-3) allocation, which GFP_NOWAIT often
 * cannot have.
 */
static void dev_kfree(struct aipu_dev *d)
{
	if (d) {
		free_percpu(d->fast);
		kfree(d->slots);
	}
	kfree(d);
}

static struct aipu_dev *dev_alloc(gfp_t gfp)
{
	struct aipu_dev *d = kzalloc(sizeof(*d), gfp);

	if (!d)
		return NULL;
	d->slots = kcalloc(AIPU_QUEUE_SLOTS, sizeof(*d->slots), gfp);
	d->fast = alloc_percpu_gfp(struct aipu_queue_delta, gfp);
	if (!d->slots || !d->fast) {
		dev_kfree(d);
		return NULL;
	}
	return d;
}

static void dev_init(struct aipu_dev *d, struct backing_dev_info *bdi)
{
	d->bdi = bdi;
	strscpy(d->name, bdi_dev_name(bdi), sizeof(d->name));
	raw_spin_lock_init(&d->lock);
	aipu_queue_init(&d->tr, d->slots, AIPU_SLOT_JIFFIES, jiffies);
	INIT_LIST_HEAD(&d->purges);
	INIT_LIST_HEAD(&d->wbqs);
	d->created = jiffies;
	d->idle_since = d->created;	/* never reaped sooner than IDLE_MIN_MS */
}

/* Process context: a spare device for the probes. */
void aipu_dev_refill(void)
{
	struct aipu_dev *d;
	unsigned long flags;

	if (READ_ONCE(spare))
		return;
	d = dev_alloc(GFP_KERNEL | __GFP_NOWARN);
	raw_spin_lock_irqsave(&devs_lock, flags);
	if (!spare)
		swap(spare, d);
	raw_spin_unlock_irqrestore(&devs_lock, flags);
	dev_kfree(d);
}

/*
 * The device of @bdi, made if need be.  Any context, an RCU reader;
 * NULL when memory or AIPU_DEVS_MAX says no.
 */
struct aipu_dev *aipu_dev_get(struct backing_dev_info *bdi)
{
	struct aipu_dev *d = dev_find(bdi), *made = NULL;
	unsigned long flags;

	if (d)
		return d;
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		made = dev_alloc(GFP_NOWAIT | __GFP_NOWARN);
	raw_spin_lock_irqsave(&devs_lock, flags);
	d = dev_find(bdi);
	if (!d && nr_devs < AIPU_DEVS_MAX) {
		if (!made)
			swap(made, spare);
		if (made) {
			dev_init(made, bdi);
			bdi_get(bdi);
			list_add_tail_rcu(&made->node, &devs);
			nr_devs++;
			d = made;
			made = NULL;
		}
	}
	raw_spin_unlock_irqrestore(&devs_lock, flags);
	dev_kfree(made);	/* never on PREEMPT_RT: only a dev_alloc'd one */
	return d;
}

/*
 * The device's lock, interrupts off (the probes run under the mapping's
 * i_pages lock).  Every hold is timed: stat's lock_hold_max_ns is the
 * longest, the figure that must not grow with the backlog.
 */
unsigned long aipu_dev_lock(struct aipu_dev *d)
	__acquires(&d->lock)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&d->lock, flags);
	d->locked_at = local_clock();
	return flags;
}

void aipu_dev_unlock(struct aipu_dev *d, unsigned long flags)
	__releases(&d->lock)
{
	u64 held = local_clock() - d->locked_at;

	if (held > d->st.lock_hold_max_ns)
		d->st.lock_hold_max_ns = held;
	raw_spin_unlock_irqrestore(&d->lock, flags);
}

/*
 * @d locked, or, when the tick is reaping @d (it had tracked nothing for
 * AIPU_DEV_IDLE_MIN_MS and the caller found it just then), the device
 * aipu_dev_get() makes anew for the same disk, locked.  Reaping must not
 * make a dirtying a fallback, which keeps Linux's periodic writeback on for
 * AIPU_UNTRACKED_MS.  A device just made is not reaped before it has a
 * thread and has idled, so one try is enough; when no memory makes one, @d
 * stays (aipu_mapping_tracker() sees it dead: the fallback is counted).
 * An RCU reader: @d and its bdi reference outlive a reap's grace period.
 */
struct aipu_dev *aipu_dev_lock_live(struct aipu_dev *d, unsigned long *flags)
	__acquires(&d->lock)
{
	struct aipu_dev *live;

	*flags = aipu_dev_lock(d);
	if (!d->dead)
		return d;
	aipu_dev_unlock(d, *flags);
	live = aipu_dev_get(d->bdi);
	if (live)
		d = live;
	*flags = aipu_dev_lock(d);
	return d;
}

/*
 * Next device after @d (the first if NULL).  RCU read lock held, or no
 * reaping possible (module exit, after the flusher stopped).
 */
struct aipu_dev *aipu_dev_next(struct aipu_dev *d)
{
	struct list_head *n = d ? READ_ONCE(d->node.next) : READ_ONCE(devs.next);

	return n == &devs ? NULL : list_entry(n, struct aipu_dev, node);
}

/* Counters add up over devices; gauges too; maxima take the largest. */
static void stats_add(struct aipu_stats *sum, const struct aipu_stats *s)
{
	sum->pages_dirtied += s->pages_dirtied;
	sum->pages_fast += s->pages_fast;
	sum->meta_dirtied += s->meta_dirtied;
	sum->entries_scanned += s->entries_scanned;
	sum->pages_written += s->pages_written;
	sum->meta_written += s->meta_written;
	sum->pages_clean += s->pages_clean;
	sum->pages_retried += s->pages_retried;
	sum->pages_tracked += s->pages_tracked;
	sum->runs_tracked += s->runs_tracked;
	sum->trackers += s->trackers;
	sum->flusher_runs += s->flusher_runs;
	sum->fallbacks += s->fallbacks;
	sum->pages_deferred += s->pages_deferred;
	sum->pages_late += s->pages_late;
	sum->pages_staged += s->pages_staged;
	sum->pages_purged += s->pages_purged;
	sum->pages_not_purged += s->pages_not_purged;
	sum->pages_evicting += s->pages_evicting;
	sum->pages_redirtied += s->pages_redirtied;
	sum->times_dirtied += s->times_dirtied;
	sum->times_written += s->times_written;
	sum->wb_takes += s->wb_takes;
	sum->wb_full += s->wb_full;
	sum->pages_refused += s->pages_refused;
	sum->pages_foreign += s->pages_foreign;
	sum->inodes_adopted += s->inodes_adopted;
	sum->lock_hold_max_ns = max(sum->lock_hold_max_ns, s->lock_hold_max_ns);
}

/*
 * @d's counters as stat names them (its lock held): the flusher's and the
 * probes' own in @d->st, the queue's in @d->tr.st and the probes' fast
 * path's in @d->fast, per CPU (a CPU's share of a gauge goes below 0 when
 * the flusher takes what it counted; read while probes run, the sum is as
 * exact as a percpu_counter's).  runs_tracked counts the log's entry slots
 * (8 bytes each), the nearest thing to a run.
 */
static void dev_stats(struct aipu_dev *d, struct aipu_stats *s)
{
	const struct aipu_queue_stats *q = &d->tr.st;
	long bytes = q->bytes, pages = q->pages;
	const struct aipu_queue_delta *f;
	int cpu;

	*s = d->st;
	s->pages_dirtied += q->pages_dirtied;
	for_each_possible_cpu(cpu) {
		f = per_cpu_ptr(d->fast, cpu);
		s->pages_fast += READ_ONCE(f->pages_dirtied);
		bytes += READ_ONCE(f->bytes);
		pages += READ_ONCE(f->pages);
	}
	s->pages_dirtied += s->pages_fast;
	s->entries_scanned += q->entries_scanned;
	s->pages_tracked = max(pages, 0L);
	s->runs_tracked = max(bytes, 0L) / sizeof(u64);
	s->trackers = q->trackers;
	s->fallbacks += q->fallbacks;
	s->pages_deferred += q->pages_deferred;
	s->pages_staged += q->pages_staged;
	s->pages_redirtied += q->pages_redirtied;
	s->inodes_adopted += q->inodes_adopted;
}

/* Age in jiffies of @d's oldest queued data, 0 if none; its lock held. */
static unsigned long dev_oldest(struct aipu_dev *d)
{
	unsigned long now = jiffies, time;

	if (!aipu_queue_oldest(&d->tr, &time) || time_after(time, now))
		return 0;
	return now - time;
}

/* One device's counters and the age of its oldest dirty data, in jiffies. */
void aipu_dev_snapshot(struct aipu_dev *d, struct aipu_stats *s,
		       unsigned long *oldest)
{
	unsigned long flags = aipu_dev_lock(d);

	dev_stats(d, s);
	*oldest = dev_oldest(d);
	aipu_dev_unlock(d, flags);
}

static void sums_add(struct aipu_sums *sum, struct aipu_dev *d)
{
	struct aipu_stats s;
	unsigned int b;

	dev_stats(d, &s);
	stats_add(&sum->st, &s);
	for (b = 0; b < AIPU_HIST_BUCKETS; b++)
		sum->hist[b] += d->hist[b];
	for (b = 0; b < AIPU_AGE_BUCKETS; b++)
		sum->age_hist[b] += d->age_hist[b];
}

/* The age histogram's bucket of pages written @age_ms after dirtying. */
unsigned int aipu_age_bucket(unsigned long age_ms)
{
	return min_t(unsigned long, fls_long(age_ms), AIPU_AGE_BUCKETS - 1);
}

/* Count pages written, @age[b] of them in age bucket b; lock held. */
void aipu_dev_written(struct aipu_dev *d, const unsigned long *age)
{
	unsigned int b;

	for (b = 0; b < AIPU_AGE_BUCKETS; b++) {
		d->st.pages_written += age[b];
		d->age_hist[b] += age[b];
	}
}

/* A pass issued @pages; lock held. */
void aipu_dev_pass(struct aipu_dev *d, unsigned long pages)
{
	d->hist[min_t(unsigned long, fls_long(pages),
		      AIPU_HIST_BUCKETS - 1)]++;
	d->st.flusher_runs++;
}

/*
 * What stat and the histograms show: every device's counters, and those of
 * devices reaped since load, so that no counter ever goes down.  *@oldest:
 * the age in jiffies of the oldest dirty data on any device.
 *
 * One device's lock at a time, not devs_lock across the walk (a thousand
 * devices, each summing every possible CPU's fast-path counters, with
 * interrupts off): a reap during the walk could count a device twice (seen,
 * then added to @retired) or not at all, so the walk starts again if one
 * happened (a reap is at most one a period).
 */
void aipu_dev_sum(struct aipu_sums *sum, unsigned long *oldest)
{
	unsigned long flags, f, o;
	struct aipu_dev *d;
	unsigned int seq;

	do {
		raw_spin_lock_irqsave(&devs_lock, flags);
		*sum = retired;
		seq = retire_seq;
		raw_spin_unlock_irqrestore(&devs_lock, flags);
		*oldest = 0;
		sum->devices = 0;
		rcu_read_lock();
		list_for_each_entry_rcu(d, &devs, node) {
			f = aipu_dev_lock(d);
			sums_add(sum, d);
			o = dev_oldest(d);
			aipu_dev_unlock(d, f);
			*oldest = max(*oldest, o);
			sum->devices++;
		}
		rcu_read_unlock();
	} while (READ_ONCE(retire_seq) != seq);
}

/*
 * Take dead @d, whose thread has stopped, off the list and keep its
 * counters; readers may still see it until a grace period has passed.
 */
void aipu_dev_retire(struct aipu_dev *d)
{
	unsigned long flags, f;

	raw_spin_lock_irqsave(&devs_lock, flags);
	list_del_rcu(&d->node);
	nr_devs--;
	f = aipu_dev_lock(d);
	sums_add(&retired, d);
	aipu_dev_unlock(d, f);
	WRITE_ONCE(retire_seq, retire_seq + 1);
	raw_spin_unlock_irqrestore(&devs_lock, flags);
}

/* @d is unlisted, unseen and its work cancelled; its queue is empty. */
void aipu_dev_free(struct aipu_dev *d)
{
	kvfree(d->batch);
	bdi_put(d->bdi);
	dev_kfree(d);
}

/* rmmod: every probe detached and every flusher stopped; queues are empty. */
void aipu_dev_exit(void)
{
	struct aipu_dev *d, *tmp;

	list_for_each_entry_safe(d, tmp, &devs, node) {
		list_del(&d->node);
		aipu_dev_free(d);
	}
	nr_devs = 0;
	memset(&retired, 0, sizeof(retired));
	dev_kfree(spare);
	spare = NULL;
}
