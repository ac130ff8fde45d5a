/* SPDX-License-Identifier: MIT */
/* Bad input: hostile /proc contents. Unit cases feed reaper_parse_stat and the environ
 * matchers what a process can make /proc show (comms of ") ) )", newlines, cut or overlong
 * fields); real-process cases make a process with a multi-megabyte environ, one named
 * ") ) )", and a churn of processes that vanish while they are being read. */
#include "check_hard.h"
#include "reaper/array.h"
#include "reaper/sbuf.h"

#include <sys/prctl.h>
#include <sys/resource.h>

static const char *tail_fields = " 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 8192000 200";

static int parse(const char *comm_and_state, struct reaper_stat *st)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "4242 (%s%s\n", comm_and_state, tail_fields);
	return reaper_parse_stat(buf, (size_t)n, st);
}

START_TEST(stat_comm_of_parens)
{
	struct reaper_stat st;
	ck_assert_int_eq(parse(") ) )) S", &st), 0);
	ck_assert_str_eq(st.comm, ") ) )");
	ck_assert_int_eq(st.state, 'S');
	ck_assert_int_eq(st.pid, 4242);
	ck_assert_int_eq(st.ppid, 1);
	ck_assert_int_eq((int)st.start_time, 987654);
	/* a comm that looks like the rest of a stat line */
	ck_assert_int_eq(parse("x) R 9 9 9 0 -1 (y) Z", &st), 0);
	ck_assert_str_eq(st.comm, "x) R 9 9 9 0 -1 (y");
	ck_assert_int_eq(st.state, 'Z');
	ck_assert_int_eq(st.ppid, 1);
	ck_assert_int_eq(parse("a\nb(c) T", &st), 0);
	ck_assert_str_eq(st.comm, "a\nb(c");
	ck_assert_int_eq(st.state, 'T');
}
END_TEST

START_TEST(stat_malformed_refused)
{
	struct reaper_stat st;
	const char *bad[] = {
		"",
		"4242 sleep S 1",
		"4242 (sleep S 1 2 3",
		"4242 (sleep) S 1 4242 4242",                               /* cut before start time */
		"4242 (sleep) S x 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", /* ppid not a number */
		"4242 (sleep) S 1 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999",
		"4242 (sleep)",
		"4242 (sleep) ",
		")(",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(reaper_parse_stat(bad[i], strlen(bad[i]), &st) < 0, "accepted: '%s'", bad[i]);
	/* an overlong comm (more than the kernel's 16 bytes ever gives) is cut, terminated */
	char big[400], buf[600];
	memset(big, 'c', sizeof big - 1);
	big[sizeof big - 1] = 0;
	int n = snprintf(buf, sizeof buf, "1 (%s) S%s", big, tail_fields);
	ck_assert_int_eq(reaper_parse_stat(buf, (size_t)n, &st), 0);
	ck_assert_uint_eq(strlen(st.comm), sizeof st.comm - 1);
	/* the length given is the end: nothing past it is read (the start time is cut off) */
	n = snprintf(buf, sizeof buf, "1 (x) S%s", tail_fields);
	ck_assert_int_lt(reaper_parse_stat(buf, (size_t)n - 14, &st), 0);
}
END_TEST

START_TEST(environ_edges)
{
	static const char env[] = "A=1\0HOME=/x\0\0X=10\0LAST=end"; /* no NUL at the very end */
	size_t len = sizeof env - 1;
	ck_assert_int_eq(reaper_environ_has(env, len, "HOME=/x", 7), 1);
	ck_assert_int_eq(reaper_environ_has(env, len, "LAST=end", 8), 1);
	ck_assert_int_eq(reaper_environ_has(env, len, "X=1", 3), 0);  /* a prefix of X=10 */
	ck_assert_int_eq(reaper_environ_has(env, len, "HOME=/", 6), 0);
	ck_assert_int_eq(reaper_environ_has(env, len, "", 0), 0);
	ck_assert_int_eq(reaper_environ_has(env, len - 1, "LAST=end", 8), 0); /* cut */
	size_t vlen = 99;
	const char *v = reaper_environ_get(env, len, "LAST", &vlen);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq((int)vlen, 3);
	ck_assert_int_eq(memcmp(v, "end", 3), 0);
	ck_assert_ptr_null(reaper_environ_get(env, len, "HOM", &vlen));
	ck_assert_ptr_null(reaper_environ_get(env, 0, "A", &vlen));
}
END_TEST

/* ---- real processes ------------------------------------------------------------------ */

static struct reaper_opts quick(void)
{
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.grace = 0.2;
	return o;
}

START_TEST(megabyte_environ)
{
	enum { PADS = 40, PAD = 100000 }; /* 4 MB: each string stays under MAX_ARG_STRLEN */
	char m[128], test[] = "REAPER_TEST=hard::megabyte_environ";
	tu_unique_marker(m, sizeof m, "HARD_INPUT", "bigenv");
	char **env = calloc(PADS + 4, sizeof *env);
	ck_assert_ptr_nonnull(env);
	for (int i = 0; i < PADS; i++) {
		env[i] = malloc(PAD + 32);
		int n = snprintf(env[i], 32, "HARD_PAD_%d=", i);
		memset(env[i] + n, 'p', PAD);
		env[i][n + PAD] = 0;
	}
	env[PADS] = test; /* the marker and the test name come last, after 4 MB */
	env[PADS + 1] = m;
	env[PADS + 2] = NULL;
	char *argv[] = { (char *)hard_path("hard_sig"), NULL };
	pid_t pid = fork();
	if (pid == 0) {
		/* exec takes at most a quarter of the stack limit in arguments and environment */
		struct rlimit rl = { 64 << 20, 64 << 20 };
		setrlimit(RLIMIT_STACK, &rl);
		execve(argv[0], argv, env);
		_exit(127);
	}
	struct tu_proc p;
	ck_assert_int_eq(tu_pin(&p, pid, 0), 0);
	for (int i = 0; i < 500 && tu_marked(m, NULL, 0) == 0; i++)
		hard_nap(0.01);
	ck_assert_msg(tu_marked(m, NULL, 0) == 1, "the big-environ process did not start (exec failed?)");
	struct reaper_finder f = reaper_find_env(m);
	struct reaper_opts o = quick();
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	const struct reaper_proc *pr = hard_find(r, pid, p.start_time);
	ck_assert_ptr_nonnull(pr);
	ck_assert_str_eq(pr->test, "hard::megabyte_environ");
	ck_assert_int_eq(pr->fate, REAPER_TERMINATED);
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(pid, p.start_time), 0);
	tu_proc_close(&p);
	for (int i = 0; i < PADS; i++)
		free(env[i]);
	free(env);
}
END_TEST

START_TEST(comm_of_parens_real)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_INPUT", "parens");
	struct tu_proc p;
	int rd;
	hard_sig_spawn(&p, &rd, hard_env(m, NULL), "-n", ") ) )", NULL);
	struct reaper_finder f = reaper_find_env(m);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
	ck_assert_int_eq((int)r->n, 1);
	const struct reaper_proc *pr = &r->procs[0];
	ck_assert_int_eq(pr->pid, p.pid);
	ck_assert_str_eq(pr->comm, ") ) )");
	ck_assert_int_eq(pr->ppid, getpid());
	ck_assert_uint_eq(pr->start_time, p.start_time); /* testutil's own /proc reading */
	/* a wrong parse past the comm would read ')' or a digit here; R is a busy machine */
	ck_assert_msg(pr->state == 'S' || pr->state == 'R', "state %c", pr->state);
	reaper_report_free(r);
	struct reaper_opts o = quick();
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	ck_assert_int_eq((int)r->killed, 1); /* hard_sig -f outlives SIGTERM */
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(p.pid, p.start_time), 0);
	tu_proc_close(&p);
	close(rd);
}
END_TEST

static int sane(const struct reaper_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (p->pid <= 0 || !p->start_time || !p->cmdline || !p->comm || !p->exe || !p->cwd || !p->test ||
		    !p->ancestry)
			return 0;
	}
	return 1;
}

/* Processes that vanish while they are read: a churner forking children that exit at once,
 * all carrying the marker, scanned (marker and descent) again and again, then reaped. */
#define VANISH_SCANS 100
START_TEST(vanishing_pids)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_INPUT", "churn");
	ck_assert_int_ge(reaper_adopt(), 1);
	char *argv[] = { "/bin/sh", "-c", "while :; do /bin/true & /bin/true & wait; done", NULL };
	struct tu_proc churn;
	ck_assert_int_eq(tu_spawn(&churn, argv, hard_env(m, NULL), -1, -1), 0);
	hard_nap(0.1);
	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
	size_t seen = 0;
	/* a fixed number of scans: each meets the churner and whatever of its children live then */
	for (int i = 0; i < VANISH_SCANS; i++) {
		struct reaper_report *r = NULL;
		ck_assert_int_eq(reaper_scan(f, 2, &r), 0);
		ck_assert(sane(r));
		seen += r->n;
		reaper_report_free(r);
	}
	ck_assert_uint_gt(seen, VANISH_SCANS); /* the churner at least, every time */
	struct reaper_opts o = quick();
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(f, 2, &o, &r), 0);
	ck_assert(sane(r));
	ck_assert_ptr_nonnull(hard_find(r, churn.pid, churn.start_time));
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(churn.pid, churn.start_time), 0);
	ck_assert_int_eq(tu_marked(m, NULL, 0), 0);
	tu_proc_close(&churn);
	/* children of the churner that were already zombies when it died came to us unseen */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	reaper_release();
}
END_TEST

/* A length or count whose room cannot be had (it would wrap size_t or exceed memory) is an
 * out-of-memory failure that leaves what was there, never a short buffer written past. */
START_TEST(growth_that_cannot_be_had)
{
	struct sbuf b = { 0 };
	sbuf_puts(&b, "abc");
	sbuf_add(&b, "x", SIZE_MAX - 2); /* len + this + 1 wraps to 1 */
	ck_assert_int_eq(b.oom, 1);
	ck_assert_uint_eq(b.len, 3);
	ck_assert_str_eq(sbuf_str(&b), "");
	sbuf_puts(&b, "more");
	ck_assert_uint_eq(b.len, 3);
	sbuf_free(&b);
	sbuf_puts(&b, "abc");
	sbuf_add(&b, "x", SIZE_MAX / 2);
	ck_assert_int_eq(b.oom, 1);
	sbuf_free(&b);

	int *v = NULL;
	size_t cap = 0;
	ck_assert_int_eq(ARRAY_RESERVE(v, cap, SIZE_MAX, 64), -ENOMEM);
	ck_assert_ptr_null(v);
	ck_assert_uint_eq(cap, 0);
	ck_assert_int_eq(ARRAY_RESERVE(v, cap, 10, 64), 0);
	int *was = v;
	ck_assert_uint_eq(cap, 64);
	ck_assert_int_eq(ARRAY_RESERVE(v, cap, SIZE_MAX / sizeof *v + 1, 64), -ENOMEM);
	ck_assert_ptr_eq(v, was);
	ck_assert_uint_eq(cap, 64);
	free(v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_input");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, stat_comm_of_parens);
	tcase_add_test(tc, stat_malformed_refused);
	tcase_add_test(tc, environ_edges);
	tcase_add_test(tc, growth_that_cannot_be_had);
	suite_add_tcase(s, tc);
	tc = tcase_create("hostile_proc");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, megabyte_environ);
	tcase_add_test(tc, comm_of_parens_real);
	suite_add_tcase(s, tc);
	/* Its own case and time: the churner forks as fast as the scheduler lets it and takes
	 * its share of the cores from the scans and from the reap that must outrun it. About a
	 * second on an idle two-core machine, tens of seconds on one loaded a hundredfold; the
	 * work itself is fixed (VANISH_SCANS scans and one reap). */
	tc = tcase_create("hostile_churn");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, vanishing_pids);
	suite_add_tcase(s, tc);
	tc = tcase_create("hostile_end");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
