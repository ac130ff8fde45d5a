/* SPDX-License-Identifier: MIT */
/* procfs: parsing and reading /proc; see procfs.h. */
#define _GNU_SOURCE
#include "procfs.h"
#include "array.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int procfs_open(void)
{
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* "PID/WHAT" (or "/proc/PID/WHAT" without a procfd) into path[64]; by hand, as snprintf
 * is a visible part of a scan's cost. */
static void pid_path(char *path, int procfd, pid_t pid, const char *what)
{
	char digits[16], *d = digits + sizeof digits;
	unsigned v = (unsigned)pid;
	do
		*--d = (char)('0' + v % 10);
	while ((v /= 10));
	char *p = path;
	if (procfd < 0) {
		memcpy(p, "/proc/", 6);
		p += 6;
	}
	size_t nd = (size_t)(digits + sizeof digits - d), nw = strnlen(what, 40);
	memcpy(p, d, nd);
	p += nd;
	*p++ = '/';
	memcpy(p, what, nw);
	p[nw] = 0;
}

static int open_at(int procfd, pid_t pid, const char *what)
{
	char path[64];
	pid_path(path, procfd, pid, what);
	return openat(procfd >= 0 ? procfd : AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
}

static uint64_t parse_u64(const char **s, const char *end, int *ok)
{
	uint64_t v = 0;
	const char *p = *s;
	int neg = 0;
	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		*ok = 0;
	/* 19 digits never overflow: only a longer number needs the check */
	for (int digits = 0; p < end && *p >= '0' && *p <= '9'; digits++) {
		uint64_t d = (uint64_t)(*p - '0');
		if (digits >= 19 && v > (UINT64_MAX - d) / 10)
			*ok = 0;
		v = v * 10 + d;
		p++;
	}
	*s = p;
	return neg ? (uint64_t)0 - v : v;
}

/* Past one number as parse_u64 reads it, without its value: 1 when parse_u64 would take it. */
static int skip_u64(const char **s, const char *end)
{
	const char *p = *s + (*s < end && **s == '-');
	const char *d = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p - d > 19) { /* may not fit: read it */
		int ok = 1;
		parse_u64(s, end, &ok);
		return ok;
	}
	*s = p;
	return p > d;
}

/* "PID (COMM)": comm may hold ')' and spaces, so it ends at the last ')' in the text. Returns
 * where field 3 starts, or NULL. */
static const char *stat_head(const char *buf, size_t len, struct reaper_stat *st)
{
	const char *open = memchr(buf, '(', len);
	const char *close = len ? memrchr(buf, ')', len) : NULL;
	if (!open || !close || close < open)
		return NULL;
	int ok = 1;
	const char *p = buf;
	st->pid = (pid_t)parse_u64(&p, open, &ok);
	size_t clen = (size_t)(close - open - 1);
	if (clen >= sizeof st->comm)
		clen = sizeof st->comm - 1;
	memcpy(st->comm, open + 1, clen);
	st->comm[clen] = 0;
	return ok ? close + 1 : NULL;
}

/* Fields 3..22: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
 * stime cutime cstime priority nice num_threads itrealvalue starttime. Returns where field
 * 23 starts, or NULL. */
static const char *stat_fields(const char *p, const char *end, struct reaper_stat *st)
{
	int ok = 1;
	for (int field = 3; field <= 22; field++) {
		if (p >= end || *p != ' ')
			return NULL;
		p++;
		if (field == 3) {
			if (p >= end || *p == ' ')
				return NULL;
			st->state = *p++;
			continue;
		}
		uint64_t v = parse_u64(&p, end, &ok);
		if (!ok)
			return NULL;
		if (field == 4)
			st->ppid = (pid_t)v;
		else if (field == 5)
			st->pgrp = (pid_t)v;
		else if (field == 6)
			st->session = (pid_t)v;
		else if (field == 7)
			st->tty_nr = v;
		else if (field == 9)
			st->flags = (unsigned long)v;
		else if (field == 14)
			st->utime = v;
		else if (field == 15)
			st->stime = v;
		else if (field == 20)
			st->num_threads = (long)v;
		else if (field == 22)
			st->start_time = v;
	}
	return p;
}

/* Fields 23..51: only the resident size and the environment's bounds are kept; an older
 * kernel's shorter line leaves them 0. */
static void stat_tail(const char *p, const char *end, struct reaper_stat *st)
{
	uint64_t env[2] = { 0, 0 };
	for (int field = 23; field <= 51 && p < end && *p == ' '; field++) {
		p++;
		int fok = 1;
		uint64_t v = 0;
		if (field > 24 && field < 50)
			fok = skip_u64(&p, end);
		else
			v = parse_u64(&p, end, &fok);
		if (!fok)
			break;
		if (field == 24)
			st->rss = v;
		if (field >= 50)
			env[field - 50] = v;
		if (field == 51) {
			st->env_start = env[0];
			st->env_end = env[1];
		}
	}
}

int reaper_parse_stat(const char *buf, size_t len, struct reaper_stat *st)
{
	memset(st, 0, sizeof *st);
	const char *end = buf + len, *p = stat_head(buf, len, st);
	if (!p || !(p = stat_fields(p, end, st)))
		return -EINVAL;
	/* the kernel always writes fields after 22: a text that ends inside it was cut short,
	 * and a cut start time would be another process's identity */
	if (p >= end || (*p != ' ' && *p != '\n'))
		return -EINVAL;
	stat_tail(p, end, st);
	return 0;
}

int procfs_stat(int procfd, pid_t pid, struct reaper_stat *st)
{
	char buf[1024];
	int fd = open_at(procfd, pid, "stat");
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -e : -ESRCH;
	buf[n] = 0;
	return reaper_parse_stat(buf, (size_t)n, st);
}

/* All of fd into b (then closed, but into *keep when given and the read worked). whole: a
 * short read is the end (see procfs_read). */
static ssize_t read_all(int fd, int whole, struct sbuf *b, int *keep)
{
	size_t len = 0;
	for (;;) {
		if (ARRAY_RESERVE(b->p, b->cap, len + 2, 8192) < 0) {
			close(fd);
			return -ENOMEM;
		}
		ssize_t n = read(fd, b->p + len, b->cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (whole && (size_t)n < b->cap - (len - (size_t)n) - 1)
			break;
	}
	if (keep)
		*keep = fd;
	else
		close(fd);
	b->p[len] = 0;
	b->len = len;
	return (ssize_t)len;
}

ssize_t procfs_read(int procfd, pid_t pid, const char *what, struct sbuf *b)
{
	int fd = open_at(procfd, pid, what);
	if (fd < 0)
		return -errno;
	/* environ and cmdline are copied out of the process's memory in a loop that fills the
	 * whole buffer: a short read is the end, and the read that would return 0 is saved
	 * (one syscall of three per process on the hot path). Not so for seq_file texts. */
	return read_all(fd, strcmp(what, "environ") == 0 || strcmp(what, "cmdline") == 0, b, NULL);
}

int procfs_ino(int procfd, pid_t pid, const char *what, unsigned long *ino)
{
	char path[64];
	struct stat sb;
	pid_path(path, procfd, pid, what);
	if (fstatat(procfd >= 0 ? procfd : AT_FDCWD, path, &sb, 0) < 0)
		return -errno;
	*ino = (unsigned long)sb.st_ino;
	return 0;
}

ssize_t procfs_read_file(int procfd, const char *path, struct sbuf *b)
{
	int fd = openat(procfd >= 0 ? procfd : AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : read_all(fd, 0, b, NULL);
}

char *procfs_link(int procfd, pid_t pid, const char *what)
{
	char path[64], buf[4096];
	pid_path(path, procfd, pid, what);
	ssize_t n = readlinkat(procfd >= 0 ? procfd : AT_FDCWD, path, buf, sizeof buf - 1);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	return strdup(buf);
}

uint64_t procfs_tick_now(long ticks)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * (uint64_t)ticks + (uint64_t)ts.tv_nsec / (1000000000u / (uint64_t)ticks);
}

double procfs_uptime(int procfd)
{
	/* /proc/uptime is CLOCK_BOOTTIME (time namespace offsets included in both); the vDSO
	 * answers without the open + read + close that every candidate used to cost. */
	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
		return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	char buf[128];
	int fd = openat(procfd >= 0 ? procfd : AT_FDCWD, procfd >= 0 ? "uptime" : "/proc/uptime",
			O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strtod(buf, NULL);
}

int procfs_parse_pids(const char *text, size_t len, pid_t **v, size_t *n, size_t *cap)
{
	const char *end = text + len;
	for (const char *p = text; p < end;) {
		char *e;
		long pid = strtol(p, &e, 10);
		if (e == p)
			break;
		p = e;
		if (pid <= 0)
			continue;
		if (ARRAY_RESERVE(*v, *cap, *n + 1, 64) < 0)
			return -ENOMEM;
		(*v)[(*n)++] = (pid_t)pid;
	}
	return 0;
}

int procfs_children(int procfd, pid_t pid, struct sbuf *b, pid_t **kids, size_t *nk, size_t *ck, int *failed)
{
	char path[64];
	pid_path(path, procfd, pid, "task");
	int tfd = openat(procfd >= 0 ? procfd : AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0) {
		*failed = -errno;
		return *failed == -ENOENT ? -ESRCH : *failed;
	}
	/* getdents64 straight into a buffer: fdopendir's fstat and two fcntls cost more than
	 * listing a task directory, once per tree candidate per scan */
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd;
	int r = 0;
	while (r == 0 && (nd = getdents64(tfd, (void *)dents, sizeof dents)) > 0) {
		for (ssize_t off = 0; off < nd && r == 0;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			char what[48];
			snprintf(what, sizeof what, "task/%d/children", atoi(d->d_name));
			ssize_t n = procfs_read(procfd, pid, what, b);
			if (n < 0 && (n == -EMFILE || n == -ENFILE || n == -ENOMEM || !*failed))
				*failed = (int)n;
			if (n > 0)
				r = procfs_parse_pids(b->p, (size_t)n, kids, nk, ck);
		}
	}
	close(tfd);
	return r;
}

int reaper_environ_has(const char *env, size_t len, const char *entry, size_t elen)
{
	const char *p = env, *end = env + len;
	if (elen == 0)
		return 0;
	while (p < end) {
		const char *nul = memchr(p, 0, (size_t)(end - p));
		size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);
		if (n == elen && memcmp(p, entry, elen) == 0)
			return 1;
		p += n + 1;
	}
	return 0;
}

const char *reaper_environ_get(const char *env, size_t len, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *p = env, *end = env + len;
	while (p < end) {
		const char *nul = memchr(p, 0, (size_t)(end - p));
		size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);
		if (n > nlen && p[nlen] == '=' && memcmp(p, name, nlen) == 0) {
			*vlen = n - nlen - 1;
			return p + nlen + 1;
		}
		p += n + 1;
	}
	return NULL;
}
