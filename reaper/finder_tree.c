/* SPDX-License-Identifier: MIT */
/* finder_tree: the descendants of a root (the caller when it names none). It follows
 * /proc/PID/task/TID/children down from each root and from every descendant already known,
 * so it costs what the tree holds, not what the system holds; that is how orphans
 * re-parented away from the root stay in the tree. A process is walked only while it is
 * still the one pinned: a pid that has passed to another process since lends its new holder's
 * children nothing. */
#define _GNU_SOURCE
#include "identify.h"
#include "array.h"
#include "marker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tree_finders {
	struct finder_kind k;
	const struct reaper_finder *f;
	size_t nf;
	uint32_t marked; /* finders with a marker: they judge by the environment */
	/* the roots, pinned when the reap began (pid 0: the caller, or gone) */
	struct pidref roots[32];
	/* per finder with a marker: the value of its NAME that root was started with (NULL when
	 * root's environment had none) */
	char *inherited[32];
};

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

/* The value finder i's NAME had when its root was started: a child forked without exec
 * carries it, so it names nobody else. */
static int read_inherited(struct tree_finders *t, struct reader *rd, size_t i)
{
	char name[256];
	size_t vlen = 0;
	if (!marker_split(t->f[i].marker, name))
		return -EINVAL;
	ssize_t n = procfs_read(rd->procfd, t->f[i].root ? t->f[i].root : rd->self, "environ", &rd->buf);
	const char *v = n > 0 ? reaper_environ_get(rd->buf.p, (size_t)n, name, &vlen) : NULL;
	if (v && !(t->inherited[i] = strndup(v, vlen)))
		return -ENOMEM;
	return 0;
}

/* A root is walked only while it is the process it was when the reap began: each finder's
 * root is pinned now (one already gone stays unpinned). */
static int pin_roots(struct tree_finders *t, struct reader *rd)
{
	for (size_t i = 0; i < t->nf; i++) {
		struct reaper_stat st;
		if (!(t->k.mask & (1u << i)) || !t->f[i].root)
			continue;
		int r = pidref_open_stat(&t->roots[i], rd->procfd, t->f[i].root, &st);
		if (r == -EMFILE || r == -ENFILE)
			r = pidref_pin_stat(&t->roots[i], rd->procfd, t->f[i].root, &st);
		if (r < 0 && r != -ESRCH)
			return r;
	}
	return 0;
}

/* Which of the finders in bits keep a process (identity pinned as st, environ env): started
 * early enough, not skipped, not another test's marker. */
static uint32_t tree_bits(const struct tree_finders *t, uint32_t bits, const struct reaper_stat *st,
			  const char *env, ssize_t envlen)
{
	for (size_t i = 0; i < t->nf; i++) {
		if (!(bits & (1u << i)))
			continue;
		const struct reaper_finder *f = &t->f[i];
		int drop = st->start_time < f->since || pid_in_list(f->skip, f->nskip, st->pid);
		if (!drop && f->marker && envlen > 0) {
			char name[256];
			size_t vlen = 0;
			const char *own = marker_split(f->marker, name), *inh = t->inherited[i];
			const char *v = reaper_environ_get(env, (size_t)envlen, name, &vlen);
			drop = v && !(vlen == strlen(own) && memcmp(v, own, vlen) == 0) &&
			       !(inh && vlen == strlen(inh) && memcmp(v, inh, vlen) == 0);
		}
		if (drop)
			bits &= ~(1u << i);
	}
	return bits;
}

/* The identity a walk item stands for: a pinned root (NULL for the caller itself) or a
 * candidate. Looked up afresh each time: adding candidates may move the set. */
struct item {
	pid_t pid;
	uint32_t bits;
	int root; /* finders[root] when >= 0 */
	ssize_t cand;
};

static const struct pidref *item_ref(const struct tree_finders *t, const struct candset *cs, const struct item *it)
{
	if (it->cand >= 0)
		return &cs->v[it->cand].ref;
	return it->root >= 0 && t->f[it->root].root ? &t->roots[it->root] : NULL;
}

/* The walk's queue, and the children of the item being walked (reused). */
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
static int walk(struct tree_finders *t, struct scanner *sc, struct candset *cs, struct queue *q, size_t qi)
{
	const struct item it = q->v[qi]; /* a copy: enqueueing may move the queue */
	size_t nk = 0;
	int added = 0, r;
	const struct pidref *ref = item_ref(t, cs, &it);
	if (ref && ref->pid <= 0)
		return 0;
	if ((r = reader_children(&sc->rd, it.pid, &q->kids, &nk, &q->kcap)) < 0)
		return r;
	/* the list is this process's only if it still is the one pinned after the read */
	if (ref && pidref_held(ref, sc->rd.procfd) < 0)
		return 0;
	for (size_t k = 0; k < nk; k++) {
		pid_t c = q->kids[k];
		/* a child of the caller is none of the caller's ancestors: the walk from the
		 * caller needs no ancestry (a clean run reads none) */
		if (it.pid != sc->rd.self && reader_caller(&sc->rd, c))
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
		struct match m = { .pid = c, .by = &t->k, .mask = it.bits, .parent = it.pid, .pref = item_ref(t, cs, &it) };
		size_t a;
		if ((r = identify(sc, cs, &m, &a)) < 0)
			return r;
		if (r == 1) {
			added++;
			if ((r = enqueue(q, c, it.bits, -1, (ssize_t)a)) < 0)
				return r;
		}
	}
	return added;
}

/* The queue: the roots, then every pinned candidate found by a tree finder. */
static int tree_scan(struct finder_kind *k, struct scanner *sc, struct candset *cs)
{
	struct tree_finders *t = (struct tree_finders *)k;
	struct queue q = { 0 };
	int added = 0, r = 0;
	for (size_t i = 0; r == 0 && i < t->nf; i++)
		if ((k->mask & (1u << i)) && (!t->f[i].root || t->roots[i].pid > 0))
			r = enqueue(&q, t->f[i].root ? t->f[i].root : sc->rd.self, 1u << i, (int)i, -1);
	for (size_t i = 0; r == 0 && i < cs->n; i++)
		if (cs->v[i].ref.pid > 0 && cs->v[i].info.fate != REAPER_KEPT && (cs->v[i].info.matched_by & k->mask))
			r = enqueue(&q, cs->v[i].info.pid, cs->v[i].info.matched_by & k->mask, -1, (ssize_t)i);
	for (size_t qi = 0; r >= 0 && qi < q.n; qi++)
		if ((r = walk(t, sc, cs, &q, qi)) > 0)
			added += r;
	free(q.v);
	free(q.kids);
	return r < 0 ? r : added;
}

/* Younger than the pass: the process whose children listed it must still be its parent, and
 * that process still the one the list was read from. */
static int tree_recheck(struct finder_kind *k, struct scanner *sc, struct match *m, const struct pidref *ref,
			const struct reaper_stat *st)
{
	if (m->parent && (st->ppid != m->parent || (m->pref && pidref_held(m->pref, sc->rd.procfd) < 0)))
		m->mask = 0;
	return 0;
}

/* A finder with a marker keeps it or not by its environment (read now when the match was
 * not by it). */
static int tree_keep(struct finder_kind *k, struct scanner *sc, struct match *m, const struct reaper_stat *st)
{
	struct tree_finders *t = (struct tree_finders *)k;
	if (!m->env && (m->mask & t->marked)) {
		m->envlen = reader_environ(&sc->rd, m->pid);
		m->env = sc->rd.buf.p;
	}
	m->mask = tree_bits(t, m->mask, st, m->env, m->envlen);
	return 0;
}

static void tree_done(struct finder_kind *k)
{
	struct tree_finders *t = (struct tree_finders *)k;
	for (size_t i = 0; i < sizeof t->roots / sizeof *t->roots; i++) {
		pidref_done(&t->roots[i]);
		free(t->inherited[i]);
	}
	free(t);
}

int finder_tree_new(struct scanner *sc, struct finder_kind **out)
{
	*out = NULL;
	uint32_t mask = 0, marked = 0;
	for (size_t i = 0; i < sc->nf; i++) {
		const struct reaper_finder *f = &sc->f[i];
		if (f->kind != REAPER_FIND_TREE)
			continue;
		if (f->root < 0 || (f->nskip && !f->skip) || (f->marker && marker_check(f->marker) < 0))
			return -EINVAL;
		mask |= 1u << i;
		if (f->marker)
			marked |= 1u << i;
	}
	if (!mask)
		return 0;
	struct tree_finders *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->k = (struct finder_kind){ .kind = FINDER_TREE, .mask = mask, .scan = tree_scan, .recheck = tree_recheck,
				     .keep = tree_keep, .done = tree_done };
	t->f = sc->f;
	t->nf = sc->nf;
	t->marked = marked;
	for (size_t i = 0; i < sizeof t->roots / sizeof *t->roots; i++)
		t->roots[i] = PIDREF_NULL;
	*out = &t->k;
	int r = pin_roots(t, &sc->rd);
	for (size_t i = 0; r == 0 && i < sc->nf; i++)
		if (marked & (1u << i))
			r = read_inherited(t, &sc->rd, i);
	return r;
}
