/* SPDX-License-Identifier: MIT */
/* finder: one scan of every finder over /proc. The marker finder reads each process's
 * environ (the hot path: one openat + read per process, nothing else); the tree finder
 * follows /proc/PID/task/TID/children down from its root and from every descendant already
 * known, so it costs what the tree holds, not what the system holds. */
#define _GNU_SOURCE
#include "candset.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int children_of(struct scanner *sc, pid_t pid, pid_t **kids, size_t *nk, size_t *ck);

int scanner_init(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns)
{
	memset(sc, 0, sizeof *sc);
	sc->procfd = -1;
	if (nf > 32)
		return -E2BIG;
	for (size_t i = 0; i < nf; i++) {
		if (f[i].kind == REAPER_FIND_ENV) {
			if (!f[i].marker || !strchr(f[i].marker, '=') || f[i].marker[0] == '=')
				return -EINVAL;
			sc->elen[i] = strlen(f[i].marker);
			sc->env_mask |= 1u << i;
		} else if (f[i].kind == REAPER_FIND_TREE) {
			if (f[i].root < 0)
				return -EINVAL;
			sc->tree_mask |= 1u << i;
		} else if (f[i].kind == REAPER_FIND_CALL) {
			if (!f[i].find)
				return -EINVAL;
			sc->call_mask |= 1u << i;
		} else {
			return -EINVAL;
		}
	}
	sc->f = f;
	sc->nf = nf;
	sc->patterns = patterns;
	sc->npatterns = npatterns;
	if (npatterns && !(sc->pattern_hits = calloc(npatterns, sizeof *sc->pattern_hits)))
		return -ENOMEM;
	sc->ticks = sysconf(_SC_CLK_TCK);
	sc->self = getpid();
	int r = procfs_open();
	if (r < 0)
		return r;
	sc->procfd = r;
	int dfd = openat(sc->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !(sc->dir = fdopendir(dfd))) {
		r = -errno;
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	/* The caller and its ancestors are never candidates. */
	pid_t p = sc->self;
	while (p > 0 && sc->nanc < 64) {
		sc->ancestors[sc->nanc++] = p;
		struct reaper_stat st;
		if (procfs_stat(sc->procfd, p, &st) < 0)
			break;
		p = st.ppid;
	}
	pid_t *kids = NULL;
	size_t nk = 0, ck = 0;
	if ((r = children_of(sc, sc->self, &kids, &nk, &ck)) < 0)
		return r;
	for (size_t i = 0; i < nk; i++) {
		struct reaper_stat st;
		if (procfs_stat(sc->procfd, kids[i], &st) == 0 && st.state == 'Z')
			kids[sc->nhost_zombies++] = kids[i];
	}
	sc->host_zombies = kids;
	return 0;
}

void scanner_done(struct scanner *sc)
{
	if (sc->dir)
		closedir(sc->dir);
	if (sc->procfd >= 0)
		close(sc->procfd);
	pbuf_free(&sc->buf);
	pbuf_free(&sc->aux);
	free(sc->host_zombies);
	sc->host_zombies = NULL;
	free(sc->pattern_hits);
	free(sc->ids);
	sc->ids = NULL;
	sc->ids_cap = 0;
	sc->dir = NULL;
	sc->procfd = -1;
	sc->pattern_hits = NULL;
}

static int excluded(const struct scanner *sc, pid_t pid)
{
	for (size_t i = 0; i < sc->nanc; i++)
		if (sc->ancestors[i] == pid)
			return 1;
	return 0;
}

static int host_zombie(const struct scanner *sc, pid_t pid)
{
	for (size_t i = 0; i < sc->nhost_zombies; i++)
		if (sc->host_zombies[i] == pid)
			return 1;
	return 0;
}

static char *cmdline_of(struct scanner *sc, pid_t pid, const char *comm)
{
	ssize_t n = procfs_read(sc->procfd, pid, "cmdline", &sc->aux);
	while (n > 0 && sc->aux.p[n - 1] == 0)
		n--;
	if (n <= 0) {
		char *s = NULL;
		return asprintf(&s, "[%s]", comm) < 0 ? NULL : s;
	}
	for (ssize_t i = 0; i < n; i++)
		if (sc->aux.p[i] == 0)
			sc->aux.p[i] = ' ';
	return strndup(sc->aux.p, (size_t)n);
}

static char *ancestry_of(struct scanner *sc, const struct reaper_stat *st)
{
	char buf[512];
	size_t len = 0;
	pid_t p = st->ppid;
	for (int depth = 0; p > 0 && depth < 8 && len < sizeof buf - 64; depth++) {
		__typeof__(sc->anc_cache[0]) *a = &sc->anc_cache[(unsigned)p % 64];
		if (a->pid != p) {
			struct reaper_stat ast;
			if (procfs_stat(sc->procfd, p, &ast) < 0)
				break;
			a->pid = p;
			a->ppid = ast.ppid;
			memcpy(a->comm, ast.comm, sizeof a->comm);
		}
		int w = snprintf(buf + len, sizeof buf - len, "%s%d %s", depth ? " < " : "", (int)p, a->comm);
		if (w < 0 || (size_t)w >= sizeof buf - len) {
			len = sizeof buf - 1; /* cut: the nearest ancestors are the ones that matter */
			break;
		}
		len += (size_t)w;
		p = a->ppid;
	}
	buf[len] = 0;
	return strdup(buf);
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

/* Identify pid (pidfd + start time) and record what it is. env: its environ when the
 * caller already read it. want: the start time it must have (0: any). Returns the new
 * index, -1 when it is not a candidate, or -errno. */
static ssize_t add(struct scanner *sc, struct candset *cs, pid_t pid, uint32_t mask, const char *env,
		   ssize_t envlen, uint64_t want)
{
	struct reaper_stat st;
	struct cand c = { 0 };
	int r = pidref_open_stat(&c.ref, sc->procfd, pid, &st);
	if (r < 0) {
		if (r == -EMFILE || r == -ENFILE)
			sc->starved = 1;
		return r == -ENOMEM ? r : -1;
	}
	if (want && st.start_time != want) {
		pidref_done(&c.ref); /* the pid has changed hands: not the process meant */
		return -1;
	}
	/* A zombie child of ours that the host exited and left before the reap: its exit
	 * status is the host's, never ours to take. */
	if (st.state == 'Z' && st.ppid == sc->self && host_zombie(sc, pid)) {
		pidref_done(&c.ref);
		return -1;
	}
	c.gen = sc->gen;
	struct reaper_proc *pi = &c.info;
	pi->pid = pid;
	pi->ppid = st.ppid;
	pi->pgrp = st.pgrp;
	pi->exit_status = -1;
	pi->start_time = st.start_time;
	pi->state = st.state;
	pi->matched_by = mask;
	double up = procfs_uptime(sc->procfd);
	pi->age = up - (double)st.start_time / (double)sc->ticks;
	if (pi->age < 0)
		pi->age = 0;
	char dir[16];
	struct stat sb;
	snprintf(dir, sizeof dir, "%d", (int)pid);
	pi->uid = fstatat(sc->procfd, dir, &sb, 0) == 0 ? sb.st_uid : (uid_t)-1;
	if (!env) {
		envlen = procfs_read(sc->procfd, pid, "environ", &sc->buf);
		env = sc->buf.p;
		pi->environ_unreadable = envlen < 0 && (envlen == -EACCES || envlen == -EPERM);
	}
	size_t vlen = 0;
	const char *test = envlen > 0 ? reaper_environ_get(env, (size_t)envlen, "REAPER_TEST", &vlen) : NULL;
	pi->test = test ? strndup(test, vlen) : strdup("");
	pi->comm = strdup(st.comm);
	pi->cmdline = cmdline_of(sc, pid, st.comm);
	pi->exe = procfs_link(sc->procfd, pid, "exe");
	pi->cwd = procfs_link(sc->procfd, pid, "cwd");
	pi->ancestry = ancestry_of(sc, &st);
	if (!pi->test || !pi->comm || !pi->cmdline || !pi->exe || !pi->cwd || !pi->ancestry) {
		cand_clear(&c);
		return -ENOMEM;
	}
	int pol = pattern_match(sc, pi);
	if (pol == REAPER_KEEP) {
		pi->fate = REAPER_KEPT;
		pidref_done(&c.ref);
	} else {
		pi->allowed = pol == REAPER_ALLOW;
		pi->fate = REAPER_ALIVE;
		c.live = st.state != 'Z' && st.state != 'X';
		if (!c.live)
			pi->fate = REAPER_EXITED;
	}
	ssize_t idx = candset_add(cs, &c);
	if (idx < 0) {
		cand_clear(&c);
		return idx;
	}
	if (cs->v[idx].live && sc->added)
		sc->added(sc->ctx, (size_t)idx);
	return idx;
}

void scanner_refresh(struct scanner *sc, struct cand *c)
{
	struct reaper_stat st;
	struct reaper_proc *pi = &c->info;
	/* identified in the scan that just ran: what it read is what it is now */
	if (c->gen == sc->gen && !(sc->env_mask & ~pi->matched_by))
		return;
	if (procfs_stat(sc->procfd, pi->pid, &st) < 0 || st.start_time != pi->start_time || st.state == 'Z')
		return; /* gone: what we saw first is all there is */
	char *cmd = cmdline_of(sc, pi->pid, st.comm), *comm = strdup(st.comm);
	char *exe = procfs_link(sc->procfd, pi->pid, "exe"), *cwd = procfs_link(sc->procfd, pi->pid, "cwd");
	if (!cmd || !comm || !exe || !cwd) {
		free(cmd), free(comm), free(exe), free(cwd);
		return;
	}
	free(pi->cmdline), free(pi->comm), free(pi->exe), free(pi->cwd);
	pi->cmdline = cmd, pi->comm = comm, pi->exe = exe, pi->cwd = cwd;
	pi->state = st.state;
	pi->age = procfs_uptime(sc->procfd) - (double)st.start_time / (double)sc->ticks;
	/* found early by descent, it may carry the markers only since its exec (nothing to
	 * learn when every marker matched already) */
	uint32_t missing = sc->env_mask & ~pi->matched_by;
	ssize_t n = missing ? procfs_read(sc->procfd, pi->pid, "environ", &sc->buf) : 0;
	for (size_t i = 0; n > 0 && i < sc->nf; i++)
		if ((sc->env_mask & (1u << i)) && reaper_environ_has(sc->buf.p, (size_t)n, sc->f[i].marker, sc->elen[i]))
			pi->matched_by |= 1u << i;
}

/* A pid is new unless a live candidate already holds it (a dead one's pid may be reused). */
static int known(const struct candset *cs, pid_t pid)
{
	ssize_t i = candset_find(cs, pid);
	return i >= 0 && (cs->v[i].live || cs->v[i].info.fate == REAPER_KEPT ||
			  cs->v[i].ref.pid > 0);
}

static int scan_env(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	rewinddir(sc->dir);
	struct dirent *d;
	while ((d = readdir(sc->dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		pid_t pid = (pid_t)atoi(d->d_name);
		if (excluded(sc, pid) || known(cs, pid))
			continue;
		ssize_t n = procfs_read(sc->procfd, pid, "environ", &sc->buf);
		if (n <= 0)
			continue; /* gone, a kernel thread, a zombie, or unreadable */
		uint32_t mask = 0;
		for (size_t i = 0; i < sc->nf; i++)
			if ((sc->env_mask & (1u << i)) &&
			    reaper_environ_has(sc->buf.p, (size_t)n, sc->f[i].marker, sc->elen[i]))
				mask |= 1u << i;
		if (!mask)
			continue;
		ssize_t r = add(sc, cs, pid, mask, sc->buf.p, n, 0);
		if (r == -ENOMEM)
			return -ENOMEM;
		added += r >= 0;
	}
	return added;
}

/* Children of every thread of pid, appended to *kids. */
static int children_of(struct scanner *sc, pid_t pid, pid_t **kids, size_t *nk, size_t *ck)
{
	char path[48];
	snprintf(path, sizeof path, "%d/task", (int)pid);
	int tfd = openat(sc->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return 0;
	/* getdents64 straight into a buffer: fdopendir's fstat and two fcntls cost more than
	 * listing a task directory, once per tree candidate per scan */
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd;
	int r = 0;
	while (r == 0 && (nd = getdents64(tfd, dents, sizeof dents)) > 0) {
		for (ssize_t off = 0; off < nd && r == 0;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			char what[48];
			snprintf(what, sizeof what, "task/%d/children", atoi(d->d_name));
			ssize_t n = procfs_read(sc->procfd, pid, what, &sc->aux);
			for (char *p = sc->aux.p, *end = p + (n > 0 ? n : 0); p < end;) {
				char *e;
				long v = strtol(p, &e, 10);
				if (e == p)
					break;
				p = e;
				if (*nk == *ck) {
					size_t nc = *ck ? *ck * 2 : 64;
					pid_t *nv = realloc(*kids, nc * sizeof *nv);
					if (!nv) {
						r = -ENOMEM;
						break;
					}
					*kids = nv;
					*ck = nc;
				}
				(*kids)[(*nk)++] = (pid_t)v;
			}
		}
	}
	close(tfd);
	return r;
}

static int scan_tree(struct scanner *sc, struct candset *cs)
{
	/* queue of (pid, tree bits): the roots, then every live candidate found by a tree
	 * finder (that is how orphans re-parented away from the root stay in the tree). */
	struct item {
		pid_t pid;
		uint32_t bits;
	} *q = NULL;
	size_t qn = 0, qc = 0;
	pid_t *kids = NULL;
	size_t kc = 0;
	int added = 0, r = 0;
#define PUSH(P, B)                                                           \
	do {                                                                 \
		if (qn == qc) {                                              \
			size_t nc = qc ? qc * 2 : 64;                        \
			struct item *nq = realloc(q, nc * sizeof *nq);       \
			if (!nq) {                                           \
				r = -ENOMEM;                                 \
				goto out;                                    \
			}                                                    \
			q = nq;                                              \
			qc = nc;                                             \
		}                                                            \
		q[qn++] = (struct item){ (P), (B) };                         \
	} while (0)
	for (size_t i = 0; i < sc->nf; i++)
		if (sc->tree_mask & (1u << i))
			PUSH(sc->f[i].root ? sc->f[i].root : sc->self, 1u << i);
	for (size_t i = 0; i < cs->n; i++)
		if ((cs->v[i].live || cs->v[i].info.state == 'Z') && (cs->v[i].info.matched_by & sc->tree_mask))
			PUSH(cs->v[i].info.pid, cs->v[i].info.matched_by & sc->tree_mask);
	for (size_t qi = 0; qi < qn; qi++) {
		size_t nk = 0;
		if ((r = children_of(sc, q[qi].pid, &kids, &nk, &kc)) < 0)
			goto out;
		for (size_t k = 0; k < nk; k++) {
			pid_t c = kids[k];
			if (excluded(sc, c))
				continue;
			ssize_t idx = candset_find(cs, c);
			if (idx >= 0 && known(cs, c)) {
				uint32_t had = cs->v[idx].info.matched_by;
				cs->v[idx].info.matched_by |= q[qi].bits;
				/* found by a marker first, it is in this tree only now: walk its
				 * children in this very pass (one reaper_scan is one pass) */
				if ((had & q[qi].bits) != q[qi].bits)
					PUSH(c, q[qi].bits);
				continue;
			}
			ssize_t a = add(sc, cs, c, q[qi].bits, NULL, 0, 0);
			if (a == -ENOMEM) {
				r = -ENOMEM;
				goto out;
			}
			if (a >= 0) {
				added++;
				PUSH(c, q[qi].bits);
			}
		}
	}
#undef PUSH
out:
	free(q);
	free(kids);
	return r < 0 ? r : added;
}

/* The identities each REAPER_FIND_CALL finder returns, pinned and verified like any match. */
static int scan_call(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(sc->call_mask & (1u << i)))
			continue;
		int n = sc->f[i].find(sc->f[i].find_ctx, sc->ids, sc->ids_cap);
		if (n > 0 && (size_t)n > sc->ids_cap) {
			struct reaper_ident *v = realloc(sc->ids, (size_t)n * sizeof *v);
			if (!v)
				return -ENOMEM;
			sc->ids = v;
			sc->ids_cap = (size_t)n;
			n = sc->f[i].find(sc->f[i].find_ctx, sc->ids, sc->ids_cap);
			if (n > 0 && (size_t)n > sc->ids_cap)
				n = (int)sc->ids_cap; /* grew again meanwhile: the rest at the next scan */
		}
		if (n < 0)
			return n;
		for (int k = 0; k < n; k++) {
			const struct reaper_ident *id = &sc->ids[k];
			if (id->pid <= 0 || !id->start_time || excluded(sc, id->pid))
				continue;
			ssize_t idx = candset_find(cs, id->pid);
			if (idx >= 0 && known(cs, id->pid)) {
				if (cs->v[idx].info.start_time == id->start_time)
					cs->v[idx].info.matched_by |= 1u << i;
				continue;
			}
			ssize_t a = add(sc, cs, id->pid, 1u << i, NULL, 0, id->start_time);
			if (a == -ENOMEM)
				return -ENOMEM;
			added += a >= 0;
		}
	}
	return added;
}

int scanner_scan(struct scanner *sc, struct candset *cs)
{
	int added = 0, r;
	sc->starved = 0;
	sc->gen++;
	for (size_t i = 0; i < sizeof sc->anc_cache / sizeof *sc->anc_cache; i++)
		sc->anc_cache[i].pid = 0;
	if (sc->env_mask) {
		if ((r = scan_env(sc, cs)) < 0)
			return r;
		added += r;
	}
	if (sc->tree_mask) {
		if ((r = scan_tree(sc, cs)) < 0)
			return r;
		added += r;
	}
	if (sc->call_mask) {
		if ((r = scan_call(sc, cs)) < 0)
			return r;
		added += r;
	}
	return added;
}
