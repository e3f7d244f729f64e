// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the mappings aipu tracks, and their lifetime.
 *
 * A tracker is found from its struct address_space through an rhashtable:
 * lookups take no lock (RCU) and the table grows with the number of files,
 * so 100,000 dirty files cost what ten do.  Trackers are freed after an RCU
 * grace period, so a tracker found under rcu_read_lock() can always be
 * locked and checked.
 *
 * Eviction: every ->evict_inode calls clear_inode() (and evict() itself does
 * when there is none), after I_FREEING is set and before the inode is freed;
 * a kprobe there (src/hook.c) forgets the mapping.  No tracker is made for an
 * inode whose eviction has begun.  The flusher pins a mapping it writes with
 * its super block's s_umount, taken shared (umount waits, as for Linux's own
 * writeback), and an inode reference.
 */
#include <linux/backing-dev.h>
#include <linux/fs.h>
#include <linux/rcupdate.h>
#include <linux/rhashtable.h>

#include "aipu.h"
#include "aipu_compat.h"

/* Runs freed per hold of the device's lock when a mapping is evicted. */
#define AIPU_KILL_BATCH 256

static const struct rhashtable_params table_params = {
	.key_len = sizeof(void *),
	.key_offset = offsetof(struct aipu_mapping, t.key),
	.head_offset = offsetof(struct aipu_mapping, node),
	.automatic_shrinking = true,
};

static struct rhashtable table;

static struct aipu_mapping *to_mapping(struct aipu_tracker *t)
{
	return container_of(t, struct aipu_mapping, t);
}

struct aipu_dev *aipu_tracker_dev(struct aipu_tracker *t)
{
	return container_of(t->tr, struct aipu_dev, tr);
}

/* The table behind track.c: called with the device's lock held. */
struct aipu_tracker *aipu_tracker_lookup(const void *key)
{
	struct aipu_mapping *m = rhashtable_lookup_fast(&table, &key,
							table_params);

	return m ? &m->t : NULL;
}

int aipu_tracker_insert(struct aipu_tracker *t)
{
	return rhashtable_lookup_insert_fast(&table, &to_mapping(t)->node,
					     table_params);
}

void aipu_tracker_remove(struct aipu_tracker *t)
{
	rhashtable_remove_fast(&table, &to_mapping(t)->node, table_params);
}

static bool evicting(struct inode *inode)
{
	return aipu_inode_state(inode) & (I_FREEING | I_WILL_FREE | I_CLEAR);
}

/*
 * The device of @mapping, made if need be, and in *@hint its tracker if it
 * has one (to be checked under the device's lock).  RCU read lock held, any
 * context; NULL when no device could be had.
 */
struct aipu_dev *aipu_mapping_dev(struct address_space *mapping,
				  struct aipu_tracker **hint)
{
	struct aipu_mapping *m = rhashtable_lookup(&table, &mapping,
						   table_params);

	*hint = m ? &m->t : NULL;
	return m ? aipu_tracker_dev(&m->t) :
		   aipu_dev_get(inode_to_bdi(mapping->host));
}

/*
 * The tracker of @mapping on @d, made if need be; @d's lock and the RCU
 * read lock held, @hint from aipu_mapping_dev().  NULL with *@gone when the
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
struct aipu_tracker *aipu_mapping_tracker(struct aipu_dev *d,
					  struct address_space *mapping,
					  struct aipu_tracker *hint,
					  bool *gone)
{
	*gone = false;
	if (d->dead)
		return NULL;	/* being reaped: a fallback, counted */
	if (hint && hint->hashed)
		return hint;	/* the fast path: one lookup, one lock */
	*gone = evicting(mapping->host);
	return *gone ? NULL : track_get(&d->tr, mapping, mapping->host);
}

/* Eviction: forget @mapping, a batch of runs per hold of the lock. */
void aipu_mapping_kill(struct address_space *mapping)
{
	struct aipu_mapping *m;
	unsigned long flags;
	struct aipu_dev *d;
	bool done;

	rcu_read_lock();
	m = rhashtable_lookup(&table, &mapping, table_params);
	if (m) {
		d = aipu_tracker_dev(&m->t);
		flags = aipu_dev_lock(d);
		/* Freed meanwhile as empty: nothing to forget. */
		done = !m->t.hashed ||
		       track_kill(&d->tr, &m->t, AIPU_KILL_BATCH);
		aipu_dev_unlock(d, flags);
		/* Ours now: track_kill() holds it until its last call. */
		while (!done) {
			flags = aipu_dev_lock(d);
			done = track_kill(&d->tr, &m->t, AIPU_KILL_BATCH);
			aipu_dev_unlock(d, flags);
		}
	}
	rcu_read_unlock();
}

/*
 * rmmod: forget every mapping of @d, a batch of runs per hold of the lock.
 * No probe that makes trackers and no flusher runs any more.
 */
void aipu_mapping_forget(struct aipu_dev *d)
{
	struct aipu_tracker *t;
	unsigned long flags;
	bool done;

	for (;;) {
		flags = aipu_dev_lock(d);
		t = list_first_entry_or_null(&d->tr.trackers,
					     struct aipu_tracker, link);
		done = !t || track_kill(&d->tr, t, AIPU_KILL_BATCH);
		aipu_dev_unlock(d, flags);
		if (!t)
			return;
		while (!done) {
			flags = aipu_dev_lock(d);
			done = track_kill(&d->tr, t, AIPU_KILL_BATCH);
			aipu_dev_unlock(d, flags);
		}
	}
}

/*
 * Take a reference on @t's inode and its super block's s_umount, shared,
 * so neither eviction nor umount can pull the mapping away while we write.
 * A tracker seen alive under its device's lock, inside an RCU read section,
 * has a valid inode and super block (inodes are freed after a grace period,
 * and the kill marks the tracker dead first).
 */
enum aipu_pin_result aipu_pin(struct aipu_tracker *t, struct aipu_pin *p)
{
	struct aipu_dev *d = aipu_tracker_dev(t);
	enum aipu_pin_result res = AIPU_PIN_GONE;
	unsigned long flags;
	struct inode *inode;
	bool alive;

	rcu_read_lock();
	flags = aipu_dev_lock(d);
	alive = !t->dead;
	inode = t->host;
	aipu_dev_unlock(d, flags);
	if (alive) {
		p->sb = inode->i_sb;
		res = AIPU_PIN_BUSY;
		if (down_read_trylock(&p->sb->s_umount)) {
			p->inode = aipu_sb_usable(p->sb) ? igrab(inode) : NULL;
			res = p->inode ? AIPU_PIN_OK : AIPU_PIN_GONE;
			if (!p->inode)
				up_read(&p->sb->s_umount);
		}
	}
	rcu_read_unlock();
	/* Still being set up by its creator: not ours to write yet. */
	if (res == AIPU_PIN_OK && (aipu_inode_state(p->inode) & I_NEW)) {
		aipu_unpin(p);
		res = AIPU_PIN_BUSY;
	}
	return res;
}

void aipu_unpin(struct aipu_pin *p)
{
	iput(p->inode);
	up_read(&p->sb->s_umount);
}

int aipu_mapping_init(void)
{
	return rhashtable_init(&table, &table_params);
}

/* Every tracker is gone (track_clear() on every device). */
void aipu_mapping_exit(void)
{
	rhashtable_destroy(&table);
}
