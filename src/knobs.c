// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: tunables.  One list (include/aipu_knobs.h) makes the module
 * parameters (initial values at insmod) and the table behind
 * /sys/kernel/aipu/ (run time), one line per knob as null_blk's.
 * A knob is a number in [min, max] or, with @choices, one of a few names
 * shown like /sys/block/<dev>/queue/scheduler.
 */
#include <linux/kernel.h>
#include <linux/module.h>

#include "aipu.h"
#include "aipu_trace.h"

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

/*
 * The variables and module parameters (include/aipu_knobs.h).  A choice's
 * parameter is the name given at load, else its default's (set by
 * aipu_knobs_check()).  The description is what MODULE_PARM_DESC() makes
 * (MODULE_INFO(parm, ...)), with the range and default of a number
 * appended.
 */
#define AIPU_CHOICE(name, conflicts, changed, desc, ...)		\
	static const char * const name##_choices[] = { __VA_ARGS__ };	\
	static char *aipu_param_##name;					\
	unsigned int aipu_##name;					\
	module_param_named(name, aipu_param_##name, charp, 0444);	\
	MODULE_INFO(parm, #name ":" desc)
#define AIPU_NUMBER(name, def, min, max, desc)				\
	unsigned int aipu_##name = def;					\
	module_param_named(name, aipu_##name, uint, 0444);		\
	MODULE_INFO(parm, #name ":" desc " (" #min " to " #max		\
		    ", default " #def ")")
#include "aipu_knobs.h"
#undef AIPU_CHOICE
#undef AIPU_NUMBER

/* The choices' enums and names agree. */
static_assert(ARRAY_SIZE(policy_choices) == AIPU_NR_POLICIES);
static_assert(ARRAY_SIZE(write_alloc_choices) == AIPU_NR_WRITE_ALLOCS);
static_assert(AIPU_POLICY_KERNEL == 0 && AIPU_WRITE_UPDATE == 0);

/* The table, in the list's order: filled once, at load, before sysfs. */
#define AIPU_KNOBS_MAX 16
struct aipu_knob aipu_knobs[AIPU_KNOBS_MAX];
unsigned int aipu_nr_knobs;

static void knob_add(const struct aipu_knob *k)
{
	if (aipu_nr_knobs < AIPU_KNOBS_MAX)
		aipu_knobs[aipu_nr_knobs] = *k;
	aipu_nr_knobs++;	/* past AIPU_KNOBS_MAX: aipu_knobs_check() fails */
}

static void knobs_fill(void)
{
#define AIPU_CHOICE(name, conflicts, changed, desc, ...)		\
	knob_add(&(struct aipu_knob){ #name, &aipu_##name, 0,		\
		 ARRAY_SIZE(name##_choices) - 1, name##_choices,	\
		 &aipu_param_##name, conflicts, changed })
#define AIPU_NUMBER(name, def, min, max, desc)				\
	knob_add(&(struct aipu_knob){ #name, &aipu_##name, min, max })
#include "aipu_knobs.h"
#undef AIPU_CHOICE
#undef AIPU_NUMBER
}

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

	knobs_fill();
	if (aipu_nr_knobs > AIPU_KNOBS_MAX) {
		pr_err("%u knobs, room for %u: raise AIPU_KNOBS_MAX\n",
		       aipu_nr_knobs, AIPU_KNOBS_MAX);
		return -EINVAL;
	}
	for (k = aipu_knobs; k < aipu_knobs + aipu_nr_knobs; k++) {
		if (!k->choices) {
			if (*k->val < k->min || *k->val > k->max)
				goto bad;
			continue;
		}
		if (!*k->param) {
			/* Not given: the default's name (not freed at unload). */
			*k->param = (char *)k->choices[*k->val];
			continue;
		}
		if (knob_parse(k, *k->param, &v))
			goto bad;
		*k->val = v;
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
	return policy_choices[id];
}
