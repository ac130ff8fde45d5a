/* SPDX-License-Identifier: MIT */
/* check_core_run: `reaper run` end to end, as a user runs it: exit statuses, the leak report
 * naming the leftover, the leftover gone afterwards, and the wait ending when the leftovers
 * exit rather than at the deadline. Every fixture runs under it too. */
#define _GNU_SOURCE
#include "reaper/reaper.h"
#include "tests/testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char suite_marker[128];

struct run {
	int code;        /* exit status of reaper (128+N if a signal ended it) */
	double took;     /* seconds */
	char out[16384]; /* its stdout */
	char err[16384]; /* its stderr */
};

static int scratch_fd(void)
{
	int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	ck_assert_msg(fd >= 0, "O_TMPFILE in /tmp: %s", strerror(errno));
	return fd;
}

static void slurp(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
}

/* reaper ARGS... with a plain PATH and the suite marker. Output goes to files, not pipes, so a
 * leftover holding them open cannot hold the test. */
static void run_reaper(struct run *r, char *const args[])
{
	char reaper[PATH_MAX];
	ck_assert_int_eq(tu_build_path(reaper, sizeof reaper, "reaper"), 0);
	char *argv[40] = { reaper };
	size_t n = 1;
	while (args[n - 1] && n < 39) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	/* a PATH of our own: an unreadable directory on the caller's PATH would turn "not
	 * found" (127) into execvp's EACCES (126) */
	char *env[] = { "PATH=/usr/bin:/bin", suite_marker, NULL };
	int out = scratch_fd(), err = scratch_fd();
	struct tu_proc p;
	double t0 = tu_now();
	ck_assert_int_eq(tu_spawn(&p, argv, env, out, err), 0);
	int status = tu_wait_exit(&p);
	r->took = tu_now() - t0;
	ck_assert_int_ge(status, 0);
	r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	slurp(out, r->out, sizeof r->out);
	slurp(err, r->err, sizeof r->err);
}

/* pid is gone, or (the pid space is busy here) now names another program: one whose
 * cmdline does not hold needle. A zombie has no cmdline, so it never passes as "another". */
static int gone_or_other(pid_t pid, const char *needle)
{
	for (double end = tu_now() + 10; tu_now() < end; usleep(2000)) {
		char path[64], buf[4096];
		snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 1;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[n > 0 ? n : 0] = 0;
		if (n > 0 && !strstr(buf, needle))
			return 1;
	}
	return 0;
}

/* Every leak the human report names ("PID LEAK (fate) CMDLINE", maybe under tree
 * branches); each leftover must be gone. Returns how many. */
static int leaked_pids_gone(const struct run *r)
{
	int n = 0;
	for (const char *p = r->err; (p = strstr(p, " LEAK (")); p++) {
		const char *d = p;
		while (d > r->err && d[-1] >= '0' && d[-1] <= '9')
			d--;
		pid_t pid = (pid_t)atoi(d);
		ck_assert_msg(d < p && pid > 1, "no pid before LEAK in:\n%s", r->err);
		const char *cmd = strstr(p, ") ");
		if (!strchr(p, '\n'))
			break; /* the last entry, cut where the captured stderr ends */
		ck_assert_ptr_nonnull(cmd);
		char needle[41];
		cmd += 2;
		snprintf(needle, sizeof needle, "%.*s", (int)strcspn(cmd, "\n"), cmd);
		ck_assert_msg(gone_or_other(pid, needle), "leaked pid %d (%s) still there", (int)pid, needle);
		n++;
	}
	return n;
}

static void sandbox(char *home, size_t len)
{
	char marker[200];
	ck_assert_int_eq(tu_unique_marker(marker, sizeof marker, "X", "/tmp/reaper-core-run"), 0);
	snprintf(home, len, "%s/home", marker + 2); /* not there yet: reaper creates it */
}

static void remove_sandbox(const char *home)
{
	rmdir(home);
	char parent[PATH_MAX];
	snprintf(parent, sizeof parent, "%s", home);
	*strrchr(parent, '/') = 0;
	rmdir(parent);
}

/* must show: exits with the leak code in about a second, names the pid, and it is gone */
START_TEST(setsid_sleep_leak)
{
	char home[PATH_MAX];
	sandbox(home, sizeof home);
	struct run r;
	char *args[] = { "run", "--home", home, "--timeout", "1", "--", "sh", "-c", "setsid sleep 300 & exit 0", NULL };
	run_reaper(&r, args);
	ck_assert_msg(r.code == 23, "exit %d; stderr:\n%s", r.code, r.err);
	ck_assert_int_eq(leaked_pids_gone(&r), 1);
	ck_assert_ptr_nonnull(strstr(r.err, ") sleep 300\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "SUMMARY: 1 leaked"));
	ck_assert_msg(r.took >= 0.9, "took %.2f s: the leftover got less than its --timeout", r.took);
	ck_assert_msg(r.took < 30, "took %.2f s", r.took);
	struct stat sb;
	ck_assert_int_eq(stat(home, &sb), 0); /* --home is created, 0700 */
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 0777, 0700);
	fprintf(stderr, "setsid sleep leak: exit %d in %.2f s\n", r.code, r.took);
	remove_sandbox(home);
}
END_TEST

/* A leftover first seen before its exec carries its parent's test then: the report names the
 * test of the program it runs at the deadline. (Seen after the exec already, it passes too.) */
START_TEST(test_named_after_exec)
{
	char home[PATH_MAX];
	sandbox(home, sizeof home);
	struct run r;
	char *args[] = { "run", "--home", home, "--timeout", "5", "--", "sh", "-c",
			 "REAPER_TEST=first sh -c 'sleep 0.2; REAPER_TEST=second exec sleep 300' & exit 0", NULL };
	run_reaper(&r, args);
	ck_assert_msg(r.code == 23, "exit %d; stderr:\n%s", r.code, r.err);
	ck_assert_int_eq(leaked_pids_gone(&r), 1);
	ck_assert_msg(strstr(r.err, ") sleep 300\n") && strstr(r.err, ", test second, cwd"), "stderr:\n%s", r.err);
	remove_sandbox(home);
}
END_TEST

/* must show: the wait ends when the leftover exits, not at the deadline */
START_TEST(short_leftover_exits_zero_fast)
{
	struct run r;
	char *args[] = { "run", "-v", "--timeout", "60", "--", "sh", "-c", "(sleep 0.3 &); exit 0", NULL };
	run_reaper(&r, args);
	ck_assert_msg(r.code == 0, "exit %d; stderr:\n%s", r.code, r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "SUMMARY: 0 leaked"));
	ck_assert_ptr_nonnull(strstr(r.err, "1 exited in time"));
	ck_assert_msg(r.took < 30, "took %.2f s of a 60 s deadline", r.took);
	fprintf(stderr, "(sleep 0.3 &): exit %d in %.2f s\n", r.code, r.took);
}
END_TEST

START_TEST(exit_statuses)
{
	static const struct {
		const char *cmd;
		int code;
	} cases[] = {
		{ "exit 7", 7 },
		{ "exit 0", 0 },
		{ "exit 1", 1 },
		{ "kill -TERM $$", 128 + 15 },
		{ "kill -KILL $$", 128 + 9 },
		{ "setsid sleep 300 & exit 3", 3 }, /* COMMAND failed: its status wins over the leak */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct run r;
		char *args[] = { "run", "--timeout", "0.2", "--grace", "0.2", "--", "sh", "-c", (char *)cases[i].cmd, NULL };
		run_reaper(&r, args);
		ck_assert_msg(r.code == cases[i].code, "'%s': exit %d, want %d; stderr:\n%s", cases[i].cmd, r.code,
			      cases[i].code, r.err);
		leaked_pids_gone(&r);
	}
}
END_TEST

START_TEST(not_found_and_not_executable)
{
	struct run r;
	char *missing[] = { "run", "--", "/nonexistent", NULL };
	run_reaper(&r, missing);
	ck_assert_int_eq(r.code, 127);
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent"));
	char *unknown[] = { "run", "--", "reaper-core-no-such-command", NULL };
	run_reaper(&r, unknown);
	ck_assert_int_eq(r.code, 127);
	char plain[] = "/tmp/reaper-core-noexec-XXXXXX"; /* mode 0600: not executable */
	int fd = mkstemp(plain);
	ck_assert_int_ge(fd, 0);
	close(fd);
	char *notexec[] = { "run", "--", plain, NULL };
	run_reaper(&r, notexec);
	unlink(plain);
	ck_assert_msg(r.code == 126, "exit %d; stderr:\n%s", r.code, r.err);
	char *usage[] = { "run", "--timeout", "1", NULL };
	run_reaper(&r, usage);
	ck_assert_int_eq(r.code, 64);
	ck_assert_ptr_nonnull(strstr(r.err, "usage"));
}
END_TEST

/* COMMAND sees HOME, the per-run marker and --marker; its stdout is passed through. */
START_TEST(environment_and_stdout)
{
	char home[PATH_MAX];
	sandbox(home, sizeof home);
	struct run r;
	char *args[] = { "run", "--home", home, "--marker", "REAPER_CORE_EXTRA=yes", "--",
			 "sh", "-c", "echo \"home=$HOME\"; echo \"run=$REAPER_RUN\"; echo \"extra=$REAPER_CORE_EXTRA\"",
			 NULL };
	run_reaper(&r, args);
	ck_assert_int_eq(r.code, 0);
	char want[PATH_MAX + 16];
	snprintf(want, sizeof want, "home=%s\n", home);
	ck_assert_ptr_nonnull(strstr(r.out, want));
	ck_assert_ptr_nonnull(strstr(r.out, "extra=yes\n"));
	const char *run = strstr(r.out, "run=");
	ck_assert_ptr_nonnull(run);
	ck_assert_msg(run[4] != '\n', "REAPER_RUN is empty");
	remove_sandbox(home);
}
END_TEST

/* Every fixture under reaper run: a leak, each printed pid gone afterwards. */
START_TEST(fixtures_under_run)
{
	static const struct {
		const char *name, *arg1, *arg2;
		int code;
	} cases[] = {
		{ "daemon", NULL, NULL, 23 },        { "escapee", NULL, NULL, 23 },
		{ "termignore", NULL, NULL, 23 },    { "noenv", NULL, NULL, 23 },
		{ "zombieholder", NULL, NULL, 23 },  { "comm", NULL, NULL, 23 },
		{ "forkchain", "-n", "100", 23 },    { "selfexit", "-m", "300", 0 },
		{ "many", "-n", "200", 23 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char fx[PATH_MAX];
		ck_assert_int_eq(tu_build_path(fx, sizeof fx, cases[i].name), 0);
		struct run r;
		char *args[] = { "run", "--timeout", "1", "--grace", "0.3", "--", fx, (char *)cases[i].arg1,
				 (char *)cases[i].arg2, NULL };
		run_reaper(&r, args);
		ck_assert_msg(r.code == cases[i].code, "%s: exit %d; stderr:\n%.2000s", cases[i].name, r.code, r.err);
		/* every pid the fixture printed is gone: killed and collected, or exited */
		int printed = 0, pid, used;
		for (const char *p = r.out; sscanf(p, "%d%n", &pid, &used) == 1; p += used) {
			ck_assert_msg(gone_or_other(pid, fx), "%s: pid %d still there", cases[i].name, pid);
			printed++;
		}
		ck_assert_msg(printed >= 1, "%s printed no pid", cases[i].name);
		ck_assert_int_eq(leaked_pids_gone(&r) > 0, cases[i].code == 23);
	}
}
END_TEST

int main(void)
{
	tu_unique_marker(suite_marker, sizeof suite_marker, "REAPER_CHECK_SUITE", "core-run");
	Suite *s = suite_create("core-run");
	TCase *tc = tcase_create("run");
	tcase_add_test(tc, setsid_sleep_leak);
	tcase_add_test(tc, test_named_after_exec);
	tcase_add_test(tc, short_leftover_exits_zero_fast);
	tcase_add_test(tc, exit_statuses);
	tcase_add_test(tc, not_found_and_not_executable);
	tcase_add_test(tc, environment_and_stdout);
	tcase_add_test(tc, fixtures_under_run);
	tcase_set_timeout(tc, 180);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, suite_marker);
	return tu_run_suite(s);
}
