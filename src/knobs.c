// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: tunables.  One table drives both the module parameters (initial
 * values at insmod) and /sys/kernel/aipu/ (run time), as null_blk does.
 */
#include <linux/kernel.h>
#include <linux/module.h>

#include "aipu.h"

unsigned int aipu_max_age_ms = 30000;
unsigned int aipu_period_ms = 1000;
unsigned int aipu_pu_interval_ms = 30000;
unsigned int aipu_handover_ms = 35000;
char *aipu_policy_param = "kernel";

module_param_named(policy, aipu_policy_param, charp, 0444);
MODULE_PARM_DESC(policy, "Update policy at load: kernel, aipu or pu (default kernel)");
module_param_named(max_age_ms, aipu_max_age_ms, uint, 0444);
MODULE_PARM_DESC(max_age_ms, "aipu: write pages dirty for longer than this (default 30000)");
module_param_named(period_ms, aipu_period_ms, uint, 0444);
MODULE_PARM_DESC(period_ms, "Flusher period (default 1000)");
module_param_named(pu_interval_ms, aipu_pu_interval_ms, uint, 0444);
MODULE_PARM_DESC(pu_interval_ms, "pu: write everything this often (default 30000)");
module_param_named(handover_ms, aipu_handover_ms, uint, 0444);
MODULE_PARM_DESC(handover_ms, "Keep Linux's periodic writeback on this long after load, for data dirtied before (default 35000)");

const struct aipu_knob aipu_knobs[] = {
	{ "max_age_ms", &aipu_max_age_ms, 100, 3600000 },
	{ "period_ms", &aipu_period_ms, 10, 60000 },
	{ "pu_interval_ms", &aipu_pu_interval_ms, 100, 3600000 },
	{ "handover_ms", &aipu_handover_ms, 0, 3600000 },
};

const unsigned int aipu_nr_knobs = ARRAY_SIZE(aipu_knobs);

static bool knob_ok(const struct aipu_knob *k, unsigned int v)
{
	return v >= k->min && v <= k->max;
}

/* At insmod: refuse to load with a value we would refuse at run time. */
int aipu_knobs_check(void)
{
	unsigned int i;

	for (i = 0; i < aipu_nr_knobs; i++) {
		if (!knob_ok(&aipu_knobs[i], *aipu_knobs[i].val)) {
			pr_err("%s=%u is out of range [%u, %u]\n",
			       aipu_knobs[i].name, *aipu_knobs[i].val,
			       aipu_knobs[i].min, aipu_knobs[i].max);
			return -EINVAL;
		}
	}
	if (aipu_policy_parse(aipu_policy_param) < 0) {
		pr_err("policy: unknown policy (kernel, aipu or pu)\n");
		return -EINVAL;
	}
	return 0;
}

int aipu_knob_set(const struct aipu_knob *k, const char *buf)
{
	unsigned int v;

	if (kstrtouint(buf, 10, &v) || !knob_ok(k, v)) {
		pr_warn_ratelimited("%s: rejected: expected an integer in [%u, %u]\n",
				    k->name, k->min, k->max);
		return -EINVAL;
	}
	WRITE_ONCE(*k->val, v);
	aipu_kupdate_update();
	aipu_flusher_kick();
	return 0;
}
