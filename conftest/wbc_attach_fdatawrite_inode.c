// SPDX-License-Identifier: GPL-2.0
/*
 * Compiles if wbc_attach_fdatawrite_inode() is declared (exported GPL in
 * 7.2): it attaches a writeback_control to an inode, as
 * filemap_fdatawrite_wbc() did before a caller's ->writepages.
 */
#include <linux/fs.h>
#include <linux/writeback.h>

void aipu_conftest(struct writeback_control *wbc, struct inode *inode);

void aipu_conftest(struct writeback_control *wbc, struct inode *inode)
{
	wbc_attach_fdatawrite_inode(wbc, inode);
}
