// SPDX-License-Identifier: GPL-2.0
/*
 * Compiles if filemap_flush_range() is declared (exported GPL in 7.2): it
 * starts WB_SYNC_NONE writeback of a byte range, without a page count.
 */
#include <linux/pagemap.h>

int aipu_conftest(struct address_space *m);

int aipu_conftest(struct address_space *m)
{
	return filemap_flush_range(m, 0, LLONG_MAX);
}
