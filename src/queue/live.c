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

void aipu_live_init(struct aipu_live *l)
{
	l->chunks = RB_ROOT;
	l->hint = NULL;
	l->dir = NULL;
	l->dir_base = 0;
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

/*
 * Give the file a directory of the window holding @base, filled from the
 * tree: at most AIPU_LIVE_DIR_SLOTS chunks are looked at, however many the
 * file has.  Tried when the file's chunks reach AIPU_LIVE_DIR_MIN and each
 * time they double, so failing costs O(1) a chunk made.
 */
static void dir_make(struct aipu_live *l, pgoff_t base)
{
	struct rb_node *n = l->chunks.rb_node, *first = NULL;
	struct aipu_live_chunk *c;
	pgoff_t end;

	if (l->dir || l->nr_chunks < AIPU_LIVE_DIR_MIN ||
	    (l->nr_chunks & (l->nr_chunks - 1)))
		return;
	l->dir = aipu_live_dir_alloc();
	if (!l->dir)
		return;
	memset(l->dir, 0, sizeof(*l->dir));
	l->dir_base = base - base % AIPU_LIVE_DIR_PAGES;
	end = l->dir_base + (AIPU_LIVE_DIR_PAGES - AIPU_LIVE_CHUNK_PAGES);
	while (n) {			/* the window's first chunk */
		c = chunk_of(n);
		if (c->base < l->dir_base) {
			n = n->rb_right;
		} else {
			first = n;
			n = n->rb_left;
		}
	}
	for (n = first; n && chunk_of(n)->base <= end; n = rb_next(n))
		*aipu_live_dir_slot(l, chunk_of(n)->base) = chunk_of(n);
}

/* The chunk at @base in the tree, made (and linked) if @make. */
static struct aipu_live_chunk *tree_find(struct aipu_live *l, pgoff_t base,
					 bool make)
{
	struct rb_node **p = &l->chunks.rb_node, *parent = NULL;
	struct aipu_live_chunk *c;

	while (*p) {
		parent = *p;
		c = chunk_of(parent);
		if (base < c->base)
			p = &parent->rb_left;
		else if (base > c->base)
			p = &parent->rb_right;
		else
			return c;
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
	return c;
}

/*
 * The chunk holding @index's bit, made if @make; NULL if none or no memory.
 * In the directory's window its slot answers (every chunk of the window is
 * there), elsewhere the tree.
 */
static struct aipu_live_chunk *chunk_find(struct aipu_live *l, pgoff_t index,
					  bool make)
{
	pgoff_t base = chunk_base(index);
	struct aipu_live_chunk *c = aipu_live_chunk_near(l, index), **slot;
	unsigned long had = l->nr_chunks;

	if (c)
		return c;
	slot = aipu_live_dir_slot(l, base);
	if (slot && !make)
		return NULL;	/* the window's slot says: none */
	c = tree_find(l, base, make);
	if (!c)
		return NULL;
	if (slot)
		*slot = c;
	else if (l->nr_chunks != had)
		dir_make(l, base);	/* only for a chunk just made */
	return l->hint = c;
}

static void chunk_free(struct aipu_live *l, struct aipu_live_chunk *c)
{
	struct aipu_live_chunk **slot = aipu_live_dir_slot(l, c->base);

	rb_erase(&c->node, &l->chunks);
	if (l->hint == c)
		l->hint = NULL;
	if (slot)
		*slot = NULL;
	l->nr_chunks--;
	aipu_live_chunk_free(c);
	if (!l->nr_chunks && l->dir) {
		aipu_live_dir_free(l->dir);
		l->dir = NULL;
	}
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
int aipu_live_dirty(struct aipu_live *l, pgoff_t index, unsigned long time)
{
	struct aipu_live_chunk *c = chunk_find(l, index, true);
	int err;

	if (!c)
		return -ENOMEM;
	if (!aipu_live_chunk_test(c, index)) {
		aipu_live_chunk_set(l, c, index);
		return AIPU_LIVE_NEW;
	}
	err = moved_set(l, index, time);
	return err ? err : AIPU_LIVE_AGAIN;
}

/* Is a bit of [@from, @to) set in @c?  Whole zero words skipped. */
static bool chunk_any(const struct aipu_live_chunk *c, unsigned int from,
		      unsigned int to)
{
	while (from < to) {
		if (from % BITS_PER_LONG == 0 && to - from >= BITS_PER_LONG &&
		    !c->bits[from / BITS_PER_LONG]) {
			from += BITS_PER_LONG;
			continue;
		}
		if (test_bit(from, c->bits))
			return true;
		from++;
	}
	return false;
}

/*
 * Has any page of [@index, @index + @nr) an entry not yet processed?  A
 * large folio's pages are one range: a chunk looked up once, not a page.
 */
bool aipu_live_any(struct aipu_live *l, pgoff_t index, unsigned long nr)
{
	pgoff_t end = index + nr;

	while (index < end) {
		pgoff_t base = chunk_base(index);
		pgoff_t stop = min_t(pgoff_t, end, base + AIPU_LIVE_CHUNK_PAGES);
		struct aipu_live_chunk *c = chunk_find(l, index, false);

		if (c && chunk_any(c, index - base, stop - base))
			return true;
		index = stop;
	}
	return false;
}

/* Is page @index in the moved map: dirtied again while an entry was queued? */
bool aipu_live_is_moved(struct aipu_live *l, pgoff_t index)
{
	return !RB_EMPTY_ROOT(&l->moved) && moved_find(l, index);
}

/* Does page @index have an entry not yet processed? */
bool aipu_live_test(struct aipu_live *l, pgoff_t index)
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
bool aipu_live_take(struct aipu_live *l, pgoff_t index, unsigned long time)
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
 * Done with the live entry aipu_live_take() gave of page @index: written or
 * found clean, or (@still_dirty) put back at its time.  A newer entry made
 * meanwhile keeps the page live.
 */
void aipu_live_done(struct aipu_live *l, pgoff_t index, bool still_dirty)
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
 * aipu_live_done() for pages [index, index + nr), none still dirty: a word at a
 * time when no page is in the moved map (the hand-back of a long
 * sequential extent costs its words, not its pages), else a page at a time.
 */
void aipu_live_done_range(struct aipu_live *l, pgoff_t index, unsigned long nr)
{
	pgoff_t end = index + nr, base, stop;
	struct aipu_live_chunk *c;
	unsigned int n;

	if (!RB_EMPTY_ROOT(&l->moved)) {
		for (; index < end; index++)
			aipu_live_done(l, index, false);
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
bool aipu_live_drop(struct aipu_live *l, unsigned long *budget)
{
	struct rb_node *n;

	l->pages = 0;
	for (; *budget && (n = rb_first(&l->moved)); (*budget)--)
		moved_del(l, rb_entry(n, struct aipu_moved, node));
	for (; *budget && (n = rb_first(&l->chunks)); (*budget)--)
		chunk_free(l, chunk_of(n));
	return RB_EMPTY_ROOT(&l->moved) && RB_EMPTY_ROOT(&l->chunks);
}
