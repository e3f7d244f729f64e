// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the append-only log (src/queue/log.c) and the wheel
 * (src/queue/wheel.c) in user space.
 *
 * Directed tests pin down the encoding, extension, segment growth, the
 * failure paths and the wheel's wrap (a clock jump longer than its turn);
 * a model-based test then appends to many logs over a clock that crosses
 * the jiffies wrap, runs phase 1 with random budgets and takes due entries
 * in random amounts, and checks after every step that what is taken is
 * exactly the model's oldest pages, in order, each older than the
 * cutoff, and that no log left in the wheel holds a due entry.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/jiffies.h>

#include "aipu_log.h"
#include "aipu_wheel.h"
#include "unit.h"

#define T0 ((unsigned long)-3000)	/* 3000 jiffies before the wrap */

static int test_extend_and_chunks(void)
{
	struct aipu_extent x[8];
	struct aipu_log l;

	aipu_log_init(&l);
	CHECK(aipu_log_empty(&l));
	CHECK(!aipu_log_append(&l, 10, 1, T0));
	CHECK(!aipu_log_append(&l, 11, 1, T0));	/* extends */
	/* extends to 256, then 2 more */
	CHECK(!aipu_log_append(&l, 12, 600, T0));
	CHECK(l.pages == 602);
	CHECK(l.tail->n == 3);
	CHECK(!aipu_log_append(&l, 612, 1, T0 + 1)); /* next jiffy: new entry */
	CHECK(l.tail->n == 4);
	CHECK(aipu_log_oldest(&l) == T0);
	CHECK(aipu_log_take(&l, T0 + 1, x, 8) == 3);
	CHECK(x[0].index == 10 && x[0].nr == 256 && x[0].time == T0);
	CHECK(x[1].index == 266 && x[1].nr == 256);
	CHECK(x[2].index == 522 && x[2].nr == 90);
	CHECK(aipu_log_oldest(&l) == T0 + 1);
	/* The taken prefix is never extended. */
	CHECK(aipu_log_take(&l, T0 + 2, x, 8) == 1);
	CHECK(aipu_log_empty(&l) && l.bytes == 0 && unit_mem.bytes == 0);
	CHECK(!aipu_log_append(&l, 613, 1, T0 + 1));
	CHECK(l.pages == 1 && l.tail->n == 1);
	aipu_log_drop(&l, &(unsigned long){ ~0UL });
	CHECK(unit_mem.bytes == 0);
	return 0;
}

static int test_segments_grow_and_close(void)
{
	struct aipu_extent x[1];
	struct aipu_log l;
	unsigned int i;

	aipu_log_init(&l);
	for (i = 0; i < 2000; i++)
		CHECK(!aipu_log_append(&l, 2 * i, 1, T0));
	/* 64 B, 512 B, then 4-KiB segments. */
	CHECK(l.head->class == 0 && l.head->next->class == 1);
	CHECK(l.tail->class == AIPU_SEG_CLASSES - 1);
	CHECK(l.bytes * 10 < 2000 * 8 * 12);	/* under 9.6 B a page */
	/* A delta that does not fit starts a segment. */
	i = l.tail->n;
	CHECK(!aipu_log_append(&l, 1, 1, T0 + AIPU_LOG_DT_MAX + 1));
	CHECK(l.tail->n == 1 && l.tail->base == T0 + AIPU_LOG_DT_MAX + 1);
	CHECK(aipu_log_take(&l, T0 + AIPU_LOG_DT_MAX + 1, x, 1) == 1);
	CHECK(x[0].index == 0 && x[0].time == T0);
	aipu_log_drop(&l, &(unsigned long){ ~0UL });
	CHECK(l.bytes == 0 && unit_mem.bytes == 0 && aipu_log_empty(&l));
	return 0;
}

static int test_failures(void)
{
	struct aipu_log l;

	aipu_log_init(&l);
	CHECK(aipu_log_append(&l, AIPU_LOG_INDEX_MAX, 2, T0) == -E2BIG);
	CHECK(aipu_log_append(&l, AIPU_LOG_INDEX_MAX + 1, 1, T0) == -E2BIG);
	CHECK(aipu_log_empty(&l));
	CHECK(!aipu_log_append(&l, AIPU_LOG_INDEX_MAX, 1, T0));
	aipu_log_drop(&l, &(unsigned long){ ~0UL });
	unit_fail_next = 1;
	CHECK(aipu_log_append(&l, 0, 300, T0) == -ENOMEM);
	CHECK(aipu_log_empty(&l) && l.pages == 0);
	CHECK(!aipu_log_append(&l, 0, 4 * 256, T0));	/* fills the 64-B one */
	CHECK(l.head == l.tail && l.tail->n == l.tail->cap);
	unit_fail_next = 1;
	CHECK(aipu_log_append(&l, 5000, 1, T0) == -ENOMEM);
	CHECK(l.pages == 4 * 256);
	CHECK(!unit_fail_next);
	aipu_log_drop(&l, &(unsigned long){ ~0UL });
	CHECK(unit_mem.bytes == 0);
	return 0;
}

/* ---- the wheel's wrap ---- */

/*
 * The wheel's wrap, directed: a node in every slot over one turn and a
 * second turn's worth more, then a cutoff a turn and a half later (a
 * flusher stalled longer than the wheel spans), taken with small budgets:
 * exactly the nodes older than the cutoff go, each once, whatever slot
 * they share with younger ones; then a cutoff that went back (max_age
 * raised) finds nothing more, and the rest go once the cutoff passes them.
 * However far the clock jumped, phase 1 looks at each node once, and
 * aipu_wheel_first() finds the oldest slot left.
 */
#define WRAP_SLOTS 16
#define WRAP_WIDTH 5
#define WRAP_NODES (3 * WRAP_SLOTS)

static struct aipu_wheel_node wrap_node[WRAP_NODES];
static bool wrap_gone[WRAP_NODES];

/* Phase 1 at @cutoff in small budgets; each node looked at once at most. */
static int wrap_due(struct aipu_wheel *w, unsigned long cutoff)
{
	struct aipu_wheel_node *nd, *tmp;
	unsigned int budget, looked = 0;
	unsigned long nodes = w->nodes;
	bool done;
	LIST_HEAD(due);

	do {
		budget = 1 + rand() % 3;
		looked += budget;
		done = aipu_wheel_due(w, cutoff, &due, &budget);
		looked -= budget;
	} while (!done);
	CHECK(looked <= nodes);
	list_for_each_entry_safe(nd, tmp, &due, link) {
		CHECK(time_before(nd->time, cutoff));
		CHECK(!wrap_gone[nd - wrap_node]);
		wrap_gone[nd - wrap_node] = true;
		list_del_init(&nd->link);
	}
	return 0;
}

/* aipu_wheel_first() names the slot of the oldest node left, or none. */
static int wrap_first(struct aipu_wheel *w, const unsigned long *t)
{
	unsigned long first, oldest = 0;
	bool any = false;
	unsigned int i;

	for (i = 0; i < WRAP_NODES; i++)
		if (!wrap_gone[i] && (!any || time_before(t[i], oldest))) {
			oldest = t[i];
			any = true;
		}
	CHECK(aipu_wheel_first(w, &first) == any);
	CHECK(!any || (!time_after(first, oldest) &&
		       oldest - first < WRAP_WIDTH));
	return 0;
}

static int test_wheel_wrap(void)
{
	static struct list_head slots[WRAP_SLOTS];
	unsigned long start = T0 - 1000, turn = WRAP_SLOTS * WRAP_WIDTH;
	unsigned long cutoff, t[WRAP_NODES];
	struct aipu_wheel w;
	unsigned int i;

	srand(unit_seed(11));
	aipu_wheel_init(&w, slots, WRAP_SLOTS, WRAP_WIDTH, start);
	/* Two turns of nodes, two or three a slot, in random order. */
	for (i = 0; i < WRAP_NODES; i++)
		t[i] = start + (i * 2 * turn) / WRAP_NODES + rand() % 2;
	for (i = 0; i < WRAP_NODES; i++) {
		unsigned int j = rand() % WRAP_NODES;
		unsigned long x = t[i];

		t[i] = t[j];
		t[j] = x;
	}
	for (i = 0; i < WRAP_NODES; i++)
		aipu_wheel_add(&w, &wrap_node[i], t[i]);
	cutoff = start + turn + turn / 2 + 1;
	if (wrap_due(&w, cutoff))
		return 1;
	for (i = 0; i < WRAP_NODES; i++)
		CHECK(wrap_gone[i] == time_before(t[i], cutoff));
	if (wrap_first(&w, t))
		return 1;
	/* The cutoff went back: nothing more is due. */
	if (wrap_due(&w, cutoff - turn))
		return 1;
	for (i = 0; i < WRAP_NODES; i++)
		CHECK(wrap_gone[i] == time_before(t[i], cutoff));
	/* Past every node, another turn and a half on: all gone. */
	if (wrap_due(&w, start + 4 * turn))
		return 1;
	for (i = 0; i < WRAP_NODES; i++)
		CHECK(wrap_gone[i]);
	CHECK(w.nodes == 0);
	if (wrap_first(&w, t))
		return 1;
	return 0;
}

/*
 * Nodes a turn or more ahead of the clock (max_age above the wheel's span:
 * phase 1's cutoff, and the clock, trail the dirtying by more than a turn).
 * aipu_wheel_first() gave the start of the first non-empty slot from the clock,
 * a turn older than any node (`oldest_age_ms` 555 s for pages dirtied
 * 0.2 s before); it must name the oldest node's slot when the slots hold
 * one turn, and never a time older than every node when they hold several.
 */
static int test_wheel_first_ahead(void)
{
	static struct list_head slots[WRAP_SLOTS];
	static struct aipu_wheel_node nd[WRAP_NODES];
	unsigned long turn = WRAP_SLOTS * WRAP_WIDTH, t, oldest, first;
	unsigned int i, round, turns;
	struct aipu_wheel w;

	srand(unit_seed(12));
	for (round = 0; round < 200; round++) {
		aipu_wheel_init(&w, slots, WRAP_SLOTS, WRAP_WIDTH, T0 - 1000);
		/* Round 0..99: one turn of nodes 1-3 turns ahead; then mixed. */
		turns = round < 100 ? 1 + round % 3 : 0;
		oldest = 0;
		for (i = 0; i < WRAP_NODES; i++) {
			t = w.clock + (turns ? turns : rand() % 4) * turn +
			    rand() % turn;
			aipu_wheel_add(&w, &nd[i], t);
			if (!i || time_before(t, oldest))
				oldest = t;
		}
		CHECK(aipu_wheel_first(&w, &first));
		CHECK(time_after(first + WRAP_WIDTH, oldest));
		if (turns)
			CHECK(!time_after(first, oldest));
	}
	return 0;
}

/*
 * A cutoff a turn or more on that starts a slot: that slot's index is also
 * the one of the nodes a turn back, older than the cutoff, so the jump must
 * visit it too (it skipped it: such a node went a pass late).
 */
static int test_wheel_jump(void)
{
	static struct list_head slots[WRAP_SLOTS];
	unsigned long turn = WRAP_SLOTS * WRAP_WIDTH, jump, c0;
	struct aipu_wheel_node n;
	struct aipu_wheel w;
	unsigned int budget, k;
	LIST_HEAD(due);

	for (k = 0; k < 4 * WRAP_WIDTH; k++) {
		aipu_wheel_init(&w, slots, WRAP_SLOTS, WRAP_WIDTH, T0 - 1000);
		c0 = w.clock;
		aipu_wheel_add(&w, &n, c0 + k % WRAP_WIDTH);
		budget = 100;
		CHECK(aipu_wheel_due(&w, c0, &due, &budget) &&
		      list_empty(&due));
		/* A turn, a turn and a slot, two turns; aligned or not. */
		jump = (k / WRAP_WIDTH == 3 ? 2 * turn :
			turn + (k / WRAP_WIDTH) * WRAP_WIDTH / 2);
		budget = 100;
		CHECK(aipu_wheel_due(&w, c0 + jump, &due, &budget));
		CHECK(time_before(n.time, c0 + jump));
		CHECK(!list_empty(&due) && due.next == &n.link);
		list_del_init(&n.link);
		CHECK(w.nodes == 0);
	}
	return 0;
}

/* ---- model-based: many logs, one wheel, a clock across the wrap ---- */

#define NLOGS 40
#define MAXPAGES 200000

struct model {
	pgoff_t page[MAXPAGES];
	unsigned long time[MAXPAGES];
	unsigned int head, tail;
};

static struct model *mod;
static struct aipu_log logs[NLOGS];
static struct aipu_wheel_node nodes[NLOGS];

static bool on_list(struct list_head *head, struct list_head *n)
{
	struct list_head *p;

	for (p = head->next; p != head; p = p->next)
		if (p == n)
			return true;
	return false;
}

static int take_all(struct aipu_wheel *w, struct list_head *due,
		    unsigned long cutoff)
{
	struct aipu_wheel_node *nd, *tmp;
	struct aipu_extent x[7];
	unsigned int n, i, k;

	list_for_each_entry_safe(nd, tmp, due, link) {
		struct aipu_log *l = &logs[nd - nodes];
		struct model *m = &mod[nd - nodes];

		list_del_init(&nd->link);
		do {
			n = aipu_log_take(l, cutoff, x, 1 + rand() % 7);
			for (i = 0; i < n; i++) {
				CHECK(time_before(x[i].time, cutoff));
				for (k = 0; k < x[i].nr; k++) {
					CHECK(m->head < m->tail);
					CHECK(m->page[m->head] == x[i].index + k);
					CHECK(m->time[m->head] == x[i].time);
					m->head++;
				}
			}
		} while (n);
		CHECK(m->head == m->tail ||
		      !time_before(m->time[m->head], cutoff));
		if (!aipu_log_empty(l))
			aipu_wheel_add(w, nd, aipu_log_oldest(l));
	}
	return 0;
}

static int test_model(void)
{
	unsigned long now = T0 - 70000, width = 25, cutoff, pages = 0;
	static struct list_head slots[64];
	struct aipu_wheel w;
	unsigned int step, i, budget;
	LIST_HEAD(due);

	mod = calloc(NLOGS, sizeof(*mod));
	CHECK(mod);
	srand(unit_seed(7));
	for (i = 0; i < NLOGS; i++)
		aipu_log_init(&logs[i]);
	aipu_wheel_init(&w, slots, 64, width, now);
	for (step = 0; step < 40000; step++) {
		unsigned int r = rand() % 100, li = rand() % NLOGS;
		struct aipu_log *l = &logs[li];
		struct model *m = &mod[li];

		if (r < 70) {
			unsigned long nr = 1 + (rand() % 8 ? 0 : rand() % 300);
			pgoff_t idx = rand() % 4 ? rand() % 100000 :
				      (m->tail ? m->page[m->tail - 1] + 1 : 0);
			bool was_empty = aipu_log_empty(l);

			if (m->tail + nr > MAXPAGES)
				continue;
			CHECK(!aipu_log_append(l, idx, nr, now));
			for (i = 0; i < nr; i++) {
				m->page[m->tail] = idx + i;
				m->time[m->tail++] = now;
			}
			if (was_empty)
				aipu_wheel_add(&w, &nodes[li], now);
		} else if (r < 85) {
			now += rand() % 4 ? rand() % 3 : rand() % 400;
			if (rand() % 500 == 0)
				now += 70000;	/* past a segment's deltas */
		} else {
			/* Phase 1 with a max_age of 0 to 1,000 jiffies. */
			cutoff = now - rand() % 1000;
			do {
				budget = 1 + rand() % 5;
			} while (!aipu_wheel_due(&w, cutoff, &due, &budget));
			if (take_all(&w, &due, cutoff))
				return 1;
			for (i = 0; i < NLOGS; i++) {
				if (aipu_log_empty(&logs[i]))
					continue;
				CHECK(!time_before(aipu_log_oldest(&logs[i]),
						   cutoff));
				CHECK(on_list(
					aipu_wheel_slot(
						&w, aipu_log_oldest(&logs[i])),
					&nodes[i].link));
			}
		}
		if (step % 997 == 0) {
			pages = 0;
			for (i = 0; i < NLOGS; i++) {
				CHECK(logs[i].pages ==
				      mod[i].tail - mod[i].head);
				pages += logs[i].pages;
			}
		}
	}
	for (i = 0; i < NLOGS; i++)
		aipu_log_drop(&logs[i], &(unsigned long){ ~0UL });
	CHECK(unit_mem.bytes == 0);
	printf("  model: %lu pages tracked at the last count, clock %lu\n",
	       pages, now);
	free(mod);
	return 0;
}

/* Do two logs hold the same segments, entries and counts? */
static bool same_log(const struct aipu_log *a, const struct aipu_log *b)
{
	const struct aipu_seg *x = a->head, *y = b->head;

	if (a->pos != b->pos || a->pages != b->pages || a->bytes != b->bytes ||
	    a->next_class != b->next_class)
		return false;
	for (; x && y; x = x->next, y = y->next)
		if (x->base != y->base || x->n != y->n || x->cap != y->cap ||
		    x->class != y->class ||
		    memcmp(x->e, y->e, x->n * sizeof(x->e[0])))
			return false;
	return !x && !y && (a->tail == NULL) == (b->tail == NULL);
}

/*
 * aipu_log_append_page(), the probe's inline append, against aipu_log_append():
 * one log appended to by it (aipu_log_append() where it declines), another by
 * aipu_log_append() alone, both taken from alike, must stay the same, entry for
 * entry; and each of its ways (extending, a new entry, declining) is used,
 * in random writes and in streams that fill entries to their longest.
 */
static int test_append_page(void)
{
	unsigned long now = T0 - 200, ext = 0, add = 0, declined = 0;
	struct aipu_extent xa[16], xb[16];
	struct aipu_log a, b;
	pgoff_t next = 0, idx;
	unsigned int step, na, nb, r;

	srand(unit_seed(13));
	aipu_log_init(&a);
	aipu_log_init(&b);
	for (step = 0; step < 200000; step++) {
		/* Every other 2,000 steps a stream: 256-page entries fill. */
		bool stream = step / 2000 % 2;

		r = rand() % (stream ? 1000 : 100);
		if (r < 80 || (stream && r >= 100)) {
			idx = stream || rand() % 3 ? next : rand() % 100000;
			if (rand() % 5000 == 0)
				idx = AIPU_LOG_INDEX_MAX + rand() % 2;
			if (aipu_log_append_page(&a, idx, now)) {
				ext += a.tail->n == b.tail->n;
				add += a.tail->n != b.tail->n;
			} else {
				declined++;
				aipu_log_append(&a, idx, 1, now);
			}
			aipu_log_append(&b, idx, 1, now);
			next = idx + 1;
		} else if (r < 95) {
			now += rand() % 10 ? rand() % 2 : rand() % 70000;
			/* To a segment's edge, never back. */
			if (a.tail && rand() % 20 == 0 &&
			    time_before(now, a.tail->base + AIPU_LOG_DT_MAX))
				now = a.tail->base + AIPU_LOG_DT_MAX + rand() % 2;
		} else {
			unsigned long cutoff = now - rand() % 50;
			unsigned int max = 1 + rand() % 16, i;

			na = aipu_log_take(&a, cutoff, xa, max);
			nb = aipu_log_take(&b, cutoff, xb, max);
			CHECK(na == nb);
			for (i = 0; i < na; i++)
				CHECK(xa[i].index == xb[i].index &&
				      xa[i].nr == xb[i].nr &&
				      xa[i].time == xb[i].time);
		}
		CHECK(same_log(&a, &b));
	}
	CHECK(ext > 1000 && add > 1000 && declined > 100);
	aipu_log_drop(&a, &(unsigned long){ ~0UL });
	aipu_log_drop(&b, &(unsigned long){ ~0UL });
	CHECK(unit_mem.bytes == 0);
	printf("  append_page: %lu extended, %lu new entries, %lu left to "
	       "aipu_log_append()\n", ext, add, declined);
	return 0;
}

int main(void)
{
	RUN(test_extend_and_chunks);
	RUN(test_segments_grow_and_close);
	RUN(test_failures);
	RUN(test_wheel_wrap);
	RUN(test_wheel_jump);
	RUN(test_wheel_first_ahead);
	RUN(test_model);
	RUN(test_append_page);
	return unit_done();
}
