/* SPDX-License-Identifier: MIT */
/* finder: each kind of finder's look for processes. The marker finder reads each process's
 * environ (the hot path: one openat + read per process, nothing else); the tree finder
 * follows /proc/PID/task/TID/children down from its root and from every descendant already
 * known, so it costs what the tree holds, not what the system holds; the call finder asks
 * its callback; the cgroup finder lists its cgroup. */
#define _GNU_SOURCE
#include "scanner.h"
#include "array.h"
#include "cgroup.h"
#include "origin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JUDGE_BOUND 2.0       /* seconds a scan waits for environments under an exec */
#define PROBE_MAX 256         /* pids given out since an origin looked at one by one (each costs
				 about what listing one entry of /proc does) */

/* NAME of a "NAME=VALUE" marker into name[256]; a pointer to VALUE, or NULL when too long. */
static const char *marker_split(const char *m, char *name)
{
	size_t namelen = (size_t)(strchr(m, '=') - m);
	if (namelen >= 256)
		return NULL;
	memcpy(name, m, namelen);
	name[namelen] = 0;
	return m + namelen + 1;
}

/* The value tree finder i's NAME had when its root was started: a child forked without exec
 * carries it, so it names nobody else. */
int finder_tree_inherit(struct scanner *sc, size_t i)
{
	char name[256];
	size_t vlen = 0;
	if (!marker_split(sc->f[i].marker, name))
		return -EINVAL;
	ssize_t n = procfs_read(sc->procfd, sc->f[i].root ? sc->f[i].root : sc->self, "environ", &sc->buf);
	const char *v = n > 0 ? reaper_environ_get(sc->buf.p, (size_t)n, name, &vlen) : NULL;
	if (v && !(sc->tree_inherited[i] = strndup(v, vlen)))
		return -ENOMEM;
	return 0;
}

/* Which of the tree finders in bits keep a process (identity pinned as st, environ env):
 * started early enough, not skipped, not another test's marker. */
uint32_t finder_tree_keep(const struct scanner *sc, uint32_t bits, const struct reaper_stat *st,
			  const char *env, ssize_t envlen)
{
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(bits & (1u << i)))
			continue;
		const struct reaper_finder *f = &sc->f[i];
		int drop = st->start_time < f->since || pid_in_list(f->skip, f->nskip, st->pid);
		if (!drop && f->marker && envlen > 0) {
			char name[256];
			size_t vlen = 0;
			const char *own = marker_split(f->marker, name), *inh = sc->tree_inherited[i];
			const char *v = reaper_environ_get(env, (size_t)envlen, name, &vlen);
			drop = v && !(vlen == strlen(own) && memcmp(v, own, vlen) == 0) &&
			       !(inh && vlen == strlen(inh) && memcmp(v, inh, vlen) == 0);
		}
		if (drop)
			bits &= ~(1u << i);
	}
	return bits;
}

/* Which marker finders an environment holds. */
uint32_t finder_env_bits(const struct scanner *sc, const char *env, size_t len)
{
	uint32_t mask = 0;
	for (size_t i = 0; i < sc->nf; i++)
		if ((sc->env_mask & (1u << i)) && reaper_environ_has(env, len, sc->f[i].marker, sc->elen[i]))
			mask |= 1u << i;
	return mask;
}

/* mask without the marker finders whose origin is later than start_time: they match only
 * what started since their origin. */
uint32_t finder_env_since(const struct scanner *sc, uint32_t mask, uint64_t start_time)
{
	for (size_t i = 0; i < sc->nf; i++)
		if ((mask & sc->env_mask & (1u << i)) && sc->f[i].origin && start_time < sc->f[i].origin->start_time)
			mask &= ~(1u << i);
	return mask;
}

/* Whether pid leads its thread group: /proc/TID of a thread is there to read but not listed,
 * so a pid the scan did not list may be a thread's. */
static int leader(struct scanner *sc, pid_t pid)
{
	ssize_t n = procfs_read(sc->procfd, pid, "status", &sc->aux);
	const char *t = n > 0 ? strstr(sc->aux.p, "\nTgid:") : NULL;
	return t && atoi(t + 6) == (int)pid;
}

/* Look at pid again before this scan ends (once). */
int finder_pend(struct scanner *sc, pid_t pid)
{
	for (size_t i = 0; i < sc->npending; i++)
		if (sc->pending[i] == pid)
			return 0;
	if (ARRAY_RESERVE(sc->pending, sc->cpending, sc->npending + 1, 16) < 0)
		return -ENOMEM;
	sc->pending[sc->npending++] = pid;
	return 0;
}

/* Whether the pinned process ref is listed in a cgroup of the cgroup finders in mask now:
 * 1, 0 or -errno. */
int finder_in_cgroups(struct scanner *sc, const struct pidref *ref, uint32_t mask)
{
	int in = 0;
	for (size_t i = 0; in != 1 && i < sc->nf; i++)
		if (mask & (1u << i))
			in = cgroup_holds(sc->f[i].cgroup, ref, sc->procfd, &sc->cgagain, &sc->cgagain_cap);
	return in;
}

/* The marker finders' look at one pid (listed: by the scan of /proc, which lists no
 * threads): 1 when it became a candidate, 0 when not (or not yet: pending), -ENOMEM. */
static int examine(struct scanner *sc, struct candset *cs, pid_t pid, int listed)
{
	if (scanner_excluded(sc, pid) || scanner_known(sc, cs, pid))
		return 0;
	ssize_t n = scanner_environ(sc, pid);
	if (n == -EAGAIN)
		return finder_pend(sc, pid);
	if (n <= 0) {
		scanner_read_failed(sc, n); /* else gone, a kernel thread, a zombie, or unreadable */
		return 0;
	}
	uint32_t mask = finder_env_bits(sc, sc->buf.p, (size_t)n);
	if (!mask || (!listed && !leader(sc, pid)))
		return 0;
	ssize_t r = identify(sc, cs, pid, mask, sc->buf.p, n, 0, 0, NULL);
	return r == -ENOMEM ? -ENOMEM : r >= 0;
}

int finder_scan_env(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	/* With an origin only the pids given out since are read: each looked at directly while
	 * they are few, else the listing of /proc is read and the rest passed over. */
	struct origin_window w;
	int win = sc->origin && origin_window(sc->procfd, sc->origin, &w) == 0;
	if (win && w.len <= PROBE_MAX) {
		for (size_t i = 0; i < w.len; i++) {
			int r = examine(sc, cs, origin_window_pid(&w, i), 0);
			if (r < 0)
				return r;
			added += r;
		}
	} else {
		rewinddir(sc->dir);
		struct dirent *d;
		while ((d = readdir(sc->dir))) {
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			pid_t pid = (pid_t)atoi(d->d_name);
			if (win && !origin_in_window(&w, pid))
				continue;
			int r = examine(sc, cs, pid, 1);
			if (r < 0)
				return r;
			added += r;
		}
	}
	/* what an exec had under way is looked at again until it can be judged, bounded */
	double naps = 0, nap = 0.0001;
	while (sc->npending && naps < JUDGE_BOUND) {
		struct timespec ts = { 0, (long)(nap * 1e9) };
		nanosleep(&ts, NULL);
		naps += nap;
		nap = nap * 2 < 0.01 ? nap * 2 : 0.01;
		size_t np = sc->npending;
		pid_t *again = malloc(np * sizeof *again);
		if (!again)
			return -ENOMEM;
		memcpy(again, sc->pending, np * sizeof *again);
		sc->npending = 0;
		for (size_t i = 0; i < np; i++) {
			int r = examine(sc, cs, again[i], 0);
			if (r < 0) {
				free(again);
				return r;
			}
			added += r;
		}
		free(again);
	}
	sc->unjudged = sc->npending;
	if (sc->npending)
		sc->scan_err = EAGAIN;
	sc->npending = 0;
	return added;
}

/* The identity a tree walk item stands for: a pinned root (NULL for the caller itself) or a
 * candidate. Looked up afresh each time: adding candidates may move the set. */
struct item {
	pid_t pid;
	uint32_t bits;
	int root;   /* finders[root] when >= 0 */
	ssize_t cand;
};

static const struct pidref *item_ref(const struct scanner *sc, const struct candset *cs, const struct item *it)
{
	if (it->cand >= 0)
		return &cs->v[it->cand].ref;
	return it->root >= 0 && sc->f[it->root].root ? &sc->roots[it->root] : NULL;
}

/* The tree walk's queue, and the children of the item being walked (reused). */
struct queue {
	struct item *v;
	size_t n, cap;
	pid_t *kids;
	size_t kcap;
};

static int enqueue(struct queue *q, pid_t pid, uint32_t bits, int root, ssize_t cand)
{
	if (ARRAY_RESERVE(q->v, q->cap, q->n + 1, 64) < 0)
		return -ENOMEM;
	q->v[q->n++] = (struct item){ pid, bits, root, cand };
	return 0;
}

/* Item qi's children are in its trees: known ones are marked so, new ones identified; both
 * are walked in turn. Returns how many were added, or -ENOMEM. */
static int walk(struct scanner *sc, struct candset *cs, struct queue *q, size_t qi)
{
	const struct item it = q->v[qi]; /* a copy: enqueueing may move the queue */
	size_t nk = 0;
	int added = 0, r;
	const struct pidref *ref = item_ref(sc, cs, &it);
	if (ref && ref->pid <= 0)
		return 0;
	if ((r = scanner_children(sc, it.pid, &q->kids, &nk, &q->kcap)) < 0)
		return r;
	/* the list is this process's only if it still is the one pinned after the read */
	if (ref && pidref_held(ref, sc->procfd) < 0)
		return 0;
	for (size_t k = 0; k < nk; k++) {
		pid_t c = q->kids[k];
		if (scanner_excluded(sc, c))
			continue;
		ssize_t idx = candset_find(cs, c);
		if (idx >= 0 && scanner_known(sc, cs, c)) {
			uint32_t had = cs->v[idx].info.matched_by;
			cs->v[idx].info.matched_by |= it.bits;
			/* found by a marker first, it is in this tree only now: walk its
			 * children in this very pass (one reaper_scan is one pass) */
			if ((had & it.bits) != it.bits && (r = enqueue(q, c, it.bits, -1, idx)) < 0)
				return r;
			continue;
		}
		ssize_t a = identify(sc, cs, c, it.bits, NULL, 0, 0, it.pid, item_ref(sc, cs, &it));
		if (a == -ENOMEM)
			return -ENOMEM;
		if (a >= 0) {
			added++;
			if ((r = enqueue(q, c, it.bits, -1, a)) < 0)
				return r;
		}
	}
	return added;
}

int finder_scan_tree(struct scanner *sc, struct candset *cs)
{
	/* queue: the roots, then every pinned candidate found by a tree finder (that is how
	 * orphans re-parented away from the root stay in the tree). A process is walked only
	 * while it is still the one pinned: a pid that has passed to another process since
	 * lends its new holder's children nothing. */
	struct queue q = { 0 };
	int added = 0, r = 0;
	for (size_t i = 0; r == 0 && i < sc->nf; i++)
		if ((sc->tree_mask & (1u << i)) && (!sc->f[i].root || sc->roots[i].pid > 0))
			r = enqueue(&q, sc->f[i].root ? sc->f[i].root : sc->self, 1u << i, (int)i, -1);
	for (size_t i = 0; r == 0 && i < cs->n; i++)
		if (cs->v[i].ref.pid > 0 && cs->v[i].info.fate != REAPER_KEPT && (cs->v[i].info.matched_by & sc->tree_mask))
			r = enqueue(&q, cs->v[i].info.pid, cs->v[i].info.matched_by & sc->tree_mask, -1, (ssize_t)i);
	for (size_t qi = 0; r >= 0 && qi < q.n; qi++)
		if ((r = walk(sc, cs, &q, qi)) > 0)
			added += r;
	free(q.v);
	free(q.kids);
	return r < 0 ? r : added;
}

/* A pid that finder bit listed (want: the start time it named, 0 for any): a candidate
 * already, of that identity, is marked as found by it too; a new one is identified. 1 when
 * it was added, 0 when not, -ENOMEM. */
static int take(struct scanner *sc, struct candset *cs, pid_t pid, uint32_t bit, uint64_t want)
{
	if (scanner_excluded(sc, pid))
		return 0;
	ssize_t idx = candset_find(cs, pid);
	if (idx >= 0 && scanner_known(sc, cs, pid)) {
		if (!want || cs->v[idx].info.start_time == want)
			cs->v[idx].info.matched_by |= bit;
		return 0;
	}
	ssize_t a = identify(sc, cs, pid, bit, NULL, 0, want, 0, NULL);
	return a == -ENOMEM ? -ENOMEM : a >= 0;
}

/* The identities each REAPER_FIND_CALL finder returns, pinned and verified like any match. */
int finder_scan_call(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(sc->call_mask & (1u << i)))
			continue;
		int n = sc->f[i].find(sc->f[i].find_ctx, sc->ids, sc->ids_cap);
		if (n > 0 && (size_t)n > sc->ids_cap) {
			if (ARRAY_RESERVE(sc->ids, sc->ids_cap, (size_t)n, (size_t)n) < 0)
				return -ENOMEM;
			n = sc->f[i].find(sc->f[i].find_ctx, sc->ids, sc->ids_cap);
			if (n > 0 && (size_t)n > sc->ids_cap)
				n = (int)sc->ids_cap; /* grew again meanwhile: the rest at the next scan */
		}
		if (n < 0)
			return n;
		for (int k = 0; k < n; k++) {
			const struct reaper_ident *id = &sc->ids[k];
			if (id->pid <= 0 || !id->start_time)
				continue;
			int r = take(sc, cs, id->pid, 1u << i, id->start_time);
			if (r < 0)
				return r;
			added += r;
		}
	}
	return added;
}

/* Every member of each cgroup finder's cgroup and the cgroups below it. The kernel lists a
 * process whose main thread exited while another thread runs: identify() takes it as alive, and
 * its pidfd reports its exit only when the last thread is gone. */
int finder_scan_cgroup(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(sc->cgroup_mask & (1u << i)))
			continue;
		size_t n = 0;
		int r = cgroup_members(sc->f[i].cgroup, &sc->cgpids, &n, &sc->cgcap);
		if (r == -ENOMEM)
			return r;
		for (size_t k = 0; k < n; k++) {
			if ((r = take(sc, cs, sc->cgpids[k], 1u << i, 0)) < 0)
				return r;
			added += r;
		}
	}
	return added;
}
