/* SPDX-License-Identifier: MIT */
/* report: the result of a reap, and the small value helpers of the public API. */
#define _GNU_SOURCE
#include "report.h"
#include "holdings.h"
#include "why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reaper_finder reaper_find_env(const char *marker)
{
	return (struct reaper_finder){ .kind = REAPER_FIND_ENV, .marker = marker };
}

struct reaper_finder reaper_find_tree(pid_t root)
{
	return (struct reaper_finder){ .kind = REAPER_FIND_TREE, .root = root };
}

struct reaper_finder reaper_find_call(int (*find)(void *ctx, struct reaper_ident *out, size_t cap), void *ctx)
{
	return (struct reaper_finder){ .kind = REAPER_FIND_CALL, .find = find, .find_ctx = ctx };
}

struct reaper_finder reaper_find_cgroup(const char *path)
{
	return (struct reaper_finder){ .kind = REAPER_FIND_CGROUP, .cgroup = path };
}

const char *reaper_fate_name(enum reaper_fate f)
{
	static const char *const names[] = {
		[REAPER_ALIVE] = "alive",           [REAPER_EXITED] = "exited",
		[REAPER_TERMINATED] = "terminated", [REAPER_KILLED] = "killed",
		[REAPER_UNKILLABLE] = "unkillable", [REAPER_ZOMBIE_HELD] = "zombie-held",
		[REAPER_KEPT] = "kept",             [REAPER_GONE] = "gone",
		[REAPER_FOREIGN] = "foreign",       [REAPER_MOVED_IN] = "moved-in",
	};
	return (unsigned)f < sizeof names / sizeof *names && names[f] ? names[f] : "unknown";
}

const char *reaper_hold_kind_name(enum reaper_hold_kind k)
{
	static const char *const names[] = {
		[REAPER_HOLD_LISTENING] = "listening", [REAPER_HOLD_CONNECTED] = "connected",
		[REAPER_HOLD_FILE] = "file",           [REAPER_HOLD_DELETED] = "deleted",
		[REAPER_HOLD_OUTPUT] = "output",       [REAPER_HOLD_UNREADABLE] = "unreadable",
		[REAPER_HOLD_INPUT] = "input",
	};
	return (unsigned)k < sizeof names / sizeof *names && names[k] ? names[k] : "unknown";
}

const char *reaper_version(void)
{
	return REAPER_VERSION;
}

int reaper_matched_by(const struct reaper_finder *f, size_t n, uint32_t mask, char *buf, size_t len)
{
	size_t used = 0;
	if (!len)
		return -EINVAL;
	buf[0] = 0;
	for (size_t i = 0; i < n && i < 32; i++) {
		if (!(mask & (1u << i)))
			continue;
		const char *sep = used ? ", " : "";
		int w = f[i].kind == REAPER_FIND_ENV ? snprintf(buf + used, len - used, "%senv %s", sep, f[i].marker)
			: f[i].kind == REAPER_FIND_CGROUP ? snprintf(buf + used, len - used, "%scgroup", sep)
			: f[i].kind == REAPER_FIND_CALL ? snprintf(buf + used, len - used, "%scall", sep)
			: f[i].root ? snprintf(buf + used, len - used, "%sdescendant of PID %d", sep, (int)f[i].root)
				    : snprintf(buf + used, len - used, "%sdescendant of the run", sep);
		if (w < 0 || (size_t)w >= len - used)
			return -ENOSPC;
		used += (size_t)w;
	}
	return 0;
}

void proc_free(struct reaper_proc *p)
{
	free(p->cmdline);
	free(p->comm);
	free(p->exe);
	free(p->cwd);
	free(p->test);
	free(p->ancestry);
	holdings_clear(p);
	why_clear(p);
	free(p->started_file);
	free(p->started_func);
	free(p->started_in_file);
	free(p->started_in_func);
	memset(p, 0, sizeof *p);
}

int reaper_proc_is_leak(const struct reaper_proc *p)
{
	if (p->allowed)
		return 0;
	return p->fate == REAPER_ALIVE || p->fate == REAPER_TERMINATED || p->fate == REAPER_KILLED ||
	       p->fate == REAPER_UNKILLABLE;
}

/* Add (sign 1) or take away (sign -1) p's share of the report's counts. */
static void count(struct reaper_report *r, const struct reaper_proc *p, int sign)
{
	size_t *by_fate[] = {
		[REAPER_EXITED] = &r->exited,         [REAPER_TERMINATED] = &r->terminated,
		[REAPER_KILLED] = &r->killed,         [REAPER_UNKILLABLE] = &r->unkillable,
		[REAPER_ZOMBIE_HELD] = &r->zombies_held, [REAPER_KEPT] = &r->kept,
		[REAPER_FOREIGN] = &r->foreign,       [REAPER_MOVED_IN] = &r->moved_in,
	};
	/* Each process counts once: a leak by its fate, a process an allow pattern kept from being
	 * one as allowed, anything else by its fate (an allowed one that exited in time too:
	 * it was never a leak). So leaks is the sum of the leaks' fates, and the counts add up to
	 * the processes found. */
	if (reaper_proc_is_leak(p))
		r->leaks += (size_t)sign;
	else if (p->allowed && (p->fate == REAPER_ALIVE || p->fate == REAPER_TERMINATED || p->fate == REAPER_KILLED ||
				p->fate == REAPER_UNKILLABLE)) {
		r->allowed += (size_t)sign;
		return;
	}
	if ((unsigned)p->fate < sizeof by_fate / sizeof *by_fate && by_fate[p->fate])
		*by_fate[p->fate] += (size_t)sign;
}

int reaper_report_remove(struct reaper_report *r, size_t i)
{
	if (!r || i >= r->n)
		return -EINVAL;
	count(r, &r->procs[i], -1);
	proc_free(&r->procs[i]);
	memmove(&r->procs[i], &r->procs[i + 1], (r->n - i - 1) * sizeof *r->procs);
	r->n--;
	return 0;
}

int report_build(struct candset *cs, size_t **hits, size_t npatterns, struct reaper_report **out)
{
	struct reaper_report *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	if (cs->n && !(r->procs = calloc(cs->n, sizeof *r->procs))) {
		free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cs->n; i++) {
		struct reaper_proc *p = &r->procs[r->n++];
		*p = cs->v[i].info;
		memset(&cs->v[i].info, 0, sizeof cs->v[i].info); /* strings now belong to the report */
		count(r, p, 1);
	}
	r->pattern_hits = *hits;
	r->npatterns = npatterns;
	*hits = NULL;
	*out = r;
	return 0;
}

void reaper_report_free(struct reaper_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		proc_free(&r->procs[i]);
	free(r->procs);
	free(r->pattern_hits);
	free(r);
}
