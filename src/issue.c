// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: phase 2's writes (Mogul's bflush_smooth() issuing its pending
 * list), one take at a time: a file's whole-file or metadata entry, or a
 * batch of its due pages.
 *
 * A batch is merged into extents, its inode pinned once (I_SYNC and the
 * super block's s_umount, shared: src/mapping.c) and each extent started
 * as asynchronous writeback (WB_SYNC_NONE); this may block in the block
 * layer.  Pages that stay dirty (locked, already under writeback, declined)
 * keep their time and are retried next period; pages found clean are
 * dropped; what happened is counted in the device's stat in one hold.
 *
 * The caller is the device's flusher (src/flusher.c) or, for a file whose
 * inode belongs to a cgroup's writeback context, that context's worker
 * (src/wbq.c): so everything here keeps its state in the take and the
 * device, under the device's lock, and none in the thread, but the
 * metadata write's inheritor, which only the flusher writes.
 */
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/writeback.h>

#include "aipu.h"
#include "aipu_compat.h"
#include "aipu_trace.h"

/* The longest a batch's counts wait to reach stat. */
#define AIPU_HANDBACK_JIFFIES (HZ / 10)

/*
 * Per take (an entry or a batch): what happened to its pages, added to the
 * device's counters in one hold at the end.
 */
struct outcome {
	unsigned long written, clean, meta, retried, late, refused;
	unsigned long age[AIPU_AGE_BUCKETS];	/* written, by age */
	unsigned long uncounted;		/* in @age, not yet in stat */
};

/* @written pages first dirtied at @time went out now. */
static void outcome_written(struct outcome *o, unsigned long written,
			    unsigned long time)
{
	o->written += written;
	o->uncounted += written;
	o->age[aipu_age_bucket(jiffies_to_msecs(jiffies - time))] += written;
}

/*
 * Taken pages go back to the queue in stretches, each written or found
 * clean (done) or still dirty (retried at its time in the next pass), a
 * hold's worth at a time (aipu_queue_handback_add()); the pages written
 * meanwhile (@o->age) are counted in the same hold, and at least every
 * AIPU_HANDBACK_JIFFIES, so stat follows a batch to a slow device.
 */
struct handback {
	struct aipu_handback hb;
	struct aipu_dev *d;
	struct outcome *o;
	unsigned long flushed;
};

static void handback_flush(struct handback *h)
{
	unsigned long flags;

	if (!h->hb.n && !h->o->uncounted)
		return;
	flags = aipu_dev_lock(h->d);
	aipu_queue_handback(&h->d->tr, &h->hb);
	aipu_dev_written(h->d, h->o->age);
	aipu_dev_unlock(h->d, flags);
	memset(h->o->age, 0, sizeof(h->o->age));
	h->o->uncounted = 0;
	h->flushed = jiffies;
}

static void handback_full(struct aipu_handback *hb)
{
	handback_flush(container_of(hb, struct handback, hb));
}

static void handback_add(struct handback *h, pgoff_t index, unsigned long nr,
			 unsigned long time, bool dirty)
{
	aipu_queue_handback_add(&h->hb, index, nr, time, dirty, handback_full);
}

/*
 * Hand back taken pages [start, end) first dirtied at @time or later: those
 * still dirty to be retried at @retry (@time, or later for a file system
 * that refused them), the rest done.  Returns how many are dirty,
 * including those dirtied again meanwhile, which have newer entries (the
 * queue gives them no retry).  The folio's dirty flag, not the dirty tag,
 * decides: the probe fires after the flag is set but before the tag is, and
 * staging may take that very page at once, so a page skipped in that window
 * would stay dirty untracked (a tag walk here lost a page so in t_stage).
 */
static unsigned long handback_range(struct handback *h,
				    struct address_space *m, pgoff_t start,
				    pgoff_t end, unsigned long time,
				    unsigned long retry)
{
	pgoff_t idx = start, pos = start;
	unsigned long dirty = 0;
	struct folio_batch fb;
	unsigned int i;

	folio_batch_init(&fb);
	while (idx < end && filemap_get_folios(m, &idx, end - 1, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++) {
			struct folio *f = fb.folios[i];
			pgoff_t fs = max(f->index, pos);
			pgoff_t fe = min(f->index + folio_nr_pages(f), end);

			if (fs >= fe || !folio_test_dirty(f))
				continue;
			if (fs > pos)
				handback_add(h, pos, fs - pos, time, false);
			handback_add(h, fs, fe - fs, retry, true);
			dirty += fe - fs;
			pos = fe;
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	if (end > pos)
		handback_add(h, pos, end - pos, time, false);
	return dirty;
}

/*
 * ->writepages counts a page it declined (folio_redirty_for_writepage()) as
 * written; the probe counts such pages in @t->declined while a batch or an
 * entry of @t is out.  Only a take of a file with nothing out resets the
 * count (take_pages()), and one writer at a time writes a file (the I_SYNC
 * pin), so the read of a counter that only grows meanwhile needs no lock.
 */
static unsigned long declined(struct aipu_file *t)
{
	return READ_ONCE(t->declined);
}

/*
 * Write at most @nr of pages [start, end) of @m, first dirtied at @time or
 * later; returns how many went to writeback, and in *@err what the file
 * system said.
 */
static unsigned long write_range(struct aipu_dev *d, struct aipu_file *t,
				 struct address_space *m, pgoff_t start,
				 pgoff_t end, unsigned long nr,
				 unsigned long time, int *err)
{
	unsigned long before = declined(t), written;

	written = aipu_write_range(m, start, end, nr, err);
	written -= min(written, declined(t) - before);
	aipu_trace_issue(d, m, start, end, written, time);
	if (written && READ_ONCE(aipu_write_alloc) == AIPU_WRITE_PURGE)
		aipu_purge_add(d, t, start, end);
	return written;
}

/* Is @now past the bound of pages first dirtied at @time? */
static bool past_bound(unsigned long time, unsigned long now)
{
	return time_after(now, time +
			  msecs_to_jiffies(READ_ONCE(aipu_max_age_ms) +
					   READ_ONCE(aipu_period_ms)));
}

/*
 * Issued later than the bound promises (max_batch, a slow device, a late
 * tick); @taken is when phase 2 took them, before the write's own time.
 */
static unsigned long late_pages(unsigned long time, unsigned long written,
				unsigned long taken)
{
	if (!written || !aipu_policy_bounded() || !past_bound(time, taken))
		return 0;
	return written;
}

/* One merged extent of a batch, its inode pinned. */
static void issue_extent(struct handback *h, struct address_space *m,
			 const struct aipu_extent *x, bool write,
			 unsigned long taken, struct outcome *o)
{
	pgoff_t start = x->index, end = x->index + x->nr;
	unsigned long written = 0, dirty, retry = x->time;
	int err = 0;

	if (write)
		written = write_range(h->d, h->hb.t, m, start, end, x->nr,
				      x->time, &err);
	/*
	 * Pages the file system refused (->writepages failed: a shut-down or
	 * read-only file system, a dead device) are dated now, so they are
	 * due again one max_age later, not next period, which would write
	 * to it, and count, every page every period for ever: Linux's
	 * redirty_tail() gives such an inode a new dirtied_when the same way.
	 */
	if (err < 0)
		retry = jiffies;
	dirty = handback_range(h, m, start, end, x->time, retry);
	outcome_written(o, written, x->time);
	o->retried += dirty;
	if (err < 0)
		o->refused += dirty;
	o->late += late_pages(x->time, written, taken);
	if (x->nr > written + dirty)
		o->clean += x->nr - written - dirty;
	if (time_after_eq(jiffies, h->flushed + AIPU_HANDBACK_JIFFIES))
		handback_flush(h);
}

/* Hand back extents @x[0..@n) at once, as still dirty or as done. */
static void handback_all(struct handback *h, const struct aipu_extent *x,
			 unsigned int n, bool dirty, struct outcome *o)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		handback_add(h, x[i].index, x[i].nr, x[i].time, dirty);
		if (dirty)
			o->retried += x[i].nr;
	}
}

/* The oldest first-dirty time of extents @x[0..@n). */
static unsigned long batch_time(const struct aipu_extent *x, unsigned int n)
{
	unsigned long time = x[0].time;
	unsigned int i;

	for (i = 1; i < n; i++)
		if (time_before(x[i].time, time))
			time = x[i].time;
	return time;
}

/*
 * Umount or remount holds the super block.  A remount is over by the next
 * period: put the pages back.  Once they are late, the wait is long (an
 * umount writing a backlog to a slow disk, which writes the file too):
 * bound the whole file at its oldest time and free its queue rather than
 * put each of its pages back every period.
 */
static void park(struct aipu_dev *d, struct aipu_file *t,
		 unsigned long time)
{
	unsigned long flags, freed;

	if (!past_bound(time, jiffies))
		return;
	do {
		flags = aipu_dev_lock(d);
		freed = aipu_queue_park(&d->tr, t, time, AIPU_DRAIN_BATCH);
		aipu_dev_unlock(d, flags);
	} while (freed == AIPU_DRAIN_BATCH);
}

/* Pinned: each extent written, until an umount or rmmod wants the file. */
static void write_extents(struct handback *h, struct aipu_pin *p,
			  const struct aipu_extent *x, unsigned int n,
			  bool write, unsigned long taken)
{
	struct address_space *m = (struct address_space *)h->hb.t->key;
	unsigned int i;

	/*
	 * A batch holds s_umount shared: an umount or remount waiting for it
	 * (a slow device can take minutes for a batch) ends the batch, and
	 * the next pass finds the file unmounting.
	 */
	for (i = 0; i < n && !READ_ONCE(h->d->stopping) &&
	     !rwsem_is_contended(&p->sb->s_umount); i++)
		issue_extent(h, m, &x[i], write, taken, h->o);
	/* Stopped: what is left is not written, so still dirty. */
	handback_all(h, x + i, n - i, true, h->o);
}

/*
 * Phase 2's batch of @t's pages, extents @x[0..@n) (merged): pinned once,
 * each extent written (@how AIPU_ISSUE_WRITE) or only looked at (CHECK,
 * under "kernel"), or all put back untouched (BUSY).  Drops the batch's
 * hold on @t.  Returns the pages written.
 */
unsigned long aipu_issue_batch(struct aipu_dev *d, struct aipu_file *t,
			       const struct aipu_extent *x, unsigned int n,
			       enum aipu_issue_how how)
{
	bool write = how == AIPU_ISSUE_WRITE;
	unsigned long taken = jiffies, flags;
	struct outcome o = { 0 };
	struct handback h = { .hb.t = t, .d = d, .o = &o, .flushed = taken };
	struct aipu_pin p;

	switch (how == AIPU_ISSUE_BUSY ? AIPU_PIN_BUSY :
		aipu_pin(t, &p, AIPU_PIN_SYNC)) {
	case AIPU_PIN_OK:
		write_extents(&h, &p, x, n, write, taken);
		handback_flush(&h);
		aipu_unpin(&p, write);
		break;
	case AIPU_PIN_UNMOUNTING:
		park(d, t, batch_time(x, n));
		fallthrough;
	case AIPU_PIN_BUSY:
		handback_all(&h, x, n, true, &o);
		break;
	case AIPU_PIN_GONE:
		handback_all(&h, x, n, false, &o);
		break;
	}
	handback_flush(&h);
	flags = aipu_dev_lock(d);
	/* Under "kernel" nothing was issued: a re-check is not a retry. */
	if (how != AIPU_ISSUE_CHECK)
		d->st.pages_retried += o.retried;
	d->st.pages_clean += o.clean;
	d->st.pages_late += o.late;
	d->st.pages_refused += o.refused;
	aipu_queue_put(&d->tr, t);
	aipu_dev_unlock(d, flags);
	return o.written;
}

/*
 * A whole-file write goes in calls of Linux's smallest writeback chunk
 * (MIN_WRITEBACK_PAGES, writeback_chunk_size()), 4 MiB, as Linux's flusher
 * writes an inode a chunk at a time: between two, an umount or rmmod that
 * wants the file ends the write, and at most a period of them follow one
 * another (a writer dirtying as fast as the device writes would otherwise
 * keep the flusher on one file).
 */
#define AIPU_WHOLE_CHUNK (SZ_4M >> PAGE_SHIFT)

enum whole_result {
	WHOLE_CLEAN,	/* nothing left dirty */
	WHOLE_DIRTY,	/* covered, pages dirty after: dirtied since */
	WHOLE_AGAIN,	/* not covered: back at its old time */
	WHOLE_REFUSED,	/* ->writepages failed: back one max_age from now */
};

static bool whole_stop(struct aipu_dev *d, struct aipu_pin *p,
		       unsigned long until)
{
	return READ_ONCE(d->stopping) ||
	       rwsem_is_contended(&p->sb->s_umount) ||
	       time_after_eq(jiffies, until);
}

/*
 * The whole file, its inode pinned (@p): written in chunks (or, not
 * @write, only looked at) until none is left to write.  A call that writes
 * less than a chunk found no more dirty pages it could write: pages still
 * dirty then were dirtied meanwhile (they take the oldest such dirtying's
 * time: aipu_queue_requeue_whole_since()) or skipped (under writeback, locked:
 * the old time).  A file system that refuses the write gets it again one
 * max_age later, as refused page runs do (issue_extent()).
 */
static enum whole_result issue_whole(struct aipu_dev *d, struct aipu_entry *e,
				     struct aipu_pin *p, bool write,
				     struct outcome *o)
{
	struct address_space *m = (struct address_space *)e->t->key;
	unsigned long until, n;
	int err = 0;

	until = jiffies + msecs_to_jiffies(READ_ONCE(aipu_period_ms));
	while (write) {
		n = write_range(d, e->t, m, 0, ULONG_MAX, AIPU_WHOLE_CHUNK,
				e->time, &err);
		outcome_written(o, n, e->time);
		if (err < 0)
			return WHOLE_REFUSED;
		if (n < AIPU_WHOLE_CHUNK)
			return mapping_tagged(m, PAGECACHE_TAG_DIRTY) ?
			       WHOLE_DIRTY : WHOLE_CLEAN;
		if (whole_stop(d, p, until))
			break;
		cond_resched();
	}
	return mapping_tagged(m, PAGECACHE_TAG_DIRTY) ? WHOLE_AGAIN :
							WHOLE_CLEAN;
}

/*
 * Write @inode's metadata (sync_inode_metadata(), WB_SYNC_NONE) for an
 * entry of @time: a buffer the write dirties inherits @time (hook.c), so
 * it goes out in this pass.  Not while the handover owns the inode: see
 * aipu_handover_owns_locked().  Returns true if it wrote.
 */
bool aipu_write_meta(struct aipu_dev *d, struct inode *inode,
		     unsigned long time)
{
	if (aipu_handover_owns(inode))
		return false;
	WRITE_ONCE(d->inherit_time, time);
	WRITE_ONCE(d->inheritor, current);
	sync_inode_metadata(inode, 0);
	WRITE_ONCE(d->inheritor, NULL);
	return true;
}

static bool issue_meta(struct aipu_dev *d, struct aipu_entry *e,
		       struct inode *inode, bool write, struct outcome *o)
{
	if (write && (aipu_inode_state(inode) & I_DIRTY_INODE) &&
	    aipu_write_meta(d, inode, e->time))
		o->meta = 1;
	return aipu_inode_state(inode) & I_DIRTY_INODE;
}

/*
 * A whole-file or metadata entry phase 2 took, written, looked at or put
 * back as aipu_issue_batch() says of @how.  Returns the pages written.
 */
unsigned long aipu_issue_entry(struct aipu_dev *d, struct aipu_entry *e,
			       enum aipu_issue_how how)
{
	bool meta = e->kind == AIPU_ENTRY_META, again = false, dirty = false;
	bool refused = false;
	bool write = how == AIPU_ISSUE_WRITE;
	unsigned long taken = jiffies, time = READ_ONCE(e->time), flags;
	enum whole_result wr;
	struct outcome o = { 0 };
	struct aipu_pin p;
	enum aipu_pin_result pin = AIPU_PIN_BUSY;

	if (how != AIPU_ISSUE_BUSY && !READ_ONCE(d->stopping))
		pin = aipu_pin(e->t, &p, meta ? AIPU_PIN_REF : AIPU_PIN_SYNC);
	switch (pin) {
	case AIPU_PIN_OK:
		if (meta) {
			again = issue_meta(d, e, p.inode, write, &o);
		} else {
			wr = issue_whole(d, e, &p, write, &o);
			again = wr == WHOLE_AGAIN;
			dirty = wr == WHOLE_DIRTY;
			refused = wr == WHOLE_REFUSED;
		}
		aipu_unpin(&p, write && !meta);
		break;
	case AIPU_PIN_BUSY:
	case AIPU_PIN_UNMOUNTING:
		again = true;
		break;
	case AIPU_PIN_GONE:
		break;
	}
	flags = aipu_dev_lock(d);
	if (again)
		aipu_queue_requeue_entry(&d->tr, e);
	else if (dirty)
		aipu_queue_requeue_whole_since(&d->tr, e);
	else if (refused)
		aipu_queue_requeue_whole_refused(&d->tr, e, jiffies);
	aipu_dev_written(d, o.age);
	d->st.meta_written += o.meta;
	d->st.pages_late += late_pages(time, o.written, taken);
	aipu_queue_done_entry(&d->tr, e);
	aipu_dev_unlock(d, flags);
	return o.written;
}
