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

DEFINE_SPINLOCK(aipu_lock);
struct aipu_track aipu_tr;

static int __init aipu_init(void)
{
	int ret;

	ret = aipu_knobs_check();
	if (ret)
		return ret;
	track_init(&aipu_tr);
	ret = aipu_mem_init();
	if (ret)
		return ret;
	aipu_policy_init();
	ret = aipu_flusher_start();
	if (ret)
		goto out_policy;
	ret = aipu_hook_init();
	if (ret)
		goto out_flusher;
	ret = aipu_sysfs_init();
	if (ret)
		goto out_hook;
	pr_info("loaded, policy %s\n", aipu_policy_name(aipu_policy));
	return 0;

out_hook:
	aipu_hook_exit();
out_flusher:
	aipu_flusher_stop();
	aipu_purge_exit();
	aipu_hook_exit_evict();
	track_clear(&aipu_tr);
out_policy:
	aipu_policy_exit();
	aipu_mem_exit();
	return ret;
}

/*
 * Order matters: no store may switch policies once we start, Linux gets its
 * periodic writeback back before anything else, no probe may create runs
 * once the flusher is gone, and eviction stays hooked while the flusher can
 * still touch a mapping.
 */
static void __exit aipu_exit(void)
{
	aipu_sysfs_exit();
	aipu_policy_exit();
	aipu_hook_exit();
	aipu_flusher_stop();
	aipu_purge_exit();
	aipu_hook_exit_evict();
	track_clear(&aipu_tr);
	aipu_mem_exit();
	pr_info("unloaded\n");
}

module_init(aipu_init);
module_exit(aipu_exit);

MODULE_DESCRIPTION("Approximate interval periodic update: per-page aging of dirty data");
MODULE_AUTHOR("The aipu developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(AIPU_VERSION);
