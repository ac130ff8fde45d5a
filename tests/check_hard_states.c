/* SPDX-License-Identifier: MIT */
/* Hard states: leftovers that are stopped (SIGSTOP, ptrace), ignore SIGTERM, sleep
 * uninterruptibly (cgroup v1 freezer), or are zombies held by a live parent outside the run.
 * Each is reaped (or reported) without hanging the reap and without touching anything else. */
#include "check_hard.h"

#include <sys/ptrace.h>

static struct reaper_opts opts(double timeout, double grace, double settle)
{
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = timeout;
	o.grace = grace;
	o.settle = settle;
	return o;
}

/* Reap one marked leftover that must end up KILLED by SIGKILL, collected and gone. */
static void reap_expect_killed(struct tu_proc *p, const char *marker, double grace)
{
	struct reaper_finder f = reaper_find_env(marker);
	struct reaper_opts o = opts(0, grace, 10);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	const struct reaper_proc *pr = hard_find(r, p->pid, p->start_time);
	ck_assert_msg(pr, "leftover %d not in the report", (int)p->pid);
	ck_assert_msg(pr->fate == REAPER_KILLED, "fate %s", reaper_fate_name(pr->fate));
	ck_assert_int_eq((int)r->killed, 1);
	ck_assert_int_eq((int)r->leaks, 1);
	ck_assert_int_eq(r->escalated, 1);
	ck_assert_msg(pr->exit_status >= 0 && WIFSIGNALED(pr->exit_status) && WTERMSIG(pr->exit_status) == SIGKILL,
		      "exit status %#x", pr->exit_status);
	ck_assert_int_eq(tu_exists(p->pid, p->start_time), 0);
	reaper_report_free(r);
	tu_proc_close(p);
}

START_TEST(sigstopped_is_killed)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_MARK", "stopped");
	struct tu_proc p;
	int rd;
	hard_sig_spawn(&p, &rd, hard_env(m, NULL), NULL);
	ck_assert_int_eq((int)syscall(SYS_pidfd_send_signal, p.pidfd, SIGSTOP, NULL, 0), 0);
	for (int i = 0; i < 500 && tu_state(p.pid) != 'T'; i++)
		hard_nap(0.01);
	ck_assert_int_eq(tu_state(p.pid), 'T');
	reap_expect_killed(&p, m, 0.2);
	close(rd);
}
END_TEST

START_TEST(ptrace_stopped_is_killed)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_MARK", "traced");
	struct tu_proc p;
	int rd, sync[2];
	hard_sig_spawn(&p, &rd, hard_env(m, NULL), NULL);
	ck_assert_int_eq(pipe2(sync, O_CLOEXEC), 0);
	pid_t tracer = fork();
	if (tracer == 0) {
		/* hold the leftover in a ptrace-stop until it dies */
		int st;
		if (ptrace(PTRACE_SEIZE, p.pid, 0, 0) < 0 || ptrace(PTRACE_INTERRUPT, p.pid, 0, 0) < 0 ||
		    waitpid(p.pid, &st, __WALL) != p.pid)
			_exit(3);
		if (write(sync[1], "S", 1) != 1)
			_exit(4);
		while (waitpid(p.pid, &st, __WALL) == p.pid && !WIFEXITED(st) && !WIFSIGNALED(st))
			; /* every stop is left as it is: no PTRACE_CONT */
		_exit(0);
	}
	close(sync[1]);
	char c;
	ck_assert_int_eq((int)read(sync[0], &c, 1), 1);
	ck_assert_int_eq(tu_state(p.pid), 't');

	struct reaper_finder f = reaper_find_env(m);
	struct reaper_opts o = opts(0, 0.2, 10);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	const struct reaper_proc *pr = hard_find(r, p.pid, p.start_time);
	ck_assert_ptr_nonnull(pr);
	ck_assert_msg(pr->fate == REAPER_KILLED, "fate %s", reaper_fate_name(pr->fate));
	ck_assert_int_eq(tu_alive(p.pid, p.start_time), 0);
	reaper_report_free(r);
	/* the tracer saw its tracee die and exits; then the zombie is ours to collect */
	int st;
	ck_assert_int_eq(waitpid(tracer, &st, 0), tracer);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tracer status %#x", st);
	tu_kill_wait(&p);
	ck_assert_int_eq(tu_exists(p.pid, p.start_time), 0);
	close(sync[0]);
	close(rd);
}
END_TEST

START_TEST(term_ignorer_is_killed)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_MARK", "termign");
	struct tu_proc p;
	int rd;
	hard_sig_spawn(&p, &rd, hard_env(m, NULL), "-i", NULL);
	reap_expect_killed(&p, m, 0.3);
	close(rd);
}
END_TEST

/* The cgroup v1 freezer keeps a frozen task in the kernel (state D) even with SIGKILL
 * pending, until it is thawed: an honest stand-in for a task stuck in uninterruptible sleep. */
START_TEST(uninterruptible_is_reported_unkillable)
{
	char cg[512];
	int e = hard_cgroup_make(cg, sizeof cg, "freezer", "dstate");
	ck_assert_msg(e == 0, "no cgroup v1 freezer at /sys/fs/cgroup/freezer (%s): cannot make a D-state process",
		      strerror(-e));
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_MARK", "dstate");
	struct tu_proc p;
	int rd;
	hard_sig_spawn(&p, &rd, hard_env(m, NULL), NULL);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)p.pid);
	ck_assert_int_eq(hard_cgroup_write(cg, "cgroup.procs", pid), 0);
	ck_assert_int_eq(hard_cgroup_write(cg, "freezer.state", "FROZEN"), 0);
	for (int i = 0; i < 500 && tu_state(p.pid) != 'D'; i++)
		hard_nap(0.01);
	ck_assert_int_eq(tu_state(p.pid), 'D');

	struct reaper_finder f = reaper_find_env(m);
	struct reaper_opts o = opts(0, 0, 1.0);
	struct reaper_report *r = NULL;
	double t0 = tu_now();
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	double took = tu_now() - t0;
	fprintf(stderr, "hard: a frozen (D) leftover was reported after %.2f s (settle 1 s)\n", took);
	ck_assert_msg(took < 30, "the reap hung for %.1f s on a D-state process", took);
	const struct reaper_proc *pr = hard_find(r, p.pid, p.start_time);
	ck_assert_ptr_nonnull(pr);
	ck_assert_msg(pr->fate == REAPER_UNKILLABLE, "fate %s", reaper_fate_name(pr->fate));
	ck_assert_int_eq((int)r->unkillable, 1);
	ck_assert_int_ge((int)r->leaks, 1);
	ck_assert_int_eq(tu_state(p.pid), 'D');
	reaper_report_free(r);

	/* thawed, it dies of the SIGKILL it has been holding */
	ck_assert_int_eq(hard_cgroup_write(cg, "freezer.state", "THAWED"), 0);
	int st = tu_wait_exit(&p);
	ck_assert_msg(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	ck_assert_int_eq(hard_cgroup_remove(cg), 0);
	close(rd);
}
END_TEST

START_TEST(zombie_held_outside_is_reported_not_killed)
{
	ck_assert_int_ge(reaper_adopt(), 1);
	int pfd[2];
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid_t holder = fork();
	if (holder == 0) {
		pid_t z = fork();
		if (z == 0)
			_exit(7);
		if (write(pfd[1], &z, sizeof z) != (ssize_t)sizeof z)
			_exit(2);
		for (;;)
			pause(); /* never waits for z */
	}
	pid_t z = 0;
	ck_assert_int_eq((int)read(pfd[0], &z, sizeof z), (int)sizeof z);
	for (int i = 0; i < 500 && tu_state(z) != 'Z'; i++)
		hard_nap(0.01);
	ck_assert_int_eq(tu_state(z), 'Z');
	uint64_t zst = tu_start_time(z), hst = tu_start_time(holder);

	/* the run is what descends from the holder; the holder itself is outside it */
	struct reaper_finder f = reaper_find_tree(holder);
	struct reaper_opts o = opts(0.2, 0.2, 2);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	const struct reaper_proc *pr = hard_find(r, z, zst);
	ck_assert_msg(pr, "the held zombie %d is not in the report", (int)z);
	ck_assert_msg(pr->fate == REAPER_ZOMBIE_HELD, "fate %s", reaper_fate_name(pr->fate));
	ck_assert_int_eq((int)r->zombies_held, 1);
	ck_assert_int_eq((int)r->killed, 0);
	ck_assert_ptr_null(hard_find(r, holder, 0));
	ck_assert_int_eq(tu_state(z), 'Z');           /* not collected by us */
	ck_assert_int_eq(tu_alive(holder, hst), 1);     /* the parent untouched */
	reaper_report_free(r);

	struct tu_proc hp;
	ck_assert_int_eq(tu_pin(&hp, holder, hst), 0);
	tu_kill_wait(&hp);
	/* the zombie comes to us, its subreaper: collect exactly it */
	int st;
	ck_assert_int_eq(waitpid(z, &st, 0), z);
	ck_assert_int_eq(WEXITSTATUS(st), 7);
	reaper_release();
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_states");
	/* "pidfd": stops its leftover with a raw pidfd_send_signal (valgrind 3.19 has no
	 * pidfds); check-valgrind excludes this tag */
	TCase *tc = tcase_create("states_pidfd");
	tcase_set_tags(tc, "pidfd");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sigstopped_is_killed);
	suite_add_tcase(s, tc);
	tc = tcase_create("states");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ptrace_stopped_is_killed);
	tcase_add_test(tc, term_ignorer_is_killed);
	tcase_add_root_test(tc, uninterruptible_is_reported_unkillable, "a cgroup v1 freezer group needs root");
	tcase_add_test(tc, zombie_held_outside_is_reported_not_killed);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
