// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu: a better update policy for the Linux page cache.
 *
 * Records when every page first becomes dirty and, once a period, writes
 * only the pages older than max_age_ms (J. Mogul, "A Better Update Policy",
 * 1994).  Root switches policies at run time in /sys/kernel/aipu/.
 */
#include <linux/module.h>

#include "aipu.h"

/* Every device's queue, once no probe and no flusher runs. */
static void forget_all(void)
{
	struct aipu_dev *d;

	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d)) {
		aipu_purge_exit(d);
		aipu_mapping_forget(d);
	}
}

/*
 * Order matters.  Hooks before the flusher: a failure to attach unwinds
 * before anything runs.  The eviction probe comes first (a tracker must never
 * exist without its kill switch) and goes last, once no flusher can touch a
 * mapping.
 */
static int __init aipu_init(void)
{
	int ret;

	ret = aipu_knobs_check();
	if (ret)
		return ret;
	ret = aipu_mem_init();
	if (ret)
		return ret;
	ret = aipu_mapping_init();
	if (ret)
		goto out_mem;
	ret = aipu_canary_init();
	if (ret)
		goto out_mapping;
	aipu_policy_init();
	aipu_dev_refill();
	ret = aipu_hook_init();
	if (ret)
		goto out_policy;
	if (!aipu_canary_flies()) {
		pr_err("the eviction probe on clear_inode() does not fire (debugfs kprobes/enabled 0? kernel.ftrace_enabled 0?): not loading\n");
		ret = -ENODEV;
		goto out_hook;
	}
	aipu_policy_watching();
	ret = aipu_flusher_start();
	if (ret)
		goto out_hook;
	ret = aipu_shrink_init();
	if (ret)
		goto out_flusher;
	ret = aipu_sysfs_init();
	if (ret)
		goto out_shrink;
	pr_info("loaded, policy %s\n", aipu_policy_name(aipu_policy));
	return 0;

out_shrink:
	aipu_shrink_exit();
out_flusher:
	aipu_hook_exit();	/* no probe may queue the stopped flusher's tick */
	aipu_flusher_stop();
out_hook:
	aipu_hook_exit();
	aipu_hook_exit_evict();
out_policy:
	forget_all();		/* what the probes made before they failed */
	aipu_dev_exit();
	aipu_policy_exit();
	aipu_canary_exit();
out_mapping:
	aipu_mapping_exit();
out_mem:
	aipu_mem_exit();
	return ret;
}

/*
 * No store may switch policies once we start, Linux gets its periodic
 * writeback back before anything else, no probe may create runs once the
 * flusher is gone, and eviction stays hooked while the flusher can still
 * touch a mapping.
 */
static void __exit aipu_exit(void)
{
	aipu_sysfs_exit();
	aipu_policy_exit();
	aipu_hook_exit();
	aipu_flusher_stop();
	aipu_canary_exit();	/* the tick was its only user */
	aipu_shrink_exit();
	forget_all();
	aipu_hook_exit_evict();
	aipu_dev_exit();
	aipu_mapping_exit();
	aipu_mem_exit();
	pr_info("unloaded\n");
}

module_init(aipu_init);
module_exit(aipu_exit);

MODULE_DESCRIPTION("Approximate interval periodic update: per-page aging of dirty data");
MODULE_AUTHOR("The aipu developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(AIPU_VERSION);
