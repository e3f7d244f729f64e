// SPDX-License-Identifier: GPL-2.0
/*
 * Compiles if inode->i_state is read through inode_state_read_once() (7.2: a
 * struct inode_state_flags) rather than as a plain word (6.1, 6.12).
 */
#include <linux/fs.h>

unsigned long aipu_conftest(struct inode *inode);

unsigned long aipu_conftest(struct inode *inode)
{
	return inode_state_read_once(inode);
}
