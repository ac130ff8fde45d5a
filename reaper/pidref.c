/* SPDX-License-Identifier: MIT */
/* pidref: pid + start time + pidfd; see pidref.h. */
#define _GNU_SOURCE
#include "pidref.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* pidfd_open, or -ENOSYS where the kernel (< 5.3) or valgrind (3.19) has no pidfds. */
static int open_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : fd;
}

/* Without pidfds the identity is pid + start time alone, re-checked before every use. */
static int pin_by_start_time(struct pidref *p, int procfd, pid_t pid, uint64_t start_time)
{
	struct reaper_stat st;
	if (procfs_stat(procfd, pid, &st) < 0 || st.start_time != start_time)
		return -ESRCH;
	*p = (struct pidref){ .pid = pid, .start_time = start_time, .fd = -1 };
	return 0;
}

int pidref_open(struct pidref *p, int procfd, pid_t pid, uint64_t start_time)
{
	*p = PIDREF_NULL;
	int fd = open_pidfd(pid);
	if (fd == -ENOSYS)
		return pin_by_start_time(p, procfd, pid, start_time);
	if (fd < 0)
		return fd;
	/* The fd names whatever held pid at open time; it is ours only if pid still
	 * shows the start time we saw before opening. */
	struct reaper_stat st;
	if (procfs_stat(procfd, pid, &st) < 0 || st.start_time != start_time) {
		close(fd);
		return -ESRCH;
	}
	p->pid = pid;
	p->start_time = start_time;
	p->fd = fd;
	return 0;
}

int pidref_pin_stat(struct pidref *p, int procfd, pid_t pid, struct reaper_stat *st)
{
	*p = PIDREF_NULL;
	int r = procfs_stat(procfd, pid, st);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*p = (struct pidref){ .pid = pid, .start_time = st->start_time, .fd = -1 };
	return 0;
}

int pidref_open_stat_read(struct pidref *p, int procfd, pid_t pid, struct reaper_stat *st, void (*reads)(void *),
			  void *ctx, int *pinned)
{
	*p = PIDREF_NULL;
	*pinned = 0;
	int fd = open_pidfd(pid);
	if (fd == -ENOSYS) {
		int r = procfs_stat(procfd, pid, st);
		return r < 0 ? -ESRCH : pin_by_start_time(p, procfd, pid, st->start_time);
	}
	if (fd < 0)
		return fd;
	if (reads)
		reads(ctx);
	int r = procfs_stat(procfd, pid, st);
	if (r < 0) {
		close(fd);
		return r == -ENOENT ? -ESRCH : r;
	}
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) == 0) {
		p->pid = pid;
		p->start_time = st->start_time;
		p->fd = fd;
		*pinned = reads != NULL;
		return 0;
	}
	/* exited: st was read before the fd below is opened, the classic order (and what was
	 * read is not known to be its) */
	close(fd);
	return pidref_open(p, procfd, pid, st->start_time);
}

int pidref_read_open(struct pidref *p, pid_t pid, const char *what, int procfd, struct sbuf *b, ssize_t *n)
{
	*p = PIDREF_NULL;
	*n = procfs_read(procfd, pid, what, b);
	int fd = open_pidfd(pid);
	if (fd < 0)
		return fd == -ENOSYS ? -ESRCH : fd;
	*p = (struct pidref){ .pid = pid, .fd = fd };
	return 0;
}

int pidref_open_stat(struct pidref *p, int procfd, pid_t pid, struct reaper_stat *st)
{
	int pinned;
	return pidref_open_stat_read(p, procfd, pid, st, NULL, NULL, &pinned);
}

/* 1 while the pidfd says the process (every thread of it) has not exited: then its pid
 * cannot have changed hands. */
static int running(const struct pidref *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	return p->fd >= 0 && poll(&pfd, 1, 0) == 0;
}

int pidref_held(const struct pidref *p, int procfd)
{
	if (p->pid > 0 && running(p))
		return 0;
	/* Exited: its zombie holds the pid until reaped, and then a process started within the
	 * same clock tick could show the same start time. The pidfd knows: signal 0 reaches a
	 * zombie, never a reaped process. */
	if (p->fd >= 0 && syscall(SYS_pidfd_send_signal, p->fd, 0, NULL, 0) < 0)
		return -ESRCH;
	return pidref_verify(p, procfd);
}

int pidref_verify(const struct pidref *p, int procfd)
{
	struct reaper_stat st;
	if (p->pid <= 0 || procfs_stat(procfd, p->pid, &st) < 0 || st.start_time != p->start_time)
		return -ESRCH;
	return 0;
}

int pidref_signal(const struct pidref *p, int procfd, int sig)
{
	int r = pidref_verify(p, procfd);
	if (r < 0)
		return r;
	/* The pidfd itself pins the process: even if it died since the check, the signal
	 * cannot reach a recycled pid. Without pidfds only our own unreaped child is pinned
	 * (its pid stays until we collect it); anyone else's pid could change hands between
	 * the check and kill(), so it is not signalled. */
	if (p->fd < 0) {
		struct reaper_stat st;
		if (procfs_stat(procfd, p->pid, &st) < 0 || st.start_time != p->start_time)
			return -ESRCH;
		if (st.ppid == getpid())
			return kill(p->pid, sig) < 0 ? -errno : 0;
		/* held without a pidfd to save descriptors: one for this signal only */
		struct pidref once;
		r = pidref_open(&once, procfd, p->pid, p->start_time);
		if (r < 0)
			return r;
		r = once.fd < 0 ? -ENOSYS : pidref_signal(&once, procfd, sig);
		pidref_done(&once);
		return r;
	}
	if (syscall(SYS_pidfd_send_signal, p->fd, sig, NULL, 0) < 0)
		return -errno;
	return 0;
}

int pidref_signal_group(const struct pidref *leader, int procfd, int sig)
{
	struct reaper_stat st;
	int r = pidref_verify(leader, procfd);
	if (r < 0)
		return r;
	/* Only while the verified leader still leads its group is the group id ours to use;
	 * a leader that is our unreaped child cannot be recycled under us. */
	if (procfs_stat(procfd, leader->pid, &st) < 0 || st.pgrp != leader->pid)
		return -ESRCH;
	return killpg(leader->pid, sig) < 0 ? -errno : 0;
}

int pidref_exited(const struct pidref *p, int procfd)
{
	if (p->pid <= 0)
		return 1;
	if (p->fd < 0) {
		struct reaper_stat st;
		return procfs_stat(procfd, p->pid, &st) < 0 || st.start_time != p->start_time ||
		       ((st.state == 'Z' || st.state == 'X') && st.num_threads <= 1);
	}
	return !running(p);
}

int pidref_collect(const struct pidref *p, int procfd, int *status)
{
	if (p->pid <= 0)
		return -EBADF;
	siginfo_t si = { 0 };
	/* Without a pidfd: an unreaped child cannot lose its pid, so a verified pid is safe
	 * to wait for by number. */
	if (p->fd < 0 && pidref_verify(p, procfd) < 0)
		return -ECHILD;
	int r = p->fd >= 0 ? waitid((idtype_t)P_PIDFD, (id_t)p->fd, &si, WEXITED | WNOHANG)
			   : waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG);
	if (r < 0)
		return -errno;
	if (si.si_pid == 0)
		return 0;
	if (status)
		*status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0)
			: si.si_code == CLD_DUMPED ? (si.si_status | 0x80) : si.si_status;
	return 1;
}

pid_t pidref_pid_in(const struct pidref *p, int procfd)
{
	char path[48], b[1024];
	if (p->fd < 0 || procfd < 0)
		return 0;
	/* "self" and the Pid line are both in the PID namespace of procfd's mount */
	snprintf(path, sizeof path, "self/fdinfo/%d", p->fd);
	int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n;
	while ((n = read(fd, b, sizeof b - 1)) < 0 && errno == EINTR)
		;
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	const char *line = strstr(b, "\nPid:");
	long pid = line ? strtol(line + 5, NULL, 10) : 0;
	return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

void pidref_done(struct pidref *p)
{
	if (p->fd >= 0)
		close(p->fd);
	*p = PIDREF_NULL;
}

/* ---- one identity, for the caller (reaper.h) ---------------------------------------- */

int reaper_signal(const struct reaper_ident *id, int sig)
{
	struct pidref p;
	if (!id || id->pid <= 0 || sig < 0 || sig >= NSIG)
		return -EINVAL;
	int r = pidref_open(&p, -1, id->pid, id->start_time);
	if (r < 0)
		return r;
	r = pidref_signal(&p, -1, sig);
	pidref_done(&p);
	return r;
}

int reaper_collect(const struct reaper_ident *id, int *status)
{
	struct pidref p;
	if (!id || id->pid <= 0)
		return -EINVAL;
	int r = pidref_open(&p, -1, id->pid, id->start_time);
	if (r < 0)
		return r;
	r = pidref_collect(&p, -1, status);
	pidref_done(&p);
	return r;
}
