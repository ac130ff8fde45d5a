/* SPDX-License-Identifier: MIT */
/* finder_env: the marker finders (NAME=VALUE in /proc/PID/environ). The hot path: one
 * openat + read per process, nothing else. With an origin each matches only what started
 * since, and only the pids given out since are read. An environment that an exec has under
 * way is looked at again until it can be judged, within a bound. */
#define _GNU_SOURCE
#include "identify.h"
#include "array.h"
#include "marker.h"
#include "origin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JUDGE_BOUND 2.0       /* seconds a pass waits for environments under an exec */
#define PROBE_MAX 256         /* pids given out since an origin looked at one by one (each costs
				 about what listing one entry of /proc does) */

struct env_finders {
	struct finder_kind k;
	const struct reaper_finder *f;
	size_t nf;
	size_t elen[32];
	/* the oldest origin of the finders when every one has an origin: a pass then reads the
	 * environment of the pids given out since it only (NULL: of every process) */
	const struct reaper_origin *origin;
	pid_t *pending; /* environments that could not be judged yet (an exec under way) */
	size_t npending, cpending;
};

/* Which finders an environment holds. */
static uint32_t env_bits(const struct env_finders *e, const char *env, size_t len)
{
	uint32_t mask = 0;
	for (size_t i = 0; i < e->nf; i++)
		if ((e->k.mask & (1u << i)) && reaper_environ_has(env, len, e->f[i].marker, e->elen[i]))
			mask |= 1u << i;
	return mask;
}

/* mask without the finders whose origin is later than start_time. */
static uint32_t env_since(const struct env_finders *e, uint32_t mask, uint64_t start_time)
{
	for (size_t i = 0; i < e->nf; i++)
		if ((mask & e->k.mask & (1u << i)) && e->f[i].origin && start_time < e->f[i].origin->start_time)
			mask &= ~(1u << i);
	return mask;
}

static uint32_t env_environ_bits(const struct finder_kind *k, const char *env, size_t len, uint64_t start_time)
{
	const struct env_finders *e = (const struct env_finders *)k;
	return env_since(e, env_bits(e, env, len), start_time);
}

/* Look at pid again before this pass ends (once). */
static int pend(struct env_finders *e, pid_t pid)
{
	if (pid_in_list(e->pending, e->npending, pid))
		return 0;
	if (ARRAY_RESERVE(e->pending, e->cpending, e->npending + 1, 16) < 0)
		return -ENOMEM;
	e->pending[e->npending++] = pid;
	return 0;
}

/* Whether pid leads its thread group: /proc/TID of a thread is there to read but not listed,
 * so a pid the pass did not list may be a thread's. */
static int leader(struct reader *rd, pid_t pid)
{
	ssize_t n = procfs_read(rd->procfd, pid, "status", &rd->aux);
	const char *t = n > 0 ? strstr(rd->aux.p, "\nTgid:") : NULL;
	return t && atoi(t + 6) == (int)pid;
}

/* The finders' look at one pid (listed: the inode of its directory as the listing of /proc
 * gave it, which lists no threads; 0 when not listed): 1 when it became a candidate, 0 when
 * not (or not yet: pending), -ENOMEM. */
static int examine(struct env_finders *e, struct scanner *sc, struct candset *cs, pid_t pid, unsigned long listed)
{
	if (scanner_known(sc, cs, pid))
		return 0;
	ssize_t n = reader_environ(&sc->rd, pid);
	if (n == -EAGAIN)
		return pend(e, pid);
	if (n <= 0) {
		reader_failed(&sc->rd, n); /* else gone, a kernel thread, a zombie, or unreadable */
		return 0;
	}
	uint32_t mask = env_bits(e, sc->rd.buf.p, (size_t)n);
	/* the caller's ancestry is read only for a match (a clean run has none) */
	if (!mask || (!listed && !leader(&sc->rd, pid)) || reader_caller(&sc->rd, pid))
		return 0;
	struct match m = { .pid = pid, .by = &e->k, .mask = mask, .env = sc->rd.buf.p, .envlen = n, .dir_ino = listed };
	size_t idx;
	return identify(sc, cs, &m, &idx);
}

/* What an exec had under way is looked at again until it can be judged, bounded. */
static int judge_pending(struct env_finders *e, struct scanner *sc, struct candset *cs)
{
	int added = 0;
	double naps = 0, nap = 0.0001;
	while (e->npending && naps < JUDGE_BOUND) {
		struct timespec ts = { 0, (long)(nap * 1e9) };
		nanosleep(&ts, NULL);
		naps += nap;
		nap = nap * 2 < 0.01 ? nap * 2 : 0.01;
		size_t np = e->npending;
		pid_t *again = malloc(np * sizeof *again);
		if (!again)
			return -ENOMEM;
		memcpy(again, e->pending, np * sizeof *again);
		e->npending = 0;
		for (size_t i = 0; i < np; i++) {
			int r = examine(e, sc, cs, again[i], 0);
			if (r < 0) {
				free(again);
				return r;
			}
			added += r;
		}
		free(again);
	}
	if (e->npending)
		sc->pass.err = EAGAIN;
	e->npending = 0;
	return added;
}

static int env_scan_all(struct finder_kind *k, struct scanner *sc, struct candset *cs)
{
	struct env_finders *e = (struct env_finders *)k;
	int added = 0, r;
	/* With an origin only the pids given out since are read: each looked at directly while
	 * they are few, else the listing of /proc is read and the rest passed over. */
	struct origin_window w;
	int win = e->origin && origin_window(sc->rd.procfd, e->origin, &w) == 0;
	if (win && w.len <= PROBE_MAX) {
		for (size_t i = 0; i < w.len; i++) {
			if ((r = examine(e, sc, cs, origin_window_pid(&w, i), 0)) < 0)
				return r;
			added += r;
		}
	} else {
		DIR *dir = reader_dir(&sc->rd);
		if (!dir)
			return -errno;
		rewinddir(dir);
		struct dirent *d;
		while ((d = readdir(dir))) {
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			pid_t pid = (pid_t)atoi(d->d_name);
			if (win && !origin_in_window(&w, pid))
				continue;
			if ((r = examine(e, sc, cs, pid, (unsigned long)d->d_ino)) < 0)
				return r;
			added += r;
		}
	}
	if ((r = judge_pending(e, sc, cs)) < 0)
		return r;
	return added + r;
}

/* The marker scan, and then the matches it holds unproven (identify_settle). A pid that
 * changed hands since its match may hold a process in the middle of an exec: it is judged
 * as the scan's own were, and what that holds unproven settled in turn. */
static int env_scan(struct finder_kind *k, struct scanner *sc, struct candset *cs)
{
	struct env_finders *e = (struct env_finders *)k;
	int r = env_scan_all(k, sc, cs);
	int s = identify_settle(sc, cs, r < 0);
	if (r >= 0 && s >= 0 && e->npending) {
		r += s;
		s = judge_pending(e, sc, cs);
		int t = identify_settle(sc, cs, s < 0);
		s = s < 0 ? s : t < 0 ? t : s + t;
	}
	return r < 0 ? r : s < 0 ? s : r + s;
}

/* Younger than the pass: the environment read may have been an earlier holder's of the pid;
 * it is read again (and m->env shows the new read). */
static int env_recheck(struct finder_kind *k, struct scanner *sc, struct match *m, const struct pidref *ref,
		       const struct reaper_stat *st)
{
	struct env_finders *e = (struct env_finders *)k;
	m->envlen = reader_environ(&sc->rd, m->pid);
	m->env = sc->rd.buf.p;
	m->mask = m->envlen > 0 ? env_bits(e, m->env, (size_t)m->envlen) : 0;
	if (m->envlen == -EAGAIN && pend(e, m->pid) < 0)
		m->envlen = -ENOMEM;
	reader_failed(&sc->rd, m->envlen);
	return m->envlen == -ENOMEM ? -ENOMEM : 0;
}

/* A finder with an origin matches only what started since. */
static int env_keep(struct finder_kind *k, struct scanner *sc, struct match *m, const struct reaper_stat *st)
{
	m->mask = env_since((struct env_finders *)k, m->mask, st->start_time);
	return 0;
}

static void env_done(struct finder_kind *k)
{
	struct env_finders *e = (struct env_finders *)k;
	free(e->pending);
	free(e);
}

int finder_env_new(struct scanner *sc, struct finder_kind **out)
{
	*out = NULL;
	uint32_t mask = 0;
	for (size_t i = 0; i < sc->nf; i++)
		if (sc->f[i].kind == REAPER_FIND_ENV) {
			if (marker_check(sc->f[i].marker) < 0)
				return -EINVAL;
			mask |= 1u << i;
		}
	if (!mask)
		return 0;
	struct env_finders *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	e->k = (struct finder_kind){ .kind = FINDER_ENV, .mask = mask, .scan = env_scan, .recheck = env_recheck,
				     .keep = env_keep, .environ_bits = env_environ_bits, .done = env_done };
	e->f = sc->f;
	e->nf = sc->nf;
	/* the window is the oldest origin's, and there is none when a finder has none */
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (!sc->f[i].origin) {
			e->origin = NULL;
			break;
		}
		if (!e->origin || sc->f[i].origin->forks < e->origin->forks)
			e->origin = sc->f[i].origin;
	}
	for (size_t i = 0; i < sc->nf; i++)
		if (mask & (1u << i))
			e->elen[i] = strlen(sc->f[i].marker);
	*out = &e->k;
	return 0;
}
