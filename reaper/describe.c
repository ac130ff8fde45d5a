/* SPDX-License-Identifier: MIT */
/* describe: see describe.h. */
#define _GNU_SOURCE
#include "describe.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PF_FORKNOEXEC 0x00000040 /* stat flags: forked, has not exec'd since */

/* What a process without arguments (a kernel thread, a zombie, one not described) shows as
 * its cmdline: "[comm]". */
static char *bracketed(const char *comm)
{
	char *s = NULL;
	return asprintf(&s, "[%s]", comm) < 0 ? NULL : s;
}

/* The length of the cmdline in b (n: the read's length, or -errno) without its trailing
 * NULs: 0 when it has none to show. */
static ssize_t cmdline_len(const struct sbuf *b, ssize_t n)
{
	while (n > 0 && b->p[n - 1] == 0)
		n--;
	return n;
}

/* The cmdline in b (n: the read's length, or -errno) as one line. */
static char *cmdline_text(struct sbuf *b, ssize_t n, const char *comm)
{
	n = cmdline_len(b, n);
	if (n <= 0)
		return bracketed(comm);
	for (ssize_t i = 0; i < n; i++)
		if (b->p[i] == 0)
			b->p[i] = ' ';
	return strndup(b->p, (size_t)n);
}

/* Where an ancestry ends: at the run's root, the caller (or one of its own ancestors, the
 * shells and makes above the run) or a tree finder's root; what is above is not the run's. */
static int ancestry_root(struct scanner *sc, pid_t p)
{
	if (p == 1 || reader_caller(&sc->rd, p))
		return 1;
	for (size_t i = 0; i < sc->nf; i++)
		if (sc->f[i].kind == REAPER_FIND_TREE && sc->f[i].root == p)
			return 1;
	return 0;
}

static char *ancestry_of(struct scanner *sc, const struct reaper_stat *st)
{
	struct pass *ps = &sc->pass;
	if (st->ppid == ps->anc_last)
		return strdup(ps->anc_line);
	char *buf = ps->anc_line;
	size_t len = 0;
	pid_t p = st->ppid;
	for (int depth = 0; p > 0 && depth < 8 && len < sizeof ps->anc_line - 64; depth++) {
		__typeof__(ps->anc_cache[0]) *a = &ps->anc_cache[(unsigned)p % 64];
		if (a->pid != p) {
			struct reaper_stat ast;
			if (procfs_stat(sc->rd.procfd, p, &ast) < 0)
				break;
			a->pid = p;
			a->ppid = ast.ppid;
			memcpy(a->comm, ast.comm, sizeof a->comm);
		}
		int w = snprintf(buf + len, sizeof ps->anc_line - len, "%s%d %s", depth ? " < " : "", (int)p, a->comm);
		if (w < 0 || (size_t)w >= sizeof ps->anc_line - len) {
			len = sizeof ps->anc_line - 1; /* cut: the nearest ancestors are the ones that matter */
			break;
		}
		len += (size_t)w;
		if (ancestry_root(sc, p))
			break;
		p = a->ppid;
	}
	buf[len] = 0;
	ps->anc_last = st->ppid;
	return strdup(buf);
}

/* The test an environment names: REAPER_TEST, else the test pytest was running when the
 * process (or the ancestor whose environment it carries) was started: PYTEST_CURRENT_TEST,
 * "tests/test_x.py::test_y (call)", without its phase. NULL when it names none. */
static const char *test_in(const char *env, size_t len, size_t *vlen)
{
	const char *t = reaper_environ_get(env, len, "REAPER_TEST", vlen);
	if (t && *vlen)
		return t;
	t = reaper_environ_get(env, len, "PYTEST_CURRENT_TEST", vlen);
	if (!t)
		return NULL;
	static const char *const phases[] = { " (setup)", " (call)", " (teardown)" };
	for (size_t i = 0; i < sizeof phases / sizeof *phases; i++) {
		size_t pl = strlen(phases[i]);
		if (*vlen >= pl && !memcmp(t + *vlen - pl, phases[i], pl)) {
			*vlen -= pl;
			break;
		}
	}
	return *vlen ? t : NULL;
}

/* "FILE:LINE:FUNCTION" (read from the right: a file name may hold ':') into its parts; 0
 * when the value is not of that form or longer than a path can be (it then names no file,
 * and every report would carry it whole), -ENOMEM. */
static int frame_of(const char *v, size_t len, char **file, unsigned *line, char **func)
{
	if (len > PATH_MAX)
		return 0;
	const char *fn = memrchr(v, ':', len);
	const char *ln = fn ? memrchr(v, ':', (size_t)(fn - v)) : NULL;
	if (!ln || ln == v || ln + 1 == fn)
		return 0;
	unsigned long n = 0;
	for (const char *d = ln + 1; d < fn; d++) {
		if (*d < '0' || *d > '9' || n > 100000000)
			return 0;
		n = n * 10 + (unsigned long)(*d - '0');
	}
	char *f = strndup(v, (size_t)(ln - v)), *u = strndup(fn + 1, len - (size_t)(fn + 1 - v));
	if (!f || !u) {
		free(f), free(u);
		return -ENOMEM;
	}
	free(*file), free(*func);
	*file = f, *func = u, *line = (unsigned)n;
	return 1;
}

/* Where the process was started, as its environment says (REAPER_STARTED_AT: the frame in
 * the test's own file; REAPER_STARTED_IN: the innermost frame of the caller's code). A value
 * not of the form FILE:LINE:FUNCTION is not used. 0, or -ENOMEM. */
static int started_from(struct reaper_proc *pi, const char *env, size_t len)
{
	size_t vlen;
	const char *v = reaper_environ_get(env, len, "REAPER_STARTED_AT", &vlen);
	if (v && frame_of(v, vlen, &pi->started_file, &pi->started_line, &pi->started_func) < 0)
		return -ENOMEM;
	v = reaper_environ_get(env, len, "REAPER_STARTED_IN", &vlen);
	if (v && frame_of(v, vlen, &pi->started_in_file, &pi->started_in_line, &pi->started_in_func) < 0)
		return -ENOMEM;
	return 0;
}

int describe_found(struct scanner *sc, struct reaper_proc *pi, const struct reaper_stat *st, const char *env,
		   ssize_t envlen)
{
	size_t vlen = 0;
	/* (a listing shows no test) */
	const char *test = !sc->brief && env && envlen > 0 ? test_in(env, (size_t)envlen, &vlen) : NULL;
	pi->test = test ? strndup(test, vlen) : strdup("");
	pi->comm = strdup(st->comm);
	pi->cmdline = bracketed(st->comm);
	pi->exe = strdup("");
	pi->cwd = strdup("");
	pi->ancestry = sc->brief ? strdup("") : ancestry_of(sc, st);
	if (!sc->brief && env && envlen > 0 && started_from(pi, env, (size_t)envlen) < 0)
		return -ENOMEM;
	return pi->test && pi->comm && pi->cmdline && pi->exe && pi->cwd && pi->ancestry ? 0 : -ENOMEM;
}

/* A listing shows a match by its cmdline alone: only that is read, through its pinned
 * identity, as it is now; its stat too when it has none to show (then its comm is shown), but
 * for one the pass that just ran pinned after its exec. */
static int describe_cmdline(struct scanner *sc, struct cand *c)
{
	struct reaper_proc *pi = &c->info;
	struct reaper_stat st;
	if (c->cmd_pinned && c->gen == sc->pass.gen)
		return 0; /* read with its stat under the pin of the pass that just ran */
	ssize_t n = procfs_read(sc->rd.procfd, pi->pid, "cmdline", &sc->rd.aux);
	const char *comm = pi->comm;
	if (cmdline_len(&sc->rd.aux, n) <= 0 && (c->gen != sc->pass.gen || c->unexeced)) {
		if (procfs_stat(sc->rd.procfd, pi->pid, &st) < 0 || st.start_time != pi->start_time)
			return 0; /* gone: what we saw first is all there is */
		comm = st.comm;
	}
	char *cmd = cmdline_text(&sc->rd.aux, n, comm);
	if (!cmd)
		return -ENOMEM;
	if (pidref_held(&c->ref, sc->rd.procfd) < 0) {
		free(cmd);
		return 0;
	}
	free(pi->cmdline);
	pi->cmdline = cmd;
	return 0;
}

int describe_pinned(struct cand *c, struct sbuf *b, ssize_t n)
{
	if (n == -ENODATA)
		return 0;
	char *cmd = cmdline_text(b, n, c->info.comm);
	if (!cmd)
		return -ENOMEM;
	free(c->info.cmdline);
	c->info.cmdline = cmd;
	c->cmd_pinned = 1;
	return 0;
}

int describe_pinned_details(struct cand *c, struct sbuf *b, ssize_t n, char **exe, char **cwd)
{
	char *cmd = cmdline_text(b, n, c->info.comm);
	if (!cmd || !*exe || !*cwd) {
		free(cmd);
		return -ENOMEM;
	}
	free(c->info.cmdline), free(c->info.exe), free(c->info.cwd);
	c->info.cmdline = cmd, c->info.exe = *exe, c->info.cwd = *cwd;
	*exe = *cwd = NULL;
	c->details_pinned = c->described = 1;
	return 0;
}

/* What describe_cand reads of the process now, kept only when all of it was read while the
 * pid was still this process's. */
struct now {
	char *cmd, *comm, *exe, *cwd, *test;
	uid_t uid;
	char state;
	ssize_t envlen; /* its environment in sc->rd.buf (0: not read again) */
};

static void now_free(struct now *w)
{
	free(w->cmd), free(w->comm), free(w->exe), free(w->cwd), free(w->test);
}

/* Its cmdline, exe, cwd, uid (unless read: the uid it was found with stays, it is what
 * judged it ours or foreign, and a uid taken since does not make it another user's) and
 * environment (unless read in this pass), then its stat when stat_last, which says whether
 * it is still unexec'd (1), has exec'd since (0: read it all again), or is gone (-ESRCH). */
static int read_now(struct scanner *sc, struct cand *c, int fresh, int stat_last, struct reaper_stat *st,
		    struct now *w)
{
	struct reaper_proc *pi = &c->info;
	int procfd = sc->rd.procfd;
	ssize_t cmdlen = procfs_read(procfd, pi->pid, "cmdline", &sc->rd.aux);
	w->exe = procfs_link(procfd, pi->pid, "exe");
	w->cwd = procfs_link(procfd, pi->pid, "cwd");
	w->uid = pi->uid != (uid_t)-1 ? pi->uid : reader_owner(&sc->rd, pi->pid);
	/* Found early (by descent, in its cgroup, or by a marker it inherited), it may carry the
	 * markers and its test only since its exec; a test read before the exec may be its
	 * parent's. The environment of its last exec names the test, when it names one. */
	w->envlen = (fresh || stat_last) && c->env_read ? 0 : procfs_read(procfd, pi->pid, "environ", &sc->rd.buf);
	if (stat_last) {
		if (procfs_stat(procfd, pi->pid, st) < 0 || st->start_time != pi->start_time)
			return -ESRCH;
		if (!(st->flags & PF_FORKNOEXEC))
			return 0;
	}
	w->cmd = cmdline_text(&sc->rd.aux, cmdlen, st->comm);
	w->comm = strdup(st->comm);
	w->state = st->state;
	size_t vlen = 0;
	const char *test = w->envlen > 0 ? test_in(sc->rd.buf.p, (size_t)w->envlen, &vlen) : NULL;
	w->test = test && vlen ? strndup(test, vlen) : NULL;
	if (!w->cmd || !w->comm || !w->exe || !w->cwd || (test && vlen && !w->test))
		return -ENOMEM;
	return 1;
}

int describe_cand(struct scanner *sc, struct cand *c)
{
	struct reaper_proc *pi = &c->info;
	if (c->ref.pid <= 0)
		return 0;
	if (sc->brief)
		return describe_cmdline(sc, c);
	/* read under the pin of the pass that just ran, before a stat that said it had still not
	 * exec'd: of the process as its environment showed it, and as recent as that stat */
	if (c->details_pinned && c->gen == sc->pass.gen)
		return 0;
	/* Pinned by the pass that just ran, after its exec: its stat and (when read then) its
	 * environment are that recent. Pinned between its fork and its exec (showing its
	 * parent's comm and environment, its parent's test): its stat is read after the rest,
	 * and when that stat says it has still not exec'd, it never has, and the environment
	 * read when it was found is its own. Else (or when it exec'd meanwhile) what it is now
	 * is read again, its stat first. */
	int fresh = c->gen == sc->pass.gen && !c->unexeced, stat_last = c->unexeced;
	struct reaper_stat st;
	struct now w;
	int r;
	for (;;) {
		if (fresh) {
			st.state = pi->state;
			snprintf(st.comm, sizeof st.comm, "%s", pi->comm);
		} else if (!stat_last &&
			   (procfs_stat(sc->rd.procfd, pi->pid, &st) < 0 || st.start_time != pi->start_time)) {
			return 0; /* gone: what we saw first is all there is */
		}
		w = (struct now){ 0 };
		r = read_now(sc, c, fresh, stat_last, &st, &w);
		if (r != 0)
			break;
		now_free(&w);
		stat_last = 0; /* it has exec'd since it was found */
	}
	/* all of it read while the pid was still this process's, or none of it is used */
	if (r < 0 || pidref_held(&c->ref, sc->rd.procfd) < 0) {
		now_free(&w);
		return r == -ENOMEM ? r : 0;
	}
	free(pi->cmdline), free(pi->comm), free(pi->exe), free(pi->cwd);
	pi->cmdline = w.cmd, pi->comm = w.comm, pi->exe = w.exe, pi->cwd = w.cwd;
	pi->uid = w.uid;
	pi->state = w.state;
	pi->age = procfs_uptime(sc->rd.procfd) - (double)pi->start_time / (double)sc->rd.ticks;
	if (pi->age < 0)
		pi->age = 0;
	ssize_t n = w.envlen;
	if (n > 0)
		pi->matched_by |= scanner_environ_bits(sc, sc->rd.buf.p, (size_t)n, pi->start_time);
	if (n != 0 || !c->env_read)
		pi->environ_unreadable = n == -EACCES || n == -EPERM;
	if (w.test) {
		free(pi->test);
		pi->test = w.test;
	}
	if (n > 0 && started_from(pi, sc->rd.buf.p, (size_t)n) < 0)
		return -ENOMEM;
	c->described = 1;
	return 0;
}
