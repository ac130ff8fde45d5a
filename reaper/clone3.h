/* SPDX-License-Identifier: MIT */
/* clone3: a child started by clone3 that runs a function, for the clones fork() cannot make
 * (a vfork into a cgroup, a child on our memory with a stack of its own). */
#ifndef REAPER_CLONE3_H
#define REAPER_CLONE3_H

#include <linux/sched.h>
#include <sys/syscall.h>

#if defined(__x86_64__) && defined(SYS_clone3)
#define CLONE3_RUN 1
#endif

/* clone3 with a; the child runs fn(arg) and exits with its value. The child's pid, or -1
 * with errno (ENOSYS where there is no CLONE3_RUN). With no stack in a the child runs on
 * ours, below where we stopped, as a vfork child does (CLONE_VFORK: we do not run until it
 * has exec'd or exited); with one, on that. */
long clone3_run(struct clone_args *a, int (*fn)(void *), void *arg);

#endif
