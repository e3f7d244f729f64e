// SPDX-License-Identifier: GPL-2.0
/*
 * The scale benchmark's statistics and output: timed sets and their
 * statistics, the JSON files, and what else went on while a table was
 * measured (steal time, disturbances).
 */
#include "scale.h"

/* ---- samples and statistics ---- */

static void samples_add(struct samples *s, double x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			die("out of memory for samples");
	}
	s->v[s->n++] = x;
}

void timed_clear(struct timed *t)
{
	t->s.n = 0;
	t->n = 0;
	t->disturbed = 0;
	t->raw_max = 0;
	t->sum = 0;
	t->rounds = 0;
	t->rounds_sorted = false;
	t->order.n = 0;
}

void timed_round(struct timed *t)
{
	if (t->rounds == MAX_ROUNDS)
		die("more than %d rounds", MAX_ROUNDS);
	t->round_start[t->rounds] = t->s.n;
	t->round_max[t->rounds++] = 0;
}

void timed_add(struct timed *t, double ns, bool disturbed)
{
	if (t->keep_order)
		samples_add(&t->order, disturbed ? INFINITY : ns);
	t->n++;
	if (ns > t->raw_max)
		t->raw_max = ns;
	if (disturbed) {
		t->disturbed++;
		return;
	}
	samples_add(&t->s, ns);
	t->sum += ns;
	if (t->rounds && ns > t->round_max[t->rounds - 1])
		t->round_max[t->rounds - 1] = ns;
}

void timed_free(struct timed *t)
{
	free(t->s.v);
	free(t->order.v);
	t->s.v = NULL;
	t->s.cap = 0;
	t->order.v = NULL;
	t->order.cap = 0;
	timed_clear(t);
}

int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted @v. */
double pct(const float *v, size_t n, double p)
{
	size_t k = (size_t)(p * n + 0.999999);

	return v[k ? k - 1 : 0];
}

double median_of(const double *v, unsigned int n)
{
	double c[MAX_ROUNDS];
	unsigned int i;

	if (!n)
		return 0;
	for (i = 0; i < n && i < MAX_ROUNDS; i++)
		c[i] = v[i];
	qsort(c, i, sizeof(*c), cmp_double);
	return c[(i - 1) / 2];
}

/* Median of each round's kept samples, before they are sorted together. */
static void round_medians(struct timed *t)
{
	unsigned int r;

	for (r = 0; r < t->rounds; r++) {
		size_t a = t->round_start[r];
		size_t b = r + 1 < t->rounds ? t->round_start[r + 1] : t->s.n;
		float *c;

		t->round_median[r] = 0;
		if (b <= a)
			continue;
		c = malloc((b - a) * sizeof(*c));
		if (!c)
			die("out of memory");
		memcpy(c, t->s.v + a, (b - a) * sizeof(*c));
		qsort(c, b - a, sizeof(*c), cmp_float);
		t->round_median[r] = pct(c, b - a, 0.5);
		free(c);
	}
	t->rounds_sorted = true;
}

/* Sorts the kept samples in place (after taking each round's median). */
struct stats stats_of(struct timed *t)
{
	struct stats st = { .n = t->s.n };
	struct samples *s = &t->s;

	st.round_max = median_of(t->round_max, t->rounds);
	if (!t->rounds_sorted)
		round_medians(t);
	if (!s->n)
		return st;
	qsort(s->v, s->n, sizeof(*s->v), cmp_float);
	st.mean = t->sum / s->n;
	st.median = pct(s->v, s->n, 0.5);
	st.p99 = pct(s->v, s->n, 0.99);
	st.p999 = pct(s->v, s->n, 0.999);
	st.max = s->v[s->n - 1];
	return st;
}

/* ---- output ---- */

FILE *json_open(const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.json", out_dir, name);
	f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	return f;
}

void json_close(FILE *f)
{
	if (fclose(f))
		die("writing JSON: %s", strerror(errno));
}

void json_doubles(FILE *f, const char *name, const double *v,
		  unsigned int n)
{
	unsigned int i;

	fprintf(f, ", \"%s\": [", name);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%.1f", i ? ", " : "", v[i]);
	fputc(']', f);
}

/* ", NAME: {...}": the statistics of @t (sorting it). */
struct stats json_timed(FILE *f, const char *name, struct timed *t)
{
	struct stats st = stats_of(t);

	fprintf(f, ", \"%s\": {\"n\": %lu, \"kept\": %zu, \"disturbed\": %lu, "
		"\"median\": %.1f, \"p99\": %.1f, \"p999\": %.1f, "
		"\"max\": %.1f, \"mean\": %.1f, \"raw_max\": %.1f, "
		"\"round_max_median\": %.1f", name, t->n, st.n, t->disturbed,
		st.median, st.p99, st.p999, st.max, st.mean, t->raw_max,
		st.round_max);
	json_doubles(f, "round_max", t->round_max, t->rounds);
	json_doubles(f, "round_median", t->round_median, t->rounds);
	fputc('}', f);
	return st;
}

const char *with_commas(unsigned long v, char *buf)
{
	char tmp[32];
	int len, i, j = 0;

	len = snprintf(tmp, sizeof(tmp), "%lu", v);
	for (i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = tmp[i];
	}
	buf[j] = '\0';
	return buf;
}

/* Hypervisor steal time of all CPUs so far, in seconds (/proc/stat). */
static double steal_s(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int got;

	if (!f)
		return 0;
	got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		     &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	return got == 8 ? (double)v[7] / sysconf(_SC_CLK_TCK) : 0;
}

struct noise noise_begin(void)
{
	struct noise n = { now_ns(), disturbances(), steal_s() };

	return n;
}

void noise_end(FILE *f, const struct noise *n)
{
	double s = (now_ns() - n->t) / 1e9, steal = steal_s() - n->steal;
	long cs = disturbances() - n->cs;

	printf("\nMeasured in %.2f s; meanwhile the hypervisor stole %.2f CPU-s from this host's 2 CPUs, and the main thread was disturbed %ld times (samples disturbed are left out above and counted in the JSON).\n",
	       s, steal, cs);
	fprintf(f, "\"noise\": {\"seconds\": %.2f, \"steal_s\": %.2f, "
		"\"disturbances\": %ld}", s, steal, cs);
}

void table_end(FILE *f, const struct noise *nz)
{
	fprintf(f, "\n], ");
	noise_end(f, nz);
	fprintf(f, "}\n");
	json_close(f);
}
