/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A file's first-dirty times as an append-only log (docs/design.md, section 4).
 *
 * Pure logic, tested in user space (tests/unit/test_log.c).  It replaced
 * the queue of runs aipu kept before (80 B a randomly dirtied page, an
 * allocation and a tree insertion each) with 8 B a page and an allocation
 * per segment.
 *
 * An *entry* is a u64: the page index (40 bits), the extent's length less
 * one (8 bits: up to 256 pages) and the jiffies since its segment's base
 * time (16 bits).  Pages dirtied in one jiffy next to the newest entry
 * extend it, so sequential writing costs almost nothing.  A *segment* holds
 * entries in the order they were appended, which is time order (the caller
 * reads the time under the lock it appends under); segments grow with the
 * file, 64 B, 512 B, then 4 KiB, so a small file pays little.  A log is
 * consumed from its head: what is older than a cutoff is due, a prefix.
 *
 * Stale entries (a page cleaned by someone else and dirtied again must get
 * its new time) are told apart by src/queue/live.c; src/queue/flog.c puts the
 * two together with the retries; src/queue/wheel.c orders the files.  Callers
 * hold the file's lock (the wheel: the device's).
 */
#ifndef AIPU_LOG_H
#define AIPU_LOG_H

#include <linux/bits.h>
#include <linux/types.h>

#define AIPU_LOG_INDEX_BITS	40
#define AIPU_LOG_LEN_BITS	8
#define AIPU_LOG_DT_BITS	16
#define AIPU_LOG_INDEX_MAX	((1ULL << AIPU_LOG_INDEX_BITS) - 1)
#define AIPU_LOG_LEN_MAX	BIT(AIPU_LOG_LEN_BITS)
#define AIPU_LOG_DT_MAX		((1UL << AIPU_LOG_DT_BITS) - 1)

/* Segment sizes in bytes, smallest first; a log's next one is one larger. */
#define AIPU_SEG_CLASSES	3
extern const unsigned int aipu_seg_bytes[AIPU_SEG_CLASSES];

struct aipu_seg {
	struct aipu_seg *next;		/* newer */
	unsigned long base;		/* jiffies the deltas count from */
	u32 n, cap;			/* entries used, and room */
	u8 class;			/* index into aipu_seg_bytes */
	u64 e[];
};

struct aipu_log {
	struct aipu_seg *head, *tail;	/* oldest and newest segment */
	u32 pos;			/* first entry of @head not taken */
	u8 next_class;
	unsigned long pages;		/* pages in entries not taken */
	unsigned long bytes;		/* segment memory held */
};

/* A taken entry: pages [index, index + nr) first dirtied at @time. */
struct aipu_extent {
	pgoff_t index;
	unsigned int nr;
	unsigned long time;
};

/* Provided by the kernel glue or the unit tests. */
#define AIPU_LOG_LEN_SHIFT	AIPU_LOG_DT_BITS
#define AIPU_LOG_INDEX_SHIFT	(AIPU_LOG_DT_BITS + AIPU_LOG_LEN_BITS)

static inline u64 aipu_log_entry(pgoff_t index, unsigned int nr,
				 unsigned long dt)
{
	return (u64)index << AIPU_LOG_INDEX_SHIFT |
	       (u64)(nr - 1) << AIPU_LOG_LEN_SHIFT | dt;
}

static inline pgoff_t aipu_log_e_index(u64 e)
{
	return e >> AIPU_LOG_INDEX_SHIFT;
}

static inline unsigned int aipu_log_e_nr(u64 e)
{
	return ((e >> AIPU_LOG_LEN_SHIFT) & (AIPU_LOG_LEN_MAX - 1)) + 1;
}

static inline unsigned long aipu_log_e_dt(u64 e)
{
	return e & AIPU_LOG_DT_MAX;
}

/*
 * Whether pages from @index dirtied @dt jiffies after @s's base continue
 * the newest entry of @s, the log's tail: the entry ends at @index, is of
 * that jiffy and is not taken.
 */
static inline bool aipu_log_continues(const struct aipu_log *l,
				      const struct aipu_seg *s, pgoff_t index,
				      unsigned long dt)
{
	u64 last = s->e[s->n - 1];	/* a segment is made with an entry */

	return aipu_log_e_dt(last) == dt &&
	       aipu_log_e_index(last) + aipu_log_e_nr(last) == index &&
	       !(s == l->head && l->pos == s->n);
}

/*
 * aipu_log_append() of page @index where it is cheap, inline for the probe:
 * the newest entry extended by it, or a new entry in the newest segment.
 * False, nothing done, where aipu_log_append() must see to it (a new segment,
 * an entry at its longest, an index past AIPU_LOG_INDEX_MAX).  A time
 * before the segment's base makes @dt huge, as seg_closed() wants.
 */
static inline bool aipu_log_append_page(struct aipu_log *l, pgoff_t index,
					unsigned long time)
{
	struct aipu_seg *s = l->tail;
	unsigned long dt;
	u64 *last;

	if (!s || index > AIPU_LOG_INDEX_MAX)
		return false;
	dt = time - s->base;
	if (dt > AIPU_LOG_DT_MAX)
		return false;
	if (aipu_log_continues(l, s, index, dt)) {
		last = &s->e[s->n - 1];
		if (aipu_log_e_nr(*last) == AIPU_LOG_LEN_MAX)
			return false;
		*last += 1ULL << AIPU_LOG_LEN_SHIFT;
	} else if (s->n < s->cap) {
		s->e[s->n++] = aipu_log_entry(index, 1, dt);
	} else {
		return false;
	}
	l->pages++;
	return true;
}

struct aipu_seg *aipu_seg_alloc(unsigned int bytes);
void aipu_seg_free(struct aipu_seg *s, unsigned int bytes);

void aipu_log_init(struct aipu_log *l);
bool aipu_log_empty(const struct aipu_log *l);
unsigned long aipu_log_oldest(const struct aipu_log *l);
int aipu_log_append(struct aipu_log *l, pgoff_t index, unsigned long nr,
		    unsigned long time);
bool aipu_log_peek(const struct aipu_log *l, struct aipu_extent *x);
unsigned int aipu_log_take(struct aipu_log *l, unsigned long cutoff,
			   struct aipu_extent *out, unsigned int max);
bool aipu_log_drop(struct aipu_log *l, unsigned long *budget);

#endif /* AIPU_LOG_H */
