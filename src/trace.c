// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: its trace events (include/aipu_trace.h), and the helpers the rest
 * of the module calls.  Each helper first tests its event's static key, so
 * a disabled event costs a branch that is patched out.
 */
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/sched/clock.h>

#include "aipu.h"

#define CREATE_TRACE_POINTS
#include "aipu_trace.h"

/* Under the device's lock: what the pass will be measured against. */
static void pass_snapshot(struct aipu_dev *d, u64 *scanned, u64 *retried,
			  u64 *taken)
{
	*scanned = d->tr.st.entries_scanned;
	*retried = d->st.pages_retried;
	*taken = d->tr.st.pages_taken;
}

void aipu_trace_pass_begin(struct aipu_dev *d, struct aipu_pass_trace *pt)
{
	unsigned long flags;

	pt->on = trace_aipu_pass_enabled();
	if (!pt->on)
		return;
	pt->start_ns = local_clock();
	pt->scan_ns = 0;
	flags = aipu_dev_lock(d);
	pass_snapshot(d, &pt->scanned, &pt->retried, &pt->taken);
	aipu_dev_unlock(d, flags);
}

void aipu_trace_scan_begin(struct aipu_pass_trace *pt)
{
	if (pt->on)
		pt->scan_start_ns = local_clock();
}

void aipu_trace_scan_end(struct aipu_pass_trace *pt)
{
	if (pt->on)
		pt->scan_ns = local_clock() - pt->scan_start_ns;
}

/* Under the device's lock, at the end of phase 2. */
void aipu_trace_pass_end(struct aipu_dev *d, struct aipu_pass_trace *pt,
			 unsigned long written)
{
	u64 scanned, retried, taken;

	if (!pt->on || !trace_aipu_pass_enabled())
		return;
	pass_snapshot(d, &scanned, &retried, &taken);
	trace_aipu_pass(d->name, taken - pt->taken,
			written, scanned - pt->scanned, retried - pt->retried,
			local_clock() - pt->start_ns, pt->scan_ns);
}

static unsigned long ino_of(struct address_space *m)
{
	return m && m->host ? m->host->i_ino : 0;
}

/*
 * @m pinned by the flusher; [start, end) as issued, end ULONG_MAX: whole;
 * @time: the oldest first-dirty time of its pages.
 */
void aipu_trace_issue(struct aipu_dev *d, struct address_space *m,
		      pgoff_t start, pgoff_t end, unsigned long written,
		      unsigned long time)
{
	if (!trace_aipu_issue_enabled())
		return;
	trace_aipu_issue(d->name, ino_of(m), start,
			 end == ULONG_MAX ? 0 : end - start, written,
			 jiffies_to_msecs(jiffies - time));
}

void aipu_trace_fallback(struct aipu_dev *d, struct address_space *m,
			 enum aipu_fallback_why why, unsigned long pages)
{
	if (trace_aipu_fallback_enabled())
		trace_aipu_fallback(d ? d->name : "-", ino_of(m), why, pages);
}

static const char *knob_text(const struct aipu_knob *k, unsigned int v,
			     char *buf, size_t len)
{
	if (k->choices && v <= k->max)
		return k->choices[v];
	snprintf(buf, len, "%u", v);
	return buf;
}

void aipu_trace_knob(const struct aipu_knob *k, unsigned int old,
		     unsigned int val)
{
	char a[16], b[16];

	if (trace_aipu_knob_enabled())
		trace_aipu_knob(k->name, knob_text(k, old, a, sizeof(a)),
				knob_text(k, val, b, sizeof(b)));
}
