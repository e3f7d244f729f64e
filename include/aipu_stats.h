/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aipu: the counters stat shows, one set a device (src/dev.c adds them up),
 * and the histograms' bucket counts.  Shared by the tracking logic and the
 * kernel glue.
 */
#ifndef AIPU_STATS_H
#define AIPU_STATS_H

#include <linux/types.h>

struct aipu_stats {
	u64 pages_dirtied;	/* clean->dirty transitions seen */
	u64 pages_fast;		/* of them, under the file's lock alone */
	u64 meta_dirtied;	/* clean->dirty inode metadata seen */
	u64 entries_scanned;	/* runs (files: the log) phase 1 examined */
	u64 pages_written;	/* pages written by aipu */
	u64 meta_written;	/* inodes whose metadata aipu wrote */
	u64 pages_clean;	/* pages found clean when due */
	u64 pages_retried;	/* pages still dirty after issue: kept */
	u64 pages_tracked;	/* gauge: pages with queued runs or entries */
	u64 runs_tracked;	/* gauge: runs (the log: 8-B entry slots) */
	u64 trackers;		/* gauge: mappings tracked */
	u64 flusher_runs;	/* flusher passes */
	u64 fallbacks;		/* tracking degraded to a coarser bound */
	u64 pages_deferred;	/* aged, left for the next pass: max_batch */
	u64 pages_late;		/* written after max_age + period */
	u64 pages_staged;	/* moved early by the stage policy */
	u64 pages_purged;	/* dropped from the cache after writeback */
	u64 pages_not_purged;	/* still cached: dirtied again, mapped, ... */
	u64 pages_evicting;	/* dirtied on a mapping being evicted */
	u64 pages_redirtied;	/* dirtied again after a declined write */
	u64 times_dirtied;	/* lazytime timestamps dirtied alone */
	u64 times_written;	/* inodes whose lazytime timestamps aipu wrote */
	u64 lock_hold_max_ns;	/* longest hold of the device's lock */
	u64 wb_takes;		/* takes issued by a cgroup context's worker */
	u64 wb_full;		/* put back: their context had its takes out */
	u64 pages_refused;	/* still dirty after ->writepages failed */
	u64 pages_foreign;	/* of mappings not their host's own: not tracked */
	u64 inodes_adopted;	/* dirty at load: given entries (handover.c) */
};

#define AIPU_HIST_BUCKETS 16	/* 0, 1, 2-3, 4-7, ..., >= 16384 */
#define AIPU_AGE_BUCKETS 24	/* ms: 0, 1, 2-3, ..., >= 4194304 */

#endif /* AIPU_STATS_H */
