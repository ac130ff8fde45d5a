/* SPDX-License-Identifier: MIT */
/* kin: a pid's stat, environment and children, the trees below given roots and the last pid
 * given out, for a harness that follows the processes it starts. A tree is walked the way the tree finder walks it: a process's
 * children are taken only while the process is still the one pinned before they were listed,
 * and each child only while its stat still names that parent. */
#define _GNU_SOURCE
#include "reaper.h"
#include "array.h"
#include "kin.h"
#include "pidref.h"
#include "procfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void pstat_of(const struct reaper_stat *st, struct reaper_pstat *out)
{
	*out = (struct reaper_pstat){ .pid = st->pid, .ppid = st->ppid, .pgrp = st->pgrp, .session = st->session,
				      .start_time = st->start_time, .state = st->state };
}

int reaper_pstat(pid_t pid, struct reaper_pstat *out)
{
	struct reaper_stat st;
	if (pid < 0 || !out)
		return -EINVAL;
	int r = procfs_stat(-1, pid ? pid : getpid(), &st);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	pstat_of(&st, out);
	return 0;
}

/* Pin pid (pidfd and stat): without descriptors left, by its stat alone (every later use
 * re-checks the start time). */
static int pin(struct pidref *ref, pid_t pid, struct reaper_stat *st)
{
	int r = pidref_open_stat(ref, -1, pid, st);
	if (r == -EMFILE || r == -ENFILE)
		r = pidref_pin_stat(ref, -1, pid, st);
	return r;
}

/* The pids parent's threads list as children, into k->pids (*nk of them), while parent is
 * still the process pinned (the caller's own pid: start time 0). */
static int list_kids(const struct pidref *parent, struct kin *k, size_t *nk)
{
	int failed = 0;
	*nk = 0;
	int r = procfs_children(-1, parent->pid, &k->buf, &k->pids, nk, &k->pcap, &failed);
	if (r < 0)
		return r;
	if (failed == -EMFILE || failed == -ENFILE || failed == -ENOMEM)
		return failed;
	/* the list is this process's only if it still is the one pinned after the read */
	if (parent->start_time && pidref_held(parent, -1) < 0)
		return -ESRCH;
	return 0;
}

int kin_children(const struct pidref *parent, struct kin *k)
{
	size_t nk;
	k->n = 0;
	int r = list_kids(parent, k, &nk);
	if (r < 0)
		return r;
	if (ARRAY_RESERVE(k->v, k->cap, nk, 16) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < nk; i++) {
		struct reaper_stat st;
		if (procfs_stat(-1, k->pids[i], &st) == 0 && st.ppid == parent->pid)
			pstat_of(&st, &k->v[k->n++]);
	}
	return 0;
}

void kin_done(struct kin *k)
{
	free(k->pids);
	free(k->v);
	sbuf_free(&k->buf);
	memset(k, 0, sizeof *k);
}

/* Up to cap of n entries of v into out; how many there are. */
static int hand_out(const struct reaper_pstat *v, size_t n, struct reaper_pstat *out, size_t cap)
{
	if (n > (size_t)INT32_MAX)
		return -E2BIG;
	if (out)
		memcpy(out, v, (n < cap ? n : cap) * sizeof *v);
	return (int)n;
}

int reaper_children(pid_t pid, struct reaper_pstat *out, size_t cap)
{
	if (pid < 0 || (!out && cap))
		return -EINVAL;
	struct pidref parent = PIDREF_NULL;
	struct reaper_stat st;
	int r;
	if (pid == 0 || pid == getpid())
		parent.pid = getpid(); /* the caller: it cannot be another process meanwhile */
	else if ((r = pin(&parent, pid, &st)) < 0)
		return r;
	struct kin k = { 0 };
	r = kin_children(&parent, &k);
	if (r == 0)
		r = hand_out(k.v, k.n, out, cap);
	kin_done(&k);
	pidref_done(&parent);
	return r;
}

/* A process of the walk: what its stat said, and its pin while its children are still to be
 * listed. */
struct node {
	struct reaper_pstat ps;
	struct pidref ref;
};

static int seen(const struct node *v, size_t n, const struct reaper_pstat *ps)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].ps.pid == ps->pid && v[i].ps.start_time == ps->start_time)
			return 1;
	return 0;
}

/* Pin pid as a node of the walk when it is a process of the tree: parent's child (and,
 * live_only, not a zombie), not among the first nroots of v (a process has one parent: only a
 * root can be met twice). 1 appended, 0 not, -errno. */
static int take(struct node **v, size_t *n, size_t *cap, size_t nroots, pid_t pid, uint64_t start_time,
		pid_t parent, int live_only)
{
	struct reaper_stat st;
	struct node nd;
	int r = pin(&nd.ref, pid, &st);
	if (r < 0)
		return r == -ESRCH ? 0 : r;
	pstat_of(&st, &nd.ps);
	if ((start_time && st.start_time != start_time) || (parent && st.ppid != parent) ||
	    (live_only && st.state == 'Z') || seen(*v, nroots, &nd.ps)) {
		pidref_done(&nd.ref);
		return 0;
	}
	if (ARRAY_RESERVE(*v, *cap, *n + 1, 16) < 0) {
		pidref_done(&nd.ref);
		return -ENOMEM;
	}
	(*v)[(*n)++] = nd;
	return 1;
}

int kin_walk(const struct reaper_ident *roots, size_t nroots, int live_only, kin_visit_fn visit, void *ctx)
{
	struct node *v = NULL;
	size_t n = 0, cap = 0;
	struct kin k = { 0 };
	int r = 0;
	for (size_t i = 0; r >= 0 && i < nroots; i++)
		if (roots[i].pid > 0 && roots[i].start_time)
			r = take(&v, &n, &cap, n, roots[i].pid, roots[i].start_time, 0, live_only);
	size_t nr = n;
	/* each node's children after it: the roots first, then the walk in order; a root below
	 * another root is walked once, from where it was pinned first */
	for (size_t i = 0; r >= 0 && i < n; i++) {
		size_t nk = 0;
		int kr = list_kids(&v[i].ref, &k, &nk);
		pidref_done(&v[i].ref);
		if (kr == -EMFILE || kr == -ENFILE || kr == -ENOMEM) {
			r = kr;
			break;
		}
		for (size_t c = 0; kr == 0 && r >= 0 && c < nk; c++)
			r = take(&v, &n, &cap, nr, k.pids[c], 0, v[i].ps.pid, live_only);
		if (r >= 0 && visit)
			r = visit(ctx, &v[i].ps);
	}
	for (size_t i = 0; i < n; i++)
		pidref_done(&v[i].ref);
	free(v);
	kin_done(&k);
	return r < 0 ? r : 0;
}

struct collected {
	struct reaper_pstat *out;
	size_t cap, n;
};

static int gather(void *ctx, const struct reaper_pstat *ps)
{
	struct collected *c = ctx;
	if (c->n < c->cap)
		c->out[c->n] = *ps;
	if (++c->n > (size_t)INT32_MAX)
		return -E2BIG;
	return 0;
}

int reaper_descendants(const struct reaper_ident *roots, size_t nroots, struct reaper_pstat *out, size_t cap)
{
	if ((!roots && nroots) || (!out && cap))
		return -EINVAL;
	struct collected c = { out, cap, 0 };
	int r = kin_walk(roots, nroots, 0, gather, &c);
	return r < 0 ? r : (int)c.n;
}

pid_t reaper_last_pid(void)
{
	struct sbuf b = { 0 };
	ssize_t n = procfs_read_file(-1, "/proc/sys/kernel/ns_last_pid", &b);
	char *end = NULL;
	long v = n > 0 ? strtol(b.p, &end, 10) : 0;
	pid_t r = n < 0 ? (pid_t)n : end && end != b.p && v >= 0 && v <= INT32_MAX ? (pid_t)v : -EINVAL;
	sbuf_free(&b);
	return r;
}

ssize_t reaper_environ(pid_t pid, char *buf, size_t cap)
{
	struct sbuf b = { 0 };
	if (pid < 0 || (!buf && cap))
		return -EINVAL;
	ssize_t n = procfs_read(-1, pid ? pid : getpid(), "environ", &b);
	if (n == -ENOENT)
		n = -ESRCH;
	if (n > 0 && buf)
		memcpy(buf, b.p, (size_t)n < cap ? (size_t)n : cap);
	sbuf_free(&b);
	return n;
}
