// SPDX-License-Identifier: GPL-2.0
/*
 * Compiles if struct folio_batch has its own header, linux/folio_batch.h
 * (7.2), rather than linux/pagevec.h (6.1, 6.12).
 */
#include <linux/folio_batch.h>

void aipu_conftest(struct folio_batch *fb);

void aipu_conftest(struct folio_batch *fb)
{
	folio_batch_init(fb);
}
