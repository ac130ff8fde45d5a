/* SPDX-License-Identifier: MIT */
/* orphans: a subreaper's collection of the zombies of the orphans it adopted, and only theirs
 * (see reaper.h). What a look saw running below a child of the caller's is remembered, sorted
 * by identity, until it is gone: an orphan that reparented to the caller and died between two
 * looks is known by it. */
#define _GNU_SOURCE
#include "reaper.h"
#include "array.h"
#include "kin.h"
#include "pidref.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BELOW_PRUNE 4096 /* past this many remembered, those gone are forgotten */

struct reaper_orphans {
	pthread_mutex_t lock;
	struct reaper_ident *below; /* sorted by pid, then start time */
	size_t n, cap;
	struct reaper_ident *seen;  /* what the current look saw below, unsorted */
	size_t nseen, cseen;
	struct reaper_ident *roots; /* the current look's live children */
	size_t croots;
	struct kin kin;
};

int reaper_orphans_open(struct reaper_orphans **out)
{
	struct reaper_orphans *o = calloc(1, sizeof *o);
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	*out = o;
	return 0;
}

void reaper_orphans_close(struct reaper_orphans *o)
{
	if (!o)
		return;
	pthread_mutex_destroy(&o->lock);
	free(o->below);
	free(o->seen);
	free(o->roots);
	kin_done(&o->kin);
	free(o);
}

static int ident_cmp(const void *a, const void *b)
{
	const struct reaper_ident *x = a, *y = b;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->start_time > y->start_time) - (x->start_time < y->start_time);
}

static int below_has(const struct reaper_orphans *o, const struct reaper_ident *id)
{
	return o->n && bsearch(id, o->below, o->n, sizeof *o->below, ident_cmp) != NULL;
}

/* Each process of a live child's tree but the child itself (a child of the caller's own). */
static int note(void *ctx, const struct reaper_pstat *ps)
{
	struct reaper_orphans *o = ctx;
	if (ps->ppid == getpid())
		return 0;
	if (ARRAY_RESERVE(o->seen, o->cseen, o->nseen + 1, 64) < 0)
		return -ENOMEM;
	o->seen[o->nseen++] = (struct reaper_ident){ ps->pid, ps->start_time };
	return 0;
}

/* What this look saw, merged into what the earlier ones did (sorted, each once). */
static int merge_seen(struct reaper_orphans *o)
{
	if (!o->nseen)
		return 0;
	if (ARRAY_RESERVE(o->below, o->cap, o->n + o->nseen, 64) < 0)
		return -ENOMEM;
	memcpy(o->below + o->n, o->seen, o->nseen * sizeof *o->seen);
	size_t n = o->n + o->nseen, w = 0;
	qsort(o->below, n, sizeof *o->below, ident_cmp);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || ident_cmp(&o->below[w - 1], &o->below[i]) != 0)
			o->below[w++] = o->below[i];
	o->n = w;
	o->nseen = 0;
	return 0;
}

static void forget(struct reaper_orphans *o, const struct reaper_ident *id)
{
	struct reaper_ident *at = o->n ? bsearch(id, o->below, o->n, sizeof *o->below, ident_cmp) : NULL;
	if (at) {
		memmove(at, at + 1, (size_t)(o->below + o->n - at - 1) * sizeof *at);
		o->n--;
	}
}

static void forget_gone(struct reaper_orphans *o)
{
	size_t w = 0;
	for (size_t i = 0; i < o->n; i++) {
		struct reaper_stat st;
		if (procfs_stat(-1, o->below[i].pid, &st) == 0 && st.start_time == o->below[i].start_time)
			o->below[w++] = o->below[i];
	}
	o->n = w;
}

static int owned(const struct reaper_ident *own, size_t nown, const struct reaper_pstat *ps)
{
	for (size_t i = 0; i < nown; i++)
		if (own[i].pid == ps->pid && own[i].start_time == ps->start_time)
			return 1;
	return 0;
}

static int look(struct reaper_orphans *o, const struct reaper_ident *own, size_t nown)
{
	struct pidref self = PIDREF_NULL;
	self.pid = getpid();
	pid_t session = getsid(0);
	int r = kin_children(&self, &o->kin), collected = 0;
	if (r < 0)
		return r;
	size_t nroots = 0;
	if (ARRAY_RESERVE(o->roots, o->croots, o->kin.n, 16) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < o->kin.n; i++)
		if (o->kin.v[i].state != 'Z')
			o->roots[nroots++] = (struct reaper_ident){ o->kin.v[i].pid, o->kin.v[i].start_time };
	/* the zombies first, judged by what earlier looks saw: a process that dies below a child
	 * after the listing above is judged at the next look, with this one's notes */
	for (size_t i = 0; i < o->kin.n; i++) {
		const struct reaper_pstat *ps = &o->kin.v[i];
		struct reaper_ident id = { ps->pid, ps->start_time };
		if (ps->state != 'Z' || owned(own, nown, ps))
			continue;
		if ((ps->session != session && ps->session != ps->pid) || below_has(o, &id)) {
			if (reaper_collect(&id, NULL) == 1)
				collected++;
			forget(o, &id);
		}
	}
	o->nseen = 0;
	if ((r = kin_walk(o->roots, nroots, 1, note, o)) < 0 || (r = merge_seen(o)) < 0)
		return r;
	if (o->n > BELOW_PRUNE)
		forget_gone(o);
	return collected;
}

int reaper_orphans_collect(struct reaper_orphans *o, const struct reaper_ident *own, size_t nown)
{
	if (!o || (!own && nown))
		return -EINVAL;
	pthread_mutex_lock(&o->lock);
	int r = look(o, own, nown);
	pthread_mutex_unlock(&o->lock);
	return r;
}

/* The collector thread: one per process, started and stopped by that process only (a forked
 * child inherits the state, not the thread, and its stop must not wake the parent's). */
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t bg_thread;
static pid_t bg_owner;       /* the process whose thread runs; 0: none */
static int bg_wake[2] = { -1, -1 };
static int bg_period_ms;
static long bg_collected;    /* written by the thread, read once it is joined */

static void *bg_main(void *arg)
{
	struct reaper_orphans *o = arg;
	struct pollfd p = { .fd = bg_wake[0], .events = POLLIN };
	for (;;) {
		int r = poll(&p, 1, bg_period_ms);
		if (r > 0 || (r < 0 && errno != EINTR))
			break; /* told to stop (or the pipe is gone) */
		r = reaper_orphans_collect(o, NULL, 0);
		if (r > 0)
			bg_collected += r;
	}
	reaper_orphans_close(o);
	return NULL;
}

int reaper_orphans_start(double period)
{
	struct reaper_orphans *o = NULL;
	sigset_t all, before;
	int r;
	if (!(period >= 0.001 && period <= 3600))
		return -EINVAL;
	pthread_mutex_lock(&bg_lock);
	if (bg_owner == getpid()) {
		r = -EBUSY;
		goto out;
	}
	bg_owner = 0; /* a parent's, inherited by fork: not this process's */
	if ((r = reaper_orphans_open(&o)) < 0)
		goto out;
	if (pipe2(bg_wake, O_CLOEXEC) < 0) {
		r = -errno;
		reaper_orphans_close(o);
		goto out;
	}
	bg_period_ms = (int)(period * 1000);
	bg_collected = 0;
	/* the thread takes no signal: the caller's are handled where it expects them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &before);
	r = -pthread_create(&bg_thread, NULL, bg_main, o);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	if (r < 0) {
		close(bg_wake[0]);
		close(bg_wake[1]);
		bg_wake[0] = bg_wake[1] = -1;
		reaper_orphans_close(o);
		goto out;
	}
	bg_owner = getpid();
out:
	pthread_mutex_unlock(&bg_lock);
	return r;
}

long reaper_orphans_stop(void)
{
	long r;
	pthread_mutex_lock(&bg_lock);
	if (bg_owner != getpid()) {
		r = -ESRCH;
	} else {
		char c = 1;
		while (write(bg_wake[1], &c, 1) < 0 && errno == EINTR)
			;
		pthread_join(bg_thread, NULL);
		close(bg_wake[0]);
		close(bg_wake[1]);
		bg_wake[0] = bg_wake[1] = -1;
		bg_owner = 0;
		r = bg_collected;
	}
	pthread_mutex_unlock(&bg_lock);
	return r;
}
