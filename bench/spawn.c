/* SPDX-License-Identifier: MIT */
/* bench-spawn: the process factory of the benchmarks.
 *
 *   bench-spawn MODE COUNT HOLD_FD READY_FD SHM_FD SHM_BASE
 *
 * Forks COUNT copies of itself and exits, so the copies are orphans of the nearest subreaper
 * (the benchmark driver) and carry exactly the environment this program was exec'd with.
 * Every copy blocks in read(HOLD_FD) and exits by itself when the driver closes the write end
 * (or dies): the processes clean themselves up, nothing ever needs a signal from the driver.
 * READY_FD: one byte is written to it once all COUNT exist (the copies close it).
 * SHM_FD (>= 0): a shared page of uint64 slots; copy i writes its CLOCK_MONOTONIC ns into slot
 * SHM_BASE+i right before it exits (the moment of "the last exit"); slot 0 of a forker counts
 * its forks.
 * `bench-spawn env HOME` prints the synthetic environment (benchlib.c) instead.
 * MODE: hold     block, exit on EOF
 *       ignterm  the same, ignoring SIGTERM
 *       forker   ignore SIGTERM, keep forking an ignterm copy every 2 ms until EOF */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench/benchlib.h"

static volatile uint64_t *shm;
static long shm_slots;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void hold(int hold_fd, long slot)
{
	char c;
	while (read(hold_fd, &c, 1) < 0 && errno == EINTR)
		;
	if (shm && slot >= 0 && slot < shm_slots)
		shm[slot] = now_ns();
	_exit(0);
}

static void forker(int hold_fd)
{
	long forks = 0;
	for (;;) {
		struct pollfd p = { .fd = hold_fd, .events = POLLIN };
		if (poll(&p, 1, 2) > 0)
			_exit(0); /* EOF: the driver is done */
		pid_t c = fork();
		if (c == 0)
			hold(hold_fd, -1);
		if (c > 0 && shm)
			shm[0] = (uint64_t)++forks;
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "env") == 0) {
		/* the synthetic environment, for drivers that are not C */
		for (char **e = bench_env(argv[2]); *e; e++)
			printf("%s\n", *e);
		return 0;
	}
	if (argc != 7) {
		fprintf(stderr, "usage: bench-spawn hold|ignterm|forker COUNT HOLD_FD READY_FD SHM_FD SHM_BASE\n");
		return 64;
	}
	const char *mode = argv[1];
	long count = atol(argv[2]), base = atol(argv[6]);
	int hold_fd = atoi(argv[3]), ready_fd = atoi(argv[4]), shm_fd = atoi(argv[5]);
	if (shm_fd >= 0) {
		off_t size = lseek(shm_fd, 0, SEEK_END);
		void *m = size > 0 ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0) : MAP_FAILED;
		if (m != MAP_FAILED) {
			shm = m;
			shm_slots = (long)((size_t)size / sizeof(uint64_t));
		}
		close(shm_fd);
	}
	int is_forker = strcmp(mode, "forker") == 0;
	if (is_forker || strcmp(mode, "ignterm") == 0)
		signal(SIGTERM, SIG_IGN);
	else if (strcmp(mode, "hold") != 0)
		return 64;
	for (long i = 0; i < count; i++) {
		pid_t c = fork();
		if (c < 0) {
			perror("bench-spawn: fork");
			return 1;
		}
		if (c == 0) {
			close(ready_fd);
			if (is_forker)
				forker(hold_fd);
			hold(hold_fd, base + i);
		}
	}
	/* all COUNT exist now (EOF would wait for whoever else inherited READY_FD) */
	if (write(ready_fd, "r", 1) < 0)
		return 1;
	return 0;
}
