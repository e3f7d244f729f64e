// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: what was dirty at load, and has Linux written the data aipu never
 * saw?
 *
 * aipu learns of a page at its clean->dirty transition, so what was dirty
 * before insmod it learns of from the kernel's own lists instead: once the
 * probes are in, one walk (the adoption, LOOK_ADOPT) gives every inode
 * dirty then the entries the probes would have given it, its pages bounded
 * as a whole from its dirtied_when (aipu_queue_adopt()).  Linux's own
 * periodic writeback knows those pages by no more than that time either;
 * but it goes on trusting dirtied_when after a write, which the kernel's
 * bookkeeping renews for an inode whose pages below writeback_index stayed
 * dirty (6.1's redirty_tail_locked()) and never renews for the only dirty
 * inode of a device written continuously: so aipu writes what it adopted
 * itself, within max_age, and the handover at load ends with its clock.
 *
 * What the probes miss later (tracking memory ran out completely, or an
 * adoption found none) is Linux's to write: its periodic writeback stays
 * on (src/policy.c) until Linux holds no inode dirtied at or before that
 * mark, and a look, at most once a second, finds out.  A clock alone
 * cannot end that: on a disk slower than the backlog, or with
 * dirty_expire_centisecs above the clock, Linux's writeback would be
 * switched off with that data still dirty.
 *
 * Linux keeps a writeback context's dirty inodes in dirtied_when order,
 * oldest at the tail of b_dirty, b_io and b_more_io (b_io is grouped by
 * super block when several share a device: an older inode behind another
 * group shows once that group is written): the tails tell.  The contexts
 * are reached from every super block's backing device, the super blocks
 * through every registered file system type (iterate_supers() is not
 * exported); a raw block device's inode, on the block devices' own super
 * block (no backing device, no registered type), is looked at itself.
 *
 * The look takes each super block's s_umount shared, so it is a work item
 * of its own: an umount stuck on a dead device delays the end of the
 * handover, never a device's flusher or the tick.
 *
 * The same walk hands Linux's periodic writeback back (aipu_handover_rearm()):
 * with dirty_writeback_interval 0 a writeback context's worker stops
 * re-arming its timer, and the sysctl's handler, which would wake them, does
 * so with wakeup_flusher_threads(WB_REASON_PERIODIC): writeback of every
 * dirty page on every device, young ones too.  policy.c restores the
 * interval itself, and each context with dirty inodes gets its timer back
 * as wb_wakeup_delayed() sets it: its next kupdate pass, one interval from
 * now, writes the inodes older than dirty_expire_interval, as Linux's own
 * next pass would have.  That takes two walks: the first finds bdi_wq.
 */
#include <linux/backing-dev.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "aipu.h"
#include "aipu_compat.h"

#define FILESYSTEMS "proc/filesystems"	/* from init's root, as sysctls */
#define KUPDATE_SYSCTL "proc/sys/vm/dirty_writeback_centisecs"

enum look_mode {
	LOOK_ADOPT,		/* at load: give what is dirty entries */
	LOOK_OLDEST,		/* the handover's question */
	LOOK_WQ,		/* the re-arm's walks: find bdi_wq, */
	LOOK_KICK,		/* have file systems' contexts arm themselves, */
	LOOK_REARM,		/* arm the rest */
};

struct look {
	enum look_mode mode;
	unsigned long oldest;	/* dirtied_when of the oldest inode seen */
	bool found;
	bool failed;		/* LOOK_ADOPT: an inode left to Linux */
	unsigned long now;	/* LOOK_ADOPT: when the walk began */
	/* LOOK_ADOPT after a miss: only what aipu_mapping_missed() says. */
	struct aipu_queue *missed;
	u16 since, upto;
	struct workqueue_struct *wq;	/* bdi_wq, once a context shows it */
};

static void look_fn(struct work_struct *w);
static DECLARE_DELAYED_WORK(look_work, look_fn);
static void rearm_fn(struct work_struct *w);
static DECLARE_WORK(rearm_work, rearm_fn);
static void adopt_fn(struct work_struct *w);
static DECLARE_WORK(adopt_work, adopt_fn);

/* The last look's answer, and when it began (locking: include/aipu.h). */
static DEFINE_SPINLOCK(answer_lock);
static struct look answer;
static unsigned long answer_at;
static bool answered;
static enum { ADOPT_PENDING, ADOPT_DONE, ADOPT_FAILED } adopt_state;
static DECLARE_COMPLETION(adopt_done);

static void note(struct look *l, unsigned long when)
{
	if (!l->found || time_before(when, l->oldest)) {
		l->oldest = when;
		l->found = true;
	}
}

static void note_tail(struct look *l, struct list_head *list)
{
	if (!list_empty(list))
		note(l, list_last_entry(list, struct inode,
					i_io_list)->dirtied_when);
}

/*
 * @wb's periodic writeback armed as wb_wakeup_delayed() (not exported) arms
 * it, if @wb has dirty inodes and it is not pending already: on bdi_wq, the
 * one workqueue every context's work is queued on (not exported either).
 * A delayed queueing records its queue in the work (dwork.wq), so any
 * context armed before by Linux (with a non-zero interval: the root file
 * system's device since boot, in practice) shows it; one queued only with
 * interval 0 was queued at once, which records nothing.
 */
static void wb_rearm(struct bdi_writeback *wb, struct workqueue_struct *wq)
{
	unsigned long timeout;

	timeout = msecs_to_jiffies(READ_ONCE(dirty_writeback_interval) * 10);
	if (!timeout || !wb_has_dirty_io(wb))
		return;
	spin_lock_irq(&wb->work_lock);
	if (test_bit(WB_registered, &wb->state))
		queue_delayed_work(wq, &wb->dwork, timeout);
	spin_unlock_irq(&wb->work_lock);
}

/*
 * The time an adopted inode's entries wait at: its dirtied_when, but no
 * older than max_age before the walk, so that data dirtied long before the
 * load is due at once and counted late only if aipu is late with it.
 */
static unsigned long adopt_time(struct look *l, unsigned long when)
{
	unsigned long oldest = l->now - msecs_to_jiffies(READ_ONCE(aipu_max_age_ms));

	if (time_before(when, oldest))
		return oldest;
	return time_after(when, l->now) ? l->now : when;
}

/*
 * @inode is on a writeback list, or a dirty block-device inode: what of it
 * is dirty gets the entries the probes would have queued had they seen it
 * dirtied (aipu_mapping_adopt()).  Its pages are bounded as a whole from
 * its dirtied_when, as Linux's own periodic writeback bounds them: aipu
 * then writes every one of them within max_age, whatever the kernel's
 * bookkeeping later does to dirtied_when (redirty_tail_locked() gives an
 * inode whose pages below writeback_index stayed dirty a new one).  Taken
 * under i_lock, inside the list's lock as fs-writeback.c nests them: an
 * inode not being evicted cannot be freed meanwhile.
 */
static void adopt_inode(struct look *l, struct inode *inode)
{
	unsigned long state, time;
	unsigned int what = 0;

	spin_lock(&inode->i_lock);
	state = aipu_inode_state(inode);
	if ((state & (I_FREEING | I_WILL_FREE)) ||
	    !mapping_can_writeback(&inode->i_data) ||
	    (l->missed && !aipu_mapping_missed(inode, l->missed, l->since,
					       l->upto)))
		goto out;
	if ((state & I_DIRTY_PAGES) &&
	    mapping_tagged(&inode->i_data, PAGECACHE_TAG_DIRTY))
		what |= AIPU_ADOPT_PAGES;
	if (state & I_DIRTY_INODE)
		what |= AIPU_ADOPT_META;
	time = adopt_time(l, inode->dirtied_when);
	if (!what && (state & I_DIRTY_TIME)) {
		/* Written once dirtytime_expire_seconds old (lazytime.c). */
		what = AIPU_ADOPT_TIMES;
		time = inode->dirtied_time_when;
		if (time_after(time, l->now))
			time = l->now;
	}
	if (what && !aipu_mapping_adopt(inode, what, time))
		l->failed = true;
out:
	spin_unlock(&inode->i_lock);
}

static void adopt_list(struct look *l, struct list_head *list)
{
	struct inode *inode;

	list_for_each_entry(inode, list, i_io_list)
		adopt_inode(l, inode);
}

static void look_wb(struct look *l, struct bdi_writeback *wb)
{
	switch (l->mode) {
	case LOOK_ADOPT:
		spin_lock(&wb->list_lock);
		adopt_list(l, &wb->b_dirty);
		adopt_list(l, &wb->b_io);
		adopt_list(l, &wb->b_more_io);
		adopt_list(l, &wb->b_dirty_time);
		spin_unlock(&wb->list_lock);
		break;
	case LOOK_OLDEST:
		spin_lock(&wb->list_lock);
		note_tail(l, &wb->b_dirty);
		note_tail(l, &wb->b_io);
		note_tail(l, &wb->b_more_io);
		spin_unlock(&wb->list_lock);
		break;
	case LOOK_WQ:
		if (!l->wq)
			l->wq = READ_ONCE(wb->dwork.wq);
		break;
	case LOOK_REARM:
		wb_rearm(wb, l->wq);
		break;
	case LOOK_KICK:
		break;
	}
}

/* Some context of @bdi has dirty inodes and its worker is not running. */
static bool bdi_idle_dirty(struct backing_dev_info *bdi)
{
	struct bdi_writeback *wb;
	bool idle = false;

	rcu_read_lock();
	list_for_each_entry_rcu(wb, &bdi->wb_list, bdi_node)
		if (wb_has_dirty_io(wb) && !writeback_in_progress(wb))
			idle = true;
	rcu_read_unlock();
	return idle;
}

/*
 * @sb's s_umount held shared (iterate_supers_type()).  No context shows
 * bdi_wq: have the kernel queue an empty writeback work on each of @sb's
 * contexts with dirty inodes (exported, and it knows its queue).  Its
 * worker then does Linux's kupdate pass (only inodes older than
 * dirty_expire_interval: its last was long ago) and arms its timer with a
 * delay, which records the queue.  A running worker arms it when done.
 */
static void kick_sb(struct super_block *sb)
{
	if (bdi_idle_dirty(sb->s_bdi))
		writeback_inodes_sb_nr(sb, 0, WB_REASON_PERIODIC);
}

/* Every writeback context of @bdi: the root one and each cgroup's. */
static void look_bdi(struct look *l, struct backing_dev_info *bdi)
{
	struct bdi_writeback *wb;

	rcu_read_lock();
	list_for_each_entry_rcu(wb, &bdi->wb_list, bdi_node)
		look_wb(l, wb);
	rcu_read_unlock();
}

/*
 * The devices aipu has a queue for: their raw block devices' contexts,
 * which no super block's walk reaches.  Under RCU a listed device's bdi
 * is valid (reap() puts it a grace period after the unlisting).
 */
static void rearm_devices(struct look *l)
{
	struct aipu_dev *d;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d))
		look_bdi(l, d->bdi);
	rcu_read_unlock();
}

/*
 * One inode a block device: a few dozen, not a file system's millions.  The
 * block devices' super block is never unmounted, and its file system type
 * is not registered (not in /proc/filesystems): it is walked on its own, as
 * sync_bdevs() does.
 */
static void look_bdev_inodes(struct look *l)
{
	struct super_block *sb = blockdev_superblock;
	struct inode *inode;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		if (!(aipu_inode_state(inode) & I_DIRTY))
			continue;
		if (l->mode == LOOK_ADOPT)
			adopt_inode(l, inode);
		else
			note(l, READ_ONCE(inode->dirtied_when));
	}
	spin_unlock(&sb->s_inode_list_lock);
}

static void look_sb(struct super_block *sb, void *arg)
{
	struct look *l = arg;

	if (!sb->s_bdi || sb->s_bdi == &noop_backing_dev_info)
		return;
	if (l->mode == LOOK_KICK)
		kick_sb(sb);
	else
		look_bdi(l, sb->s_bdi);
}

/* "nodev\tsysfs\n" or "\text4\n": the name follows the tab. */
static void look_type(struct look *l, char *line)
{
	struct file_system_type *type;
	char *name = strchr(line, '\t');

	if (!name || !name[1])
		return;
	type = get_fs_type(name + 1);
	if (!type)
		return;
	iterate_supers_type(type, look_sb, l);
	module_put(type->owner);	/* put_filesystem(), not exported */
}

/* False if /proc/filesystems cannot be read: the handover is the clock's. */
static bool look_all(struct look *l)
{
	char *buf, *p, *line;
	ssize_t n;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return false;
	/*
	 * A page holds some 300 types; a longer list loses its tail, and its
	 * cut last line is skipped (p is NULL after a line with no newline):
	 * get_fs_type() of a name no type has asks modprobe for a module.  A
	 * type unregistered between the read and its lookup is asked for the
	 * same way; that window is the look's, once a second at most.
	 */
	n = aipu_proc_read(FILESYSTEMS, buf, PAGE_SIZE);
	p = buf;
	while (n > 0 && (line = strsep(&p, "\n")) && p)
		look_type(l, line);
	kfree(buf);
	if (l->mode == LOOK_OLDEST || l->mode == LOOK_ADOPT)
		look_bdev_inodes(l);
	return n > 0;
}

/* Both walks: every super block's device, and the devices aipu queues for. */
static void look_wbs(struct look *l, enum look_mode mode)
{
	l->mode = mode;
	look_all(l);
	rearm_devices(l);
}

/*
 * No context shows bdi_wq, even after the kick (only raw block devices
 * have dirty inodes, and no context was armed with a non-zero interval
 * since boot): the sysctl's handler wakes them, with writeback of
 * everything dirty, as Linux's own sysctl write does.
 */
static void rearm_by_sysctl(void)
{
	unsigned int cs = READ_ONCE(dirty_writeback_interval);
	char buf[16];
	struct file *f;
	loff_t pos = 0;
	int len;

	pr_warn_once("no writeback context shows bdi_wq: periodic writeback restored through vm.dirty_writeback_centisecs, which starts writeback of all dirty data\n");
	len = scnprintf(buf, sizeof(buf), "%u\n", cs);
	f = aipu_proc_open(KUPDATE_SYSCTL, O_WRONLY);
	if (IS_ERR(f))
		return;
	/* The handler wakes the flusher threads only for a changed value. */
	WRITE_ONCE(dirty_writeback_interval, 0);
	if (kernel_write(f, buf, len, &pos) != len)
		WRITE_ONCE(dirty_writeback_interval, cs);
	filp_close(f, NULL);
}

/* How long the re-arm waits for a kicked context to show bdi_wq. */
#define AIPU_REARM_WAIT_MS 1000

static void rearm_fn(struct work_struct *w)
{
	unsigned long until = jiffies + msecs_to_jiffies(AIPU_REARM_WAIT_MS);
	struct look l = { 0 };

	look_wbs(&l, LOOK_WQ);
	if (!l.wq) {
		look_wbs(&l, LOOK_KICK);
		/* A kicked worker arms its timer after its kupdate pass. */
		while (!l.wq && time_before(jiffies, until)) {
			msleep(20);
			look_wbs(&l, LOOK_WQ);
		}
	}
	if (!l.wq) {
		rearm_by_sysctl();
		return;
	}
	look_wbs(&l, LOOK_REARM);
}

/*
 * Process context, dirty_writeback_interval just restored: arm Linux's
 * periodic writeback of every writeback context with dirty inodes, soon,
 * from a work item (the walk takes every super block's s_umount).
 */
void aipu_handover_rearm(void)
{
	queue_work(system_unbound_wq, &rearm_work);
}

static void look_fn(struct work_struct *w)
{
	unsigned long began = jiffies;
	struct look l = { 0 };

	if (!look_all(&l))
		pr_warn_once("cannot read /%s: the handover ends by the clock alone\n",
			     FILESYSTEMS);
	spin_lock(&answer_lock);
	answer = l;
	answer_at = began;
	answered = true;
	spin_unlock(&answer_lock);
}

/*
 * Once, at load, with the probes in: every inode dirty then, found as the
 * handover's look finds them, gets aipu's entries at its dirtied_when.  A
 * walk of every dirty inode, each writeback context's lists under its
 * list_lock (as wb_writeback()'s queue_io() moves them), once.
 */
static void adopt_fn(struct work_struct *w)
{
	struct look l = { .mode = LOOK_ADOPT, .now = jiffies };
	bool read = look_all(&l), ok = read && !l.failed;

	spin_lock(&answer_lock);
	adopt_state = ok ? ADOPT_DONE : ADOPT_FAILED;
	spin_unlock(&answer_lock);
	complete_all(&adopt_done);
	if (!ok)
		pr_warn("%s: data dirtied before the load stays Linux's to write\n",
			read ? "no tracking memory for an inode dirty at load" :
			       "cannot read /" FILESYSTEMS);
}

/*
 * Process context (@tr's flusher): a probe found no tracker memory for a
 * mapping of @bdi, whose queue is @tr, between its misses @since and
 * @upto.  Adopt @bdi's dirty inodes that may hold such pages, so that the
 * fallback stays on this device: each inode bounded as a whole from its
 * dirtied_when, as at load.  False if one found no memory either.
 */
bool aipu_handover_adopt_bdi(struct backing_dev_info *bdi,
			     struct aipu_queue *tr, u16 since, u16 upto)
{
	struct look l = {
		.mode = LOOK_ADOPT, .now = jiffies,
		.missed = tr, .since = since, .upto = upto,
	};

	look_bdi(&l, bdi);
	return !l.failed;
}

/* How long the load waits for the adoption: an umount may hold it. */
#define AIPU_ADOPT_WAIT_MS 1000

/*
 * Process context, the probes in: adopt what is dirty, and wait for it a
 * while, so that with handover_ms 0 Linux's periodic writeback goes off at
 * the load.  A work item, as the look: the walk takes every super block's
 * s_umount, and an umount stuck on a dead device must not hold insmod;
 * then the tick, once a period, switches it off when the walk is done.
 */
void aipu_handover_adopt(void)
{
	queue_work(system_unbound_wq, &adopt_work);
	wait_for_completion_timeout(&adopt_done,
				    msecs_to_jiffies(AIPU_ADOPT_WAIT_MS));
}

/*
 * Whether the adoption has run (so that only what the probes see is
 * dirtied from now on), and in *@failed whether it left inodes to Linux.
 */
bool aipu_handover_adopted(bool *failed)
{
	bool done;

	spin_lock(&answer_lock);
	done = adopt_state != ADOPT_PENDING;
	*failed = adopt_state == ADOPT_FAILED;
	spin_unlock(&answer_lock);
	return done;
}

/*
 * Process context.  Whether Linux still holds an inode dirtied at or before
 * @mark, as far as the last look knew; true until a look begun after @mark's
 * jiffy says otherwise, and while true another look is asked for (at once
 * if none began after @mark, else in a second).
 */
bool aipu_handover_holds(unsigned long mark)
{
	bool stale, holds;

	spin_lock(&answer_lock);
	/* A look begun in @mark's own jiffy may have passed a later dirtying. */
	stale = !answered || !time_after(answer_at, mark);
	holds = stale || (answer.found && !time_after(answer.oldest, mark));
	spin_unlock(&answer_lock);
	if (holds)
		queue_delayed_work(system_unbound_wq, &look_work,
				   stale ? 0 : HZ);
	return holds;
}

/*
 * No look runs once this returns, and a re-arm asked for has run; the
 * caller asks for neither after.
 */
void aipu_handover_stop(void)
{
	cancel_work_sync(&adopt_work);
	cancel_delayed_work_sync(&look_work);
	flush_work(&rearm_work);
}
