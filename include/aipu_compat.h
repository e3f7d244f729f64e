/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The places where the kernels aipu builds for (Debian's 6.1, 6.12 and 7.2)
 * differ for aipu.  Differences are detected by feature, not by version
 * number, so that a distribution kernel with backports builds too: a macro
 * the kernel defines, or a compile test (conftest/NAME.c, run by Kbuild,
 * defines AIPU_HAVE_NAME in the generated aipu_config.h).
 */
#ifndef AIPU_COMPAT_H
#define AIPU_COMPAT_H

#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/pagemap.h>
#include <linux/ptrace.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/writeback.h>

#include "aipu_config.h"

/* struct folio_batch: linux/pagevec.h until 7.2 renamed it. */
#ifdef AIPU_HAVE_FOLIO_BATCH_H
#include <linux/folio_batch.h>
#else
#include <linux/pagevec.h>
#endif

/*
 * The inode's state flags (I_NEW, I_FREEING, I_DIRTY_*...), read without
 * i_lock.  7.2 wraps them in struct inode_state_flags.
 */
static inline unsigned long aipu_inode_state(struct inode *inode)
{
#ifdef AIPU_HAVE_INODE_STATE_READ_ONCE
	return inode_state_read_once(inode);
#else
	return READ_ONCE(inode->i_state);
#endif
}

#ifndef AIPU_HAVE_FILEMAP_FDATAWRITE_WBC
#ifndef AIPU_HAVE_FILEMAP_FLUSH_RANGE
#error "aipu needs filemap_fdatawrite_wbc() or filemap_flush_range(): see generated/aipu_config.h"
#endif
/* Pages of [start, end) of @m that carry the dirty tag. */
static inline unsigned long aipu_dirty_tagged(struct address_space *m,
					      pgoff_t start, pgoff_t end)
{
	unsigned long n = 0;
	struct folio_batch fb;
	pgoff_t idx = start;
	unsigned int i;

	folio_batch_init(&fb);
	while (idx < end && filemap_get_folios_tag(m, &idx, end - 1,
						   PAGECACHE_TAG_DIRTY, &fb)) {
		for (i = 0; i < folio_batch_count(&fb); i++) {
			struct folio *f = fb.folios[i];
			pgoff_t fs = max(f->index, start);
			pgoff_t fe = min(f->index + folio_nr_pages(f), end);

			if (fs < fe)
				n += fe - fs;
		}
		folio_batch_release(&fb);
		cond_resched();
	}
	return n;
}
#endif

/*
 * Start asynchronous (WB_SYNC_NONE) writeback of the pages [start, end) of
 * @m, @end ULONG_MAX meaning to the end of the file, as Linux's own flusher
 * writes; pages locked or already under writeback are skipped.  Returns the
 * pages written.
 *
 * 6.1 and 6.12 export filemap_fdatawrite_wbc(), whose writeback_control
 * counts them.  7.2 exports only filemap_flush_range(), the same writeback
 * without a count (filemap_flush_nr(), with one, is exported to btrfs
 * alone): the count is then the range's dirty-tagged pages before the call
 * less those after it, which also counts a page someone else cleaned in
 * between and misses one dirtied again in between.
 */
static inline unsigned long aipu_write_range(struct address_space *m,
					     pgoff_t start, pgoff_t end)
{
	bool whole = end == ULONG_MAX;
	loff_t lstart = (loff_t)start << PAGE_SHIFT;
	loff_t lend = whole ? LLONG_MAX : ((loff_t)end << PAGE_SHIFT) - 1;
#ifdef AIPU_HAVE_FILEMAP_FDATAWRITE_WBC
	struct writeback_control wbc = {
		.sync_mode = WB_SYNC_NONE,
		.nr_to_write = whole ? LONG_MAX : end - start,
		.range_start = lstart,
		.range_end = lend,
	};
	long budget = wbc.nr_to_write;

	filemap_fdatawrite_wbc(m, &wbc);
	return budget - wbc.nr_to_write;
#else
	unsigned long before, after;

	before = aipu_dirty_tagged(m, start, end);
	if (!before)
		return 0;
	filemap_flush_range(m, lstart, lend);
	after = aipu_dirty_tagged(m, start, end);
	return before > after ? before - after : 0;
#endif
}

/*
 * trylock_super() is not exported: this is its test, for a super block whose
 * s_umount we hold shared.  6.6 added SB_DYING for a shutdown in progress.
 */
static inline bool aipu_sb_usable(struct super_block *sb)
{
#ifdef SB_DYING
	if (sb->s_flags & SB_DYING)
		return false;
#endif
	return sb->s_root && (sb->s_flags & SB_BORN);
}

/* First argument of a probed function, at its entry. */
static inline unsigned long aipu_kprobe_arg0(struct pt_regs *regs)
{
	return regs_get_kernel_argument(regs, 0);
}

typedef unsigned long (*aipu_shrink_fn)(struct shrinker *s,
				       struct shrink_control *sc);

/*
 * 6.7 replaced register_shrinker() on a caller's struct with shrinker_alloc()
 * and shrinker_register(); SHRINKER_ALLOCATED came with the new API.
 */
static inline struct shrinker *aipu_shrinker_new(const char *name,
						 aipu_shrink_fn count,
						 aipu_shrink_fn scan)
{
	struct shrinker *s;

#ifdef SHRINKER_ALLOCATED
	s = shrinker_alloc(0, "%s", name);
#else
	s = kzalloc(sizeof(*s), GFP_KERNEL);
#endif
	if (!s)
		return NULL;
	s->count_objects = count;
	s->scan_objects = scan;
	s->seeks = DEFAULT_SEEKS;
#ifdef SHRINKER_ALLOCATED
	shrinker_register(s);
#else
	if (register_shrinker(s, "%s", name)) {
		kfree(s);
		return NULL;
	}
#endif
	return s;
}

/* On return no scan of @s runs. */
static inline void aipu_shrinker_free(struct shrinker *s)
{
#ifdef SHRINKER_ALLOCATED
	shrinker_free(s);
#else
	unregister_shrinker(s);
	kfree(s);
#endif
}

#endif /* AIPU_COMPAT_H */
