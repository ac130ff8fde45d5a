/* SPDX-License-Identifier: MIT */
/* scanner: one pass of every finder over /proc, and the reads the finders share. The
 * scanner is set up once per reap (the descriptor budget, the caller's ancestry, the host's
 * zombies, the kernel threads, the tree roots pinned), then scanner_scan runs the finders of
 * finder.c; what they match becomes a candidate through identify(). */
#define _GNU_SOURCE
#include "scanner.h"
#include "array.h"

#include "marker.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FD_RESERVE 8          /* descriptors a scan keeps for its own reads */

/* How many pidfds candidates may hold: the descriptor limit less what is open now and a
 * reserve for the scan's own reads. */
static size_t pidfd_budget(int procfd)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	int dfd = openat(procfd, "self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	size_t open = 0;
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd;
	while ((nd = getdents64(dfd, dents, sizeof dents)) > 0)
		for (ssize_t off = 0; off < nd;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			open += d->d_name[0] != '.';
		}
	close(dfd);
	return rl.rlim_cur > open + FD_RESERVE ? (size_t)rl.rlim_cur - open - FD_RESERVE : 0;
}

/* A read failed: a lack of descriptors or memory means the scan may have missed something. */
void scanner_read_failed(struct scanner *sc, ssize_t r)
{
	if (r == -EMFILE || r == -ENFILE || r == -ENOMEM)
		sc->scan_err = (int)-r;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* The kernel threads: kthreadd's children (pid 2, when it is kthreadd: not in a PID namespace
 * of our own). Half the entries of a quiet host's /proc; without this list each costs a stat
 * read after its empty environment read. A user-mode helper the kernel starts is kthreadd's
 * child too, but has memory, so its environment is read as anyone's. A failure leaves the
 * list empty: every empty environment is then looked at through stat. Read when the first
 * environment is (a reap of a cgroup alone reads none). */
static void kernel_threads(struct scanner *sc)
{
	struct reaper_stat st;
	sc->kthreads_read = 1;
	if (procfs_stat(sc->procfd, 2, &st) < 0 || !(st.flags & PF_KTHREAD) || st.ppid != 0)
		return;
	pid_t *k = NULL;
	size_t n = 0, c = 0;
	if (scanner_children(sc, 2, &k, &n, &c) < 0) {
		free(k);
		return;
	}
	qsort(k, n, sizeof *k, pid_cmp);
	sc->kthreads = k;
	sc->nkthreads = n;
}

static int kernel_thread(struct scanner *sc, pid_t pid)
{
	if (!sc->kthreads_read)
		kernel_threads(sc);
	return sc->nkthreads && bsearch(&pid, sc->kthreads, sc->nkthreads, sizeof pid, pid_cmp);
}

int pid_in_list(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

/* A root is walked only while it is the process it was when the reap began: each tree
 * finder's root is pinned now (one already gone stays unpinned). */
static int pin_roots(struct scanner *sc)
{
	for (size_t i = 0; i < sc->nf; i++) {
		struct reaper_stat st;
		if (sc->f[i].kind != REAPER_FIND_TREE || !sc->f[i].root)
			continue;
		int r = pidref_open_stat(&sc->roots[i], sc->procfd, sc->f[i].root, &st);
		if (r == -EMFILE || r == -ENFILE)
			r = pidref_pin_stat(&sc->roots[i], sc->procfd, sc->f[i].root, &st);
		if (r < 0 && r != -ESRCH)
			return r;
	}
	return 0;
}

/* The caller and its ancestors are never candidates. Read when the first pid is looked at
 * (a clean run looks at none): the caller first, so the list is never empty once read. */
static void ancestors(struct scanner *sc)
{
	pid_t p = sc->self;
	while (p > 0 && sc->nanc < 64) {
		sc->ancestors[sc->nanc++] = p;
		struct reaper_stat st;
		if (procfs_stat(sc->procfd, p, &st) < 0)
			break;
		p = st.ppid;
	}
}

/* The caller's zombie children now: the host's, whose statuses are never ours. */
static int host_zombies(struct scanner *sc)
{
	pid_t *kids = NULL;
	size_t nk = 0, ck = 0;
	int r = scanner_children(sc, sc->self, &kids, &nk, &ck);
	if (r < 0) {
		free(kids);
		return r;
	}
	for (size_t i = 0; i < nk; i++) {
		struct reaper_stat st;
		if (procfs_stat(sc->procfd, kids[i], &st) == 0 && st.state == 'Z' && st.num_threads <= 1)
			kids[sc->nhost_zombies++] = kids[i];
	}
	sc->host_zombies = kids;
	return 0;
}

int scanner_init(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns)
{
	memset(sc, 0, sizeof *sc);
	sc->procfd = -1;
	sc->outer_procfd = -1;
	for (size_t i = 0; i < 32; i++)
		sc->roots[i] = PIDREF_NULL;
	if (nf > 32)
		return -E2BIG;
	for (size_t i = 0; i < nf; i++) {
		if (f[i].kind == REAPER_FIND_ENV) {
			if (marker_check(f[i].marker) < 0)
				return -EINVAL;
			sc->elen[i] = strlen(f[i].marker);
			sc->env_mask |= 1u << i;
		} else if (f[i].kind == REAPER_FIND_TREE) {
			if (f[i].root < 0 || (f[i].nskip && !f[i].skip) ||
			    (f[i].marker && marker_check(f[i].marker) < 0))
				return -EINVAL;
			sc->elen[i] = f[i].marker ? strlen(f[i].marker) : 0;
			sc->tree_mask |= 1u << i;
			if (f[i].marker)
				sc->tree_marked |= 1u << i;
		} else if (f[i].kind == REAPER_FIND_CALL) {
			if (!f[i].find)
				return -EINVAL;
			sc->call_mask |= 1u << i;
		} else if (f[i].kind == REAPER_FIND_CGROUP) {
			if (!f[i].cgroup || !*f[i].cgroup)
				return -EINVAL;
			sc->cgroup_mask |= 1u << i;
		} else {
			return -EINVAL;
		}
	}
	/* the window is the oldest origin's, and there is none when a marker finder has none */
	for (size_t i = 0; i < nf; i++) {
		if (!(sc->env_mask & (1u << i)))
			continue;
		if (!f[i].origin) {
			sc->origin = NULL;
			break;
		}
		if (!sc->origin || f[i].origin->forks < sc->origin->forks)
			sc->origin = f[i].origin;
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
	sc->pidfd_budget = pidfd_budget(sc->procfd);
	if ((r = pin_roots(sc)) < 0)
		return r;
	int dfd = openat(sc->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !(sc->dir = fdopendir(dfd))) {
		r = -errno;
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	for (size_t i = 0; i < nf; i++)
		if ((sc->tree_mask & (1u << i)) && f[i].marker && (r = finder_tree_inherit(sc, i)) < 0)
			return r;
	return host_zombies(sc);
}

void scanner_done(struct scanner *sc)
{
	for (size_t i = 0; i < 32; i++)
		pidref_done(&sc->roots[i]);
	free(sc->pending);
	sc->pending = NULL;
	if (sc->dir)
		closedir(sc->dir);
	if (sc->procfd >= 0)
		close(sc->procfd);
	sbuf_free(&sc->buf);
	sbuf_free(&sc->aux);
	free(sc->host_zombies);
	free(sc->kthreads);
	sc->kthreads = NULL;
	sc->nkthreads = 0;
	sc->kthreads_read = 0;
	sc->host_zombies = NULL;
	free(sc->cgpids);
	sc->cgpids = NULL;
	for (size_t i = 0; i < sizeof sc->tree_inherited / sizeof *sc->tree_inherited; i++) {
		free(sc->tree_inherited[i]);
		sc->tree_inherited[i] = NULL;
	}
	free(sc->cgagain);
	sc->cgagain = NULL;
	free(sc->pattern_hits);
	free(sc->ids);
	sc->ids = NULL;
	free(sc->pl_members);
	sc->pl_members = NULL;
	sc->npl_members = 0;
	sc->pl_gen = 0;
	sc->ids_cap = 0;
	sc->dir = NULL;
	sc->procfd = -1;
	sc->pattern_hits = NULL;
}

int scanner_excluded(struct scanner *sc, pid_t pid)
{
	if (!sc->nanc)
		ancestors(sc);
	return pid_in_list(sc->ancestors, sc->nanc, pid);
}

/* What the caller is besides itself and its ancestors (o: the reap's options): what o names,
 * and its pipeline, found by its session and the pipes on its standard descriptors. */
void scanner_callers(struct scanner *sc, const struct reaper_opts *o)
{
	sc->exclude = o->exclude;
	sc->nexclude = o->exclude ? o->nexclude : 0;
	sc->exclude_pgrp = o->exclude_pgrp;
	sc->outside_session = o->outside_session;
	/* a caller started in a session of its own (`setsid reaper ...`) has its shell, the
	 * shell's other jobs and its pipeline in its parent's: the sessions of its ancestors are
	 * the caller's too, init's among them when the shell never made one of its own (a CI
	 * runner's steps often share it; its id reads 0 when its leader is outside the pid
	 * namespace or is the kernel's first process), and init's when init is the shell */
	sc->sessions[0] = getsid(0);
	sc->nsessions = 1;
	for (pid_t p = sc->self; p > 0;) {
		struct reaper_stat st;
		if (procfs_stat(sc->procfd, p, &st) < 0)
			break;
		size_t i = 0;
		while (i < sc->nsessions && sc->sessions[i] != st.session)
			i++;
		if (i == sc->nsessions && st.session >= 0 && sc->nsessions < 8)
			sc->sessions[sc->nsessions++] = st.session;
		p = st.ppid;
	}
	for (int fd = 0; fd <= 2; fd++) {
		struct stat sb;
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fstat(fd, &sb) < 0 || !S_ISFIFO(sb.st_mode))
			continue;
		size_t i = 0;
		while (i < sc->npipes && sc->pipes[i].ino != (unsigned long)sb.st_ino)
			i++;
		sc->pipes[i].ino = (unsigned long)sb.st_ino;
		sc->pipes[i].acc = fl & O_ACCMODE;
		sc->npipes += i == sc->npipes;
	}
}

/* The access mode (O_RDONLY, O_WRONLY, O_RDWR) of pid's descriptor fd, -1 when unreadable. */
static int fd_access(struct scanner *sc, pid_t pid, int fd)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "%d/fdinfo/%d", (int)pid, fd);
	int f = openat(sc->procfd, path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	ssize_t n = read(f, buf, sizeof buf - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *flags = strstr(buf, "flags:");
	return flags ? (int)(strtoul(flags + 6, NULL, 8) & O_ACCMODE) : -1;
}

/* The pipe (its inode) on pid's descriptor fd, 0 when it holds none there. */
static unsigned long fd_pipe(struct scanner *sc, pid_t pid, int fd)
{
	char path[64], link[64];
	snprintf(path, sizeof path, "%d/fd/%d", (int)pid, fd);
	ssize_t n = readlinkat(sc->procfd, path, link, sizeof link - 1);
	if (n <= 6 || strncmp(link, "pipe:[", 6))
		return 0;
	link[n] = 0;
	return strtoul(link + 6, NULL, 10);
}

/* The other end of a pipe on the caller's fd 0, 1 or 2 is the caller's pipeline: the reader
 * of its output (`| tee`, and what that reader started with it), the writer of its input. A
 * process that holds the same end as the caller (a daemon left writing to the same output)
 * is not. A pipeline member holds the pipe where a pipeline puts it: a reader on its fd 0, a
 * writer on its fd 1 or 2; only those are looked at (one read per process when only the
 * caller's output is a pipe). */
static int pipeline_partner(struct scanner *sc, pid_t pid)
{
	int readers = 0, writers = 0;
	for (size_t i = 0; i < sc->npipes; i++) {
		readers |= sc->pipes[i].acc != O_RDONLY; /* the caller writes: look for its reader */
		writers |= sc->pipes[i].acc != O_WRONLY;
	}
	for (int fd = readers ? 0 : 1; fd <= (writers ? 2 : 0); fd++) {
		unsigned long ino = fd_pipe(sc, pid, fd);
		if (!ino)
			continue;
		for (size_t i = 0; i < sc->npipes; i++) {
			if (sc->pipes[i].ino != ino)
				continue;
			int acc = fd_access(sc, pid, fd);
			if (acc >= 0 && acc != sc->pipes[i].acc)
				return 1;
		}
	}
	return 0;
}

/* A process of the caller's sessions with a pipe on fd 0, 1 or 2: the pipes and its ends. */
struct pl_proc {
	pid_t pid;
	uint64_t start_time;
	unsigned long ino[3];
	int acc[3];
	int member;
};

static int caller_session(const struct scanner *sc, pid_t sid)
{
	for (size_t i = 0; i < sc->nsessions; i++)
		if (sid == sc->sessions[i])
			return 1;
	return 0;
}

/* A pipe the caller or one of its ancestors holds links nothing: what the run left holds it
 * too (inherited), at the same end as the caller. */
static int callers_pipe(struct scanner *sc, unsigned long ino)
{
	for (size_t i = 0; i < sc->npipes; i++)
		if (sc->pipes[i].ino == ino)
			return 1;
	if (!sc->nanc)
		ancestors(sc);
	for (size_t a = 1; a < sc->nanc; a++)
		for (int fd = 0; fd <= 2; fd++)
			if (fd_pipe(sc, sc->ancestors[a], fd) == ino)
				return 1;
	return 0;
}

/* The pipeline past the caller's partners: a process of the caller's sessions holding the
 * other end of a pipe a member holds on fd 0-2 (tee's output, read by cat) is a member, until
 * no more join. Read once per scan, when a match needs it. */
static void pipeline_members(struct scanner *sc)
{
	if (sc->pl_gen == sc->gen + 1)
		return;
	sc->pl_gen = sc->gen + 1;
	sc->npl_members = 0;
	if (!sc->nanc)
		ancestors(sc);
	int dfd = openat(sc->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	struct pl_proc *v = NULL;
	size_t n = 0, cap = 0;
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd;
	while ((nd = getdents64(dfd, dents, sizeof dents)) > 0)
		for (ssize_t off = 0; off < nd;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			pid_t pid = atoi(d->d_name);
			struct reaper_stat st;
			if (pid == sc->self || procfs_stat(sc->procfd, pid, &st) < 0 || !caller_session(sc, st.session))
				continue;
			struct pl_proc p = { .pid = pid, .start_time = st.start_time };
			int any = 0;
			for (int fd = 0; fd <= 2; fd++) {
				if (!(p.ino[fd] = fd_pipe(sc, pid, fd)))
					continue;
				p.acc[fd] = fd_access(sc, pid, fd);
				any = 1;
			}
			if (!any || pid_in_list(sc->ancestors, sc->nanc, pid))
				continue;
			if (n == cap) {
				struct pl_proc *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
				if (!nv)
					break;
				v = nv;
			}
			p.member = pipeline_partner(sc, pid);
			v[n++] = p;
		}
	close(dfd);
	for (int grew = 1; grew;) {
		grew = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i].member)
				continue;
			for (size_t j = 0; j < n && !v[i].member; j++) {
				if (!v[j].member)
					continue;
				for (int a = 0; a <= 2 && !v[i].member; a++)
					for (int b = 0; b <= 2 && !v[i].member; b++)
						if (v[i].ino[a] && v[i].ino[a] == v[j].ino[b] && v[i].acc[a] >= 0 &&
						    v[j].acc[b] >= 0 && v[i].acc[a] != v[j].acc[b] &&
						    !callers_pipe(sc, v[i].ino[a]))
							v[i].member = grew = 1;
			}
		}
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		m += v[i].member;
	free(sc->pl_members);
	sc->pl_members = m ? malloc(m * sizeof *sc->pl_members) : NULL;
	for (size_t i = 0; i < n && sc->pl_members; i++)
		if (v[i].member)
			sc->pl_members[sc->npl_members++] = (struct reaper_ident){ v[i].pid, v[i].start_time };
	free(v);
}

/* Whether pid, of the caller's sessions, holds a pipe on fd 0-2 that is not the caller's own
 * (only such a process can be a member past the partners). */
static int holds_other_pipe(struct scanner *sc, pid_t pid)
{
	for (int fd = 0; fd <= 2; fd++) {
		unsigned long ino = fd_pipe(sc, pid, fd);
		if (!ino)
			continue;
		size_t i = 0;
		while (i < sc->npipes && sc->pipes[i].ino != ino)
			i++;
		if (i == sc->npipes)
			return 1;
	}
	return 0;
}

uint32_t scanner_not_callers(struct scanner *sc, const struct pidref *ref, const struct reaper_stat *st,
			     uint32_t mask)
{
	for (size_t i = 0; i < sc->nexclude; i++)
		if (sc->exclude[i].pid == st->pid && sc->exclude[i].start_time == st->start_time)
			return 0;
	if (sc->exclude_pgrp > 0 && st->pgrp == sc->exclude_pgrp)
		return 0;
	for (size_t i = 0; i < sc->nsessions; i++)
		if (st->session == sc->sessions[i])
			mask &= ~sc->outside_session;
	/* a partner's descriptors are read after it was pinned: when the pin still holds after
	 * the reads they were its own (when it does not, it is gone and nobody's). Looked for in
	 * every session: reaper or its partner may have made one of its own (`setsid reaper`). */
	if (mask && sc->npipes && pipeline_partner(sc, st->pid) && pidref_held(ref, sc->procfd) == 0)
		return 0;
	if (mask && sc->npipes && caller_session(sc, st->session) && holds_other_pipe(sc, st->pid)) {
		pipeline_members(sc);
		for (size_t i = 0; i < sc->npl_members; i++)
			if (sc->pl_members[i].pid == st->pid && sc->pl_members[i].start_time == st->start_time &&
			    pidref_held(ref, sc->procfd) == 0)
				return 0;
	}
	return mask;
}

/* A pid is new unless the process holding it now is a candidate already: the same
 * identity, not just the same number (a candidate's pid may have passed to another). */
int scanner_known(const struct scanner *sc, const struct candset *cs, pid_t pid)
{
	ssize_t i = candset_find(cs, pid);
	if (i < 0)
		return 0;
	const struct cand *c = &cs->v[i];
	if (c->ref.pid > 0)
		return pidref_held(&c->ref, sc->procfd) == 0;
	struct reaper_stat st;
	return procfs_stat(sc->procfd, pid, &st) == 0 && st.start_time == c->info.start_time;
}

/* The environment of a process whose leader has exited while other threads run on: read
 * through one of those threads (they share it). */
static ssize_t environ_via_thread(struct scanner *sc, pid_t pid)
{
	char path[48];
	snprintf(path, sizeof path, "%d/task", (int)pid);
	int tfd = openat(sc->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return errno == ENOENT ? 0 : -errno;
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd, n = 0;
	while (n <= 0 && (nd = getdents64(tfd, dents, sizeof dents)) > 0)
		for (ssize_t off = 0; off < nd && n <= 0;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9' || atoi(d->d_name) == pid)
				continue;
			char what[48];
			snprintf(what, sizeof what, "task/%d/environ", atoi(d->d_name));
			n = procfs_read(sc->procfd, pid, what, &sc->buf);
		}
	close(tfd);
	return n;
}

/* pid's environment into sc->buf: its length; 0 when there is none to judge (a kernel
 * thread, a zombie without live threads, an environment that is truly empty or whose memory
 * is gone, a process gone);
 * -EAGAIN while it cannot be judged yet: an exec is replacing the memory it lives in (the
 * read comes back empty, and stat shows no settled bounds for it); other -errno when it
 * cannot be read. */
ssize_t scanner_environ(struct scanner *sc, pid_t pid)
{
	ssize_t n = procfs_read(sc->procfd, pid, "environ", &sc->buf);
	if ((n == 0 || n == -ESRCH) && kernel_thread(sc, pid))
		return 0;
	if (n == -EACCES) {
		/* without privilege, an exited leader's own environ is refused (it has no memory
		 * left to check the access against); its live threads share the environment */
		struct reaper_stat st;
		if (procfs_stat(sc->procfd, pid, &st) == 0 && st.state == 'Z' && st.num_threads > 1)
			return environ_via_thread(sc, pid);
		return n;
	}
	int settled = 0;
	for (int tries = 0; (n == 0 || n == -ESRCH) && tries < 4; tries++) {
		struct reaper_stat st, again;
		int r = procfs_stat(sc->procfd, pid, &st);
		if (r < 0)
			return r == -ENOENT || r == -ESRCH ? 0 : r;
		if (st.flags & PF_KTHREAD)
			return 0;
		/* no memory of its own (ESRCH): an exited or exiting leader; its other threads,
		 * if any, share the process's environment */
		if (n == -ESRCH || st.state == 'Z' || st.state == 'X')
			return st.num_threads > 1 ? environ_via_thread(sc, pid) : 0;
		n = procfs_read(sc->procfd, pid, "environ", &sc->buf);
		if (n != 0)
			break;
		/* the same bounds on both sides of an empty read, the same exec: either truly empty,
		 * or memory the process has unmapped, which no wait will make readable (an exec
		 * under way shows no bounds or new ones; twice in a row rules out one that ended
		 * on the very same bounds) */
		if (st.env_end && procfs_stat(sc->procfd, pid, &again) == 0 && again.start_time == st.start_time &&
		    again.env_start == st.env_start && again.env_end == st.env_end) {
			if (st.env_start == st.env_end || ++settled == 2)
				return 0;
		} else {
			settled = 0;
		}
		sched_yield();
	}
	return n == 0 ? -EAGAIN : n;
}

/* Children of every thread of pid, appended to *kids. */
int scanner_children(struct scanner *sc, pid_t pid, pid_t **kids, size_t *nk, size_t *ck)
{
	char path[48];
	snprintf(path, sizeof path, "%d/task", (int)pid);
	int tfd = openat(sc->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0) {
		scanner_read_failed(sc, -errno);
		return 0;
	}
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
			scanner_read_failed(sc, n);
			for (char *p = sc->aux.p, *end = p + (n > 0 ? n : 0); p < end;) {
				char *e;
				long v = strtol(p, &e, 10);
				if (e == p)
					break;
				p = e;
				if ((r = ARRAY_RESERVE(*kids, *ck, *nk + 1, 64)) < 0)
					break;
				(*kids)[(*nk)++] = (pid_t)v;
			}
		}
	}
	close(tfd);
	return r;
}

int scanner_scan(struct scanner *sc, struct candset *cs)
{
	int added = 0, r;
	sc->starved = 0;
	sc->scan_err = 0;
	sc->gen++;
	sc->tick0 = procfs_tick_now(sc->ticks);
	for (size_t i = 0; i < sizeof sc->anc_cache / sizeof *sc->anc_cache; i++)
		sc->anc_cache[i].pid = 0;
	sc->anc_last = -1;
	if (sc->cgroup_mask) {
		if ((r = finder_scan_cgroup(sc, cs)) < 0)
			return r;
		added += r;
	}
	if (sc->env_mask && !sc->env_deferred) {
		if ((r = finder_scan_env(sc, cs)) < 0)
			return r;
		added += r;
	}
	if (sc->tree_mask) {
		if ((r = finder_scan_tree(sc, cs)) < 0)
			return r;
		added += r;
	}
	if (sc->call_mask) {
		if ((r = finder_scan_call(sc, cs)) < 0)
			return r;
		added += r;
	}
	return added;
}
