// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: update policies, and Linux's own periodic writeback.
 *
 *   kernel  aipu writes nothing; Linux's writeback runs as without aipu.
 *           Pages are still timestamped, so a switch bounds them at once.
 *   aipu    every period, write pages dirty for longer than max_age_ms.
 *   pu      every pu_interval_ms, write everything tracked in one burst.
 *
 * While aipu or pu is active, Linux's periodic ("kupdate") writeback is off;
 * background writeback above dirty_background_ratio, sync and fsync are
 * untouched.  Dirty data aipu never saw (dirtied before insmod, or when
 * tracking memory ran out completely) is handed to Linux: periodic writeback
 * stays on for handover_ms after load and for AIPU_UNTRACKED_MS after such a
 * fallback.
 */
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/writeback.h>

#include "aipu.h"

/* Linux's default bound, dirty_expire 30 s + dirty_writeback 5 s, + slack. */
#define AIPU_UNTRACKED_MS 40000

#define KUPDATE_SYSCTL "/proc/sys/vm/dirty_writeback_centisecs"

static const char * const names[AIPU_NR_POLICIES] = {
	[AIPU_POLICY_KERNEL] = "kernel",
	[AIPU_POLICY_AIPU] = "aipu",
	[AIPU_POLICY_PU] = "pu",
};

static int policy = AIPU_POLICY_KERNEL;
static unsigned long loaded_at, untracked_until, last_pu;

static DEFINE_MUTEX(kupdate_mutex);
static bool kupdate_off, stopping;
static unsigned int kupdate_saved;

int aipu_policy_parse(const char *buf)
{
	int i;

	for (i = 0; i < AIPU_NR_POLICIES; i++)
		if (sysfs_streq(buf, names[i]))
			return i;
	return -EINVAL;
}

const char *aipu_policy_name(int id)
{
	return names[id];
}

int aipu_policy_get(void)
{
	return READ_ONCE(policy);
}

bool aipu_policy_writes(void)
{
	return READ_ONCE(policy) != AIPU_POLICY_KERNEL;
}

void aipu_policy_set(int id)
{
	if (READ_ONCE(policy) != id)
		last_pu = jiffies;
	WRITE_ONCE(policy, id);
	aipu_kupdate_update();
	aipu_flusher_kick();
}

/* Phase 1 for the current policy; tracking lock held. */
unsigned long aipu_policy_scan(unsigned long now)
{
	unsigned long age = msecs_to_jiffies(READ_ONCE(aipu_max_age_ms));

	if (READ_ONCE(policy) == AIPU_POLICY_PU) {
		unsigned long every = msecs_to_jiffies(aipu_pu_interval_ms);

		if (time_before(now, last_pu + every))
			return 0;
		last_pu = now;
		return track_scan(&aipu_tr, now, true, 0);
	}
	/*
	 * Strictly older than max_age: a page dirtied late in jiffy j is
	 * never written before max_age has passed.  Under "kernel" the same
	 * scan only drops runs Linux has cleaned.
	 */
	return track_scan(&aipu_tr, now - age, false, 0);
}

/* Atomic context: only note the time; the flusher acts on it. */
void aipu_policy_untracked(void)
{
	WRITE_ONCE(untracked_until,
		   jiffies + msecs_to_jiffies(AIPU_UNTRACKED_MS));
}

static bool handing_over(void)
{
	unsigned long now = jiffies;

	return time_before(now, loaded_at +
			   msecs_to_jiffies(READ_ONCE(aipu_handover_ms))) ||
	       time_before(now, READ_ONCE(untracked_until));
}

unsigned long aipu_handover_left_ms(void)
{
	unsigned long now = jiffies, a, b;

	a = loaded_at + msecs_to_jiffies(READ_ONCE(aipu_handover_ms));
	b = READ_ONCE(untracked_until);
	if (time_before(a, b))
		a = b;
	return time_before(now, a) ? jiffies_to_msecs(a - now) : 0;
}

/*
 * Through the sysctl file when we can: its handler wakes the flusher
 * threads, without which a restored interval only takes effect the next
 * time an inode is dirtied.
 */
static void kupdate_set(unsigned int centisecs)
{
	char buf[16];
	struct file *f;
	loff_t pos = 0;
	int len;

	len = scnprintf(buf, sizeof(buf), "%u\n", centisecs);
	f = filp_open(KUPDATE_SYSCTL, O_WRONLY, 0);
	if (!IS_ERR(f)) {
		if (kernel_write(f, buf, len, &pos) == len) {
			filp_close(f, NULL);
			return;
		}
		filp_close(f, NULL);
	}
	WRITE_ONCE(dirty_writeback_interval, centisecs);
}

/* Process context: the flusher each period, sysfs stores, module exit. */
void aipu_kupdate_update(void)
{
	bool off;

	mutex_lock(&kupdate_mutex);
	off = !stopping && aipu_policy_writes() && !handing_over();
	if (off && !kupdate_off) {
		kupdate_saved = READ_ONCE(dirty_writeback_interval);
		if (kupdate_saved)
			kupdate_set(0);
		kupdate_off = true;
	} else if (!off && kupdate_off) {
		/* A value root set meanwhile wins over ours. */
		if (!READ_ONCE(dirty_writeback_interval) && kupdate_saved)
			kupdate_set(kupdate_saved);
		kupdate_off = false;
	}
	mutex_unlock(&kupdate_mutex);
}

bool aipu_kupdate_is_off(void)
{
	return READ_ONCE(kupdate_off);
}

void aipu_policy_init(void)
{
	loaded_at = jiffies;
	untracked_until = loaded_at;
	last_pu = loaded_at;
}

void aipu_policy_exit(void)
{
	WRITE_ONCE(policy, AIPU_POLICY_KERNEL);
	mutex_lock(&kupdate_mutex);
	stopping = true;
	mutex_unlock(&kupdate_mutex);
	aipu_kupdate_update();
}
