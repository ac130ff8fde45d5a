/* SPDX-License-Identifier: MIT */
/* Unprivileged use: as an ordinary user (a forked child that became nobody), reaper -- the
 * library and the command -- ends that user's own leftovers, fails clearly for what it may
 * not do, and never touches another user's process, even one carrying the same marker. */
#include "check_hard.h"

#define PRIV_WHY "becoming nobody beside a root-owned control needs root"

/* A root-owned control carrying marker m, reporting every signal that reaches it. */
struct control {
	struct tu_proc p;
	int rd;
};

static void control_start(struct control *c, const char *m)
{
	hard_sig_spawn(&c->p, &c->rd, hard_env(m, NULL), NULL);
}

static void control_untouched_then_end(struct control *c)
{
	ck_assert_msg(tu_alive(c->p.pid, c->p.start_time), "the root-owned control %d died", (int)c->p.pid);
	ck_assert_int_ne(tu_state(c->p.pid), 'T');
	const char *seen = hard_signals_seen(c->rd);
	ck_assert_msg(!*seen, "the root-owned control was signalled: %s", seen);
	ck_assert_int_eq(tu_kill_wait(&c->p), 0);
	close(c->rd);
}

/* As nobody: two leftovers of our own (an orphaned setsid one and a TERM-ignoring one). */
static int nobody_library(void *arg)
{
	const char *m = arg;
	KID_CHECK(10, reaper_adopt() >= 1, "reaper_adopt as nobody failed");
	pid_t a = 0, b = 0;
	int st;
	char *argv_a[] = { (char *)hard_path("hard_sig"), "-o", NULL };
	char *argv_b[] = { (char *)hard_path("hard_sig"), "-o", "-i", NULL };
	KID_CHECK(11, tu_run_pids(argv_a, hard_env(m, NULL), &a, 1, &st) == 1, "leftover a");
	KID_CHECK(12, tu_run_pids(argv_b, hard_env(m, NULL), &b, 1, &st) == 1, "leftover b");
	uint64_t ast = tu_start_time(a), bst = tu_start_time(b);
	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.grace = 0.3;
	struct reaper_report *r = NULL;
	int e = reaper_reap(f, 2, &o, &r);
	KID_CHECK(13, e == 0, "reap: %s", strerror(-e));
	KID_CHECK(14, r->n == 2, "%zu processes found, want exactly our 2", r->n);
	const struct reaper_proc *pa = hard_find(r, a, ast), *pb = hard_find(r, b, bst);
	KID_CHECK(15, pa && pa->fate == REAPER_TERMINATED, "a: %s", pa ? reaper_fate_name(pa->fate) : "missing");
	KID_CHECK(16, pb && pb->fate == REAPER_KILLED, "b: %s", pb ? reaper_fate_name(pb->fate) : "missing");
	KID_CHECK(17, pa->uid == 65534 && pb->uid == 65534, "uids %d %d", (int)pa->uid, (int)pb->uid);
	KID_CHECK(18, !tu_exists(a, ast) && !tu_exists(b, bst), "leftovers still there");
	reaper_report_free(r);
	return 0;
}

START_TEST(nobody_library_own_processes_only)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_PRIV", "lib");
	struct control c;
	control_start(&c, m);
	int st = hard_as_nobody(nobody_library, m);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "as nobody: status %#x (see stderr)", st);
	control_untouched_then_end(&c);
}
END_TEST

/* Run argv as this (unprivileged) user; its exit code, stderr into err. */
static int run_capture(char *const argv[], char *const envp[], char *err, size_t len)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	struct tu_proc p;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int r = tu_spawn(&p, argv, envp, null, pfd[1]);
	close(pfd[1]);
	close(null);
	size_t n = 0;
	ssize_t k;
	while (r == 0 && n < len - 1 && (k = read(pfd[0], err + n, len - 1 - n)) > 0)
		n += (size_t)k;
	err[n] = 0;
	close(pfd[0]);
	int st = tu_wait_exit(&p);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct cli_args {
	const char *m;
};

static int nobody_cli(void *arg)
{
	struct cli_args *a = arg;
	char mflag[160], err[8192];
	snprintf(mflag, sizeof mflag, "%s", a->m);
	/* COMMAND leaves an orphan of its own behind and succeeds: leak exit code 23 */
	char *argv[] = { (char *)hard_path("reaper"), "run", "--marker", mflag, "--timeout", "0.2", "--grace", "0.3",
			 "--", (char *)hard_path("hard_sig"), "-o", NULL };
	int code = run_capture(argv, hard_env(NULL), err, sizeof err);
	KID_CHECK(20, code == 23, "reaper run exited %d, want 23 (leak); stderr:\n%s", code, err);
	/* ours is gone; the root control is not even visible by marker to us */
	KID_CHECK(21, tu_marked(a->m, NULL, 0) == 0, "a process with the marker is still visible to nobody");

	/* what it may not do: a --home it cannot create, a COMMAND it cannot execute */
	char *home[] = { (char *)hard_path("reaper"), "run", "--home", "/root/reaper-hard-no/home", "--", "/bin/true", NULL };
	code = run_capture(home, hard_env(NULL), err, sizeof err);
	KID_CHECK(22, code == 126 && strstr(err, "--home") && strstr(err, "Permission denied"),
		  "--home in /root: exit %d, stderr: %s", code, err);
	char *noexec[] = { (char *)hard_path("reaper"), "run", "--", "/etc/shadow", NULL };
	code = run_capture(noexec, hard_env(NULL), err, sizeof err);
	KID_CHECK(23, code == 126 && strstr(err, "/etc/shadow") && strstr(err, "Permission denied"),
		  "exec /etc/shadow: exit %d, stderr: %s", code, err);
	return 0;
}

START_TEST(nobody_cli_own_processes_only)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_PRIV", "cli");
	struct control c;
	control_start(&c, m);
	struct cli_args a = { m };
	int st = hard_as_nobody(nobody_cli, &a);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "as nobody: status %#x (see stderr)", st);
	control_untouched_then_end(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_priv");
	TCase *tc = tcase_create("unprivileged");
	tcase_set_timeout(tc, 60);
	tcase_add_root_test(tc, nobody_library_own_processes_only, PRIV_WHY);
	tcase_add_root_test(tc, nobody_cli_own_processes_only, PRIV_WHY);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
