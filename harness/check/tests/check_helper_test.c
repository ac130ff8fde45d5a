/* SPDX-License-Identifier: MIT */
/* The Check helper against real processes: an inner suite whose tests leak on purpose runs
 * in CK_FORK and in CK_NOFORK mode; its results (srunner_ntests_failed and its log) must
 * show the leaking test failed naming the leaked command, the clean ones passed, nothing
 * left running and no zombie left with us. Prints "N passed, N failed". */
#define _GNU_SOURCE
#include "reaper/check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int tag; /* makes the leaked command lines ours */
static int passed, failed;
static char workdir[] = "/tmp/reaper-check-helper-XXXXXX";

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

/* An orphan we adopt that has exited before the teardown's reap begins: a zombie child of
 * ours that the test left, collected at the teardown, not kept for the host. */
START_TEST(orphan_gone_before_teardown)
{
	char *argv[] = { "setsid", "-f", "true", NULL };
	ck_assert_int_eq(run(argv), 0);
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

static Suite *inner(void)
{
	Suite *s = suite_create("inner");
	TCase *leaky = tcase_create("leaky"), *clean = tcase_create("clean");
	EXPECT(reaper_check_tcase(leaky, "leaky") == 0, "reaper_check_tcase(leaky)");
	EXPECT(reaper_check_tcase(clean, "clean") == 0, "reaper_check_tcase(clean)");
	tcase_set_timeout(leaky, 60);
	tcase_set_timeout(clean, 60);
	tcase_add_test(leaky, leaks_daemon);
	tcase_add_test(leaky, clean_after);
	tcase_add_test(leaky, fails_and_leaks);
	tcase_add_test(leaky, leaks_a_fork);
	tcase_add_test(clean, waits_for_child);
	tcase_add_test(clean, orphan_gone_before_teardown);
	tcase_add_test(clean, env_is_set);
	suite_add_tcase(s, leaky);
	suite_add_tcase(s, clean);
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

static void run_mode(enum fork_status mode, const char *name)
{
	char log[128], errpath[128], arg[32];
	snprintf(log, sizeof log, "%s/%s.log", workdir, name);
	snprintf(errpath, sizeof errpath, "%s/%s.err", workdir, name);
	SRunner *sr = srunner_create(inner());
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

	char *text = slurp(log), *err = slurp(errpath);
	EXPECT(nrun == 7 && nfailed == 3, "%s: %d run, %d failed (want 7, 3)\n%s", name, nrun, nfailed, text);
	const char *l = line_of(text, ":leaky:leaks_daemon:");
	snprintf(arg, sizeof arg, "sleep 3600.%d", tag);
	EXPECT(line_has(l, ":S:leaky:leaks_daemon:") &&
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
		EXPECT(strstr(err, "reaper: tcase leaky: killed ") && strstr(err, "left by tests that failed or crashed") &&
			       strstr(err, arg), "%s: the sweep did not report `%s`:\n%s", name, arg, err);
	char a[32], b[32];
	snprintf(a, sizeof a, "3600.%d", tag);
	snprintf(b, sizeof b, "3601.%d", tag);
	EXPECT(count_procs(a) == 0 && count_procs(b) == 0, "%s: a leaked sleep is still running", name);
	EXPECT(count_procs(NULL) == 0, "%s: %d zombie children left", name, count_procs(NULL));
	free(text);
	free(err);
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
	run_mode(CK_FORK, "fork");
	run_mode(CK_NOFORK, "nofork");
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", workdir);
	printf("check_helper_test: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
