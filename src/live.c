// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: the pages of a file with a live log entry, and the newest time of
 * those dirtied again while an older entry was queued.  See
 * include/aipu_live.h; callers hold the file's lock.
 */
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "aipu_live.h"

void live_init(struct aipu_live *l)
{
	l->chunks = RB_ROOT;
	l->hint = NULL;
	l->moved = RB_ROOT;
	l->nr_chunks = 0;
	l->nr_moved = 0;
	l->pages = 0;
}

static pgoff_t chunk_base(pgoff_t index)
{
	return index - index % AIPU_LIVE_CHUNK_PAGES;
}

static struct aipu_live_chunk *chunk_of(struct rb_node *n)
{
	return rb_entry(n, struct aipu_live_chunk, node);
}

/* The chunk holding @index's bit, made if @make; NULL if none or no memory. */
static struct aipu_live_chunk *chunk_find(struct aipu_live *l, pgoff_t index,
					  bool make)
{
	struct rb_node **p = &l->chunks.rb_node, *parent = NULL;
	pgoff_t base = chunk_base(index);
	struct aipu_live_chunk *c = l->hint;

	if (c && c->base == base)
		return c;
	while (*p) {
		parent = *p;
		c = chunk_of(parent);
		if (base < c->base)
			p = &parent->rb_left;
		else if (base > c->base)
			p = &parent->rb_right;
		else
			return l->hint = c;
	}
	if (!make)
		return NULL;
	c = aipu_live_chunk_alloc();
	if (!c)
		return NULL;
	memset(c->bits, 0, sizeof(c->bits));
	c->base = base;
	c->set = 0;
	rb_link_node(&c->node, parent, p);
	rb_insert_color(&c->node, &l->chunks);
	l->nr_chunks++;
	return l->hint = c;
}

static void chunk_free(struct aipu_live *l, struct aipu_live_chunk *c)
{
	rb_erase(&c->node, &l->chunks);
	if (l->hint == c)
		l->hint = NULL;
	l->nr_chunks--;
	aipu_live_chunk_free(c);
}

static struct aipu_moved *moved_find(struct aipu_live *l, pgoff_t index)
{
	struct rb_node *n = l->moved.rb_node;

	while (n) {
		struct aipu_moved *m = rb_entry(n, struct aipu_moved, node);

		if (index < m->index)
			n = n->rb_left;
		else if (index > m->index)
			n = n->rb_right;
		else
			return m;
	}
	return NULL;
}

/* Record @time as @index's newest; -ENOMEM if it needs an entry and none. */
static int moved_set(struct aipu_live *l, pgoff_t index, unsigned long time)
{
	struct rb_node **p = &l->moved.rb_node, *parent = NULL;
	struct aipu_moved *m;

	while (*p) {
		parent = *p;
		m = rb_entry(parent, struct aipu_moved, node);
		if (index < m->index) {
			p = &parent->rb_left;
		} else if (index > m->index) {
			p = &parent->rb_right;
		} else {
			m->time = time;
			return 0;
		}
	}
	m = aipu_moved_alloc();
	if (!m)
		return -ENOMEM;
	m->index = index;
	m->time = time;
	rb_link_node(&m->node, parent, p);
	rb_insert_color(&m->node, &l->moved);
	l->nr_moved++;
	return 0;
}

static void moved_del(struct aipu_live *l, struct aipu_moved *m)
{
	rb_erase(&m->node, &l->moved);
	l->nr_moved--;
	aipu_moved_free(m);
}

/*
 * Page @index went clean -> dirty at @time and gets a log entry.  Returns
 * AIPU_LIVE_NEW if it had no live entry, AIPU_LIVE_AGAIN if it had one
 * (now stale: @time is recorded as its newest), or -ENOMEM: then the
 * caller must bound the page some other way (the whole-file run), as the
 * older entry may be the one the flusher is writing and about to finish.
 */
int live_dirty(struct aipu_live *l, pgoff_t index, unsigned long time)
{
	struct aipu_live_chunk *c = chunk_find(l, index, true);
	unsigned int bit = index % AIPU_LIVE_CHUNK_PAGES;
	int err;

	if (!c)
		return -ENOMEM;
	if (!test_bit(bit, c->bits)) {
		__set_bit(bit, c->bits);
		c->set++;
		l->pages++;
		return AIPU_LIVE_NEW;
	}
	err = moved_set(l, index, time);
	return err ? err : AIPU_LIVE_AGAIN;
}

/* Is page @index in the moved map: dirtied again while an entry was queued? */
bool live_is_moved(struct aipu_live *l, pgoff_t index)
{
	return !RB_EMPTY_ROOT(&l->moved) && moved_find(l, index);
}

/* Does page @index have an entry not yet processed? */
bool live_test(struct aipu_live *l, pgoff_t index)
{
	struct aipu_live_chunk *c = chunk_find(l, index, false);

	return c && test_bit(index % AIPU_LIVE_CHUNK_PAGES, c->bits);
}

/*
 * The flusher comes to the entry of page @index dirtied at @time: false if
 * a newer entry supersedes it (skip it), true if it is the page's live
 * entry, to be written now.  From here a dirtying of the page, even in the
 * same jiffy, is a newer entry.
 */
bool live_take(struct aipu_live *l, pgoff_t index, unsigned long time)
{
	struct aipu_moved *m;

	if (RB_EMPTY_ROOT(&l->moved))
		return true;
	m = moved_find(l, index);
	if (!m)
		return true;
	if (m->time != time)
		return false;
	moved_del(l, m);
	return true;
}

/*
 * Done with the live entry live_take() gave of page @index: written or
 * found clean, or (@still_dirty) put back at its time.  A newer entry made
 * meanwhile keeps the page live.
 */
void live_done(struct aipu_live *l, pgoff_t index, bool still_dirty)
{
	struct aipu_live_chunk *c;
	unsigned int bit = index % AIPU_LIVE_CHUNK_PAGES;

	if (still_dirty ||
	    (!RB_EMPTY_ROOT(&l->moved) && moved_find(l, index)))
		return;
	c = chunk_find(l, index, false);
	if (!c || !test_bit(bit, c->bits))
		return;
	__clear_bit(bit, c->bits);
	l->pages--;
	if (!--c->set)
		chunk_free(l, c);
}

/* Clear chunk @c's bits [from, to); returns how many were set. */
static unsigned int chunk_clear(struct aipu_live_chunk *c, unsigned int from,
				unsigned int to)
{
	unsigned int w, lo, cleared = 0;
	unsigned long mask;

	for (w = from / BITS_PER_LONG; w * BITS_PER_LONG < to; w++) {
		lo = w * BITS_PER_LONG;
		mask = ~0UL;
		if (from > lo)
			mask &= ~0UL << (from - lo);
		if (to < lo + BITS_PER_LONG)
			mask &= ~0UL >> (lo + BITS_PER_LONG - to);
		cleared += hweight_long(c->bits[w] & mask);
		c->bits[w] &= ~mask;
	}
	return cleared;
}

/*
 * live_done() for pages [index, index + nr), none still dirty: a word at a
 * time when no page is in the moved map (the hand-back of a long
 * sequential extent costs its words, not its pages), else a page at a time.
 */
void live_done_range(struct aipu_live *l, pgoff_t index, unsigned long nr)
{
	pgoff_t end = index + nr, base, stop;
	struct aipu_live_chunk *c;
	unsigned int n;

	if (!RB_EMPTY_ROOT(&l->moved)) {
		for (; index < end; index++)
			live_done(l, index, false);
		return;
	}
	for (; index < end; index = stop) {
		base = chunk_base(index);
		stop = min_t(pgoff_t, end, base + AIPU_LIVE_CHUNK_PAGES);
		c = chunk_find(l, index, false);
		if (!c)
			continue;
		n = chunk_clear(c, index - base, stop - base);
		c->set -= n;
		l->pages -= n;
		if (!c->set)
			chunk_free(l, c);
	}
}

/*
 * Forget every page (eviction, or the file bounded as a whole), freeing at
 * most *@budget chunks and moved entries (counted down).  Returns true once
 * nothing is held; until then call again, and use @l for nothing else.
 */
bool live_drop(struct aipu_live *l, unsigned long *budget)
{
	struct rb_node *n;

	l->pages = 0;
	for (; *budget && (n = rb_first(&l->moved)); (*budget)--)
		moved_del(l, rb_entry(n, struct aipu_moved, node));
	for (; *budget && (n = rb_first(&l->chunks)); (*budget)--)
		chunk_free(l, chunk_of(n));
	return RB_EMPTY_ROOT(&l->moved) && RB_EMPTY_ROOT(&l->chunks);
}
