/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every unit test here shares (unit.c): the CHECK and RUN harness,
 * AIPU_SEED, and the allocators the queue's code calls (mem.c's in the
 * kernel), which count what is live and fail when a test asks them to.
 */
#ifndef AIPU_UNIT_H
#define AIPU_UNIT_H

#include <stdbool.h>
#include <stdio.h>

#include "aipu_live.h"

/* Objects the allocators gave out and not yet back (segments in bytes). */
struct unit_mem {
	long bytes, chunks, moved, retries, trackers;
};

extern struct unit_mem unit_mem;
extern int unit_fail_every;	/* fail about 1 allocation in N; 0: none */
extern int unit_fail_next;	/* fail the next N allocations */
extern bool unit_no_dir;		/* refuse live-bit directories */
extern const char *unit_cur;	/* the test running */

bool unit_fail(void);
bool unit_no_memory_held(void);
unsigned int unit_seed(unsigned int dflt);
bool unit_moved_stale(struct aipu_live *l, pgoff_t p, unsigned long time);
void unit_run(const char *name, int (*fn)(void));
int unit_done(void);

/* In a test function: fail it, saying where and what. */
#define CHECK(cond)                                                     \
	do {                                                            \
		if (!(cond)) {                                          \
			printf("  %s: %s:%d: %s\n", unit_cur, __FILE__, \
			       __LINE__, #cond);                        \
			return 1;                                       \
		}                                                       \
	} while (0)

#define RUN(fn) unit_run(#fn, fn)

#endif /* AIPU_UNIT_H */
