// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: Write Purge (Akyurek & Salem, "Management of Partially Safe
 * Buffers", section II).
 *
 * With write_alloc=purge, a range aipu wrote is dropped from the page cache
 * once its writeback has completed, so data that was only written stops
 * taking cache away from data that is read ("update theft"; Kotz & Ellis's
 * toss-immediately for streaming writers).  The flusher does not wait for
 * the I/O: it remembers the range and comes back on later passes.
 * invalidate_mapping_pages() drops only folios that are clean, unlocked,
 * unmapped and not under writeback, so a page dirtied again is never lost.
 */
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/slab.h>

#include "aipu.h"
#include "aipu_compat.h"

/* Passes to wait for writeback to finish before giving up on a range. */
#define AIPU_PURGE_TRIES 10

struct purge {
	struct list_head list;
	struct aipu_file *t;
	pgoff_t start, end;
	unsigned int tries;
};

/*
 * Each device's list of ranges (d->purges): added to by whoever wrote them
 * (the flusher, or a cgroup context's worker: src/wbq.c) under the
 * device's lock; worked through by the flusher, which takes the list out
 * first.
 */

static void count(struct aipu_dev *d, unsigned long purged,
		  unsigned long kept)
{
	unsigned long flags = aipu_dev_lock(d);

	d->st.pages_purged += purged;
	d->st.pages_not_purged += kept;
	aipu_dev_unlock(d, flags);
}

/* Process context, with the tracker held by the batch just issued. */
void aipu_purge_add(struct aipu_dev *d, struct aipu_file *t,
		    pgoff_t start, pgoff_t end)
{
	struct purge *p = kmalloc(sizeof(*p), GFP_KERNEL | __GFP_NOWARN);
	unsigned long flags;

	if (!p) {
		count(d, 0, end - start);
		return;
	}
	p->t = t;
	p->start = start;
	p->end = end;
	p->tries = 0;
	flags = aipu_dev_lock(d);
	aipu_queue_hold(t);
	list_add_tail(&p->list, &d->purges);
	aipu_dev_unlock(d, flags);
}

static unsigned long cached_pages(struct address_space *m, pgoff_t start,
				  pgoff_t end)
{
	unsigned long n = 0;
	struct folio_batch fb;
	unsigned int i;

	folio_batch_init(&fb);
	while (start < end && filemap_get_folios(m, &start, end - 1, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++)
			n += folio_nr_pages(fb.folios[i]);
		folio_batch_release(&fb);
		cond_resched();
	}
	return n;
}

/*
 * A clean, unmapped folio that invalidate_mapping_pages() kept for an extra
 * reference: most often the per-CPU LRU-add batch of the CPU that wrote it,
 * which only lru_add_drain_all() (not exported) would empty.
 * invalidate_inode_pages2_range() removes it under its lock whatever the
 * references, and still keeps it if it is dirty again by then.
 */
static bool held_only(struct folio *f)
{
	return !folio_test_dirty(f) && !folio_test_writeback(f) &&
	       !folio_mapped(f);
}

static unsigned long purge_held(struct address_space *m, pgoff_t start,
				pgoff_t end)
{
	unsigned long purged = 0;
	struct folio_batch fb;
	unsigned int i;

	folio_batch_init(&fb);
	while (start < end && filemap_get_folios(m, &start, end - 1, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++) {
			struct folio *f = fb.folios[i];
			pgoff_t last = f->index + folio_nr_pages(f) - 1;

			if (held_only(f) &&
			    !invalidate_inode_pages2_range(m, f->index, last))
				purged += folio_nr_pages(f);
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	return purged;
}

/* Returns true when the range is finished with. */
static bool purge_one(struct aipu_dev *d, struct purge *p,
		      struct address_space *m)
{
	loff_t first = (loff_t)p->start << PAGE_SHIFT;
	loff_t last = p->end == ULONG_MAX ? LLONG_MAX :
		      ((loff_t)p->end << PAGE_SHIFT) - 1;
	unsigned long purged = invalidate_mapping_pages(m, p->start,
							p->end - 1);

	if (++p->tries < AIPU_PURGE_TRIES &&
	    filemap_range_has_writeback(m, first, last)) {
		count(d, purged, 0);
		return false;
	}
	if (p->end == ULONG_MAX) {
		count(d, purged, 0);
		return true;
	}
	purged += purge_held(m, p->start, p->end);
	count(d, purged, cached_pages(m, p->start, p->end));
	return true;
}

static bool purge_try(struct aipu_dev *d, struct purge *p)
{
	struct aipu_pin pin;
	bool done;

	switch (aipu_pin(p->t, &pin, AIPU_PIN_SYNC)) {
	case AIPU_PIN_OK:
		done = purge_one(d, p, (struct address_space *)p->t->key);
		aipu_unpin(&pin, false);
		return done;
	case AIPU_PIN_BUSY:
	case AIPU_PIN_UNMOUNTING:
		return ++p->tries >= AIPU_PURGE_TRIES;
	default:
		return true;	/* evicted: nothing left to drop */
	}
}

static void purge_free(struct aipu_dev *d, struct purge *p)
{
	unsigned long flags = aipu_dev_lock(d);

	aipu_queue_put(&d->tr, p->t);
	aipu_dev_unlock(d, flags);
	list_del(&p->list);
	kfree(p);
}

/* Each pass, before phase 1: drop what last passes wrote. */
void aipu_purge_run(struct aipu_dev *d)
{
	struct purge *p, *tmp;
	unsigned long flags;
	LIST_HEAD(run);

	flags = aipu_dev_lock(d);
	list_splice_init(&d->purges, &run);
	aipu_dev_unlock(d, flags);
	list_for_each_entry_safe(p, tmp, &run, list)
		if (purge_try(d, p))
			purge_free(d, p);
	/* What is left is tried again next pass, before what came since. */
	flags = aipu_dev_lock(d);
	list_splice(&run, &d->purges);
	aipu_dev_unlock(d, flags);
}

/* Flusher and workers stopped: forget the ranges, keep the pages. */
void aipu_purge_exit(struct aipu_dev *d)
{
	struct purge *p, *tmp;

	list_for_each_entry_safe(p, tmp, &d->purges, list)
		purge_free(d, p);
}
