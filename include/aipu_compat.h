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

#include <linux/backing-dev.h>
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

/*
 * Pin an inode for writeback as Linux's own flusher does (fs/fs-writeback.c,
 * __writeback_single_inode() and inode_sync_complete()): I_SYNC set under
 * i_lock keeps evict() waiting (inode_wait_for_writeback()) without a
 * reference, so the last iput() stays with whoever drops the last reference.
 * Both under i_lock.  7.2 sets and clears the flags through accessors; 6.12
 * and 7.2 wake the waiters with inode_wake_up_bit() (wake_up_var()), 6.1
 * with wake_up_bit() on the i_state word.
 */
static inline void aipu_inode_sync_set(struct inode *inode)
{
#ifdef AIPU_HAVE_INODE_STATE_READ_ONCE
	inode_state_set(inode, I_SYNC);
#else
	inode->i_state |= I_SYNC;
#endif
}

static inline void aipu_inode_sync_clear(struct inode *inode)
{
#ifdef AIPU_HAVE_INODE_STATE_READ_ONCE
	inode_state_clear(inode, I_SYNC);
#else
	inode->i_state &= ~I_SYNC;
#endif
	/* Waiters must see I_SYNC clear before they are woken. */
	smp_mb();
#ifdef AIPU_HAVE_INODE_WAKE_UP_BIT
	inode_wake_up_bit(inode, __I_SYNC);
#else
	wake_up_bit(&inode->i_state, __I_SYNC);
#endif
}

#if !defined(AIPU_HAVE_FILEMAP_FDATAWRITE_WBC) && \
	!defined(AIPU_HAVE_WBC_ATTACH_FDATAWRITE_INODE)
#error "aipu needs filemap_fdatawrite_wbc() or wbc_attach_fdatawrite_inode()"
#endif

/*
 * Start asynchronous (WB_SYNC_NONE) writeback of at most @nr of the pages
 * [start, end) of @m, @end ULONG_MAX meaning to the end of the file, as
 * Linux's own flusher writes; pages locked or already under writeback are
 * skipped.  Returns the pages written, as the writeback_control counts
 * them, and in *@err what ->writepages returned (-EIO from a file system
 * shut down, ...).
 *
 * 6.1 and 6.12 export filemap_fdatawrite_wbc().  7.2 made it static
 * (filemap_writeback()); what it exports instead, filemap_flush_range(),
 * starts the same writeback but returns no count, and filemap_flush_nr(),
 * with one, is exported to btrfs alone.  So on 7.2 this is what
 * filemap_writeback() does, as netfs and afs do it: attach the
 * writeback_control to the inode (wbc_attach_fdatawrite_inode(), exported)
 * and call ->writepages.  Left out: do_writepages()'s update of the
 * device's write-bandwidth estimate, which Linux's own flusher and dirty
 * throttling keep doing.  This gives the exact count filemap_fdatawrite_wbc()
 * gives on 6.1 and 6.12; a count from the range's dirty tags before and
 * after filemap_flush_range() would also count pages someone else cleaned
 * in between.
 */
static inline unsigned long aipu_write_range(struct address_space *m,
					     pgoff_t start, pgoff_t end,
					     unsigned long nr, int *err)
{
	bool whole = end == ULONG_MAX;
	struct writeback_control wbc = {
		/*
		 * A DAX mapping's ->writepages (dax_writeback_mapping_range())
		 * writes the CPU caches back only for WB_SYNC_ALL: the data is
		 * in persistent memory already, so that waits for no I/O.
		 */
		.sync_mode = IS_DAX(m->host) ? WB_SYNC_ALL : WB_SYNC_NONE,
		.nr_to_write = min_t(unsigned long, nr, LONG_MAX),
		.range_start = (loff_t)start << PAGE_SHIFT,
		.range_end = whole ? LLONG_MAX : ((loff_t)end << PAGE_SHIFT) - 1,
	};
	long budget = wbc.nr_to_write;

	*err = 0;
#ifdef AIPU_HAVE_FILEMAP_FDATAWRITE_WBC
	*err = filemap_fdatawrite_wbc(m, &wbc);
#else
	if (!mapping_can_writeback(m) || !m->a_ops->writepages ||
	    !mapping_tagged(m, PAGECACHE_TAG_DIRTY))
		return 0;
	wbc_attach_fdatawrite_inode(&wbc, m->host);
	*err = m->a_ops->writepages(m, &wbc);
	wbc_detach_inode(&wbc);
#endif
	return budget - wbc.nr_to_write;
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

/*
 * The cgroup writeback context (struct bdi_writeback) an inode's writes are
 * charged to, if it is not the device's own (@root); NULL otherwise or
 * without cgroup writeback.  Only compared, never followed: the caller
 * keeps the inode alive, not the context.
 */
static inline const void *aipu_inode_wb(struct inode *inode,
					struct backing_dev_info *root)
{
#ifdef CONFIG_CGROUP_WRITEBACK
	const struct bdi_writeback *wb = READ_ONCE(inode->i_wb);

	return wb == &root->wb ? NULL : wb;
#else
	return NULL;
#endif
}

#endif /* AIPU_COMPAT_H */
