/* SPDX-License-Identifier: MIT */
/* The Check helper against real processes: an inner suite whose tests leak on purpose runs
 * in CK_FORK and in CK_NOFORK mode, with a cgroup per test where cgroup2 is writable (root)
 * and once more on a read-only cgroup2 mount (markers and descent); its results
 * (srunner_ntests_failed and its log) must show the leaking test failed naming the leaked
 * command, the clean ones passed, nothing left running, no zombie left with us and no cgroup
 * left behind. Prints "N passed, N failed". */
#define _GNU_SOURCE
#include "reaper/check.h"
#include "reaper/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int tag; /* makes the leaked command lines ours */
static int passed, failed;
static char workdir[] = "/tmp/reaper-check-helper-XXXXXX";
static int with_cgroups; /* the inner suite's tests run in cgroups of their own */

#define EXPECT(cond, ...)                                        \
	do {                                                     \
		if (cond) {                                      \
			passed++;                                \
		} else {                                         \
			failed++;                                \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);            \
			fputc('\n', stderr);                     \
		}                                                \
	} while (0)

/* Run argv and wait for it (its own exit only: what it detaches lives on). */
static int run(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return st;
}

static int count_procs(const char *arg);

/* Whether this process is a child subreaper now. */
static int prctl_subreaper(void)
{
	int on = -1;
	if (prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&on, 0, 0, 0) < 0)
		return -errno;
	return on != 0;
}

/* setsid -f sleep SECONDS.TAG: a detached process the test does not wait for. Returns once
 * it runs sleep (so it has left the test's process group, which Check kills at the end). */
static void detach_sleep(int seconds_prefix, const char *whole)
{
	char arg[64];
	if (whole)
		snprintf(arg, sizeof arg, "%s%d", whole, tag);
	else
		snprintf(arg, sizeof arg, "%d.%d", seconds_prefix, tag);
	char *argv[] = { "setsid", "-f", "sleep", arg, NULL };
	ck_assert_int_eq(run(argv), 0);
	if (!whole)
		for (int i = 0; i < 30000 && count_procs(arg) == 0; i++)
			usleep(1000);
}

START_TEST(leaks_daemon)
{
	detach_sleep(3600, NULL);
}
END_TEST

START_TEST(clean_after)
{
	detach_sleep(0, "0.2"); /* exits within the timeout: not a leak */
}
END_TEST

START_TEST(fails_and_leaks)
{
	detach_sleep(3601, NULL);
	ck_abort_msg("body failed on purpose");
}
END_TEST

/* A child forked without exec after a setenv: its environ is the runner's exec-time one, so
 * only descent finds it. Its pid goes to workdir/fork.pid. */
START_TEST(leaks_a_fork)
{
	setenv("REAPER_CHECK_HELPER_TEST", "changed after exec", 1);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		sleep(3600);
		_exit(0);
	}
	char path[128];
	snprintf(path, sizeof path, "%s/fork.pid", workdir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
}
END_TEST

/* An orphan we adopt (without cgroups) that has exited before the teardown's reap begins: a
 * zombie child of ours that the test left, collected at the teardown, not kept for the host.
 * With cgroups the test adopts nothing: the orphan is not ours. */
START_TEST(orphan_gone_before_teardown)
{
	char *argv[] = { "setsid", "-f", "true", NULL };
	ck_assert_int_eq(run(argv), 0);
	ck_assert_int_eq(prctl_subreaper(), !with_cgroups);
	if (with_cgroups)
		return;
	for (int i = 0; i < 30000 && count_procs(NULL) == 0; i++)
		usleep(1000);
	ck_assert_int_gt(count_procs(NULL), 0);
}
END_TEST

START_TEST(waits_for_child)
{
	char *argv[] = { "true", NULL };
	ck_assert_int_eq(run(argv), 0);
}
END_TEST

START_TEST(env_is_set)
{
	char path[128], line[256] = "", cmd[256];
	snprintf(path, sizeof path, "%s/env", workdir);
	snprintf(cmd, sizeof cmd, "echo \"$REAPER_TEST|${REAPER_CHECK:+set}|${REAPER_CHECK_RUN:+set}\" > %s", path);
	char *argv[] = { "sh", "-c", cmd, NULL };
	ck_assert_int_eq(run(argv), 0);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	fclose(f);
	ck_assert_str_eq(line, "clean|set|set\n");
}
END_TEST

/* env -i setsid -f sleep SECONDS.TAG: an orphan with no marker, running when this returns. */
static void leave_unmarked(int seconds)
{
	char arg[32];
	snprintf(arg, sizeof arg, "%d.%d", seconds, tag);
	char *argv[] = { "env", "-i", "setsid", "-f", "sleep", arg, NULL };
	ck_assert_int_eq(run(argv), 0);
	for (int i = 0; i < 30000 && count_procs(arg) == 0; i++)
		usleep(1000);
}

/* A test that clears the environment of what it leaves and fails: in CK_FORK mode its
 * teardown never runs and the leftover is neither marked nor a descendant of the runner;
 * only the test's cgroup still holds it for the TCase's sweep. */
START_TEST(fails_and_leaks_without_env)
{
	leave_unmarked(3602);
	ck_abort_msg("body failed on purpose, its leftover unmarked");
}
END_TEST

/* The same, and the test's process dies by a signal (as when Check's timeout kills it):
 * CK_FORK mode only. */
START_TEST(crashes_and_leaks_without_env)
{
	leave_unmarked(3605);
	raise(SIGKILL);
}
END_TEST

/* "0::" line of /proc/self/cgroup (the cgroup2 path), or "" */
static void own_cgroup_line(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 8];
	buf[0] = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "0::", 3)) {
			size_t n = strcspn(line + 3, "\n");
			n = n < len - 1 ? n : len - 1;
			memcpy(buf, line + 3, n);
			buf[n] = 0;
		}
	if (f)
		fclose(f);
}

static void write_file(const char *name, const char *text)
{
	char path[160];
	snprintf(path, sizeof path, "%s/%s", workdir, name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static char setup_cg[PATH_MAX]; /* where the checked setup added after the helper's ran */

static void user_unchecked_setup(void)
{
	char cg[PATH_MAX];
	own_cgroup_line(cg, sizeof cg);
	write_file("cg.unchecked", cg);
}

static void user_checked_setup(void)
{
	own_cgroup_line(setup_cg, sizeof setup_cg);
}

/* Where the test runs: the same cgroup as the checked setup after the helper's, its
 * directory into cg.test (the outer test checks it is gone afterwards). */
START_TEST(runs_in_its_cgroup)
{
	char line[PATH_MAX], dir[PATH_MAX] = "";
	own_cgroup_line(line, sizeof line);
	ck_assert_str_eq(line, setup_cg);
	if (reaper_cgroup_current(dir, sizeof dir) < 0)
		dir[0] = 0;
	write_file("cg.test", dir);
}
END_TEST

static pid_t allowed_child; /* the test's own child that the helper's allow glob matches */

/* Added before the helper's fixture: its teardown runs after the check, as the test's own
 * code that waits for its child; what waitpid said goes to own.status. */
static void wait_own_teardown(void)
{
	if (allowed_child <= 0)
		return;
	int st = 0;
	char text[64];
	pid_t w = waitpid(allowed_child, &st, 0);
	if (w < 0)
		snprintf(text, sizeof text, "errno %d", errno);
	else if (WIFSIGNALED(st))
		snprintf(text, sizeof text, "signal %d", WTERMSIG(st));
	else
		snprintf(text, sizeof text, "exit %d", WEXITSTATUS(st));
	allowed_child = 0;
	write_file("own.status", text);
}

/* A child forked without exec that ignores SIGTERM and sleeps. */
static const int fork_sleeper_line = __LINE__ + 3; /* its reaper_check_fork() call's */
static pid_t fork_sleeper(int registered)
{
	pid_t pid = registered ? reaper_check_fork() : fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_IGN);
		for (;;)
			pause();
	}
	return pid;
}

/* Two children leak: the one the test said is its own is killed but its exit status stays
 * for the test (in CK_NOFORK mode the outer test waits for it); the other is reaped. */
START_TEST(owns_leaked_children)
{
	pid_t own = fork_sleeper(1), other = fork_sleeper(0);
	ck_assert_int_gt(own, 0);
	ck_assert_int_gt(other, 0);
	ck_assert_int_eq(reaper_check_own(own), 0); /* again: no second entry */
	ck_assert_int_eq(reaper_check_own(0), -EINVAL);
	char text[64];
	snprintf(text, sizeof text, "%d %d\n", (int)own, (int)other);
	write_file("own.pids", text);
}
END_TEST

/* The test's own child, allowed by a glob: killed at the check without failing it, and the
 * test's own waitpid after the check reads SIGKILL. */
START_TEST(owns_an_allowed_child)
{
	char arg[32];
	snprintf(arg, sizeof arg, "3604.%d", tag);
	pid_t pid = reaper_check_fork();
	if (pid == 0) {
		execlp("sleep", "sleep", arg, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	allowed_child = pid;
	for (int i = 0; i < 30000 && count_procs(arg) == 0; i++)
		usleep(1000);
}
END_TEST

/* A checked setup after the helper's that leaves a process and fails: the test never runs
 * and no teardown runs (in CK_NOFORK mode the runner itself is left set up for the test). */
static void failing_checked_setup(void)
{
	if (with_cgroups)
		leave_unmarked(3606);
	else
		detach_sleep(3606, NULL);
	ck_abort_msg("setup failed on purpose");
}

/* Marks which TCase it ran in (REAPER_TEST holds the name given to reaper_check_tcase). */
START_TEST(names_its_tcase)
{
	char name[64];
	const char *t = getenv("REAPER_TEST");
	ck_assert_ptr_nonnull(t);
	snprintf(name, sizeof name, "many.%.40s", t);
	write_file(name, "");
}
END_TEST

static Suite *inner(enum fork_status mode)
{
	Suite *s = suite_create("inner");
	TCase *leaky = tcase_create("leaky"), *clean = tcase_create("clean"), *own = tcase_create("own");
	TCase *badsetup = tcase_create("badsetup");
	static char allow_glob[32];
	snprintf(allow_glob, sizeof allow_glob, "sleep 3604.%d", tag);
	EXPECT(reaper_check_allow(allow_glob) == 0, "reaper_check_allow(%s)", allow_glob);
	EXPECT(reaper_check_tcase(leaky, "leaky") == 0, "reaper_check_tcase(leaky)");
	tcase_add_unchecked_fixture(clean, user_unchecked_setup, NULL);
	EXPECT(reaper_check_tcase(clean, "clean") == 0, "reaper_check_tcase(clean)");
	tcase_add_checked_fixture(clean, user_checked_setup, NULL);
	tcase_add_checked_fixture(own, NULL, wait_own_teardown);
	EXPECT(reaper_check_tcase(own, "own") == 0, "reaper_check_tcase(own)");
	tcase_set_timeout(leaky, 60);
	tcase_set_timeout(clean, 60);
	tcase_set_timeout(own, 60);
	EXPECT(reaper_check_tcase(badsetup, "badsetup") == 0, "reaper_check_tcase(badsetup)");
	tcase_add_checked_fixture(badsetup, failing_checked_setup, NULL);
	tcase_set_timeout(badsetup, 60);
	tcase_add_test(badsetup, waits_for_child);
	tcase_add_test(leaky, leaks_daemon);
	tcase_add_test(leaky, clean_after);
	tcase_add_test(leaky, fails_and_leaks);
	tcase_add_test(leaky, leaks_a_fork);
	if (with_cgroups)
		tcase_add_test(leaky, fails_and_leaks_without_env);
	if (with_cgroups && mode == CK_FORK)
		tcase_add_test(leaky, crashes_and_leaks_without_env);
	tcase_add_test(clean, waits_for_child);
	tcase_add_test(clean, orphan_gone_before_teardown);
	tcase_add_test(clean, env_is_set);
	tcase_add_test(clean, runs_in_its_cgroup);
	tcase_add_test(own, owns_leaked_children);
	tcase_add_test(own, owns_an_allowed_child);
	suite_add_tcase(s, leaky);
	suite_add_tcase(s, clean);
	suite_add_tcase(s, own);
	suite_add_tcase(s, badsetup);
	return s;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return strdup("");
	char *buf = calloc(1, 1 << 16);
	size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	(void)n;
	fclose(f);
	return buf;
}

/* The log line of one test ("file:line:R:tcase:test:0: message"), or NULL. */
static const char *line_of(const char *log, const char *tc_test)
{
	const char *p = strstr(log, tc_test);
	if (!p)
		return NULL;
	while (p > log && p[-1] != '\n')
		p--;
	return p;
}

static int line_has(const char *line, const char *what)
{
	if (!line)
		return 0;
	const char *end = strchr(line, '\n');
	const char *hit = strstr(line, what);
	return hit && (!end || hit < end);
}

/* Read /proc/PID/WHAT into buf (NUL-terminated); the byte count or -1. */
static ssize_t read_proc(int pid, const char *what, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", pid, what);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t got = read(fd, buf, len - 1);
	close(fd);
	if (got >= 0)
		buf[got] = 0;
	return got;
}

/* Counts processes matching: cmdline exactly "sleep ARG" (arg != NULL), else zombie children. */
static int count_procs(const char *arg)
{
	char want[64], buf[512];
	int n = arg ? snprintf(want, sizeof want, "sleep%c%s", 0, arg) + 1 : 0, count = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int pid = atoi(e->d_name);
		if (pid <= 0)
			continue;
		if (arg) {
			count += read_proc(pid, "cmdline", buf, sizeof buf) == n && memcmp(buf, want, (size_t)n) == 0;
			continue;
		}
		char state, *rp;
		int ppid;
		if (read_proc(pid, "stat", buf, sizeof buf) > 0 && (rp = strrchr(buf, ')')) &&
		    sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && state == 'Z' && ppid == getpid())
			count++;
	}
	if (d)
		closedir(d);
	return count;
}

/* Entries of dir named for this process's runner (reaper-check-PID.*): ours, left behind. A
 * reaper-check-* of another runner (another suite on the machine, run by root) is not ours. */
static int own_cgroups_in(const char *dir)
{
	char prefix[32];
	int len = snprintf(prefix, sizeof prefix, "reaper-check-%d.", (int)getpid());
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, prefix, len);
	if (d)
		closedir(d);
	return n;
}

static int leftover_cgroups(void)
{
	char dir[PATH_MAX];
	if (reaper_cgroup_current(dir, sizeof dir) < 0)
		return 0;
	return own_cgroups_in(dir);
}

/* Another runner's cgroup beside ours is not counted as one we left behind. */
static void other_runners_cgroups_are_not_ours(void)
{
	char dir[PATH_MAX], sub[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s/cgdir", workdir);
	EXPECT(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));
	const char *other = getpid() == 1 ? "2" : "1";
	snprintf(sub, sizeof sub, "%s/reaper-check-%s.0123456789abcdef", dir, other);
	EXPECT(mkdir(sub, 0700) == 0, "mkdir %s: %s", sub, strerror(errno));
	EXPECT(own_cgroups_in(dir) == 0, "another runner's reaper-check-%s.* was counted as ours", other);
	snprintf(sub, sizeof sub, "%s/reaper-check-%d.0123456789abcdef", dir, (int)getpid());
	EXPECT(mkdir(sub, 0700) == 0, "mkdir %s: %s", sub, strerror(errno));
	EXPECT(own_cgroups_in(dir) == 1, "our runner's reaper-check-%d.* was not counted", (int)getpid());
}

static void run_mode(enum fork_status mode, const char *name)
{
	char log[128], errpath[128], arg[32];
	snprintf(log, sizeof log, "%s/%s.log", workdir, name);
	snprintf(errpath, sizeof errpath, "%s/%s.err", workdir, name);
	char cg_before[PATH_MAX], cg_after[PATH_MAX];
	own_cgroup_line(cg_before, sizeof cg_before);
	SRunner *sr = srunner_create(inner(mode));
	srunner_set_fork_status(sr, mode);
	srunner_set_log(sr, log);
	/* the inner suite's stderr (the sweep's report) goes to a file we read back */
	fflush(stderr);
	int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	close(fd);
	srunner_run_all(sr, CK_SILENT);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	int nfailed = srunner_ntests_failed(sr), nrun = srunner_ntests_run(sr);
	srunner_free(sr);
	own_cgroup_line(cg_after, sizeof cg_after);

	char *text = slurp(log), *err = slurp(errpath);
	/* the failed setup: its leftover swept, the runner back where it was */
	EXPECT(line_has(line_of(text, ":badsetup:"), "setup failed on purpose"), "%s: badsetup:\n%s", name, text);
	snprintf(arg, sizeof arg, "3606.%d", tag);
	EXPECT(strstr(err, arg) && count_procs(arg) == 0, "%s: the failed setup's `sleep %s` was not swept:\n%s", name,
	       arg, err);
	EXPECT(!strcmp(cg_before, cg_after), "%s: the runner was in %s, is in %s now", name, cg_before, cg_after);
	EXPECT(!getenv("REAPER_CHECK") && !getenv("REAPER_TEST") && !getenv("REAPER_CHECK_RUN"),
	       "%s: the runner keeps a test's environment: REAPER_CHECK=%s", name, getenv("REAPER_CHECK"));
	int crash = with_cgroups && mode == CK_FORK;
	int want_run = 11 + with_cgroups + crash, want_failed = 5 + with_cgroups + crash;
	EXPECT(nrun == want_run && nfailed == want_failed, "%s: %d run, %d failed (want %d, %d)\n%s", name, nrun,
	       nfailed, want_run, want_failed, text);
	const char *l = line_of(text, ":leaky:leaks_daemon:");
	char at[PATH_MAX];
	/* at the test's own START_TEST line, as the test's failure */
	snprintf(at, sizeof at, "%s:%d:F:leaky:leaks_daemon:0: ", leaks_daemon->file, leaks_daemon->line);
	snprintf(arg, sizeof arg, "sleep 3600.%d", tag);
	EXPECT(l && !strncmp(l, at, strlen(at)) &&
		       line_has(l, "reaper: test leaks_daemon left 1 process running; killed after 2 s:") &&
		       strstr(l, arg),
	       "%s: the leaking test did not fail naming `%s`:\n%s", name, arg, text);
	EXPECT(line_has(line_of(text, ":leaky:clean_after:"), ":P:"), "%s: clean_after was blamed:\n%s", name, text);
	l = line_of(text, ":leaky:fails_and_leaks:");
	EXPECT(line_has(l, ":F:") && line_has(l, "body failed on purpose"), "%s: fails_and_leaks:\n%s", name, text);
	EXPECT(line_has(line_of(text, ":clean:waits_for_child:"), ":P:"), "%s: waits_for_child:\n%s", name, text);
	EXPECT(line_has(line_of(text, ":clean:orphan_gone_before_teardown:"), ":P:"), "%s: orphan_gone_before_teardown:\n%s",
	       name, text);
	char forkpid[160], *pidtext = (snprintf(forkpid, sizeof forkpid, "%s/fork.pid", workdir), slurp(forkpid));
	int fp = atoi(pidtext);
	snprintf(forkpid, sizeof forkpid, "\n  %d: ", fp);
	l = line_of(text, ":leaky:leaks_a_fork:");
	EXPECT(fp > 0 && line_has(l, "reaper: test leaks_a_fork left 1 process running") && strstr(text, forkpid),
	       "%s: the fork without exec (pid %d) was not found:\n%s", name, fp, text);
	EXPECT(fp > 0 && read_proc(fp, "stat", forkpid, sizeof forkpid) < 0, "%s: the forked child %d still exists", name, fp);
	free(pidtext);
	EXPECT(line_has(line_of(text, ":clean:env_is_set:"), ":P:"), "%s: env_is_set:\n%s", name, text);
	snprintf(arg, sizeof arg, "sleep 3601.%d", tag);
	if (mode == CK_FORK) /* its teardown never ran: the TCase's sweep killed it and said so */
		/* (a clean test's short sleep may still be on its way out too, on a busy machine) */
		EXPECT(strstr(err, "reaper: tcase leaky: killed ") && strstr(err, "left by tests that failed, crashed, timed out or ended without their check") &&
			       strstr(err, arg), "%s: the sweep did not report `%s`:\n%s", name, arg, err);
	char a[32], b[32], c[32];
	snprintf(a, sizeof a, "3600.%d", tag);
	snprintf(b, sizeof b, "3601.%d", tag);
	snprintf(c, sizeof c, "3602.%d", tag);
	if (with_cgroups) {
		l = line_of(text, ":leaky:fails_and_leaks_without_env:");
		EXPECT(line_has(l, ":F:") && line_has(l, "body failed on purpose"), "%s: fails_and_leaks_without_env:\n%s",
		       name, text);
		snprintf(arg, sizeof arg, "sleep 3602.%d", tag);
		if (mode == CK_FORK) /* unmarked and orphaned: only its cgroup held it */
			EXPECT(strstr(err, arg), "%s: the sweep did not report `%s`:\n%s", name, arg, err);
	}
	if (crash) {
		l = line_of(text, ":leaky:crashes_and_leaks_without_env:");
		snprintf(arg, sizeof arg, "sleep 3605.%d", tag);
		EXPECT(line_has(l, "Received signal 9") && strstr(err, arg),
		       "%s: crashes_and_leaks_without_env: its leftover `%s` was not swept:\n%s\n%s", name, arg, text, err);
		snprintf(c, sizeof c, "3605.%d", tag);
		EXPECT(count_procs(c) == 0, "%s: `sleep %s` is still running", name, c);
	}
	EXPECT(count_procs(a) == 0 && count_procs(b) == 0 && count_procs(c) == 0, "%s: a leaked sleep is still running",
	       name);

	/* cgroups: the test and the checked setup after the helper's in the test's own, the
	 * unchecked fixture in the runner's; none left afterwards */
	char *unchecked, path[160], *cgtest;
	snprintf(path, sizeof path, "%s/cg.unchecked", workdir);
	unchecked = slurp(path);
	snprintf(path, sizeof path, "%s/cg.test", workdir);
	cgtest = slurp(path);
	EXPECT(line_has(line_of(text, ":clean:runs_in_its_cgroup:"), ":P:"), "%s: runs_in_its_cgroup:\n%s", name, text);
	if (with_cgroups)
		EXPECT(strstr(cgtest, "/reaper-check-") && strstr(cgtest, "/test-") && access(cgtest, F_OK) < 0,
		       "%s: the test ran in `%s`, which must be a test's cgroup, and gone now", name, cgtest);
	else
		EXPECT(cgtest[0] && !strstr(cgtest, "/reaper-check-"), "%s: the test ran in `%s`", name, cgtest);
	EXPECT(!strstr(unchecked, "reaper-check-"), "%s: the unchecked fixture ran in `%s`", name, unchecked);
	EXPECT(leftover_cgroups() == 0, "%s: %d reaper-check-* cgroups left behind", name, leftover_cgroups());
	free(unchecked);
	free(cgtest);

	/* the test's own children */
	snprintf(path, sizeof path, "%s/own.pids", workdir);
	char *pids = slurp(path), *status;
	int own = 0, other = 0;
	EXPECT(sscanf(pids, "%d %d", &own, &other) == 2, "%s: own.pids: `%s`", name, pids);
	l = line_of(text, ":own:owns_leaked_children:");
	char ownline[96], otherline[96];
	snprintf(ownline, sizeof ownline, "\n  %d: ", own);
	snprintf(otherline, sizeof otherline, "\n  %d: ", other);
	const char *o = strstr(text, ownline), *x = strstr(text, otherline);
	char site[PATH_MAX];
	snprintf(site, sizeof site, "(started by reaper_check_fork() at %s:%d)", __FILE__, fork_sleeper_line);
	EXPECT(line_has(l, "reaper: test owns_leaked_children left 2 processes running") && o && x &&
		       line_has(o + 1, "[killed") && line_has(o + 1, "the test's own child: its exit status is left for it") &&
		       line_has(o + 1, site) && !line_has(x + 1, "own child") && !line_has(x + 1, "started by"),
	       "%s: owns_leaked_children (own %d, other %d):\n%s", name, own, other, text);
	if (mode == CK_NOFORK && own > 0 && other > 0) { /* the runner is the test's process */
		int st = 0;
		pid_t w = waitpid(own, &st, 0);
		EXPECT(w == own && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		       "%s: waitpid(own child %d) = %d (%s), status %#x: not its SIGKILL", name, own, (int)w,
		       w < 0 ? strerror(errno) : "", st);
		w = waitpid(other, &st, WNOHANG);
		EXPECT(w < 0 && errno == ECHILD, "%s: the unregistered child %d was not reaped (waitpid = %d)", name, other,
		       (int)w);
	}
	EXPECT(own > 0 && other > 0 && (read_proc(own, "stat", path, sizeof path) < 0 || strstr(path, ") Z ")) &&
		       read_proc(other, "stat", path, sizeof path) < 0,
	       "%s: a leaked child (%d, %d) still runs", name, own, other);
	EXPECT(line_has(line_of(text, ":own:owns_an_allowed_child:"), ":P:"), "%s: owns_an_allowed_child:\n%s", name,
	       text);
	snprintf(path, sizeof path, "%s/own.status", workdir);
	status = slurp(path);
	EXPECT(!strcmp(status, "signal 9"), "%s: the test's own waitpid after the check read `%s`, not SIGKILL", name,
	       status);
	free(pids);
	free(status);

	EXPECT(count_procs(NULL) == 0, "%s: %d zombie children left", name, count_procs(NULL));
	free(text);
	free(err);
}

/* Run suite s (mode: CK_FORK, CK_NOFORK, or -1 for the runner's default) with its log in
 * workdir/NAME.log; *text: that log (free it). Returns how many tests failed. */
static int run_logged(Suite *s, int mode, const char *name, char **text)
{
	char path[160];
	snprintf(path, sizeof path, "%s/%s.log", workdir, name);
	SRunner *sr = srunner_create(s);
	if (mode >= 0)
		srunner_set_fork_status(sr, (enum fork_status)mode);
	srunner_set_log(sr, path);
	srunner_run_all(sr, CK_SILENT);
	int nfailed = srunner_ntests_failed(sr);
	srunner_free(sr);
	*text = slurp(path);
	return nfailed;
}

/* Twelve checked TCases in one program: each test runs with its own TCase's name. */
static void many_tcases(void)
{
	Suite *s = suite_create("many");
	char name[12][8];
	for (int i = 0; i < 12; i++) {
		snprintf(name[i], sizeof name[i], "m%d", i);
		TCase *tc = tcase_create(name[i]);
		EXPECT(reaper_check_tcase(tc, name[i]) == 0, "reaper_check_tcase(%s)", name[i]);
		tcase_add_test(tc, names_its_tcase);
		suite_add_tcase(s, tc);
	}
	char *text, path[160];
	int nfailed = run_logged(s, -1, "many", &text);
	EXPECT(nfailed == 0, "many: %d failed:\n%s", nfailed, text);
	free(text);
	for (int i = 0; i < 12; i++) {
		snprintf(path, sizeof path, "%s/many.%s", workdir, name[i]);
		EXPECT(access(path, F_OK) == 0, "many: no test ran as TCase %s", name[i]);
	}
}

/* sleep ARG, started through forker; returns once the child runs sleep. A SIGTERM the test
 * sends it then is sleep's: before its exec the child still has the runner's handlers, and
 * Check's handler passes SIGTERM on to the whole process group (in CK_NOFORK mode, the
 * runner's and whatever started it). */
static pid_t start_sleep(pid_t (*forker)(void), const char *arg)
{
	int p[2];
	ck_assert(pipe2(p, O_CLOEXEC) == 0);
	pid_t pid = forker();
	if (pid == 0) {
		execlp("sleep", "sleep", arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char c;
	while (read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	return pid;
}

/* A checked fixture added before the helper's starts children just before the test begins
 * (often in the same clock tick): they are the fixture's, not the test's. Before, the check
 * collected the one that had exited (its teardown's waitpid read ECHILD) and blamed and
 * killed the one still running. */
static pid_t fixture_exits, fixture_runs;

static void fixture_children_setup(void)
{
	char arg[32];
	snprintf(arg, sizeof arg, "3609.%d", tag);
	fixture_exits = fork();
	if (fixture_exits == 0)
		_exit(7);
	fixture_runs = start_sleep(fork, arg);
}

static void fixture_children_teardown(void)
{
	int st1 = -1, st2 = -1;
	kill(fixture_runs, SIGTERM);
	pid_t w1 = waitpid(fixture_exits, &st1, 0), w2 = waitpid(fixture_runs, &st2, 0);
	ck_assert_msg(w1 == fixture_exits && WIFEXITED(st1) && WEXITSTATUS(st1) == 7,
		      "the fixture's child that exited: waitpid %d, status %#x", (int)w1, st1);
	ck_assert_msg(w2 == fixture_runs && WIFSIGNALED(st2) && WTERMSIG(st2) == SIGTERM,
		      "the fixture's running child: waitpid %d, status %#x", (int)w2, st2);
}

START_TEST(does_nothing) {}
END_TEST

static void fixture_children(enum fork_status mode)
{
	Suite *s = suite_create("fixture");
	TCase *tc = tcase_create("fixture");
	tcase_add_checked_fixture(tc, fixture_children_setup, fixture_children_teardown);
	EXPECT(reaper_check_tcase(tc, "fixture") == 0, "reaper_check_tcase(fixture)");
	tcase_add_loop_test(tc, does_nothing, 0, 20);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	char *text;
	int nfailed = run_logged(s, mode, "fixture", &text);
	EXPECT(nfailed == 0, "fixture children (%s): %d of 20 failed:\n%.2000s", mode == CK_FORK ? "fork" : "nofork",
	       nfailed, text);
	free(text);
}

/* An unchecked fixture added after the helper's starts a server for the TCase's tests and
 * the program stops it after the run: it is the runner's, not a test's leftover, in both
 * trackings. Before, without cgroups the TCase's sweep took it for a test's orphan (a child
 * of the runner started since the TCase began) and killed it. */
static pid_t fixture_server;

static void fixture_server_setup(void)
{
	char arg[32];
	snprintf(arg, sizeof arg, "3607.%d", tag);
	if (!fixture_server)
		fixture_server = start_sleep(fork, arg);
}

static void unchecked_fixture_server(enum fork_status mode, enum reaper_check_cgroup cg)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("server");
	reaper_check_use_cgroup(cg);
	EXPECT(reaper_check_tcase(tc, "server") == 0, "reaper_check_tcase(server)");
	tcase_add_unchecked_fixture(tc, fixture_server_setup, NULL);
	tcase_add_test(tc, does_nothing);
	tcase_add_test(tc, fails_and_leaks);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	char *text, path[160];
	snprintf(path, sizeof path, "%s/server.err", workdir);
	fflush(stderr);
	int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	close(fd);
	fixture_server = 0;
	int nfailed = run_logged(s, mode, "server", &text);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	reaper_check_use_cgroup(REAPER_CHECK_CGROUP_AUTO);
	char *err = slurp(path), arg[32];
	snprintf(arg, sizeof arg, "sleep 3607.%d", tag);
	int st = -1;
	pid_t w = fixture_server > 0 ? waitpid(fixture_server, &st, WNOHANG) : -1;
	EXPECT(nfailed == 1 && w == 0 && !strstr(err, arg) && !strstr(text, arg),
	       "server (%s, cgroup %d): %d of 2 failed, the fixture's server %s:\n%s\n%s", mode == CK_FORK ? "fork" : "nofork",
	       (int)cg, nfailed, w == 0 ? "runs" : "was ended", text, err);
	if (w == 0) {
		kill(fixture_server, SIGKILL);
		waitpid(fixture_server, &st, 0);
	}
	free(text);
	free(err);
}

/* A runner inside a checked test (a test of the test tools, as pytester is for pytest): its
 * tests are the outer test's, whose check finds what they leave. Before, the inner runner took
 * the outer test for one of its own whose teardown never ran and killed what it had started
 * (its own server, or the outer runner itself), and removed the outer TCase's cgroup. */
static enum fork_status inner_mode;

START_TEST(runs_a_checked_runner)
{
	char arg[32];
	snprintf(arg, sizeof arg, "3607.%d", tag);
	pid_t server = start_sleep(reaper_check_fork, arg);
	ck_assert_int_gt(server, 0);
	Suite *s = suite_create("inner");
	TCase *tc = tcase_create("inner");
	ck_assert_int_eq(reaper_check_tcase(tc, "inner"), 0);
	tcase_add_test(tc, waits_for_child);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, inner_mode);
	srunner_run_all(sr, CK_SILENT);
	int nfailed = srunner_ntests_failed(sr);
	srunner_free(sr);
	int st = 0;
	pid_t w = waitpid(server, &st, WNOHANG);
	if (w == 0) {
		kill(server, SIGTERM);
		waitpid(server, &st, 0);
	}
	ck_assert_msg(w == 0, "the inner runner ended the outer test's server (waitpid: %d, status %#x)", (int)w, st);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "the server's status: %#x", st);
	ck_assert_int_eq(nfailed, 0);
}
END_TEST

static void nested_runners(void)
{
	static const enum fork_status modes[2] = { CK_FORK, CK_NOFORK };
	for (int o = 0; o < 2; o++)
		for (int i = 0; i < 2; i++) {
			inner_mode = modes[i];
			Suite *s = suite_create("outer");
			TCase *tc = tcase_create("outer");
			EXPECT(reaper_check_tcase(tc, "outer") == 0, "reaper_check_tcase(outer)");
			tcase_add_test(tc, runs_a_checked_runner);
			tcase_set_timeout(tc, 120);
			suite_add_tcase(s, tc);
			char *text;
			int nfailed = run_logged(s, modes[o], "nested", &text);
			EXPECT(nfailed == 0, "nested (outer %s, inner %s): %d failed:\n%s", o ? "nofork" : "fork",
			       i ? "nofork" : "fork", nfailed, text);
			free(text);
			EXPECT(leftover_cgroups() == 0, "nested: %d cgroups left", leftover_cgroups());
		}
}

/* A test whose child, forked without exec, calls setsid() and outlives the test: the child
 * has neither the test's marker nor (without cgroups) a cgroup, and leaves the test's process
 * group, which Check kills. Its pid goes to workdir/NAME once it has called setsid(). */
static void fork_setsid_child(const char *name)
{
	int p[2];
	ck_assert(pipe(p) == 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setsid();
		close(p[0]);
		close(p[1]); /* the parent reads EOF: setsid is done */
		for (;;)
			pause();
	}
	close(p[1]);
	char c, text[32];
	while (read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	snprintf(text, sizeof text, "%d", (int)pid);
	write_file(name, text);
}

START_TEST(setsid_child_then_fails)
{
	fork_setsid_child("orphan.fails");
	ck_abort_msg("body failed on purpose, its setsid child left");
}
END_TEST

START_TEST(setsid_child_then_exits)
{
	fork_setsid_child("orphan.exits");
	exit(0);
}
END_TEST

START_TEST(setsid_child_then_times_out)
{
	fork_setsid_child("orphan.timeout");
	for (;;)
		pause();
}
END_TEST

/* exit(0) in the body: Check counts it as a pass, and no teardown runs. */
START_TEST(daemon_then_exits)
{
	detach_sleep(3610, NULL);
	exit(0);
}
END_TEST

/* The test's own child runs a shell that starts a sleep: the sleep is listed with the line
 * of the reaper_check_fork() its ancestor came from. */
static const int own_shell_line = __LINE__ + 6; /* its reaper_check_fork() call's */
START_TEST(own_child_starts_a_sleep)
{
	char arg[32], cmd[64];
	snprintf(arg, sizeof arg, "3612.%d", tag);
	snprintf(cmd, sizeof cmd, "sleep %s & wait", arg);
	pid_t pid = reaper_check_fork();
	if (pid == 0) {
		execlp("sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	for (int i = 0; i < 30000 && count_procs(arg) == 0; i++)
		usleep(1000);
}
END_TEST

/* The test's own child daemonizes a sleep and exits: the sleep, re-parented, is listed with
 * the reaper_check_fork() line its environment carries. */
static const int own_daemon_line = __LINE__ + 6; /* its reaper_check_fork() call's */
START_TEST(own_child_daemonizes)
{
	char arg[32];
	snprintf(arg, sizeof arg, "3613.%d", tag);
	int st = -1;
	pid_t pid = reaper_check_fork();
	if (pid == 0) {
		execlp("setsid", "setsid", "-f", "sleep", arg, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(st, 0);
	for (int i = 0; i < 30000 && count_procs(arg) == 0; i++)
		usleep(1000);
}
END_TEST

/* The pid in workdir/NAME is gone: not running, and (where it was ours to collect: without
 * cgroups the runner adopts it) no zombie either. */
static int orphan_gone(const char *name, int strict)
{
	char path[160], stat[512];
	snprintf(path, sizeof path, "%s/%s", workdir, name);
	char *text = slurp(path);
	int pid = atoi(text);
	free(text);
	if (pid <= 0)
		return 0;
	if (read_proc(pid, "stat", stat, sizeof stat) < 0)
		return 1;
	return !strict && strstr(stat, ") Z ") != NULL;
}

/* "FILE:LINE:" of a test's START_TEST, and the start of its log line in Check's log. */
static int logged_at(const char *text, const TTest *t, const char *tc, const char *result)
{
	char want[PATH_MAX];
	snprintf(want, sizeof want, "%s:%d:%s:%s:%s:0: ", t->file, t->line, result, tc, t->name);
	const char *l = strstr(text, want);
	return l && (l == text || l[-1] == '\n');
}

/* The log line of test tc_test says what, and the leaked `sleep SECONDS.TAG` is listed with
 * "(HOW FILE:LINE)", a line of this file. */
static int listed_with(const char *text, const char *tc_test, const char *what, int seconds, const char *how, int line)
{
	char site[PATH_MAX + 64], leak[64];
	snprintf(site, sizeof site, "(%s %s:%d)", how, __FILE__, line);
	snprintf(leak, sizeof leak, ": sleep %d.%d [killed", seconds, tag);
	const char *l = strstr(text, leak);
	return line_has(line_of(text, tc_test), what) && l && line_has(l, site);
}

/* Tests that end without their teardown, in CK_FORK mode: each fails, and nothing they
 * started is left running once the runner is done. Before, exit(0) passed and, without
 * cgroups, the setsid children went to PID 1 and outlived the runner, reported nowhere. */
static void test_endings_fork(const char *name)
{
	char path[160], arg[32];
	Suite *s = suite_create("ends");
	TCase *tc = tcase_create("ends"), *slow = tcase_create("timeout");
	EXPECT(reaper_check_tcase(tc, "ends") == 0, "reaper_check_tcase(ends)");
	EXPECT(reaper_check_tcase(slow, "timeout") == 0, "reaper_check_tcase(timeout)");
	tcase_add_test(tc, setsid_child_then_fails);
	tcase_add_test(tc, setsid_child_then_exits);
	tcase_add_test(tc, daemon_then_exits);
	tcase_add_test(tc, own_child_starts_a_sleep);
	tcase_add_test(tc, own_child_daemonizes);
	tcase_set_timeout(tc, 60);
	tcase_add_test(slow, setsid_child_then_times_out);
	tcase_set_timeout(slow, 8); /* Check's timeout ends the test while it waits for nothing */
	suite_add_tcase(s, tc);
	suite_add_tcase(s, slow);
	snprintf(path, sizeof path, "%s/%s.err", workdir, name);
	fflush(stderr);
	int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	close(fd);
	char *text;
	int nfailed = run_logged(s, CK_FORK, name, &text);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char *err = slurp(path);
	EXPECT(nfailed == 6, "%s: %d of 6 failed:\n%s\n%s", name, nfailed, text, err);
	EXPECT(listed_with(text, ":ends:own_child_daemonizes:", "left 1 process running", 3613, "started at",
			   own_daemon_line),
	       "%s: the own child's daemon is not listed with its reaper_check_fork() line:\n%s", name, text);
	EXPECT(listed_with(text, ":ends:own_child_starts_a_sleep:", "left 2 processes running", 3612,
			   "started by reaper_check_fork() at", own_shell_line),
	       "%s: the own child's sleep is not listed with its reaper_check_fork() line:\n%s", name, text);
	EXPECT(line_has(line_of(text, ":ends:setsid_child_then_fails:"), ":F:ends:setsid_child_then_fails:0: body failed on purpose, its setsid"),
	       "%s: setsid_child_then_fails:\n%s", name, text);
	EXPECT(logged_at(text, setsid_child_then_exits, "ends", "F") &&
		       line_has(line_of(text, ":ends:setsid_child_then_exits:"),
				"reaper: test setsid_child_then_exits called exit(0) before its check and left 1 process "
				"running"),
	       "%s: setsid_child_then_exits did not fail at its line naming its leftover:\n%s", name, text);
	snprintf(arg, sizeof arg, "sleep 3610.%d", tag);
	EXPECT(logged_at(text, daemon_then_exits, "ends", "F") &&
		       line_has(line_of(text, ":ends:daemon_then_exits:"),
				"reaper: test daemon_then_exits called exit(0) before its check and left 1 process running") &&
		       strstr(text, arg),
	       "%s: daemon_then_exits did not fail naming `%s`:\n%s", name, arg, text);
	EXPECT(line_has(line_of(text, ":timeout:setsid_child_then_times_out:"), "Test timeout expired"),
	       "%s: setsid_child_then_times_out:\n%s", name, text);
	/* the failed and the timed-out test's children: found by the sweep (their cgroup, or
	 * descent from the runner that adopted them) */
	EXPECT(strstr(err, "reaper: tcase ends: killed 1 process left by tests that failed") &&
		       strstr(err, "reaper: tcase timeout: killed 1 process left by tests that failed"),
	       "%s: the sweeps did not report the setsid children:\n%s", name, err);
	EXPECT(orphan_gone("orphan.fails", !with_cgroups), "%s: the failed test's setsid child is still there", name);
	EXPECT(orphan_gone("orphan.exits", !with_cgroups), "%s: the exited test's setsid child is still there", name);
	EXPECT(orphan_gone("orphan.timeout", !with_cgroups), "%s: the timed-out test's setsid child is still there", name);
	snprintf(arg, sizeof arg, "3610.%d", tag);
	EXPECT(count_procs(arg) == 0, "%s: `sleep %s` is still running", name, arg);
	snprintf(arg, sizeof arg, "3612.%d", tag);
	EXPECT(count_procs(arg) == 0, "%s: `sleep %s` is still running", name, arg);
	snprintf(arg, sizeof arg, "3613.%d", tag);
	EXPECT(count_procs(arg) == 0, "%s: `sleep %s` is still running", name, arg);
	EXPECT(leftover_cgroups() == 0, "%s: %d cgroups left", name, leftover_cgroups());
	EXPECT(prctl_subreaper() == 0, "%s: the runner is still a subreaper", name);
	free(text);
	free(err);
}

/* Fork a runner that runs test alone in CK_NOFORK mode in a TCase named tcname, its stderr
 * into errpath; the test is to end it (else it exits 99). The runner's pid. */
static pid_t nofork_runner(const TTest *test, const char *tcname, const char *errpath, const char *name)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		close(fd);
		Suite *s = suite_create(tcname);
		TCase *tc = tcase_create(tcname);
		if (reaper_check_tcase(tc, tcname) < 0)
			_exit(98);
		_tcase_add_test(tc, test, 0, 0, 0, 1);
		tcase_set_timeout(tc, 60);
		suite_add_tcase(s, tc);
		char *text;
		run_logged(s, CK_NOFORK, name, &text);
		_exit(99);
	}
	return pid;
}

/* How many cgroups the runner pid made are still beside ours. */
static int runner_cgroups(pid_t pid)
{
	char dir[PATH_MAX], prefix[48];
	int left = 0;
	snprintf(prefix, sizeof prefix, "reaper-check-%d.", (int)pid);
	if (reaper_cgroup_current(dir, sizeof dir) == 0) {
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d)))
			left += !strncmp(e->d_name, prefix, strlen(prefix));
		if (d)
			closedir(d);
	}
	return left;
}

/* exit(0) in a CK_NOFORK test ends the runner itself (run in a child here): the test's
 * leftovers are killed and listed at the test's line, the cgroups removed, and the exit
 * status is 1. Before, the leftover ran on and the test's cgroups stayed. */
static void test_exit_nofork(const TTest *test, const char *orphan, const char *what, const char *name)
{
	char path[160], errpath[160];
	snprintf(errpath, sizeof errpath, "%s/%s.err", workdir, name);
	snprintf(path, sizeof path, "%s/%s", workdir, orphan ? orphan : "none");
	unlink(path);
	pid_t pid = nofork_runner(test, "exits", errpath, name);
	int st = -1;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 1,
	       "%s: the runner's exit status %#x, not 1", name, st);
	char *err = slurp(errpath), want[PATH_MAX + 200];
	snprintf(want, sizeof want, "%s:%d: reaper: test %s called exit(0) before its check and left 1 process running",
		 test->file, test->line, test->name);
	EXPECT(strstr(err, want) && strstr(err, what), "%s: stderr does not say `%s` naming `%s`:\n%s", name, want, what,
	       err);
	if (orphan)
		EXPECT(orphan_gone(orphan, 1), "%s: the exited test's setsid child is still there", name);
	char arg[32];
	snprintf(arg, sizeof arg, "3610.%d", tag);
	EXPECT(count_procs(arg) == 0, "%s: `sleep %s` is still running", name, arg);
	int left = runner_cgroups(pid);
	EXPECT(left == 0, "%s: the exited runner left %d cgroups", name, left);
	free(err);
}

/* _exit(0) and a signal in the body: in CK_NOFORK mode the runner itself ends, and no code of
 * the runner runs after it. */
START_TEST(daemon_then__exits)
{
	detach_sleep(3614, NULL);
	_exit(0);
}
END_TEST

START_TEST(daemon_then_is_killed)
{
	detach_sleep(3615, NULL);
	raise(SIGKILL);
}
END_TEST

/* The test's leftover and the runner's cgroups are gone, and the guardian named the runner,
 * once a CK_NOFORK runner died in a test (run in a child here): waits for it, bounded, as
 * the guardian reaps after the runner's end. Before, the sleep ran on and the test's cgroups
 * stayed. */
static void test_dies_nofork(const TTest *test, int seconds, const char *name)
{
	char errpath[160], arg[32], want[96];
	snprintf(errpath, sizeof errpath, "%s/%s.err", workdir, name);
	snprintf(arg, sizeof arg, "%d.%d", seconds, tag);
	pid_t pid = nofork_runner(test, "dies", errpath, name);
	int st = -1;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && st != (99 << 8), "%s: the runner's status %#x", name, st);
	snprintf(want, sizeof want, "reaper: the runner (pid %d) ended during a test of tcase dies, leaving 1 process", (int)pid);
	int left = 1, running = 1, said = 0;
	for (int i = 0; i < 6000 && (left || running || !said); i++) {
		if (i)
			usleep(10000);
		char *err = slurp(errpath);
		said = strstr(err, want) != NULL && strstr(err, arg) != NULL;
		free(err);
		running = count_procs(arg) > 0;
		left = with_cgroups ? runner_cgroups(pid) : 0;
	}
	char *err = slurp(errpath);
	EXPECT(said, "%s: stderr does not say `%s` naming `sleep %s`:\n%s", name, want, arg, err);
	EXPECT(!running, "%s: `sleep %s` is still running", name, arg);
	EXPECT(!left, "%s: the dead runner left %d cgroups", name, left);
	free(err);
}

/* A CK_NOFORK test that waits for all its children (until ECHILD) finds only its own: the
 * helper's guardian is not the runner's child; nor does it hold the runner's descriptors. */
START_TEST(waits_for_all_children)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	errno = 0;
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

/* A pipe the runner made before its run: once the test closes the write end, its read end
 * is at its end (no copy of the write end is held by a process of the helper's). */
static int runner_pipe[2] = { -1, -1 };

START_TEST(reads_a_pipe_to_its_end)
{
	char c;
	close(runner_pipe[1]);
	ck_assert_int_eq(read(runner_pipe[0], &c, 1), 0);
}
END_TEST

static void no_hidden_child(void)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		Suite *s = suite_create("waits");
		TCase *tc = tcase_create("waits");
		if (reaper_check_tcase(tc, "waits") < 0)
			_exit(98);
		tcase_add_test(tc, waits_for_all_children);
		tcase_add_test(tc, reads_a_pipe_to_its_end);
		suite_add_tcase(s, tc);
		if (pipe2(runner_pipe, O_NONBLOCK) < 0)
			_exit(97);
		char *text;
		int n = run_logged(s, CK_NOFORK, "waits", &text);
		if (n)
			fprintf(stderr, "%s\n", text);
		_exit(n);
	}
	int st = -1;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "waits: a CK_NOFORK test found a child it did not start (status %#x)", st);
}

/* A CK_NOFORK runner whose TCase ended, then the runner, before its guardian had a CPU: the
 * guardian, let go only then, sees the runner's end and the TCase's end at once, and must go
 * without a reap (the run's marker may be carried by now by processes that are not the run's).
 * The test stops the guardian; its parent (a subreaper, so the guardian's parent) lets it go
 * once the runner has ended and a process outside the run carries the run's marker. A runner
 * forked from a process that ran TCases before has a marker of its own. */
static int late_pipe[2] = { -1, -1 };

START_TEST(stops_its_guardian)
{
	char path[64], buf[256];
	pid_t self = getpid(), up = getppid(), guardian = 0;
	snprintf(path, sizeof path, "task/%d/children", (int)up);
	ck_assert_int_gt(read_proc(up, path, buf, sizeof buf), 0);
	for (char *p = buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid != self)
			guardian = (pid_t)pid;
	}
	ck_assert_int_gt(guardian, 0);
	ck_assert_int_eq(kill(guardian, SIGSTOP), 0);
	for (int i = 0; i < 6000; i++) { /* stopped before the TCase ends: up to a minute */
		char *rp;
		if (read_proc(guardian, "stat", buf, sizeof buf) > 0 && (rp = strrchr(buf, ')')) && rp[2] == 'T')
			break;
		usleep(10000);
	}
	const char *run = getenv("REAPER_CHECK_RUN");
	ck_assert_ptr_nonnull(run);
	dprintf(late_pipe[1], "%d %.47s\n", (int)guardian, run);
}
END_TEST

/* Run in a child (a subreaper): its exit status is its count of failed expectations. */
static int late_guardian_run(void)
{
	char errpath[160], buf[128], run[48] = "", arg[32], env[80];
	snprintf(errpath, sizeof errpath, "%s/late.err", workdir);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 || pipe(late_pipe) < 0)
		return 100;
	pid_t runner = nofork_runner(stops_its_guardian, "late", errpath, "late");
	close(late_pipe[1]);
	int st = -1, bad = 0;
	waitpid(runner, &st, 0);
	bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 99); /* its TCase ran to its end */
	ssize_t got = read(late_pipe[0], buf, sizeof buf - 1);
	buf[got > 0 ? got : 0] = 0;
	int guardian = 0;
	if (sscanf(buf, "%d %47s", &guardian, run) != 2 || guardian <= 0)
		return bad + 1;
	char own[24];
	snprintf(own, sizeof own, "%d.", (int)runner);
	if (strncmp(run, own, strlen(own)))
		bad++, fprintf(stderr, "late: the forked runner's marker %s is not its own\n", run);
	/* a process outside the run that carries the run's marker */
	snprintf(arg, sizeof arg, "3617.%d", tag);
	snprintf(env, sizeof env, "REAPER_CHECK_RUN=%s", run);
	pid_t other = fork();
	if (other == 0) {
		char *argv[] = { "sleep", arg, NULL }, *envp[] = { env, "PATH=/usr/bin:/bin", NULL };
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	for (int i = 0; i < 6000 && count_procs(arg) == 0; i++)
		usleep(10000);
	kill(guardian, SIGCONT);
	int gone = 0;
	for (int i = 0; i < 6000 && !gone; i++) {
		gone = waitpid(guardian, NULL, WNOHANG) == guardian;
		if (!gone)
			usleep(10000);
	}
	bad += !gone;
	if (waitpid(other, &st, WNOHANG) != 0)
		bad++, fprintf(stderr, "late: the guardian ended a process outside its run (status %#x)\n", st);
	else if (kill(other, SIGKILL) == 0)
		waitpid(other, NULL, 0);
	char *err = slurp(errpath);
	if (strstr(err, "ended during"))
		bad++, fprintf(stderr, "late: the guardian took its runner's end for a death:\n%s\n", err);
	free(err);
	return bad;
}

static void late_guardian(void)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0)
		_exit(late_guardian_run());
	int st = -1;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "late: a guardian let go after its runner ended normally (status %#x: failed expectations, 100: no set-up)",
	       st);
}

static void test_endings(const char *name)
{
	char sub[64], arg[32];
	snprintf(sub, sizeof sub, "%s-fork", name);
	test_endings_fork(sub);
	snprintf(sub, sizeof sub, "%s-nofork-setsid", name);
	test_exit_nofork(setsid_child_then_exits, "orphan.exits", "called exit(0)", sub);
	snprintf(sub, sizeof sub, "%s-nofork-daemon", name);
	snprintf(arg, sizeof arg, "sleep 3610.%d", tag);
	test_exit_nofork(daemon_then_exits, NULL, arg, sub);
	snprintf(sub, sizeof sub, "%s-nofork-_exit", name);
	test_dies_nofork(daemon_then__exits, 3614, sub);
	snprintf(sub, sizeof sub, "%s-nofork-killed", name);
	test_dies_nofork(daemon_then_is_killed, 3615, sub);
}

/* A test added past the header's macro (as from a file that does not include it) fails at
 * the helper's line, but as the test's failure (":F:"), not its teardown's (":S:"). */
START_TEST(leaks_unlisted)
{
	detach_sleep(3616, NULL);
}
END_TEST

static void test_not_through_the_header(void)
{
	Suite *s = suite_create("unlisted");
	TCase *tc = tcase_create("unlisted");
	EXPECT(reaper_check_tcase(tc, "unlisted") == 0, "reaper_check_tcase(unlisted)");
	(_tcase_add_test)(tc, leaks_unlisted, 0, 0, 0, 1);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	char *text;
	int nfailed = run_logged(s, CK_FORK, "unlisted", &text);
	EXPECT(nfailed == 1 && line_has(line_of(text, ":unlisted:leaks_unlisted:"),
					":F:unlisted:leaks_unlisted:0: reaper: test leaks_unlisted left 1 process running"),
	       "unlisted: the leak is not the test's failure:\n%s", text);
	free(text);
}

/* A checked TCase's slot is free again once its run has ended: more runs than there are
 * slots, one after another, each with a TCase of its own. */
static void slots_are_freed(void)
{
	int refused = 0, nfailed = 0;
	for (int i = 0; i < REAPER_CHECK_MAX_TCASES + 6; i++) {
		Suite *s = suite_create("slots");
		TCase *tc = tcase_create("slots");
		refused += reaper_check_tcase(tc, "slots") < 0;
		tcase_add_test(tc, does_nothing);
		suite_add_tcase(s, tc);
		char *text;
		nfailed += run_logged(s, CK_NOFORK, "slots", &text);
		free(text);
	}
	EXPECT(refused == 0 && nfailed == 0, "slots: %d TCases refused, %d tests failed", refused, nfailed);
}

/* A mount namespace of our own where the cgroup2 mount holding our cgroup is read-only, as
 * in most containers: the tests are tracked by marker and descent (with a note), and with
 * REAPER_CHECK_CGROUP=on a test that cannot have its cgroup fails saying why. Run in a
 * child; its exit status is its count of failed expectations. */
static int read_only_cgroup2(void)
{
	char dir[PATH_MAX], mnt[PATH_MAX];
	if (reaper_cgroup_current(dir, sizeof dir) < 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		return 100;
	/* the mount point: the highest directory above ours on the same filesystem */
	snprintf(mnt, sizeof mnt, "%s", dir);
	for (;;) {
		char up[PATH_MAX];
		struct stat a, b;
		snprintf(up, sizeof up, "%s", mnt);
		char *sl = strrchr(up, '/');
		if (!sl || sl == up)
			break;
		*sl = 0;
		if (stat(mnt, &a) < 0 || stat(up, &b) < 0 || a.st_dev != b.st_dev)
			break;
		snprintf(mnt, sizeof mnt, "%s", up);
	}
	if (mount("none", mnt, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return 101;
	EXPECT(reaper_cgroup_usable(NULL) == -EROFS, "the remount of %s did not make it read-only", mnt);
	with_cgroups = 0;
	run_mode(CK_FORK, "ro-fork");
	char path[160];
	snprintf(path, sizeof path, "%s/ro-fork.err", workdir);
	char *err = slurp(path);
	EXPECT(strstr(err, "reaper: note: the tests cannot have cgroups (Read-only file system); tracking them by "
			   "marker and by descent"),
	       "ro: no note about the read-only cgroup2:\n%s", err);
	free(err);
	run_mode(CK_NOFORK, "ro-nofork");
	test_endings("ro-ends");

	EXPECT(reaper_check_use_cgroup((enum reaper_check_cgroup)7) == -EINVAL, "a bad cgroup mode was taken");
	EXPECT(reaper_check_use_cgroup(REAPER_CHECK_CGROUP_ON) == 0, "reaper_check_use_cgroup(ON)");
	Suite *s = suite_create("on");
	TCase *tc = tcase_create("on");
	EXPECT(reaper_check_tcase(tc, "on") == 0, "reaper_check_tcase(on)");
	tcase_add_test(tc, waits_for_child);
	suite_add_tcase(s, tc);
	char *text;
	EXPECT(run_logged(s, -1, "on", &text) == 1, "on: a test without its cgroup passed");
	EXPECT(strstr(text, "reaper: REAPER_CHECK_CGROUP=on: test on cannot have a cgroup: Read-only file system"),
	       "on: the failure does not say why:\n%s", text);
	free(text);
	return failed;
}

int main(void)
{
	tag = (int)getpid();
	if (!mkdtemp(workdir)) {
		perror("mkdtemp");
		return 2;
	}
	reaper_check_set_timeout(2.0);
	EXPECT(reaper_check_set_timeout(-1) == -EINVAL, "a negative timeout was taken");
	EXPECT(reaper_check_set_timeout(NAN) == -EINVAL, "a NaN timeout was taken");
	EXPECT(reaper_check_set_timeout(INFINITY) == -EINVAL, "an infinite timeout was taken");
	EXPECT(reaper_check_allow(NULL) == -EINVAL, "a NULL glob was taken");
	many_tcases();
	other_runners_cgroups_are_not_ours();
	int r = reaper_cgroup_usable(NULL);
	with_cgroups = r == 0;
	if (r < 0 && geteuid() != 0)
		fprintf(stderr, "SKIP the cgroup cases: no writable cgroup2 for uid %d (%s); the tests run tracked by "
			"marker and descent\n", (int)geteuid(), strerror(-r));
	else
		EXPECT(r == 0, "root without a usable cgroup2: %s", strerror(-r));
	run_mode(CK_FORK, "fork");
	run_mode(CK_NOFORK, "nofork");
	test_endings("ends");
	slots_are_freed();
	no_hidden_child();
	late_guardian();
	test_not_through_the_header();
	nested_runners();
	fixture_children(CK_FORK);
	fixture_children(CK_NOFORK);
	unchecked_fixture_server(CK_FORK, REAPER_CHECK_CGROUP_OFF);
	unchecked_fixture_server(CK_NOFORK, REAPER_CHECK_CGROUP_OFF);
	if (with_cgroups)
		unchecked_fixture_server(CK_FORK, REAPER_CHECK_CGROUP_AUTO);
	if (with_cgroups) {
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0)
			_exit(read_only_cgroup2());
		int st = -1;
		EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		       "the read-only cgroup2 run: status %#x (failed expectations, or 100/101: no namespace)", st);
	}
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", workdir);
	printf("check_helper_test: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
