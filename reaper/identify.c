/* SPDX-License-Identifier: MIT */
/* identify: one process a finder matched becomes a candidate. It is pinned (pidfd + start
 * time) and what found it is checked again when it is younger than the scan; what its stat
 * says (parent, group, state, comm, age) and its ancestry are kept as first seen. The rest of
 * what a report says about it (cmdline, exe, cwd, uid, test) is read only when it is
 * described: most matches exit in time and are never reported. The test is REAPER_TEST from
 * its environment, or pytest's PYTEST_CURRENT_TEST (a suite run without the plugin); where
 * it was started, REAPER_STARTED_AT and REAPER_STARTED_IN, when a harness put them there. */
#define _GNU_SOURCE
#include "scanner.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PF_FORKNOEXEC 0x00000040 /* stat flags: forked, has not exec'd since */

/* What a process without arguments (a kernel thread, a zombie, one not described) shows as
 * its cmdline: "[comm]". */
static char *bracketed(const char *comm)
{
	char *s = NULL;
	return asprintf(&s, "[%s]", comm) < 0 ? NULL : s;
}

/* The uid /proc gives the process (its owner for access checks); -1 when gone. */
static uid_t owner_of(struct scanner *sc, pid_t pid)
{
	char dir[16];
	struct stat sb;
	snprintf(dir, sizeof dir, "%d", (int)pid);
	return fstatat(sc->procfd, dir, &sb, 0) == 0 ? sb.st_uid : (uid_t)-1;
}

/* The length of the cmdline read into sc->aux (n: the read's length, or -errno) without
 * its trailing NULs: 0 when it has none to show. */
static ssize_t cmdline_len(struct scanner *sc, ssize_t n)
{
	while (n > 0 && sc->aux.p[n - 1] == 0)
		n--;
	return n;
}

/* The cmdline read into sc->aux (n: the read's length, or -errno) as one line. */
static char *cmdline_text(struct scanner *sc, ssize_t n, const char *comm)
{
	n = cmdline_len(sc, n);
	if (n <= 0)
		return bracketed(comm);
	for (ssize_t i = 0; i < n; i++)
		if (sc->aux.p[i] == 0)
			sc->aux.p[i] = ' ';
	return strndup(sc->aux.p, (size_t)n);
}

/* Where an ancestry ends: at the run's root, the caller (or one of its own ancestors, the
 * shells and makes above the run) or a tree finder's root; what is above is not the run's. */
static int ancestry_root(const struct scanner *sc, pid_t p)
{
	if (p == 1)
		return 1;
	for (size_t i = 0; i < sc->nanc; i++)
		if (sc->ancestors[i] == p)
			return 1;
	for (size_t i = 0; i < sc->nf; i++)
		if (sc->f[i].kind == REAPER_FIND_TREE && sc->f[i].root == p)
			return 1;
	return 0;
}

static char *ancestry_of(struct scanner *sc, const struct reaper_stat *st)
{
	if (st->ppid == sc->anc_last)
		return strdup(sc->anc_line);
	char *buf = sc->anc_line;
	size_t len = 0;
	pid_t p = st->ppid;
	for (int depth = 0; p > 0 && depth < 8 && len < sizeof sc->anc_line - 64; depth++) {
		__typeof__(sc->anc_cache[0]) *a = &sc->anc_cache[(unsigned)p % 64];
		if (a->pid != p) {
			struct reaper_stat ast;
			if (procfs_stat(sc->procfd, p, &ast) < 0)
				break;
			a->pid = p;
			a->ppid = ast.ppid;
			memcpy(a->comm, ast.comm, sizeof a->comm);
		}
		int w = snprintf(buf + len, sizeof sc->anc_line - len, "%s%d %s", depth ? " < " : "", (int)p, a->comm);
		if (w < 0 || (size_t)w >= sizeof sc->anc_line - len) {
			len = sizeof sc->anc_line - 1; /* cut: the nearest ancestors are the ones that matter */
			break;
		}
		len += (size_t)w;
		if (ancestry_root(sc, p))
			break;
		p = a->ppid;
	}
	buf[len] = 0;
	sc->anc_last = st->ppid;
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

static int pattern_match(struct scanner *sc, const struct reaper_proc *info)
{
	for (size_t i = 0; i < sc->npatterns; i++) {
		const char *g = sc->patterns[i].glob;
		if (fnmatch(g, info->cmdline, 0) == 0 || (info->exe[0] && fnmatch(g, info->exe, 0) == 0)) {
			sc->pattern_hits[i]++;
			return (int)sc->patterns[i].kind;
		}
	}
	return 0;
}

/* Pin pid: a pidfd while the budget allows, else pid + start time. */
static int pin(struct scanner *sc, struct candset *cs, struct pidref *ref, pid_t pid, struct reaper_stat *st)
{
	int r = -EMFILE;
	if (cs->pidfds < sc->pidfd_budget)
		r = pidref_open_stat(ref, sc->procfd, pid, st);
	if (r == -EMFILE || r == -ENFILE) {
		if (cs->pidfds < sc->pidfd_budget)
			sc->starved = 1;
		r = pidref_pin_stat(ref, sc->procfd, pid, st);
	}
	return r;
}

/* A process younger than the scan may hold a pid whose earlier holder the finder read, so
 * what found it is checked again now that it is pinned: env, its environ as read (marker
 * finders), is read again (*env and *envlen then show the new read); parent, the process whose
 * children listed it (tree finders), must still be its parent, and pref (NULL for the caller)
 * still the process the list was read from; a cgroup member must still be listed. *mask keeps
 * the finders that still match. 0, or -ENOMEM (and *mask 0). */
static int recheck(struct scanner *sc, pid_t pid, const struct reaper_stat *st, const struct pidref *ref,
		   uint32_t *mask, const char **env, ssize_t *envlen, pid_t parent, const struct pidref *pref)
{
	if (*env) {
		*envlen = scanner_environ(sc, pid);
		*env = sc->buf.p;
		*mask = *envlen > 0 ? finder_env_bits(sc, *env, (size_t)*envlen) : 0;
		if (*envlen == -EAGAIN && finder_pend(sc, pid) < 0)
			*envlen = -ENOMEM;
		scanner_read_failed(sc, *envlen);
	} else if (parent && (st->ppid != parent || (pref && pidref_held(pref, sc->procfd) < 0))) {
		*mask = 0;
	} else if (*mask & sc->cgroup_mask) {
		/* listed before it was pinned: the pid may have passed to a process outside */
		if (finder_in_cgroups(sc, ref, *mask & sc->cgroup_mask) != 1)
			*mask &= ~sc->cgroup_mask;
	}
	return *envlen == -ENOMEM ? -ENOMEM : 0;
}

/* What its stat says, kept as first seen. */
static void from_stat(struct scanner *sc, struct reaper_proc *pi, pid_t pid, const struct reaper_stat *st,
		      uint32_t mask)
{
	pi->pid = pid;
	pi->ppid = st->ppid;
	pi->pgrp = st->pgrp;
	pi->exit_status = -1;
	pi->start_time = st->start_time;
	pi->state = st->state;
	pi->matched_by = mask;
	double up = procfs_uptime(sc->procfd);
	pi->age = up - (double)st->start_time / (double)sc->ticks;
	if (pi->age < 0)
		pi->age = 0;
}

/* Its fate by the patterns: kept (never signalled; its pidref only says whether it is still
 * it), or alive (allowed or not), or exited already. */
static void set_fate(struct scanner *sc, struct cand *c, const struct reaper_stat *st)
{
	struct reaper_proc *pi = &c->info;
	int pol = pattern_match(sc, pi);
	if (pol == REAPER_KEEP) {
		pi->fate = REAPER_KEPT;
		return;
	}
	pi->allowed = pol == REAPER_ALLOW;
	pi->fate = REAPER_ALIVE;
	/* a leader that has exited while its other threads run on is alive */
	c->live = (st->state != 'Z' && st->state != 'X') || st->num_threads > 1;
	if (!c->live)
		pi->fate = REAPER_EXITED;
}

/* c joins the set (the set takes its strings, or they are freed) and the reap hears of it
 * when it is live: its index, or -errno. */
static ssize_t enlist(struct scanner *sc, struct candset *cs, struct cand *c)
{
	ssize_t idx = candset_add(cs, c);
	if (idx < 0) {
		cand_clear(c);
		return idx;
	}
	if (cs->v[idx].live && sc->added)
		sc->added(sc->ctx, (size_t)idx);
	return idx;
}

/* Identify pid (pidfd + start time) and record what it is. want: the start time it must
 * have (0: any). What found it is checked again for a process younger than the scan (it may
 * hold a pid whose earlier holder was read): env, its environ as read (marker finders), is
 * read again; parent, the process whose children listed it (tree finders; 0 otherwise),
 * must still be its parent, and pref (NULL for the caller) still the process the list was
 * read from. Returns the new index, -1 when it is not a candidate, or -errno. */
/* What a match is known by until it is described: its stat's comm as its cmdline, the test
 * its environment named when this scan read it, its ancestry as first seen. */
static int first_facts(struct scanner *sc, struct reaper_proc *pi, const struct reaper_stat *st,
		       const char *env, ssize_t envlen)
{
	size_t vlen = 0;
	const char *test = env && envlen > 0 ? test_in(env, (size_t)envlen, &vlen) : NULL;
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

ssize_t identify(struct scanner *sc, struct candset *cs, pid_t pid, uint32_t mask, const char *env,
		 ssize_t envlen, uint64_t want, pid_t parent, const struct pidref *pref)
{
	struct reaper_stat st;
	struct cand c = { 0 };
	int r = pin(sc, cs, &c.ref, pid, &st);
	if (r < 0) {
		scanner_read_failed(sc, r);
		return r == -ENOMEM ? r : -1;
	}
	if (want && st.start_time != want) {
		pidref_done(&c.ref); /* the pid has changed hands: not the process meant */
		return -1;
	}
	/* (an exited one is never signalled: collecting it when it is the caller's child is
	 * all that is done with it, so its match stands) */
	int exited = (st.state == 'Z' || st.state == 'X') && st.num_threads <= 1;
	if (st.start_time >= sc->tick0 && !exited) {
		r = recheck(sc, pid, &st, &c.ref, &mask, &env, &envlen, parent, pref);
		if (!mask) {
			pidref_done(&c.ref);
			return r < 0 ? r : -1;
		}
	}
	/* a marker finder with an origin matches only what started since */
	if (!(mask = finder_env_since(sc, mask, st.start_time))) {
		pidref_done(&c.ref);
		return -1;
	}
	/* A zombie child of ours that the host exited and left before the reap: its exit
	 * status is the host's, never ours to take. */
	if (st.state == 'Z' && st.num_threads <= 1 && st.ppid == sc->self &&
	    pid_in_list(sc->host_zombies, sc->nhost_zombies, pid)) {
		pidref_done(&c.ref);
		return -1;
	}
	/* a kernel thread is the kernel's: no test starts one (a tree rooted at kthreadd) */
	if (st.flags & PF_KTHREAD) {
		pidref_done(&c.ref);
		return -1;
	}
	/* never the caller: what it named, its own job, its pipeline */
	if (!(mask = scanner_not_callers(sc, &c.ref, &st, mask))) {
		pidref_done(&c.ref);
		return -1;
	}
	c.gen = sc->gen;
	struct reaper_proc *pi = &c.info;
	from_stat(sc, pi, pid, &st, mask);
	pi->outer_pid = pidref_pid_in(&c.ref, sc->outer_procfd);
	/* as root, a match by a marker alone is another user's or not at once (foreign); the uid
	 * read is its own only if the pin still holds after the read (-1: gone, nobody's) */
	pi->uid = sc->want_uid && !(mask & ~sc->env_mask) ? owner_of(sc, pid) : (uid_t)-1;
	if (pi->uid != (uid_t)-1 && pidref_held(&c.ref, sc->procfd) < 0)
		pi->uid = (uid_t)-1;
	/* a tree finder with a marker keeps it or not by its environment */
	if (!env && (mask & sc->tree_marked)) {
		envlen = scanner_environ(sc, pid);
		env = sc->buf.p;
	}
	if (mask & sc->tree_mask) {
		mask = (mask & ~sc->tree_mask) | finder_tree_keep(sc, mask & sc->tree_mask, &st, env, envlen);
		if (!mask) {
			pidref_done(&c.ref);
			return -1;
		}
		pi->matched_by = mask;
	}
	pi->host_child = st.ppid == sc->self && pid_in_list(sc->host, sc->nhost, pid);
	/* an environment read in this scan names its test; the others are read when described */
	c.env_read = env && envlen >= 0;
	c.unexeced = (st.flags & PF_FORKNOEXEC) != 0;
	pi->environ_unreadable = env && (envlen == -EACCES || envlen == -EPERM);
	if (first_facts(sc, pi, &st, env, envlen) < 0) {
		cand_clear(&c);
		return -ENOMEM;
	}
	/* patterns judge the cmdline and exe: described now */
	if (sc->npatterns && scanner_describe(sc, &c) == -ENOMEM) {
		cand_clear(&c);
		return -ENOMEM;
	}
	set_fate(sc, &c, &st);
	return enlist(sc, cs, &c);
}

/* A listing shows a match by its cmdline alone: only that is read, through its pinned
 * identity, as it is now; its stat too when it has none to show (then its comm is shown), but
 * for one the scan that just ran pinned after its exec. */
static int describe_cmdline(struct scanner *sc, struct cand *c)
{
	struct reaper_proc *pi = &c->info;
	struct reaper_stat st;
	ssize_t n = procfs_read(sc->procfd, pi->pid, "cmdline", &sc->aux);
	const char *comm = pi->comm;
	if (cmdline_len(sc, n) <= 0 && (c->gen != sc->gen || c->unexeced)) {
		if (procfs_stat(sc->procfd, pi->pid, &st) < 0 || st.start_time != pi->start_time)
			return 0; /* gone: what we saw first is all there is */
		comm = st.comm;
	}
	char *cmd = cmdline_text(sc, n, comm);
	if (!cmd)
		return -ENOMEM;
	if (pidref_held(&c->ref, sc->procfd) < 0) {
		free(cmd);
		return 0;
	}
	free(pi->cmdline);
	pi->cmdline = cmd;
	return 0;
}

int scanner_describe(struct scanner *sc, struct cand *c)
{
	struct reaper_proc *pi = &c->info;
	if (c->ref.pid <= 0)
		return 0;
	if (sc->brief)
		return describe_cmdline(sc, c);
	/* Pinned by the scan that just ran, after its exec: its stat and (when read then) its
	 * environment are that recent. Pinned between its fork and its exec (showing its
	 * parent's comm and environment, its parent's test): its stat is read after the rest,
	 * and when that stat says it has still not exec'd, it never has, and the environment
	 * read when it was found is its own. Else (or when it exec'd meanwhile) what it is now
	 * is read again, its stat first. */
	int fresh = c->gen == sc->gen && !c->unexeced, stat_last = c->unexeced;
	struct reaper_stat st;
again:
	if (fresh) {
		st.state = pi->state;
		snprintf(st.comm, sizeof st.comm, "%s", pi->comm);
	} else if (!stat_last && (procfs_stat(sc->procfd, pi->pid, &st) < 0 || st.start_time != pi->start_time)) {
		return 0; /* gone: what we saw first is all there is */
	}
	ssize_t cmdlen = procfs_read(sc->procfd, pi->pid, "cmdline", &sc->aux);
	char *exe = procfs_link(sc->procfd, pi->pid, "exe"), *cwd = procfs_link(sc->procfd, pi->pid, "cwd");
	/* the uid it was found with stays: it is what judged it ours or foreign, and a uid
	 * taken since (a privilege drop, an exec through su) does not make it another user's */
	uid_t uid = pi->uid != (uid_t)-1 ? pi->uid : owner_of(sc, pi->pid);
	/* Found early (by descent, in its cgroup, or by a marker it inherited), it may carry the
	 * markers and its test only since its exec; a test read before the exec may be its
	 * parent's. The environment of its last exec names the test, when it names one. */
	ssize_t n = (fresh || stat_last) && c->env_read ? 0 : procfs_read(sc->procfd, pi->pid, "environ", &sc->buf);
	if (stat_last) {
		int gone = procfs_stat(sc->procfd, pi->pid, &st) < 0 || st.start_time != pi->start_time;
		if (gone || !(st.flags & PF_FORKNOEXEC)) {
			free(exe), free(cwd);
			if (gone)
				return 0;
			stat_last = 0; /* it has exec'd since it was found */
			goto again;
		}
	}
	char *cmd = cmdline_text(sc, cmdlen, st.comm), *comm = strdup(st.comm);
	size_t vlen = 0;
	const char *test = n > 0 ? test_in(sc->buf.p, (size_t)n, &vlen) : NULL;
	char *t = test && vlen ? strndup(test, vlen) : NULL;
	/* all of it read while the pid was still this process's, or none of it is used */
	if (!cmd || !comm || !exe || !cwd || (test && vlen && !t) || pidref_held(&c->ref, sc->procfd) < 0) {
		int r = !cmd || !comm || !exe || !cwd || (test && vlen && !t) ? -ENOMEM : 0;
		free(cmd), free(comm), free(exe), free(cwd), free(t);
		return r;
	}
	free(pi->cmdline), free(pi->comm), free(pi->exe), free(pi->cwd);
	pi->cmdline = cmd, pi->comm = comm, pi->exe = exe, pi->cwd = cwd;
	pi->uid = uid;
	pi->state = st.state;
	pi->age = procfs_uptime(sc->procfd) - (double)pi->start_time / (double)sc->ticks;
	if (pi->age < 0)
		pi->age = 0;
	if (n > 0)
		pi->matched_by |= finder_env_since(sc, finder_env_bits(sc, sc->buf.p, (size_t)n), pi->start_time);
	if (n != 0 || !c->env_read)
		pi->environ_unreadable = n == -EACCES || n == -EPERM;
	if (t) {
		free(pi->test);
		pi->test = t;
	}
	if (n > 0 && started_from(pi, sc->buf.p, (size_t)n) < 0)
		return -ENOMEM;
	c->described = 1;
	return 0;
}
