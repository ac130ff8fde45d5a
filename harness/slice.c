/* SPDX-License-Identifier: MIT */
/* slice: see slice.h. */
#define _GNU_SOURCE
#include "slice.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The shortest slice the scheduler grants (ns). */
#define SHORT_SLICE_NS 100000

int slice_shorten(struct slice_attr *saved)
{
	*saved = (struct slice_attr){ 0 };
	if (syscall(SYS_sched_getattr, 0, saved, sizeof *saved, 0) < 0)
		return 0;
	saved->size = sizeof *saved;
	/* a kernel that does not say the slice (before 6.12) has none to ask for */
	if ((saved->sched_policy != SCHED_OTHER && saved->sched_policy != SCHED_BATCH) || !saved->sched_runtime ||
	    saved->sched_runtime <= SHORT_SLICE_NS)
		return 0;
	struct slice_attr a = *saved;
	a.sched_runtime = SHORT_SLICE_NS;
	return syscall(SYS_sched_setattr, 0, &a, 0) == 0;
}

void slice_restore(const struct slice_attr *saved)
{
	if (syscall(SYS_sched_setattr, 0, saved, 0) < 0) {
		/* refused now that it was granted before: nothing else to give back */
	}
}
