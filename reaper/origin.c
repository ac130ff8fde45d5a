/* SPDX-License-Identifier: MIT */
/* origin: see origin.h. The kernel gives pids out cyclically: the next free one after the
 * last given, wrapping round to RESERVED_PIDS at pid_max. Until the allocation has come round
 * past where it stood at an origin, every pid given out since lies between that point and
 * where it stands now. It comes round after passing pid_max - RESERVED_PIDS numbers, each a
 * pid given out (one fork, counted in /proc/stat "processes") or one in use and skipped (at
 * most the tasks alive at the origin, until it has come round): fewer forks since than that,
 * with a margin of as many again for forks that got a pid and failed, and the window holds. */
#define _GNU_SOURCE
#include "origin.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESERVED_PIDS 300

/* A small /proc file read whole into b (size bytes, NUL-terminated) with one read, no buffer
 * to allocate and no second read for its end: its length, or -errno. */
static ssize_t read_small(int procfd, const char *path, char *b, size_t size)
{
	int fd = openat(procfd, path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n;
	while ((n = read(fd, b, size - 1)) < 0 && errno == EINTR)
		;
	int e = n < 0 ? errno : 0;
	close(fd);
	if (e)
		return -e;
	b[n] = 0;
	return n;
}

/* The number after `after` in a /proc file of any length (/proc/stat grows with the CPUs and
 * the interrupts), read through a buffer on the stack: nothing allocated for the one line
 * wanted, where an allocator may map and unmap a buffer that size each time (musl's does). */
static int read_number_after(int procfd, const char *path, const char *after, long long *v)
{
	int fd = openat(procfd, path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char b[4096];
	size_t keep = 0, alen = strlen(after);
	ssize_t n;
	int r = -EINVAL;
	while ((n = read(fd, b + keep, sizeof b - 1 - keep)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		size_t len = keep + (size_t)n;
		b[len] = 0;
		char *at = strstr(b, after), *end = NULL;
		if (at && strchr(at + alen, '\n')) {
			*v = strtoll(at + alen, &end, 10);
			r = end != at + alen ? 0 : -EINVAL;
			break;
		}
		/* what may be the start of the line, cut by the buffer's end, goes first */
		size_t from = at ? (size_t)(at - b) : len > alen ? len - alen : 0;
		keep = len - from;
		memmove(b, b + from, keep);
	}
	close(fd);
	return r;
}

/* The first number of a small /proc file (after `after`, when given), as a long long. */
static int read_number(int procfd, const char *path, const char *after, long long *v)
{
	if (after)
		return read_number_after(procfd, path, after, v);
	/* a one-number file (ns_last_pid, pid_max): the number is whole once its newline is
	 * there */
	char b[64];
	ssize_t n = read_small(procfd, path, b, sizeof b);
	if (n < 0)
		return (int)n;
	char *end = NULL;
	*v = strtoll(b, &end, 10);
	return end != b && *end == '\n' ? 0 : -EINVAL;
}

/* /proc/loadavg: "L1 L5 L15 running/tasks last" */
static int read_loadavg(int procfd, long long *tasks, long long *last)
{
	char b[128];
	ssize_t n = read_small(procfd, "loadavg", b, sizeof b);
	if (n < 0)
		return (int)n;
	char *p = strchr(b, '/'), *end = NULL;
	if (!p)
		return -EINVAL;
	*tasks = strtoll(p + 1, &end, 10);
	if (end == p + 1 || *end != ' ')
		return -EINVAL;
	p = end + 1;
	*last = strtoll(p, &end, 10);
	return end != p && *end == '\n' ? 0 : -EINVAL;
}

/* Our PID namespace's inode number, from the link's text ("pid:[N]", N the inode a stat
 * would give): reading a link costs a third of a stat through it, which makes the nsfs
 * dentry. 0 when it cannot be told. */
static uint64_t pidns_of(int procfd)
{
	char b[64];
	ssize_t n = readlinkat(procfd, "self/ns/pid", b, sizeof b - 1);
	if (n <= 5 || strncmp(b, "pid:[", 5))
		return 0;
	b[n] = 0;
	char *end = NULL;
	unsigned long long ino = strtoull(b + 5, &end, 10);
	return end != b + 5 && *end == ']' ? (uint64_t)ino : 0;
}

int reaper_origin_now(struct reaper_origin *o)
{
	return origin_now_at(-1, o);
}

int origin_now_at(int at, struct reaper_origin *o)
{
	memset(o, 0, sizeof *o);
	int procfd = at >= 0 ? at : procfs_open();
	if (procfd < 0)
		return procfd;
	long long last = 0, max = 0, forks = 0, tasks = 0;
	int r = read_number(procfd, "sys/kernel/pid_max", NULL, &max);
	if (r == 0)
		r = read_number(procfd, "stat", "\nprocesses ", &forks);
	/* "... running/tasks last": the tasks alive, and the pid given out last in our PID
	 * namespace (what ns_last_pid says, one file fewer to read). After the fork count: forks
	 * between the two reads count as since the origin, which only narrows what the window
	 * is trusted for. */
	if (r == 0)
		r = read_loadavg(procfd, &tasks, &last);
	o->pidns = pidns_of(procfd);
	if (procfd != at)
		close(procfd);
	if (r < 0)
		return r;
	o->last_pid = (pid_t)last;
	o->pid_max = (pid_t)max;
	o->forks = (uint64_t)forks;
	o->tasks = (uint64_t)tasks;
	o->start_time = procfs_tick_now(sysconf(_SC_CLK_TCK));
	return 0;
}

int origin_forks(int procfd, uint64_t *forks)
{
	long long v = 0;
	int r = read_number(procfd, "stat", "\nprocesses ", &v);
	if (r == 0)
		*forks = (uint64_t)v;
	return r;
}

int origin_window(int procfd, const struct reaper_origin *o, struct origin_window *w)
{
	/* this /proc must show our own PID namespace, the one the origin was taken in */
	char self[32];
	ssize_t n = readlinkat(procfd, "self", self, sizeof self - 1);
	if (n <= 0 || (self[n] = 0, atoi(self) != (int)getpid()) || !o->pidns || pidns_of(procfd) != o->pidns)
		return -ESRCH;
	long long last = 0, forks = 0, max = 0, tasks = 0;
	/* the pid given out last before the fork count: forks between the reads count as since */
	int r = read_loadavg(procfd, &tasks, &last);
	if (r == 0)
		r = read_number(procfd, "stat", "\nprocesses ", &forks);
	if (r == 0)
		r = read_number(procfd, "sys/kernel/pid_max", NULL, &max);
	if (r < 0)
		return r;
	/* (pid_max changed since: pids were given out under another bound) */
	if (max <= RESERVED_PIDS || max != o->pid_max || last >= max || o->last_pid >= max ||
	    (uint64_t)forks < o->forks)
		return -ESRCH;
	uint64_t since = (uint64_t)forks - o->forks, round = (uint64_t)(max - RESERVED_PIDS);
	if (2 * since + o->tasks >= round)
		return -ESRCH;
	w->lo = o->last_pid;
	w->hi = (pid_t)last;
	w->pid_max = (pid_t)max;
	if (w->hi >= w->lo)
		w->len = (size_t)(w->hi - w->lo);
	else
		w->len = (size_t)(w->pid_max - 1 - w->lo) + (size_t)(w->hi >= RESERVED_PIDS ? w->hi - RESERVED_PIDS + 1 : 0);
	return 0;
}

int origin_in_window(const struct origin_window *w, pid_t pid)
{
	if (w->hi >= w->lo)
		return pid > w->lo && pid <= w->hi;
	return pid > w->lo || (pid >= RESERVED_PIDS && pid <= w->hi);
}

pid_t origin_window_pid(const struct origin_window *w, size_t i)
{
	if (w->hi >= w->lo || i < (size_t)(w->pid_max - 1 - w->lo))
		return w->lo + 1 + (pid_t)i;
	return RESERVED_PIDS + (pid_t)(i - (size_t)(w->pid_max - 1 - w->lo));
}
