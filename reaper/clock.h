/* SPDX-License-Identifier: MIT */
/* clock: the one clock the library measures deadlines, waits and durations by. */
#ifndef REAPER_CLOCK_H
#define REAPER_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: a setting of the time of day moves no deadline. */
static inline double monotonic_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
