// SPDX-License-Identifier: GPL-2.0
/*
 * Table 0: the host's noise, holds of a fixed computation timed and
 * filtered as the real holds are (the control), before and after the
 * measurements; and table 0b, the host's cost of touching idle memory.
 */
#include "scale.h"

/* ---- 0. the environment's noise: holds of a fixed computation ---- */

volatile u64 sink;

/* Iterations of fixed_work() that take about @ns here, now. */
unsigned long calibrate(double ns)
{
	unsigned long iters = 1000;
	struct timed t = { 0 };
	double med;
	int i;

	for (i = 0; i < 101; i++) {
		u64 t0 = now_ns();

		fixed_work(iters);
		timed_add(&t, now_ns() - t0, false);
	}
	med = stats_of(&t).median;
	timed_free(&t);
	return med > 0 ? (unsigned long)(iters * ns / med) + 1 : iters;
}

static FILE *noise_json;
struct stats control[2];	/* 10 us of work: before, after */
unsigned int ncontrol;

/*
 * @n holds of a fixed computation of about @target ns, timed and filtered as
 * the real holds are: whatever spread they show is the host's, not aipu's.
 */
static void noise_row(const char *when, double target, unsigned long n,
		      unsigned long iters)
{
	struct timed t = { 0 };
	unsigned long i;
	struct stats st;

	for (i = 0; i < n; i++) {
		if (i % (n / 4) == 0)
			timed_round(&t);
		TIMED_HOLD(&devs[0], &t, fixed_work(iters));
	}
	fprintf(noise_json, "%s{\"when\": \"%s\", \"target_ns\": %.0f, "
		"\"iters\": %lu", ftell(noise_json) > 60 ? ",\n" : "", when,
		target, iters);
	st = json_timed(noise_json, "hold", &t);
	fprintf(noise_json, "}");
	printf("| %s | %.0f | %lu | %.2f | %.2f | %.1f | %.1f | %.1f | %lu |\n",
	       when, target / 1e3, n, st.median / 1e3, st.p99 / 1e3,
	       st.p999 / 1e3, st.max / 1e3, st.round_max / 1e3, t.disturbed);
	fflush(stdout);
	if (target >= 10000 && ncontrol < 2)
		control[ncontrol++] = st;
	timed_free(&t);
}

void measure_noise(const char *when)
{
	static unsigned long it1, it10;

	if (!noise_json) {
		noise_json = json_open("noise");
		fprintf(noise_json, "{\"measurement\": \"noise\", \"unit\": "
			"\"ns per hold\", \"rows\": [\n");
		it1 = calibrate(1000);
		it10 = calibrate(10000);
		printf("\n## 0. The host's noise: holds of a fixed computation (the control)\n\n");
		printf("| when | work µs | holds | median µs | p99 µs | p99.9 µs | max µs | max (rounds) µs | disturbed holds |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	}
	noise_row(when, 1000, quick ? 20000 : 200000, it1);
	noise_row(when, 10000, quick ? 4000 : 100000, it10);
}

/*
 * The host's cost of touching memory left idle: one cache line in each
 * 2-MiB page of a written region, after the thread spun for @idle_s (its
 * CPU busy, the memory untouched).  On the host this was written on the
 * first touch of most such pages takes 10-670 µs after a second, with no
 * page fault in the guest: whatever the hypervisor does with idle memory.
 * A phase's first hold touches memory idle since its pages were dirtied.
 */
static void first_touch_row(FILE *f, double idle_s, unsigned int round)
{
	size_t huge = 2UL << 20, sz = (quick ? 64UL : 256UL) << 20, i, n;
	size_t slow = 0;
	struct timed t = { 0 };
	volatile char sink;
	struct stats st;
	char *map, *p;
	u64 until;

	map = mmap(NULL, sz + huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		die("mmap %zu bytes: %s", sz + huge, strerror(errno));
	p = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(p, sz, MADV_HUGEPAGE);
	memset(p, 1, sz);
	until = now_ns() + (u64)(idle_s * 1e9);
	while (now_ns() < until)
		;
	n = sz / huge;
	for (i = 0; i < n; i++) {
		u64 t0 = now_ns();

		sink = p[i * huge + 64];
		t0 = now_ns() - t0;
		slow += t0 > 20000;
		timed_add(&t, t0, false);
	}
	(void)sink;
	st = stats_of(&t);
	printf("| %u | %.1f | %zu | %zu | %.2f | %.1f | %.1f |\n", round,
	       idle_s, n, slow, st.median / 1e3, st.p99 / 1e3, st.max / 1e3);
	fprintf(f, "%s{\"round\": %u, \"idle_s\": %.1f, \"pages\": %zu, "
		"\"over_20us\": %zu, \"median\": %.1f, \"p99\": %.1f, "
		"\"max\": %.1f}", round ? ",\n" : "", round, idle_s, n, slow,
		st.median, st.p99, st.max);
	timed_free(&t);
	munmap(map, sz + huge);
}

void measure_first_touch(void)
{
	FILE *f = json_open("first_touch");
	double idle_s = quick ? 0.2 : 1.0;
	unsigned int r;

	printf("\n## 0b. The host's cost of touching idle memory\n\n");
	printf("| round | idle s | pages | over 20 µs | median µs | p99 µs | max µs |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"first_touch\", \"unit\": "
		"\"ns per first read of a 2-MiB page\", \"rows\": [\n");
	for (r = 0; r < 3; r++)
		first_touch_row(f, idle_s, r);
	fprintf(f, "\n]}\n");
	json_close(f);
	fflush(stdout);
}

void noise_finish(void)
{
	if (!noise_json)
		return;
	fprintf(noise_json, "\n]}\n");
	json_close(noise_json);
	noise_json = NULL;
}
