/* SPDX-License-Identifier: MIT */
/* describe: what a report says of a candidate besides its identity. What a match is known by
 * when it is found (its comm, the test its environment named, its ancestry, where it was
 * started), and what it is when it is reported or about to be signalled (its cmdline, exe,
 * cwd, uid, test), read through its pinned identity. The test is REAPER_TEST from its
 * environment, or pytest's PYTEST_CURRENT_TEST (a suite run without the plugin); where it was
 * started, REAPER_STARTED_AT and REAPER_STARTED_IN, when a harness put them there. */
#ifndef REAPER_DESCRIBE_H
#define REAPER_DESCRIBE_H

#include "scanner.h"

/* What a match is known by until it is described: its stat's comm as its cmdline, the test
 * its environment (env, envlen: as read in this pass, NULL when not read) named, its ancestry
 * and where it was started (but in a listing). 0 or -ENOMEM. */
int describe_found(struct scanner *sc, struct reaper_proc *pi, const struct reaper_stat *st, const char *env,
		   ssize_t envlen);
/* Describe a candidate that goes into a report or is about to be signalled: its cmdline,
 * exe, cwd and test as they are now (it may have exec'd since it was found), its uid unless
 * read already, plus its state and comm when it was pinned by an earlier pass; in a listing
 * its cmdline alone. Read through its pinned identity: when it is no longer the process
 * pinned after the reads, nothing read is used. 0 or -ENOMEM. */
int describe_cand(struct scanner *sc, struct cand *c);
/* In a listing, the cmdline c's pin read (pidref_open_stat_read: b, n) as its cmdline, which
 * a describe_cand in the same pass then does not read again; nothing when n is -ENODATA
 * (not read under the pin). 0 or -ENOMEM. */
int describe_pinned(struct cand *c, struct sbuf *b, ssize_t n);
/* What c's pin read before the stat that showed it had not exec'd (its cmdline in b, n; its
 * exe and cwd, which c takes): c is described, and a describe_cand in the same pass reads
 * nothing again. 0 or -ENOMEM. */
int describe_pinned_details(struct cand *c, struct sbuf *b, ssize_t n, char **exe, char **cwd);

#endif
