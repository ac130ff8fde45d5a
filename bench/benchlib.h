/* SPDX-License-Identifier: MIT */
/* benchlib: what the C benchmark drivers share: clocks, medians, the synthetic environment,
 * populations of bench-spawn processes, and the raw floor. */
#ifndef BENCH_BENCHLIB_H
#define BENCH_BENCHLIB_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

double bench_now(void); /* CLOCK_MONOTONIC seconds */
double bench_cpu(void); /* CPU seconds of the calling thread: what contention does not inflate */
double bench_median(double *v, size_t n); /* sorts v */

/* A CI-like environment of about 1.5 KiB with HOME=home in the middle (NULL-terminated,
 * static storage). */
char **bench_env(const char *home);

/* A population: COUNT bench-spawn processes (orphans of the caller, who should be a
 * subreaper) blocked on a pipe; closing hold_w makes them all exit by themselves. */
struct pop {
	int hold_r, hold_w; /* hold_r is kept open so later spawns can join the same pipe */
};
int pop_init(struct pop *p);
/* Spawn count processes of mode ("hold", "ignterm", "forker") with env; shm_fd/base as in
 * bench-spawn (-1 for none). Returns once they all exist; 0 or -errno. */
int pop_spawn(struct pop *p, const char *spawn_bin, const char *mode, long count, char **env, int shm_fd,
	      long shm_base);
/* Close the hold pipe: everything of the population exits by itself. */
void pop_release(struct pop *p);
/* Collect every zombie child of ours (the driver is the subreaper of its populations);
 * with wait_all, block until no child is left. Returns how many were collected. */
long bench_collect(int wait_all);

/* The raw floor: list /proc, read every /proc/PID/environ with one openat + read + close,
 * compare entries byte for byte. Returns how many processes hold entry. */
long floor_scan(int procfd, const char *entry);
/* The floor of a listing: what `reaper scan` must read to print what it prints. Every
 * environ as floor_scan reads it; per process holding entry a pidfd, its cmdline, a look
 * through the pidfd that it is still running (so the cmdline read was that process's), and
 * one "PID CMDLINE" line to out (NULL: none). With report, the reads of what reaper_scan()
 * returns besides: its stat (start time, parent, group, state, comm), its uid, exe and cwd.
 * Returns how many it listed. */
long floor_listing(int procfd, const char *entry, int report, FILE *out);
/* Live (non-zombie) processes on the system now. */
long bench_count_procs(void);

/* A shared page of n uint64 slots (memfd), mapped; *fd stays open for bench-spawn. */
uint64_t *bench_shm(size_t n, int *fd);

#endif
