/* SPDX-License-Identifier: MIT */
/* Lost markers: a leftover that clears its environment (env -i) or writes over it in place
 * (setproctitle-style) no longer carries the marker, and is still found by descent; a
 * process whose environ cannot be read (non-dumpable under an unprivileged reaper, or
 * another user's) in the tree causes no crash and is reported as environ_unreadable. */
#include "check_hard.h"

#include <sys/prctl.h>

/* In a forked, possibly unprivileged child: print why and return a distinct code. */
static struct reaper_opts quick(double settle)
{
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0;
	o.grace = 0.2;
	o.settle = settle;
	return o;
}

/* Orphan a hard_sig (-o) started through argv (env -i or not); its pid. */
static pid_t orphan_leftover(char *const argv[], char *const envp[])
{
	pid_t pid = 0;
	int st = -1;
	int n = tu_run_pids(argv, envp, &pid, 1, &st);
	return n == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? pid : -1;
}

/* The marker is gone from pid's environ, the marker finder alone misses it, and marker +
 * descent finds it by descent only and ends it. Returns 0 or a failure code (stderr). */
static int found_by_descent_only(pid_t pid, const char *m)
{
	uint64_t st = tu_start_time(pid);
	KID_CHECK(10, st, "leftover %d is not there", (int)pid);
	KID_CHECK(11, tu_marked(m, NULL, 0) == 0, "the marker is still readable in %d's environ", (int)pid);
	struct reaper_finder env_only = reaper_find_env(m);
	struct reaper_report *r = NULL;
	KID_CHECK(12, reaper_scan(&env_only, 1, &r) == 0, "scan");
	KID_CHECK(13, !hard_find(r, pid, st), "the env finder found %d without its marker", (int)pid);
	reaper_report_free(r);

	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
	struct reaper_opts o = quick(5);
	KID_CHECK(14, reaper_reap(f, 2, &o, &r) == 0, "reap");
	const struct reaper_proc *p = hard_find(r, pid, st);
	KID_CHECK(15, p, "the leftover %d was not found by descent", (int)pid);
	KID_CHECK(16, p->matched_by == 2u, "matched_by %#x, want the tree finder only", p->matched_by);
	KID_CHECK(17, p->fate == REAPER_TERMINATED || p->fate == REAPER_KILLED, "fate %s", reaper_fate_name(p->fate));
	reaper_report_free(r);
	KID_CHECK(18, !tu_exists(pid, st), "the leftover %d is still there", (int)pid);
	return 0;
}

START_TEST(env_cleared_found_by_descent)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_LOST", "envi");
	ck_assert_int_ge(reaper_adopt(), 1);
	char *argv[] = { "/usr/bin/env", "-i", (char *)hard_path("hard_sig"), "-o", NULL };
	pid_t pid = orphan_leftover(argv, hard_env(m, NULL));
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(found_by_descent_only(pid, m), 0);
	reaper_release();
}
END_TEST

START_TEST(environ_overwritten_found_by_descent)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_LOST", "title");
	ck_assert_int_ge(reaper_adopt(), 1);
	char *argv[] = { (char *)hard_path("hard_sig"), "-o", "-w", NULL };
	pid_t pid = orphan_leftover(argv, hard_env(m, NULL));
	ck_assert_int_gt(pid, 0);
	/* what /proc shows now is the title written over the block */
	char path[64], buf[256] = "";
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt((int)read(fd, buf, sizeof buf - 1), 0);
	close(fd);
	ck_assert_msg(!strncmp(buf, "hard_sig: title", 15), "environ starts with '%.20s'", buf);
	ck_assert_int_eq(found_by_descent_only(pid, m), 0);
	reaper_release();
}
END_TEST

/* As nobody: a leftover of our own that made itself non-dumpable. */
static int nobody_undumpable(void *arg)
{
	const char *m = arg;
	KID_CHECK(20, reaper_adopt() >= 1, "adopt");
	char *argv[] = { (char *)hard_path("hard_sig"), "-o", "-D", NULL };
	pid_t pid = orphan_leftover(argv, hard_env(m, NULL));
	KID_CHECK(21, pid > 0, "no leftover");
	uint64_t st = tu_start_time(pid);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	KID_CHECK(22, fd < 0 && errno == EACCES, "its environ is readable (fd %d, %s)", fd, strerror(errno));
	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
	struct reaper_opts o = quick(5);
	struct reaper_report *r = NULL;
	KID_CHECK(23, reaper_reap(f, 2, &o, &r) == 0, "reap");
	const struct reaper_proc *p = hard_find(r, pid, st);
	KID_CHECK(24, p, "the non-dumpable leftover %d was not found by descent", (int)pid);
	KID_CHECK(25, p->environ_unreadable == 1, "not reported as environ_unreadable");
	KID_CHECK(26, p->matched_by == 2u, "matched_by %#x", p->matched_by);
	KID_CHECK(27, p->fate == REAPER_TERMINATED || p->fate == REAPER_KILLED, "fate %s", reaper_fate_name(p->fate));
	reaper_report_free(r);
	KID_CHECK(28, !tu_exists(pid, st), "still there");
	return 0;
}

START_TEST(undumpable_unreadable_environ)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_LOST", "undump");
	int st = hard_as_nobody(nobody_undumpable, m);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "as nobody: status %#x (see stderr)", st);
}
END_TEST

struct other_user {
	const char *m;
	pid_t root_kid;
	uint64_t root_kid_st;
};

/* As nobody, reaping its own tree, in which a root-owned process sits. */
static int nobody_with_root_kid(void *arg)
{
	struct other_user *ou = arg;
	struct reaper_finder f[2] = { reaper_find_env(ou->m), reaper_find_tree(0) };
	struct reaper_opts o = quick(0.5);
	struct reaper_report *r = NULL;
	int e = reaper_reap(f, 2, &o, &r);
	KID_CHECK(30, e == 0, "reap: %s", strerror(-e));
	const struct reaper_proc *p = hard_find(r, ou->root_kid, ou->root_kid_st);
	KID_CHECK(31, p, "the root-owned child %d was not found by descent", (int)ou->root_kid);
	KID_CHECK(32, p->environ_unreadable == 1, "not reported as environ_unreadable");
	KID_CHECK(33, p->uid == 0, "uid %d", (int)p->uid);
	/* it cannot be signalled by us: it is reported, not claimed killed */
	KID_CHECK(34, p->fate == REAPER_UNKILLABLE, "fate %s", reaper_fate_name(p->fate));
	KID_CHECK(35, r->leaks >= 1, "not counted as a leak");
	reaper_report_free(r);
	return 0;
}

START_TEST(other_users_environ_unreadable)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_LOST", "other");
	ck_assert_int_ge(reaper_adopt(), 1);
	int sync[2];
	ck_assert_int_eq(pipe2(sync, O_CLOEXEC), 0);
	pid_t mid = fork();
	if (mid == 0) {
		/* a root child first (it stays root), then this process becomes nobody */
		struct tu_proc kid;
		int rd;
		hard_sig_spawn(&kid, &rd, hard_env(m, NULL), NULL);
		if (write(sync[1], &kid.pid, sizeof kid.pid) != (ssize_t)sizeof kid.pid)
			_exit(2);
		struct other_user ou = { m, kid.pid, kid.start_time };
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(90);
		int code = nobody_with_root_kid(&ou);
		/* the root child caught nothing */
		const char *seen = hard_signals_seen(rd);
		if (!code && *seen) {
			fprintf(stderr, "hard: the root-owned child was signalled: %s\n", seen);
			code = 36;
		}
		_exit(code);
	}
	close(sync[1]);
	pid_t kid = 0;
	ck_assert_int_eq((int)read(sync[0], &kid, sizeof kid), (int)sizeof kid);
	close(sync[0]);
	uint64_t kst = tu_start_time(kid);
	int st;
	ck_assert_int_eq(waitpid(mid, &st, 0), mid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "as nobody: status %#x (see stderr)", st);
	ck_assert_int_eq(tu_alive(kid, kst), 1);
	ck_assert_int_ne(tu_state(kid), 'T');
	/* it came to us, the subreaper, when its parent exited: end it */
	struct tu_proc kp;
	ck_assert_int_eq(tu_pin(&kp, kid, kst), 0);
	ck_assert_int_eq(tu_kill_wait(&kp), 0);
	reaper_release();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_lost");
	TCase *tc = tcase_create("lost");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, env_cleared_found_by_descent);
	tcase_add_test(tc, environ_overwritten_found_by_descent);
	tcase_add_root_test(tc, undumpable_unreadable_environ, "becoming another user needs root");
	tcase_add_root_test(tc, other_users_environ_unreadable, "becoming another user needs root");
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
