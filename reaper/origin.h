/* SPDX-License-Identifier: MIT */
/* origin: where the kernel's pid allocation stands, and which pids it gave out since an
 * earlier moment (the pids a marker scan with an origin reads). */
#ifndef REAPER_ORIGIN_H
#define REAPER_ORIGIN_H

#include "reaper.h"

/* The pids given out since an origin: lo < pid <= hi, or, once allocation wrapped round to
 * the reserved floor, lo < pid < pid_max or floor <= pid <= hi. */
struct origin_window {
	pid_t lo, hi, pid_max;
	size_t len;
};

/* reaper_origin_now, read through the /proc at procfd (-1: one opened for it). */
int origin_now_at(int procfd, struct reaper_origin *o);
/* How many tasks the kernel has created since boot (/proc/stat "processes", counted in every
 * PID namespace alike), read through the /proc at procfd: 0 or -errno. */
int origin_forks(int procfd, uint64_t *forks);
/* The window of pids given out since o, for the /proc at procfd: 0, or -ESRCH when it cannot
 * be told (another PID namespace, or so many forks since that allocation may have come
 * round past o), or another -errno. */
int origin_window(int procfd, const struct reaper_origin *o, struct origin_window *w);
int origin_in_window(const struct origin_window *w, pid_t pid);
/* The i-th pid of the window (i < len), in the order they were given out. */
pid_t origin_window_pid(const struct origin_window *w, size_t i);

#endif
