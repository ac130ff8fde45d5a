/* SPDX-License-Identifier: MIT */
/* finder_call: the identities a REAPER_FIND_CALL finder's callback returns, pinned and
 * verified like any match (a pid whose start time is not the one named is not taken). */
#define _GNU_SOURCE
#include "identify.h"
#include "array.h"

#include <errno.h>
#include <stdlib.h>

struct call_finders {
	struct finder_kind k;
	const struct reaper_finder *f;
	size_t nf;
	struct reaper_ident *ids; /* what the callbacks returned */
	size_t ids_cap;
};

/* What finder i returns now: how many of c->ids, or its -errno. */
static int ask(struct call_finders *c, size_t i)
{
	const struct reaper_finder *f = &c->f[i];
	int n = f->find(f->find_ctx, c->ids, c->ids_cap);
	if (n > 0 && (size_t)n > c->ids_cap) {
		if (ARRAY_RESERVE(c->ids, c->ids_cap, (size_t)n, (size_t)n) < 0)
			return -ENOMEM;
		n = f->find(f->find_ctx, c->ids, c->ids_cap);
		if (n > 0 && (size_t)n > c->ids_cap)
			n = (int)c->ids_cap; /* grew again meanwhile: the rest at the next pass */
	}
	return n;
}

static int call_scan(struct finder_kind *k, struct scanner *sc, struct candset *cs)
{
	struct call_finders *c = (struct call_finders *)k;
	int added = 0;
	for (size_t i = 0; i < c->nf; i++) {
		if (!(k->mask & (1u << i)))
			continue;
		int n = ask(c, i);
		if (n < 0)
			return n;
		for (int j = 0; j < n; j++) {
			const struct reaper_ident *id = &c->ids[j];
			if (id->pid <= 0 || !id->start_time)
				continue;
			int r = identify_listed(sc, cs, k, id->pid, 1u << i, id->start_time);
			if (r < 0)
				return r;
			added += r;
		}
	}
	return added;
}

static void call_done(struct finder_kind *k)
{
	free(((struct call_finders *)k)->ids);
	free(k);
}

int finder_call_new(struct scanner *sc, struct finder_kind **out)
{
	*out = NULL;
	uint32_t mask = 0;
	for (size_t i = 0; i < sc->nf; i++)
		if (sc->f[i].kind == REAPER_FIND_CALL) {
			if (!sc->f[i].find)
				return -EINVAL;
			mask |= 1u << i;
		}
	if (!mask)
		return 0;
	struct call_finders *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	/* an identity names its start time: identify() checks it, nothing else is to check */
	c->k = (struct finder_kind){ .kind = FINDER_CALL, .mask = mask, .scan = call_scan, .done = call_done };
	c->f = sc->f;
	c->nf = sc->nf;
	*out = &c->k;
	return 0;
}
