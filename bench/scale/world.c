// SPDX-License-Identifier: GPL-2.0
/*
 * The scale benchmark's world: the simulated devices (their queues, folded
 * counters and reset between measurements) and the generators of
 * clean -> dirty transitions that fill them.
 */
#include "scale.h"

/* The permutation of struct perm (scale.h), from @seed. */
void perm_init(struct perm *p, u64 n, u64 seed)
{
	unsigned int bits = 2;

	while (bits < 63 && (1ull << bits) < n)
		bits++;
	p->n = n;
	p->mask = (1ull << bits) - 1;
	p->seed = mix32(seed) * 0x9e3779b97f4a7c15ull;
	p->k1 = 0xff51afd7ed558ccdull | 1;
	p->k2 = 0xc4ceb9fe1a85ec53ull | 1;
	p->shift = (bits + 1) / 2;
}

/* ---- devices and their lock ---- */

struct dev devs[NDEVS];
/* The wheel's slot width in jiffies: the module's, AIPU_SLOT_JIFFIES. */
unsigned long module_slot, slot_width;

/*
 * The fast path's shares added into the device's own counters, as the
 * kernel's stat adds them up: before anything reads tr.st.
 */
void dev_fold(struct dev *d)
{
	struct aipu_queue_stats *st = &d->tr.st;
	unsigned int i;

	for (i = 0; i < NCPUS; i++) {
		st->pages_dirtied += d->fast[i].dl.pages_dirtied;
		st->bytes += d->fast[i].dl.bytes;
		st->pages += d->fast[i].dl.pages;
		memset(&d->fast[i].dl, 0, sizeof(d->fast[i].dl));
	}
}

/* Every file of @d forgotten (rmmod's loop, no budget), untimed. */
static void dev_clear(struct dev *d)
{
	struct aipu_file *t;

	while ((t = list_first_entry_or_null(&d->tr.trackers,
					     struct aipu_file, link)))
		if (!aipu_queue_kill(&d->tr, t, ~0UL))
			die("aipu_queue_kill with no budget did not finish");
}

/*
 * Forget everything: every file of every device killed, then check that
 * every object and tracker came back (a leak in the queue would show here),
 * and start the caches afresh (@release: their memory unmapped).
 */
void world_reset(bool release)
{
	unsigned int i, k;

	this_cpu = &cpus[0];
	for (i = 0; i < NDEVS; i++) {
		struct aipu_queue_stats *st = &devs[i].tr.st;

		dev_clear(&devs[i]);
		dev_fold(&devs[i]);
		if (st->trackers || st->bytes || st->pages)
			die("after every kill: trackers %llu bytes %llu pages %llu",
			    (unsigned long long)st->trackers,
			    (unsigned long long)st->bytes,
			    (unsigned long long)st->pages);
		aipu_queue_init(&devs[i].tr, devs[i].slots, slot_width, T0);
	}
	if (table.nelems)
		die("table: %lu trackers left after every kill", table.nelems);
	for (i = 0; i < NCPUS; i++)
		for (k = 0; k < NR_CACHES; k++)
			cache_reset(&cpus[i].c[k], release);
}

/* ---- generating transitions ---- */

const char * const pattern_names[P_NR] = {
	"random pages, one file",
	"random pages, files of <= 262,144 pages",
	"random pages, sparse (a 512-page live chunk each)",
	"sequential, 1,024 pages a jiffy",
	"sequential, a page a jiffy",
	"files of 4 pages, written whole",
};

const char * const pattern_ids[P_NR] = {
	"random_one", "random_spread", "random_sparse", "seq_1024", "seq_1",
	"small",
};

unsigned long files_for(enum pattern p, unsigned long n)
{
	if (p == P_RANDOM_SPREAD)
		return (n + SPREAD - 1) / SPREAD;
	if (p == P_SMALL)
		return (n + SMALL_PAGES - 1) / SMALL_PAGES;
	return 1;
}

void gen_init(struct gen *g, enum pattern p, unsigned int dev,
	      unsigned long n, u32 seed)
{
	g->p = p;
	g->dev = dev;
	g->nfiles = files_for(p, n);
	g->seed = seed;
	perm_init(&g->perm, n, seed);
}

static inline void gen_step(struct gen *g, unsigned long i,
			    const void **key, pgoff_t *index,
			    unsigned long *time)
{
	unsigned long file = 0;
	u64 x;

	*time = T0 + i / JIFFY_PAGES;
	switch (g->p) {
	case P_RANDOM_ONE:
		*index = perm_at(&g->perm, i);
		break;
	case P_RANDOM_SPREAD:
		x = perm_at(&g->perm, i);
		file = x % g->nfiles;
		*index = x / g->nfiles;
		break;
	case P_RANDOM_SPARSE:
		*index = mix32((u32)i + g->seed);
		break;
	case P_SMALL:
		file = i / SMALL_PAGES;
		*index = i % SMALL_PAGES;
		break;
	case P_SEQ_1024:
		*index = i;
		break;
	default:
		*index = i;
		*time = T0 + i;
		break;
	}
	*key = file_key(g->dev, file);
}

/* The time after every transition of @n of @p: every page due before it. */
unsigned long gen_end(enum pattern p, unsigned long n)
{
	return p == P_SEQ_1 ? T0 + n + 1 : T0 + n / JIFFY_PAGES + 1;
}

/*
 * @n transitions of @g on @d, a batch at a time.  Batches that start at or
 * after @keep_from and are whole go into @keep (ns per transition); with
 * @holds, every hold of the lock of every batch not disturbed, one by one.
 */
void fill(struct dev *d, struct gen *g, unsigned long n,
	  struct timed *keep, unsigned long keep_from,
	  struct timed *holds)
{
	unsigned long tm[BATCH], i, j, m;
	const void *k[BATCH];
	pgoff_t ix[BATCH];
	double h[BATCH];
	bool disturbed;
	long cs = 0;
	u64 t0, t1;

	for (i = 0; i < n; i += m) {
		m = n - i < BATCH ? n - i : BATCH;
		for (j = 0; j < m; j++)
			gen_step(g, i + j, &k[j], &ix[j], &tm[j]);
		caches_ensure();
		if (keep || holds)
			cs = disturbances();
		t0 = now_ns();
		for (j = 0; j < m; j++) {
			probe(d, k[j], ix[j], tm[j]);
			h[j] = d->held;
		}
		t1 = now_ns();
		if (!keep && !holds)
			continue;
		disturbed = disturbances() != cs;
		if (keep && i >= keep_from && m == BATCH)
			timed_add(keep, (double)(t1 - t0) / BATCH, disturbed);
		for (j = 0; holds && j < m; j++)
			timed_add(holds, h[j], disturbed);
	}
}
