/* SPDX-License-Identifier: MIT */
/* finders: a reap's finders as their kinds' entries, and one pass of them all over /proc. */
#ifndef REAPER_FINDERS_H
#define REAPER_FINDERS_H

#include "scanner.h"

/* Set sc up for finders f (at most 32; each kind checks its own) and patterns. 0 or -errno
 * (-E2BIG, -EINVAL for a finder not well formed); finders_close in either case. */
int finders_open(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns);
void finders_close(struct scanner *sc);
/* One pass of every finder; adds what is new. Returns how many were added, or -errno. */
int finders_scan(struct scanner *sc, struct candset *cs);

#endif
