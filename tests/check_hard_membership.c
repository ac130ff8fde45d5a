/* SPDX-License-Identifier: MIT */
/* Membership without holes on the /proc path: a leftover whose main thread has exited while
 * its other threads run on; a process caught in the middle of an exec; more leftovers than
 * descriptors. Each is found (by every finder), killed, waited for until it is gone, or the
 * report says it is incomplete. */
#include "check_hard.h"

#include <sys/resource.h>

static char suite_marker[128];

/* zl with marker m as our child; waits until its leader is a zombie (its thread runs on). */
static void zl_spawn(struct tu_proc *p, const char *m)
{
	char *argv[] = { (char *)hard_path("zl"), NULL };
	ck_assert_int_eq(tu_spawn(p, argv, hard_env(m, suite_marker, NULL), -1, -1), 0);
	for (int i = 0; i < 3000 && tu_state(p->pid) != 'Z'; i++)
		hard_nap(0.002);
	ck_assert_int_eq(tu_state(p->pid), 'Z');
	ck_assert_int_eq(tu_wait_present(p->pid, 1), 0);
}

START_TEST(zombie_leader_found_alive_and_killed)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_ZL", "zl");
	struct tu_proc p;
	zl_spawn(&p, m);
	/* each finder alone sees it, alive */
	struct reaper_finder fe = reaper_find_env(m), ft = reaper_find_tree(0);
	struct reaper_finder both[2] = { fe, ft };
	const struct reaper_finder *alone[2] = { &fe, &ft };
	for (int k = 0; k < 2; k++) {
		struct reaper_report *r = NULL;
		ck_assert_int_eq(reaper_scan(alone[k], 1, &r), 0);
		const struct reaper_proc *q = hard_find(r, p.pid, p.start_time);
		ck_assert_msg(q, "%s: the zombie-leader process %d is not found", k ? "tree" : "env", (int)p.pid);
		ck_assert_msg(q->fate == REAPER_ALIVE, "%s: fate %s", k ? "tree" : "env", reaper_fate_name(q->fate));
		ck_assert_int_eq((int)r->leaks, 1);
		reaper_report_free(r);
	}
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.grace = 0.2;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(both, 2, &o, &r), 0);
	const struct reaper_proc *q = hard_find(r, p.pid, p.start_time);
	ck_assert_ptr_nonnull(q);
	ck_assert_msg(q->fate == REAPER_TERMINATED || q->fate == REAPER_KILLED, "fate %s", reaper_fate_name(q->fate));
	ck_assert_uint_eq(q->matched_by, 3u);
	ck_assert_int_eq((int)r->leaks, 1);
	ck_assert_int_eq(r->incomplete, 0);
	/* waited for until every thread is gone, and collected (it was our child) */
	ck_assert_int_eq(tu_exists(p.pid, p.start_time), 0);
	ck_assert_msg(WIFSIGNALED(q->exit_status), "status %#x", q->exit_status);
	reaper_report_free(r);
	tu_proc_close(&p);
}
END_TEST

/* `reaper run -- sh -c 'setsid zl & sleep 0.5'`: a leak, reported, and nothing left. */
START_TEST(run_zombie_leader_is_a_leak)
{
	char m[128], script[1024];
	tu_unique_marker(m, sizeof m, "HARD_ZL", "run");
	snprintf(script, sizeof script, "setsid %s </dev/null >/dev/null 2>&1 & sleep 0.5", hard_path("zl"));
	char *argv[] = { (char *)hard_path("reaper"), "run", "--timeout", "0.5", "--grace", "0.5", "--marker", m, "--",
			 "/bin/sh", "-c", script, NULL };
	int err[2];
	ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
	struct tu_proc run;
	ck_assert_int_eq(tu_spawn(&run, argv, hard_env(suite_marker, NULL), -1, err[1]), 0);
	close(err[1]);
	char log[8192];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof log - 1 && (n = read(err[0], log + len, sizeof log - 1 - len)) > 0)
		len += (size_t)n;
	log[len] = 0;
	close(err[0]);
	int st = tu_wait_exit(&run);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 23, "reaper run status %#x:\n%s", st, log);
	ck_assert_msg(strstr(log, "1 leaked"), "no leak reported:\n%s", log);
	ck_assert_int_eq(tu_marked(m, NULL, 0), 0);
	/* the thread that carries the marker is gone too (zombie leaders read empty) */
	pid_t left[4];
	ck_assert_int_eq(tu_marked(m, left, 4), 0);
}
END_TEST

/* A marker scan racing a process that executes itself in a loop never misses it. */
START_TEST(exec_loop_never_missed)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_EXEC", "loop");
	char *argv[] = { (char *)hard_path("execloop"), NULL };
	struct tu_proc p;
	ck_assert_int_eq(tu_spawn(&p, argv, hard_env(m, suite_marker, NULL), -1, -1), 0);
	/* carrying the marker from its first exec on */
	int marked = 0;
	for (double end = tu_now() + 60; !(marked = tu_marked(m, NULL, 0)) && tu_now() < end;)
		hard_nap(0.005);
	ck_assert_int_eq(marked, 1);
	struct reaper_finder f = reaper_find_env(m);
	/* 200 scans, or as many as fit in 30 s (a full scan is slow under valgrind) */
	int missed = 0, rounds = 0;
	for (double end = tu_now() + 30; rounds < 200 && (rounds < 20 || tu_now() < end); rounds++) {
		struct reaper_report *r = NULL;
		ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
		missed += !hard_find(r, p.pid, p.start_time);
		ck_assert_int_le((int)r->n, 1);
		reaper_report_free(r);
	}
	ck_assert_int_eq(tu_kill_wait(&p), 0);
	ck_assert_msg(missed == 0, "missed the exec-looping process in %d of %d scans", missed, rounds);
}
END_TEST

/* A process whose environment memory is gone for good (unmapped; its environ reads empty with
 * settled bounds) is judged at once: it carries no marker, and the scan is complete. */
START_TEST(unreadable_environment_judged)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_EXEC", "noenvmem");
	char *argv[] = { (char *)hard_path("noenvmem"), NULL };
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	struct tu_proc p;
	ck_assert_int_eq(tu_spawn(&p, argv, hard_env(m, suite_marker, NULL), fds[1], -1), 0);
	close(fds[1]);
	char ready[8] = { 0 };
	ssize_t n = read(fds[0], ready, sizeof ready - 1); /* its environment is gone */
	close(fds[0]);
	/* no marker finds it any more: killed here, before any check can end the test */
	struct reaper_finder f = reaper_find_env(m);
	struct reaper_report *r = NULL;
	int scanned = n == 6 ? reaper_scan(&f, 1, &r) : -EIO;
	int incomplete = r ? r->incomplete : 0, found = r && hard_find(r, p.pid, p.start_time);
	reaper_report_free(r);
	ck_assert_int_eq(tu_kill_wait(&p), 0);
	ck_assert_int_eq(scanned, 0);
	ck_assert_msg(incomplete == 0, "the scan said it is incomplete (%s)", strerror(incomplete));
	ck_assert(!found);
}
END_TEST

/* A call finder that runs after the marker finder in the same scan: it lets the leftover
 * exec and waits until the exec is over (its environment names the test "second"). */
struct exec_now {
	int go;
	pid_t pid;
	int calls;
};

static int let_it_exec(void *ctx, struct reaper_ident *ids, size_t cap)
{
	(void)ids, (void)cap;
	struct exec_now *e = ctx;
	if (e->calls++ || write(e->go, "g\n", 2) != 2)
		return 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)e->pid);
	for (int i = 0; i < 6000; i++) {
		char env[4096];
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, env, sizeof env - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0 && memmem(env, (size_t)n, "REAPER_TEST=second", 19))
			return 0;
		hard_nap(0.005);
	}
	return 0;
}

static int runs_301(pid_t pid)
{
	char path[64], line[64];
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
	if (fd >= 0)
		close(fd);
	return n > 0 && memmem(line, (size_t)n, "301", 3) != NULL;
}

/* A leftover found between its fork and its exec shows its parent's environment (its test)
 * and comm. Told after its exec, even by the scan that found it, it is told as the program it
 * runs then: cmdline, comm and test all of that exec. */
START_TEST(described_after_exec_in_the_scan_that_found_it)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_EXEC", "described");
	char *argv[] = { "/bin/sh", "-c", "(read go <&3; REAPER_TEST=second exec /bin/sleep 300) & exec /bin/sleep 301", NULL };
	int g[2];
	ck_assert_int_eq(pipe2(g, O_CLOEXEC), 0);
	/* its child becomes ours when it ends: killed and collected without a pidfd (valgrind) */
	ck_assert_int_ge(reaper_adopt(), 1);
	struct tu_proc sh;
	pid_t pid = hard_spawn_raw(argv, hard_env(m, suite_marker, "REAPER_TEST=first", NULL), g[0]);
	close(g[0]);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(tu_pin(&sh, pid, 0), 0);
	/* its parent runs sleep 301, the child waits unexec'd */
	pid_t both[4];
	int n = 0;
	for (int i = 0; i < 2000 && (n != 2 || !runs_301(pid)); i++) {
		hard_nap(0.005);
		n = tu_marked(m, both, 4);
	}
	ck_assert_msg(n == 2 && runs_301(pid), "the leftover did not start (%d marked)", n);
	struct exec_now e = { g[1], both[0] == pid ? both[1] : both[0], 0 };
	struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_call(let_it_exec, &e) };
	struct reaper_report *r = NULL;
	int scanned = reaper_scan(f, 2, &r);
	const struct reaper_proc *pr = scanned == 0 ? hard_find(r, e.pid, 0) : NULL;
	char told[512] = "";
	if (pr)
		snprintf(told, sizeof told, "cmdline '%s', comm '%s', test '%s'", pr->cmdline, pr->comm, pr->test);
	reaper_report_free(r);
	close(g[1]);
	int sh_killed = tu_kill_wait(&sh), left = tu_kill_marked(m);
	reaper_release();
	ck_assert_int_eq(sh_killed, 0);
	ck_assert_int_eq(left, 1);
	ck_assert_int_eq(scanned, 0);
	ck_assert_msg(pr, "the leftover %d was not found", (int)e.pid);
	ck_assert_msg(strstr(told, "cmdline '/bin/sleep 300', comm 'sleep', test 'second'"), "%d is told as %s",
		      (int)e.pid, told);
}
END_TEST

/* ---- more leftovers than descriptors ---------------------------------------------------- */

#define NLEFT 40

struct many {
	struct tu_proc p[NLEFT];
	int rd[NLEFT];
	char m[128];
};

static void many_spawn(struct many *w, const char *tag)
{
	tu_unique_marker(w->m, sizeof w->m, "HARD_FD", tag);
	for (int i = 0; i < NLEFT; i++) {
		hard_sig_spawn(&w->p[i], &w->rd[i], hard_env(w->m, suite_marker, NULL), "-i", NULL);
		/* our pidfd would count against nothing of the reaper's, but keep ours few */
		close(w->p[i].pidfd);
		w->p[i].pidfd = -1;
	}
}

static void many_end(struct many *w)
{
	tu_kill_marked(w->m);
	for (int i = 0; i < NLEFT; i++) {
		waitpid(w->p[i].pid, NULL, 0);
		close(w->rd[i]);
	}
}

/* The reaper is a child of ours limited to 24 descriptors; the leftovers are not its
 * children (so no kill() by pid is safe for it): every one is killed anyway. */
static int reap_limited(void *arg)
{
	struct many *w = arg;
	for (int i = 0; i < NLEFT; i++)
		close(w->rd[i]); /* the reaper's descriptors are its own few */
	struct rlimit rl = { 24, 24 };
	KID_CHECK(10, setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
	struct reaper_finder f = reaper_find_env(w->m);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.grace = 0.2;
	struct reaper_report *r = NULL;
	int e = reaper_reap(&f, 1, &o, &r);
	KID_CHECK(11, e == 0, "reaper_reap: %s", strerror(-e));
	KID_CHECK(12, r->n == NLEFT, "found %zu of %d", r->n, NLEFT);
	KID_CHECK(13, r->killed == NLEFT, "killed %zu of %d (unkillable %zu)", r->killed, NLEFT, r->unkillable);
	KID_CHECK(14, r->incomplete == 0, "incomplete: %s", r->incomplete_reason);
	reaper_report_free(r);
	return 0;
}

START_TEST(more_leftovers_than_descriptors)
{
	static struct many w;
	many_spawn(&w, "lim");
	pid_t kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0)
		_exit(reap_limited(&w));
	int st;
	ck_assert_int_eq(waitpid(kid, &st, 0), kid);
	int alive = 0;
	for (int i = 0; i < NLEFT; i++)
		alive += tu_alive(w.p[i].pid, w.p[i].start_time);
	many_end(&w);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the limited reaper: status %#x", st);
	ck_assert_int_eq(alive, 0);
}
END_TEST

/* Every descriptor taken the moment the signalling starts: what cannot be signalled is
 * left, and the report says the result is incomplete. */
static void fill_fds(void *ctx, int sig)
{
	(void)ctx;
	(void)sig;
	while (dup(2) >= 0)
		;
}

static int reap_starved(void *arg)
{
	struct many *w = arg;
	for (int i = 0; i < NLEFT; i++)
		close(w->rd[i]);
	struct rlimit rl = { 64, 64 };
	KID_CHECK(10, setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
	struct reaper_finder f = reaper_find_env(w->m);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.grace = 0.1;
	o.settle = 0.5;
	o.on_escalate = fill_fds;
	struct reaper_report *r = NULL;
	int e = reaper_reap(&f, 1, &o, &r);
	KID_CHECK(11, e == 0, "reaper_reap: %s", strerror(-e));
	KID_CHECK(12, r->killed < NLEFT, "killed them all with no descriptor to spare?");
	KID_CHECK(13, r->incomplete == EMFILE, "incomplete %d (%s)", r->incomplete,
		  r->incomplete_reason ? r->incomplete_reason : "");
	KID_CHECK(14, r->incomplete_reason && *r->incomplete_reason, "no reason given");
	reaper_report_free(r);
	return 0;
}

START_TEST(descriptor_exhaustion_is_reported)
{
	static struct many w;
	many_spawn(&w, "starve");
	pid_t kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0)
		_exit(reap_starved(&w));
	int st;
	ck_assert_int_eq(waitpid(kid, &st, 0), kid);
	many_end(&w);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the starved reaper: status %#x", st);
}
END_TEST

/* The pids of the report's processes found by the finders in mask, as a set of flags for
 * the processes given (bit k: procs[k] was found so). */
static unsigned found(const struct reaper_report *r, const struct tu_proc *procs, size_t n, uint32_t mask)
{
	unsigned bits = 0;
	for (size_t k = 0; k < n; k++) {
		const struct reaper_proc *q = hard_find(r, procs[k].pid, procs[k].start_time);
		if (q && (q->matched_by & mask))
			bits |= 1u << k;
	}
	return bits;
}

/* A marker finder with an origin matches what started since (read through the window of pids
 * given out since, or through a full scan where that window cannot be told: the same result),
 * a process whose main thread has exited once (not its threads as well); a process older than
 * the origin that execs with the marker afterwards is found by descent, not by the marker. */
START_TEST(origin_matches_what_started_since)
{
	char m[128], mline[200];
	tu_unique_marker(m, sizeof m, "HARD_ORIGIN", "since");
	struct tu_proc p[4]; /* 0: marked, older than the origin; 1: execs with the marker later;
				2: marked, started since; 3: zl (zombie leader), started since */
	char *sleep_argv[] = { "/bin/sleep", "1000", NULL };
	ck_assert_int_eq(tu_spawn(&p[0], sleep_argv, hard_env(m, suite_marker, NULL), -1, -1), 0);
	int in[2];
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	snprintf(mline, sizeof mline, "read x; exec env %s /bin/sleep 1000", m);
	char *sh_argv[] = { "/bin/sh", "-c", mline, NULL };
	pid_t sh = fork();
	ck_assert_int_ge(sh, 0);
	if (sh == 0) {
		dup2(in[0], 0);
		execve(sh_argv[0], sh_argv, hard_env(suite_marker, NULL));
		_exit(127);
	}
	close(in[0]);
	ck_assert_int_eq(tu_pin(&p[1], sh, 0), 0);
	/* a tick later (start times count in clock ticks), the origin */
	hard_nap(0.05);
	struct reaper_origin o;
	ck_assert_int_eq(reaper_origin_now(&o), 0);
	ck_assert_int_eq(tu_spawn(&p[2], sleep_argv, hard_env(m, suite_marker, NULL), -1, -1), 0);
	zl_spawn(&p[3], m);
	ck_assert_int_eq(write(in[1], "go\n", 3), 3);
	close(in[1]);
	pid_t marked[8];
	for (int i = 0; i < 3000 && tu_marked(m, marked, 8) < 3; i++)
		hard_nap(0.002);
	ck_assert_int_eq(tu_marked(m, marked, 8), 3); /* 0, 1 (exec'd) and 2; zl's leader has no memory */
	/* the origin as taken; one whose pids may have wrapped round since; one of another PID
	 * namespace; one with a wider window than the truth (read through the listing) */
	struct reaper_origin os[4] = { o, o, o, o };
	os[1].forks = 0;
	os[2].pidns = 1;
	os[3].last_pid = o.last_pid > 1300 ? o.last_pid - 1000 : o.last_pid;
	for (int k = 0; k < 4; k++) {
		struct reaper_finder f[2] = { reaper_find_env(m), reaper_find_tree(0) };
		f[0].origin = &os[k];
		struct reaper_report *r = NULL;
		ck_assert_int_eq(reaper_scan(f, 1, &r), 0);
		ck_assert_msg(found(r, p, 4, 1) == 0xc, "origin %d: the marker found %#x of the four (want 0xc)", k,
			      found(r, p, 4, 1));
		ck_assert_msg(r->n == 2, "origin %d: %zu processes found, not 2 (a thread taken for a process?)", k, r->n);
		reaper_report_free(r);
		ck_assert_int_eq(reaper_scan(f, 2, &r), 0);
		ck_assert_msg(found(r, p, 4, 2) == 0xf && found(r, p, 4, 1) == 0xc,
			      "origin %d, with descent: by descent %#x, by the marker %#x", k, found(r, p, 4, 2),
			      found(r, p, 4, 1));
		reaper_report_free(r);
	}
	/* without an origin the marker finds all four */
	struct reaper_finder plain = reaper_find_env(m);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(&plain, 1, &r), 0);
	ck_assert_msg(found(r, p, 4, 1) == 0xf, "no origin: found %#x", found(r, p, 4, 1));
	reaper_report_free(r);
	for (int k = 0; k < 4; k++)
		ck_assert_int_eq(tu_kill_wait(&p[k]), 0);
}
END_TEST

int main(void)
{
	tu_unique_marker(suite_marker, sizeof suite_marker, "HARD_MEMBER", "suite");
	Suite *s = suite_create("hard_membership");
	TCase *tc = tcase_create("membership");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, zombie_leader_found_alive_and_killed);
	tcase_add_test(tc, run_zombie_leader_is_a_leak);
	tcase_add_test(tc, exec_loop_never_missed);
	tcase_add_test(tc, unreadable_environment_judged);
	tcase_add_test(tc, described_after_exec_in_the_scan_that_found_it);
	tcase_add_test(tc, origin_matches_what_started_since);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	/* "pidfd": the leftovers are not the reaper's children, which only a pidfd may signal
	 * (valgrind 3.19 has none); check-valgrind excludes this tag */
	tc = tcase_create("descriptors");
	tcase_set_tags(tc, "pidfd");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, more_leftovers_than_descriptors);
	tcase_add_test(tc, descriptor_exhaustion_is_reported);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, suite_marker);
	return tu_run_suite(s);
}
