// SPDX-License-Identifier: GPL-2.0
/*
 * Tables 1 to 3: the cost of a clean -> dirty transition against the pages
 * dirtied per file, against the files tracked, and with one thread against
 * two.
 */
#include "scale.h"

static void print_rounds(const double *v, unsigned int n, double scale)
{
	unsigned int r;

	for (r = 0; r < n; r++)
		printf("%s%.*f", r ? ", " : "", scale > 1 ? 1 : 0, v[r] / scale);
}

/* ---- 1. cost per transition against pages dirtied per file ---- */

unsigned long min_batches(void)
{
	return quick ? 256 : 1024;
}

static void pages_row(FILE *f, enum pattern p, unsigned long n,
		      struct timed *all, bool first)
{
	unsigned long keep = (n / 2 + BATCH - 1) / BATCH * BATCH, per, reps;
	unsigned int r, rep;
	struct mem_row *mr;
	struct stats st;
	struct gen g;
	char b1[32], b2[32], b3[32];

	per = n > keep ? (n - keep) / BATCH : 0;
	if (!per) {
		keep = 0;
		per = n / BATCH;
	}
	reps = per ? (min_batches() + per - 1) / per : 1;
	timed_clear(all);
	for (r = 0; r < rounds; r++) {
		timed_round(all);
		for (rep = 0; rep < reps; rep++) {
			world_reset(false);
			gen_init(&g, p, 0, n, 77 + r * 1000 + rep);
			fill(&devs[0], &g, n, all, keep, NULL);
		}
	}
	mr = mem_note(&devs[0], "%s, N = %s", pattern_names[p],
		      with_commas(n, b1));
	fprintf(f, "%s{\"pattern\": \"%s\", \"pattern_name\": \"%s\", "
		"\"n\": %lu, \"fills_per_round\": %lu, \"pages_dirtied\": %lu, "
		"\"pages_tracked\": %lu, \"pages_by_fallback\": %lu, "
		"\"fallbacks\": %lu, \"files\": %lu, \"bytes\": %.0f",
		first ? "" : ",\n", pattern_ids[p], pattern_names[p], n, reps,
		mr->dirtied, mr->pages, mr->dirtied - mr->pages, mr->fallbacks,
		mr->files, mem_bytes(mr, true));
	st = json_timed(f, "ns", all);
	fprintf(f, "}");
	printf("| %s | %s | %.0f | %.0f | %.0f | ", pattern_names[p],
	       with_commas(n, b1), st.median, st.p99, st.p999);
	print_rounds(all->round_median, all->rounds, 1);
	printf(" | %.1f | %lu of %lu | %s | %s | %lu | %lu |\n",
	       st.max * BATCH / 1e3, all->disturbed, all->n,
	       with_commas(mr->pages, b2),
	       with_commas(mr->dirtied - mr->pages, b3), mr->fallbacks,
	       mr->files);
	fflush(stdout);
}

void measure_pages(const unsigned long *sizes, unsigned int nsizes)
{
	static const enum pattern pats[] = {
		P_RANDOM_ONE, P_RANDOM_SPREAD, P_RANDOM_SPARSE, P_SEQ_1024,
		P_SEQ_1,
	};
	struct noise nz = noise_begin();
	FILE *f = json_open("pages");
	struct timed all = { 0 };
	unsigned int pi, si;

	printf("\n## 1. ns per clean->dirty transition against pages dirtied per file\n\n");
	printf("| pattern | N pages dirtied | median ns | p99 ns | p99.9 ns | round medians ns | max batch µs | disturbed batches | pages tracked one by one | pages bounded by fallback | fallbacks | files |\n");
	printf("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"pages\", \"batch\": %d, \"rounds\": %u, "
		"\"bytes_max\": %lu, \"unit\": \"ns per transition\", "
		"\"rows\": [\n", BATCH, rounds, AIPU_QUEUE_BYTES_MAX);
	for (pi = 0; pi < ARRAY_SIZE(pats); pi++)
		for (si = 0; si < nsizes; si++)
			pages_row(f, pats[pi], sizes[si], &all, !pi && !si);
	table_end(f, &nz);
	world_reset(true);
	timed_free(&all);
}

/* ---- 2. cost per transition against tracked files ---- */

/*
 * Transitions of files [first, first + nfiles) of device @dev: transition
 * @c is a new page of a file picked at random (the first page of every file
 * was dirtied before, in file order).
 */
struct files_gen {
	unsigned int dev;
	unsigned long first, nfiles;
	struct perm perm;
};

static void files_gen_init(struct files_gen *fg, unsigned int dev,
			   unsigned long first, unsigned long nfiles,
			   unsigned long n, u32 seed)
{
	fg->dev = dev;
	fg->first = first;
	fg->nfiles = nfiles;
	perm_init(&fg->perm, nfiles * ((n + nfiles - 1) / nfiles + 1), seed);
}

static inline void files_step(const struct files_gen *fg, unsigned long c,
			      const void **key, pgoff_t *index,
			      unsigned long *time)
{
	u64 x = perm_at(&fg->perm, c);

	*key = file_key(fg->dev, fg->first + x % fg->nfiles);
	*index = 1 + x / fg->nfiles;
	*time = T0 + (fg->nfiles + c) / JIFFY_PAGES;
}

/*
 * Make @nfiles trackers (page 0 of each, in order), timing those
 * transitions into @create, then @n transitions, each a new page of a random
 * file, into @steady.
 */
static void files_rep(unsigned long nfiles, unsigned long n, u32 seed,
		      struct timed *create, struct timed *steady)
{
	unsigned long tm[BATCH], i, j, m;
	const void *k[BATCH];
	struct files_gen fg;
	pgoff_t ix[BATCH];
	u64 t0, t1;
	long cs;

	for (i = 0; i < nfiles; i += m) {
		m = nfiles - i < BATCH ? nfiles - i : BATCH;
		for (j = 0; j < m; j++) {
			k[j] = file_key(0, i + j);
			ix[j] = 0;
			tm[j] = T0 + (i + j) / JIFFY_PAGES;
		}
		caches_ensure();
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < m; j++)
			probe(&devs[0], k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(create, (double)(t1 - t0) / m, disturbances() != cs);
	}
	files_gen_init(&fg, 0, 0, nfiles, n, seed);
	for (i = 0; i < n; i += BATCH) {
		for (j = 0; j < BATCH; j++)
			files_step(&fg, i + j, &k[j], &ix[j], &tm[j]);
		caches_ensure();
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < BATCH; j++)
			probe(&devs[0], k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(steady, (double)(t1 - t0) / BATCH,
			  disturbances() != cs);
	}
}

void measure_files(const unsigned long *sizes, unsigned int nsizes)
{
	unsigned long n = quick ? 16384 : 32768, reps = quick ? 1 : 2;
	struct timed create = { 0 }, steady = { 0 };
	struct noise nz = noise_begin();
	FILE *f = json_open("files");
	unsigned int si, r, rep;
	char b1[32], b2[32];

	printf("\n## 2. ns per transition against tracked files\n\n");
	printf("| files F | new page, random file: median ns | p99 ns | p99.9 ns | round medians ns | max batch µs | disturbed batches | first page of a file: median ns | p99 ns | files a bucket | pages tracked |\n");
	printf("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"files\", \"batch\": %d, \"rounds\": "
		"%u, \"transitions\": %lu, \"fills_per_round\": %lu, "
		"\"table_buckets\": %lu, \"unit\": \"ns per transition\", "
		"\"rows\": [\n", BATCH, rounds, n, reps, 1UL << table.bits);
	for (si = 0; si < nsizes; si++) {
		unsigned long nf = sizes[si];
		struct stats sc, ss;
		struct mem_row *mr;

		timed_clear(&create);
		timed_clear(&steady);
		for (r = 0; r < rounds; r++) {
			timed_round(&steady);
			timed_round(&create);
			for (rep = 0; rep < reps; rep++) {
				world_reset(false);
				files_rep(nf, n, 991 + r * 100 + rep, &create,
					  &steady);
			}
		}
		mr = mem_note(&devs[0], "random files, F = %s, %s pages",
			      with_commas(nf, b1), with_commas(nf + n, b2));
		fprintf(f, "%s{\"files\": %lu, \"pages_tracked\": %lu, "
			"\"trackers\": %lu", si ? ",\n" : "", nf, mr->pages,
			mr->files);
		ss = json_timed(f, "ns", &steady);
		sc = json_timed(f, "create_ns", &create);
		fprintf(f, "}");
		printf("| %s | %.0f | %.0f | %.0f | ", with_commas(nf, b1),
		       ss.median, ss.p99, ss.p999);
		print_rounds(steady.round_median, steady.rounds, 1);
		printf(" | %.1f | %lu of %lu | %.0f | %.0f | %.2f | %lu |\n",
		       ss.max * BATCH / 1e3, steady.disturbed, steady.n,
		       sc.median, sc.p99,
		       (double)nf / (1UL << table.bits), mr->pages);
		fflush(stdout);
	}
	table_end(f, &nz);
	world_reset(true);
	timed_free(&create);
	timed_free(&steady);
}

/* ---- 3. one thread against two ---- */

struct worker {
	pthread_t th;
	unsigned int slot;	/* its per-CPU caches */
	struct dev *d;
	struct files_gen fg;
	unsigned long n;
	pthread_barrier_t *go;
	struct timed t;
	u64 ns, cpu;
} __attribute__((aligned(CACHELINE)));

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned long tm[BATCH], i, j;
	const void *k[BATCH];
	pgoff_t ix[BATCH];
	u64 t0, t1, start;
	long cs;

	this_cpu = &cpus[w->slot];
	pthread_barrier_wait(w->go);
	w->cpu = cpu_ns();
	start = now_ns();
	for (i = 0; i < w->n; i += BATCH) {
		for (j = 0; j < BATCH; j++)
			files_step(&w->fg, i + j, &k[j], &ix[j], &tm[j]);
		caches_ensure();
		cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < BATCH; j++)
			probe(w->d, k[j], ix[j], tm[j]);
		t1 = now_ns();
		timed_add(&w->t, (double)(t1 - t0) / BATCH,
			  disturbances() != cs);
	}
	w->ns = now_ns() - start;
	w->cpu = cpu_ns() - w->cpu;
	return NULL;
}

enum thread_cfg { ONE_THREAD, TWO_SHARED, TWO_OWN, NR_CFG };

static const char * const cfg_names[NR_CFG] = {
	"1 thread, 1 device",
	"2 threads, same device (one queue, a lock per file)",
	"2 threads, a device each (own queue)",
};

static const char * const cfg_ids[NR_CFG] = {
	"one", "two_shared", "two_own",
};

static struct worker workers[2];

/*
 * One timed run of @cfg: transitions a second, all threads together.  The
 * batches go into @t; the threads' CPU time per transition into *@cpu_per,
 * their CPU time over the wall time into *@busy.
 */
static double threads_run(enum thread_cfg cfg, unsigned long n,
			  unsigned long nfiles, u32 seed, struct timed *t,
			  double *cpu_per, double *busy)
{
	unsigned int nw = cfg == ONE_THREAD ? 1 : 2, i;
	unsigned long f, before;
	pthread_barrier_t go;
	u64 t0, t1, cpu = 0;
	size_t j;

	world_reset(false);
	for (i = 0; i < nw; i++) {
		struct worker *w = &workers[i];

		w->slot = i;
		w->d = &devs[cfg == TWO_OWN ? i : 0];
		files_gen_init(&w->fg, 0, i * nfiles, nfiles, n,
			       seed + i * 7919);
		w->n = n;
		w->go = &go;
		timed_clear(&w->t);
		w->t.s.cap = n / BATCH + 1;
		w->t.s.v = realloc(w->t.s.v, w->t.s.cap * sizeof(float));
		if (!w->t.s.v)
			die("out of memory for samples");
		/* Every tracker exists before the clock starts. */
		this_cpu = &cpus[i];
		for (f = 0; f < nfiles; f++) {
			caches_ensure();
			probe(w->d, file_key(0, i * nfiles + f), 0, T0);
		}
	}
	this_cpu = &cpus[0];
	before = table.nelems;
	pthread_barrier_init(&go, NULL, nw + 1);
	for (i = 0; i < nw; i++)
		if (pthread_create(&workers[i].th, NULL, worker_fn,
				   &workers[i]))
			die("pthread_create failed");
	pthread_barrier_wait(&go);
	t0 = now_ns();
	for (i = 0; i < nw; i++)
		pthread_join(workers[i].th, NULL);
	t1 = now_ns();
	pthread_barrier_destroy(&go);
	if (table.nelems != before)
		die("a tracker was made during the threaded run");
	timed_round(t);
	for (i = 0; i < nw; i++) {
		struct worker *w = &workers[i];

		for (j = 0; j < w->t.s.n; j++)
			timed_add(t, w->t.s.v[j], false);
		t->n += w->t.disturbed;
		t->disturbed += w->t.disturbed;
		if (w->t.raw_max > t->raw_max)
			t->raw_max = w->t.raw_max;
		cpu += w->cpu;
	}
	/* Objects a thread made are freed into its own caches. */
	for (i = 0; i < NDEVS; i++) {
		struct aipu_file *tk;

		while ((tk = list_first_entry_or_null(&devs[i].tr.trackers,
						      struct aipu_file,
						      link))) {
			this_cpu = &cpus[(to_mapping(tk)->t.key >=
					  file_key(0, nfiles)) ? 1 : 0];
			aipu_queue_kill(&devs[i].tr, tk, ~0UL);
		}
	}
	this_cpu = &cpus[0];
	*cpu_per = (double)cpu / (nw * n);
	*busy = (double)cpu / (t1 - t0);
	return (double)nw * n / ((t1 - t0) / 1e9);
}

void measure_threads(void)
{
	unsigned long n = quick ? 262144 : 2097152, nfiles = 1000;
	unsigned int nr = quick ? 3 : 5, c, r;
	double tput[NR_CFG][MAX_ROUNDS], cpu[NR_CFG][MAX_ROUNDS];
	double busy[NR_CFG][MAX_ROUNDS], best, med1 = 0;
	struct noise nz = noise_begin();
	FILE *f = json_open("threads");
	struct timed t[NR_CFG];

	memset(t, 0, sizeof(t));
	printf("\n## 3. One thread against two\n\n");
	printf("| set-up | transitions/s, median of rounds | best round | median vs 1 thread | CPU ns per transition | CPUs busy | batch median ns | batch p99 ns | disturbed batches | per round, M/s |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
	fprintf(f, "{\"measurement\": \"threads\", \"batch\": %d, "
		"\"rounds\": %u, \"transitions_per_thread\": %lu, "
		"\"files_per_thread\": %lu, \"rows\": [\n", BATCH, nr, n,
		nfiles);
	for (r = 0; r < nr; r++)
		for (c = 0; c < NR_CFG; c++)
			tput[c][r] = threads_run(c, n, nfiles, 4242 + r * 31,
						 &t[c], &cpu[c][r],
						 &busy[c][r]);
	for (c = 0; c < NR_CFG; c++) {
		double med = median_of(tput[c], nr);
		struct stats st;

		best = 0;
		for (r = 0; r < nr; r++)
			if (tput[c][r] > best)
				best = tput[c][r];
		if (c == ONE_THREAD)
			med1 = med;
		fprintf(f, "%s{\"config\": \"%s\", \"name\": \"%s\", "
			"\"threads\": %d, \"per_s_median\": %.0f, "
			"\"per_s_best\": %.0f", c ? ",\n" : "", cfg_ids[c],
			cfg_names[c], c == ONE_THREAD ? 1 : 2, med, best);
		json_doubles(f, "per_s_rounds", tput[c], nr);
		json_doubles(f, "cpu_ns_per_transition", cpu[c], nr);
		json_doubles(f, "cpus_busy", busy[c], nr);
		st = json_timed(f, "ns", &t[c]);
		fprintf(f, "}");
		printf("| %s | %.2f M | %.2f M | %.2fx | %.0f | %.2f | %.0f | %.0f | %lu | ",
		       cfg_names[c], med / 1e6, best / 1e6, med / med1,
		       median_of(cpu[c], nr), median_of(busy[c], nr),
		       st.median, st.p99, t[c].disturbed);
		for (r = 0; r < nr; r++)
			printf("%s%.2f", r ? ", " : "", tput[c][r] / 1e6);
		printf(" |\n");
		timed_free(&t[c]);
	}
	table_end(f, &nz);
	world_reset(true);
	for (c = 0; c < 2; c++)
		timed_free(&workers[c].t);
}
