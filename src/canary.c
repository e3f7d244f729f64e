// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: is the eviction probe still armed?
 *
 * A tracker may live only as long as its inode, and the kprobe on
 * clear_inode() (src/hook.c) is what tells aipu an inode goes.  On
 * Debian's kernels that kprobe sits on the function's ftrace call and can
 * be disarmed from outside while the tracepoints go on firing:
 * "sysctl kernel.ftrace_enabled=0", "echo 0 >
 * /sys/kernel/debug/kprobes/enabled".  Evictions it misses leave trackers
 * whose inodes are freed, and the flusher would pin and write them.
 *
 * So once a period the tick evicts an inode of its own, from a pseudo file
 * system mounted for nothing else (nothing is ever dirtied there), and
 * checks that the probe saw it: iput() of an unhashed inode evicts it
 * before it returns.  At load, a probe that does not fire fails insmod
 * (src/main.c).  Later, if the probe did not see it, aipu stops tracking (the probes
 * return at once), goes back to policy kernel with Linux's periodic
 * writeback (every page aipu tracked is still dirty in the page cache, its
 * inode on its device's dirty list: Linux's expiry finds it), forgets every
 * tracker without touching its mapping (aipu_queue_kill(), as an eviction
 * does), and says so once in the kernel log.  Arming the probe again does
 * not undo it: which evictions it missed is not known.  Reload aipu.
 */
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/cache.h>
#include <linux/rcupdate.h>

#include "aipu.h"

#define AIPU_CANARY_MAGIC 0x61697075	/* "aipu" */

/* Read by the probes at every dirtying; written once, if ever. */
bool aipu_evict_lost __read_mostly;

static struct vfsmount *canary_mnt;
static struct inode *canary;		/* the tick's inode while it goes */
static bool canary_seen;

static int canary_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, AIPU_CANARY_MAGIC) ? 0 : -ENOMEM;
}

/*
 * Not registered, so not mountable from user space; no owner, so the mount
 * holds no reference on the module (kern_unmount() at exit ends it).
 */
static struct file_system_type canary_fs = {
	.name = "aipu_canary",
	.init_fs_context = canary_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* The eviction probe, any context: true if @inode is the canary. */
bool aipu_canary_evicted(struct inode *inode)
{
	if (inode != READ_ONCE(canary))
		return false;
	WRITE_ONCE(canary_seen, true);
	return true;
}

static void forget_everything(void)
{
	unsigned long pages = 0;
	struct aipu_stats s;
	struct aipu_dev *d;
	unsigned long o;

	/* Only the tick removes devices, and no probe adds one any more. */
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d)) {
		aipu_dev_snapshot(d, &s, &o);
		pages += s.pages_tracked;
		aipu_mapping_forget(d);
	}
	pr_err("the eviction probe on clear_inode() was disarmed (kernel.ftrace_enabled or debugfs kprobes/enabled): policy kernel, %lu tracked pages left to Linux's writeback; reload aipu to use it again\n",
	       pages);
}

/*
 * No probe records once aipu_evict_lost is seen, and every probe that
 * began before has returned after the grace period (tracepoint and kprobe
 * handlers run with preemption off): nothing makes a tracker after that.
 */
static void lose(void)
{
	WRITE_ONCE(aipu_evict_lost, true);
	synchronize_rcu();
	aipu_knobs_policy_kernel();
	aipu_kupdate_update();
	forget_everything();
}

/* Evict an inode of our own: false if the probe did not see it go. */
bool aipu_canary_flies(void)
{
	struct inode *inode;

	inode = alloc_anon_inode(canary_mnt->mnt_sb);
	if (IS_ERR(inode))
		return true;	/* no memory now: next period */
	WRITE_ONCE(canary_seen, false);
	WRITE_ONCE(canary, inode);
	iput(inode);
	WRITE_ONCE(canary, NULL);
	return READ_ONCE(canary_seen);
}

/* The tick, once a period, process context. */
void aipu_canary_check(void)
{
	if (!READ_ONCE(aipu_evict_lost) && !aipu_canary_flies())
		lose();
}

int aipu_canary_init(void)
{
	canary_mnt = kern_mount(&canary_fs);
	if (IS_ERR(canary_mnt)) {
		int ret = PTR_ERR(canary_mnt);

		canary_mnt = NULL;
		pr_err("cannot mount the eviction canary's file system: %d\n",
		       ret);
		return ret;
	}
	return 0;
}

/* After the tick has stopped. */
void aipu_canary_exit(void)
{
	if (canary_mnt)
		kern_unmount(canary_mnt);
	canary_mnt = NULL;
}
