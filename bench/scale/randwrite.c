// SPDX-License-Identifier: GPL-2.0
/*
 * randwrite: write every 4-KiB page of an existing file once, in a random
 * order, with pwrite() (buffered, no fsync): the "random" phase of the
 * in-guest scale benchmark (bench/scale/guest.sh).
 *
 *   randwrite FILE PAGES SEED LABEL
 *
 * The order (a Fisher-Yates shuffle of 0..PAGES-1) is made before the
 * clock starts. Just before the first write and just after the last it
 * prints "@@aipu-scale-mark begin LABEL" and "@@aipu-scale-mark end
 * LABEL" on stdout (flushed), which the host reads on the VM's console to
 * take the QEMU process's CPU time (bench/scale/guest_cpu.py); then
 * "writes N seconds S rate R" (the guest's own clock, without the half
 * second it idles after each mark).
 *
 * fio does the same writes, but under TCG its start-up takes 10-25 s of
 * CPU, which a CPU-time measurement from outside cannot leave out.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
	static char buf[PAGE] __attribute__((aligned(PAGE)));
	uint64_t n, i, j, seed, *order, t;
	double t0, t1;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: randwrite FILE PAGES SEED LABEL\n");
		return 2;
	}
	n = strtoull(argv[2], NULL, 0);
	seed = strtoull(argv[3], NULL, 0);
	order = malloc(n * sizeof(*order));
	if (!n || !order) {
		fprintf(stderr, "randwrite: bad page count or no memory\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rng(&seed) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	memset(buf, 0xa5, sizeof(buf));
	fd = open(argv[1], O_WRONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	/*
	 * Idle for half a second after each mark, so that the host, which
	 * reads the mark a little later than it was printed, takes the same
	 * CPU time as at the mark itself.
	 */
	printf("@@aipu-scale-mark begin %s\n", argv[4]);
	fflush(stdout);
	usleep(500000);
	t0 = now();
	for (i = 0; i < n; i++) {
		if (pwrite(fd, buf, PAGE, (off_t)order[i] * PAGE) != PAGE) {
			perror("pwrite");
			return 1;
		}
	}
	t1 = now();
	printf("@@aipu-scale-mark end %s\n", argv[4]);
	fflush(stdout);
	usleep(500000);
	printf("writes %llu seconds %.6f rate %.1f\n", (unsigned long long)n, t1 - t0,
	       n / (t1 - t0));
	fflush(stdout);
	close(fd);
	free(order);
	return 0;
}
