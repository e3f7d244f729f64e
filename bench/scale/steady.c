// SPDX-License-Identifier: GPL-2.0
/*
 * Table 6: the steady state, the files phase 1 looks at per extent
 * written, with the module's slots and others for contrast.
 */
#include "scale.h"

/* ---- 6. the steady state: files looked at per extent written ---- */

#define STEADY_RATE 50	/* pages a jiffy: one file's backlog under the cap */
#define PERIOD_J MS_TO_J(AIPU_PERIOD_MS)
#define MAX_AGE_J MS_TO_J(AIPU_MAX_AGE_MS)

struct steady_cfg {
	const char *id, *name;
	unsigned long width, offset;	/* width 0: the module's */
	bool paced, hot, in_quick;
};

static const struct steady_cfg steady_cfgs[] = {
	{ "module", "the module's slots, paced (its default)",
	  0, 0, true, false, true },
	{ "module_unpaced", "the module's slots, pace=0",
	  0, 0, false, false, false },
	{ "module_hot", "the module's slots, paced, a few hot files",
	  0, 0, true, true, false },
	{ "quarter", "slots of a quarter period (the module's before 2026-11-27), paced",
	  PERIOD_J / 4, 0, true, false, false },
	{ "eighth", "slots of an eighth of a period (docs/design.md §4), paced",
	  PERIOD_J / 8, 0, true, false, false },
	{ "period_aligned", "slots of a period, ticks on slot boundaries, pace=0",
	  PERIOD_J, 0, false, false, false },
	{ "period_skewed", "slots of a period, ticks half a slot off, pace=0",
	  PERIOD_J, PERIOD_J / 2, false, false, true },
};

struct steady_out {
	unsigned long dirtied, scanned, passes;
	struct pass_counts pc;
	struct timed scan;
};

/* The pass is over: src/flusher.c's end_pass(). */
static void steady_end(struct dev *d, struct timed *scratch, bool *in_pass)
{
	end_pass_timed(d, scratch, NULL);
	*in_pass = false;
}

/*
 * @nfiles files on one device, STEADY_RATE random new pages a jiffy (a file
 * picked at random, or from a few hot ones), the flusher's pass on its grid
 * of period_ms as src/flusher.c runs it under policy aipu: phase 1 with a
 * cutoff of max_age_ms back (a period less, paced), then phase 2 taking each
 * due file as it comes due, then the end of the pass.  After max_age_ms and
 * a few periods to fill the queue, what a number of periods cost.
 */
static void steady_run(const struct steady_cfg *c, unsigned long nfiles,
		       u32 seed, struct steady_out *o)
{
	unsigned long warm = MAX_AGE_J + 4 * PERIOD_J;
	unsigned long span = STEADY_PERIODS * PERIOD_J;
	unsigned long now = T0, next_tick = T0 + c->offset, j, i, f, time;
	unsigned long scanned0 = 0, dirtied0 = 0, cutoff, due;
	struct pass_counts pc0 = { 0 };
	struct dev *d = &devs[0];
	struct timed scratch = { 0 };
	u32 *count = calloc(nfiles, sizeof(*count));
	u64 rng = 0x9e3779b97f4a7c15ull ^ seed;
	bool in_pass = false;

	if (!count)
		die("out of memory");
	slot_width = c->width ? c->width : module_slot;
	world_reset(false);
	memset(o, 0, sizeof(*o));
	for (j = 0; j < warm + span; j++, now++) {
		if (j == warm) {
			dev_fold(d);
			scanned0 = d->tr.st.entries_scanned;
			dirtied0 = d->tr.st.pages_dirtied;
			pc0 = o->pc;
			timed_clear(&o->scan);
			o->passes = 0;
		}
		caches_ensure();
		for (i = 0; i < STEADY_RATE; i++) {
			if (c->hot) {
				double u = (double)(rng_next(&rng) >> 11) /
					   (1ull << 53);

				f = (unsigned long)(nfiles * u * u * u);
			} else {
				f = rng_next(&rng) % nfiles;
			}
			probe(d, file_key(0, f), mix32(count[f]++ ^ mix32(f)),
			      now);
		}
		if (!in_pass && !time_before(now, next_tick)) {
			while (!time_before(now, next_tick))
				next_tick += PERIOD_J;
			cutoff = now - MAX_AGE_J + (c->paced ? PERIOD_J : 0);
			scan_timed(d, cutoff, &o->scan);
			o->passes++;
			in_pass = true;
		}
		while (in_pass) {
			if (!aipu_queue_next_time(&d->tr, &time)) {
				steady_end(d, &scratch, &in_pass);
				break;
			}
			due = time + MAX_AGE_J + 1;
			if (time_before(now, due) && due - now > PERIOD_J) {
				steady_end(d, &scratch, &in_pass);
				break;
			}
			if (time_before(now, due))
				break;		/* waits for it */
			timed_clear(&scratch);
			if (take_one(d, now - MAX_AGE_J, false, &scratch,
				     &scratch, &o->pc) == NOTHING)
				steady_end(d, &scratch, &in_pass);
		}
		timed_clear(&scratch);
	}
	dev_fold(d);
	o->scanned = d->tr.st.entries_scanned - scanned0;
	o->dirtied = d->tr.st.pages_dirtied - dirtied0;
	o->pc.takes -= pc0.takes;
	o->pc.entries -= pc0.entries;
	o->pc.batches -= pc0.batches;
	o->pc.extents -= pc0.extents;
	o->pc.written -= pc0.written;
	o->pc.pages -= pc0.pages;
	timed_free(&scratch);
	free(count);
	slot_width = module_slot;
}

void measure_steady(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("steady");
	double worst = 0;
	unsigned long worst_files = 0;
	unsigned int ci, si;
	char b1[32];

	printf("\n## 6. The steady state: files phase 1 looks at per extent written\n\n");
	printf("| set-up | slot jiffies | files F | pages dirtied | passes | files looked at | extents taken | extents written | files taken | looked at per extent written | per file taken | phase 1 holds: p99.9 / max µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"steady\", \"rate_per_jiffy\": %d, "
		"\"hz\": %d, \"period_jiffies\": %lu, \"max_age_jiffies\": %lu, "
		"\"slot_jiffies\": %lu, \"target\": 1.05, \"rows\": [\n",
		STEADY_RATE, HZ, PERIOD_J, MAX_AGE_J,
		(unsigned long)AIPU_SLOT_JIFFIES);
	for (ci = 0; ci < ARRAY_SIZE(steady_cfgs); ci++) {
		const struct steady_cfg *c = &steady_cfgs[ci];

		if (quick && !c->in_quick)
			continue;
		for (si = 0; si < nsizes; si++) {
			struct steady_out o;
			double per, perf;
			struct stats st;

			steady_run(c, sizes[si], 17 + si, &o);
			per = o.pc.written ? (double)o.scanned / o.pc.written : 0;
			perf = o.pc.batches ? (double)o.scanned / o.pc.batches :
					      0;
			if (ci == 0 && per > worst) {
				worst = per;
				worst_files = sizes[si];
			}
			fprintf(f, "%s{\"config\": \"%s\", \"name\": \"%s\", "
				"\"slot_jiffies\": %lu, \"paced\": %s, "
				"\"hot\": %s, \"tick_offset\": %lu, "
				"\"files\": %lu, \"pages_dirtied\": %lu, "
				"\"passes\": %lu, \"looked_at\": %lu, "
				"\"extents_taken\": %lu, "
				"\"extents_written\": %lu, "
				"\"files_taken\": %lu, "
				"\"per_extent_written\": %.4f, "
				"\"per_file_taken\": %.4f",
				ci || si ? ",\n" : "", c->id, c->name,
				c->width ? c->width : module_slot, c->paced ? "true" : "false",
				c->hot ? "true" : "false", c->offset,
				sizes[si], o.dirtied, o.passes, o.scanned,
				o.pc.extents, o.pc.written, o.pc.batches, per,
				perf);
			st = json_timed(f, "scan", &o.scan);
			fprintf(f, "}");
			printf("| %s | %lu | %s | %lu | %lu | %lu | %lu | %lu | %lu | %s%.3f%s | %.3f | %.1f / %.1f |\n",
			       c->name, c->width ? c->width : module_slot,
			       with_commas(sizes[si], b1),
			       o.dirtied, o.passes, o.scanned, o.pc.extents,
			       o.pc.written, o.pc.batches,
			       per > 1.05 ? "**" : "", per,
			       per > 1.05 ? "**" : "", perf, st.p999 / 1e3,
			       st.max / 1e3);
			fflush(stdout);
			timed_free(&o.scan);
		}
	}
	if (worst > 1.05)
		printf("\nWith the module's slots (%lu jiffies, paced), phase 1 looks at up to %.3f files per extent written (at %s files): MORE than issue 14's 1.05. The files of the slot the cutoff cuts are looked at and left for the next pass, which looks at them again.\n",
		       (unsigned long)AIPU_SLOT_JIFFIES, worst,
		       with_commas(worst_files, b1));
	else
		printf("\nWith the module's slots (%lu jiffies, paced), phase 1 looks at no more than %.3f files per extent written: within issue 14's 1.05.\n",
		       (unsigned long)AIPU_SLOT_JIFFIES, worst);
	fprintf(f, "\n], \"module_worst\": %.4f, \"module_worst_files\": %lu, ",
		worst, worst_files);
	noise_end(f, &nz);
	fprintf(f, "}\n");
	json_close(f);
	world_reset(true);
}
