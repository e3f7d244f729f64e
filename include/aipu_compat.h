/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few places where Debian's 6.1 and 6.12 kernels differ for aipu.
 */
#ifndef AIPU_COMPAT_H
#define AIPU_COMPAT_H

#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/shrinker.h>
#include <linux/slab.h>

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

/* The inode's state flags, read without i_lock. */
static inline unsigned long aipu_inode_state(struct inode *inode)
{
	return READ_ONCE(inode->i_state);
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
