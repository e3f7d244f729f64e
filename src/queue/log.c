// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: first-dirty times as an append-only log per file.  See
 * include/aipu_log.h; callers hold the file's lock.
 */
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>

#include "aipu_log.h"

const unsigned int aipu_seg_bytes[AIPU_SEG_CLASSES] = { 64, 512, 4096 };

void aipu_log_init(struct aipu_log *l)
{
	l->head = NULL;
	l->tail = NULL;
	l->pos = 0;
	l->next_class = 0;
	l->pages = 0;
	l->bytes = 0;
}

/* Every segment in the log holds an entry not taken yet. */
bool aipu_log_empty(const struct aipu_log *l)
{
	return !l->head;
}

/* First-dirty time of the oldest entry; the log must not be empty. */
unsigned long aipu_log_oldest(const struct aipu_log *l)
{
	return l->head->base + aipu_log_e_dt(l->head->e[l->pos]);
}

/*
 * Grow the newest entry by as many of the pages at @index as it can take:
 * they must continue it and have been dirtied in its jiffy.
 */
static unsigned int extend(struct aipu_log *l, pgoff_t index,
			   unsigned long nr, unsigned long time)
{
	struct aipu_seg *s = l->tail;
	unsigned int n;
	u64 *last;

	if (!s || !aipu_log_continues(l, s, index, time - s->base))
		return 0;
	last = &s->e[s->n - 1];
	n = min_t(unsigned long, nr, AIPU_LOG_LEN_MAX - aipu_log_e_nr(*last));
	if (n)
		*last = aipu_log_entry(aipu_log_e_index(*last),
				       aipu_log_e_nr(*last) + n,
				       aipu_log_e_dt(*last));
	return n;
}

static struct aipu_seg *seg_new(struct aipu_log *l, unsigned long time)
{
	unsigned int bytes = aipu_seg_bytes[l->next_class];
	struct aipu_seg *s = aipu_seg_alloc(bytes);

	if (!s)
		return NULL;
	s->next = NULL;
	s->base = time;
	s->n = 0;
	s->cap = (bytes - sizeof(*s)) / sizeof(s->e[0]);
	s->class = l->next_class;
	if (l->next_class < AIPU_SEG_CLASSES - 1)
		l->next_class++;
	if (l->tail)
		l->tail->next = s;
	else
		l->head = s;
	l->tail = s;
	l->bytes += bytes;
	return s;
}

/* A segment is full, or its deltas cannot reach @time. */
static bool seg_closed(const struct aipu_seg *s, unsigned long time)
{
	return s->n == s->cap || time_before(time, s->base) ||
	       time - s->base > AIPU_LOG_DT_MAX;
}

/* Pages at @index into the log: how many it took, or -ENOMEM. */
static long append_one(struct aipu_log *l, pgoff_t index, unsigned long nr,
		       unsigned long time)
{
	struct aipu_seg *s = l->tail;
	unsigned int n = extend(l, index, nr, time);

	if (n)
		return n;
	if (!s || seg_closed(s, time)) {
		s = seg_new(l, time);
		if (!s)
			return -ENOMEM;
	}
	n = min_t(unsigned long, nr, AIPU_LOG_LEN_MAX);
	s->e[s->n++] = aipu_log_entry(index, n, time - s->base);
	return n;
}

/*
 * Pages [index, index + nr) first dirtied at @time, no earlier than any time
 * appended before.  -E2BIG if an index does not fit an entry, -ENOMEM if a
 * segment could not be had: the pages before the failing one are in the
 * log, the rest are the caller's to bound some other way.
 */
int aipu_log_append(struct aipu_log *l, pgoff_t index, unsigned long nr,
		    unsigned long time)
{
	long n;

	if (!nr)
		return 0;
	if (index > AIPU_LOG_INDEX_MAX || nr - 1 > AIPU_LOG_INDEX_MAX - index)
		return -E2BIG;
	while (nr) {
		n = append_one(l, index, nr, time);
		if (n < 0)
			return n;
		l->pages += n;
		index += n;
		nr -= n;
	}
	return 0;
}

static void head_free(struct aipu_log *l)
{
	struct aipu_seg *s = l->head;
	unsigned int bytes = aipu_seg_bytes[s->class];

	l->head = s->next;
	l->pos = 0;
	if (!l->head) {
		l->tail = NULL;
		l->next_class = 0;	/* quiet now: start small again */
	}
	l->bytes -= bytes;
	aipu_seg_free(s, bytes);
}

/* The oldest entry not taken, without taking it; false if the log is empty. */
bool aipu_log_peek(const struct aipu_log *l, struct aipu_extent *x)
{
	u64 e;

	if (!l->head)
		return false;
	e = l->head->e[l->pos];
	x->index = aipu_log_e_index(e);
	x->nr = aipu_log_e_nr(e);
	x->time = l->head->base + aipu_log_e_dt(e);
	return true;
}

/*
 * Take up to @max of the oldest entries dirtied before @cutoff into @out, in
 * the order they were appended (time order).  Returns how many.
 */
unsigned int aipu_log_take(struct aipu_log *l, unsigned long cutoff,
			   struct aipu_extent *out, unsigned int max)
{
	unsigned int n = 0;
	u64 e;

	while (n < max && l->head) {
		e = l->head->e[l->pos];
		if (!time_before(l->head->base + aipu_log_e_dt(e), cutoff))
			break;
		out[n].index = aipu_log_e_index(e);
		out[n].nr = aipu_log_e_nr(e);
		out[n].time = l->head->base + aipu_log_e_dt(e);
		l->pages -= out[n].nr;
		n++;
		if (++l->pos == l->head->n)
			head_free(l);
	}
	return n;
}

/*
 * Forget every entry, freeing at most *@budget segments (counted down).
 * Returns true once the log holds no memory; until then call again (the
 * lock may be dropped in between, and the log must not be used meanwhile).
 */
bool aipu_log_drop(struct aipu_log *l, unsigned long *budget)
{
	l->pages = 0;
	for (; l->head && *budget; (*budget)--)
		head_free(l);
	return !l->head;
}
