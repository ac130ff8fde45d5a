/* SPDX-License-Identifier: MIT */
/* why: see why.h. Everything is read from /proc: the dispositions and TracerPid from status,
 * the wait channel from wchan, state and terminal from stat. A library that dlopens a /proc
 * parser (libproc2) cannot be linked statically, and the command starts in front of every
 * suite it wraps: it is linked statically for that start. */
#define _GNU_SOURCE
#include "why.h"
#include "procfs.h"
#include "sbuf.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

struct why {
	struct sbuf buf;
};

struct why *why_new(void)
{
	return calloc(1, sizeof(struct why));
}

void why_free(struct why *w)
{
	if (!w)
		return;
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

/* The hex mask after "\nNAME:" in a status text, 0 when absent. */
static unsigned long long status_mask(const char *status, const char *name)
{
	const char *t = strstr(status, name);
	return t ? strtoull(t + strlen(name), NULL, 16) : 0;
}

/* Whether every thread of p blocks SIGTERM (bit): a process-directed signal goes to any
 * thread that does not, so one is enough to take it. status is the main thread's; the
 * others' are read only when there are others. */
static int term_blocked(int procfd, pid_t pid, const char *status, unsigned long long bit)
{
	if (!(status_mask(status, "\nSigBlk:") & bit))
		return 0;
	const char *t = strstr(status, "\nThreads:");
	if (!t || atoi(t + 10) <= 1)
		return 1;
	char path[40];
	snprintf(path, sizeof path, procfd >= 0 ? "%d/task" : "/proc/%d/task", (int)pid);
	int fd = openat(procfd >= 0 ? procfd : AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	struct sbuf b = { 0 };
	int all = 1;
	for (struct dirent *e; all && (e = readdir(d));) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char what[300];
		snprintf(what, sizeof what, "task/%s/status", e->d_name);
		/* a thread gone meanwhile takes nothing; one unreadable may */
		ssize_t n = procfs_read(procfd, pid, what, &b);
		if (n > 0 ? !(status_mask(b.p, "\nSigBlk:") & bit) : n != -ENOENT && n != -ESRCH)
			all = 0;
	}
	sbuf_free(&b);
	closedir(d);
	return all;
}

/* What status says of p: SIGTERM's disposition and TracerPid. 1 read, -errno not. */
static int from_status(struct why *w, int procfd, pid_t pid, uint32_t *why, pid_t *tracer)
{
	ssize_t n = procfs_read(procfd, pid, "status", &w->buf);
	if (n <= 0)
		return n < 0 ? (int)n : -ESRCH;
	/* the masks are hex words, SIGTERM's bit is (SIGTERM - 1) */
	unsigned long long bit = 1ULL << (SIGTERM - 1);
	if (status_mask(w->buf.p, "\nSigIgn:") & bit)
		*why |= REAPER_WHY_TERM_IGNORED;
	else if (status_mask(w->buf.p, "\nSigCgt:") & bit)
		*why |= REAPER_WHY_TERM_CAUGHT;
	if (!(*why & REAPER_WHY_TERM_IGNORED) && term_blocked(procfd, pid, w->buf.p, bit))
		*why |= REAPER_WHY_TERM_BLOCKED;
	const char *t = strstr(w->buf.p, "\nTracerPid:");
	*tracer = t ? (pid_t)atoi(t + 11) : 0;
	return 1;
}

/* The kernel function p sleeps in: "" when running ("0") or unreadable (no permission). */
static char *wchan_of(struct why *w, int procfd, pid_t pid)
{
	ssize_t n = procfs_read(procfd, pid, "wchan", &w->buf);
	const char *s = n > 0 ? w->buf.p : "";
	if (!strcmp(s, "0") || !strcmp(s, "-"))
		s = "";
	return strdup(s);
}

/* The name under /dev of terminal dev (stat's tty_nr), as ps shows it ("pts/3", "tty1",
 * "ttyS0"); for another driver, the name of a descriptor 0-2 of p open on that device; ""
 * for none, or when no name can be had. */
static char *tty_of(int procfd, pid_t pid, uint64_t dev)
{
	unsigned maj = major((dev_t)dev), min = minor((dev_t)dev);
	char name[64] = "";
	if (!dev)
		;
	else if (maj >= 136 && maj <= 143) /* Unix98 pty slaves */
		snprintf(name, sizeof name, "pts/%u", (maj - 136) * 256 + min);
	else if (maj == 4 && min < 64)
		snprintf(name, sizeof name, "tty%u", min);
	else if (maj == 4)
		snprintf(name, sizeof name, "ttyS%u", min - 64);
	else
		for (int fd = 0; fd <= 2 && !name[0]; fd++) {
			char what[16];
			snprintf(what, sizeof what, "fd/%d", fd);
			char *link = procfs_link(procfd, pid, what);
			struct stat sb;
			if (link && !strncmp(link, "/dev/", 5) && stat(link, &sb) == 0 && S_ISCHR(sb.st_mode) &&
			    major(sb.st_rdev) == maj && minor(sb.st_rdev) == min)
				snprintf(name, sizeof name, "%s", link + 5);
			free(link);
		}
	return strdup(name);
}
static void reasons(struct sbuf *b, const struct reaper_proc *p)
{
	const char *sep = "";
#define SAY(...) (sbuf_puts(b, sep), sbuf_printf(b, __VA_ARGS__), sep = "; ")
	if (p->why & REAPER_WHY_TERM_IGNORED)
		SAY("ignores SIGTERM");
	if (p->why & REAPER_WHY_TERM_BLOCKED)
		SAY("blocks SIGTERM (every thread): it stays pending");
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
	int r = from_status(w, procfd, p->pid, &why, &tracer);
	if (r == 1) {
		wchan = wchan_of(w, procfd, p->pid);
		why |= REAPER_WHY_READ_SIGNALS;
		if (wchan && *wchan)
			why |= REAPER_WHY_WAITS;
	}
	/* all of it read while the pid was still this process's, or none of it is used; the
	 * terminal's name from a descriptor is read after, so the pid is looked at once more */
	struct reaper_stat st;
	int gone = r == -ENOENT || r == -ESRCH || procfs_stat(procfd, p->pid, &st) < 0 ||
		   st.start_time != p->start_time;
	if (!gone && r == 1) {
		tty = tty_of(procfd, p->pid, st.tty_nr);
		struct reaper_stat again;
		gone = procfs_stat(procfd, p->pid, &again) < 0 || again.start_time != p->start_time;
	}
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
	if (!p->wchan || !p->tty || !p->why_text) {
		why_clear(p);
		return;
	}
	p->why_read = 1;
}
