// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the mappings aipu tracks, and their lifetime.
 *
 * A tracker is found from its struct address_space through a hash table of
 * RCU lists: lookups take no lock, so pages of different files find their
 * trackers without sharing anything.  Inserts and removals happen in the
 * probes, interrupts off, where rhashtable's bucket lock may not be taken
 * (local_bh_disable() on 6.1, which can run softirqs on the way out), and on
 * PREEMPT_RT, where nothing may sleep: a bucket is changed under one of a
 * few raw spinlocks striped over the buckets.  The table is sized once, at
 * load, from the machine's memory, as the dcache's is (a tracker per file
 * with dirty pages, and dirty pages are a share of memory).  Trackers are
 * freed after an RCU grace period, so a tracker found under rcu_read_lock()
 * can always be locked and checked.
 *
 * Eviction: every ->evict_inode calls clear_inode() (and evict() itself does
 * when there is none), after I_FREEING is set and before the inode is freed;
 * a kprobe there (src/hook.c) forgets the mapping.  No tracker is made for an
 * inode whose eviction has begun.  The flusher pins a mapping it writes with
 * its super block's s_umount, taken shared (umount waits, as for Linux's own
 * writeback), and the inode's I_SYNC (eviction waits; the last iput() stays
 * with whoever drops the last reference), or for metadata a reference.
 */
#include <linux/backing-dev.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/lockdep.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/rculist.h>
#include <linux/rcupdate.h>

#include "aipu.h"
#include "aipu_compat.h"

/* Buckets: one per 32 pages of memory, within these powers of two. */
#define AIPU_TABLE_PAGES_PER_BUCKET 32
#define AIPU_TABLE_MIN_BITS 12
#define AIPU_TABLE_MAX_BITS 20
#define AIPU_TABLE_LOCKS 256	/* bucket i: lock i % AIPU_TABLE_LOCKS */

struct hlist_head *aipu_mapping_table;
unsigned int aipu_mapping_bits;
static raw_spinlock_t table_locks[AIPU_TABLE_LOCKS];	/* see aipu.h */

static struct aipu_mapping *to_mapping(struct aipu_file *t)
{
	return container_of(t, struct aipu_mapping, t);
}

/*
 * The file's lock: inside its device's (the flusher, the probes' slow path)
 * or alone (the probes' fast path), interrupts off either way.
 */
void aipu_file_lock(struct aipu_file *t)
	__acquires(&to_mapping(t)->lock)
{
	raw_spin_lock(aipu_file_lock_of(t));
}

void aipu_file_unlock(struct aipu_file *t)
	__releases(&to_mapping(t)->lock)
{
	raw_spin_unlock(aipu_file_lock_of(t));
}

#ifdef CONFIG_LOCKDEP
void aipu_file_assert_held(struct aipu_file *t)
{
	lockdep_assert_held(aipu_file_lock_of(t));
}
#endif

/* An RCU reader, or the device's lock held (which excludes changes). */
static struct aipu_mapping *lookup(const void *key)
{
	struct aipu_file *t = aipu_mapping_find(key);

	return t ? to_mapping(t) : NULL;
}

/* The table behind src/queue/queue.c: called with the device's lock held. */
struct aipu_file *aipu_file_lookup(const void *key)
{
	struct aipu_mapping *m;

	rcu_read_lock();
	m = lookup(key);
	rcu_read_unlock();
	return m ? &m->t : NULL;
}

int aipu_file_insert(struct aipu_file *t)
{
	u32 h = hash_ptr(t->key, aipu_mapping_bits);
	raw_spinlock_t *lock = &table_locks[h % AIPU_TABLE_LOCKS];
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	hlist_add_head_rcu(&to_mapping(t)->node, &aipu_mapping_table[h]);
	raw_spin_unlock_irqrestore(lock, flags);
	return 0;
}

void aipu_file_remove(struct aipu_file *t)
{
	u32 h = hash_ptr(t->key, aipu_mapping_bits);
	raw_spinlock_t *lock = &table_locks[h % AIPU_TABLE_LOCKS];
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	hlist_del_rcu(&to_mapping(t)->node);
	raw_spin_unlock_irqrestore(lock, flags);
}

static bool evicting(struct inode *inode)
{
	return aipu_inode_state(inode) & (I_FREEING | I_WILL_FREE | I_CLEAR);
}

/*
 * The tracker of @mapping on @d, made if need be; @d's lock and the RCU
 * read lock held, @hint from aipu_mapping_find().  NULL with *@gone when the
 * inode is being evicted, without it when no memory could be had.
 *
 * None is made once the inode's eviction has begun: the eviction probe may
 * have run already, and nothing would forget the new tracker before the
 * inode is freed (the debug kernel's KASAN caught the flusher reading such
 * an inode).  Reclaim does dirty pages then: pageout() holds the folio lock,
 * not the inode, and ->writepage may redirty the folio while the final
 * truncate waits for it.  I_FREEING or I_WILL_FREE is set under i_lock before
 * eviction starts, so it is seen here once the device's lock is taken after
 * the kill.
 */
struct aipu_file *aipu_mapping_tracker(struct aipu_dev *d,
				       struct address_space *mapping,
				       struct aipu_file *hint,
				       bool *gone)
{
	*gone = false;
	if (d->dead)
		return NULL;	/* being reaped: a fallback, counted */
	if (hint && hint->hashed)
		return hint;	/* the fast path: one lookup, one lock */
	*gone = evicting(mapping->host);
	if (*gone)
		return NULL;
	aipu_dev_busy(d);
	return aipu_queue_get(&d->tr, mapping, mapping->host);
}

/*
 * @inode was dirty before the probes were in (src/handover.c's adoption at
 * load): the tracker and entries the probes would have made for @what
 * (AIPU_ADOPT_*), at @time.  @inode's i_lock held and its eviction not
 * begun, so it cannot be freed meanwhile; any context, as the probes.
 * False when no device or tracker memory could be had: the caller leaves
 * the inode to Linux's periodic writeback.
 */
bool aipu_mapping_adopt(struct inode *inode, unsigned int what,
			unsigned long time)
{
	struct address_space *mapping = &inode->i_data;
	struct aipu_file *t;
	struct aipu_dev *d;
	unsigned long flags;
	bool gone = false;

	lockdep_assert_held(&inode->i_lock);
	rcu_read_lock();
	t = aipu_mapping_find(mapping);
	d = t ? aipu_tracker_dev(t) : aipu_dev_get(inode_to_bdi(inode));
	if (d) {
		struct aipu_dev *live = aipu_dev_lock_live(d, &flags);

		t = aipu_mapping_tracker(live, mapping, live == d ? t : NULL,
					 &gone);
		if (t)
			aipu_queue_adopt(&live->tr, t, what, time);
		aipu_dev_unlock(live, flags);
	}
	rcu_read_unlock();
	return d && (t || gone);
}

/*
 * Might @inode hold pages a probe found no tracker memory for, between
 * misses @since and @upto of @tr (its device's queue)?  Yes if it has no
 * tracker there, or one made after the first of those misses.  Any
 * context.
 */
bool aipu_mapping_missed(struct inode *inode, struct aipu_queue *tr,
			 u16 since, u16 upto)
{
	struct aipu_file *t;
	bool missed;

	rcu_read_lock();
	t = aipu_mapping_find(&inode->i_data);
	missed = !t || t->tr != tr ||
		 (u16)(t->born - since - 1) < (u16)(upto - since);
	rcu_read_unlock();
	return missed;
}

/* Eviction: forget @mapping, a batch of its queue per hold of the lock. */
void aipu_mapping_kill(struct address_space *mapping)
{
	struct aipu_mapping *m;
	unsigned long flags;
	struct aipu_dev *d;
	bool done;

	rcu_read_lock();
	m = lookup(mapping);
	if (m) {
		d = aipu_tracker_dev(&m->t);
		flags = aipu_dev_lock(d);
		/* Freed meanwhile as empty: nothing to forget. */
		done = !m->t.hashed ||
		       aipu_queue_kill(&d->tr, &m->t, AIPU_DRAIN_BATCH);
		aipu_dev_unlock(d, flags);
		/* Ours now: aipu_queue_kill() holds it until its last call. */
		while (!done) {
			flags = aipu_dev_lock(d);
			done = aipu_queue_kill(&d->tr, &m->t, AIPU_DRAIN_BATCH);
			aipu_dev_unlock(d, flags);
		}
	}
	rcu_read_unlock();
	if (m)
		aipu_mem_drain();
}

/*
 * rmmod: forget every mapping of @d, a batch of its queue per hold of the
 * lock.
 * No probe that makes trackers and no flusher runs any more.
 */
void aipu_mapping_forget(struct aipu_dev *d)
{
	struct aipu_file *t;
	unsigned long flags;
	bool done;

	for (;;) {
		flags = aipu_dev_lock(d);
		t = list_first_entry_or_null(&d->tr.trackers,
					     struct aipu_file, link);
		done = !t || aipu_queue_kill(&d->tr, t, AIPU_DRAIN_BATCH);
		aipu_dev_unlock(d, flags);
		if (!t)
			return;
		while (!done) {
			flags = aipu_dev_lock(d);
			done = aipu_queue_kill(&d->tr, t, AIPU_DRAIN_BATCH);
			aipu_dev_unlock(d, flags);
		}
		aipu_mem_drain();
	}
}

/*
 * Pin @inode, whose eviction has not begun, for writing its pages: I_SYNC,
 * as Linux's own flusher does, not a reference.  If the file is unlinked and
 * closed meanwhile, the last iput() is the closer's: it evicts the inode
 * once we clear I_SYNC, and the flusher never does a file's truncation.  An
 * inode that Linux's writeback holds (I_SYNC already) is busy this period.
 */
static enum aipu_pin_result pin_sync(struct aipu_pin *p, struct inode *inode)
{
	enum aipu_pin_result res = AIPU_PIN_OK;
	unsigned long state;

	spin_lock(&inode->i_lock);
	state = aipu_inode_state(inode);
	if (state & (I_FREEING | I_WILL_FREE))
		res = AIPU_PIN_GONE;
	else if (state & (I_NEW | I_SYNC))
		res = AIPU_PIN_BUSY;
	else
		aipu_inode_sync_set(inode);
	spin_unlock(&inode->i_lock);
	p->inode = res == AIPU_PIN_OK ? inode : NULL;
	p->sync = true;
	return res;
}

/*
 * A reference: sync_inode_metadata() skips an inode with I_SYNC set.  An
 * inode still being set up by its creator is not ours to write yet: its
 * reference goes back in *@put, for an iput() outside the RCU read section
 * (an iput() may sleep).
 */
static enum aipu_pin_result pin_ref(struct aipu_pin *p, struct inode *inode,
				    struct inode **put)
{
	p->inode = igrab(inode);
	p->sync = false;
	if (!p->inode)
		return AIPU_PIN_GONE;
	if (aipu_inode_state(p->inode) & I_NEW) {
		*put = p->inode;
		p->inode = NULL;
		return AIPU_PIN_BUSY;
	}
	return AIPU_PIN_OK;
}

/*
 * The cgroup writeback context @t's writes are charged to, NULL for the
 * device's own (or an evicted file).  @d's lock held: a tracker seen alive
 * under it has a valid inode (see aipu_pin()).
 */
const void *aipu_tracker_wb(struct aipu_dev *d, struct aipu_file *t)
{
	return t->dead ? NULL : aipu_inode_wb(t->host, d->bdi);
}

/*
 * No reference is taken on a frozen super block: the last iput() of an
 * inode unlinked meanwhile would evict it in sb_start_intwrite(), waiting
 * for a thaw that waits for our s_umount.  Its metadata is clean anyway
 * (freeze_super() synced it).  Held shared, s_umount keeps a freeze that
 * has not frozen yet from getting past SB_FREEZE_WRITE (it takes s_umount
 * exclusive for the later levels), so the answer holds while we write.
 */
static bool sb_frozen(struct super_block *sb)
{
	return READ_ONCE(sb->s_writers.frozen) != SB_UNFROZEN;
}

/* s_umount held shared: pin @inode as @how says. */
static enum aipu_pin_result pin_inode(struct aipu_pin *p, struct inode *inode,
				      enum aipu_pin_how how, struct inode **put)
{
	if (!aipu_sb_usable(p->sb))
		return AIPU_PIN_GONE;
	if (how == AIPU_PIN_REF && sb_frozen(p->sb))
		return AIPU_PIN_BUSY;
	return how == AIPU_PIN_SYNC ? pin_sync(p, inode) :
				      pin_ref(p, inode, put);
}

/*
 * Pin @t's inode (@how: I_SYNC for data, a reference for metadata) and take
 * its super block's s_umount, shared, so neither eviction nor umount can
 * pull the mapping away while we write.  A tracker seen alive under its
 * device's lock, inside an RCU read section, has a valid inode and super
 * block (inodes are freed after a grace period, and the kill marks the
 * tracker dead first).
 */
enum aipu_pin_result aipu_pin(struct aipu_file *t, struct aipu_pin *p,
			      enum aipu_pin_how how)
{
	struct aipu_dev *d = aipu_tracker_dev(t);
	enum aipu_pin_result res = AIPU_PIN_GONE;
	struct inode *inode, *put = NULL;
	unsigned long flags;
	bool alive;

	rcu_read_lock();
	flags = aipu_dev_lock(d);
	alive = !t->dead;
	inode = t->host;
	aipu_dev_unlock(d, flags);
	if (alive) {
		p->sb = inode->i_sb;
		res = AIPU_PIN_UNMOUNTING;
		if (down_read_trylock(&p->sb->s_umount)) {
			res = pin_inode(p, inode, how, &put);
			if (res != AIPU_PIN_OK && !put)
				up_read(&p->sb->s_umount);
		}
	}
	rcu_read_unlock();
	if (put) {
		/* An iput() may sleep; the reference may not outlive umount. */
		iput(put);
		up_read(&p->sb->s_umount);
	}
	return res;
}

/*
 * Clear I_SYNC as inode_sync_complete() does, and leave the inode's dirty
 * state and lists as writeback_single_inode() leaves them.
 *
 * Only __writeback_single_inode() clears I_DIRTY_PAGES, and aipu writes
 * pages with ->writepages: an inode whose pages it wrote would stay on the
 * device's b_dirty with its first dirtied_when, never on the inode LRU, and
 * look expired to Linux's next periodic writeback.  So, @wrote and the
 * inode's own metadata clean (else aipu's metadata entry writes it in time,
 * with the same call), sync_inode_metadata(inode, 0) does the kernel's own
 * bookkeeping and nothing else: I_DIRTY_PAGES cleared unless a page is
 * still dirty, the inode off b_dirty when clean (inode_cgwb_move_to_attached())
 * or back at b_dirty's head with a new dirtied_when when not
 * (redirty_tail_locked()), and its lazytime timestamps to b_dirty_time.
 * It takes a reference (it may not run on an unused inode); the last
 * iput() of a clean, unused inode files it on the LRU (inode_add_lru(),
 * not exported, which an iput() that found I_SYNC set while we wrote left
 * undone).  An inode being evicted is not touched: igrab()'s test, under
 * i_lock, so it cannot be freed before the reference is ours.  Not on a
 * frozen super block (sb_frozen()), where nothing is dirty, and where the
 * last iput() of an inode unlinked meanwhile would wait for a thaw.  Nor
 * on an inode the handover still owns (aipu_handover_owns(): a new
 * dirtied_when would hide pages aipu never saw from Linux).  The
 * LRU's reference is never the last of an unlinked inode: that one's
 * last iput() set I_FREEING and waits for I_SYNC in evict().
 */
static void unpin_sync(struct inode *inode, bool wrote)
{
	unsigned long state;
	bool settle, unused;

	spin_lock(&inode->i_lock);
	aipu_inode_sync_clear(inode);
	state = aipu_inode_state(inode);
	settle = wrote && !sb_frozen(inode->i_sb) && (state & I_DIRTY_PAGES) &&
		 !(state & (I_DIRTY_INODE | I_SYNC | I_NEW | I_FREEING |
			    I_WILL_FREE)) && !aipu_handover_owns_locked(inode);
	unused = !atomic_read(&inode->i_count) &&
		 !(state & (I_DIRTY_ALL | I_FREEING | I_WILL_FREE));
	if (settle || unused)
		__iget(inode);
	spin_unlock(&inode->i_lock);
	if (settle)
		sync_inode_metadata(inode, 0);
	if (settle || unused)
		iput(inode);
}

/* @wrote: aipu wrote pages of the inode under this pin. */
void aipu_unpin(struct aipu_pin *p, bool wrote)
{
	if (p->sync)
		unpin_sync(p->inode, wrote);
	else
		iput(p->inode);
	up_read(&p->sb->s_umount);
}

int aipu_mapping_init(void)
{
	unsigned long want = totalram_pages() / AIPU_TABLE_PAGES_PER_BUCKET;
	unsigned int i;

	for (i = 0; i < AIPU_TABLE_LOCKS; i++)
		raw_spin_lock_init(&table_locks[i]);
	aipu_mapping_bits = clamp_t(unsigned int, ilog2(max(want, 1UL)),
				    AIPU_TABLE_MIN_BITS, AIPU_TABLE_MAX_BITS);
	/* Zeroed heads are empty lists. */
	aipu_mapping_table = kvcalloc(1UL << aipu_mapping_bits,
				      sizeof(*aipu_mapping_table), GFP_KERNEL);
	return aipu_mapping_table ? 0 : -ENOMEM;
}

/* Every tracker is gone (aipu_mapping_forget() on every device). */
void aipu_mapping_exit(void)
{
	kvfree(aipu_mapping_table);
	aipu_mapping_table = NULL;
}
