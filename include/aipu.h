/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aipu: approximate interval periodic update for the Linux page cache.
 * Internal interfaces between the module's parts.  The queue's pure logic,
 * unit-tested in user space (tests/unit) and timed there (bench/scale),
 * is in src/queue/:
 *
 *   log.c      a file's log of first dirtyings
 *   live.c     a file's pages with a queued entry
 *   flog.c     a file's queue: log, live pages, retries
 *   wheel.c    the 1-second wheel of files, by oldest first-dirty time
 *   queue.c    a device's queue: the wheel, due files, phase 1 and 2's
 *              takes (include/aipu_queue.h)
 *
 * The kernel glue around it is in src/:
 *
 *   hook.c     tracepoint and kprobe probes: first-dirty times, eviction
 *   canary.c   an inode of its own evicted each period: is the kprobe armed?
 *   dev.c      one queue per backing device, each with its own lock
 *   mapping.c  finding a mapping's tracker, its lifetime, pinning it
 *   mem.c      slab caches and the reserve the probes fall back on
 *   shrink.c   memory pressure: files fall back to whole-file runs
 *   issue.c    phase 2's writes of one take: pin, write, hand back
 *   wbq.c      a take per cgroup writeback context, issued by its worker
 *   flusher.c  per-device flusher threads: phase 1 scan, phase 2 takes
 *   policy.c   kernel / aipu / pu / stage, and Linux's periodic writeback
 *   handover.c what was dirty at load, and whether Linux still holds dirty
 *              data aipu never saw
 *   purge.c    write purge: drop pages aipu wrote once they are clean
 *   lazytime.c lazytime timestamps, written once dirtytime_expire_seconds old
 *   proc.c     /proc as the initial namespaces see it
 *   knobs.c    tunables from include/aipu_knobs.h, and module parameters
 *   sysfs.c    /sys/kernel/aipu/
 *   debugfs.c  /sys/kernel/debug/aipu/: every device's line
 *
 * Calls go down this list's dependency order, never in a circle: flusher
 * uses canary, wbq, issue, policy, handover, purge, lazytime, mapping, dev,
 * track and mem; wbq uses issue and policy; issue uses purge, mapping, dev
 * and track; lazytime uses policy, proc, mapping, dev and track; purge and
 * mapping use dev and track; hook uses canary, issue, mapping, track,
 * policy and flusher; canary uses knobs, policy, mapping and dev; policy
 * uses handover and proc; handover uses mapping and proc ("track":
 * src/queue/).
 */
#ifndef AIPU_H
#define AIPU_H

#include <linux/atomic.h>
#include <linux/container_of.h>
#include <linux/hash.h>
#include <linux/rculist.h>
#include <linux/types.h>
#include <asm/barrier.h>
#include <asm/current.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "aipu_stats.h"
#include "aipu_queue.h"

#define AIPU_NAME "aipu"

/*
 * Locking: every lock aipu takes, outermost first, what it protects and
 * the context it is taken in.  Each lock's definition points here.
 *
 *   kupdate_mutex (policy.c)      kupdate_off, kupdate_saved, stopping:
 *                                 Linux's periodic writeback off or on.
 *                                 Process context (the flusher each
 *                                 period, sysfs stores, module exit).
 *   knob_mutex (knobs.c)          a store's check-and-set of one knob and
 *                                 its changed() hook; never held while
 *                                 kupdate_mutex is taken (a store calls
 *                                 aipu_kupdate_update() after dropping it).
 *   s_umount, shared (kernel)     the pin of a mapping being written
 *                                 (mapping.c, aipu_pin()): trylock only,
 *                                 so an umount or remount in progress is
 *                                 never waited for.  Released last, after
 *                                 the inode's reference or I_SYNC.
 *   inode->i_lock (kernel)        I_SYNC set and cleared, the inode's state
 *                                 read for the pin and for the settle after
 *                                 a write (aipu_handover_owns_locked()).
 *   wb->work_lock, wb->list_lock, sb->s_inode_list_lock (kernel)
 *                                 taken by the handover's look (handover.c),
 *                                 as fs-writeback.c takes them; the
 *                                 adoption at load takes each listed
 *                                 inode's i_lock inside, and a device's and
 *                                 a file's lock inside that
 *                                 (aipu_mapping_adopt()).
 *   answer_lock (handover.c)      the handover's last answer; spinlock_t,
 *                                 process context, no other lock held.
 *   wbq->lock (wbq.c)             a writeback context's takes and counts;
 *                                 spinlock_t, process context (flusher and
 *                                 its worker), no other lock held.
 *   mapping->i_pages (kernel)     held by the kernel, interrupts off, when
 *                                 writeback_dirty_folio fires: the probe
 *                                 runs under it, so every dirtying of one
 *                                 file is serialised and reads jiffies in
 *                                 order.  A sleeping lock on PREEMPT_RT,
 *                                 hence every aipu lock below is raw.
 *   devs_lock (dev.c)             changes to the list of devices (RCU to
 *                                 read), nr_devs, the reaped devices' sums;
 *                                 raw, interrupts off; the probe that finds
 *                                 a new device takes it under i_pages.
 *   aipu_dev->lock (dev.c)        the device's queue, struct aipu_queue:
 *                                 its wheel, due, drain, retried and
 *                                 timestamps lists and its counters; the
 *                                 device's purges.  Raw, interrupts off.
 *   aipu_mapping->lock (mapping.c, aipu_file_lock())
 *                                 one file's state: its queue (log, live
 *                                 bits, retries), its three entries, where
 *                                 it is and at what time, users, dead,
 *                                 draining.  Raw, interrupts off.  Taken
 *                                 inside its device's lock, or alone by the
 *                                 probe's fast path (a page of a file
 *                                 already queued: aipu_queue_pages_fast()).
 *                                 Never two files' at once.  Every
 *                                 *_locked() helper asserts it.
 *   table_locks[] (mapping.c)     changes to a bucket of the mapping hash
 *                                 (RCU to read); raw, interrupts off.
 *   reserve->lock (mem.c)         a slab cache's reserve for the probes;
 *                                 raw, interrupts off, innermost.
 *
 * So: i_pages -> devs_lock -> device -> file -> table, reserve.  The order
 * is mm/filemap.c's rule for the page cache's own locks, extended: nothing
 * of aipu's is held while the kernel's sleeping locks are taken, and no
 * slab object is freed under a raw lock on PREEMPT_RT (src/mem.c).
 *
 * Pinning a mapping (mapping.c): a tracker found under RCU and seen alive
 * (!dead) under its device's lock has a valid inode and super block (both
 * freed after a grace period; eviction marks the tracker dead first, under
 * the device's lock).  Data is written with s_umount shared and I_SYNC set
 * under i_lock, as writeback_single_inode() does: eviction waits for I_SYNC,
 * so no reference is taken and the last iput() stays its caller's.  An
 * inode's metadata is written with a reference instead (igrab(), dropped
 * before s_umount, never on a frozen super block): no reference outlives
 * its file system's umount.
 *
 * States: a file's and an entry's, with their legal transitions, are in
 * include/aipu_queue.h.
 */

struct backing_dev_info;

/*
 * dev.c: a backing device's queue.  @lock guards @tr's lists and counters
 * (taken inside the mapping's i_pages lock by the probes, interrupts off);
 * each file's state is under its own lock (struct aipu_mapping's), taken
 * inside this one when both are held (Locking, above).  The rest is its
 * flusher's (flusher.c, policy.c, purge.c), touched only from its work
 * item.
 */
struct aipu_dev {
	struct list_head node;		/* every device, RCU */
	struct backing_dev_info *bdi;	/* referenced */
	char name[32];			/* "8:0", as in /sys/class/bdi */
	raw_spinlock_t lock;		/* raw: the probes run atomic on RT */
	u64 locked_at;			/* local_clock() when @lock was taken */
	struct aipu_queue tr;
	struct list_head *slots;	/* @tr's wheel: AIPU_QUEUE_SLOTS */
	struct aipu_stats st;		/* what @tr does not count itself */
	/* The probes' fast path's counters: aipu_queue_pages_fast(). */
	struct aipu_queue_delta __percpu *fast;
	u64 hist[AIPU_HIST_BUCKETS];	/* pages issued per flusher pass */
	u64 age_hist[AIPU_AGE_BUCKETS];	/* pages written, by age in ms */
	unsigned long created;		/* jiffies */

	/* flusher.c */
	struct task_struct *task;	/* its flusher thread, once started */
	struct aipu_batch *batch;	/* phase 2's take, allocated with it */
	bool started, sleeping;
	bool dead;			/* being reaped (lock): dev_find() skips */
	bool stopping;			/* rmmod or reap: end batches early */
	unsigned int idle_ticks;	/* periods with nothing tracked */
	unsigned long idle_since;	/* jiffies: aipu_dev_busy() */
	struct task_struct *inheritor;	/* writing metadata: see hook.c */
	unsigned long inherit_time;
	/* A probe found no tracker memory: adopt_missed() (@lock). */
	bool adopt_wanted;
	u16 adopted_misses;		/* tr.misses at the last adoption */

	/* policy.c */
	unsigned long last_pu, next_stage;
	unsigned int policy_gen;
	struct aipu_scan {		/* this pass's phase 1 */
		unsigned long now, cutoff, limit, staged;
		unsigned long stage_pages; /* of staged files: ULONG_MAX all */
		unsigned int stage;	/* files left to stage */
		bool all, aged_done;
	} scan;

	/* purge.c */
	struct list_head purges;	/* under @lock */

	/* wbq.c: the flusher's, but @wbq_written */
	struct list_head wbqs;		/* a queue per writeback context */
	unsigned int nr_wbqs;
	atomic_long_t wbq_written;	/* by the workers, for the pass's count */
};

/* What stat and the histograms add up (src/dev.c). */
struct aipu_sums {
	struct aipu_stats st;
	u64 hist[AIPU_HIST_BUCKETS];
	u64 age_hist[AIPU_AGE_BUCKETS];
	unsigned int devices;
};

struct aipu_dev *aipu_dev_get(struct backing_dev_info *bdi);
void aipu_dev_refill(void);
void aipu_dev_sum(struct aipu_sums *sum, unsigned long *oldest);
void aipu_dev_snapshot(struct aipu_dev *d, struct aipu_stats *s,
		       unsigned long *oldest);
unsigned int aipu_age_bucket(unsigned long age_ms);
void aipu_dev_written(struct aipu_dev *d, const unsigned long *age);
void aipu_dev_pass(struct aipu_dev *d, unsigned long pages);
struct aipu_dev *aipu_dev_next(struct aipu_dev *d);
unsigned long aipu_dev_lock(struct aipu_dev *d) __acquires(&d->lock);
void aipu_dev_unlock(struct aipu_dev *d, unsigned long flags)
	__releases(&d->lock);
struct aipu_dev *aipu_dev_lock_live(struct aipu_dev *d, unsigned long *flags)
	__acquires(&d->lock);

/*
 * @d's lock held: @d tracks something (a tick saw a tracker, or a probe
 * found or made one), so it is not idle.  The probe's part matters: the
 * flusher may drop a tracker whose pages someone else wrote (an fsync, a
 * block device's last close: blkdev_put() syncs it) before any tick sees
 * it, and a device whose 10 s of idleness end just then would be reaped at
 * the next tick, just after its disk was written.
 */
static inline void aipu_dev_busy(struct aipu_dev *d)
{
	/*
	 * Only if a tick counted it idle: the line is the one the fast path
	 * reads @inheritor from, and a device the last tick saw busy has an
	 * @idle_since at most a period old, AIPU_DEV_IDLE_TICKS periods from
	 * a reap.
	 */
	if (d->idle_ticks) {
		d->idle_ticks = 0;
		d->idle_since = jiffies;
	}
}

void aipu_dev_retire(struct aipu_dev *d);
void aipu_dev_free(struct aipu_dev *d);
void aipu_dev_exit(void);

/* mapping.c: a tracker as the kernel allocates it. */
struct aipu_mapping {
	struct aipu_file t;
	/*
	 * The file's own lock (Locking, above): raw, as the device's, for
	 * the probes run with interrupts off on RT too.
	 */
	raw_spinlock_t lock;
	struct hlist_node node;		/* in its hash bucket, keyed by t.key */
	struct rcu_head rcu;
};

struct aipu_pin {
	struct inode *inode;
	struct super_block *sb;
	bool sync;			/* I_SYNC set, no reference held */
};

/* BUSY: the inode, this period; UNMOUNTING: its super block, maybe long. */
enum aipu_pin_result {
	AIPU_PIN_OK, AIPU_PIN_BUSY, AIPU_PIN_UNMOUNTING, AIPU_PIN_GONE
};

enum aipu_pin_how { AIPU_PIN_SYNC, AIPU_PIN_REF };

struct address_space;

/*
 * Inline, as the probe calls them on every page (docs/design.md §2, the
 * probe's instructions): @t's device, and @t's own lock.
 */
static inline struct aipu_dev *aipu_tracker_dev(struct aipu_file *t)
{
	return container_of(t->tr, struct aipu_dev, tr);
}

static inline raw_spinlock_t *aipu_file_lock_of(struct aipu_file *t)
{
	return &container_of(t, struct aipu_mapping, t)->lock;
}

/* mapping.c's hash table of trackers, keyed by their struct address_space. */
extern struct hlist_head *aipu_mapping_table;
extern unsigned int aipu_mapping_bits;

/*
 * The tracker of @key, a struct address_space, if it has one (to be checked
 * under its device's lock); no lock taken.  An RCU reader, or the device's
 * lock held (which excludes changes).  Inline: the probe looks on every
 * page.
 */
static inline struct aipu_file *aipu_mapping_find(const void *key)
{
	struct hlist_head *b = &aipu_mapping_table[hash_ptr(key,
							    aipu_mapping_bits)];
	struct aipu_mapping *m;

	hlist_for_each_entry_rcu(m, b, node)
		if (m->t.key == key)
			return &m->t;
	return NULL;
}

struct aipu_file *aipu_mapping_tracker(struct aipu_dev *d,
				       struct address_space *mapping,
				       struct aipu_file *hint,
				       bool *gone);
bool aipu_mapping_adopt(struct inode *inode, unsigned int what,
			unsigned long time);
bool aipu_mapping_missed(struct inode *inode, struct aipu_queue *tr,
			 u16 since, u16 upto);
void aipu_mapping_kill(struct address_space *mapping);
void aipu_mapping_forget(struct aipu_dev *d);
const void *aipu_tracker_wb(struct aipu_dev *d, struct aipu_file *t);
enum aipu_pin_result aipu_pin(struct aipu_file *t, struct aipu_pin *p,
			      enum aipu_pin_how how);
void aipu_unpin(struct aipu_pin *p, bool wrote);
int aipu_mapping_init(void);
void aipu_mapping_exit(void);

/* knobs.c */
struct aipu_knob {
	const char *name;
	unsigned int *val;
	unsigned int min, max;
	const char * const *choices;	/* names of values 0..max, or NULL */
	char **param;			/* module parameter of a choice knob */
	/* Why @v cannot be taken now, or NULL. */
	const char *(*conflicts)(const struct aipu_knob *k, unsigned int v);
	void (*changed)(void);		/* after a store changed the value */
};

enum aipu_policy_id {
	AIPU_POLICY_KERNEL,
	AIPU_POLICY_AIPU,
	AIPU_POLICY_PU,
	AIPU_POLICY_STAGE,
	AIPU_NR_POLICIES,
};

enum { AIPU_WRITE_UPDATE, AIPU_WRITE_PURGE, AIPU_NR_WRITE_ALLOCS };

extern unsigned int aipu_policy, aipu_max_age_ms, aipu_period_ms,
	aipu_pu_interval_ms, aipu_handover_ms, aipu_stage_interval_ms,
	aipu_stage_batch, aipu_write_alloc, aipu_pace, aipu_max_batch;
extern struct aipu_knob aipu_knobs[];
extern unsigned int aipu_nr_knobs;
int aipu_knobs_check(void);
int aipu_knob_set(const struct aipu_knob *k, const char *buf);
void aipu_knobs_policy_kernel(void);
ssize_t aipu_knob_show(const struct aipu_knob *k, char *buf);
const char *aipu_policy_name(unsigned int id);

/* policy.c */
void aipu_policy_changed(void);
bool aipu_policy_writes(void);
bool aipu_policy_paced(void);
bool aipu_policy_bounded(void);

/*
 * Probe context: staging wants to hear about new dirty data at once.
 * Inline: the probe asks on every page.
 */
static inline bool aipu_policy_wants_poke(void)
{
	return READ_ONCE(aipu_policy) == AIPU_POLICY_STAGE;
}

void aipu_policy_plan(struct aipu_dev *d, unsigned long now);
bool aipu_policy_scan(struct aipu_dev *d, unsigned int budget);
unsigned long aipu_policy_cutoff(struct aipu_dev *d);
long aipu_policy_due_in(struct aipu_dev *d);
void aipu_policy_staged(struct aipu_dev *d);
long aipu_policy_timeout(struct aipu_dev *d, unsigned long now,
			 unsigned long next_tick);
void aipu_policy_init(void);
void aipu_policy_watching(void);
void aipu_policy_exit(void);
void aipu_policy_untracked(void);
void aipu_kupdate_update(void);
bool aipu_kupdate_is_off(void);
unsigned long aipu_handover_left_ms(void);
bool aipu_handover_waiting(void);
bool aipu_handover_owns_locked(struct inode *inode);
bool aipu_handover_owns(struct inode *inode);

/* proc.c */
struct file;
struct file *aipu_proc_open(const char *path, int flags);
ssize_t aipu_proc_read(const char *path, char *buf, size_t size);

/* handover.c */
bool aipu_handover_holds(unsigned long mark);
void aipu_handover_adopt(void);
bool aipu_handover_adopted(bool *failed);
bool aipu_handover_adopt_bdi(struct backing_dev_info *bdi,
			     struct aipu_queue *tr, u16 since, u16 upto);
void aipu_handover_rearm(void);
void aipu_handover_stop(void);

/* purge.c */
void aipu_purge_add(struct aipu_dev *d, struct aipu_file *t,
		    pgoff_t start, pgoff_t end);
void aipu_purge_run(struct aipu_dev *d);
void aipu_purge_exit(struct aipu_dev *d);

/* lazytime.c */
void aipu_lazytime_update(void);
void aipu_lazytime_write(struct aipu_dev *d);

/* issue.c: what a take's pages get. */
enum aipu_issue_how {
	AIPU_ISSUE_WRITE,	/* written */
	AIPU_ISSUE_CHECK,	/* looked at only: policy "kernel" */
	AIPU_ISSUE_BUSY,	/* put back untouched, still dirty */
};

struct aipu_extent;
unsigned long aipu_issue_batch(struct aipu_dev *d, struct aipu_file *t,
			       const struct aipu_extent *x, unsigned int n,
			       enum aipu_issue_how how);
bool aipu_write_meta(struct aipu_dev *d, struct inode *inode,
		     unsigned long time);
unsigned long aipu_issue_entry(struct aipu_dev *d, struct aipu_entry *e,
			       enum aipu_issue_how how);

/*
 * Pages the flusher itself dirties while writing an inode's metadata (the
 * inode table block of a non-journalled file system, on the same device)
 * carry that metadata's first-dirty time and go out in the same pass, so
 * metadata keeps the bound.  Inline: the probe asks on every page.
 */
static inline bool aipu_issue_inherits(struct aipu_dev *d,
				       unsigned long *time)
{
	if (READ_ONCE(d->inheritor) != current)
		return false;
	*time = READ_ONCE(d->inherit_time);
	return true;
}

/* wbq.c */
enum aipu_wbq_result {
	AIPU_WBQ_QUEUED,	/* the context's worker issues it */
	AIPU_WBQ_FULL,		/* the context has its takes out: put it back */
	AIPU_WBQ_INLINE,	/* no queue (memory, too many): issue it */
};

enum aipu_wbq_result aipu_wbq_queue(struct aipu_dev *d, const void *wb,
				    struct aipu_file *t,
				    struct aipu_entry *e,
				    const struct aipu_extent *x, unsigned int n,
				    enum aipu_issue_how how);
void aipu_wbq_pass(struct aipu_dev *d);
void aipu_wbq_stop(struct aipu_dev *d);
int aipu_wbq_init(void);
void aipu_wbq_exit(void);

/* flusher.c */
int aipu_flusher_start(void);
void aipu_flusher_stop(void);
void aipu_flusher_kick(void);
void aipu_flusher_poke(struct aipu_dev *d);
void aipu_flusher_tick_soon(void);

/*
 * Probe context: a device the probes just made gets its thread from the
 * tick, run now rather than at its next period (up to 60 s away).  Inline:
 * the probe asks on every page, and the thread is there but once.
 */
static inline void aipu_flusher_want(struct aipu_dev *d)
{
	/* Pairs with the release that publishes the thread. */
	if (!smp_load_acquire(&d->started))
		aipu_flusher_tick_soon();
}

pid_t aipu_flusher_pid(struct aipu_dev *d);

/* canary.c */
extern bool aipu_evict_lost;
bool aipu_canary_evicted(struct inode *inode);
bool aipu_canary_flies(void);
void aipu_canary_check(void);
int aipu_canary_init(void);
void aipu_canary_exit(void);

/* hook.c */
int aipu_hook_init(void);
void aipu_hook_exit(void);
void aipu_hook_exit_evict(void);
void aipu_hook_stats(struct aipu_stats *st);

/* shrink.c */
int aipu_shrink_init(void);
void aipu_shrink_exit(void);

/* mem.c */
int aipu_mem_init(void);
void aipu_mem_exit(void);
void aipu_mem_refill(void);
void aipu_mem_drain(void);
extern atomic_t aipu_fail_trackers;
u64 aipu_mem_bytes(void);
u64 aipu_mem_objects(void);

/* sysfs.c */
int aipu_sysfs_init(void);
void aipu_sysfs_exit(void);
/* The longest line of devices: a name and seven numbers with their names. */
#define AIPU_DEV_LINE_MAX 320
int aipu_dev_line(struct aipu_dev *d, char *line, size_t size);

/* debugfs.c */
void aipu_debugfs_init(void);
void aipu_debugfs_exit(void);

#endif /* AIPU_H */
