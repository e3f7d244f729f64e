// SPDX-License-Identifier: GPL-2.0
/*
 * The unit tests' shared harness and allocators (unit.h).  The allocators
 * stand in for src/mem.c's slab caches: plain malloc, so that
 * AddressSanitizer sees every use after free and every leak; their counts
 * are atomic, for test_threads' threads.
 */
#include <stdlib.h>

#include "aipu_queue.h"
#include "unit.h"

struct unit_mem unit_mem;
int unit_fail_every, unit_fail_next;
bool unit_no_dir;
const char *unit_cur;
static int passed, failed;

/* Should this allocation fail?  Draws rand() only when failing at random. */
bool unit_fail(void)
{
	if (unit_fail_next > 0) {
		unit_fail_next--;
		return true;
	}
	return unit_fail_every && rand() % unit_fail_every == 0;
}

bool unit_no_memory_held(void)
{
	return !unit_mem.bytes && !unit_mem.chunks && !unit_mem.moved &&
	       !unit_mem.retries && !unit_mem.trackers;
}

/* AIPU_SEED (environment, a number) runs the model from another seed. */
unsigned int unit_seed(unsigned int dflt)
{
	const char *s = getenv("AIPU_SEED");

	return s ? (unsigned int)strtoul(s, NULL, 0) * 7919 + dflt : dflt;
}

void unit_run(const char *name, int (*fn)(void))
{
	unit_cur = name;
	if (fn()) {
		failed++;
		printf("FAIL %s\n", name);
	} else {
		passed++;
		printf("ok   %s\n", name);
	}
}

/* The summary line; main()'s exit status. */
int unit_done(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/*
 * aipu_live_take()'s answer for page @p's entry of @time, without taking: true
 * if a newer entry of the page supersedes it.
 */
bool unit_moved_stale(struct aipu_live *l, pgoff_t p, unsigned long time)
{
	struct rb_node *n = l->moved.rb_node;

	while (n) {
		struct aipu_moved *m = rb_entry(n, struct aipu_moved, node);

		if (p == m->index)
			return m->time != time;
		n = p < m->index ? n->rb_left : n->rb_right;
	}
	return false;
}

#define MEM_ADD(field, n) __atomic_add_fetch(&unit_mem.field, (n), __ATOMIC_RELAXED)

struct aipu_seg *aipu_seg_alloc(unsigned int bytes)
{
	if (unit_fail())
		return NULL;
	MEM_ADD(bytes, bytes);
	return calloc(1, bytes);
}

void aipu_seg_free(struct aipu_seg *s, unsigned int bytes)
{
	MEM_ADD(bytes, -(long)bytes);
	free(s);
}

struct aipu_live_chunk *aipu_live_chunk_alloc(void)
{
	if (unit_fail())
		return NULL;
	MEM_ADD(chunks, 1);
	return malloc(sizeof(struct aipu_live_chunk));
}

void aipu_live_chunk_free(struct aipu_live_chunk *c)
{
	MEM_ADD(chunks, -1);
	free(c);
}

struct aipu_live_dir *aipu_live_dir_alloc(void)
{
	if (unit_no_dir || unit_fail())
		return NULL;
	MEM_ADD(bytes, sizeof(struct aipu_live_dir));
	return malloc(sizeof(struct aipu_live_dir));
}

void aipu_live_dir_free(struct aipu_live_dir *dir)
{
	MEM_ADD(bytes, -(long)sizeof(struct aipu_live_dir));
	free(dir);
}

struct aipu_moved *aipu_moved_alloc(void)
{
	if (unit_fail())
		return NULL;
	MEM_ADD(moved, 1);
	return malloc(sizeof(struct aipu_moved));
}

void aipu_moved_free(struct aipu_moved *m)
{
	MEM_ADD(moved, -1);
	free(m);
}

struct aipu_retry *aipu_retry_alloc(void)
{
	if (unit_fail())
		return NULL;
	MEM_ADD(retries, 1);
	return malloc(sizeof(struct aipu_retry));
}

void aipu_retry_free(struct aipu_retry *r)
{
	MEM_ADD(retries, -1);
	free(r);
}
