/* SPDX-License-Identifier: MIT */
/* Fork storms: a leftover whose processes fork as fast as they can (each exits after two
 * forks, so orphans appear all the time) is brought to zero within the settle deadline.
 * Bounded so the machine survives: a pids cgroup (pids.max) where this machine has one, and
 * always the fixture's own shared live/fork counters. Prints the convergence time. */
#include "check_hard.h"

#define STORM_LIVE "300"
#define STORM_FORKS "20000000"

static void storm_round(int round)
{
	char cg[512] = "", m[128];
	int have_cg = geteuid() == 0 && hard_cgroup_make(cg, sizeof cg, "pids", "storm") == 0;
	if (have_cg)
		ck_assert_int_eq(hard_cgroup_write(cg, "pids.max", "400"), 0);
	tu_unique_marker(m, sizeof m, "HARD_STORM", "storm");
	char *argv[] = { (char *)hard_path("hard_storm"), STORM_LIVE, STORM_FORKS, have_cg ? cg : NULL, NULL };
	struct tu_proc top;
	ck_assert_int_eq(tu_spawn(&top, argv, hard_env(m, NULL), -1, -1), 0);

	/* let it reach full speed: many members, and the fork counter moving */
	int members = 0;
	for (int i = 0; i < 300 && members < 100; i++) {
		hard_nap(0.01);
		members = tu_marked(m, NULL, 0);
	}
	ck_assert_msg(members >= 20, "the storm did not get going (%d members)", members);
	long forks0 = have_cg ? hard_cgroup_read_long(cg, "pids.current") : members;

	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0;
	o.grace = 0;
	o.settle = 20; /* generous: ASan builds and a loaded CI machine fork slowly too */
	struct reaper_report *r = NULL;
	double t0 = tu_now();
	ck_assert_int_eq(reaper_reap(f, 2, &o, &r), 0);
	double took = tu_now() - t0;
	fprintf(stderr, "hard: fork storm round %d: %d members (%ld pids) at the start, %zu processes found, %zu killed, "
			"converged in %.3f s (settle deadline 20 s)%s\n",
		round, members, forks0, r->n, r->killed, took, have_cg ? ", pids cgroup max 400" : ", counters only");
	/* past the settle deadline, survivors would be reported unkillable: none may be */
	ck_assert_int_eq((int)r->unkillable, 0);
	ck_assert_int_ge((int)r->killed, 1);
	ck_assert_ptr_nonnull(hard_find(r, top.pid, top.start_time));
	reaper_report_free(r);

	/* zero: nothing of the storm runs, nothing of it is left as our zombie */
	ck_assert_int_eq(tu_marked(m, NULL, 0), 0);
	ck_assert_int_eq(tu_live_children(), 0);
	ck_assert_int_eq(tu_zombie_children(), 0);
	ck_assert_int_eq(tu_exists(top.pid, top.start_time), 0);
	tu_proc_close(&top);
	if (have_cg) {
		ck_assert_int_eq(hard_cgroup_procs(cg), 0);
		ck_assert_int_eq(hard_cgroup_remove(cg), 0);
	}
}

START_TEST(fork_storm_converges)
{
	if (geteuid() != 0)
		fprintf(stderr, "note: not root: the storm is bounded by its own counters only (no pids cgroup)\n");
	ck_assert_int_ge(reaper_adopt(), 1);
	for (int round = 1; round <= 3; round++)
		storm_round(round);
	reaper_release();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_storm");
	TCase *tc = tcase_create("storm");
	/* "pidfd": storm members are each other's children, not ours; killing them needs
	 * pidfds (valgrind 3.19 has none). check-valgrind excludes this tag. */
	tcase_set_tags(tc, "pidfd");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, fork_storm_converges);
	suite_add_tcase(s, tc);
	tc = tcase_create("zz_nothing_left");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
