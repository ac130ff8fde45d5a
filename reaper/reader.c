/* SPDX-License-Identifier: MIT */
/* reader: see reader.h. */
#define _GNU_SOURCE
#include "reader.h"
#include "array.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int reader_open(struct reader *rd)
{
	memset(rd, 0, sizeof *rd);
	rd->procfd = -1;
	rd->ticks = sysconf(_SC_CLK_TCK);
	rd->self = getpid();
	int r = procfs_open();
	if (r < 0)
		return r;
	rd->procfd = r;
	return 0;
}

DIR *reader_dir(struct reader *rd)
{
	/* opened at the first listing: a reap with an origin, or one that ends with its cgroup
	 * empty, never reads one */
	if (rd->dir)
		return rd->dir;
	int dfd = openat(rd->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !(rd->dir = fdopendir(dfd))) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		errno = e;
		return NULL;
	}
	return rd->dir;
}

void reader_close(struct reader *rd)
{
	if (rd->dir)
		closedir(rd->dir);
	if (rd->procfd >= 0)
		close(rd->procfd);
	sbuf_free(&rd->buf);
	sbuf_free(&rd->aux);
	free(rd->kthreads);
	memset(rd, 0, sizeof *rd);
	rd->procfd = -1;
}

void reader_failed(struct reader *rd, ssize_t r)
{
	if (r == -EMFILE || r == -ENFILE || r == -ENOMEM)
		rd->err = (int)-r;
}

int pid_in_list(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

/* Read when the first pid is looked at (a clean run looks at none): the caller first, so
 * the list is never empty once read. */
static void read_ancestry(struct reader *rd)
{
	pid_t p = rd->self;
	while (p > 0 && rd->nanc < sizeof rd->anc / sizeof *rd->anc) {
		rd->anc[rd->nanc++] = p;
		struct reaper_stat st;
		if (procfs_stat(rd->procfd, p, &st) < 0)
			break;
		p = st.ppid;
	}
}

const pid_t *reader_callers(struct reader *rd, size_t *n)
{
	if (!rd->nanc)
		read_ancestry(rd);
	*n = rd->nanc;
	return rd->anc;
}

int reader_caller(struct reader *rd, pid_t pid)
{
	size_t n;
	const pid_t *v = reader_callers(rd, &n);
	return pid_in_list(v, n, pid);
}

uid_t reader_owner(const struct reader *rd, pid_t pid)
{
	char dir[16];
	struct stat sb;
	snprintf(dir, sizeof dir, "%d", (int)pid);
	return fstatat(rd->procfd, dir, &sb, 0) == 0 ? sb.st_uid : (uid_t)-1;
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
static void read_kthreads(struct reader *rd)
{
	struct reaper_stat st;
	rd->kthreads_read = 1;
	if (procfs_stat(rd->procfd, 2, &st) < 0 || !(st.flags & PF_KTHREAD) || st.ppid != 0)
		return;
	pid_t *k = NULL;
	size_t n = 0, c = 0;
	if (reader_children(rd, 2, &k, &n, &c) < 0) {
		free(k);
		return;
	}
	if (n) /* (none read, short of descriptors: k may be NULL, which qsort may not take) */
		qsort(k, n, sizeof *k, pid_cmp);
	rd->kthreads = k;
	rd->nkthreads = n;
}

static int kernel_thread(struct reader *rd, pid_t pid)
{
	if (!rd->kthreads_read)
		read_kthreads(rd);
	return rd->nkthreads && bsearch(&pid, rd->kthreads, rd->nkthreads, sizeof pid, pid_cmp);
}

/* The environment of a process whose leader has exited while other threads run on: read
 * through one of those threads (they share it). */
static ssize_t environ_via_thread(struct reader *rd, pid_t pid)
{
	char path[48];
	snprintf(path, sizeof path, "%d/task", (int)pid);
	int tfd = openat(rd->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return errno == ENOENT ? 0 : -errno;
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd, n = 0;
	while (n <= 0 && (nd = getdents64(tfd, (void *)dents, sizeof dents)) > 0)
		for (ssize_t off = 0; off < nd && n <= 0;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9' || atoi(d->d_name) == pid)
				continue;
			char what[48];
			snprintf(what, sizeof what, "task/%d/environ", atoi(d->d_name));
			n = procfs_read(rd->procfd, pid, what, &rd->buf);
		}
	close(tfd);
	return n;
}

ssize_t reader_environ(struct reader *rd, pid_t pid)
{
	ssize_t n = procfs_read(rd->procfd, pid, "environ", &rd->buf);
	if ((n == 0 || n == -ESRCH) && kernel_thread(rd, pid))
		return 0;
	if (n == -EACCES) {
		/* without privilege, an exited leader's own environ is refused (it has no memory
		 * left to check the access against); its live threads share the environment */
		struct reaper_stat st;
		if (procfs_stat(rd->procfd, pid, &st) == 0 && st.state == 'Z' && st.num_threads > 1)
			return environ_via_thread(rd, pid);
		return n;
	}
	int settled = 0;
	for (int tries = 0; (n == 0 || n == -ESRCH) && tries < 4; tries++) {
		struct reaper_stat st, again;
		int r = procfs_stat(rd->procfd, pid, &st);
		if (r < 0)
			return r == -ENOENT || r == -ESRCH ? 0 : r;
		if (st.flags & PF_KTHREAD)
			return 0;
		/* no memory of its own (ESRCH): an exited or exiting leader; its other threads,
		 * if any, share the process's environment */
		if (n == -ESRCH || st.state == 'Z' || st.state == 'X')
			return st.num_threads > 1 ? environ_via_thread(rd, pid) : 0;
		n = procfs_read(rd->procfd, pid, "environ", &rd->buf);
		if (n != 0)
			break;
		/* the same bounds on both sides of an empty read, the same exec: either truly empty,
		 * or memory the process has unmapped, which no wait will make readable (an exec
		 * under way shows no bounds or new ones; twice in a row rules out one that ended
		 * on the very same bounds) */
		if (st.env_end && procfs_stat(rd->procfd, pid, &again) == 0 && again.start_time == st.start_time &&
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

int reader_children(struct reader *rd, pid_t pid, pid_t **kids, size_t *nk, size_t *ck)
{
	int failed = 0;
	int r = procfs_children(rd->procfd, pid, &rd->aux, kids, nk, ck, &failed);
	reader_failed(rd, r == -ENOMEM ? r : failed);
	return r == -ENOMEM ? r : 0;
}
