/* SPDX-License-Identifier: MIT */
/* cgroup: cgroup v2 membership the kernel keeps through fork, exec, setsid, env -i and
 * zombie leaders. Finding the caller's cgroup (/proc/self/cgroup + the usual mount or mountinfo), creating,
 * entering, forking into, enumerating, waiting on (cgroup.events), freezing, killing and
 * removing a cgroup. See reaper.h for the contracts. */
#define _GNU_SOURCE
#include "cgroup.h"
#include "clock.h"
#include "clone3.h"
#include "array.h"

#include "pidref.h"
#include "procfs.h"
#include "reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Read a whole small file (at dirfd/name) into a NUL-terminated malloc'd buffer. */
static ssize_t slurp(int dirfd, const char *name, char **out)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0, cap = 0;
	char *b = NULL;
	ssize_t n = 0;
	for (;;) {
		if (ARRAY_RESERVE(b, cap, len + 2, 4096) < 0) {
			n = -1;
			errno = ENOMEM;
			break;
		}
		n = read(fd, b + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	int e = n < 0 ? errno : ENOMEM;
	close(fd);
	if (!b || n != 0) {
		free(b);
		return -e;
	}
	b[len] = 0;
	*out = b;
	return (ssize_t)len;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

/* The part of cgroup path cg below the mount root, or NULL when the mount does not show cg. */
static const char *below_root(const char *cg, const char *root)
{
	size_t rl = strlen(root);
	if (!strcmp(root, "/"))
		return cg;
	if (strncmp(cg, root, rl) || (cg[rl] && cg[rl] != '/'))
		return NULL;
	return cg + rl;
}

/* Is our own pid in the cgroup.procs of dir (the processes directly in it)? 1, 0, or -errno. */
static int lists_self(const char *dir)
{
	char file[PATH_MAX], b[4096];
	if ((size_t)snprintf(file, sizeof file, "%s/cgroup.procs", dir) >= sizeof file)
		return -ENAMETOOLONG;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char self[24];
	int sl = snprintf(self, sizeof self, "%d", (int)getpid()), found = 0;
	size_t have = 0; /* the start of a pid cut by the end of the last read */
	ssize_t n;
	while (!found && ((n = read(fd, b + have, sizeof b - have - 1)) > 0 || (n < 0 && errno == EINTR))) {
		if (n < 0)
			continue;
		size_t len = have + (size_t)n;
		b[len] = 0;
		char *line = b, *nl;
		for (; (nl = strchr(line, '\n')); line = nl + 1)
			if (nl - line == sl && !memcmp(line, self, (size_t)sl))
				found = 1;
		have = len - (size_t)(line - b);
		memmove(b, line, have);
	}
	int e = n < 0 ? errno : 0;
	close(fd);
	return e ? -e : found;
}

/* Our cgroup (cg, as /proc/self/cgroup shows it) on a cgroup2 mount at one of the usual places
 * (/sys/fs/cgroup unified, /sys/fs/cgroup/unified hybrid), known without reading mountinfo
 * (the kernel formats every mount for it). Only a writable mount that shows the hierarchy from
 * our cgroup namespace's root is taken; that is proven, not assumed: the directory lists us, or,
 * for the root of the initial namespace (not listed: its cgroup.procs is every process of the
 * host), it is a hierarchy's root (no cgroup.events there). 0, or -ENOENT: ask mountinfo. */
#define CGROUP_INIT_NS_INO 0xEFFFFFFBu /* the kernel's PROC_CGROUP_INIT_INO */
static int current_fast(const char *cg, char *buf, size_t len)
{
	static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	for (size_t i = 0; i < sizeof mounts / sizeof *mounts; i++) {
		struct statfs sf;
		if (statfs(mounts[i], &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
			continue;
		if (sf.f_flags & ST_RDONLY)
			return -ENOENT; /* a writable one elsewhere may show the same cgroup */
		int w = snprintf(buf, len, "%s%s", mounts[i], strcmp(cg, "/") ? cg : "");
		if (w < 0 || (size_t)w >= len)
			return -ENOENT;
		if (strcmp(cg, "/"))
			return lists_self(buf) == 1 ? 0 : -ENOENT;
		/* the link's text names the namespace's inode: a third of the cost of a stat */
		char ns[64], init[32];
		ssize_t n = readlink("/proc/self/ns/cgroup", ns, sizeof ns - 1);
		int il = snprintf(init, sizeof init, "cgroup:[%u]", CGROUP_INIT_NS_INO);
		if (n != il || memcmp(ns, init, (size_t)il))
			return -ENOENT;
		char events[PATH_MAX];
		snprintf(events, sizeof events, "%s/cgroup.events", buf);
		return access(events, F_OK) < 0 && errno == ENOENT ? 0 : -ENOENT;
	}
	return -ENOENT;
}

int reaper_cgroup_current(char *buf, size_t len)
{
	return reaper_cgroup_of(0, buf, len);
}

int reaper_cgroup_of(pid_t pid, char *buf, size_t len)
{
	char *text = NULL, *cg = NULL, path[48];
	if (pid < 0)
		return -EINVAL;
	if (pid)
		snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	/* the path is shown relative to the reader's cgroup namespace, which our mountinfo shows */
	ssize_t n = slurp(AT_FDCWD, pid ? path : "/proc/self/cgroup", &text);
	if (n == -ENOENT || n == -ESRCH)
		return pid ? -ESRCH : (int)n;
	if (n < 0)
		return (int)n;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!strncmp(line, "0::", 3))
			cg = line + 3;
	}
	int r = -ENOENT;
	/* a cgroup outside our cgroup namespace ("/..") is nowhere we can see */
	if (!cg || cg[0] != '/' || strstr(cg, "/..")) {
		free(text);
		return r;
	}
	if (!pid && current_fast(cg, buf, len) == 0) {
		free(text);
		return 0;
	}
	char *mi = NULL;
	if ((n = slurp(AT_FDCWD, "/proc/self/mountinfo", &mi)) < 0) {
		free(text);
		return (int)n;
	}
	/* The most specific cgroup2 mount that shows our cgroup; a writable one over a
	 * read-only one with the same root. */
	size_t best_root = 0;
	int best_rw = -1;
	for (char *line = mi, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		*sep = 0;
		char *f[6] = { 0 }, *save = NULL;
		char *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &save))
			f[i] = tok;
		if (!f[5])
			continue;
		unescape(f[3]);
		unescape(f[4]);
		const char *rest = below_root(cg, f[3]);
		if (!rest)
			continue;
		size_t rl = strlen(f[3]);
		int rw = !strncmp(f[5], "rw", 2) && (f[5][2] == 0 || f[5][2] == ',');
		if (best_rw >= 0 && (rl < best_root || (rl == best_root && (best_rw || !rw))))
			continue;
		int w = snprintf(buf, len, "%s%s", f[4], strcmp(rest, "/") ? rest : "");
		if (w < 0 || (size_t)w >= len) {
			r = -ENAMETOOLONG;
			continue;
		}
		best_root = rl;
		best_rw = rw;
		r = 0;
	}
	free(mi);
	free(text);
	return r;
}

static int check_dir(const char *dir)
{
	struct statfs sf;
	if (statfs(dir, &sf) < 0)
		return -errno;
	if (sf.f_type != CGROUP2_SUPER_MAGIC)
		return -ENOTDIR;
	if (sf.f_flags & ST_RDONLY)
		return -EROFS;
	return 0;
}

int reaper_cgroup_usable(const char *dir)
{
	char own[PATH_MAX];
	if (!dir) {
		int r = reaper_cgroup_current(own, sizeof own);
		if (r < 0)
			return r;
		dir = own;
	}
	int r = check_dir(dir);
	if (r < 0)
		return r;
	if (access(dir, W_OK) < 0)
		return -errno;
	/* by its path: no descriptor of the directory to open and close for one question */
	char procs[PATH_MAX];
	if ((size_t)snprintf(procs, sizeof procs, "%s/cgroup.procs", dir) >= sizeof procs)
		return -ENAMETOOLONG;
	return access(procs, W_OK) < 0 ? -errno : 0;
}

int reaper_cgroup_create(const char *parent, const char *name, char *buf, size_t len)
{
	char own[PATH_MAX], gen[64];
	int r;
	if (!parent) {
		if ((r = reaper_cgroup_current(own, sizeof own)) < 0 || (r = reaper_cgroup_usable(own)) < 0)
			return r;
		parent = own;
	} else if ((r = check_dir(parent)) < 0) {
		return r;
	}
	if (!name) {
		uint32_t rnd = 0;
		if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
			rnd = (uint32_t)time(NULL) ^ (uint32_t)clock();
		snprintf(gen, sizeof gen, "reaper-%d-%08x", (int)getpid(), rnd);
		name = gen;
	}
	if (!*name || strchr(name, '/') || name[0] == '.')
		return -EINVAL;
	int w = snprintf(buf, len, "%s/%s", parent, name);
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	return mkdir(buf, 0755) < 0 ? -errno : 0;
}

/* Write all of val to dirfd/file. */
static int write_at(int dirfd, const char *file, const char *val)
{
	int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t l = strlen(val);
	ssize_t n;
	while ((n = write(fd, val, l)) < 0 && errno == EINTR)
		;
	int r = n == (ssize_t)l ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return r;
}

int cgroup_write(const char *path, const char *file, const char *val)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int r = write_at(dfd, file, val);
	close(dfd);
	return r;
}

int reaper_cgroup_enter(const char *path, char *prev, size_t len)
{
	int r;
	if (prev && (r = reaper_cgroup_current(prev, len)) < 0)
		return r;
	char pid[24];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	return cgroup_write(path, "cgroup.procs", pid);
}

pid_t reaper_cgroup_fork(const char *path)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
#ifdef SYS_clone3
	struct clone_args a = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)dfd };
	long cpid = syscall(SYS_clone3, &a, sizeof a);
	if (cpid >= 0) {
		close(dfd);
		return (pid_t)cpid;
	}
	/* no clone3 (ENOSYS, also what seccomp filters and valgrind answer; EPERM from filters
	 * that refuse what they do not know), or one without CLONE_INTO_CGROUP (EINVAL, E2BIG):
	 * the child moves itself (a cgroup we may not write to still says so then) */
	if (errno != ENOSYS && errno != EPERM && errno != EINVAL && errno != E2BIG) {
		int e = errno;
		close(dfd);
		return -e;
	}
#endif
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		int e = errno;
		close(dfd);
		return -e;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		char me[24];
		snprintf(me, sizeof me, "%d", (int)getpid());
		int r = write_at(dfd, "cgroup.procs", me);
		if (r < 0) {
			int e = -r;
			if (write(p[1], &e, sizeof e) < 0) {
				/* the parent sees EOF: it waits for our status instead */
			}
			_exit(127);
		}
		close(p[1]);
		close(dfd);
		return 0;
	}
	int e = pid < 0 ? errno : 0;
	close(p[1]);
	close(dfd);
	if (pid > 0) {
		ssize_t n;
		while ((n = read(p[0], &e, sizeof e)) < 0 && errno == EINTR)
			;
		if (n != (ssize_t)sizeof e)
			e = 0;
		if (e) {
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	close(p[0]);
	return e ? -e : pid;
}

#ifdef CLONE3_RUN
/* On our own stack, as vfork: a stack of its own (mapped, its pages faulted in by the child,
 * unmapped again with a TLB flush of every CPU the child ran on) cost the start of every
 * COMMAND more than the clone itself, and ours grows as far as anything run on it needs. */
pid_t cgroup_vfork(const char *path, int (*fn)(void *), void *arg)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	struct clone_args a = { .flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP,
				.exit_signal = SIGCHLD,
				.cgroup = (uint64_t)dfd };
	long pid = clone3_run(&a, fn, arg);
	int e = pid < 0 ? errno : 0;
	close(dfd);
	/* no clone3, none with CLONE_INTO_CGROUP, or a tool that refuses it: say ENOSYS */
	if (e == EINVAL || e == E2BIG || e == EPERM)
		e = ENOSYS;
	return e ? -e : (pid_t)pid;
}
#else
pid_t cgroup_vfork(const char *path, int (*fn)(void *), void *arg)
{
	(void)path;
	(void)fn;
	(void)arg;
	return -ENOSYS;
}
#endif

/* Where cgroup_members appends. */
struct members {
	pid_t **v;
	size_t *n, *cap;
};

static int read_members(void *ctx, int dfd, const char *name)
{
	(void)name;
	struct members *m = ctx;
	char *text = NULL;
	ssize_t len = slurp(dfd, "cgroup.procs", &text);
	if (len < 0)
		return (int)len;
	int r = procfs_parse_pids(text, (size_t)len, m->v, m->n, m->cap);
	free(text);
	return r;
}

int cgroup_members(const char *path, pid_t **v, size_t *n, size_t *cap)
{
	struct members m = { v, n, cap };
	return cgroup_walk(path, read_members, NULL, &m);
}

int cgroup_holds(const char *path, const struct pidref *ref, int procfd, pid_t **v, size_t *cap)
{
	size_t n = 0;
	int r = cgroup_members(path, v, &n, cap);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if ((*v)[i] == ref->pid)
			return pidref_held(ref, procfd) == 0;
	return 0;
}

int reaper_cgroup_procs(const char *path, pid_t **pids, size_t *n)
{
	size_t cap = 0;
	*pids = NULL;
	*n = 0;
	int r = cgroup_members(path, pids, n, &cap);
	if (r < 0) {
		free(*pids);
		*pids = NULL;
		*n = 0;
	}
	return r;
}

int cgroup_events_open(const char *path)
{
	/* one open of the file, not the directory's and then the file's in it */
	char file[PATH_MAX];
	if ((size_t)snprintf(file, sizeof file, "%s/cgroup.events", path) >= sizeof file)
		return -ENAMETOOLONG;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cgroup_events_read(int fd, int *populated, int *frozen)
{
	char b[256];
	/* reading from the start also re-arms the POLLPRI notification: one pread, not a seek
	 * and a read */
	ssize_t n;
	while ((n = pread(fd, b, sizeof b - 1, 0)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -errno;
	b[n] = 0;
	const char *p = strstr(b, "populated ");
	if (!p)
		return -EIO;
	if (populated)
		*populated = p[10] == '1';
	if (frozen)
		*frozen = (p = strstr(b, "frozen ")) && p[7] == '1';
	return 0;
}

int reaper_cgroup_populated(const char *path)
{
	int fd = cgroup_events_open(path);
	if (fd < 0)
		return fd;
	int pop = 0, r = cgroup_events_read(fd, &pop, NULL);
	close(fd);
	return r < 0 ? r : pop;
}

/* Wait on cgroup.events until want(populated, frozen) holds or timeout (< 0: no bound). */
static int events_wait(const char *path, double timeout, int want_frozen)
{
	if (isnan(timeout))
		return -EINVAL;
	int fd = cgroup_events_open(path);
	if (fd < 0)
		return fd;
	double end = monotonic_now() + timeout;
	int r;
	for (;;) {
		int pop = 0, frz = 0;
		if ((r = cgroup_events_read(fd, &pop, &frz)) < 0)
			break;
		if (want_frozen ? frz : !pop)
			break;
		int ms = -1;
		if (timeout >= 0 && !isinf(timeout)) {
			double left = end - monotonic_now();
			if (left <= 0) {
				r = -ETIMEDOUT;
				break;
			}
			/* a bound of years does not fit poll's int: wake, look and wait again */
			ms = left < INT_MAX / 1000 ? (int)(left * 1000.0) + 1 : INT_MAX;
		}
		struct pollfd p = { .fd = fd, .events = POLLPRI };
		if (poll(&p, 1, ms) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
	}
	close(fd);
	return r;
}

int reaper_cgroup_wait(const char *path, double timeout)
{
	return events_wait(path, timeout, 0);
}

int reaper_cgroup_freeze(const char *path, int frozen)
{
	int r = cgroup_write(path, "cgroup.freeze", frozen ? "1" : "0");
	if (r == -ENOENT && access(path, F_OK) == 0)
		return -EOPNOTSUPP;
	if (r < 0 || !frozen)
		return r;
	r = events_wait(path, 1.0, 1);
	return r == -ETIMEDOUT ? -EAGAIN : r;
}

/* Asked of the cgroup itself, by its members: no mountinfo to parse and no path to resolve,
 * and the answer costs what one scan of the cgroup does. */
int cgroup_holds_self(const char *path)
{
	pid_t *v = NULL, self = getpid();
	size_t n = 0, cap = 0;
	int r = cgroup_members(path, &v, &n, &cap);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = v[i] == self;
	free(v);
	return r;
}

/* Pin and SIGKILL every member (only_zombie_leaders: only those whose main thread has
 * exited), again until a listing shows only processes already killed (they are listed until
 * they are gone). */
static int kill_each(const char *path, int only_zombie_leaders)
{
	struct killed {
		pid_t pid;
		uint64_t start_time;
	} *k = NULL;
	size_t nk = 0, ck = 0, cap = 0, again_cap = 0;
	pid_t *v = NULL, *again = NULL, self = getpid();
	int procfd = procfs_open(), r = 0;
	if (procfd < 0)
		return procfd;
	for (int round = 0; round < 10000; round++) {
		size_t n = 0, fresh = 0;
		if ((r = cgroup_members(path, &v, &n, &cap)) < 0)
			break;
		for (size_t i = 0; i < n && r == 0; i++) {
			struct pidref ref;
			struct reaper_stat st;
			if (v[i] == self || pidref_open_stat(&ref, procfd, v[i], &st) < 0)
				continue;
			/* a pid listed before it was pinned may have passed to a process outside */
			if ((only_zombie_leaders && st.state != 'Z') ||
			    cgroup_holds(path, &ref, procfd, &again, &again_cap) != 1) {
				pidref_done(&ref);
				continue;
			}
			size_t j = 0;
			while (j < nk && !(k[j].pid == v[i] && k[j].start_time == st.start_time))
				j++;
			if (j == nk && pidref_signal(&ref, procfd, SIGKILL) == 0) {
				r = ARRAY_RESERVE(k, ck, nk + 1, 64);
				if (r == 0)
					k[nk++] = (struct killed){ v[i], st.start_time };
				fresh++;
			}
			pidref_done(&ref);
		}
		if (r < 0 || !fresh)
			break;
	}
	free(v);
	free(again);
	free(k);
	close(procfd);
	return r;
}

int reaper_cgroup_kill(const char *path)
{
	int r = cgroup_holds_self(path);
	if (r < 0)
		return r;
	if (r)
		return -EDEADLK;
	r = cgroup_write(path, "cgroup.kill", "1");
	/* cgroup.kill signals each listed task alone, and a process whose main thread has
	 * exited is listed by that dead thread: it needs a process-wide SIGKILL of its own */
	if (r == 0)
		r = kill_each(path, 1);
	else if (r == -ENOENT && access(path, F_OK) == 0)
		r = kill_each(path, 0);
	return r;
}

/* Bottom-up: a cgroup is removed once everything below it is. */
static int remove_one(void *ctx, int parent, const char *name)
{
	(void)ctx;
	return unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int reaper_cgroup_remove(const char *path)
{
	int r = check_dir(path);
	if (r < 0 && r != -EROFS)
		return r;
	/* a cgroup with none below it goes without a descriptor (one may be all that is short) */
	if (rmdir(path) == 0)
		return 0;
	if (errno != EBUSY && errno != ENOTEMPTY)
		return -errno;
	r = cgroup_walk(path, NULL, remove_one, NULL);
	if (r == 0 && rmdir(path) < 0)
		r = -errno;
	return r;
}

/* How long a release waits for what it cannot move: a killed process that is still exiting
 * (the kernel moves no exiting task) keeps the cgroup until it is gone, and on a loaded
 * machine a large memory to free, or a file system to answer its last close, can take its
 * exit many seconds. */
#define RELEASE_WAIT 30.0
#define PF_EXITING 0x00000004

/* Wait until cgroup.events changes (the last member going clears "populated") or a while
 * passes (*step, growing): a member that forked meanwhile is moved on the next round. fd is
 * opened on first use. 0, -ETIMEDOUT past end, or -errno. */
static int await_members(const char *path, int *fd, double end, double *step)
{
	double left = end - monotonic_now();
	if (left <= 0)
		return -ETIMEDOUT;
	if (*fd < 0 && (*fd = cgroup_events_open(path)) < 0)
		return *fd;
	int pop = 1, r = cgroup_events_read(*fd, &pop, NULL); /* re-arms POLLPRI */
	if (r < 0 || !pop)
		return r;
	double w = *step < left ? *step : left;
	struct pollfd p = { .fd = *fd, .events = POLLPRI };
	if (poll(&p, 1, (int)(w * 1000.0) + 1) < 0 && errno != EINTR)
		return -errno;
	*step = *step * 2 < 0.5 ? *step * 2 : 0.5;
	return 0;
}

int reaper_cgroup_release(const char *path)
{
	char parent[PATH_MAX];
	int w = snprintf(parent, sizeof parent, "%s", path);
	char *slash = w > 0 && (size_t)w < sizeof parent ? strrchr(parent, '/') : NULL;
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = 0;
	/* nothing left in it (the common end of a run): removed without a descriptor */
	int r = reaper_cgroup_remove(path);
	if (r != -EBUSY)
		return r;
	int procfd = procfs_open();
	if (procfd < 0)
		return procfd;
	pid_t *v = NULL, *again = NULL;
	size_t cap = 0, again_cap = 0;
	int moved = 0, evfd = -1;
	double end = monotonic_now() + RELEASE_WAIT, step = 0.01;
	/* a member may fork while we move it, or still be exiting: round after round until the
	 * removal works */
	for (;;) {
		size_t n = 0;
		if ((r = cgroup_members(path, &v, &n, &cap)) < 0)
			break;
		for (size_t i = 0; i < n; i++) {
			/* pinned while it is moved: the pid names this process, not a later one */
			struct pidref ref;
			struct reaper_stat st;
			if (pidref_open_stat(&ref, procfd, v[i], &st) < 0)
				continue;
			char pid[24];
			snprintf(pid, sizeof pid, "%d", (int)v[i]);
			/* one exiting cannot be moved: it is waited for (a leader that has exited
			 * alone, a zombie, is written: its live threads move) */
			if (!((st.flags & PF_EXITING) && st.state != 'Z') &&
			    cgroup_holds(path, &ref, procfd, &again, &again_cap) == 1 &&
			    cgroup_write(parent, "cgroup.procs", pid) == 0)
				moved++;
			pidref_done(&ref);
		}
		if ((r = reaper_cgroup_remove(path)) != -EBUSY)
			break;
		int e = await_members(path, &evfd, end, &step);
		if (e < 0) {
			r = e == -ETIMEDOUT ? -EBUSY : e;
			break;
		}
	}
	if (evfd >= 0)
		close(evfd);
	free(v);
	free(again);
	close(procfd);
	return r < 0 ? r : moved;
}

int cgroup_move_up(const char *path, const struct pidref *ref, int procfd)
{
	char parent[PATH_MAX], pid[24];
	int w = snprintf(parent, sizeof parent, "%s", path);
	char *slash = w > 0 && (size_t)w < sizeof parent ? strrchr(parent, '/') : NULL;
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = 0;
	if (pidref_held(ref, procfd) < 0)
		return -ESRCH;
	snprintf(pid, sizeof pid, "%d", (int)ref->pid);
	return cgroup_write(parent, "cgroup.procs", pid);
}
