/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aipu: approximate interval periodic update for the Linux page cache.
 * Internal interfaces between the module's parts:
 *
 *   hook.c     tracepoint and kprobe probes: first-dirty times, eviction
 *   track.c    age-ordered tracking (pure logic, unit-tested in user space)
 *   mem.c      slab caches and the reserve the probes fall back on
 *   flusher.c  the once-a-period kthread: phase 1 scan, phase 2 issue
 *   policy.c   kernel / aipu / pu / stage, and Linux's periodic writeback
 *   purge.c    write purge: drop pages aipu wrote once they are clean
 *   knobs.c    tunables, mirrored as module parameters
 *   sysfs.c    /sys/kernel/aipu/
 */
#ifndef AIPU_H
#define AIPU_H

#include <linux/spinlock.h>

#include "aipu_track.h"

#define AIPU_NAME "aipu"

/* main.c: the tracking state and the lock that guards it (a leaf lock). */
extern spinlock_t aipu_lock;
extern struct aipu_track aipu_tr;

/* knobs.c */
struct aipu_knob {
	const char *name;
	unsigned int *val;
	unsigned int min, max;
	const char * const *choices;	/* names of values 0..max, or NULL */
	char **param;			/* module parameter of a choice knob */
	int (*conflicts)(const struct aipu_knob *k, unsigned int v);
	void (*changed)(void);		/* after a store changed the value */
};

enum aipu_policy_id {
	AIPU_POLICY_KERNEL,
	AIPU_POLICY_AIPU,
	AIPU_POLICY_PU,
	AIPU_POLICY_STAGE,
	AIPU_NR_POLICIES,
};

enum { AIPU_WRITE_UPDATE, AIPU_WRITE_PURGE };

extern unsigned int aipu_policy, aipu_max_age_ms, aipu_period_ms,
	aipu_pu_interval_ms, aipu_handover_ms, aipu_stage_interval_ms,
	aipu_stage_batch, aipu_write_alloc, aipu_pace, aipu_max_batch;
extern const struct aipu_knob aipu_knobs[];
extern const unsigned int aipu_nr_knobs;
int aipu_knobs_check(void);
int aipu_knob_set(const struct aipu_knob *k, const char *buf);
ssize_t aipu_knob_show(const struct aipu_knob *k, char *buf);
const char *aipu_policy_name(unsigned int id);

/* policy.c */
void aipu_policy_changed(void);
bool aipu_policy_writes(void);
bool aipu_policy_paced(void);
bool aipu_policy_bounded(void);
void aipu_policy_scan(unsigned long now);
long aipu_policy_timeout(unsigned long now, unsigned long next_tick);
void aipu_policy_init(void);
void aipu_policy_exit(void);
void aipu_policy_untracked(void);
void aipu_policy_dirtied(void);
void aipu_kupdate_update(void);
bool aipu_kupdate_is_off(void);
unsigned long aipu_handover_left_ms(void);

/* purge.c */
void aipu_purge_add(struct aipu_tracker *t, pgoff_t start, pgoff_t end);
void aipu_purge_run(void);
void aipu_purge_exit(void);

/* flusher.c */
struct aipu_pin {
	struct inode *inode;
	struct super_block *sb;
};

enum aipu_pin_result { AIPU_PIN_OK, AIPU_PIN_BUSY, AIPU_PIN_GONE };

enum aipu_pin_result aipu_pin(struct aipu_tracker *t, struct aipu_pin *p);
void aipu_unpin(struct aipu_pin *p);
int aipu_flusher_start(void);
void aipu_flusher_stop(void);
void aipu_flusher_kick(void);
void aipu_flusher_poke(void);
bool aipu_flusher_inherits(unsigned long *time);

/* hook.c */
int aipu_hook_init(void);
void aipu_hook_exit(void);
void aipu_hook_exit_evict(void);

/* mem.c */
int aipu_mem_init(void);
void aipu_mem_exit(void);
void aipu_mem_refill(void);

/* sysfs.c */
int aipu_sysfs_init(void);
void aipu_sysfs_exit(void);

#endif /* AIPU_H */
