/* SPDX-License-Identifier: MIT */
/* finders: see finders.h. A pass runs the kinds in the order of their authority: the cgroup
 * first, then the markers (left out while the reap waits on a cgroup), the trees (which walk
 * on from what the others found), the callbacks. */
#include "finders.h"

#include <errno.h>
#include <string.h>

int finders_open(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns)
{
	memset(sc, 0, sizeof *sc);
	sc->rd.procfd = -1;
	if (nf > 32)
		return -E2BIG;
	for (size_t i = 0; i < nf; i++)
		if (f[i].kind != REAPER_FIND_ENV && f[i].kind != REAPER_FIND_TREE && f[i].kind != REAPER_FIND_CALL &&
		    f[i].kind != REAPER_FIND_CGROUP)
			return -EINVAL;
	int r;
	if ((r = scanner_init(sc, f, nf, patterns, npatterns)) < 0 ||
	    (r = finder_cgroup_new(sc, &sc->kinds[FINDER_CGROUP])) < 0 ||
	    (r = finder_env_new(sc, &sc->kinds[FINDER_ENV])) < 0 || (r = finder_tree_new(sc, &sc->kinds[FINDER_TREE])) < 0)
		return r;
	return finder_call_new(sc, &sc->kinds[FINDER_CALL]);
}

void finders_close(struct scanner *sc)
{
	scanner_done(sc);
}

int finders_scan(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	scanner_pass(sc);
	for (size_t i = 0; i < FINDER_KINDS; i++) {
		struct finder_kind *k = sc->kinds[i];
		if (!k || (k->kind == FINDER_ENV && sc->env_deferred))
			continue;
		int r = k->scan(k, sc, cs);
		if (r < 0) {
			callers_pass_done(&sc->callers);
			return r;
		}
		added += r;
	}
	callers_pass_done(&sc->callers);
	if (sc->rd.err)
		sc->pass.err = sc->rd.err;
	return added;
}
