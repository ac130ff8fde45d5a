/* SPDX-License-Identifier: MIT */
/* testutil: see testutil.h. Plain /proc reads of its own, so a test never checks the library
 * with the library's own parser (marker matching aside, which has its own unit tests). */
#define _GNU_SOURCE
#include "testutil.h"
#include "reaper/pidref.h"

#include "reaper/procfs.h"
#include "reaper/reaper.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

double tu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

const char *tu_build_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("REAPER_BUILD");
	if (env && *env)
		return env;
	if (!dir[0]) {
		ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
		dir[n > 0 ? n : 0] = 0;
		for (int up = 0; up < 2; up++) { /* BUILD/tests/check_x -> BUILD */
			char *slash = strrchr(dir, '/');
			if (slash)
				*slash = 0;
		}
	}
	return dir;
}

int tu_build_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, strcmp(name, "reaper") ? "%s/fixtures/%s" : "%s/%s", tu_build_dir(), name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Copy the regular file from to a new file to, mode 0755. */
static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, r = 0;
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
	if (out < 0)
		r = -errno;
	while (!r) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 20, 0);
		if (n == 0)
			break;
		if (n < 0 && errno != EINTR)
			r = -errno;
	}
	if (!r && fchmod(out, 0755) < 0) /* the umask does not decide who may run it */
		r = -errno;
	close(in);
	if (out >= 0 && close(out) < 0 && !r)
		r = -errno;
	return r;
}

int tu_private_build(char *dir, size_t len)
{
	char from[PATH_MAX], to[PATH_MAX];
	if (snprintf(dir, len, "/tmp/reaper-test-XXXXXX") >= (int)len)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	snprintf(to, sizeof to, "%s/fixtures", dir);
	int r = chmod(dir, 0711) < 0 || mkdir(to, 0711) < 0 || chmod(to, 0711) < 0 ? -errno : 0;
	snprintf(from, sizeof from, "%s/reaper", tu_build_dir());
	snprintf(to, sizeof to, "%s/reaper", dir);
	if (!r)
		r = copy_file(from, to);
	snprintf(from, sizeof from, "%s/fixtures", tu_build_dir());
	DIR *d = r ? NULL : opendir(from);
	if (!r && !d)
		r = -errno;
	for (struct dirent *e; d && !r && (e = readdir(d));) {
		if (e->d_type != DT_REG)
			continue;
		snprintf(from, sizeof from, "%s/fixtures/%s", tu_build_dir(), e->d_name);
		snprintf(to, sizeof to, "%s/fixtures/%s", dir, e->d_name);
		r = copy_file(from, to);
	}
	if (d)
		closedir(d);
	if (r)
		tu_private_build_remove(dir);
	return r;
}

int tu_private_build_remove(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/fixtures", dir);
	DIR *d = opendir(p);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/fixtures/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	snprintf(p, sizeof p, "%s/fixtures", dir);
	rmdir(p);
	snprintf(p, sizeof p, "%s/reaper", dir);
	unlink(p);
	return rmdir(dir) < 0 ? -errno : 0;
}

int tu_unique_marker(char *buf, size_t len, const char *name, const char *prefix)
{
	static unsigned counter;
	unsigned rnd = 0;
	if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		rnd = (unsigned)tu_now();
	int n = snprintf(buf, len, "%s=%s-%d-%u-%08x", name, prefix, (int)getpid(), ++counter, rnd);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The whole text of /proc/PID/stat, 0-terminated; length or -errno. */
static ssize_t read_stat(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return n;
}

/* Field k (1-based) after the comm, which ends at the last ')'. */
static const char *stat_field(const char *buf, int k)
{
	const char *p = strrchr(buf, ')');
	if (!p)
		return NULL;
	p++;
	for (int f = 3; f <= k; f++) {
		if (*p != ' ')
			return NULL;
		p++;
		if (f < k)
			p += strcspn(p, " ");
	}
	return p;
}

uint64_t tu_start_time(pid_t pid)
{
	char buf[1024];
	if (read_stat(pid, buf, sizeof buf) <= 0)
		return 0;
	const char *f = stat_field(buf, 22);
	return f ? strtoull(f, NULL, 10) : 0;
}

char tu_state(pid_t pid)
{
	char buf[1024];
	if (read_stat(pid, buf, sizeof buf) <= 0)
		return 0;
	const char *f = stat_field(buf, 3);
	return f ? *f : 0;
}

int tu_exists(pid_t pid, uint64_t start_time)
{
	uint64_t st = tu_start_time(pid);
	return st != 0 && (start_time == 0 || st == start_time);
}

int tu_alive(pid_t pid, uint64_t start_time)
{
	char s = tu_state(pid);
	return tu_exists(pid, start_time) && s != 'Z' && s != 'X' && s != 0;
}

int tu_wait_present(pid_t pid, double timeout)
{
	for (double end = tu_now() + timeout; tu_now() < end; nap(0.002))
		if (tu_start_time(pid))
			return 0;
	return -ETIMEDOUT;
}

int tu_wait_gone(pid_t pid, uint64_t start_time, double timeout)
{
	for (double end = tu_now() + timeout;; nap(0.002)) {
		if (!tu_exists(pid, start_time))
			return 0;
		if (tu_now() >= end)
			return -ETIMEDOUT;
	}
}

/* tu_proc is a pidref with the test's names: the same identity rules (a pidfd where the
 * kernel has them, pid + start time re-checked where it has not, as under valgrind). */
static struct pidref ref_of(const struct tu_proc *p)
{
	return (struct pidref){ .pid = p->pid, .start_time = p->start_time, .fd = p->pidfd };
}

static void set_from(struct tu_proc *p, const struct pidref *r)
{
	p->pid = r->pid;
	p->start_time = r->start_time;
	p->pidfd = r->fd;
}

int tu_pin(struct tu_proc *p, pid_t pid, uint64_t start_time)
{
	struct pidref r;
	*p = (struct tu_proc){ .pid = pid, .pidfd = -1 };
	uint64_t st = tu_start_time(pid);
	if (!st || (start_time && st != start_time))
		return -ESRCH;
	int e = pidref_open(&r, -1, pid, st);
	if (e < 0)
		return e;
	set_from(p, &r);
	return 0;
}

void tu_proc_close(struct tu_proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

/* Block until our child p exits and collect it. */
static int wait_child(struct tu_proc *p, siginfo_t *si)
{
	for (;;) {
		memset(si, 0, sizeof *si);
		int r = p->pidfd >= 0 ? waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, si, WEXITED)
				      : waitid(P_PID, (id_t)p->pid, si, WEXITED);
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int tu_wait_exit(struct tu_proc *p)
{
	siginfo_t si;
	if (p->pid <= 0)
		return -EBADF;
	int e = wait_child(p, &si);
	tu_proc_close(p);
	if (e < 0)
		return e;
	if (si.si_code == CLD_EXITED)
		return W_EXITCODE(si.si_status, 0);
	return si.si_status | (si.si_code == CLD_DUMPED ? 0x80 : 0);
}

int tu_kill_wait(struct tu_proc *p)
{
	if (p->pid <= 0)
		return -EBADF;
	struct pidref ref = ref_of(p);
	int r = pidref_signal(&ref, -1, SIGKILL);
	if (r == -ESRCH)
		r = 0; /* gone already */
	siginfo_t si;
	if (wait_child(p, &si) < 0) {
		/* not our child: its zombie is someone else's; wait until it is gone */
		if (tu_wait_gone(p->pid, p->start_time, 10) < 0 && r == 0)
			r = -ETIMEDOUT;
	}
	tu_proc_close(p);
	return r;
}

int tu_spawn(struct tu_proc *p, char *const argv[], char *const envp[], int out_fd, int err_fd)
{
	*p = (struct tu_proc){ .pidfd = -1 };
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		if (err_fd >= 0)
			dup2(err_fd, 2);
		execve(argv[0], argv, envp ? envp : environ);
		_exit(127);
	}
	/* our unwaited child: its pid cannot be reused under us */
	p->pid = pid;
	p->start_time = tu_start_time(pid);
	struct pidref r;
	int e = pidref_open(&r, -1, pid, p->start_time);
	if (e == 0)
		set_from(p, &r);
	return e;
}

int tu_run_pids(char *const argv[], char *const envp[], pid_t *pids, size_t max, int *status)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	struct tu_proc p;
	int r = tu_spawn(&p, argv, envp, pfd[1], -1);
	close(pfd[1]);
	if (r < 0 && !p.pid) {
		close(pfd[0]);
		return r;
	}
	FILE *in = fdopen(pfd[0], "r");
	int n = 0, pid;
	while (in && fscanf(in, "%d", &pid) == 1)
		if ((size_t)n < max)
			pids[n++] = pid;
	if (in)
		fclose(in);
	else
		close(pfd[0]);
	int st = tu_wait_exit(&p);
	if (status)
		*status = st;
	return n;
}

int tu_fixture(const char *name, char *const args[], char *const envp[], pid_t *pids, size_t max)
{
	char path[PATH_MAX];
	char *argv[32] = { path };
	size_t i = 1;
	if (tu_build_path(path, sizeof path, name) < 0)
		return -ENAMETOOLONG;
	for (; args && args[i - 1] && i < 31; i++)
		argv[i] = args[i - 1];
	argv[i] = NULL;
	int status = 0;
	int n = tu_run_pids(argv, envp, pids, max, &status);
	if (n >= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		return -ECHILD; /* the fixture itself failed: its stderr says why */
	return n;
}

/* Calls fn(pid, ctx) for every live process but us whose environ holds entry. */
static int each_marked(const char *entry, int (*fn)(pid_t, void *), void *ctx)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	size_t cap = 1 << 16, elen = strlen(entry);
	char *buf = malloc(cap);
	int count = 0;
	struct dirent *de;
	while (buf && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid == getpid())
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		size_t len = 0;
		ssize_t n;
		while ((n = read(fd, buf + len, cap - len)) > 0) {
			len += (size_t)n;
			if (len == cap) {
				char *nb = realloc(buf, cap * 2);
				if (!nb)
					break;
				buf = nb;
				cap *= 2;
			}
		}
		close(fd);
		if (len && reaper_environ_has(buf, len, entry, elen) && tu_alive(pid, 0)) {
			int r = fn(pid, ctx);
			if (r < 0) {
				count = r;
				break;
			}
			count++;
		}
	}
	free(buf);
	closedir(d);
	return count;
}

struct collect {
	pid_t *pids;
	size_t max, n;
};

static int collect_pid(pid_t pid, void *ctx)
{
	struct collect *c = ctx;
	if (c->pids && c->n < c->max)
		c->pids[c->n] = pid;
	c->n++;
	return 0;
}

int tu_marked(const char *entry, pid_t *pids, size_t max)
{
	struct collect c = { pids, max, 0 };
	return each_marked(entry, collect_pid, &c);
}

static int kill_pid(pid_t pid, void *ctx)
{
	struct tu_proc p;
	if (tu_pin(&p, pid, 0) == 0)
		tu_kill_wait(&p);
	return 0;
}

int tu_kill_marked(const char *entry)
{
	int total = 0;
	/* what we kill may have forked meanwhile: again until nothing carries the marker */
	for (int round = 0; round < 50; round++) {
		int n = each_marked(entry, kill_pid, NULL);
		if (n <= 0)
			return n < 0 ? n : total;
		total += n;
	}
	return total;
}

/* Our children (every thread's children file), zombies or live ones; up to max of their
 * pids into pids. */
static int list_children(int zombies, pid_t *pids, size_t max)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/self/task/%s/children", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		int pid;
		while (fscanf(f, "%d", &pid) == 1) {
			char s = tu_state(pid);
			if (s && (s == 'Z') == (zombies != 0)) {
				if (pids && (size_t)n < max)
					pids[n] = pid;
				n++;
			}
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

int tu_zombie_children(void)
{
	return list_children(1, NULL, 0);
}

int tu_zombie_pids(pid_t *pids, size_t max)
{
	return list_children(1, pids, max);
}

int tu_live_children(void)
{
	return list_children(0, NULL, 0);
}

static const char *suite_marker;

START_TEST(nothing_left)
{
	pid_t pids[8];
	int n = tu_marked(suite_marker, pids, 8);
	if (n > 0)
		tu_kill_marked(suite_marker); /* a failed test left them: clean up, then fail */
	ck_assert_msg(n == 0, "%d processes of this suite still run (first: %d)", n, n > 0 ? (int)pids[0] : 0);
	ck_assert_int_eq(tu_zombie_children(), 0);
}
END_TEST

void tu_add_nothing_left(Suite *s, const char *marker)
{
	suite_marker = marker;
	TCase *tc = tcase_create("zz_nothing_left");
	tcase_add_test(tc, nothing_left);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
}

int tu_have_cap(int cap)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return 0;
	char line[256];
	unsigned long long eff = 0;
	int found = 0;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return found && cap >= 0 && cap < 64 && (eff >> cap & 1);
}

int tu_is_root(void)
{
	/* CAP_SYS_ADMIN 21, CAP_SETUID 7, CAP_SETGID 6, CAP_KILL 5 */
	return geteuid() == 0 && tu_have_cap(21) && tu_have_cap(7) && tu_have_cap(6) && tu_have_cap(5);
}

/* The tests this suite did not register, in the order they were met. */
#define TU_NOT_RUN_MAX 64
static struct {
	const char *test, *need, *why;
} not_run[TU_NOT_RUN_MAX];
static int n_not_run, n_not_run_lost;

void tu_add_test_if(TCase *tc, const TTest *tf, int can_run, const char *need, const char *why)
{
	if (can_run) {
		tcase_add_test(tc, tf);
		return;
	}
	if (n_not_run < TU_NOT_RUN_MAX)
		not_run[n_not_run++] = (typeof(not_run[0])){ tf->name, need, why };
	else
		n_not_run_lost++;
}

/* "N not run (need WHAT)" per kind of need, then each test with its reason; the same lines
 * (suite, test, need, reason; tab-separated) appended to $TESTS_NOT_RUN_FILE for the summary
 * of the whole check. */
static void report_not_run(void)
{
	const char *suite = program_invocation_short_name;
	for (int i = 0; i < n_not_run; i++) {
		int first = 1, count = 0;
		for (int j = 0; j < n_not_run; j++)
			if (strcmp(not_run[j].need, not_run[i].need) == 0) {
				first = first && j >= i;
				count++;
			}
		if (!first)
			continue;
		printf("%s: %d not run (need %s):\n", suite, count, not_run[i].need);
		for (int j = i; j < n_not_run; j++)
			if (strcmp(not_run[j].need, not_run[i].need) == 0)
				printf("  %s: %s\n", not_run[j].test, not_run[j].why);
	}
	if (n_not_run_lost)
		printf("%s: %d more not run\n", suite, n_not_run_lost);
	fflush(stdout);
	const char *file = getenv("TESTS_NOT_RUN_FILE");
	FILE *f = file && *file && n_not_run ? fopen(file, "ae") : NULL;
	for (int i = 0; f && i < n_not_run; i++)
		fprintf(f, "%s\t%s\t%s\t%s\n", suite, not_run[i].test, not_run[i].need, not_run[i].why);
	if (f)
		fclose(f);
}

int tu_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	report_not_run();
	return failed ? 1 : 0;
}
