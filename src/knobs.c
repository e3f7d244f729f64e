// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: tunables.  One table drives both the module parameters (initial
 * values at insmod) and /sys/kernel/aipu/ (run time), as null_blk does.
 * A knob is a number in [min, max] or, with @choices, one of a few names
 * shown like /sys/block/<dev>/queue/scheduler.
 */
#include <linux/kernel.h>
#include <linux/module.h>

#include "aipu.h"
#include "aipu_trace.h"

unsigned int aipu_policy = AIPU_POLICY_KERNEL;
unsigned int aipu_max_age_ms = 30000;
unsigned int aipu_period_ms = 1000;
unsigned int aipu_pu_interval_ms = 30000;
unsigned int aipu_handover_ms = 35000;
unsigned int aipu_stage_interval_ms = 1000;
unsigned int aipu_stage_batch = 1;
unsigned int aipu_write_alloc = AIPU_WRITE_UPDATE;
unsigned int aipu_pace = 1;
unsigned int aipu_max_batch;

static char *policy = "kernel";
static char *write_alloc = "update";

module_param(policy, charp, 0444);
MODULE_PARM_DESC(policy, "Update policy at load: kernel, aipu, pu or stage (default kernel)");
module_param_named(max_age_ms, aipu_max_age_ms, uint, 0444);
MODULE_PARM_DESC(max_age_ms, "Write pages dirty for longer than this (default 30000)");
module_param_named(period_ms, aipu_period_ms, uint, 0444);
MODULE_PARM_DESC(period_ms, "Flusher period (default 1000)");
module_param_named(pu_interval_ms, aipu_pu_interval_ms, uint, 0444);
MODULE_PARM_DESC(pu_interval_ms, "pu: write everything this often (default 30000)");
module_param_named(handover_ms, aipu_handover_ms, uint, 0444);
MODULE_PARM_DESC(handover_ms, "Keep Linux's periodic writeback on this long after load, for data dirtied before (default 35000)");
module_param_named(stage_interval_ms, aipu_stage_interval_ms, uint, 0444);
MODULE_PARM_DESC(stage_interval_ms, "stage: minimum interval C between staged batches, 0 = at once (default 1000)");
module_param_named(stage_batch, aipu_stage_batch, uint, 0444);
MODULE_PARM_DESC(stage_batch, "stage: pages per staged batch, oldest files first (default 1)");
module_param(write_alloc, charp, 0444);
MODULE_PARM_DESC(write_alloc, "update: written pages stay cached; purge: dropped once clean (default update)");
module_param_named(pace, aipu_pace, uint, 0444);
MODULE_PARM_DESC(pace, "aipu: spread a period's writes across the period, 0 or 1 (default 1)");
module_param_named(max_batch, aipu_max_batch, uint, 0444);
MODULE_PARM_DESC(max_batch, "aipu: at most this many pages per flusher pass, 0 = no limit (default 0)");

static const char * const policies[] = { "kernel", "aipu", "pu", "stage" };
static const char * const write_allocs[] = { "update", "purge" };

/*
 * Purge drops pages aipu wrote, and under "kernel" aipu writes nothing.
 * Switching to "kernel" is always allowed (it is the way back to Linux's own
 * behaviour) and takes write_alloc back to update; see aipu_policy_changed().
 */
static const char *purge_needs_writer(const struct aipu_knob *k,
				      unsigned int v)
{
	return v == AIPU_WRITE_PURGE &&
	       READ_ONCE(aipu_policy) == AIPU_POLICY_KERNEL ?
	       "write_alloc=purge needs a policy that writes (aipu, pu or stage)" :
	       NULL;
}

/* Once the eviction probe was disarmed, only Linux's policy (canary.c). */
static const char *policy_needs_probe(const struct aipu_knob *k,
				      unsigned int v)
{
	return v != AIPU_POLICY_KERNEL && READ_ONCE(aipu_evict_lost) ?
	       "the eviction probe was disarmed; reload aipu" : NULL;
}

const struct aipu_knob aipu_knobs[] = {
	{ "policy", &aipu_policy, 0, AIPU_NR_POLICIES - 1, policies,
	  &policy, policy_needs_probe, aipu_policy_changed },
	{ "max_age_ms", &aipu_max_age_ms, 100, 3600000 },
	{ "period_ms", &aipu_period_ms, 10, 60000 },
	{ "pu_interval_ms", &aipu_pu_interval_ms, 100, 3600000 },
	{ "handover_ms", &aipu_handover_ms, 0, 3600000 },
	{ "stage_interval_ms", &aipu_stage_interval_ms, 0, 3600000 },
	{ "stage_batch", &aipu_stage_batch, 1, 65536 },
	{ "write_alloc", &aipu_write_alloc, 0, 1, write_allocs,
	  &write_alloc, purge_needs_writer },
	{ "pace", &aipu_pace, 0, 1 },
	{ "max_batch", &aipu_max_batch, 0, 1U << 24 },
};

const unsigned int aipu_nr_knobs = ARRAY_SIZE(aipu_knobs);

static int knob_parse(const struct aipu_knob *k, const char *buf,
		      unsigned int *v)
{
	unsigned int i;

	if (!k->choices)
		return kstrtouint(buf, 10, v) || *v < k->min || *v > k->max ?
		       -EINVAL : 0;
	for (i = 0; i <= k->max; i++) {
		if (sysfs_streq(buf, k->choices[i])) {
			*v = i;
			return 0;
		}
	}
	return -EINVAL;
}

static void knob_reject(const struct aipu_knob *k, const char *conflict)
{
	if (conflict)
		pr_warn_ratelimited("%s: rejected: %s\n", k->name, conflict);
	else if (k->choices)
		pr_warn_ratelimited("%s: rejected: expected one of the names listed in the file\n",
				    k->name);
	else
		pr_warn_ratelimited("%s: rejected: expected an integer in [%u, %u]\n",
				    k->name, k->min, k->max);
}

/* Load time: choice parameters are names; refuse what a store would. */
int aipu_knobs_check(void)
{
	const struct aipu_knob *k;
	unsigned int v;

	for (k = aipu_knobs; k < aipu_knobs + aipu_nr_knobs; k++) {
		if (k->choices && !knob_parse(k, *k->param, &v))
			*k->val = v;
		else if (k->choices || *k->val < k->min || *k->val > k->max)
			goto bad;
	}
	for (k = aipu_knobs; k < aipu_knobs + aipu_nr_knobs; k++)
		if (k->conflicts && k->conflicts(k, *k->val))
			goto bad;
	return 0;
bad:
	pr_err("%s: bad value at load; see modinfo aipu\n", k->name);
	return -EINVAL;
}

/* A store's check and set (locking: include/aipu.h). */
static DEFINE_MUTEX(knob_mutex);

int aipu_knob_set(const struct aipu_knob *k, const char *buf)
{
	const char *conflict;
	unsigned int v, old;

	if (knob_parse(k, buf, &v)) {
		knob_reject(k, NULL);
		return -EINVAL;
	}
	mutex_lock(&knob_mutex);
	conflict = k->conflicts ? k->conflicts(k, v) : NULL;
	old = *k->val;
	if (conflict) {
		mutex_unlock(&knob_mutex);
		knob_reject(k, conflict);
		return -EINVAL;
	}
	WRITE_ONCE(*k->val, v);
	if (old != v)
		aipu_trace_knob(k, old, v);
	if (k->changed && old != v)
		k->changed();
	mutex_unlock(&knob_mutex);
	aipu_kupdate_update();
	aipu_flusher_kick();
	return 0;
}

/* As a store of "kernel" into policy would, from src/canary.c. */
void aipu_knobs_policy_kernel(void)
{
	const struct aipu_knob *k = &aipu_knobs[0];
	unsigned int old;

	mutex_lock(&knob_mutex);
	old = *k->val;
	WRITE_ONCE(*k->val, AIPU_POLICY_KERNEL);
	if (old != AIPU_POLICY_KERNEL) {
		aipu_trace_knob(k, old, AIPU_POLICY_KERNEL);
		k->changed();
	}
	mutex_unlock(&knob_mutex);
}

ssize_t aipu_knob_show(const struct aipu_knob *k, char *buf)
{
	unsigned int i, cur = READ_ONCE(*k->val);
	int n = 0;

	if (!k->choices)
		return sysfs_emit(buf, "%u\n", cur);
	for (i = 0; i <= k->max; i++)
		n += sysfs_emit_at(buf, n, i == cur ? "%s[%s]" : "%s%s",
				   i ? " " : "", k->choices[i]);
	return n + sysfs_emit_at(buf, n, "\n");
}

const char *aipu_policy_name(unsigned int id)
{
	return policies[id];
}
