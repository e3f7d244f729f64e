// SPDX-License-Identifier: GPL-2.0
/*
 * Tables 4 and 5: the flusher's holds of a device's lock against the
 * backlog (phase 1, phase 2's take and hand-back, the end of a pass,
 * rmmod; phase 1 when its cutoff cuts a slot; stat's read of the oldest
 * time), and the holds of evicting, shrinking or parking one huge file.
 */
#include "scale.h"

/* ---- 4. the flusher's holds against the backlog ---- */

static const char * const hold_ids[H_NR] = {
	"probe", "scan", "take", "handback", "end_pass", "forget",
};

const char *const hold_names[H_NR] = {
	"a transition (probe)",
	"phase 1 (aipu_queue_scan)",
	"phase 2 take (aipu_queue_take)",
	"phase 2 hand-back (aipu_queue_done_pages, aipu_queue_put)",
	"end of pass (aipu_queue_end_pass)",
	"rmmod (aipu_queue_kill of every file)",
};

/* At 1 M pages, a pass that puts every page back (scale.h). */
struct dirty_crit dirty_crit;

/* Phase 1 as src/flusher.c's scan() runs it: AIPU_SCAN_BATCH files a hold. */
unsigned long scan_timed(struct dev *d, unsigned long cutoff,
			 struct timed *holds)
{
	unsigned long n = 0;
	unsigned int b;
	bool done;

	do {
		b = AIPU_SCAN_BATCH;
		TIMED_HOLD(d, holds,
			   done = aipu_queue_scan(&d->tr, cutoff, &b));
		n++;
	} while (!done);
	return n;
}

/*
 * Taken pages go back as src/flusher.c hands them back: collected by
 * aipu_queue_handback_add(), a hold of aipu_queue_handback() for each
 * AIPU_HANDBACK_MAX stretches or AIPU_HANDBACK_PAGES pages.
 */
struct handback {
	struct aipu_handback hb;
	struct dev *d;
	struct timed *holds;
};

static void handback_flush(struct aipu_handback *hb)
{
	struct handback *h = container_of(hb, struct handback, hb);

	if (!hb->n)
		return;
	TIMED_HOLD(h->d, h->holds, aipu_queue_handback(&h->d->tr, hb));
}

/*
 * One take of phase 2, as issue_pending() and issue_batch() hold the lock:
 * aipu_queue_take() in a hold; a whole-file entry handed back in a hold; a
 * batch merged outside the lock (aipu_flog_merge()), every page written (or,
 * @dirty, found still dirty and put back, as under policy kernel or for
 * pages locked or under writeback) and handed back, then aipu_queue_put() in a
 * hold of its own.  Nothing of the writing itself is timed.
 */
enum took take_one(struct dev *d, unsigned long cutoff, bool dirty,
		   struct timed *take, struct timed *handback,
		   struct pass_counts *pc)
{
	static struct aipu_batch b;
	struct aipu_entry *e;
	unsigned int i, n;

	b.max_pages = 0;
	TIMED_HOLD(d, take, e = aipu_queue_take(&d->tr, cutoff, &b));
	pc->takes++;
	if (e) {
		pc->entries++;
		TIMED_HOLD(d, handback,
			   if (dirty)
				aipu_queue_requeue_entry(&d->tr, e);
			   aipu_queue_done_entry(&d->tr, e));
		return TOOK;
	}
	if (!b.t)
		return b.again ? TOOK_NOTHING_AGAIN : NOTHING;
	n = aipu_flog_merge(b.x, b.n);
	pc->batches++;
	pc->extents += b.n;
	pc->written += n;
	{
		struct handback h = { .hb.t = b.t, .d = d, .holds = handback };

		for (i = 0; i < n; i++) {
			pc->pages += b.x[i].nr;
			aipu_queue_handback_add(&h.hb, b.x[i].index, b.x[i].nr,
						b.x[i].time, dirty,
						handback_flush);
		}
		handback_flush(&h.hb);
	}
	TIMED_HOLD(d, handback, aipu_queue_put(&d->tr, b.t));
	return TOOK;
}

/*
 * src/flusher.c's end_pass(): AIPU_SCAN_BATCH files a hold.  With @cpu_max,
 * the longest hold's CPU time too (read outside the hold).
 */
void end_pass_timed(struct dev *d, struct timed *end, double *cpu_max)
{
	unsigned int budget;
	u64 c0 = 0;
	bool done;

	do {
		budget = AIPU_SCAN_BATCH;
		caches_ensure();	/* not in the hold's CPU time */
		if (cpu_max)
			c0 = cpu_ns();
		TIMED_HOLD(d, end, done = aipu_queue_end_pass(&d->tr, &budget));
		if (cpu_max && cpu_ns() - c0 > *cpu_max)
			*cpu_max = cpu_ns() - c0;
	} while (!done);
}

/* Phase 2 until nothing is due at @cutoff, then the end of the pass. */
void pass_timed(struct dev *d, unsigned long cutoff, bool dirty,
		struct timed *take, struct timed *handback,
		struct timed *end, double *end_cpu,
		struct pass_counts *pc)
{
	while (take_one(d, cutoff, dirty, take, handback, pc) != NOTHING)
		;
	end_pass_timed(d, end, end_cpu);
}

/* rmmod: aipu_mapping_forget(), AIPU_DRAIN_BATCH objects a hold. */
void forget_timed(struct dev *d, struct timed *holds)
{
	struct aipu_file *t;
	bool done;

	for (;;) {
		TIMED_HOLD(d, holds,
			   t = list_first_entry_or_null(&d->tr.trackers,
							struct aipu_file,
							link);
			   done = !t || aipu_queue_kill(&d->tr, t,
							AIPU_DRAIN_BATCH));
		if (!t)
			return;
		while (!done)
			TIMED_HOLD(d, holds,
				   done = aipu_queue_kill(&d->tr, t,
							  AIPU_DRAIN_BATCH));
	}
}

const char * const backlog_names[B_NR] = {
	"random pages, files of <= 262,144 pages",
	"files of 4 pages, in address order",
	"files of 4 pages, scattered",
};

static const char * const backlog_ids[B_NR] = {
	"big", "small", "small_scattered",
};

/* A fresh device holding the backlog: @n pages, all due at *@cutoff. */
void backlog_fill(enum backlog bl, unsigned long n, u32 seed,
		  struct timed *probe_holds, unsigned long *cutoff)
{
	enum pattern p = bl == B_BIG ? P_RANDOM_SPREAD : P_SMALL;
	unsigned long files = files_for(p, n);
	struct gen g;

	world_reset(false);
	if (bl == B_SMALL_SCATTERED) {
		cache_scatter(&cpus[0].c[C_TRACKER], files + 1, seed);
		cache_scatter(&cpus[0].c[C_SEG64], files + 1, seed + 1);
		cache_scatter(&cpus[0].c[C_CHUNK], files + 1, seed + 2);
	}
	gen_init(&g, p, 0, n, seed);
	fill(&devs[0], &g, n, NULL, 0, probe_holds);
	*cutoff = gen_end(p, n);
}

static void holds_row(FILE *f, enum backlog bl, unsigned long n, bool first)
{
	static struct timed h[H_NR], dirty_hb, dirty_end, scratch;
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], wmin = 1e18;
	struct pass_counts pc = { 0 }, dpc = { 0 };
	unsigned long cutoff, holds = 0;
	struct stats st[H_NR], sdh;
	double end_cpu = 0;
	unsigned int r, k;
	char b1[32], what[96];

	for (k = 0; k < H_NR; k++)
		timed_clear(&h[k]);
	timed_clear(&dirty_hb);
	timed_clear(&dirty_end);
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < H_NR; k++)
			timed_round(&h[k]);
		/* A pass that writes everything. */
		backlog_fill(bl, n, 5 + n + r, &h[H_PROBE], &cutoff);
		if (r == rounds - 1 && bl == B_SMALL)
			mem_note(&devs[0], "%s, N = %s", backlog_names[bl],
				 with_commas(n, b1));
		holds = scan_timed(&devs[0], cutoff, &h[H_SCAN]);
		memset(&pc, 0, sizeof(pc));
		pass_timed(&devs[0], cutoff, false, &h[H_TAKE],
			   &h[H_HANDBACK], &h[H_END], NULL, &pc);
		dev_fold(&devs[0]);
		if (devs[0].tr.st.trackers || devs[0].tr.st.pages)
			die("a pass that wrote everything left %llu files",
			    (unsigned long long)devs[0].tr.st.trackers);
		/* Phase 1 in one hold, then rmmod. */
		backlog_fill(bl, n, 5 + n + r, NULL, &cutoff);
		{
			unsigned int b = UINT32_MAX;
			u64 c0 = cpu_ns();

			dev_lock(&devs[0]);
			if (!aipu_queue_scan(&devs[0].tr, cutoff, &b))
				die("an unlimited scan ran out of budget");
			wall[r] = dev_unlock(&devs[0]);
			cpu[r] = cpu_ns() - c0;
			if (wall[r] < wmin)
				wmin = wall[r];
		}
		forget_timed(&devs[0], &h[H_FORGET]);
	}
	/* Once: a pass that finds every page still dirty. */
	if (bl == B_BIG) {
		backlog_fill(bl, n, 7 + n, NULL, &cutoff);
		timed_clear(&scratch);
		scan_timed(&devs[0], cutoff, &scratch);
		timed_clear(&scratch);
		timed_round(&dirty_hb);
		timed_round(&dirty_end);
		pass_timed(&devs[0], cutoff, true, &scratch, &dirty_hb,
			   &dirty_end, &end_cpu, &dpc);
	}
	fprintf(f, "%s{\"backlog\": \"%s\", \"backlog_name\": \"%s\", "
		"\"n\": %lu, \"files\": %lu, \"scan_holds\": %lu, "
		"\"takes\": %lu, \"batches\": %lu, \"extents_taken\": %lu, "
		"\"extents_written\": %lu, \"pages_written\": %lu",
		first ? "" : ",\n", backlog_ids[bl], backlog_names[bl], n,
		files_for(bl == B_BIG ? P_RANDOM_SPREAD : P_SMALL, n), holds,
		pc.takes, pc.batches, pc.extents, pc.written, pc.pages);
	for (k = 0; k < H_NR; k++)
		st[k] = json_timed(f, hold_ids[k], &h[k]);
	json_doubles(f, "one_hold_wall", wall, rounds);
	json_doubles(f, "one_hold_cpu", cpu, rounds);
	if (bl == B_BIG) {
		sdh = json_timed(f, "dirty_handback", &dirty_hb);
		json_timed(f, "dirty_end_pass", &dirty_end);
		fprintf(f, ", \"dirty_end_pass_longest_wall\": %.1f, "
			"\"dirty_end_pass_longest_cpu\": %.1f, "
			"\"dirty_pages_put_back\": %lu", dirty_end.raw_max,
			end_cpu, dpc.pages);
	}
	fprintf(f, "}");
	printf("| %s | %s | %s | %.2f / %.2f | %.2f / %.1f / %.1f / %.1f | %.0f / %.0f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %lu |\n",
	       with_commas(n, b1), backlog_names[bl], with_commas(holds, what),
	       st[H_PROBE].p999 / 1e3, st[H_PROBE].max / 1e3,
	       st[H_SCAN].median / 1e3, st[H_SCAN].p99 / 1e3,
	       st[H_SCAN].p999 / 1e3, st[H_SCAN].max / 1e3,
	       wmin / 1e3, median_of(cpu, rounds) / 1e3,
	       st[H_TAKE].p999 / 1e3, st[H_TAKE].max / 1e3,
	       st[H_HANDBACK].p999 / 1e3, st[H_HANDBACK].max / 1e3,
	       st[H_END].p999 / 1e3, st[H_END].max / 1e3,
	       st[H_FORGET].p999 / 1e3, st[H_FORGET].max / 1e3,
	       h[H_SCAN].disturbed + h[H_TAKE].disturbed +
	       h[H_HANDBACK].disturbed + h[H_END].disturbed +
	       h[H_FORGET].disturbed);
	if (bl == B_BIG)
		printf("| | *the same, every page still dirty after its write: end of pass, the longest hold's wall (disturbed or not) / CPU time* | | | | | | %.1f / %.1f | **%.0f / %.0f** | | |\n",
		       sdh.p999 / 1e3, sdh.max / 1e3, dirty_end.raw_max / 1e3,
		       end_cpu / 1e3);
	if (n == 1000000) {
		for (k = 0; k < H_NR; k++) {
			snprintf(what, sizeof(what), "%s, %s",
				 hold_names[k], backlog_names[bl]);
			crit_note(what, &st[k]);
		}
	}
	if (bl == B_BIG && n == 1000000) {
		dirty_crit.hb = sdh;
		dirty_crit.end_wall = dirty_end.raw_max;
		dirty_crit.end_cpu = end_cpu;
		dirty_crit.seen = true;
	}
	fflush(stdout);
}

/* ---- 5. eviction of one huge file ---- */

const enum pattern evict_pats[] = { P_RANDOM_ONE, P_RANDOM_SPARSE };

struct freer_row {
	enum pattern p;
	unsigned long n;
	struct stats st[F_NR];
};

static struct freer_row freer_rows[32];
static unsigned int nfreer_rows;

static void freer_rounds(FILE *f, enum pattern p, unsigned long n)
{
	static const char * const names[F_NR] = { "shrink", "park" };
	struct freer_row *row;
	unsigned int w, r;

	if (nfreer_rows == ARRAY_SIZE(freer_rows))
		die("more than %zu eviction rows", ARRAY_SIZE(freer_rows));
	row = &freer_rows[nfreer_rows++];

	row->p = p;
	row->n = n;
	for (w = 0; w < F_NR; w++) {
		struct timed holds = { 0 };

		for (r = 0; r < rounds; r++) {
			unsigned long now = gen_end(p, n), freed;
			struct aipu_file *t;
			struct gen g;

			world_reset(false);
			gen_init(&g, p, 0, n, 41 + r);
			fill(&devs[0], &g, n, NULL, 0, NULL);
			t = aipu_file_lookup(file_key(0, 0));
			timed_round(&holds);
			do
				TIMED_HOLD(&devs[0], &holds,
					   freed = freer_call(w, t, now));
			while (freed == AIPU_DRAIN_BATCH);
		}
		row->st[w] = json_timed(f, names[w], &holds);
		if (n == 1000000) {
			char what[96];

			snprintf(what, sizeof(what), "%s freeing one file, %s",
				 w == F_SHRINK ? "the shrinker" : "a park",
				 pattern_names[p]);
			crit_note(what, &row->st[w]);
		}
		timed_free(&holds);
	}
}

static void evict_row(FILE *f, enum pattern p, unsigned long n, bool first)
{
	unsigned int nr = rounds * 3, r;
	double wall[MAX_ROUNDS] = { 0 }, cpu[MAX_ROUNDS] = { 0 }, wmin = 1e18;
	struct timed holds = { 0 };
	long objs[NR_CACHES], total = 0;
	unsigned long tracked = 0;
	struct stats st;
	struct gen g;
	unsigned int k;
	char b1[32], b2[32], what[96];

	if (nr > MAX_ROUNDS)
		nr = MAX_ROUNDS;
	for (r = 0; r < nr; r++) {
		struct aipu_file *t;
		bool done;

		world_reset(false);
		gen_init(&g, p, 0, n, 31 + r);
		fill(&devs[0], &g, n, NULL, 0, NULL);
		dev_fold(&devs[0]);
		tracked = devs[0].tr.st.pages;
		objects_live(objs);
		for (total = 0, k = 0; k < NR_CACHES; k++)
			total += k == C_TRACKER ? 0 : objs[k];
		t = aipu_file_lookup(file_key(0, 0));
		timed_round(&holds);
		if (r % 3 == 2) {
			/* For contrast: everything in one hold. */
			u64 c0 = cpu_ns();

			dev_lock(&devs[0]);
			if (!aipu_queue_kill(&devs[0].tr, t, ~0UL))
				die("eviction with no budget did not finish");
			wall[r / 3] = dev_unlock(&devs[0]);
			cpu[r / 3] = cpu_ns() - c0;
			if (wall[r / 3] < wmin)
				wmin = wall[r / 3];
			continue;
		}
		/* aipu_mapping_kill(): the first call, then the rest. */
		TIMED_HOLD(&devs[0], &holds,
			   done = !t->hashed ||
				  aipu_queue_kill(&devs[0].tr, t,
						  AIPU_DRAIN_BATCH));
		while (!done)
			TIMED_HOLD(&devs[0], &holds,
				   done = aipu_queue_kill(&devs[0].tr, t,
							  AIPU_DRAIN_BATCH));
	}
	fprintf(f, "%s{\"pattern\": \"%s\", \"pattern_name\": \"%s\", "
		"\"n\": %lu, \"pages_tracked\": %lu, \"objects\": %ld",
		first ? "" : ",\n", pattern_ids[p], pattern_names[p], n,
		tracked, total);
	st = json_timed(f, "batched", &holds);
	json_doubles(f, "one_hold_wall", wall, nr / 3);
	json_doubles(f, "one_hold_cpu", cpu, nr / 3);
	freer_rounds(f, p, n);
	fprintf(f, "}");
	printf("| %s | %s | %s | %ld | %lu | %.2f | %.2f | %.1f | %.1f | %.1f | %lu | %.0f | %.0f |\n",
	       pattern_names[p], with_commas(n, b1),
	       with_commas(tracked, b2), total, holds.n - holds.disturbed,
	       st.median / 1e3, st.p99 / 1e3, st.p999 / 1e3, st.max / 1e3,
	       st.round_max / 1e3, holds.disturbed, wmin / 1e3,
	       median_of(cpu, nr / 3) / 1e3);
	if (n == 1000000) {
		snprintf(what, sizeof(what), "eviction of one file, %s",
			 pattern_names[p]);
		crit_note(what, &st);
	}
	fflush(stdout);
	timed_free(&holds);
}

/*
 * Phase 1 when its cutoff falls inside a slot: @n files of one page each,
 * dirtied evenly over one slot of the module's width, the cutoff at the
 * slot's middle.  Phase 1 moves the due half in budgeted holds; the hold
 * that finishes the slot splices the files it looked at and left (the
 * not-due half, on the wheel's seen list) back into the slot.
 */
/* The slot's last hold (median of rounds): 10,000 and 100,000 files. */
double cut_crit[2];

static void cut_slot_row(FILE *f, unsigned long n, bool first)
{
	double last[MAX_ROUNDS] = { 0 };
	struct timed holds = { 0 };
	unsigned long i, cutoff = T0 + module_slot / 2;
	unsigned int r;
	struct stats st;
	char b1[32];

	for (r = 0; r < rounds; r++) {
		world_reset(false);
		for (i = 0; i < n; i++) {
			if (i % BATCH == 0)
				caches_ensure();
			probe(&devs[0], file_key(0, i), 0,
			      T0 + i * module_slot / n);
		}
		timed_round(&holds);
		scan_timed(&devs[0], cutoff, &holds);
		last[r] = devs[0].held;
	}
	fprintf(f, "%s{\"files\": %lu, \"slot_jiffies\": %lu", first ? "" :
		",\n", n, module_slot);
	st = json_timed(f, "scan", &holds);
	json_doubles(f, "last_hold", last, rounds);
	fprintf(f, "}");
	printf("| %s | %lu | %.2f | %.1f | %.1f | %.1f | %.1f | %lu |\n",
	       with_commas(n, b1), holds.n / rounds, st.median / 1e3,
	       st.p99 / 1e3, st.p999 / 1e3, st.max / 1e3,
	       median_of(last, rounds) / 1e3, holds.disturbed);
	if (n == 10000)
		cut_crit[0] = median_of(last, rounds);
	if (n == 100000)
		cut_crit[1] = median_of(last, rounds);
	fflush(stdout);
	timed_free(&holds);
}

/*
 * stat's read of a device's oldest time (aipu_queue_oldest(), src/dev.c), in
 * its worst cases, whatever the backlog: one file, in the last of the
 * wheel's slots from its clock, so the read walks every slot before it;
 * and a file in every slot a turn ahead (max_age over the wheel's span),
 * so it reads every slot's first file.  (It also looks at up to
 * AIPU_OLDEST_LATE files put back at old times; none here.)  Its JSON:
 * ", \"stat_oldest\": {\"read\": ..., \"read_turn_ahead\": ...}".
 */
struct stats oldest_st;

/*
 * @files files queued, the i-th at the start of slot @first + i from the
 * wheel's clock; 1,000 reads of the oldest time per round, timed.
 */
static struct stats oldest_reads(FILE *f, const char *name,
				 unsigned int files, unsigned int first,
				 const char *what)
{
	struct timed holds = { 0 };
	struct stats st;
	unsigned long time;
	unsigned int r, i;

	for (r = 0; r < rounds; r++) {
		world_reset(false);
		caches_ensure();
		for (i = 0; i < files; i++)
			probe(&devs[0], file_key(0, i), 0,
			      T0 + (first + i) * slot_width);
		timed_round(&holds);
		for (i = 0; i < 1000; i++)
			TIMED_HOLD(&devs[0], &holds,
				   aipu_queue_oldest(&devs[0].tr, &time));
	}
	st = json_timed(f, name, &holds);
	printf("%s: %lu reads: **median %.2f µs, p99.9 %.1f µs, max %.1f µs** (%lu disturbed, left out).\n",
	       what, holds.n, st.median / 1e3, st.p999 / 1e3, st.max / 1e3,
	       holds.disturbed);
	timed_free(&holds);
	return st;
}

static void oldest_row(FILE *f)
{
	fprintf(f, ", \"stat_oldest\": {\"slots\": %d", AIPU_QUEUE_SLOTS);
	printf("\n");
	oldest_st = oldest_reads(f, "read", 1, AIPU_QUEUE_SLOTS - 1,
				 "Worst case within the wheel's span: the one queued file in the last slot from the clock, every slot before it looked at");
	/*
	 * max_age over the wheel's span: every slot's file a turn ahead of
	 * the clock, so each slot's first file is read, none ending the walk.
	 */
	oldest_reads(f, "read_turn_ahead", AIPU_QUEUE_SLOTS, AIPU_QUEUE_SLOTS,
		     "Worst case with max_age over the wheel's span: a file in every slot, each a turn ahead of the clock, every slot's first file read");
	fprintf(f, "}");
}

void measure_holds(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("holds");
	unsigned int si;
	int bl;

	printf("\n## 4. The longest lock holds against the backlog\n\n");
	printf("| backlog N pages | backlog | phase 1 holds a pass | probe µs | phase 1 batched µs | phase 1 in one hold: wall / CPU µs | take µs | hand-back µs | end of pass µs | rmmod µs | disturbed holds |\n");
	printf("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"holds\", \"rounds\": %u, "
		"\"scan_batch\": %d, \"kill_batch\": %d, \"handback_pages\": %d, "
		"\"handback_max\": %d, \"unit\": \"ns per hold\", \"rows\": [\n",
		rounds, AIPU_SCAN_BATCH, AIPU_DRAIN_BATCH, AIPU_HANDBACK_PAGES,
		AIPU_HANDBACK_MAX);
	for (bl = 0; bl < B_NR; bl++)
		for (si = 0; si < nsizes; si++)
			holds_row(f, bl, sizes[si], !bl && !si);
	fprintf(f, "\n]");
	oldest_row(f);
	printf("\n");
	printf("| files in the slot | holds a pass | median µs | p99 µs | p99.9 µs | max µs | the slot's last hold µs (wall, disturbed or not; median of rounds) | disturbed holds |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, ", \"cut_slot\": [\n");
	for (si = 0; si < nsizes && sizes[si] <= 1000000; si++)
		cut_slot_row(f, sizes[si], !si);
	table_end(f, &nz);
	world_reset(true);
}

static void freer_table(void)
{
	const struct freer_row *row;
	char b1[32];

	printf("\n");
	printf("| file | N pages dirtied | shrinker: holds | median µs | p99.9 µs | max µs | park: holds | median µs | p99.9 µs | max µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (row = freer_rows; row < freer_rows + nfreer_rows; row++)
		printf("| %s | %s | %zu | %.2f | %.1f | %.1f | %zu | %.2f | %.1f | %.1f |\n",
		       pattern_names[row->p], with_commas(row->n, b1),
		       row->st[F_SHRINK].n, row->st[F_SHRINK].median / 1e3,
		       row->st[F_SHRINK].p999 / 1e3,
		       row->st[F_SHRINK].max / 1e3, row->st[F_PARK].n,
		       row->st[F_PARK].median / 1e3,
		       row->st[F_PARK].p999 / 1e3, row->st[F_PARK].max / 1e3);
	nfreer_rows = 0;
}

void measure_evict(const unsigned long *sizes, unsigned int nsizes)
{
	struct noise nz = noise_begin();
	FILE *f = json_open("evict");
	unsigned int pi, si;

	printf("\n## 5. The longest hold of evicting one huge file\n\n");
	printf("| file | N pages dirtied | pages tracked one by one | objects | holds kept | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds | one hold: wall µs | CPU µs |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"evict\", \"rounds\": %u, "
		"\"kill_batch\": %d, \"unit\": \"ns per hold\", \"rows\": [\n",
		rounds, AIPU_DRAIN_BATCH);
	for (pi = 0; pi < ARRAY_SIZE(evict_pats); pi++)
		for (si = 0; si < nsizes; si++)
			evict_row(f, evict_pats[pi], sizes[si], !pi && !si);
	freer_table();
	table_end(f, &nz);
	world_reset(true);
}
