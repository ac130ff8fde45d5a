/* SPDX-License-Identifier: MIT */
/* report: the processes a reap found, as the caller receives them. */
#ifndef REAPER_REPORT_H
#define REAPER_REPORT_H

#include "candset.h"
#include "reaper.h"

/* Build the report from the set (moves the strings out of cs) and the patterns' hit counts
 * (*hits, npatterns of them: the report takes them). */
int report_build(struct candset *cs, size_t **hits, size_t npatterns, struct reaper_report **out);
/* reaper_reap for a listing that shows each match by its pid and cmdline alone: a match is
 * described by its cmdline only (exe, cwd and ancestry stay "", uid and test as found). */
int reap_listing(const struct reaper_finder *finders, size_t n, const struct reaper_opts *opts,
		 struct reaper_report **out);
/* Free a proc's strings. */
void proc_free(struct reaper_proc *p);

#endif
