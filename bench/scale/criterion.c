// SPDX-License-Identifier: GPL-2.0
/*
 * Issue 14's criterion: with 1,000,000 pages tracked, the longest
 * interrupts-off section at most 50 us, read from tables 0, 4, 5 and 8.
 */
#include "scale.h"

/* ---- the criterion ---- */

/* Worst hold at 1 M pages, for the criterion line. */
struct worst {
	double p99, p999, max;
	char p99_what[96], p999_what[96], max_what[96];
};

static struct worst crit;
static bool crit_seen;
bool wanted_holds;

/*
 * A set's p99 counts only from 100 holds, its p99.9 from 1,000: below that
 * they are its maximum, which counts as one.
 */
void crit_note(const char *what, const struct stats *st)
{
	if (!st->n)
		return;
	crit_seen = true;
	if (st->n >= 100 && st->p99 > crit.p99) {
		crit.p99 = st->p99;
		snprintf(crit.p99_what, sizeof(crit.p99_what), "%s", what);
	}
	if (st->n >= 1000 && st->p999 > crit.p999) {
		crit.p999 = st->p999;
		snprintf(crit.p999_what, sizeof(crit.p999_what), "%s", what);
	}
	if (st->max > crit.max) {
		crit.max = st->max;
		snprintf(crit.max_what, sizeof(crit.max_what), "%s", what);
	}
}

/* Table 8's reading of the criterion, and whether its control allows it. */
static void rep_criterion(void)
{
	const struct rep_row *c10 = &rep_crit.control[0];
	const struct rep_row *c40 = &rep_crit.control[1];
	double l10 = c10->est[EST_LEAST].max, l40 = c40->est[EST_LEAST].max;
	double worst = rep_crit.max[EST_LEAST];
	bool clean;
	FILE *f;

	if (!rep_crit.seen)
		return;
	clean = rep_crit.ncontrol == 2 && l10 <= 1.5 * 10000 &&
		l40 <= 1.25 * 40000;
	printf("- **by each hold's least of %d readings over the same backlog (table 8): %s** (worst %.1f µs: %s); the control's longest least reading was %.1f µs for 10 µs of work and %.1f µs for 40 µs: %s; by the holds' medians of %d the worst is %.1f µs (%s)\n",
	       REPEATS, worst <= TARGET_NS ? "met" : "NOT met", worst / 1e3,
	       rep_crit.what[EST_LEAST], l10 / 1e3, l40 / 1e3, clean ?
	       "the reading keeps the work and drops the host's interruptions, so this figure is the code's" :
	       "the control is still far above its work, so this figure carries host noise too",
	       REPEATS, rep_crit.max[EST_MEDIAN] / 1e3,
	       rep_crit.what[EST_MEDIAN]);
	f = json_open("criterion_repeat");
	fprintf(f, "{\"target_ns\": %d, \"pages\": 1000000, \"repeats\": %d, "
		"\"worst_least_ns\": %.1f, \"worst_least_what\": \"%s\", "
		"\"met\": %s, \"worst_median_ns\": %.1f, "
		"\"worst_median_what\": \"%s\", "
		"\"control_10us_least_max_ns\": %.1f, "
		"\"control_40us_least_max_ns\": %.1f, "
		"\"control_10us_median_max_ns\": %.1f, "
		"\"control_40us_median_max_ns\": %.1f, "
		"\"control_clean\": %s}\n", TARGET_NS, REPEATS, worst,
		rep_crit.what[EST_LEAST], worst <= TARGET_NS ? "true" : "false",
		rep_crit.max[EST_MEDIAN], rep_crit.what[EST_MEDIAN], l10, l40,
		c10->est[EST_MEDIAN].max, c40->est[EST_MEDIAN].max,
		clean ? "true" : "false");
	json_close(f);
}

void print_criterion(void)
{
	double c99 = 0, cp = 0, cm = 0, work = 10000;
	bool noisy_max, noisy_p999;
	unsigned int i;
	FILE *f;

	if (!crit_seen && !rep_crit.seen) {
		if (wanted_holds)
			printf("\n## Criterion (issue 14): with 1,000,000 pages tracked, the longest interrupts-off section at most 50 µs on the host CPU\n\nNot measured: this run had no backlog of 1,000,000 pages (--quick stops at 100,000).\n");
		return;
	}
	printf("\n## Criterion (issue 14): with 1,000,000 pages tracked, the longest interrupts-off section at most 50 µs on the host CPU\n\n");
	rep_criterion();
	if (!crit_seen)
		return;
	for (i = 0; i < ncontrol; i++) {
		c99 = max(c99, control[i].p99);
		cp = max(cp, control[i].p999);
		cm = max(cm, control[i].max);
	}
	noisy_max = !ncontrol || cm > TARGET_NS;
	noisy_p999 = !ncontrol || cp > 2 * work;
	printf("- **by p99.9: %s** (worst %.1f µs: %s)%s\n",
	       crit.p999 <= TARGET_NS ? "met" : "NOT met", crit.p999 / 1e3,
	       crit.p999_what, noisy_p999 ?
	       "; the control's p99.9 is also disturbed, so this figure carries host noise too" :
	       "; the control's p99.9 is close to its 10 µs of work: this figure is the code's");
	printf("- **by max: %s** (worst %.1f µs: %s)%s\n",
	       crit.max <= TARGET_NS ? "met" : "NOT met", crit.max / 1e3,
	       crit.max_what, noisy_max ?
	       "; DISTURBED by host noise: the control's own max exceeds 50 µs, so a maximum here cannot tell the code's longest hold from the host's interruptions" :
	       "; the control's max stays under 50 µs, so the maxima are readable");
	printf("- for reference, by p99 (the control's p99 was %.1f µs for its 10 µs of work): worst %.1f µs (%s): %s\n",
	       c99 / 1e3, crit.p99 / 1e3, crit.p99_what,
	       crit.p99 <= TARGET_NS ? "within 50 µs" : "NOT within 50 µs");
	if (dirty_crit.seen)
		printf("- not counted above: a pass that finds every page still dirty after its write (policy kernel; pages locked or under writeback) and puts all back, 1,000,000 pages over files of <= 262,144: hand-back p99.9 %.1f / max %.1f µs; **the end of the pass holds the lock %.0f µs (wall) / %.0f µs (CPU): %s** (aipu_queue_end_pass() counts files and retries against its budget of AIPU_SCAN_BATCH a hold)\n",
		       dirty_crit.hb.p999 / 1e3, dirty_crit.hb.max / 1e3,
		       dirty_crit.end_wall / 1e3, dirty_crit.end_cpu / 1e3,
		       dirty_crit.end_cpu <= TARGET_NS ? "within 50 µs" :
							 "NOT within 50 µs");
	if (cut_crit[0] > 0)
		printf("- not counted above: phase 1's hold that finishes a slot its cutoff cuts puts the slot's not-due files back (wheel.c splices its seen list back: one step however many): **%.1f µs with 10,000 files dirtied within the slot, %.1f µs with 100,000** (median of rounds, wall)\n",
		       cut_crit[0] / 1e3, cut_crit[1] / 1e3);
	if (oldest_st.n)
		printf("- not counted above, as it does not grow with the backlog: stat's read of a device's oldest time walks the wheel's %d slots at most, **median %.2f µs, p99.9 %.1f µs, max %.1f µs** (table 4)\n",
		       AIPU_QUEUE_SLOTS, oldest_st.median / 1e3,
		       oldest_st.p999 / 1e3, oldest_st.max / 1e3);
	f = json_open("criterion");
	fprintf(f, "{\"target_ns\": %d, \"pages\": 1000000, "
		"\"controls\": %u, \"worst_p99_ns\": %.1f, \"worst_p99_what\": \"%s\", "
		"\"worst_p999_ns\": %.1f, \"worst_p999_what\": \"%s\", "
		"\"worst_max_ns\": %.1f, \"worst_max_what\": \"%s\", "
		"\"met_p999\": %s, \"met_max\": %s, "
		"\"control_p99_ns\": %.1f, "
		"\"control_p999_ns\": %.1f, \"control_max_ns\": %.1f, "
		"\"max_disturbed_by_noise\": %s, "
		"\"p999_disturbed_by_noise\": %s, "
		"\"dirty_handback_p999_ns\": %.1f, "
		"\"dirty_handback_max_ns\": %.1f, "
		"\"dirty_end_pass_wall_ns\": %.1f, "
		"\"dirty_end_pass_cpu_ns\": %.1f, "
		"\"cut_slot_10k_max_ns\": %.1f, "
		"\"cut_slot_100k_max_ns\": %.1f, "
		"\"stat_oldest_p999_ns\": %.1f, "
		"\"stat_oldest_max_ns\": %.1f}\n", TARGET_NS, ncontrol,
		crit.p99, crit.p99_what, crit.p999, crit.p999_what, crit.max,
		crit.max_what,
		crit.p999 <= TARGET_NS ? "true" : "false",
		crit.max <= TARGET_NS ? "true" : "false", c99, cp, cm,
		noisy_max ? "true" : "false", noisy_p999 ? "true" : "false",
		dirty_crit.hb.p999, dirty_crit.hb.max, dirty_crit.end_wall,
		dirty_crit.end_cpu, cut_crit[0], cut_crit[1], oldest_st.p999,
		oldest_st.max);
	json_close(f);
}
