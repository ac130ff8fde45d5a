/* SPDX-License-Identifier: MIT */
/* benchlib: see benchlib.h. */
#define _GNU_SOURCE
#include "benchlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

char **bench_env(const char *home)
{
	static char homebuf[4096];
	static char *env[] = {
		"SHELL=/bin/bash", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TERM=xterm-256color",
		"USER=ci", "LOGNAME=ci", "HOSTNAME=runner-7f3c9d2a1b", "SHLVL=2",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/toolchain/bin",
		"PWD=/builds/project/src", "OLDPWD=/builds/project",
		"CI=true", "CI_JOB_ID=418273645", "CI_PIPELINE_ID=99182736", "CI_COMMIT_SHA=3f9a1c0e7b2d4a6f8e1c3b5d7f9a0c2e4b6d8f1a",
		"CI_PROJECT_DIR=/builds/project", "CI_RUNNER_TAGS=linux,docker,amd64",
		homebuf,
		"XDG_RUNTIME_DIR=/run/user/1000", "XDG_CACHE_HOME=/builds/project/.cache",
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"VIRTUAL_ENV=/builds/project/.venv", "PYTEST_ADDOPTS=-p no:cacheprovider --maxfail=20",
		"LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:"
		"or=40;31;01:mi=00:su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:"
		"*.tgz=01;31:*.arc=01;31:*.arj=01;31:*.taz=01;31:*.lha=01;31:*.lz4=01;31:*.lzh=01;31",
		"EDITOR=vi", "PAGER=less", "LESS=-R", "TZ=UTC", "NODE_OPTIONS=--max-old-space-size=4096",
		"JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64", "GOPATH=/builds/project/.go",
		"SSH_AUTH_SOCK=/tmp/ssh-XXXXq1w2e3/agent.4242", "DEBIAN_FRONTEND=noninteractive",
		NULL,
	};
	snprintf(homebuf, sizeof homebuf, "HOME=%s", home);
	return env;
}

int pop_init(struct pop *p)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -errno;
	p->hold_r = fds[0];
	p->hold_w = fds[1];
	/* only the read end reaches the population */
	fcntl(p->hold_w, F_SETFD, FD_CLOEXEC);
	return 0;
}

int pop_spawn(struct pop *p, const char *spawn_bin, const char *mode, long count, char **env, int shm_fd,
	      long shm_base)
{
	int rd[2];
	if (pipe(rd) < 0)
		return -errno;
	char a_count[24], a_hold[16], a_ready[16], a_shm[16], a_base[24];
	snprintf(a_count, sizeof a_count, "%ld", count);
	snprintf(a_hold, sizeof a_hold, "%d", p->hold_r);
	snprintf(a_ready, sizeof a_ready, "%d", rd[1]);
	snprintf(a_shm, sizeof a_shm, "%d", shm_fd);
	snprintf(a_base, sizeof a_base, "%ld", shm_base);
	char *argv[] = { (char *)spawn_bin, (char *)mode, a_count, a_hold, a_ready, a_shm, a_base, NULL };
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(rd[0]);
		close(rd[1]);
		return e;
	}
	if (pid == 0) {
		close(rd[0]);
		execve(spawn_bin, argv, env);
		_exit(127);
	}
	close(rd[1]);
	char c;
	while (read(rd[0], &c, 1) < 0 && errno == EINTR)
		;
	close(rd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

void pop_release(struct pop *p)
{
	if (p->hold_w >= 0)
		close(p->hold_w);
	p->hold_w = -1;
}

long bench_collect(int wait_all)
{
	long n = 0;
	for (;;) {
		pid_t r = waitpid(-1, NULL, wait_all ? 0 : WNOHANG);
		if (r > 0) {
			n++;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		return n;
	}
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* One /proc/PID/WHAT into buf: its length, or -1. */
static ssize_t read_one(int procfd, const char *pid, const char *what, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "%s/%s", pid, what);
	int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap);
	close(fd);
	return n;
}

/* The reads of what a report says of one match besides its cmdline (values unused). */
static void report_reads(int procfd, const char *pid, char *buf, size_t cap)
{
	struct stat sb;
	char link[4096];
	read_one(procfd, pid, "stat", buf, cap);
	fstatat(procfd, pid, &sb, 0);
	char path[64];
	snprintf(path, sizeof path, "%s/exe", pid);
	if (readlinkat(procfd, path, link, sizeof link) < 0)
		link[0] = 0;
	snprintf(path, sizeof path, "%s/cwd", pid);
	if (readlinkat(procfd, path, link, sizeof link) < 0)
		link[0] = 0;
}

/* floor_scan (level 0), floor_listing (1) or floor_listing with report (2). */
static long floor_walk(int procfd, const char *entry, int level, FILE *out)
{
	static char dents[65536];
	static char buf[131072], cmd[131072];
	size_t elen = strlen(entry);
	long listed = 0;
	int dfd = openat(procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	for (;;) {
		long nd = syscall(SYS_getdents64, dfd, dents, sizeof dents);
		if (nd <= 0)
			break;
		for (long off = 0; off < nd;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			ssize_t n = read_one(procfd, d->d_name, "environ", buf, sizeof buf);
			int hit = 0;
			for (const char *p = buf, *end = buf + (n > 0 ? n : 0); p < end && !hit;) {
				const char *nul = memchr(p, 0, (size_t)(end - p));
				size_t len = nul ? (size_t)(nul - p) : (size_t)(end - p);
				hit = len == elen && memcmp(p, entry, elen) == 0;
				p += len + 1;
			}
			if (!hit || level == 0) {
				listed += hit;
				continue;
			}
			int pfd = (int)syscall(SYS_pidfd_open, atoi(d->d_name), 0);
			if (pfd < 0)
				continue;
			if (level == 2)
				report_reads(procfd, d->d_name, buf, sizeof buf);
			ssize_t c = read_one(procfd, d->d_name, "cmdline", cmd, sizeof cmd - 1);
			struct pollfd pf = { .fd = pfd, .events = POLLIN };
			int alive = poll(&pf, 1, 0) == 0;
			close(pfd);
			if (!alive || c <= 0)
				continue;
			while (c > 0 && cmd[c - 1] == 0)
				c--;
			for (ssize_t i = 0; i < c; i++)
				if (cmd[i] == 0)
					cmd[i] = ' ';
			cmd[c] = 0;
			if (out)
				fprintf(out, "%s %s\n", d->d_name, cmd);
			listed++;
		}
	}
	close(dfd);
	return listed;
}

long floor_scan(int procfd, const char *entry)
{
	return floor_walk(procfd, entry, 0, NULL);
}

long floor_listing(int procfd, const char *entry, int report, FILE *out)
{
	return floor_walk(procfd, entry, report ? 2 : 1, out);
}

long bench_count_procs(void)
{
	DIR *d = opendir("/proc");
	long n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] >= '1' && e->d_name[0] <= '9';
	if (d)
		closedir(d);
	return n;
}

uint64_t *bench_shm(size_t n, int *fd)
{
	*fd = memfd_create("bench-shm", 0);
	if (*fd < 0 || ftruncate(*fd, (off_t)(n * sizeof(uint64_t))) < 0)
		return NULL;
	void *m = mmap(NULL, n * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return m == MAP_FAILED ? NULL : m;
}
