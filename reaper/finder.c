/* SPDX-License-Identifier: MIT */
/* finder: one scan of every finder over /proc. The marker finder reads each process's
 * environ (the hot path: one openat + read per process, nothing else); the tree finder
 * follows /proc/PID/task/TID/children down from its root and from every descendant already
 * known, so it costs what the tree holds, not what the system holds. */
#define _GNU_SOURCE
#include "scanner.h"
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000
#define FD_RESERVE 8          /* descriptors a scan keeps for its own reads */
#define JUDGE_BOUND 2.0       /* seconds a scan waits for environments under an exec */

static int children_of(struct scanner *sc, pid_t pid, pid_t **kids, size_t *nk, size_t *ck);

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

/* The start-time tick (stat field 22's clock) of now. */
static uint64_t tick_now(const struct scanner *sc)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * (uint64_t)sc->ticks + (uint64_t)ts.tv_nsec / (1000000000u / (uint64_t)sc->ticks);
}

/* A read failed: a lack of descriptors or memory means the scan may have missed something. */
static void read_failed(struct scanner *sc, ssize_t r)
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
 * list empty: every empty environment is then looked at through stat. */
static void kernel_threads(struct scanner *sc)
{
	struct reaper_stat st;
	if (procfs_stat(sc->procfd, 2, &st) < 0 || !(st.flags & PF_KTHREAD) || st.ppid != 0)
		return;
	pid_t *k = NULL;
	size_t n = 0, c = 0;
	if (children_of(sc, 2, &k, &n, &c) < 0) {
		free(k);
		return;
	}
	qsort(k, n, sizeof *k, pid_cmp);
	sc->kthreads = k;
	sc->nkthreads = n;
}

static int kernel_thread(const struct scanner *sc, pid_t pid)
{
	return sc->nkthreads && bsearch(&pid, sc->kthreads, sc->nkthreads, sizeof pid, pid_cmp);
}

static int in_list(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

/* NAME of a "NAME=VALUE" marker into name[256]; a pointer to VALUE, or NULL when too long. */
static const char *marker_split(const char *m, char *name)
{
	size_t namelen = (size_t)(strchr(m, '=') - m);
	if (namelen >= 256)
		return NULL;
	memcpy(name, m, namelen);
	name[namelen] = 0;
	return m + namelen + 1;
}

/* The value tree finder i's NAME had when its root was started: a child forked without exec
 * carries it, so it names nobody else. */
static int tree_inherit(struct scanner *sc, size_t i)
{
	char name[256];
	size_t vlen = 0;
	if (!marker_split(sc->f[i].marker, name))
		return -EINVAL;
	ssize_t n = procfs_read(sc->procfd, sc->f[i].root ? sc->f[i].root : sc->self, "environ", &sc->buf);
	const char *v = n > 0 ? reaper_environ_get(sc->buf.p, (size_t)n, name, &vlen) : NULL;
	if (v && !(sc->tree_inherited[i] = strndup(v, vlen)))
		return -ENOMEM;
	return 0;
}

/* Which of the tree finders in bits keep a process (identity pinned as st, environ env):
 * started early enough, not skipped, not another test's marker. */
static uint32_t tree_keep(const struct scanner *sc, uint32_t bits, const struct reaper_stat *st,
			  const char *env, ssize_t envlen)
{
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(bits & (1u << i)))
			continue;
		const struct reaper_finder *f = &sc->f[i];
		int drop = st->start_time < f->since || in_list(f->skip, f->nskip, st->pid);
		if (!drop && f->marker && envlen > 0) {
			char name[256];
			size_t vlen = 0;
			const char *own = marker_split(f->marker, name), *inh = sc->tree_inherited[i];
			const char *v = reaper_environ_get(env, (size_t)envlen, name, &vlen);
			drop = v && !(vlen == strlen(own) && memcmp(v, own, vlen) == 0) &&
			       !(inh && vlen == strlen(inh) && memcmp(v, inh, vlen) == 0);
		}
		if (drop)
			bits &= ~(1u << i);
	}
	return bits;
}

int scanner_init(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns)
{
	memset(sc, 0, sizeof *sc);
	sc->procfd = -1;
	for (size_t i = 0; i < 32; i++)
		sc->roots[i] = PIDREF_NULL;
	if (nf > 32)
		return -E2BIG;
	for (size_t i = 0; i < nf; i++) {
		if (f[i].kind == REAPER_FIND_ENV) {
			if (!f[i].marker || !strchr(f[i].marker, '=') || f[i].marker[0] == '=')
				return -EINVAL;
			sc->elen[i] = strlen(f[i].marker);
			sc->env_mask |= 1u << i;
		} else if (f[i].kind == REAPER_FIND_TREE) {
			if (f[i].root < 0 || (f[i].nskip && !f[i].skip) ||
			    (f[i].marker && (!strchr(f[i].marker, '=') || f[i].marker[0] == '=')))
				return -EINVAL;
			sc->elen[i] = f[i].marker ? strlen(f[i].marker) : 0;
			sc->tree_mask |= 1u << i;
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
	/* a root is walked only while it is the process it was when the reap began */
	for (size_t i = 0; i < nf; i++) {
		struct reaper_stat st;
		if (f[i].kind != REAPER_FIND_TREE || !f[i].root)
			continue;
		r = pidref_open_stat(&sc->roots[i], sc->procfd, f[i].root, &st);
		if (r == -EMFILE || r == -ENFILE)
			r = pidref_pin_stat(&sc->roots[i], sc->procfd, f[i].root, &st);
		if (r < 0 && r != -ESRCH)
			return r;
	}
	int dfd = openat(sc->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !(sc->dir = fdopendir(dfd))) {
		r = -errno;
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	for (size_t i = 0; i < nf; i++)
		if ((sc->tree_mask & (1u << i)) && f[i].marker && (r = tree_inherit(sc, i)) < 0)
			return r;
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
		if (procfs_stat(sc->procfd, kids[i], &st) == 0 && st.state == 'Z' && st.num_threads <= 1)
			kids[sc->nhost_zombies++] = kids[i];
	}
	sc->host_zombies = kids;
	kernel_threads(sc);
	return 0;
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
	pbuf_free(&sc->buf);
	pbuf_free(&sc->aux);
	free(sc->host_zombies);
	free(sc->kthreads);
	sc->kthreads = NULL;
	sc->nkthreads = 0;
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
static ssize_t environ_of(struct scanner *sc, pid_t pid)
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

/* Which marker finders an environment holds. */
static uint32_t env_bits(const struct scanner *sc, const char *env, size_t len)
{
	uint32_t mask = 0;
	for (size_t i = 0; i < sc->nf; i++)
		if ((sc->env_mask & (1u << i)) && reaper_environ_has(env, len, sc->f[i].marker, sc->elen[i]))
			mask |= 1u << i;
	return mask;
}

/* Look at pid again before this scan ends (once). */
static int pend(struct scanner *sc, pid_t pid)
{
	for (size_t i = 0; i < sc->npending; i++)
		if (sc->pending[i] == pid)
			return 0;
	if (sc->npending == sc->cpending) {
		size_t nc = sc->cpending ? sc->cpending * 2 : 16;
		pid_t *nv = realloc(sc->pending, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		sc->pending = nv;
		sc->cpending = nc;
	}
	sc->pending[sc->npending++] = pid;
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

/* Whether the pinned process ref is listed in a cgroup of the cgroup finders in mask now:
 * 1, 0 or -errno. */
static int in_cgroups(struct scanner *sc, const struct pidref *ref, uint32_t mask)
{
	int in = 0;
	for (size_t i = 0; in != 1 && i < sc->nf; i++)
		if (mask & (1u << i))
			in = cgroup_holds(sc->f[i].cgroup, ref, sc->procfd, &sc->cgagain, &sc->cgagain_cap);
	return in;
}

/* Identify pid (pidfd + start time) and record what it is. want: the start time it must
 * have (0: any). What found it is checked again for a process younger than the scan (it may
 * hold a pid whose earlier holder was read): env, its environ as read (marker finders), is
 * read again; parent, the process whose children listed it (tree finders; 0 otherwise),
 * must still be its parent, and pref (NULL for the caller) still the process the list was
 * read from. Returns the new index, -1 when it is not a candidate, or -errno. */
static ssize_t add(struct scanner *sc, struct candset *cs, pid_t pid, uint32_t mask, const char *env,
		   ssize_t envlen, uint64_t want, pid_t parent, const struct pidref *pref)
{
	struct reaper_stat st;
	struct cand c = { 0 };
	int r = pin(sc, cs, &c.ref, pid, &st);
	if (r < 0) {
		read_failed(sc, r);
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
		if (env) {
			envlen = environ_of(sc, pid);
			env = sc->buf.p;
			mask = envlen > 0 ? env_bits(sc, env, (size_t)envlen) : 0;
			if (envlen == -EAGAIN && pend(sc, pid) < 0)
				envlen = -ENOMEM;
			read_failed(sc, envlen);
		} else if (parent && (st.ppid != parent || (pref && pidref_held(pref, sc->procfd) < 0))) {
			mask = 0;
		} else if (mask & sc->cgroup_mask) {
			/* listed before it was pinned: the pid may have passed to a process outside */
			if (in_cgroups(sc, &c.ref, mask & sc->cgroup_mask) != 1)
				mask &= ~sc->cgroup_mask;
		}
		if (!mask) {
			pidref_done(&c.ref);
			return envlen == -ENOMEM ? -ENOMEM : -1;
		}
	}
	/* A zombie child of ours that the host exited and left before the reap: its exit
	 * status is the host's, never ours to take. */
	if (st.state == 'Z' && st.num_threads <= 1 && st.ppid == sc->self && host_zombie(sc, pid)) {
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
		envlen = environ_of(sc, pid);
		env = sc->buf.p;
		pi->environ_unreadable = envlen < 0 && (envlen == -EACCES || envlen == -EPERM);
	}
	if (mask & sc->tree_mask) {
		mask = (mask & ~sc->tree_mask) | tree_keep(sc, mask & sc->tree_mask, &st, env, envlen);
		if (!mask) {
			pidref_done(&c.ref);
			return -1;
		}
		pi->matched_by = mask;
	}
	pi->host_child = st.ppid == sc->self && in_list(sc->host, sc->nhost, pid);
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
		pi->fate = REAPER_KEPT; /* never signalled; its pidref only says whether it is still it */
	} else {
		pi->allowed = pol == REAPER_ALLOW;
		pi->fate = REAPER_ALIVE;
		/* a leader that has exited while its other threads run on is alive */
		c.live = (st.state != 'Z' && st.state != 'X') || st.num_threads > 1;
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
	/* Even a process identified in the scan that just ran may have been read between its
	 * fork and its exec: what it is now is read again, once, when it is described. */
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
	/* Found early (by descent, in its cgroup, or by a marker it inherited), it may carry the
	 * markers and its test only since its exec; a test read before the exec may be its
	 * parent's. The environment of its last exec names the test, when it names one. */
	ssize_t n = procfs_read(sc->procfd, pi->pid, "environ", &sc->buf);
	for (size_t i = 0; n > 0 && i < sc->nf; i++)
		if ((sc->env_mask & (1u << i)) && reaper_environ_has(sc->buf.p, (size_t)n, sc->f[i].marker, sc->elen[i]))
			pi->matched_by |= 1u << i;
	size_t vlen = 0;
	const char *test = n > 0 ? reaper_environ_get(sc->buf.p, (size_t)n, "REAPER_TEST", &vlen) : NULL;
	char *t = test && vlen ? strndup(test, vlen) : NULL;
	if (t) {
		free(pi->test);
		pi->test = t;
	}
}

/* A pid is new unless the process holding it now is a candidate already: the same
 * identity, not just the same number (a candidate's pid may have passed to another). */
static int known(const struct scanner *sc, const struct candset *cs, pid_t pid)
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

/* The marker finders' look at one pid: 1 when it became a candidate, 0 when not (or not
 * yet: pending), -ENOMEM. */
static int examine(struct scanner *sc, struct candset *cs, pid_t pid)
{
	if (excluded(sc, pid) || known(sc, cs, pid))
		return 0;
	ssize_t n = environ_of(sc, pid);
	if (n == -EAGAIN)
		return pend(sc, pid);
	if (n <= 0) {
		read_failed(sc, n); /* else gone, a kernel thread, a zombie, or unreadable */
		return 0;
	}
	uint32_t mask = env_bits(sc, sc->buf.p, (size_t)n);
	if (!mask)
		return 0;
	ssize_t r = add(sc, cs, pid, mask, sc->buf.p, n, 0, 0, NULL);
	return r == -ENOMEM ? -ENOMEM : r >= 0;
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
		int r = examine(sc, cs, pid);
		if (r < 0)
			return r;
		added += r;
	}
	/* what an exec had under way is looked at again until it can be judged, bounded */
	double naps = 0, nap = 0.0001;
	while (sc->npending && naps < JUDGE_BOUND) {
		struct timespec ts = { 0, (long)(nap * 1e9) };
		nanosleep(&ts, NULL);
		naps += nap;
		nap = nap * 2 < 0.01 ? nap * 2 : 0.01;
		size_t np = sc->npending;
		pid_t *again = malloc(np * sizeof *again);
		if (!again)
			return -ENOMEM;
		memcpy(again, sc->pending, np * sizeof *again);
		sc->npending = 0;
		for (size_t i = 0; i < np; i++) {
			int r = examine(sc, cs, again[i]);
			if (r < 0) {
				free(again);
				return r;
			}
			added += r;
		}
		free(again);
	}
	sc->unjudged = sc->npending;
	if (sc->npending)
		sc->scan_err = EAGAIN;
	sc->npending = 0;
	return added;
}

/* Children of every thread of pid, appended to *kids. */
static int children_of(struct scanner *sc, pid_t pid, pid_t **kids, size_t *nk, size_t *ck)
{
	char path[48];
	snprintf(path, sizeof path, "%d/task", (int)pid);
	int tfd = openat(sc->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0) {
		read_failed(sc, -errno);
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
			read_failed(sc, n);
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

/* The identity a tree walk item stands for: a pinned root (NULL for the caller itself) or a
 * candidate. Looked up afresh each time: adding candidates may move the set. */
struct item {
	pid_t pid;
	uint32_t bits;
	int root;   /* finders[root] when >= 0 */
	ssize_t cand;
};

static const struct pidref *item_ref(const struct scanner *sc, const struct candset *cs, const struct item *it)
{
	if (it->cand >= 0)
		return &cs->v[it->cand].ref;
	return it->root >= 0 && sc->f[it->root].root ? &sc->roots[it->root] : NULL;
}

static int scan_tree(struct scanner *sc, struct candset *cs)
{
	/* queue: the roots, then every pinned candidate found by a tree finder (that is how
	 * orphans re-parented away from the root stay in the tree). A process is walked only
	 * while it is still the one pinned: a pid that has passed to another process since
	 * lends its new holder's children nothing. */
	struct item *q = NULL;
	size_t qn = 0, qc = 0;
	pid_t *kids = NULL;
	size_t kc = 0;
	int added = 0, r = 0;
#define PUSH(P, B, ROOT, CAND)                                               \
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
		q[qn++] = (struct item){ (P), (B), (ROOT), (CAND) };         \
	} while (0)
	for (size_t i = 0; i < sc->nf; i++)
		if ((sc->tree_mask & (1u << i)) && (!sc->f[i].root || sc->roots[i].pid > 0))
			PUSH(sc->f[i].root ? sc->f[i].root : sc->self, 1u << i, (int)i, -1);
	for (size_t i = 0; i < cs->n; i++)
		if (cs->v[i].ref.pid > 0 && cs->v[i].info.fate != REAPER_KEPT && (cs->v[i].info.matched_by & sc->tree_mask))
			PUSH(cs->v[i].info.pid, cs->v[i].info.matched_by & sc->tree_mask, -1, (ssize_t)i);
	for (size_t qi = 0; qi < qn; qi++) {
		size_t nk = 0;
		const struct pidref *ref = item_ref(sc, cs, &q[qi]);
		if (ref && ref->pid <= 0)
			continue;
		if ((r = children_of(sc, q[qi].pid, &kids, &nk, &kc)) < 0)
			goto out;
		/* the list is this process's only if it still is the one pinned after the read */
		if (ref && pidref_held(ref, sc->procfd) < 0)
			continue;
		for (size_t k = 0; k < nk; k++) {
			pid_t c = kids[k];
			if (excluded(sc, c))
				continue;
			ssize_t idx = candset_find(cs, c);
			if (idx >= 0 && known(sc, cs, c)) {
				uint32_t had = cs->v[idx].info.matched_by;
				cs->v[idx].info.matched_by |= q[qi].bits;
				/* found by a marker first, it is in this tree only now: walk its
				 * children in this very pass (one reaper_scan is one pass) */
				if ((had & q[qi].bits) != q[qi].bits)
					PUSH(c, q[qi].bits, -1, idx);
				continue;
			}
			ssize_t a = add(sc, cs, c, q[qi].bits, NULL, 0, 0, q[qi].pid, item_ref(sc, cs, &q[qi]));
			if (a == -ENOMEM) {
				r = -ENOMEM;
				goto out;
			}
			if (a >= 0) {
				added++;
				PUSH(c, q[qi].bits, -1, a);
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
			if (idx >= 0 && known(sc, cs, id->pid)) {
				if (cs->v[idx].info.start_time == id->start_time)
					cs->v[idx].info.matched_by |= 1u << i;
				continue;
			}
			ssize_t a = add(sc, cs, id->pid, 1u << i, NULL, 0, id->start_time, 0, NULL);
			if (a == -ENOMEM)
				return -ENOMEM;
			added += a >= 0;
		}
	}
	return added;
}

/* Every member of each cgroup finder's cgroup and the cgroups below it. The kernel lists a
 * process whose main thread exited while another thread runs: add() takes it as alive, and
 * its pidfd reports its exit only when the last thread is gone. */
static int scan_cgroup(struct scanner *sc, struct candset *cs)
{
	int added = 0;
	for (size_t i = 0; i < sc->nf; i++) {
		if (!(sc->cgroup_mask & (1u << i)))
			continue;
		size_t n = 0;
		int r = cgroup_members(sc->f[i].cgroup, &sc->cgpids, &n, &sc->cgcap);
		if (r == -ENOMEM)
			return r;
		for (size_t k = 0; k < n; k++) {
			pid_t pid = sc->cgpids[k];
			if (excluded(sc, pid))
				continue;
			if (known(sc, cs, pid)) {
				cs->v[candset_find(cs, pid)].info.matched_by |= 1u << i;
				continue;
			}
			ssize_t a = add(sc, cs, pid, 1u << i, NULL, 0, 0, 0, NULL);
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
	sc->scan_err = 0;
	sc->gen++;
	sc->tick0 = tick_now(sc);
	for (size_t i = 0; i < sizeof sc->anc_cache / sizeof *sc->anc_cache; i++)
		sc->anc_cache[i].pid = 0;
	if (sc->cgroup_mask) {
		if ((r = scan_cgroup(sc, cs)) < 0)
			return r;
		added += r;
	}
	if (sc->env_mask && !sc->env_deferred) {
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
