/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A device's queue built from logs (docs/design.md, section 4): the
 * device's half; src/queue/flog.c is a file's.  Pure logic, tested in user
 * space (tests/unit/test_queue.c); the kernel glue is src/flusher.c,
 * src/hook.c and the files they call.
 *
 * Each tracked file (struct aipu_file) queues its pages in a struct
 * aipu_flog (src/queue/flog.c: 8 B a randomly dirtied page, nothing per page
 * written sequentially); its whole-file entry (the coarse bound taken when
 * memory runs out, under memory pressure or during an umount) and its
 * metadata entry are embedded.  The file sits in the device's wheel
 * (src/queue/wheel.c) at the oldest time of all of these: one node a file, O(1)
 * to queue or move whatever the time, so no list of entries is ever walked
 * to keep it in order.
 *
 * Phase 1 (aipu_queue_scan()) moves the due files from the wheel to the due
 * list: a splice per slot, in holds bounded by a budget.  Phase 2
 * (aipu_queue_take()) hands the flusher, from the first due file, its
 * whole-file or metadata entry if due (to be handed back with
 * aipu_queue_done_entry()), else a batch of its due extents, which the flusher
 * merges (aipu_flog_merge()) and writes outside the lock and hands back with
 * aipu_queue_done_pages() and aipu_queue_put().  While a batch is out the file
 * stays allocated (users), its pages may be dirtied again (their live bits
 * make the batch's entries stale) and it may be evicted (the hand-back is
 * then a no-op).  What a pass puts back is due in the next pass, not in
 * the same one.
 *
 * Lazytime timestamps keep a list of their own (their expiry is not
 * max_age_ms).  Staging moves the oldest files whole, whatever their age;
 * max_batch is the flusher's to enforce (a batch's max_pages), and what it
 * leaves due goes back at the end of the pass.
 *
 * Two locks (include/aipu.h, Locking).  The device's guards its lists
 * (the wheel, the due, drain, retried and timestamps lists) and its
 * counters; each file's own (aipu_file_lock()) guards the file's state:
 * its queue, its entries, where it is and at what time.  Callers of
 * everything here but aipu_queue_pages_fast() hold the device's lock, and the
 * functions take each file's inside it, one at a time.  So a file's state
 * changes only under its own lock, and aipu_queue_pages_fast(), the probe's
 * common case, needs that lock alone: CPUs dirtying different files of one
 * device share no lock and no counter.
 */
#ifndef AIPU_QUEUE_H
#define AIPU_QUEUE_H

#include <linux/list.h>
#include <linux/types.h>

#include "aipu_flog.h"
#include "aipu_wheel.h"

/*
 * States, all under the file's lock.
 *
 * An entry (the whole-file, metadata or timestamps entry of a file):
 *
 *   IDLE    -> WAITING   dirtied: a fallback, the inode's metadata or its
 *                        timestamps (queued at that time, the file moved
 *                        earlier in the wheel if need be)
 *   WAITING -> WAITING   dirtied again after someone else wrote it clean:
 *                        queued anew at the new time (metadata)
 *   WAITING -> ISSUING   taken by phase 2 (the file's users + 1)
 *   ISSUING -> IDLE      written (aipu_queue_done_entry(), users - 1)
 *   ISSUING -> RETRY     put back: refused, or dirtied while out (@again);
 *                        on the device's retried list
 *   ISSUING -> WAITING   a timestamps entry dirtied while out: requeued at
 *                        its place in the device's timestamps list
 *   RETRY   -> WAITING   the end of the pass: due in the next one
 *   WAITING, RETRY -> IDLE   the mapping evicted (aipu_queue_kill())
 *
 * A file (struct aipu_file): @where is NOWHERE (nothing to take), WHEEL (in
 * the slot of its oldest queued page or entry) or DUE (on the due list).
 *
 *   NOWHERE -> WHEEL     a page or entry queued (requeue())
 *   WHEEL   -> WHEEL     something older queued: an earlier slot, O(1)
 *   WHEEL   -> DUE       phase 1 reached its slot, staging picked it
 *                        (@staged: all of it goes), or it is due now
 *   DUE     -> NOWHERE   phase 2 took all of it that is due, or the pass
 *                        ended; then requeue(): WHEEL if anything is left
 *   WHEEL, DUE -> NOWHERE    nothing left to take, or evicted
 *
 * and its flags: @hashed from creation until eviction or its last put
 * (findable by aipu_file_lookup()); @draining while its queue is being
 * freed a budget at a time (eviction, the shrinker, an umount's park: the
 * queue is not used meanwhile); @dead from eviction on (nothing is added,
 * and it is freed once @users, its batches and entries out, drops to 0 and
 * it is nowhere).  A dead file never becomes live again.
 */
enum aipu_entry_kind { AIPU_ENTRY_WHOLE, AIPU_ENTRY_META, AIPU_ENTRY_TIMES };
enum aipu_entry_state {
	AIPU_ENTRY_IDLE,	/* nothing to write */
	AIPU_ENTRY_WAITING,	/* queued: part of its file's time */
	AIPU_ENTRY_RETRY,	/* put back in this pass: due in the next */
	AIPU_ENTRY_ISSUING,	/* taken by the flusher */
};

/*
 * Where a tracker's node is: nowhere (nothing to take), the wheel or the
 * due list.
 */
enum aipu_file_where { AIPU_AT_NOWHERE, AIPU_AT_WHEEL, AIPU_AT_DUE };

/* The whole-file, metadata or timestamps entry of a file, embedded. */
struct aipu_entry {
	struct list_head lru;		/* timestamps: on the device's list */
	struct aipu_file *t;
	unsigned long time;
	unsigned long again_time;	/* whole: oldest dirtying while ISSUING */
	u8 kind, state;
	bool again;			/* dirtied while ISSUING: see done */
};

struct aipu_file {
	struct list_head link;		/* in its device's trackers */
	struct aipu_queue *tr;
	const void *key;		/* the struct address_space */
	void *host;			/* its struct inode */
	struct aipu_flog q;		/* queued pages */
	struct aipu_wheel_node node;	/* on the list @where says */
	struct list_head retried;	/* on tr->retried: put back this pass */
	struct list_head drain;		/* on tr->drain: queue being freed */
	struct aipu_entry whole, meta, times;
	unsigned int users;		/* batches and entries being written */
	unsigned long out_time;		/* oldest page of batches out */
	unsigned long out_pages;	/* pages of batches out */
	unsigned long declined;		/* redirtied while a batch was out */
	unsigned long counted_bytes;	/* of @q, in the device's gauges */
	unsigned long counted_pages;
	u8 where;			/* enum aipu_file_where */
	bool staged;			/* on the due list by staging: all goes */
	bool draining;			/* @q is being freed: not to be used */
	bool dead;			/* mapping evicted; free when unused */
	bool hashed;			/* findable by aipu_file_lookup() */
	u16 born;			/* its queue's misses when it was made */
};

/* What aipu_queue_pages_fast() adds to its device's counters: the caller's. */
struct aipu_queue_delta {
	u64 pages_dirtied;
	long bytes, pages;		/* gauges: may go below 0 on one CPU */
};

enum { AIPU_FAST_NO, AIPU_FAST_DONE, AIPU_FAST_SHORT, AIPU_FAST_ASK };

struct aipu_queue_stats {
	u64 pages_dirtied;	/* clean -> dirty transitions seen */
	u64 pages_taken;	/* pages handed to the flusher */
	u64 pages_retried;	/* still dirty after their write: kept */
	u64 pages_redirtied;	/* declined writes: kept their time */
	u64 pages_deferred;	/* due, left by max_batch: see end_pass */
	u64 pages_staged;	/* moved early by staging */
	u64 entries_scanned;	/* files phase 1 looked at */
	u64 fallbacks;		/* a file bounded as a whole instead */
	u64 inodes_adopted;	/* dirty at load: aipu_queue_adopt() */
	u64 trackers;		/* gauge */
	u64 bytes;		/* gauge: queue memory of the files */
	u64 pages;		/* gauge: pages queued or out in batches */
};

/*
 * Slots of the wheel: span max_age and a few periods (the caller's width).
 * The caller allocates them (an array of this many list heads): apart
 * from the rest of its device, so neither needs a high-order page.
 */
#define AIPU_QUEUE_SLOTS	1024
/* A file with more queue memory than this is bounded as a whole. */
#define AIPU_QUEUE_BYTES_MAX	(4UL << 20)
/*
 * Queue objects one hold of the device's lock frees when a file's queue
 * is drained: by eviction and rmmod (aipu_queue_kill()), the shrinker
 * (aipu_queue_degrade()) and an umount's park (aipu_queue_park()), one drain()
 * for all three, so one bound; bench/scale's eviction table times it.
 */
#define AIPU_DRAIN_BATCH	16

struct aipu_queue {
	struct aipu_wheel wheel;		/* its slots: the caller's */
	struct list_head due;		/* files phase 1 found due */
	struct list_head drain;		/* files whose queue is being freed */
	struct list_head retried;	/* files with things put back */
	struct list_head times;		/* lazytime timestamps, oldest first */
	struct list_head trackers;	/* every tracker of this device */
	unsigned long stage_cutoff;	/* staged files: all before this */
	unsigned long scan_cutoff;	/* phase 1's: due files stay till then */
	unsigned long out_pages;	/* pages of batches out, any file */
	unsigned long out_time;		/* the oldest of them, if any */
	u16 misses;			/* trackers the probes could not have */
	struct aipu_queue_stats st;
};

/* One take of a file's pages: the flusher's, merged outside the lock. */
#define AIPU_BATCH_MAX		(4 * AIPU_FLOG_TAKE_MIN)
struct aipu_batch {
	struct aipu_file *t;
	bool again;			/* nothing taken, but call again */
	unsigned long max_pages;	/* the caller's limit for this take */
	unsigned int n;
	struct aipu_extent x[AIPU_BATCH_MAX];
};

/* Pages and stretches of them handed back per hold of the lock, at most. */
#define AIPU_HANDBACK_PAGES	256
#define AIPU_HANDBACK_MAX	16

/*
 * A batch's pages on their way back to @t's queue, collected outside the
 * lock in stretches, each written or found clean, or still dirty.
 */
struct aipu_handback {
	struct aipu_file *t;
	unsigned int n;
	unsigned long pages;
	struct {
		pgoff_t index;
		unsigned long nr, time;
		bool dirty;
	} s[AIPU_HANDBACK_MAX];
};

/* Provided by the kernel glue (src/mem.c, src/mapping.c) or the unit tests. */
struct aipu_file *aipu_file_alloc(void);
void aipu_file_free(struct aipu_file *t);
struct aipu_file *aipu_file_lookup(const void *key);
int aipu_file_insert(struct aipu_file *t);
void aipu_file_remove(struct aipu_file *t);
/* @t's own lock: a spinning lock, taken with interrupts off. */
void aipu_file_lock(struct aipu_file *t);
void aipu_file_unlock(struct aipu_file *t);
/*
 * In every *_locked() helper: @t's own lock is held.  lockdep checks it
 * (src/mapping.c); a kernel without lockdep, and the user-space builds,
 * whose shims check their locks themselves, compile it away.
 */
#if defined(__KERNEL__) && defined(CONFIG_LOCKDEP)
void aipu_file_assert_held(struct aipu_file *t);
#else
static inline void aipu_file_assert_held(struct aipu_file *t)
{
}
#endif

void aipu_queue_init(struct aipu_queue *tr, struct list_head *slots,
		     unsigned long width, unsigned long now);
struct aipu_file *aipu_queue_get(struct aipu_queue *tr, const void *key,
				 void *host);
void aipu_queue_pages(struct aipu_queue *tr, struct aipu_file *t,
		      pgoff_t start, unsigned long nr, unsigned long time);
int aipu_queue_pages_fast(struct aipu_file *t, pgoff_t start,
			  unsigned long nr, unsigned long time,
			  struct aipu_queue_delta *dl, bool ask);
void aipu_queue_whole(struct aipu_queue *tr, struct aipu_file *t,
		      unsigned long time);
void aipu_queue_whole_dax(struct aipu_queue *tr, struct aipu_file *t,
			  unsigned long time);
void aipu_queue_meta(struct aipu_queue *tr, struct aipu_file *t,
		     unsigned long time, bool was_clean);
/* What an inode dirty before the load had dirty: aipu_queue_adopt(). */
#define AIPU_ADOPT_PAGES 1
#define AIPU_ADOPT_META 2
#define AIPU_ADOPT_TIMES 4
bool aipu_queue_adopt(struct aipu_queue *tr, struct aipu_file *t,
		      unsigned int what, unsigned long time);
bool aipu_queue_meta_fast(struct aipu_file *t, bool was_clean);
bool aipu_queue_may_redirty(struct aipu_file *t, pgoff_t start,
			    unsigned long nr);
void aipu_queue_redirty(struct aipu_queue *tr, struct aipu_file *t,
			pgoff_t start, unsigned long nr, unsigned long time);
void aipu_queue_inherit(struct aipu_queue *tr, struct aipu_file *t,
			pgoff_t start, unsigned long nr, unsigned long time);
void aipu_queue_times(struct aipu_queue *tr, struct aipu_file *t,
		      unsigned long time, bool was_clean);
struct aipu_entry *aipu_queue_take_times(struct aipu_queue *tr,
					 unsigned long cutoff);
void aipu_queue_requeue_times(struct aipu_queue *tr, struct aipu_entry *e);
bool aipu_queue_scan(struct aipu_queue *tr, unsigned long cutoff,
		     unsigned int *budget);
unsigned long aipu_queue_stage(struct aipu_queue *tr, unsigned long now,
			       unsigned int *files, unsigned int *budget);
struct aipu_entry *aipu_queue_take(struct aipu_queue *tr, unsigned long cutoff,
				   struct aipu_batch *b);
void aipu_queue_done_pages(struct aipu_queue *tr, struct aipu_file *t,
			   pgoff_t index, unsigned long nr, unsigned long time,
			   bool still_dirty);
void aipu_queue_handback_add(struct aipu_handback *h, pgoff_t index,
			     unsigned long nr, unsigned long time, bool dirty,
			     void (*flush)(struct aipu_handback *h));
void aipu_queue_handback(struct aipu_queue *tr, struct aipu_handback *h);
void aipu_queue_requeue_entry(struct aipu_queue *tr, struct aipu_entry *e);
void aipu_queue_requeue_whole_since(struct aipu_queue *tr,
				    struct aipu_entry *e);
void aipu_queue_requeue_whole_refused(struct aipu_queue *tr,
				      struct aipu_entry *e, unsigned long time);
void aipu_queue_done_entry(struct aipu_queue *tr, struct aipu_entry *e);
void aipu_queue_put(struct aipu_queue *tr, struct aipu_file *t);
bool aipu_queue_end_pass(struct aipu_queue *tr, unsigned int *budget);
bool aipu_queue_oldest(struct aipu_queue *tr, unsigned long *time);
bool aipu_queue_next_time(struct aipu_queue *tr, unsigned long *time);
bool aipu_queue_idle(struct aipu_queue *tr);
unsigned long aipu_queue_degrade(struct aipu_queue *tr, struct aipu_file *t,
				 unsigned long budget, unsigned long now);
unsigned long aipu_queue_park(struct aipu_queue *tr, struct aipu_file *t,
			      unsigned long time, unsigned long budget);
/* Is the file phase 2 takes next one that staging moved? */
static inline bool aipu_queue_next_staged(struct aipu_queue *tr)
{
	struct aipu_file *t = list_first_entry_or_null(&tr->due,
						       struct aipu_file,
						       node.link);

	return t && t->staged;
}

/*
 * The flusher keeps @t allocated (not its mapping) until aipu_queue_put().
 * The device's lock held.
 */
static inline void aipu_queue_hold(struct aipu_file *t)
{
	aipu_file_lock(t);
	t->users++;
	aipu_file_unlock(t);
}

bool aipu_queue_kill(struct aipu_queue *tr, struct aipu_file *t,
		     unsigned long budget);

#endif /* AIPU_QUEUE_H */
