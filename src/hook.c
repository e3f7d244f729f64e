// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: the hooks into Linux's writeback path.
 *
 * writeback_dirty_folio fires exactly when a folio goes clean -> dirty, with
 * the mapping's i_pages lock held and interrupts off: that is the page's
 * first-dirty time (Mogul's brelse() timestamp).  writeback_mark_inode_dirty
 * fires on every __mark_inode_dirty(); we keep the ones that dirty the inode
 * itself, and those that dirty only its lazytime timestamps (src/lazytime.c).
 * A kprobe on clear_inode(), which every file system's eviction calls
 * (exFAT's calls truncate_inode_pages(), not the _final variant),
 * tells us an inode is being evicted (unlink, umount, device removal) before
 * its memory goes, so no run outlives its mapping; src/canary.c notices
 * when that probe is disarmed from outside.
 *
 * A folio dirtied again because its write was declined keeps the first-dirty
 * time it had (aipu_queue_redirty()): the kernel itself does not count that as
 * a new dirtying.  Whether it was is looked up only where the answer matters
 * (aipu_queue_may_redirty()).
 *
 * The probes only record; everything that can wait is left to the flusher.
 */
#include <linux/backing-dev.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/pagemap.h>
#include <linux/tracepoint.h>

#include "aipu.h"
#include "aipu_compat.h"
#include "aipu_trace.h"

/*
 * Pages the flusher itself dirties while writing an inode's metadata carry
 * that metadata's first-dirty time (see flusher.c).
 */
static unsigned long record_time(struct aipu_dev *d, bool *inherit)
{
	unsigned long time;

	*inherit = aipu_issue_inherits(d, &time);
	return *inherit ? time : jiffies;
}

/*
 * The device of @mapping, made if need be, and in *@t its tracker if it has
 * one (to be checked under the device's lock).  An RCU reader, any
 * context; NULL when no device could be had.
 */
static __always_inline struct aipu_dev *
mapping_dev(struct address_space *mapping, struct aipu_file **t)
{
	*t = aipu_mapping_find(mapping);
	return *t ? aipu_tracker_dev(*t) :
		    aipu_dev_get(inode_to_bdi(mapping->host));
}

/* Dirtying that found no device or no tracker memory: no lock to count in. */
static atomic64_t orphan_pages, orphan_fallbacks;
/* Pages of mappings aipu leaves to their file system: see foreign(). */
static atomic64_t foreign_pages;

/* No device, no tracker: the page goes back to Linux's periodic writeback. */
static void untracked(unsigned long nr)
{
	atomic64_add(nr, &orphan_pages);
	atomic64_inc(&orphan_fallbacks);
	aipu_trace_fallback(NULL, NULL, AIPU_FB_NO_DEVICE, nr);
	aipu_policy_untracked();
}

/* Add what no device counted to @st. */
void aipu_hook_stats(struct aipu_stats *st)
{
	u64 foreign = atomic64_read(&foreign_pages);

	st->pages_dirtied += atomic64_read(&orphan_pages) + foreign;
	st->fallbacks += atomic64_read(&orphan_fallbacks);
	st->pages_foreign += foreign;
}

/*
 * A mapping that is not its host inode's own (gfs2's glock address spaces,
 * whose host is the block device's inode; nilfs2's b-tree node caches) ends
 * without a clear_inode() aipu could tie to it: gfs2 truncates and frees a
 * glock's by RCU.  A tracker would outlive it and the flusher would write
 * freed memory.  Such a mapping is its file system's to write (gfs2's log
 * flush, nilfs2's segment constructor); Linux's periodic writeback, which
 * writes an inode's own mapping, does not write it either.  Counted, left
 * alone; the eviction probe's mapping, &inode->i_data, is always the
 * inode's own.
 */
static bool foreign(struct address_space *mapping, unsigned long nr)
{
	if (likely(mapping == &mapping->host->i_data))
		return false;
	atomic64_add(nr, &foreign_pages);
	return true;
}

/*
 * Was @folio's write declined (folio_redirty_for_writepage())?  The flag
 * is set and the tag not yet when a clean folio is dirtied; a declined
 * folio had its flag cleared for the write but kept its tag, which only
 * starting writeback clears.  A walk of the xarray: asked only when the
 * answer changes what aipu does (aipu_queue_may_redirty()).
 */
static bool declined(struct address_space *mapping, struct folio *folio)
{
	return xa_get_mark(&mapping->i_pages, folio->index,
			   PAGECACHE_TAG_DIRTY);
}

/*
 * The file's own lock, interrupts off as under the device's: the i_pages
 * lock has them off already but on PREEMPT_RT, where it is a sleeping lock.
 */
static void file_lock(struct aipu_file *t, unsigned long *flags)
	__acquires(aipu_file_lock_of(t))
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		raw_spin_lock_irqsave(aipu_file_lock_of(t), *flags);
	else
		raw_spin_lock(aipu_file_lock_of(t));
}

static void file_unlock(struct aipu_file *t, unsigned long flags)
	__releases(aipu_file_lock_of(t))
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		raw_spin_unlock_irqrestore(aipu_file_lock_of(t), flags);
	else
		raw_spin_unlock(aipu_file_lock_of(t));
}

/*
 * The common case under the file's lock alone: a page of a file already
 * queued, dirtied no earlier than its place (aipu_queue_pages_fast()).  Not a
 * redirtied page nor one the flusher's own metadata write dirties: those
 * need the device's lock.  *@redirty: whether the page's write was
 * declined, asked only where that matters (AIPU_FAST_ASK: see
 * aipu_queue_may_redirty()), else left alone (-1).
 */
static int probe_fast(struct aipu_dev *d, struct aipu_file *t,
		      struct address_space *mapping, struct folio *folio,
		      unsigned long nr, int *redirty, unsigned long *time)
{
	unsigned long unused, flags;
	int r;

	if (!t || aipu_issue_inherits(d, &unused))
		return AIPU_FAST_NO;
	*time = jiffies;
	file_lock(t, &flags);
	r = aipu_queue_pages_fast(t, folio->index, nr, *time,
				  this_cpu_ptr(d->fast), true);
	if (r == AIPU_FAST_ASK) {
		*redirty = declined(mapping, folio);
		r = *redirty ? AIPU_FAST_NO :
			aipu_queue_pages_fast(t, folio->index, nr, *time,
					      this_cpu_ptr(d->fast), false);
	}
	file_unlock(t, flags);
	return r;
}

/*
 * @d locked (or the device that now stands for its disk: see
 * aipu_dev_lock_live()); the hint *@t was @d's, so it goes with a change.
 */
static struct aipu_dev *lock_live(struct aipu_dev *d,
				  struct aipu_file **t, unsigned long *flags)
	__acquires(&d->lock)
{
	struct aipu_dev *live = aipu_dev_lock_live(d, flags);

	if (live != d)
		*t = NULL;
	return live;
}

/*
 * @d locked: no tracker memory for a mapping of @d.  Its flusher adopts
 * @d's dirty inodes that may hold the pages at its next pass (flusher.c),
 * so the fallback stays on this device; a device being reaped has no
 * flusher to, and Linux's periodic writeback takes them (policy.c).
 * True if the flusher is to be woken once the lock is dropped.
 */
static bool missed(struct aipu_dev *d)
{
	if (d->dead) {
		aipu_policy_untracked();
		return false;
	}
	d->tr.misses++;
	WRITE_ONCE(d->adopt_wanted, true);
	return true;
}

/*
 * The device's lock: a file to be queued or moved in the wheel, made, or
 * bounded as a whole; @fast is what probe_fast() did (AIPU_FAST_SHORT: the
 * pages are counted, and those past the log's memory need the whole-file
 * bound at @time, on a new tracker if the flusher freed the file's
 * meanwhile, or else Linux's periodic writeback).  Out of line: the fast
 * path then keeps a frame of its own, light.
 */
static noinline struct aipu_dev *
probe_slow(struct aipu_dev *d, struct address_space *mapping,
	   struct aipu_file *t, struct folio *folio, unsigned long nr,
	   bool redirty, int fast, unsigned long time)
{
	bool inherit, gone, counted = fast == AIPU_FAST_SHORT, poke = false;
	unsigned long flags;

	d = lock_live(d, &t, &flags);

	t = aipu_mapping_tracker(d, mapping, t, &gone);
	if (t) {
		u64 fb = aipu_trace_fallbacks(d);

		if (counted) {
			aipu_queue_whole(&d->tr, t, time);
		} else {
			time = record_time(d, &inherit);
			if (inherit)
				aipu_queue_inherit(&d->tr, t, folio->index, nr,
						   time);
			else if (redirty)
				aipu_queue_redirty(&d->tr, t, folio->index, nr,
						   time);
			else
				aipu_queue_pages(&d->tr, t, folio->index, nr,
						 time);
		}
		aipu_trace_fallback_since(d, fb, mapping, AIPU_FB_NO_RUN, nr);
	} else if (gone) {
		d->st.pages_dirtied += counted ? 0 : nr;
		d->st.pages_evicting += nr;
	} else {
		d->st.pages_dirtied += counted ? 0 : nr;
		d->st.fallbacks++;
		aipu_trace_fallback(d, mapping, AIPU_FB_NO_TRACKER, nr);
		poke = missed(d);
	}
	aipu_dev_unlock(d, flags);
	if (poke)
		aipu_flusher_poke(d);
	return d;
}

/*
 * Under the mapping's i_pages lock, interrupts off.  Pages of different
 * files take no common lock when the files are already queued (the fast
 * path), else their device's; no lock at all to find their tracker.
 *
 * No rcu_read_lock() of its own on every page: the i_pages lock makes the
 * probe an RCU reader already, as the trackers' and devices' lifetimes
 * need (interrupts off; on PREEMPT_RT the lock is a sleeping one that
 * takes rcu_read_lock() itself), on every kernel, whether the tracepoint
 * itself disables preemption (6.1, 6.12) or not (7.2's SRCU).
 */
static void probe_dirty_folio(void *data, struct folio *folio,
			      struct address_space *mapping)
{
	unsigned long nr = folio_nr_pages(folio), time = 0;
	int fast, redirty = -1;		/* not asked yet */
	struct aipu_file *t;
	struct aipu_dev *d;

	lockdep_assert_held(&mapping->i_pages.xa_lock);
	if (unlikely(READ_ONCE(aipu_evict_lost)) || foreign(mapping, nr))
		return;
	d = mapping_dev(mapping, &t);
	if (!d) {
		untracked(nr);
		return;
	}
	fast = probe_fast(d, t, mapping, folio, nr, &redirty, &time);
	if (fast != AIPU_FAST_DONE) {
		/* No tracker: no entry a redirtying could keep (counters). */
		if (redirty < 0)
			redirty = t && declined(mapping, folio);
		d = probe_slow(d, mapping, t, folio, nr, redirty, fast, time);
	}
	if (aipu_policy_wants_poke())
		aipu_flusher_poke(d);
	else
		aipu_flusher_want(d);
}

/*
 * An inode dirtied again, its metadata entry waiting or out: under the
 * file's lock alone, as pages are (aipu_queue_meta_fast()).  An extraction
 * dirties each new inode several times (tar's chown, chmod, utimes), and
 * all but the first change nothing the device's lock guards.  Interrupts
 * saved here, where file_lock() assumes them off: the inode probe runs
 * under no lock of the mapping's.
 */
static bool meta_fast(struct aipu_file *t, bool was_clean)
{
	unsigned long flags;
	bool done;

	raw_spin_lock_irqsave(aipu_file_lock_of(t), flags);
	done = aipu_queue_meta_fast(t, was_clean);
	raw_spin_unlock_irqrestore(aipu_file_lock_of(t), flags);
	return done;
}

/* What a writeback_mark_inode_dirty event dirtied that aipu bounds. */
enum inode_dirtying {
	DIRTY_META,	/* the inode itself */
	DIRTY_TIMES,	/* its lazytime timestamps alone */
	DIRTY_DAX,	/* a DAX mapping's entries: see probe_inode_dirty() */
};

static noinline void inode_dirty(struct inode *inode, enum inode_dirtying how)
{
	unsigned long state = aipu_inode_state(inode), irqflags;
	struct aipu_file *t;
	struct aipu_dev *d;
	bool gone, poke = false;

	/*
	 * Only where writeback exists (not tmpfs or pseudo file systems), and
	 * never once eviction has begun: the eviction hook may already have
	 * run for it.
	 */
	if (!mapping_can_writeback(&inode->i_data) ||
	    (state & (I_FREEING | I_WILL_FREE | I_CLEAR)))
		return;
	rcu_read_lock();
	d = mapping_dev(&inode->i_data, &t);
	if (!d) {
		rcu_read_unlock();
		untracked(0);
		return;
	}
	if (how == DIRTY_META && t && meta_fast(t, !(state & I_DIRTY_INODE))) {
		rcu_read_unlock();
		return;
	}
	d = lock_live(d, &t, &irqflags);
	t = aipu_mapping_tracker(d, &inode->i_data, t, &gone);
	if (t && how == DIRTY_TIMES) {
		d->st.times_dirtied += !(state & I_DIRTY_TIME);
		aipu_queue_times(&d->tr, t, jiffies, !(state & I_DIRTY_TIME));
	} else if (t && how == DIRTY_DAX) {
		aipu_queue_whole_dax(&d->tr, t, jiffies);
	} else if (t) {
		d->st.meta_dirtied += !(state & I_DIRTY_INODE);
		aipu_queue_meta(&d->tr, t, jiffies, !(state & I_DIRTY_INODE));
	} else if (!gone) {
		d->st.fallbacks++;
		aipu_trace_fallback(d, &inode->i_data, AIPU_FB_NO_TRACKER, 0);
		poke = missed(d);
	}
	aipu_dev_unlock(d, irqflags);
	if (poke)
		aipu_flusher_poke(d);
	aipu_flusher_want(d);
	rcu_read_unlock();
}

/*
 * Only the inode itself or its lazytime timestamps alone.  Every page
 * dirtied comes here too (I_DIRTY_PAGES), so that is told first, before
 * anything else is set up.
 *
 * But a store through a DAX mapping dirties no page: dax_insert_entry()
 * tags the entry dirty and marks the inode I_DIRTY_PAGES, and only
 * ->writepages (dax_writeback_mapping_range()) writes the CPU caches back
 * to the persistent memory.  So on a DAX inode that dirtying bounds the
 * whole file, from now.
 */
static void probe_inode_dirty(void *data, struct inode *inode, int flags)
{
	bool times = (flags & (I_DIRTY_INODE | I_DIRTY_TIME)) == I_DIRTY_TIME;

	if (unlikely(READ_ONCE(aipu_evict_lost)))
		return;		/* src/canary.c: Linux's to write now */
	if (flags & I_DIRTY_INODE)
		inode_dirty(inode, DIRTY_META);
	else if (times)
		inode_dirty(inode, DIRTY_TIMES);
	else if ((flags & I_DIRTY_PAGES) && IS_DAX(inode))
		inode_dirty(inode, DIRTY_DAX);
}

/*
 * Every ->evict_inode calls clear_inode(): forget the mapping.  The tick's
 * canary (src/canary.c) comes here too, to show the probe is armed.
 */
static int probe_evict(struct kprobe *kp, struct pt_regs *regs)
{
	struct inode *inode = (struct inode *)aipu_kprobe_arg0(regs);

	if (!aipu_canary_evicted(inode))
		aipu_mapping_kill(&inode->i_data);
	return 0;
}

static struct kprobe evict_kp = {
	.symbol_name = "clear_inode",
	.pre_handler = probe_evict,
};

struct aipu_tp {
	const char *name;
	void *probe;
	struct tracepoint *tp;
	bool registered;
};

static struct aipu_tp tps[] = {
	{ .name = "writeback_mark_inode_dirty", .probe = probe_inode_dirty },
	{ .name = "writeback_dirty_folio", .probe = probe_dirty_folio },
};

static void find_tp(struct tracepoint *tp, void *priv)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tps); i++)
		if (!strcmp(tp->name, tps[i].name))
			tps[i].tp = tp;
}

/* Eviction first: a tracker must never exist without its kill switch. */
int aipu_hook_init(void)
{
	unsigned int i;
	int ret;

	ret = register_kprobe(&evict_kp);
	if (ret) {
		pr_err("cannot probe %s: %d\n", evict_kp.symbol_name, ret);
		return ret;
	}
	for_each_kernel_tracepoint(find_tp, NULL);
	for (i = 0; i < ARRAY_SIZE(tps); i++) {
		ret = tps[i].tp ? tracepoint_probe_register(tps[i].tp,
							    tps[i].probe, NULL) :
				  -ENOENT;
		if (ret) {
			pr_err("cannot attach to tracepoint %s: %d\n",
			       tps[i].name, ret);
			aipu_hook_exit();
			aipu_hook_exit_evict();
			return ret;
		}
		tps[i].registered = true;
	}
	return 0;
}

/* Stop recording; on return no probe is running. */
void aipu_hook_exit(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tps); i++) {
		if (tps[i].registered)
			tracepoint_probe_unregister(tps[i].tp, tps[i].probe,
						    NULL);
		tps[i].registered = false;
	}
	tracepoint_synchronize_unregister();
}

/* Only once the flusher is stopped: unregister_kprobe() waits for handlers. */
void aipu_hook_exit_evict(void)
{
	if (evict_kp.addr)
		unregister_kprobe(&evict_kp);
	evict_kp.addr = NULL;
}
