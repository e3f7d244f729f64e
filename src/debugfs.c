// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: /sys/kernel/debug/aipu/.
 *
 *   devices   every backing device's line of /sys/kernel/aipu/devices,
 *             which holds one page of them (about 25); this has no limit
 *   fail_trackers
 *             write N: the next N trackers the probes or the adoption ask
 *             for fail as if memory had run out (tests/vm/t_fallback.sh)
 *
 * Best effort: without debugfs the directory is simply not there.  Its
 * files are debugfs's full proxies, so removing them at rmmod waits for a
 * read in progress.
 */
#include <linux/debugfs.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>

#include "aipu.h"

static struct dentry *aipu_debugfs_dir;

/* seq_file calls again with a larger buffer if this one overflows. */
static int devices_show(struct seq_file *m, void *v)
{
	char line[AIPU_DEV_LINE_MAX];
	struct aipu_dev *d;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d)) {
		aipu_dev_line(d, line, sizeof(line));
		seq_puts(m, line);
	}
	rcu_read_unlock();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(devices);

void aipu_debugfs_init(void)
{
	aipu_debugfs_dir = debugfs_create_dir(AIPU_NAME, NULL);
	debugfs_create_file("devices", 0444, aipu_debugfs_dir, NULL,
			    &devices_fops);
	debugfs_create_atomic_t("fail_trackers", 0600, aipu_debugfs_dir,
				&aipu_fail_trackers);
}

void aipu_debugfs_exit(void)
{
	debugfs_remove_recursive(aipu_debugfs_dir);
	aipu_debugfs_dir = NULL;
}
