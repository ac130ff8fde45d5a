/* SPDX-License-Identifier: MIT */
/* cgmove: a process moved into a cgroup by its identity, alone or with what it forked before
 * the move (see reaper.h). A pid is written to cgroup.procs only while its pidfd says it is
 * still the process pinned. */
#define _GNU_SOURCE
#include "reaper.h"
#include "array.h"
#include "cgroup.h"
#include "kin.h"
#include "pidref.h"
#include "procfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOVE_LOOKS 100 /* bound on the looks for what the tree forked meanwhile */

int reaper_cgroup_move(const char *path, const struct reaper_ident *id)
{
	struct pidref ref;
	char pid[24];
	if (!path || !id || id->pid <= 0)
		return -EINVAL;
	int r = pidref_open(&ref, -1, id->pid, id->start_time);
	if (r < 0)
		return r;
	snprintf(pid, sizeof pid, "%d", (int)id->pid);
	r = pidref_held(&ref, -1) < 0 ? -ESRCH : cgroup_write(path, "cgroup.procs", pid);
	/* a process that exited after it was pinned cannot be moved: it is gone, not refused */
	if (r < 0 && pidref_exited(&ref, -1))
		r = -ESRCH;
	pidref_done(&ref);
	return r;
}

/* The walk's processes (but its root), and the members of the from cgroups. */
struct tree {
	struct reaper_ident root;
	struct reaper_pstat *v;
	size_t n, cap;
	pid_t *members;
	size_t nm, cm;
};

static int gather(void *ctx, const struct reaper_pstat *ps)
{
	struct tree *t = ctx;
	if (ps->pid == t->root.pid && ps->start_time == t->root.start_time)
		return 0;
	if (ARRAY_RESERVE(t->v, t->cap, t->n + 1, 16) < 0)
		return -ENOMEM;
	t->v[t->n++] = *ps;
	return 0;
}

/* The pids in each from cgroup itself (cgroup.procs, not the cgroups below). */
static int members(struct tree *t, const char *const *from, size_t nfrom, struct sbuf *b)
{
	t->nm = 0;
	for (size_t i = 0; i < nfrom; i++) {
		char path[4096];
		if (!from[i] || snprintf(path, sizeof path, "%s/cgroup.procs", from[i]) >= (int)sizeof path)
			continue;
		ssize_t n = procfs_read_file(-1, path, b);
		if (n > 0 && procfs_parse_pids(b->p, (size_t)n, &t->members, &t->nm, &t->cm) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int member(const struct tree *t, pid_t pid)
{
	for (size_t i = 0; i < t->nm; i++)
		if (t->members[i] == pid)
			return 1;
	return 0;
}

int reaper_cgroup_move_tree(const char *path, const struct reaper_ident *id, const char *const *from, size_t nfrom)
{
	if (!path || !id || (!from && nfrom))
		return -EINVAL;
	int r = reaper_cgroup_move(path, id), moved = 0;
	if (r < 0)
		return r;
	moved++;
	struct tree t = { .root = *id };
	struct sbuf b = { 0 };
	for (int look = 0; r >= 0 && look < MOVE_LOOKS && nfrom; look++) {
		t.n = 0;
		if ((r = kin_walk(id, 1, 1, gather, &t)) < 0 || (r = members(&t, from, nfrom, &b)) < 0)
			break;
		int left = 0;
		for (size_t i = 0; r >= 0 && i < t.n; i++) {
			if (!member(&t, t.v[i].pid))
				continue;
			left = 1;
			struct reaper_ident kid = { t.v[i].pid, t.v[i].start_time };
			int m = reaper_cgroup_move(path, &kid);
			if (m == 0)
				moved++;
			else if (m != -ESRCH)
				r = m;
		}
		if (!left)
			break;
	}
	free(t.v);
	free(t.members);
	sbuf_free(&b);
	return r < 0 ? r : moved;
}
