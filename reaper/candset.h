/* SPDX-License-Identifier: MIT */
/* candset: the processes a reap has found, keyed by identity. */
#ifndef REAPER_CANDSET_H
#define REAPER_CANDSET_H

#include "cand.h"

#include <sys/types.h>

struct candset {
	struct cand *v;
	size_t n, cap, live;
	size_t pidfds;  /* candidates holding a pidfd (see scanner.pidfd_budget) */
	int32_t *hash; /* open addressing: pid -> newest index, -1 empty */
	size_t hcap;
};

/* Append c (taking its strings); returns its index or -errno. */
ssize_t candset_add(struct candset *cs, const struct cand *c);
/* Index of the newest candidate with this pid, or -1. */
ssize_t candset_find(const struct candset *cs, pid_t pid);
void candset_free(struct candset *cs);
/* Close a candidate's pidfd (its identity is no longer needed). */
void cand_unpin(struct candset *cs, struct cand *c);

#endif
