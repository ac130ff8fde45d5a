/* SPDX-License-Identifier: MIT */
/* candset: an array of candidates plus a pid hash; see candset.h. */
#define _GNU_SOURCE
#include "candset.h"
#include "array.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static size_t slot(pid_t pid, size_t hcap)
{
	return ((uint32_t)pid * 2654435761u) & (hcap - 1);
}

ssize_t candset_find(const struct candset *cs, pid_t pid)
{
	if (!cs->hcap)
		return -1;
	for (size_t i = slot(pid, cs->hcap);; i = (i + 1) & (cs->hcap - 1)) {
		int32_t idx = cs->hash[i];
		if (idx < 0)
			return -1;
		if (cs->v[idx].info.pid == pid)
			return idx;
	}
}

static int rehash(struct candset *cs, size_t hcap)
{
	int32_t *h = malloc(hcap * sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, hcap * sizeof *h);
	free(cs->hash);
	cs->hash = h;
	cs->hcap = hcap;
	for (size_t k = 0; k < cs->n; k++) {
		size_t i = slot(cs->v[k].info.pid, hcap);
		while (h[i] >= 0 && cs->v[h[i]].info.pid != cs->v[k].info.pid)
			i = (i + 1) & (hcap - 1);
		h[i] = (int32_t)k; /* later entries (newer identities of a pid) win */
	}
	return 0;
}

/* Append c (taking its strings); the pid now maps to it. Returns its index or -errno. */
ssize_t candset_add(struct candset *cs, const struct cand *c)
{
	if (ARRAY_RESERVE(cs->v, cs->cap, cs->n + 1, 64) < 0)
		return -ENOMEM;
	if ((cs->n + 1) * 2 > cs->hcap && rehash(cs, cs->hcap ? cs->hcap * 2 : 128) < 0)
		return -ENOMEM;
	size_t idx = cs->n++;
	cs->v[idx] = *c;
	size_t i = slot(c->info.pid, cs->hcap);
	while (cs->hash[i] >= 0 && cs->v[cs->hash[i]].info.pid != c->info.pid)
		i = (i + 1) & (cs->hcap - 1);
	cs->hash[i] = (int32_t)idx;
	if (c->live)
		cs->live++;
	if (c->ref.fd >= 0)
		cs->pidfds++;
	return (ssize_t)idx;
}

void cand_unpin(struct candset *cs, struct cand *c)
{
	if (c->ref.fd >= 0 && cs->pidfds)
		cs->pidfds--;
	pidref_done(&c->ref);
}

void cand_clear(struct cand *c)
{
	pidref_done(&c->ref);
	proc_free(&c->info);
}

static int fd_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Close the candidates' pidfds: a listing holds one per match, mostly at consecutive numbers,
 * and a run of them goes in one close_range (each number of it is one of ours). */
static void close_pidfds(struct candset *cs)
{
	int *fds = cs->pidfds > 1 ? malloc(cs->n * sizeof *fds) : NULL;
	size_t n = 0;
	for (size_t i = 0; i < cs->n && fds; i++)
		if (cs->v[i].ref.fd >= 0) {
			fds[n++] = cs->v[i].ref.fd;
			cs->v[i].ref.fd = -1;
		}
	if (n)
		qsort(fds, n, sizeof *fds, fd_cmp);
	for (size_t i = 0, j; i < n; i = j + 1) {
		for (j = i; j + 1 < n && fds[j + 1] == fds[j] + 1;)
			j++;
		if (j == i || syscall(SYS_close_range, (unsigned)fds[i], (unsigned)fds[j], 0) < 0)
			for (size_t k = i; k <= j; k++)
				close(fds[k]);
	}
	free(fds);
}

void candset_free(struct candset *cs)
{
	close_pidfds(cs);
	for (size_t i = 0; i < cs->n; i++)
		cand_clear(&cs->v[i]);
	free(cs->v);
	free(cs->hash);
	memset(cs, 0, sizeof *cs);
}
