// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: lazytime timestamps.
 *
 * On a lazytime mount a timestamp change alone only marks the inode
 * I_DIRTY_TIME; Linux writes such timestamps from its periodic writeback
 * once they are dirtytime_expire_seconds old (12 h by default).  With a
 * writing policy aipu turns that periodic writeback off, so nothing else
 * would write them before sync or umount: aipu keeps each inode's first
 * such dirtying on its device's times list (src/queue/queue.c) and, once it is
 * as old as the sysctl says, asks for the inode's metadata alone
 * (sync_inode_metadata(), WB_SYNC_NONE), which writes the timestamps when
 * the kernel's own test in __writeback_single_inode() finds them expired.
 * Timestamps still dirty after that (the kernel saw a later dirtying, the
 * inode was busy) are tried again the next period.
 */
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"

#define DIRTYTIME_SYSCTL "proc/sys/vm/dirtytime_expire_seconds"
/* Linux's default, until the sysctl has been read. */
#define DIRTYTIME_DEFAULT_S (12 * 60 * 60)
/* Inodes a pass writes, one lock hold each. */
#define AIPU_TIMES_PER_PASS 1024

static unsigned int expire_s = DIRTYTIME_DEFAULT_S;

/* Process context (the tick): read vm.dirtytime_expire_seconds. */
void aipu_lazytime_update(void)
{
	unsigned int v;
	char buf[24];

	if (aipu_proc_read(DIRTYTIME_SYSCTL, buf, sizeof(buf)) <= 0)
		return;
	if (!kstrtouint(strim(buf), 10, &v))
		WRITE_ONCE(expire_s, v);
}

/*
 * @time: @r's, read when it was taken (a dirtying meanwhile may move it
 * under the locks, for the requeue; the pages this write dirties are of the
 * dirtying being written).
 */
static void times_one(struct aipu_dev *d, struct aipu_entry *r,
		      unsigned long time, bool write)
{
	bool written = false, dirty = false;
	unsigned long flags;
	struct aipu_pin p;

	switch (aipu_pin(r->t, &p, AIPU_PIN_REF)) {
	case AIPU_PIN_OK:
		dirty = aipu_inode_state(p.inode) & I_DIRTY_TIME;
		if (write && dirty && aipu_write_meta(d, p.inode, time)) {
			dirty = aipu_inode_state(p.inode) & I_DIRTY_TIME;
			written = !dirty;
		}
		aipu_unpin(&p, false);
		break;
	case AIPU_PIN_BUSY:
	case AIPU_PIN_UNMOUNTING:
		dirty = true;
		break;
	case AIPU_PIN_GONE:
		break;
	}
	flags = aipu_dev_lock(d);
	if (dirty)
		aipu_queue_requeue_times(&d->tr, r);
	d->st.times_written += written;
	aipu_queue_done_entry(&d->tr, r);
	aipu_dev_unlock(d, flags);
}

/*
 * Flusher context, each pass, before phase 2: write the timestamps that have
 * expired.  While Linux's periodic writeback is on (policy "kernel", the
 * handover after load) it writes them itself, within its interval: the
 * entries wait until it has.
 */
void aipu_lazytime_write(struct aipu_dev *d)
{
	unsigned long cutoff = jiffies - (unsigned long)READ_ONCE(expire_s) * HZ;
	unsigned long flags;
	bool write = aipu_kupdate_is_off();
	unsigned long time = 0;
	struct aipu_entry *r;
	unsigned int n;

	for (n = 0; n < AIPU_TIMES_PER_PASS && !kthread_should_stop(); n++) {
		flags = aipu_dev_lock(d);
		r = aipu_queue_take_times(&d->tr, cutoff);
		if (r)
			time = r->time;
		aipu_dev_unlock(d, flags);
		if (!r)
			break;
		times_one(d, r, time, write);
		cond_resched();
	}
}
