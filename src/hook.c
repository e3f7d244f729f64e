// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: the hooks into Linux's writeback path.
 *
 * writeback_dirty_folio fires exactly when a folio goes clean -> dirty, with
 * the mapping's i_pages lock held and interrupts off: that is the page's
 * first-dirty time (Mogul's brelse() timestamp).  writeback_mark_inode_dirty
 * fires on every __mark_inode_dirty(); we keep the ones that dirty the inode
 * itself.  A kprobe on truncate_inode_pages_final() tells us an inode is
 * being evicted (unlink, umount, device removal) before its memory goes, so
 * no run outlives its mapping.
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

static unsigned long record_time(bool *pending)
{
	unsigned long time;

	*pending = aipu_flusher_inherits(&time);
	return *pending ? time : jiffies;
}

static void untracked(unsigned long nr)
{
	aipu_tr.st.pages_dirtied += nr;
	aipu_tr.st.fallbacks++;
	aipu_policy_untracked();
}

static bool evicting(struct inode *inode)
{
	return aipu_inode_state(inode) & (I_FREEING | I_WILL_FREE | I_CLEAR);
}

/*
 * The tracker of @mapping, made if need be; with aipu_lock held.  None is
 * made once the inode's eviction has begun: probe_evict may have run
 * already, and nothing would kill the new tracker before the inode is freed
 * (the debug kernel's KASAN caught the flusher reading such an inode).
 * Reclaim does dirty pages then: pageout() holds the folio lock, not the
 * inode, and ->writepage may redirty the folio while the final truncate
 * waits for it.  I_FREEING or I_WILL_FREE is set under i_lock before
 * eviction starts, so it is seen here once aipu_lock is taken after the
 * kill.  Those pages go with the mapping: counted, not tracked.
 */
static struct aipu_tracker *tracker_of(struct address_space *mapping,
				       bool *gone)
{
	struct aipu_tracker *t = track_find(&aipu_tr, mapping);

	*gone = !t && evicting(mapping->host);
	if (t || *gone)
		return t;
	return track_get(&aipu_tr, mapping, mapping->host);
}

static void probe_dirty_folio(void *data, struct folio *folio,
			      struct address_space *mapping)
{
	unsigned long nr = folio_nr_pages(folio), flags, time;
	struct aipu_tracker *t;
	bool pending, gone;

	time = record_time(&pending);
	spin_lock_irqsave(&aipu_lock, flags);
	t = tracker_of(mapping, &gone);
	if (t) {
		track_pages(&aipu_tr, t, folio->index, nr, time, pending);
	} else if (gone) {
		aipu_tr.st.pages_dirtied += nr;
		aipu_tr.st.pages_evicting += nr;
	} else {
		untracked(nr);
	}
	spin_unlock_irqrestore(&aipu_lock, flags);
	aipu_policy_dirtied();
}

static void probe_inode_dirty(void *data, struct inode *inode, int flags)
{
	unsigned long state = aipu_inode_state(inode), irqflags;
	struct aipu_tracker *t;
	bool gone;

	/*
	 * Only the inode itself, only where writeback exists (not tmpfs or
	 * pseudo file systems), and never once eviction has begun: the
	 * eviction hook may already have run for it.
	 */
	if (!(flags & I_DIRTY_INODE) || !mapping_can_writeback(&inode->i_data) ||
	    evicting(inode))
		return;
	spin_lock_irqsave(&aipu_lock, irqflags);
	t = tracker_of(&inode->i_data, &gone);
	if (t)
		track_meta(&aipu_tr, t, jiffies, !(state & I_DIRTY_INODE));
	else if (!gone)
		untracked(0);
	spin_unlock_irqrestore(&aipu_lock, irqflags);
}

static int probe_evict(struct kprobe *kp, struct pt_regs *regs)
{
	const void *mapping = (const void *)aipu_kprobe_arg0(regs);
	struct aipu_tracker *t;
	unsigned long flags;

	spin_lock_irqsave(&aipu_lock, flags);
	t = track_find(&aipu_tr, mapping);
	if (t)
		track_kill(&aipu_tr, t);
	spin_unlock_irqrestore(&aipu_lock, flags);
	return 0;
}

static struct kprobe evict_kp = {
	.symbol_name = "truncate_inode_pages_final",
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
