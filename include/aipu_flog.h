/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One file's dirty pages as the flusher sees them (docs/design.md, section 4):
 * the log of first dirtyings (src/queue/log.c), the pages with a queued entry
 * (src/queue/live.c), and the retries, pages the flusher found still dirty
 * after writing them, queued again at their old time.
 *
 * Pure logic, tested in user space (tests/unit/test_flog.c): the per-file
 * half of a device's queue; the device's half (the wheel of files, phase
 * 1's budget, the whole-file, metadata and lazytime entries) is
 * src/queue/queue.c.
 *
 * The promise kept, whatever fails: every dirty page has a queued entry that
 * is not stale and carries its first-dirty time or an earlier one (written
 * early, never late), or else the caller bounds the file as a whole, which it
 * is told to do.
 *
 * Retries are a sorted list of extents, not a second log: their times are
 * older than the log's, but a retry may be older than a retry queued before
 * it (a pass stopped by its budget), which an append-only log cannot hold.
 * They are rare (a page still dirty after its write: redirtied during it, or
 * declined by the file system), so a node each is affordable.  A retry is
 * due again in the next pass, not in the one that put it back (a page the
 * file system keeps declining would otherwise be taken over and over):
 * aipu_flog_end_pass() makes a pass's retries visible.  Callers hold the
 * file's lock (struct aipu_mapping's).
 */
#ifndef AIPU_FLOG_H
#define AIPU_FLOG_H

#include <linux/list.h>
#include <linux/types.h>

#include "aipu_live.h"
#include "aipu_log.h"

struct aipu_retry {
	struct list_head link;
	struct aipu_extent x;
};

struct aipu_flog {
	struct aipu_log log;		/* first dirtyings, oldest first */
	struct aipu_live live;		/* pages with a queued entry */
	struct list_head retry;		/* struct aipu_retry, oldest first */
	struct list_head retry_new;	/* put back in this pass, not yet due */
	unsigned long retry_pages;
	unsigned long imprecise;	/* live set short of memory: early */
};

/*
 * aipu_flog_take() needs room for the pieces of one entry whose every other
 * page is stale.
 */
#define AIPU_FLOG_TAKE_MIN	(AIPU_LOG_LEN_MAX / 2 + 1)
/* Entries one aipu_flog_take() looks at, at most: bounds the hold. */
#define AIPU_FLOG_TAKE_ENTRIES	1024
/* Pages one aipu_flog_take() goes past, at most (16 MiB of 4-KiB pages). */
#define AIPU_FLOG_TAKE_PAGES	4096
/* Nodes a retry's insertion looks at from either end of the retries. */
#define AIPU_RETRY_WALK		4

/* Provided by the kernel glue or the unit tests. */
struct aipu_retry *aipu_retry_alloc(void);
void aipu_retry_free(struct aipu_retry *r);

void aipu_flog_init(struct aipu_flog *f);
bool aipu_flog_empty(const struct aipu_flog *f);
bool aipu_flog_oldest(const struct aipu_flog *f, unsigned long *time);
unsigned long aipu_flog_dirty(struct aipu_flog *f, pgoff_t index,
			      unsigned long nr, unsigned long time);
unsigned int aipu_flog_take(struct aipu_flog *f, unsigned long cutoff,
			    struct aipu_extent *out, unsigned int max,
			    unsigned long max_pages);
unsigned int aipu_flog_merge(struct aipu_extent *x, unsigned int n);
int aipu_flog_done(struct aipu_flog *f, pgoff_t index, unsigned long nr,
		   unsigned long time, bool still_dirty);
int aipu_flog_inherit(struct aipu_flog *f, pgoff_t index, unsigned long nr,
		      unsigned long time);
bool aipu_flog_retried(const struct aipu_flog *f);
bool aipu_flog_end_pass(struct aipu_flog *f, unsigned int *budget);
bool aipu_flog_drop(struct aipu_flog *f, unsigned long *budget);

#endif /* AIPU_FLOG_H */
