/* SPDX-License-Identifier: MIT */
/* scanner: the part of a reap's look for processes that every finder kind shares; see
 * scanner.h. */
#define _GNU_SOURCE
#include "scanner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* descriptors a pass keeps for its own reads: 8, and the copies of files the callers' rules
 * take (callers.seen) */
#define FD_RESERVE (8 + sizeof ((struct callers *)0)->seen / sizeof *((struct callers *)0)->seen)

/* How many pidfds candidates may hold: the descriptor limit less what is open now and a
 * reserve for the pass's own reads. */
static size_t count_budget(int procfd)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	int dfd = openat(procfd, "self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	size_t open = 0;
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd;
	while ((nd = getdents64(dfd, (void *)dents, sizeof dents)) > 0)
		for (ssize_t off = 0; off < nd;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			open += d->d_name[0] != '.';
		}
	close(dfd);
	return rl.rlim_cur > open + FD_RESERVE ? (size_t)rl.rlim_cur - open - FD_RESERVE : 0;
}

size_t scanner_budget(struct scanner *sc)
{
	if (!sc->budget_counted) {
		sc->pidfd_budget = count_budget(sc->rd.procfd);
		sc->budget_counted = 1;
	}
	return sc->pidfd_budget;
}

/* The caller's zombie children now: the host's, whose statuses are never ours. */
static int read_host_zombies(struct scanner *sc)
{
	/* No child of ours waits to be collected (a waitid that collects nothing says so in one
	 * call): there is no list to read. A leader whose threads still run is not waitable, nor
	 * is it listed below. */
	siginfo_t si = { 0 };
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ? errno == ECHILD : !si.si_pid)
		return 0;
	pid_t *kids = NULL;
	size_t nk = 0, ck = 0;
	int r = reader_children(&sc->rd, sc->rd.self, &kids, &nk, &ck);
	if (r < 0) {
		free(kids);
		return r;
	}
	for (size_t i = 0; i < nk; i++) {
		struct reaper_stat st;
		if (procfs_stat(sc->rd.procfd, kids[i], &st) == 0 && st.state == 'Z' && st.num_threads <= 1)
			kids[sc->nhost_zombies++] = kids[i];
	}
	sc->host_zombies = kids;
	return 0;
}

int scanner_init(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns)
{
	memset(sc, 0, sizeof *sc);
	sc->rd.procfd = -1;
	sc->outer_procfd = -1;
	sc->f = f;
	sc->nf = nf;
	sc->patterns = patterns;
	sc->npatterns = npatterns;
	if (npatterns && !(sc->pattern_hits = calloc(npatterns, sizeof *sc->pattern_hits)))
		return -ENOMEM;
	int r = reader_open(&sc->rd);
	if (r < 0)
		return r;
	return read_host_zombies(sc);
}

void scanner_done(struct scanner *sc)
{
	for (size_t k = 0; k < FINDER_KINDS; k++)
		if (sc->kinds[k]) {
			sc->kinds[k]->done(sc->kinds[k]);
			sc->kinds[k] = NULL;
		}
	reader_close(&sc->rd);
	callers_free(&sc->callers);
	for (size_t i = 0; i < sc->nunproven; i++)
		cand_clear(&sc->unproven[i].c);
	free(sc->unproven);
	sc->unproven = NULL;
	sc->nunproven = sc->cunproven = 0;
	free(sc->host_zombies);
	sc->host_zombies = NULL;
	free(sc->pattern_hits);
	sc->pattern_hits = NULL;
}

void scanner_pass(struct scanner *sc)
{
	struct pass *p = &sc->pass;
	p->starved = 0;
	p->err = 0;
	sc->rd.err = 0;
	p->gen++;
	p->tick0 = procfs_tick_now(sc->rd.ticks);
	for (size_t i = 0; i < sizeof p->anc_cache / sizeof *p->anc_cache; i++)
		p->anc_cache[i].pid = 0;
	p->anc_last = -1;
	sc->origin_state = 0;
}

uint32_t scanner_mask(const struct scanner *sc, enum finder_kinds k)
{
	return sc->kinds[k] ? sc->kinds[k]->mask : 0;
}

uint32_t scanner_environ_bits(const struct scanner *sc, const char *env, size_t len, uint64_t start_time)
{
	const struct finder_kind *k = sc->kinds[FINDER_ENV];
	return k && k->environ_bits ? k->environ_bits(k, env, len, start_time) : 0;
}

int scanner_known(const struct scanner *sc, const struct candset *cs, pid_t pid)
{
	ssize_t i = candset_find(cs, pid);
	if (i < 0)
		return 0;
	const struct cand *c = &cs->v[i];
	if (c->ref.pid > 0)
		return pidref_held(&c->ref, sc->rd.procfd) == 0;
	struct reaper_stat st;
	return procfs_stat(sc->rd.procfd, pid, &st) == 0 && st.start_time == c->info.start_time;
}
