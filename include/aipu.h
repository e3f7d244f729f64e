/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aipu: approximate interval periodic update for the Linux page cache.
 * Internal interfaces between the module's parts:
 *
 *   hook.c     tracepoint and kprobe probes: first-dirty times, eviction
 *   track.c    age-ordered tracking (pure logic, unit-tested in user space)
 *   mem.c      slab caches and the reserve the probes fall back on
 *   flusher.c  the once-a-period kthread: phase 1 scan, phase 2 issue
 *   policy.c   kernel / aipu / pu, and Linux's periodic writeback on or off
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
};

extern unsigned int aipu_max_age_ms, aipu_period_ms, aipu_pu_interval_ms,
	aipu_handover_ms;
extern const struct aipu_knob aipu_knobs[];
extern const unsigned int aipu_nr_knobs;
extern char *aipu_policy_param;
int aipu_knobs_check(void);
int aipu_knob_set(const struct aipu_knob *k, const char *buf);

/* policy.c */
enum aipu_policy_id {
	AIPU_POLICY_KERNEL,
	AIPU_POLICY_AIPU,
	AIPU_POLICY_PU,
	AIPU_NR_POLICIES,
};

int aipu_policy_parse(const char *buf);
int aipu_policy_get(void);
const char *aipu_policy_name(int id);
void aipu_policy_set(int id);
bool aipu_policy_writes(void);
unsigned long aipu_policy_scan(unsigned long now);
void aipu_policy_init(void);
void aipu_policy_exit(void);
void aipu_policy_handover(void);
void aipu_policy_untracked(void);
void aipu_kupdate_update(void);
bool aipu_kupdate_is_off(void);
unsigned long aipu_handover_left_ms(void);

/* flusher.c */
int aipu_flusher_start(void);
void aipu_flusher_stop(void);
void aipu_flusher_kick(void);
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
