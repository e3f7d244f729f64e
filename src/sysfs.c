// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: /sys/kernel/aipu/.
 *
 *   policy          "[kernel] aipu pu stage"; write a name to switch
 *   write_alloc     "[update] purge"
 *   max_age_ms, period_ms, pu_interval_ms, handover_ms, stage_interval_ms,
 *   stage_batch, pace, max_batch                  numbers (see knobs.c)
 *   stat            counters, one "name value" pair a line
 *   devices         one line a backing device aipu tracks (a page of
 *                   them: debugfs.c lists them all)
 *   burst_hist      pages written per flusher pass: "low high passes"
 *   age_hist        pages written, by age in ms when written: "low high pages"
 *
 * Writes need root (mode 0644); a value we cannot take is refused with
 * -EINVAL, one rate-limited log line, and no change.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/kobject.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "aipu.h"

static struct kobject *aipu_kobj;

struct knob_attr {
	struct kobj_attribute ka;
	const struct aipu_knob *knob;
};

static ssize_t knob_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	const struct aipu_knob *k = container_of(attr, struct knob_attr,
						 ka)->knob;

	return aipu_knob_show(k, buf);
}

static ssize_t knob_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	const struct aipu_knob *k = container_of(attr, struct knob_attr,
						 ka)->knob;
	int ret = aipu_knob_set(k, buf);

	return ret ? ret : count;
}

static ssize_t stat_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct aipu_sums sum;
	struct aipu_stats s;
	unsigned long oldest;
	int n = 0;

	aipu_dev_sum(&sum, &oldest);
	s = sum.st;
	aipu_hook_stats(&s);

#define EMIT(name, val) (n += sysfs_emit_at(buf, n, name " %llu\n", \
					    (unsigned long long)(val)))
	EMIT("pages_dirtied", s.pages_dirtied);
	EMIT("meta_dirtied", s.meta_dirtied);
	EMIT("entries_scanned", s.entries_scanned);
	EMIT("pages_written", s.pages_written);
	EMIT("meta_written", s.meta_written);
	EMIT("pages_clean", s.pages_clean);
	EMIT("pages_retried", s.pages_retried);
	EMIT("pages_tracked", s.pages_tracked);
	EMIT("runs_tracked", s.runs_tracked);
	EMIT("mappings_tracked", s.trackers);
	EMIT("oldest_age_ms", jiffies_to_msecs(oldest));
	EMIT("flusher_runs", s.flusher_runs);
	EMIT("fallbacks", s.fallbacks);
	EMIT("pages_deferred", s.pages_deferred);
	EMIT("pages_late", s.pages_late);
	EMIT("pages_staged", s.pages_staged);
	EMIT("pages_purged", s.pages_purged);
	EMIT("pages_not_purged", s.pages_not_purged);
	EMIT("pages_evicting", s.pages_evicting);
	EMIT("pages_redirtied", s.pages_redirtied);
	EMIT("times_dirtied", s.times_dirtied);
	EMIT("times_written", s.times_written);
	EMIT("kupdate_off", aipu_kupdate_is_off());
	EMIT("handover_left_ms", aipu_handover_left_ms());
	EMIT("devices", sum.devices);
	EMIT("lock_hold_max_ns", s.lock_hold_max_ns);
	EMIT("mem_bytes", aipu_mem_bytes());
	EMIT("handover_waiting", aipu_handover_waiting());
	EMIT("pages_fast", s.pages_fast);
	EMIT("wb_takes", s.wb_takes);
	EMIT("wb_full", s.wb_full);
	EMIT("pages_refused", s.pages_refused);
	EMIT("pages_foreign", s.pages_foreign);
	EMIT("evict_probe_lost", READ_ONCE(aipu_evict_lost));
	EMIT("inodes_adopted", s.inodes_adopted);
#undef EMIT
	return n;
}

/*
 * @d's line of devices into @line: its name (major:minor, as
 * /sys/class/bdi), then what stat says of it alone, and its flusher
 * thread's pid (0: none yet).  Returns the line's length.  An RCU reader.
 */
int aipu_dev_line(struct aipu_dev *d, char *line, size_t size)
{
	struct aipu_stats s;
	unsigned long o;

	aipu_dev_snapshot(d, &s, &o);
	return scnprintf(line, size,
			 "%s pages_tracked %llu mappings_tracked %llu oldest_age_ms %u pages_written %llu pages_late %llu flusher_runs %llu flusher_pid %d\n",
			 d->name, s.pages_tracked, s.trackers,
			 jiffies_to_msecs(o), s.pages_written, s.pages_late,
			 s.flusher_runs, aipu_flusher_pid(d));
}

/* Room kept at the end of the page for the line that counts the rest. */
#define AIPU_MORE_ROOM 96

/*
 * One line a backing device, as many as fit in a page (about 25), then,
 * if some did not, one line that says how many and where they all are.
 */
static ssize_t devices_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	char line[AIPU_DEV_LINE_MAX];
	unsigned int more = 0;
	struct aipu_dev *d;
	int n = 0, len;

	rcu_read_lock();
	for (d = aipu_dev_next(NULL); d; d = aipu_dev_next(d)) {
		/* Once the page is full the rest are only counted. */
		if (more) {
			more++;
			continue;
		}
		len = aipu_dev_line(d, line, sizeof(line));
		if (n + len > PAGE_SIZE - AIPU_MORE_ROOM)
			more++;
		else
			n += sysfs_emit_at(buf, n, "%s", line);
	}
	rcu_read_unlock();
	if (more)
		n += sysfs_emit_at(buf, n,
				   "+%u more devices: /sys/kernel/debug/%s/devices lists all\n",
				   more, AIPU_NAME);
	return n;
}

static struct kobj_attribute devices_attr = __ATTR_RO(devices);

static struct kobj_attribute stat_attr = __ATTR_RO(stat);

/* Bucket b counts [2^(b-1), 2^b - 1]; the last one is open-ended. */
static ssize_t hist_show(char *buf, bool age)
{
	int b, buckets = age ? AIPU_AGE_BUCKETS : AIPU_HIST_BUCKETS, n = 0;
	struct aipu_sums sum;
	unsigned long oldest;
	const u64 *hist;

	aipu_dev_sum(&sum, &oldest);
	hist = age ? sum.age_hist : sum.hist;
	for (b = 0; b < buckets; b++) {
		unsigned long lo = b ? 1UL << (b - 1) : 0;
		unsigned long hi = b ? (1UL << b) - 1 : 0;

		if (b == buckets - 1)
			n += sysfs_emit_at(buf, n, "%lu - %llu\n", lo, hist[b]);
		else
			n += sysfs_emit_at(buf, n, "%lu %lu %llu\n", lo, hi,
					   hist[b]);
	}
	return n;
}

static ssize_t burst_hist_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return hist_show(buf, false);
}

static ssize_t age_hist_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	return hist_show(buf, true);
}

static struct kobj_attribute age_hist_attr = __ATTR_RO(age_hist);
static struct kobj_attribute burst_hist_attr = __ATTR_RO(burst_hist);

static struct knob_attr *knob_attrs;
static struct attribute **attrs;
static struct attribute_group group;

static int build_group(void)
{
	unsigned int i, n = aipu_nr_knobs;

	knob_attrs = kcalloc(n, sizeof(*knob_attrs), GFP_KERNEL);
	attrs = kcalloc(n + 5, sizeof(*attrs), GFP_KERNEL);
	if (!knob_attrs || !attrs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct kobj_attribute *ka = &knob_attrs[i].ka;

		knob_attrs[i].knob = &aipu_knobs[i];
		sysfs_attr_init(&ka->attr);
		ka->attr.name = aipu_knobs[i].name;
		ka->attr.mode = 0644;
		ka->show = knob_show;
		ka->store = knob_store;
		attrs[i] = &ka->attr;
	}
	attrs[n] = &stat_attr.attr;
	attrs[n + 1] = &burst_hist_attr.attr;
	attrs[n + 2] = &age_hist_attr.attr;
	attrs[n + 3] = &devices_attr.attr;
	group.attrs = attrs;
	return 0;
}

static void free_group(void)
{
	kfree(attrs);
	kfree(knob_attrs);
	attrs = NULL;
	knob_attrs = NULL;
}

int aipu_sysfs_init(void)
{
	int ret = build_group();

	if (ret)
		goto out_free;
	aipu_kobj = kobject_create_and_add(AIPU_NAME, kernel_kobj);
	if (!aipu_kobj) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = sysfs_create_group(aipu_kobj, &group);
	if (!ret) {
		aipu_debugfs_init();
		return 0;
	}
	kobject_put(aipu_kobj);
	aipu_kobj = NULL;
out_free:
	free_group();
	return ret;
}

/* kobject_put() waits for stores in progress (kernfs active references). */
void aipu_sysfs_exit(void)
{
	aipu_debugfs_exit();
	if (aipu_kobj) {
		sysfs_remove_group(aipu_kobj, &group);
		kobject_put(aipu_kobj);
	}
	aipu_kobj = NULL;
	free_group();
}
