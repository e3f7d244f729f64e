// SPDX-License-Identifier: GPL-2.0
/*
 * Compiles if inode state bits are waited on through inode_wake_up_bit()
 * (6.12, 7.2: wake_up_var() on an address in i_state) rather than
 * wake_up_bit(&inode->i_state, bit) (6.1).
 */
#include <linux/fs.h>

void aipu_conftest(struct inode *inode);

void aipu_conftest(struct inode *inode)
{
	inode_wake_up_bit(inode, __I_SYNC);
}
