/* SPDX-License-Identifier: MIT */
/* finder: a kind of finder (marker, tree, call, cgroup) as the scanner sees it: an entry
 * with its own look for processes, and its own check again of what it matched once the
 * process is pinned. identify() calls back through the entry that made the match. */
#ifndef REAPER_FINDER_H
#define REAPER_FINDER_H

#include "pidref.h"
#include "procfs.h"

#include <stdint.h>
#include <sys/types.h>

struct scanner;
struct candset;
struct match;

enum finder_kinds { FINDER_CGROUP, FINDER_ENV, FINDER_TREE, FINDER_CALL, FINDER_KINDS };

struct finder_kind {
	enum finder_kinds kind;
	uint32_t mask; /* the finders of this kind (bit i: the reap's finder i) */
	/* One look: how many candidates it added, or -errno. */
	int (*scan)(struct finder_kind *k, struct scanner *sc, struct candset *cs);
	/* m's process, pinned as ref (its stat st), is younger than the pass: it may hold a pid
	 * whose earlier holder the finder read. Clear from m->mask the finders that no longer
	 * match it. 0, or -ENOMEM. NULL: what found it needs no second look. */
	int (*recheck)(struct finder_kind *k, struct scanner *sc, struct match *m, const struct pidref *ref,
		       const struct reaper_stat *st);
	/* Clear from m->mask the finders that do not take the pinned process (st), whatever its
	 * age. 0, or -ENOMEM. NULL: each takes what it matched. */
	int (*keep)(struct finder_kind *k, struct scanner *sc, struct match *m, const struct reaper_stat *st);
	/* The finders of this kind an environment holds, for a process that started at
	 * start_time (NULL: this kind does not judge environments). */
	uint32_t (*environ_bits)(const struct finder_kind *k, const char *env, size_t len, uint64_t start_time);
	void (*done)(struct finder_kind *k);
};

/* Each kind's entry for the reap's finders of that kind (sc->f): 0 and *out NULL when there
 * are none, -EINVAL for a finder of it that is not well formed, -ENOMEM. */
int finder_env_new(struct scanner *sc, struct finder_kind **out);
int finder_tree_new(struct scanner *sc, struct finder_kind **out);
int finder_call_new(struct scanner *sc, struct finder_kind **out);
int finder_cgroup_new(struct scanner *sc, struct finder_kind **out);

#endif
