/* SPDX-License-Identifier: MIT */
/* holdings: what a leak holds (sockets, files, the run's output, memory and CPU time), read
 * from /proc before it is signalled. One gatherer per reap; it caches the socket tables of
 * each network namespace it met and bounds the whole reap's gathering in time and count. */
#ifndef REAPER_HOLDINGS_H
#define REAPER_HOLDINGS_H

#include "reaper.h"

struct holdings;

/* A gatherer for opts (hold_dirs; the caller's fd 1, fd 2 and controlling terminal as they
 * are now). NULL when out of memory: the reap then goes on without holdings. */
struct holdings *holdings_new(const struct reaper_opts *opts);
/* Fill p's holdings fields (once; a later call for the same proc does nothing). Never fails:
 * what cannot be read becomes a REAPER_HOLD_UNREADABLE entry, and out of memory leaves
 * holdings_read 0. procfd: an open /proc. */
void holdings_gather(struct holdings *h, int procfd, struct reaper_proc *p);
void holdings_free(struct holdings *h);
/* Free the holdings fields of p. */
void holdings_clear(struct reaper_proc *p);

#endif
