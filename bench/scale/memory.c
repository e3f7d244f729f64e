// SPDX-License-Identifier: GPL-2.0
/*
 * What a device holds, noted after the fills of tables 1, 2 and 4 (the
 * memory rows), and table 7: the bytes a page from the objects' sizes.
 */
#include "scale.h"

/* ---- what a device holds: the memory table's input ---- */

static const char * const cache_names[NR_CACHES] = {
	"seg64", "seg512", "seg4096", "live_chunk", "moved", "retry",
	"tracker",
};

static struct mem_row mem_rows[128];
unsigned int nr_mem_rows;

struct mem_row *mem_note(struct dev *d, const char *fmt, ...)
{
	struct aipu_queue_stats *st = &d->tr.st;
	struct mem_row *r;
	va_list ap;

	if (nr_mem_rows == ARRAY_SIZE(mem_rows))
		die("too many memory rows");
	dev_fold(d);
	r = &mem_rows[nr_mem_rows++];
	va_start(ap, fmt);
	vsnprintf(r->what, sizeof(r->what), fmt, ap);
	va_end(ap);
	r->dirtied = st->pages_dirtied;
	r->pages = st->pages;
	r->files = st->trackers;
	r->fallbacks = st->fallbacks;
	objects_live(r->objs);
	return r;
}

double mem_bytes(const struct mem_row *r, bool trackers)
{
	double b = 0;
	unsigned int k;

	for (k = 0; k < NR_CACHES; k++)
		if (trackers || k != C_TRACKER)
			b += (double)r->objs[k] * cache_sizes[k];
	return b;
}

/* ---- 7. memory ---- */

void measure_memory(void)
{
	FILE *f = json_open("memory");
	unsigned int i, k;
	char b1[32], b2[32];

	printf("\n## 7. Memory per page, from the objects' sizes\n\n");
	printf("| state | pages dirtied | tracked one by one | files | segments 64 / 512 / 4096 | live chunks | moved | B per tracked page, queue only | with trackers | B per dirtied page |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fprintf(f, "{\"measurement\": \"memory\", \"sizes\": {");
	for (k = 0; k < NR_CACHES; k++)
		fprintf(f, "%s\"%s\": %zu", k ? ", " : "", cache_names[k],
			cache_sizes[k]);
	fprintf(f, "}, \"sizeof_file\": %zu, \"rows\": [\n",
		sizeof(struct aipu_file));
	for (i = 0; i < nr_mem_rows; i++) {
		struct mem_row *m = &mem_rows[i];
		double q = mem_bytes(m, false), all = mem_bytes(m, true);
		double perq = m->pages ? q / m->pages : 0;
		double per = m->pages ? all / m->pages : 0;
		double perd = m->dirtied ? all / m->dirtied : 0;

		printf("| %s | %s | %s | %lu | %ld / %ld / %ld | %ld | %ld | %.2f | %.2f | %.2f |\n",
		       m->what, with_commas(m->dirtied, b1),
		       with_commas(m->pages, b2), m->files, m->objs[C_SEG64],
		       m->objs[C_SEG512], m->objs[C_SEG4096], m->objs[C_CHUNK],
		       m->objs[C_MOVED], perq, per, perd);
		fprintf(f, "%s{\"state\": \"%s\", \"pages_dirtied\": %lu, "
			"\"pages_tracked\": %lu, \"files\": %lu, "
			"\"fallbacks\": %lu, \"objects\": {", i ? ",\n" : "",
			m->what, m->dirtied, m->pages, m->files, m->fallbacks);
		for (k = 0; k < NR_CACHES; k++)
			fprintf(f, "%s\"%s\": %ld", k ? ", " : "",
				cache_names[k], m->objs[k]);
		fprintf(f, "}, \"bytes_queue\": %.0f, \"bytes\": %.0f, "
			"\"bytes_per_tracked_page_queue\": %.3f, "
			"\"bytes_per_tracked_page\": %.3f, "
			"\"bytes_per_dirtied_page\": %.3f}", q, all, perq, per,
			perd);
	}
	fprintf(f, "\n]}\n");
	json_close(f);
}
