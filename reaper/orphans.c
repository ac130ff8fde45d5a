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

/* The collector thread: one per process, started and stopped by that process only. A forked
 * child inherits the record of its parent's thread, not the thread: its stop must not wake the
 * parent's, and its start closes what it inherited. bg_lock is held only to read or swap the
 * record (never over a join), and across a fork (pthread_atfork), so a child never inherits it
 * held by a thread it does not have. */
struct bg {
	pthread_t thread;
	int wake[2];
	int period_ms;
	long collected; /* written by the thread, read once it is joined */
	struct reaper_orphans *o;
};

static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t bg_once = PTHREAD_ONCE_INIT;
static struct bg *bg;  /* the running thread's record */
static struct bg *bg_inherited; /* a parent's, in a child that started its own */
static pid_t bg_owner; /* the process it runs in (another: inherited by a fork) */

static void bg_prepare(void)
{
	pthread_mutex_lock(&bg_lock);
}

static void bg_release(void)
{
	pthread_mutex_unlock(&bg_lock);
}

static void bg_at_fork(void)
{
	pthread_atfork(bg_prepare, bg_release, bg_release);
}

static void *bg_main(void *arg)
{
	struct bg *b = arg;
	struct pollfd p = { .fd = b->wake[0], .events = POLLIN };
	for (;;) {
		int r = poll(&p, 1, b->period_ms);
		if (r > 0 || (r < 0 && errno != EINTR))
			break; /* told to stop (or the pipe is gone) */
		r = reaper_orphans_collect(b->o, NULL, 0);
		if (r > 0)
			b->collected += r;
	}
	reaper_orphans_close(b->o);
	return NULL;
}

int reaper_orphans_start(double period)
{
	sigset_t all, before;
	int r;
	if (!(period >= 0.001 && period <= 3600))
		return -EINVAL;
	pthread_once(&bg_once, bg_at_fork);
	/* everything made under the lock, so no fork copies it half made */
	pthread_mutex_lock(&bg_lock);
	struct bg *b = calloc(1, sizeof *b);
	if (!b) {
		pthread_mutex_unlock(&bg_lock);
		return -ENOMEM;
	}
	b->period_ms = (int)(period * 1000);
	if (bg && bg_owner == getpid()) {
		r = -EBUSY;
		goto fail;
	}
	if (bg) {
		/* a parent's, inherited by fork: its pipe's ends are copies to close; the record is
		 * kept as it is (its handle may have been mid-change when the fork copied it) */
		close(bg->wake[0]);
		close(bg->wake[1]);
		bg_inherited = bg;
		bg = NULL;
	}
	if ((r = reaper_orphans_open(&b->o)) < 0)
		goto fail;
	if (pipe2(b->wake, O_CLOEXEC) < 0) {
		r = -errno;
		reaper_orphans_close(b->o);
		goto fail;
	}
	/* the thread takes no signal: the caller's are handled where it expects them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &before);
	r = -pthread_create(&b->thread, NULL, bg_main, b);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	if (r < 0) {
		close(b->wake[0]);
		close(b->wake[1]);
		reaper_orphans_close(b->o);
		goto fail;
	}
	bg = b;
	bg_owner = getpid();
	pthread_mutex_unlock(&bg_lock);
	return 0;
fail:
	pthread_mutex_unlock(&bg_lock);
	free(b);
	return r;
}

long reaper_orphans_stop(void)
{
	struct bg *b = NULL;
	pthread_once(&bg_once, bg_at_fork);
	pthread_mutex_lock(&bg_lock);
	if (bg && bg_owner == getpid()) {
		b = bg;
		bg = NULL;
	}
	pthread_mutex_unlock(&bg_lock);
	if (!b)
		return -ESRCH;
	char c = 1;
	while (write(b->wake[1], &c, 1) < 0 && errno == EINTR)
		;
	pthread_join(b->thread, NULL);
	close(b->wake[0]);
	close(b->wake[1]);
	long n = b->collected;
	free(b);
	return n;
}
