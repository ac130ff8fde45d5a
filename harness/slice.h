/* SPDX-License-Identifier: MIT */
/* slice: reaper asks the scheduler for short time slices while it runs; what it starts runs
 * with the slices it had.
 *
 * reaper runs seldom and briefly: it forks, waits for COMMAND, wakes when COMMAND exits, reaps
 * and waits for its guardian. On a machine busy with other work each of those wake-ups waits
 * for the CPU until the running task's slice ends, unless the woken task asks for a shorter
 * slice than that task's (EEVDF's custom slices, Linux 6.12; earlier kernels ignore the
 * request). Only the slice changes, never the policy, the nice value or a share of CPU time;
 * the guardian inherits it (its wake-up is on the run's way out too), COMMAND is given back
 * what reaper had. */
#ifndef HARNESS_SLICE_H
#define HARNESS_SLICE_H

#include <stdint.h>

/* The kernel's struct sched_attr as first defined (glibc's <sched.h> clashes with the kernel's
 * header). */
struct slice_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

/* Ask for short slices for the calling process; *saved gets what it had, to give back with
 * slice_restore. 1 when the slice was changed; 0 when not (a policy other than SCHED_OTHER or
 * SCHED_BATCH, a slice already that short, a kernel or filter that refuses). */
int slice_shorten(struct slice_attr *saved);
/* Give the calling process back what slice_shorten saved (in a child, before its exec: system
 * calls only). */
void slice_restore(const struct slice_attr *saved);

#endif
