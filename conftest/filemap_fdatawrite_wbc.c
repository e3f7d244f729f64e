// SPDX-License-Identifier: GPL-2.0
/*
 * Compiles if filemap_fdatawrite_wbc() is declared: exported in 6.1 and 6.12,
 * gone by 7.2 (mm/filemap.c's filemap_writeback() is static there).
 */
#include <linux/pagemap.h>
#include <linux/writeback.h>

int aipu_conftest(struct address_space *m, struct writeback_control *wbc);

int aipu_conftest(struct address_space *m, struct writeback_control *wbc)
{
	return filemap_fdatawrite_wbc(m, wbc);
}
