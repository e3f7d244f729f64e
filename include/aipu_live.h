/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which pages of a file have a live entry in its log (docs/design.md §4).
 *
 * Beside src/queue/log.c: pure logic, tested in user space
 * (tests/unit/test_live.c).
 *
 * The log only appends, so a page cleaned by someone else (fsync, reclaim,
 * Linux's own writeback) and dirtied again gets a second entry while the
 * first is still queued: the first is *stale*, and writing the page when it
 * comes due would write it before its new time has aged.  The probe cannot
 * find the old entry; it can tell that there is one: a bit per page, set
 * while the page has an entry not yet processed.  A clean -> dirty
 * transition of a page whose bit is set records the page's newest time in
 * the *moved* map (rare: it needs someone else's write in between); when
 * the flusher comes to an entry of a page in that map with another time,
 * the entry is stale and skipped.
 *
 * Times tell entries apart, so a page cleaned by someone else and dirtied
 * again within the jiffy of its first dirtying leaves two entries of one
 * time: the first taken is written, and the page's bit may be cleared while
 * the second is queued; a later dirtying then makes a second live entry and
 * the page is written early (never late).  That needs a write that does not
 * go through the page's entries (fsync, reclaim, or aipu's own whole-file
 * write) within one jiffy of the dirtying: the flusher's writes of entries
 * take nothing of the current jiffy (max_age_ms is 100 ms at least, and
 * staging leaves that jiffy's pages), and it puts back no page that has a
 * newer entry (aipu_flog_done()).
 *
 * Bits live in chunks of AIPU_LIVE_CHUNK_PAGES pages (an rbtree by base,
 * with a hint for runs of nearby pages): about 0.2 B a page where the dirty
 * pages are dense, a chunk per page at worst.  Finding a random page's
 * chunk in the tree was most of what a random page costs above a
 * sequential one (docs/design.md, 4), so a file with AIPU_LIVE_DIR_MIN
 * chunks also gets a directory: a 4-KiB array of the chunk pointers of one
 * window of AIPU_LIVE_DIR_SLOTS chunks (1 GiB of 4-KiB pages), the window
 * of the chunk that made it, so a page there finds its chunk in one load.
 * Every chunk stays in the tree; the directory only mirrors its window, is
 * a speed-up only (without memory for it the tree serves alone), and goes
 * with the file's last chunk.  Chunks, directories and moved entries come
 * from the caller (aipu_live_*_alloc()): in the kernel chunks and moved
 * entries from aipu's own reserve, so the probe allocates nothing from the
 * slab under a raw spinlock (PREEMPT_RT), and directories from the slab
 * only where it may be called there (none on PREEMPT_RT).  Callers hold
 * the file's lock.
 */
#ifndef AIPU_LIVE_H
#define AIPU_LIVE_H

#include <linux/bitops.h>
#include <linux/rbtree.h>
#include <linux/types.h>

#define AIPU_LIVE_CHUNK_PAGES	512
#define AIPU_LIVE_WORDS		(AIPU_LIVE_CHUNK_PAGES / BITS_PER_LONG)
/* A directory: 512 chunk pointers (4 KiB), made once a file has 8 chunks. */
#define AIPU_LIVE_DIR_SLOTS	512
#define AIPU_LIVE_DIR_PAGES	(AIPU_LIVE_DIR_SLOTS * AIPU_LIVE_CHUNK_PAGES)
#define AIPU_LIVE_DIR_MIN	8

struct aipu_live_chunk {
	struct rb_node node;
	pgoff_t base;			/* a multiple of AIPU_LIVE_CHUNK_PAGES */
	unsigned int set;		/* bits set */
	unsigned long bits[AIPU_LIVE_WORDS];
};

struct aipu_live_dir {
	struct aipu_live_chunk *slot[AIPU_LIVE_DIR_SLOTS];
};

struct aipu_moved {
	struct rb_node node;
	pgoff_t index;
	unsigned long time;		/* the page's newest entry's time */
};

struct aipu_live {
	struct rb_root chunks;
	struct aipu_live_chunk *hint;	/* the chunk used last */
	struct aipu_live_dir *dir;	/* the chunks of one window, or NULL */
	pgoff_t dir_base;		/* the window's first page */
	struct rb_root moved;
	unsigned long nr_chunks, nr_moved, pages;
};

/* Provided by the kernel glue or the unit tests. */
struct aipu_live_chunk *aipu_live_chunk_alloc(void);
void aipu_live_chunk_free(struct aipu_live_chunk *c);
struct aipu_live_dir *aipu_live_dir_alloc(void);
void aipu_live_dir_free(struct aipu_live_dir *dir);
struct aipu_moved *aipu_moved_alloc(void);
void aipu_moved_free(struct aipu_moved *m);

enum aipu_live_seen { AIPU_LIVE_NEW, AIPU_LIVE_AGAIN };

/* The directory's slot of the chunk at @base, NULL outside its window. */
static inline struct aipu_live_chunk **aipu_live_dir_slot(struct aipu_live *l,
							  pgoff_t base)
{
	pgoff_t n;

	if (!l->dir || base < l->dir_base)
		return NULL;
	n = (base - l->dir_base) / AIPU_LIVE_CHUNK_PAGES;
	return n < AIPU_LIVE_DIR_SLOTS ? &l->dir->slot[n] : NULL;
}

/*
 * The chunk holding @index's bit if it is at hand, the one used last or the
 * directory's (made the one used last), inline for the probe; NULL where
 * the tree must be searched or the chunk made (aipu_live_dirty()).
 */
static inline struct aipu_live_chunk *aipu_live_chunk_near(struct aipu_live *l,
							   pgoff_t index)
{
	pgoff_t base = index - index % AIPU_LIVE_CHUNK_PAGES;
	struct aipu_live_chunk *c = l->hint, **slot;

	if (c && c->base == base)
		return c;
	slot = aipu_live_dir_slot(l, base);
	c = slot ? *slot : NULL;
	if (c)
		l->hint = c;
	return c;
}

static inline bool aipu_live_chunk_test(const struct aipu_live_chunk *c,
					pgoff_t index)
{
	return test_bit(index % AIPU_LIVE_CHUNK_PAGES, c->bits);
}

/* Page @index, whose bit in @c is clear, gets a live entry. */
static inline void aipu_live_chunk_set(struct aipu_live *l,
				       struct aipu_live_chunk *c, pgoff_t index)
{
	__set_bit(index % AIPU_LIVE_CHUNK_PAGES, c->bits);
	c->set++;
	l->pages++;
}

void aipu_live_init(struct aipu_live *l);
int aipu_live_dirty(struct aipu_live *l, pgoff_t index, unsigned long time);
bool aipu_live_test(struct aipu_live *l, pgoff_t index);
bool aipu_live_any(struct aipu_live *l, pgoff_t index, unsigned long nr);
bool aipu_live_is_moved(struct aipu_live *l, pgoff_t index);
bool aipu_live_take(struct aipu_live *l, pgoff_t index, unsigned long time);
void aipu_live_done(struct aipu_live *l, pgoff_t index, bool still_dirty);
void aipu_live_done_range(struct aipu_live *l, pgoff_t index, unsigned long nr);
bool aipu_live_drop(struct aipu_live *l, unsigned long *budget);

#endif /* AIPU_LIVE_H */
