/* SPDX-License-Identifier: MIT */
/* why: see why.h. libproc2 is opened with dlopen, not linked: it brings libsystemd and its
 * compression and crypto libraries along, which every program that links libreaper (and the
 * command, at every start) would load for nothing when nothing leaks. */
#define _GNU_SOURCE
#include "why.h"
#include "procfs.h"
#include "sbuf.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<libproc2/pids.h>)
#include <libproc2/pids.h>
#define WHY_LIBPROC2 1
#endif
#endif

struct why {
	int tried;            /* libproc2 was looked for */
	void *dl;             /* its handle, NULL when it is not there */
#ifdef WHY_LIBPROC2
	int (*pids_new)(struct pids_info **, enum pids_item *, int);
	struct pids_fetch *(*pids_select)(struct pids_info *, unsigned *, int, enum pids_select_type);
	int (*pids_unref)(struct pids_info **);
	struct pids_info *info;
#endif
	struct sbuf buf;
};

#ifdef WHY_LIBPROC2
/* The items, in the order PIDS_VAL reads them. */
enum { I_PID, I_BEGAN, I_STATE, I_SIGIGN, I_SIGCGT, I_WCHAN, I_TTY, I_N };
static enum pids_item items[I_N] = {
	[I_PID] = PIDS_ID_PID,        [I_BEGAN] = PIDS_TICS_BEGAN,  [I_STATE] = PIDS_STATE,
	[I_SIGIGN] = PIDS_SIGIGNORE,  [I_SIGCGT] = PIDS_SIGCATCH,   [I_WCHAN] = PIDS_WCHAN_NAME,
	[I_TTY] = PIDS_TTY_NAME,
};
#endif

struct why *why_new(void)
{
	return calloc(1, sizeof(struct why));
}

static int load(struct why *w)
{
	if (w->tried)
		return w->dl != NULL;
	w->tried = 1;
#ifdef WHY_LIBPROC2
	/* never unloaded (NODELETE): its per-thread buffers stay its own, reachable */
	w->dl = dlopen("libproc2.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!w->dl)
		return 0;
	*(void **)&w->pids_new = dlsym(w->dl, "procps_pids_new");
	*(void **)&w->pids_select = dlsym(w->dl, "procps_pids_select");
	*(void **)&w->pids_unref = dlsym(w->dl, "procps_pids_unref");
	if (!w->pids_new || !w->pids_select || !w->pids_unref || w->pids_new(&w->info, items, I_N) < 0) {
		w->info = NULL;
		dlclose(w->dl);
		w->dl = NULL;
	}
#endif
	return w->dl != NULL;
}

int why_libproc2(struct why *w)
{
	if (w)
		return load(w);
	struct why *t = why_new();
	int r = t && load(t);
	why_free(t);
	return r;
}

void why_free(struct why *w)
{
	if (!w)
		return;
#ifdef WHY_LIBPROC2
	if (w->info)
		w->pids_unref(&w->info);
#endif
	if (w->dl)
		dlclose(w->dl);
	sbuf_free(&w->buf);
	free(w);
}

void why_clear(struct reaper_proc *p)
{
	free(p->wchan);
	free(p->tty);
	free(p->why_text);
	p->wchan = p->tty = p->why_text = NULL;
	p->why = 0;
	p->tracer = 0;
	p->why_read = 0;
}

/* What libproc2 says of p: 1 read (SIGTERM's disposition, wchan, tty), 0 libproc2 is not
 * there, -ESRCH gone or its pid is another process's now, -ENOMEM. */
static int from_libproc2(struct why *w, const struct reaper_proc *p, uint32_t *why, char **wchan, char **tty)
{
#ifdef WHY_LIBPROC2
	if (!load(w))
		return 0;
	unsigned pid = (unsigned)p->pid;
	struct pids_fetch *f = w->pids_select(w->info, &pid, 1, PIDS_SELECT_PID);
	if (!f || !f->counts || f->counts->total < 1 || !f->stacks || !f->stacks[0])
		return -ESRCH;
	struct pids_stack *s = f->stacks[0];
	if (PIDS_VAL(I_PID, s_int, s, w->info) != (int)p->pid ||
	    PIDS_VAL(I_BEGAN, ull_int, s, w->info) != (unsigned long long)p->start_time)
		return -ESRCH;
	/* the masks are hex words, SIGTERM's bit is (SIGTERM - 1) */
	const char *ign = PIDS_VAL(I_SIGIGN, str, s, w->info), *cgt = PIDS_VAL(I_SIGCGT, str, s, w->info);
	unsigned long long bit = 1ULL << (SIGTERM - 1);
	if (ign && strtoull(ign, NULL, 16) & bit)
		*why |= REAPER_WHY_TERM_IGNORED;
	else if (cgt && strtoull(cgt, NULL, 16) & bit)
		*why |= REAPER_WHY_TERM_CAUGHT;
	const char *wc = PIDS_VAL(I_WCHAN, str, s, w->info), *tt = PIDS_VAL(I_TTY, str, s, w->info);
	/* "-" and "0": running, or no wait channel shown */
	if (!wc || !strcmp(wc, "-") || !strcmp(wc, "0"))
		wc = "";
	if (!tt || !strcmp(tt, "?") || !strcmp(tt, "-"))
		tt = "";
	*wchan = strdup(wc);
	*tty = strdup(tt);
	if (!*wchan || !*tty)
		return -ENOMEM;
	*why |= REAPER_WHY_READ_SIGNALS;
	if (**wchan)
		*why |= REAPER_WHY_WAITS;
	return 1;
#else
	(void)w, (void)p, (void)why, (void)wchan, (void)tty;
	return 0;
#endif
}

/* TracerPid from /proc/PID/status (libproc2 has no item for it); 0 when none or unreadable. */
static pid_t tracer_of(struct why *w, int procfd, pid_t pid)
{
	ssize_t n = procfs_read(procfd, pid, "status", &w->buf);
	const char *t = n > 0 ? strstr(w->buf.p, "\nTracerPid:") : NULL;
	return t ? (pid_t)atoi(t + 11) : 0;
}

static void reasons(struct sbuf *b, const struct reaper_proc *p)
{
	const char *sep = "";
#define SAY(...) (sbuf_puts(b, sep), sbuf_printf(b, __VA_ARGS__), sep = "; ")
	if (p->why & REAPER_WHY_TERM_IGNORED)
		SAY("ignores SIGTERM");
	if (p->why & REAPER_WHY_TERM_CAUGHT)
		SAY("catches SIGTERM (its handler may not exit)");
	if (p->why & REAPER_WHY_STOPPED)
		SAY("stopped (state T): no signal but SIGKILL acts before SIGCONT");
	if (p->why & REAPER_WHY_TRACED) {
		if (p->tracer)
			SAY("traced by pid %d", (int)p->tracer);
		else
			SAY("in a tracing stop (state t)");
	}
	if (p->why & REAPER_WHY_WAITS)
		SAY("waits in %s", p->wchan);
	/* the run's output is named with the holdings; its stdin is what a reader waits on */
	if (p->why & REAPER_WHY_INPUT)
		SAY("holds the run's stdin");
#undef SAY
}

void why_gather(struct why *w, int procfd, struct reaper_proc *p)
{
	if (!w || p->why_read)
		return;
	uint32_t why = 0;
	char *wchan = NULL, *tty = NULL;
	pid_t tracer = 0;
	int r = from_libproc2(w, p, &why, &wchan, &tty);
	if (r != -ESRCH && r != -ENOMEM)
		tracer = tracer_of(w, procfd, p->pid);
	/* all of it read while the pid was still this process's, or none of it is used */
	struct reaper_stat st;
	int gone = r == -ESRCH || procfs_stat(procfd, p->pid, &st) < 0 || st.start_time != p->start_time;
	if (gone) {
		why = 0, tracer = 0;
		free(wchan), free(tty);
		wchan = tty = NULL;
	} else {
		if (st.state == 'T')
			why |= REAPER_WHY_STOPPED;
		if (st.state == 't' || tracer > 0)
			why |= REAPER_WHY_TRACED;
		/* a stopped process waits in its stop, not in what it was doing */
		if (why & (REAPER_WHY_STOPPED | REAPER_WHY_TRACED))
			why &= ~(uint32_t)REAPER_WHY_WAITS;
	}
	for (size_t i = 0; !gone && i < p->nholdings; i++)
		why |= p->holdings[i].kind == REAPER_HOLD_OUTPUT ? REAPER_WHY_OUTPUT
		       : p->holdings[i].kind == REAPER_HOLD_INPUT ? REAPER_WHY_INPUT
								  : 0;
	p->why = why;
	p->tracer = tracer > 0 ? tracer : 0;
	p->wchan = wchan ? wchan : strdup("");
	p->tty = tty ? tty : strdup("");
	struct sbuf b = { 0 };
	if (gone)
		sbuf_puts(&b, "not looked at: it exited meanwhile");
	else
		reasons(&b, p);
	p->why_text = b.oom ? NULL : strdup(sbuf_str(&b));
	sbuf_free(&b);
	if (r == -ENOMEM || !p->wchan || !p->tty || !p->why_text) {
		why_clear(p);
		return;
	}
	p->why_read = 1;
}
