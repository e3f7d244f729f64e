/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aipu's trace events, for perf, trace-cmd, bpftrace and tracefs
 * (/sys/kernel/tracing/events/aipu/):
 *
 *   aipu_pass      one flusher pass of one backing device
 *   aipu_issue     one run of pages issued for writeback
 *   aipu_fallback  aipu fell back to a coarser bound, and why
 *   aipu_knob      a knob under /sys/kernel/aipu/ (the policy too) changed
 *
 * None fires per page on the dirtying path: aipu_fallback fires there only
 * when tracking memory runs out.  A disabled event costs a patched-out
 * branch (a static key); the helpers in src/trace.c check it first.
 *
 * CREATE_TRACE_POINTS is defined in src/trace.c alone.  TRACE_INCLUDE_PATH
 * "." makes trace/define_trace.h include "./aipu_trace.h", which the
 * module's -I$(src)/include finds: the out-of-tree build needs no path of
 * the kernel's (as samples/trace_events does).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM aipu

#ifndef AIPU_TRACE_API_H
#define AIPU_TRACE_API_H

#include <linux/types.h>

struct aipu_dev;
struct aipu_knob;
struct address_space;

/* A flusher pass as aipu_trace_pass_begin() found it. */
struct aipu_pass_trace {
	bool on;
	u64 start_ns, scan_start_ns, scan_ns;
	u64 scanned, retried, taken;
};

/* Why aipu_fallback fired. */
enum aipu_fallback_why {
	AIPU_FB_NO_DEVICE,	/* no queue for the device: Linux's writeback */
	AIPU_FB_NO_TRACKER,	/* no tracker for the file: Linux's writeback */
	AIPU_FB_NO_RUN,		/* no run for the pages: the whole file is due */
	AIPU_FB_SHRINK,		/* memory pressure: the whole file is due */
};

void aipu_trace_pass_begin(struct aipu_dev *d, struct aipu_pass_trace *pt);
void aipu_trace_scan_begin(struct aipu_pass_trace *pt);
void aipu_trace_scan_end(struct aipu_pass_trace *pt);
void aipu_trace_pass_end(struct aipu_dev *d, struct aipu_pass_trace *pt,
			 unsigned long written);
void aipu_trace_issue(struct aipu_dev *d, struct address_space *m,
		      pgoff_t start, pgoff_t end, unsigned long written,
		      unsigned long time);
void aipu_trace_fallback(struct aipu_dev *d, struct address_space *m,
			 enum aipu_fallback_why why, unsigned long pages);

/*
 * Around a call into the tracking logic on the dirtying path (src/queue/queue.c
 * counts its own fallbacks), under the device's lock: a fallback record if
 * the call fell back.  Macros, so that with the event off all that runs is
 * the event's patched-out branch.
 */
#define aipu_trace_fallbacks(d)						\
	(trace_aipu_fallback_enabled() ? (d)->tr.st.fallbacks : U64_MAX)
#define aipu_trace_fallback_since(d, before, m, why, pages)		\
	do {								\
		struct aipu_dev *__d = (d);				\
									\
		if (trace_aipu_fallback_enabled() &&			\
		    __d->tr.st.fallbacks > (before))			\
			aipu_trace_fallback(__d, m, why, pages);	\
	} while (0)
void aipu_trace_knob(const struct aipu_knob *k, unsigned int old,
		     unsigned int val);

#endif /* AIPU_TRACE_API_H */

#if !defined(_AIPU_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _AIPU_TRACE_H

#include <linux/string.h>
#include <linux/tracepoint.h>

/*
 * Names (a device's "major:minor", a knob and its values) are fixed arrays,
 * not __string(): __assign_str() lost its second argument in 6.10, and a
 * fixed array reads the same in bpftrace on every kernel.
 */
#define AIPU_TRACE_NAME_LEN 32

#define AIPU_FALLBACK_WHY					\
	{ AIPU_FB_NO_DEVICE,	"no_device" },			\
	{ AIPU_FB_NO_TRACKER,	"no_tracker" },			\
	{ AIPU_FB_NO_RUN,	"no_run" },			\
	{ AIPU_FB_SHRINK,	"shrink" }

TRACE_DEFINE_ENUM(AIPU_FB_NO_DEVICE);
TRACE_DEFINE_ENUM(AIPU_FB_NO_TRACKER);
TRACE_DEFINE_ENUM(AIPU_FB_NO_RUN);
TRACE_DEFINE_ENUM(AIPU_FB_SHRINK);

/*
 * One flusher pass of device @dev: @due pages phase 1 moved to the pending
 * list (aged, or staged; a whole-file or metadata entry counts one),
 * @issued pages written, @scanned entries phase 1
 * looked at, @retried pages still dirty after their issue (kept for the
 * next pass); @pass_ns the whole pass, @lock_ns phase 1, the part that
 * works under the device's lock (taken a batch at a time).
 */
TRACE_EVENT(aipu_pass,
	TP_PROTO(const char *dev, u64 due, u64 issued, u64 scanned,
		 u64 retried, u64 pass_ns, u64 lock_ns),
	TP_ARGS(dev, due, issued, scanned, retried, pass_ns, lock_ns),
	TP_STRUCT__entry(
		__array(char, dev, AIPU_TRACE_NAME_LEN)
		__field(u64, due)
		__field(u64, issued)
		__field(u64, scanned)
		__field(u64, retried)
		__field(u64, pass_ns)
		__field(u64, lock_ns)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dev, sizeof(__entry->dev));
		__entry->due = due;
		__entry->issued = issued;
		__entry->scanned = scanned;
		__entry->retried = retried;
		__entry->pass_ns = pass_ns;
		__entry->lock_ns = lock_ns;
	),
	TP_printk("dev=%s due=%llu issued=%llu scanned=%llu retried=%llu pass_ns=%llu lock_ns=%llu",
		  __entry->dev, __entry->due, __entry->issued,
		  __entry->scanned, __entry->retried, __entry->pass_ns,
		  __entry->lock_ns)
);

/*
 * A run of pages [first, first + pages) of inode @ino on @dev issued for
 * writeback (@pages 0: the whole file), its oldest page @age_ms old;
 * @written pages went out (the others were clean, locked or already under
 * writeback).
 */
TRACE_EVENT(aipu_issue,
	TP_PROTO(const char *dev, unsigned long ino, pgoff_t first,
		 unsigned long pages, unsigned long written,
		 unsigned int age_ms),
	TP_ARGS(dev, ino, first, pages, written, age_ms),
	TP_STRUCT__entry(
		__array(char, dev, AIPU_TRACE_NAME_LEN)
		__field(unsigned long, ino)
		__field(pgoff_t, first)
		__field(unsigned long, pages)
		__field(unsigned long, written)
		__field(unsigned int, age_ms)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dev, sizeof(__entry->dev));
		__entry->ino = ino;
		__entry->first = first;
		__entry->pages = pages;
		__entry->written = written;
		__entry->age_ms = age_ms;
	),
	TP_printk("dev=%s ino=%lu first=%lu pages=%lu written=%lu age_ms=%u",
		  __entry->dev, __entry->ino, (unsigned long)__entry->first,
		  __entry->pages, __entry->written, __entry->age_ms)
);

/*
 * aipu fell back to a coarser bound for inode @ino on @dev (dev "-": no
 * device queue), @pages pages dirtied at that moment (0 for metadata).
 */
TRACE_EVENT(aipu_fallback,
	TP_PROTO(const char *dev, unsigned long ino, int why,
		 unsigned long pages),
	TP_ARGS(dev, ino, why, pages),
	TP_STRUCT__entry(
		__array(char, dev, AIPU_TRACE_NAME_LEN)
		__field(unsigned long, ino)
		__field(int, why)
		__field(unsigned long, pages)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dev, sizeof(__entry->dev));
		__entry->ino = ino;
		__entry->why = why;
		__entry->pages = pages;
	),
	TP_printk("dev=%s ino=%lu why=%s pages=%lu", __entry->dev,
		  __entry->ino,
		  __print_symbolic(__entry->why, AIPU_FALLBACK_WHY),
		  __entry->pages)
);

/* The knob @name went from @old to @val (names for policy, write_alloc). */
TRACE_EVENT(aipu_knob,
	TP_PROTO(const char *name, const char *old, const char *val),
	TP_ARGS(name, old, val),
	TP_STRUCT__entry(
		__array(char, name, AIPU_TRACE_NAME_LEN)
		__array(char, old, AIPU_TRACE_NAME_LEN)
		__array(char, val, AIPU_TRACE_NAME_LEN)
	),
	TP_fast_assign(
		strscpy(__entry->name, name, sizeof(__entry->name));
		strscpy(__entry->old, old, sizeof(__entry->old));
		strscpy(__entry->val, val, sizeof(__entry->val));
	),
	TP_printk("knob=%s old=%s new=%s", __entry->name, __entry->old,
		  __entry->val)
);

#endif /* _AIPU_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE aipu_trace
#include <trace/define_trace.h>
