// SPDX-License-Identifier: GPL-2.0
/*
 * aipu's device queue at scale: src/queue/queue.c with src/queue/flog.c,
 * src/queue/log.c, src/queue/live.c and src/queue/wheel.c, compiled as the unit
 * tests compile them, timed in user space on the host's CPU (the guests run
 * under QEMU's TCG, which would time the emulator, not the code).
 * bench/scale/README.md says what each table measures.
 *
 * What the kernel glue does is stood in for here:
 *   - one pthread spinlock per simulated backing device guards that device's
 *     struct aipu_queue, as src/dev.c's raw spinlock does, and every hold
 *     reads the clock after taking it and before dropping it, as
 *     aipu_dev_lock()/aipu_dev_unlock() do for lock_hold_max_ns;
 *   - the probe (src/hook.c) looks the file's tracker up without a lock and
 *     tries aipu_queue_pages_fast() under the file's own lock (a pthread
 *     spinlock in the tracker, as struct aipu_mapping's raw spinlock),
 *     adding to this thread's share of the device's counters (the kernel's
 *     per-CPU ones); when that will not do, it takes the device's lock,
 *     checks the tracker (aipu_queue_get() if it has none) and calls
 *     aipu_queue_pages() (aipu_queue_whole() after a short fast path);
 *   - the flusher (src/flusher.c) runs phase 1 in holds of AIPU_SCAN_BATCH
 *     files, takes a batch a hold, merges it outside the lock and hands its
 *     extents back AIPU_HANDBACK_MAX stretches or AIPU_HANDBACK_PAGES pages
 *     a hold (aipu_queue_handback()), then aipu_queue_put() in a hold of its
 * own;
 *     eviction and rmmod (src/mapping.c), the shrinker and the park free
 *     AIPU_DRAIN_BATCH objects a hold (include/aipu_queue.h).  The
 *     constants of src/ are read from those files at build time (Makefile);
 *   - queue objects and trackers come from per-"CPU" caches, mapped and
 *     touched before they are timed and handed out by a free-list pop or a
 *     pointer bump: the slab's per-CPU fast path (slab refills are not in
 *     the figures);
 *   - the tracker table has the kernel's layout (src/mapping.c: hlist
 *     buckets, hash_ptr()'s multiplicative hash, a fixed size from the
 *     machine's memory, read from the same constants) but is not its code:
 *     no RCU, and trackers are freed at once, not after a grace period.
 *
 * Every figure is clock_gettime(CLOCK_MONOTONIC) on the host: transitions in
 * batches of BATCH (the batch's time divided by BATCH; percentiles are over
 * batches), holds of the lock one by one (the two clock reads inside the
 * hold are included: "timer" in meta.json).  In user space the scheduler can
 * preempt a hold and a page fault can stall it, which the kernel's hold
 * (interrupts off, memory mapped) never suffers: the thread's context
 * switches and page faults are read before and after each batch or hold,
 * outside the timed window, and a sample during which one happened is
 * counted apart ("disturbed") and left out of the percentiles and maxima.
 * Interrupts and the hypervisor's steal cannot be seen this way: table 0,
 * a fixed computation timed the same way, shows them.
 *
 * The sources: scale.h (the constants, the shared types and the inline
 * helpers of the timed paths), alloc.c (the caches, the allocator shims
 * and the tracker table), stats.c (timed sets, statistics, JSON, noise
 * accounting), world.c (devices, world_reset(), the generators and
 * fill()), memory.c (what a device holds; table 7), pages.c (tables 1 to
 * 3), holds.c (tables 4 and 5), noise.c (tables 0 and 0b), steady.c
 * (table 6), repeat.c (table 8), criterion.c (issue 14's criterion), and
 * this file: die(), the options and main().
 */
#include "scale.h"

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("scale: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

const char *out_dir = ".";
unsigned int rounds = 3;
bool quick;

/* ---- main ---- */

static double timer_overhead(void)
{
	struct timed t = { 0 };
	unsigned int i;
	double med;

	for (i = 0; i < 100000; i++) {
		dev_lock(&devs[0]);
		timed_add(&t, dev_unlock(&devs[0]), false);
	}
	med = stats_of(&t).median;
	timed_free(&t);
	return med;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: scale [--quick] [--rounds N] [--out DIR] [--only LIST]\n"
		"  --quick     sizes up to 100,000, fewer rounds (seconds)\n"
		"  --rounds N  rounds per measurement (default 3, 1..12)\n"
		"  --out DIR   an existing directory for the JSON files (default .)\n"
		"  --only LIST comma-separated: noise,pages,files,threads,holds,\n"
		"              evict,steady,repeat (memory comes with pages,\n"
		"              files and holds; the criterion with holds, evict\n"
		"              and repeat)\n");
	exit(2);
}

static bool wanted(const char *only, const char *name)
{
	const char *p = only;
	size_t len = strlen(name);

	if (!only)
		return true;
	while ((p = strstr(p, name))) {
		if ((p == only || p[-1] == ',') &&
		    (p[len] == '\0' || p[len] == ','))
			return true;
		p += len;
	}
	return false;
}

static void check_only(const char *only)
{
	static const char * const names[] = {
		"noise", "pages", "files", "threads", "holds", "evict",
		"steady", "repeat",
	};
	const char *p = only;
	unsigned int i;
	size_t len;

	while (p && *p) {
		len = strcspn(p, ",");
		for (i = 0; i < ARRAY_SIZE(names); i++)
			if (strlen(names[i]) == len && !strncmp(p, names[i], len))
				break;
		if (i == ARRAY_SIZE(names)) {
			fprintf(stderr, "scale: --only: no section '%.*s'\n",
				(int)len, p);
			usage();
		}
		p += len + (p[len] == ',');
	}
}

int main(int argc, char **argv)
{
	static const unsigned long full[] = {
		1000, 10000, 100000, 1000000, 10000000,
	};
	static const unsigned long nfiles[] = {
		1, 10, 100, 1000, 10000, 100000, 1000000,
	};
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "out", required_argument, NULL, 'o' },
		{ "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int nsz, nfs, i;
	const char *only = NULL;
	bool rounds_set = false;
	double timer;
	FILE *f;
	u64 start;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quick = true;
			break;
		case 'r':
			rounds = atoi(optarg);
			rounds_set = true;
			if (rounds < 1 || rounds > 12)
				usage();
			break;
		case 'o':
			out_dir = optarg;
			break;
		case 'O':
			only = optarg;
			check_only(only);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (quick && !rounds_set)
		rounds = 2;
	nsz = quick ? 3 : ARRAY_SIZE(full);
	nfs = quick ? 6 : ARRAY_SIZE(nfiles);
	for (i = 0; i < NCPUS; i++)
		for (c = 0; c < NR_CACHES; c++)
			cpus[i].c[c].size = cache_sizes[c];
	module_slot = AIPU_SLOT_JIFFIES;
	slot_width = module_slot;
	table_init();
	for (i = 0; i < NDEVS; i++) {
		pthread_spin_init(&devs[i].lock, PTHREAD_PROCESS_PRIVATE);
		aipu_queue_init(&devs[i].tr, devs[i].slots, slot_width, T0);
	}
	world_reset(false);
	start = now_ns();
	timer = timer_overhead();
	/* The prose around the tables is report.py's (PROSE there). */
	printf("# aipu scale benchmark: the log-based queue (src/queue/queue.c) in user space\n");
	fflush(stdout);
	if (wanted(only, "noise"))
		measure_noise("before");
	if (wanted(only, "pages"))
		measure_pages(full, nsz);
	if (wanted(only, "files"))
		measure_files(nfiles, nfs);
	if (wanted(only, "threads"))
		measure_threads();
	wanted_holds = wanted(only, "holds") || wanted(only, "evict");
	if (wanted(only, "holds"))
		measure_holds(full, nsz);
	if (wanted(only, "evict"))
		measure_evict(full, nsz);
	if (wanted(only, "steady"))
		measure_steady(nfiles, nfs);
	if (wanted(only, "repeat"))
		measure_repeat();
	if (nr_mem_rows)
		measure_memory();
	if (wanted(only, "noise")) {
		printf("\n## 0. (again) The host's noise, after\n\n");
		printf("| when | work µs | holds | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
		measure_noise("after");
		noise_finish();
		measure_first_touch();
	}
	print_criterion();
	f = json_open("meta");
	fprintf(f, "{\"mode\": \"%s\", \"rounds\": %u, \"batch\": %d, "
		"\"scan_batch\": %d, \"kill_batch\": %d, "
		"\"handback_pages\": %d, \"handback_max\": %d, "
		"\"slot_jiffies\": %lu, \"hz\": %d, \"max_age_ms\": %d, "
		"\"period_ms\": %d, \"bytes_max\": %lu, "
		"\"take_entries\": %d, \"take_pages\": %d, "
		"\"table_buckets\": %lu, \"timer_ns\": %.1f, "
		"\"table_pages_per_bucket\": %d, \"table_min_bits\": %d, "
		"\"table_max_bits\": %d, \"queue_slots\": %d, "
		"\"live_chunk_pages\": %d, \"jiffy_pages\": %d, "
		"\"min_batches\": %lu, \"bytes_max_entries\": %lu, "
		"\"steady_periods\": %d, \"seconds\": %.1f}\n",
		quick ? "quick" : "full", rounds,
		BATCH, AIPU_SCAN_BATCH, AIPU_DRAIN_BATCH, AIPU_HANDBACK_PAGES,
		AIPU_HANDBACK_MAX, (unsigned long)AIPU_SLOT_JIFFIES, HZ,
		AIPU_MAX_AGE_MS, AIPU_PERIOD_MS, AIPU_QUEUE_BYTES_MAX,
		AIPU_FLOG_TAKE_ENTRIES, AIPU_FLOG_TAKE_PAGES,
		1UL << table.bits, timer, AIPU_TABLE_PAGES_PER_BUCKET,
		AIPU_TABLE_MIN_BITS, AIPU_TABLE_MAX_BITS, AIPU_QUEUE_SLOTS,
		AIPU_LIVE_CHUNK_PAGES, JIFFY_PAGES, min_batches(),
		(unsigned long)(AIPU_QUEUE_BYTES_MAX / 4096 *
				((4096 - sizeof(struct aipu_seg)) / 8)),
		STEADY_PERIODS, (now_ns() - start) / 1e9);
	json_close(f);
	fprintf(stderr, "scale: done in %.1f s\n", (now_ns() - start) / 1e9);
	return 0;
}
