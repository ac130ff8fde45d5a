/* SPDX-License-Identifier: MIT */
/* Helpers of the hardening suites (tests/check_hard_*.c): spawning fixtures that report the
 * signals reaching them, finding a process in a report, and scratch cgroups. Header-only so
 * each suite binary stays one file plus testutil. */
#ifndef TESTS_CHECK_HARD_H
#define TESTS_CHECK_HARD_H

#define _GNU_SOURCE
#include "testutil.h"
#include "reaper/procfs.h"
#include "reaper/reaper.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HARD_REPORT_FD 3 /* where a spawned hard_sig finds its report pipe (-f 3) */

static inline void hard_nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

static inline const char *hard_path(const char *name)
{
	static char buf[8][512];
	static int slot;
	char *b = buf[slot++ % 8];
	ck_assert_int_eq(tu_build_path(b, 512, name), 0);
	return b;
}

/* Fork and exec argv with exactly envp; report_fd (>= 0) becomes fd 3 of the child, every
 * other descriptor of ours stays behind (they are all CLOEXEC or closed here). */
static inline pid_t hard_spawn_raw(char *const argv[], char *const envp[], int report_fd)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (report_fd >= 0 && dup2(report_fd, HARD_REPORT_FD) < 0)
			_exit(126);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execve(argv[0], argv, envp);
		_exit(127);
	}
	return pid;
}

/* A hard_sig child with extra flags (NULL-terminated) and envp, that reports signals on a
 * pipe: *rd gets the read end (non-blocking). Waits until it says it is ready. */
static inline void hard_sig_spawn(struct tu_proc *p, int *rd, char *const envp[], ...)
{
	char *argv[16] = { (char *)hard_path("hard_sig"), "-f", "3" };
	int n = 3;
	va_list ap;
	va_start(ap, envp);
	for (char *a; n < 15 && (a = va_arg(ap, char *));)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	int pfd[2];
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid_t pid = hard_spawn_raw(argv, envp, pfd[1]);
	ck_assert_int_gt(pid, 0);
	close(pfd[1]);
	char c = 0;
	ck_assert_msg(read(pfd[0], &c, 1) == 1 && c == 'R', "hard_sig %d did not get ready", (int)pid);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	*rd = pfd[0];
	ck_assert_int_eq(tu_pin(p, pid, 0), 0);
}

/* The signals a hard_sig reported so far, as a comma-separated list ("" for none). */
static inline const char *hard_signals_seen(int rd)
{
	static char out[256];
	unsigned char b[64];
	size_t len = 0;
	ssize_t n;
	out[0] = 0;
	while ((n = read(rd, b, sizeof b)) > 0)
		for (ssize_t i = 0; i < n && len < sizeof out - 8; i++)
			len += (size_t)snprintf(out + len, sizeof out - len, "%s%d", len ? "," : "", b[i]);
	return out;
}

/* envp for a fixture: PATH plus the given entries (NULL-terminated). */
static inline char **hard_env(const char *first, ...)
{
	static char *env[16];
	int n = 0;
	env[n++] = "PATH=/usr/bin:/bin";
	va_list ap;
	va_start(ap, first);
	for (const char *e = first; e && n < 15; e = va_arg(ap, const char *))
		env[n++] = (char *)e;
	va_end(ap);
	env[n] = NULL;
	return env;
}

/* The report's entry for pid (with start time st when not 0), or NULL. */
static inline const struct reaper_proc *hard_find(const struct reaper_report *r, pid_t pid, uint64_t st)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (r->procs[i].pid == pid && (!st || r->procs[i].start_time == st))
			return &r->procs[i];
	return NULL;
}

static inline int hard_count_pid(const struct reaper_report *r, pid_t pid)
{
	int n = 0;
	for (size_t i = 0; r && i < r->n; i++)
		n += r->procs[i].pid == pid;
	return n;
}

/* ---- scratch cgroups (v1 controller hierarchies, or the v2 unified one) ------------ */

/* Make CONTROLLER's group "reaper-hard-<pid>-<tag>" under the first hierarchy that has
 * it; path gets the directory. 0, or -ENOENT when this machine has no such controller. */
static inline int hard_cgroup_make(char *path, size_t len, const char *controller, const char *tag)
{
	char base[256];
	struct stat sb;
	snprintf(base, sizeof base, "/sys/fs/cgroup/%s", controller);
	if (stat(base, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return -ENOENT;
	snprintf(path, len, "%s/reaper-hard-%d-%s", base, (int)getpid(), tag);
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static inline int hard_cgroup_write(const char *dir, const char *file, const char *value)
{
	char p[600];
	snprintf(p, sizeof p, "%.512s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int e = errno;
	close(fd);
	return n < 0 ? -e : 0;
}

static inline long hard_cgroup_read_long(const char *dir, const char *file)
{
	char p[600], buf[64];
	snprintf(p, sizeof p, "%.512s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

/* How many processes cgroup.procs lists. */
static inline long hard_cgroup_procs(const char *dir)
{
	char p[600];
	snprintf(p, sizeof p, "%.512s/cgroup.procs", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	long n = 0;
	int pid;
	while (fscanf(f, "%d", &pid) == 1)
		n++;
	fclose(f);
	return n;
}

/* Remove the group, retrying while its last tasks finish exiting. */
static inline int hard_cgroup_remove(const char *dir)
{
	for (int i = 0; i < 500; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		hard_nap(0.01);
	}
	return -errno;
}

/* Run fn in a forked child as uid/gid 65534 (nobody), no supplementary groups; returns its
 * wait status. The child reports failures on stderr and by its exit code. nobody may not
 * reach the checkout, so the child runs reaper and the fixtures (hard_path) from a private
 * copy, removed afterwards, and starts in that directory. */
static inline int hard_as_nobody(int (*fn)(void *), void *arg)
{
	char dir[256];
	int e = tu_private_build(dir, sizeof dir);
	ck_assert_msg(e == 0, "a private copy of the build for nobody: %s", strerror(-e));
	pid_t pid = fork();
	if (pid == 0) {
		if (setenv("REAPER_BUILD", dir, 1) < 0 || chdir(dir) < 0)
			_exit(89);
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(90);
		_exit(fn(arg));
	}
	int st = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	ck_assert_int_eq(tu_private_build_remove(dir), 0);
	return st;
}

/* In a forked (possibly unprivileged) child, where Check's assertions do not reach: print
 * why on stderr and return a distinct code for the parent to assert on. */
#define KID_CHECK(code, cond, ...)                                                      \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "hard (uid %d): ", (int)getuid());              \
			fprintf(stderr, __VA_ARGS__);                                   \
			fprintf(stderr, " [%s:%d]\n", __FILE__, __LINE__);              \
			return code;                                                    \
		}                                                                       \
	} while (0)

/* Last test of a case: nothing this suite started is still running or unwaited. */
START_TEST(nothing_left_behind)
{
	ck_assert_int_eq(tu_live_children(), 0);
	ck_assert_int_eq(tu_zombie_children(), 0);
}
END_TEST

/* Run the suite; the exit status of main. */
static inline int hard_run(Suite *s)
{
	return tu_run_suite(s);
}

#endif
