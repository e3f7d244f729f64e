/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few places where Debian's 6.1 and 6.12 kernels differ for aipu.
 */
#ifndef AIPU_COMPAT_H
#define AIPU_COMPAT_H

#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>

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

#endif /* AIPU_COMPAT_H */
