/* SPDX-License-Identifier: MIT */
/* Threads and concurrency: a multi-threaded leftover counts once (by the marker finder and by
 * descent); eight threads of one process reaping with different markers at the same time each
 * get exactly their own leftovers, with the right fates. */
#include "check_hard.h"

#include <pthread.h>

START_TEST(multithreaded_leftover_counts_once)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_THR", "mt");
	struct tu_proc p;
	int rd;
	hard_sig_spawn(&p, &rd, hard_env(m, NULL), "-t", "8", NULL);
	char task[64];
	snprintf(task, sizeof task, "/proc/%d/task", (int)p.pid);
	DIR *d = opendir(task);
	ck_assert_ptr_nonnull(d);
	int threads = 0;
	for (struct dirent *e; (e = readdir(d));)
		threads += e->d_name[0] != '.';
	closedir(d);
	ck_assert_int_eq(threads, 9);

	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(f, 2, &r), 0);
	ck_assert_int_eq(hard_count_pid(r, p.pid), 1);
	ck_assert_int_eq((int)r->n, 1);
	ck_assert_uint_eq(hard_find(r, p.pid, 0)->matched_by, 3u);
	reaper_report_free(r);

	struct reaper_opts o;
	reaper_opts_init(&o);
	o.grace = 0.3;
	ck_assert_int_eq(reaper_reap(f, 2, &o, &r), 0);
	ck_assert_int_eq((int)r->n, 1);
	ck_assert_int_eq((int)r->leaks, 1);
	ck_assert_int_eq((int)(r->terminated + r->killed), 1);
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(p.pid, p.start_time), 0);
	tu_proc_close(&p);
	close(rd);
}
END_TEST

#define NREAPERS 8

struct job {
	char marker[128];
	struct tu_proc quitter, ignorer; /* ends on SIGTERM; ignores it */
	int rd_q, rd_i;
	int err, adopted;
	struct reaper_report *r;
};

static void *reap_job(void *arg)
{
	struct job *j = arg;
	j->adopted = reaper_adopt();
	struct reaper_finder f = reaper_find_env(j->marker);
	struct reaper_opts o;
	reaper_opts_init(&o);
	/* the quitter must be gone by the end of the grace to count as terminated: with sixteen
	 * processes and eight reaping threads on a busy machine, a few tenths of a second may
	 * not see it scheduled; the ignorer keeps every reap waiting the whole grace anyway */
	o.grace = 3;
	j->err = reaper_reap(&f, 1, &o, &j->r);
	reaper_release();
	return NULL;
}

START_TEST(eight_reapers_at_once)
{
	static struct job jobs[NREAPERS];
	for (int i = 0; i < NREAPERS; i++) {
		struct job *j = &jobs[i];
		char name[32];
		snprintf(name, sizeof name, "HARD_THR%d", i);
		tu_unique_marker(j->marker, sizeof j->marker, name, "conc");
		/* hard_sig -f catches SIGTERM (so it outlives it): the plain one must end by
		 * SIGTERM, so it has no -f: spawn it without the report pipe */
		char *argv[] = { (char *)hard_path("hard_sig"), NULL };
		ck_assert_int_eq(tu_spawn(&j->quitter, argv, hard_env(j->marker, NULL), -1, -1), 0);
		hard_sig_spawn(&j->ignorer, &j->rd_i, hard_env(j->marker, NULL), "-i", NULL);
	}
	/* the plain ones must have exec'd (their environ holds the marker) before we reap */
	for (int i = 0; i < NREAPERS; i++) {
		for (double end = tu_now() + 60; tu_marked(jobs[i].marker, NULL, 0) < 2 && tu_now() < end;)
			hard_nap(0.01);
		ck_assert_int_eq(tu_marked(jobs[i].marker, NULL, 0), 2);
	}
	pthread_t t[NREAPERS];
	for (int i = 0; i < NREAPERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reap_job, &jobs[i]), 0);
	for (int i = 0; i < NREAPERS; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(reaper_adopted(), 0);
	for (int i = 0; i < NREAPERS; i++) {
		struct job *j = &jobs[i];
		ck_assert_msg(j->err == 0, "reaper %d: %s", i, strerror(-j->err));
		ck_assert_int_ge(j->adopted, 1);
		ck_assert_msg(j->r->n == 2, "reaper %d found %zu processes, want its own 2", i, j->r->n);
		const struct reaper_proc *q = hard_find(j->r, j->quitter.pid, j->quitter.start_time);
		const struct reaper_proc *g = hard_find(j->r, j->ignorer.pid, j->ignorer.start_time);
		ck_assert_msg(q && q->fate == REAPER_TERMINATED, "reaper %d: quitter %s", i,
			      q ? reaper_fate_name(q->fate) : "missing");
		ck_assert_msg(g && g->fate == REAPER_KILLED, "reaper %d: ignorer %s", i, g ? reaper_fate_name(g->fate) : "missing");
		ck_assert_msg(WIFSIGNALED(q->exit_status) && WTERMSIG(q->exit_status) == SIGTERM, "reaper %d: quitter status %#x",
			      i, q->exit_status);
		ck_assert_msg(WIFSIGNALED(g->exit_status) && WTERMSIG(g->exit_status) == SIGKILL, "reaper %d: ignorer status %#x",
			      i, g->exit_status);
		ck_assert_int_eq((int)j->r->leaks, 2);
		reaper_report_free(j->r);
		ck_assert_int_eq(tu_exists(j->quitter.pid, j->quitter.start_time), 0);
		ck_assert_int_eq(tu_exists(j->ignorer.pid, j->ignorer.start_time), 0);
		tu_proc_close(&j->quitter);
		tu_proc_close(&j->ignorer);
		close(j->rd_i);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_threads");
	TCase *tc = tcase_create("threads");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, multithreaded_leftover_counts_once);
	tcase_add_test(tc, eight_reapers_at_once);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
