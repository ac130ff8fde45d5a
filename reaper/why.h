/* SPDX-License-Identifier: MIT */
/* why: why a leak was still running when the deadline came (it ignores or catches SIGTERM, it
 * is stopped or traced, the kernel function it waits in, it holds the run's output or stdin),
 * read before any signal, from /proc/PID/status, wchan and stat. */
#ifndef REAPER_WHY_H
#define REAPER_WHY_H

#include "reaper.h"

struct why;

/* A describer for one reap; NULL when out of memory (the reap goes on without it). */
struct why *why_new(void);
/* Fill p's why fields (once) from /proc (procfd: an open /proc) and from its holdings,
 * gathered before this. A process that is gone or no longer holds its pid gets no reasons
 * but "not looked at: it exited meanwhile". Never fails; out of memory leaves why_read 0. */
void why_gather(struct why *w, int procfd, struct reaper_proc *p);
void why_free(struct why *w);
/* Free the why fields of p. */
void why_clear(struct reaper_proc *p);

#endif
