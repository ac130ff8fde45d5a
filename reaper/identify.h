/* SPDX-License-Identifier: MIT */
/* identify: one process a finder matched becomes a candidate. It is pinned (pidfd + start
 * time), what found it is checked again through the finder's entry, it is judged (never the
 * caller, the host's, the kernel's), and what its stat says (parent, group, state, comm, age)
 * and its ancestry are kept as first seen. The rest of what a report says about it is read
 * only when it is described: most matches exit in time and are never reported. */
#ifndef REAPER_IDENTIFY_H
#define REAPER_IDENTIFY_H

#include "scanner.h"

/* What a finder matched, as it saw it. */
struct match {
	pid_t pid;
	struct finder_kind *by; /* the kind whose finders matched it */
	uint32_t mask;          /* those finders */
	const char *env;        /* its environment as the finder read it (NULL: not read) */
	ssize_t envlen;         /* its length, or the read's -errno */
	/* the inode of its /proc directory as the listing of /proc gave it, before its
	 * environment was read (0: not listed) */
	unsigned long dir_ino;
	uint64_t want;          /* the start time it must have (0: any) */
	pid_t parent;           /* the process whose children listed it (0: none) */
	const struct pidref *pref; /* that process, pinned (NULL: the caller itself) */
};

/* m's process becomes a candidate: 1 (*idx its index in cs), 0 when it is not one (gone,
 * replaced, no longer matched, the caller's, the host's, the kernel's), or -ENOMEM. */
int identify(struct scanner *sc, struct candset *cs, struct match *m, size_t *idx);

/* The matches a stat-free listing holds until its pass proves them (identify): each proven
 * becomes a candidate, each not proven is judged the full way; discard: all are dropped (the
 * pass failed). How many were added, or -ENOMEM. */
int identify_settle(struct scanner *sc, struct candset *cs, int discard);

/* A pid that finder bit (of kind k) listed (want: the start time it named, 0 for any): a
 * candidate already, of that identity, is marked as found by it too; a new one is identified.
 * 1 when it was added, 0 when not, -ENOMEM. */
int identify_listed(struct scanner *sc, struct candset *cs, struct finder_kind *k, pid_t pid, uint32_t bit,
		    uint64_t want);

#endif
