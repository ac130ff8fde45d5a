/* SPDX-License-Identifier: MIT */
/* finder_cgroup: every member of a cgroup and of the cgroups below it. The kernel lists a
 * process whose main thread exited while another thread runs: identify() takes it as alive,
 * and its pidfd reports its exit only when the last thread is gone. */
#define _GNU_SOURCE
#include "identify.h"
#include "cgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct cgroup_finders {
	struct finder_kind k;
	const struct reaper_finder *f;
	size_t nf;
	pid_t *pids; /* members, reused by every pass */
	size_t cap;
	pid_t *again; /* members listed again to check one pinned late */
	size_t again_cap;
};

/* Finder i's cgroup is empty now: cgroup.events says "populated 0" (nothing in it or below).
 * One read instead of a walk (a descriptor, a listing and a read per cgroup below): what a
 * clean run's cgroup is at its end. No descriptor is kept for it: a reap short of them needs
 * every one for the walk and its pidfds. 1 empty, 0 not or not known (then it is walked). */
static int cgroup_empty(const struct scanner *sc, size_t i, const char *path)
{
	int pop = 1, r;
	if (sc->cgroup_events && sc->cgroup_events[i] >= 0) {
		r = cgroup_events_read(sc->cgroup_events[i], &pop, NULL);
		return r == 0 && !pop;
	}
	int fd = cgroup_events_open(path);
	if (fd < 0)
		return 0;
	r = cgroup_events_read(fd, &pop, NULL);
	close(fd);
	return r == 0 && !pop;
}

static int cgroup_scan(struct finder_kind *k, struct scanner *sc, struct candset *cs)
{
	struct cgroup_finders *g = (struct cgroup_finders *)k;
	int added = 0;
	for (size_t i = 0; i < g->nf; i++) {
		if (!(k->mask & (1u << i)))
			continue;
		size_t n = 0;
		if (cgroup_empty(sc, i, g->f[i].cgroup))
			continue;
		int r = cgroup_members(g->f[i].cgroup, &g->pids, &n, &g->cap);
		if (r == -ENOMEM)
			return r;
		/* a listing cut short for want of descriptors: the pass may have missed members */
		reader_failed(&sc->rd, r);
		for (size_t j = 0; j < n; j++) {
			if ((r = identify_listed(sc, cs, k, g->pids[j], 1u << i, 0)) < 0)
				return r;
			added += r;
		}
	}
	return added;
}

/* Listed before it was pinned: the pid may have passed to a process outside. Kept by the
 * finders whose cgroup lists the pinned process now. */
static int cgroup_recheck(struct finder_kind *k, struct scanner *sc, struct match *m, const struct pidref *ref,
			  const struct reaper_stat *st)
{
	struct cgroup_finders *g = (struct cgroup_finders *)k;
	int in = 0;
	for (size_t i = 0; in != 1 && i < g->nf; i++)
		if (m->mask & (1u << i))
			in = cgroup_holds(g->f[i].cgroup, ref, sc->rd.procfd, &g->again, &g->again_cap);
	if (in != 1)
		m->mask = 0;
	/* not listed because no listing could be read: the pass may have dropped a member */
	reader_failed(&sc->rd, in);
	return 0;
}

static void cgroup_done(struct finder_kind *k)
{
	struct cgroup_finders *g = (struct cgroup_finders *)k;
	free(g->pids);
	free(g->again);
	free(g);
}

int finder_cgroup_new(struct scanner *sc, struct finder_kind **out)
{
	*out = NULL;
	uint32_t mask = 0;
	for (size_t i = 0; i < sc->nf; i++)
		if (sc->f[i].kind == REAPER_FIND_CGROUP) {
			if (!sc->f[i].cgroup || !*sc->f[i].cgroup)
				return -EINVAL;
			mask |= 1u << i;
		}
	if (!mask)
		return 0;
	struct cgroup_finders *g = calloc(1, sizeof *g);
	if (!g)
		return -ENOMEM;
	g->k = (struct finder_kind){ .kind = FINDER_CGROUP, .mask = mask, .scan = cgroup_scan,
				     .recheck = cgroup_recheck, .done = cgroup_done };
	g->f = sc->f;
	g->nf = sc->nf;
	*out = &g->k;
	return 0;
}
