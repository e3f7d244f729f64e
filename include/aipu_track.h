/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Age-ordered tracking of first-dirty times (Mogul 1994, section 3.2).
 *
 * Every dirty page aipu knows of is covered by exactly one *run*: a range of
 * contiguous pages of one mapping that became dirty in the same jiffy.  Runs
 * hang off a per-mapping *tracker* (an rbtree by page index, so a re-dirtied
 * page can be found and carved out) and sit on their device's list in
 * first-dirty order, oldest first.  Because pages become dirty in time order,
 * appending at the tail keeps that list sorted for free, and the flusher's
 * scan only ever looks at the head: it touches aged runs and one more.
 *
 * One struct aipu_track is one backing device's queue: its trackers, its age
 * list and pending list, its counters.  Devices never share one, so a device
 * that stalls holds up nobody else's pages.
 *
 * This file is pure logic: no locking, no page cache.  Callers hold the
 * device's lock around every call.  Finding a tracker by its mapping is the
 * caller's business (aipu_tracker_lookup() and friends below: a hash of RCU
 * lists in the kernel).  It compiles in user space for the unit tests
 * (tests/unit/).
 */
#ifndef AIPU_TRACK_H
#define AIPU_TRACK_H

#include <linux/list.h>
#include <linux/rbtree.h>
#include <linux/types.h>

#include "aipu_stats.h"

enum aipu_run_kind {
	AIPU_PAGES,	/* [start, end) of the mapping */
	AIPU_WHOLE,	/* the whole mapping: run memory ran out */
	AIPU_META,	/* the inode's metadata */
	AIPU_TIMES,	/* its lazytime timestamps (I_DIRTY_TIME) alone */
};

enum aipu_run_state {
	AIPU_IDLE,	/* embedded run not in use */
	AIPU_WAITING,	/* on the age list (or the retry list) */
	AIPU_PENDING,	/* moved by the scan onto the pending list */
	AIPU_ISSUING,	/* taken by the flusher: in no list, no tree */
};

struct aipu_tracker;

struct aipu_run {
	struct list_head lru;
	struct rb_node node;		/* AIPU_PAGES while WAITING/PENDING */
	struct aipu_tracker *t;
	pgoff_t start, end;		/* AIPU_PAGES: end is exclusive */
	unsigned long time;		/* first-dirty time, jiffies */
	u8 kind, state;
};

struct aipu_tracker {
	struct list_head link;		/* in its device's trackers */
	struct aipu_track *tr;		/* its device's queue */
	const void *key;		/* the struct address_space */
	void *host;			/* its struct inode */
	struct rb_root runs;
	struct aipu_run whole, meta, times; /* embedded: need no memory */
	struct aipu_run *issuing;	/* the run the flusher is writing */
	unsigned long declined;		/* pages of @issuing declined meanwhile */
	unsigned int users;		/* flusher references: issuing, purging */
	unsigned long nr_runs;		/* allocated runs in @runs */
	bool dead;			/* mapping evicted; free when unused */
	bool hashed;			/* findable by aipu_tracker_lookup() */
};

struct aipu_track {
	struct list_head waiting;	/* oldest first */
	struct list_head retry;		/* put back by phase 2, oldest first */
	struct list_head pending;	/* phase 1 output, phase 2 input */
	struct list_head deferred;	/* aged, held back by the limit */
	struct list_head times;		/* lazytime timestamps, oldest first */
	struct list_head trackers;	/* every tracker of this device */
	unsigned long scan_moved;	/* pages moved by this pass's scan */
	struct aipu_stats st;
	u64 hist[AIPU_HIST_BUCKETS];	/* pages issued per flusher run */
	u64 age_hist[AIPU_AGE_BUCKETS];	/* pages written, by age in ms */
};

/*
 * Provided by the kernel glue (src/mem.c, src/mapping.c) or the unit tests:
 * memory, and the table that finds a tracker by its mapping.  insert fails
 * (non-zero) when the table cannot take one more; remove is called once for
 * each successful insert.
 */
struct aipu_run *aipu_run_alloc(void);
void aipu_run_free(struct aipu_run *r);
struct aipu_tracker *aipu_tracker_alloc(void);
void aipu_tracker_free(struct aipu_tracker *t);
struct aipu_tracker *aipu_tracker_lookup(const void *key);
int aipu_tracker_insert(struct aipu_tracker *t);
void aipu_tracker_remove(struct aipu_tracker *t);

/* A mapping with more runs than this is bounded as a whole (a fallback). */
#define AIPU_RUNS_PER_TRACKER_MAX 65536
/* Neighbours one take may fold into the run it writes. */
#define AIPU_ABSORB_MAX 256

void track_init(struct aipu_track *tr);
struct aipu_tracker *track_find(struct aipu_track *tr, const void *key);
struct aipu_tracker *track_get(struct aipu_track *tr, const void *key,
			       void *host);
void track_pages(struct aipu_track *tr, struct aipu_tracker *t,
		 pgoff_t start, unsigned long nr, unsigned long time,
		 bool pending);
unsigned long track_degrade(struct aipu_track *tr, struct aipu_tracker *t,
			    unsigned long budget, unsigned long now);
void track_meta(struct aipu_track *tr, struct aipu_tracker *t,
		unsigned long time, bool was_clean);
void track_whole(struct aipu_track *tr, struct aipu_tracker *t,
		 unsigned long time);
void track_times(struct aipu_track *tr, struct aipu_tracker *t,
		 unsigned long time, bool was_clean);
struct aipu_run *track_take_times(struct aipu_track *tr,
				  unsigned long cutoff);
void track_requeue_times(struct aipu_track *tr, struct aipu_run *r);
void track_redirty(struct aipu_track *tr, struct aipu_tracker *t,
		   pgoff_t start, unsigned long nr, unsigned long time);

bool track_scan(struct aipu_track *tr, unsigned long cutoff, bool all,
		unsigned long limit, unsigned int *budget);
unsigned long track_stage(struct aipu_track *tr, unsigned int *runs,
			  unsigned int *budget);
bool track_idle(struct aipu_track *tr);
unsigned long track_oldest(struct aipu_track *tr, unsigned long now);
void track_hold(struct aipu_tracker *t);
void track_put(struct aipu_track *tr, struct aipu_tracker *t);
bool track_next_time(struct aipu_track *tr, unsigned long *time);
struct aipu_run *track_take(struct aipu_track *tr, unsigned long cutoff,
			    bool all);
unsigned long track_requeue(struct aipu_track *tr, struct aipu_run *r,
			    pgoff_t start, pgoff_t end);
void track_requeue_embedded(struct aipu_track *tr, struct aipu_run *r);
unsigned long track_park(struct aipu_track *tr, struct aipu_tracker *t,
			 unsigned long time, unsigned long budget,
			 unsigned long now);
void track_end_pass(struct aipu_track *tr, unsigned long issued);
void track_stats_add(struct aipu_stats *sum, const struct aipu_stats *s);
void track_written(struct aipu_track *tr, unsigned long pages,
		   unsigned long age_ms);
void track_done(struct aipu_track *tr, struct aipu_run *r);
bool track_kill(struct aipu_track *tr, struct aipu_tracker *t,
		unsigned long budget);
void track_clear(struct aipu_track *tr);

#endif /* AIPU_TRACK_H */
