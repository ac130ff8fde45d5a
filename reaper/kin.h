/* SPDX-License-Identifier: MIT */
/* kin: children and trees of processes, for the calls of reaper.h's "processes by identity"
 * section and the orphan collector. */
#ifndef REAPER_KIN_H
#define REAPER_KIN_H

#include "reaper.h"
#include "sbuf.h"

#include <stddef.h>

struct pidref;

/* What a listing of children needs, reused across listings (zero it to start; kin_done). */
struct kin {
	struct reaper_pstat *v; /* the children of the last kin_children */
	size_t n, cap;
	pid_t *pids;
	size_t pcap;
	struct sbuf buf;
};
/* The children of the pinned parent (the caller: its pid with start time 0) into k->v, each
 * read after the listing and kept while its stat names parent. 0; -ESRCH when parent is gone
 * or no longer the process pinned; -EMFILE/-ENFILE/-ENOMEM. */
int kin_children(const struct pidref *parent, struct kin *k);
void kin_done(struct kin *k);

/* Called with each process of a walk, parents before their children; a negative return ends
 * the walk with it. */
typedef int (*kin_visit_fn)(void *ctx, const struct reaper_pstat *ps);
/* Walk the trees of roots as reaper_descendants describes (live_only: without zombies, nor
 * a root that is one). 0 or -errno. */
int kin_walk(const struct reaper_ident *roots, size_t nroots, int live_only, kin_visit_fn visit, void *ctx);

#endif
