/* SPDX-License-Identifier: MIT */
/* cgroup v2 tracking on real processes: the caller's cgroup found and a cgroup made below it;
 * a child started inside; members found in the cgroup and the cgroups below it through
 * setsid, double fork and env -i; a process whose main thread has exited found alive and
 * killed; waiting on cgroup.events; cgroup.kill; entering and leaving; a reap from inside the
 * cgroup; the marker scan outside the cgroup; kept and moved-in processes spared by the
 * freeze and cgroup.kill; a read-only cgroup2 mount. Root (CI) runs them all; for another
 * user without a writable cgroup2 they are not run, and counted so. */
#define _GNU_SOURCE
#include "testutil.h"

#include "reaper/reaper.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char cg[PATH_MAX];
static char marker[128];

/* A fresh cgroup below ours for each test (removed by the test). Root must have one. */
static int need_cgroup(void)
{
	int r = reaper_cgroup_usable(NULL);
	ck_assert_msg(r == 0, "uid %d without a usable cgroup2: %s", (int)geteuid(), strerror(-r));
	ck_assert_int_eq(reaper_cgroup_create(NULL, NULL, cg, sizeof cg), 0);
	return 1;
}

/* The tests run as root (who must have a cgroup2) and for a user with a delegated one. */
static int cgroup_tests_run;
static char cgroup_why[160];
#define tcase_add_cgroup_test(tc, tf) tu_add_test_if((tc), (tf), cgroup_tests_run, "a writable cgroup2", cgroup_why)

/* Remove the test's cgroup: nothing may be left in it. */
static void drop_cgroup(void)
{
	ck_assert_int_eq(reaper_cgroup_wait(cg, 60), 0);
	ck_assert_int_eq(reaper_cgroup_remove(cg), 0);
	ck_assert_int_eq(access(cg, F_OK), -1);
}

/* After a failed test too: whatever is left in its cgroup is killed, and the cgroup goes. */
static void teardown(void)
{
	if (!cg[0] || access(cg, F_OK) < 0)
		return;
	reaper_cgroup_kill(cg);
	reaper_cgroup_wait(cg, 60);
	reaper_cgroup_remove(cg);
}

static void sleep_forever(void)
{
	char *argv[] = { "sleep", "300", NULL };
	char *envp[] = { marker, NULL };
	execve("/bin/sleep", argv, envp);
	_exit(127);
}

/* In the child: a setsid double fork whose grandchild execs sleep with an environment of the
 * marker alone (it is outside any tree of the caller's), and a plain sleep in a cgroup below,
 * under env -i. Writes the two pids to wr. */
static void leave_family(int wr, const char *sub)
{
	pid_t pids[2];
	int p[2];
	if (pipe(p) < 0)
		_exit(2);
	pid_t mid = fork();
	if (mid == 0) {
		setsid();
		pid_t g = fork();
		if (g == 0)
			sleep_forever();
		if (write(p[1], &g, sizeof g) < 0)
			_exit(2);
		_exit(0);
	}
	if (read(p[0], &pids[0], sizeof pids[0]) != (ssize_t)sizeof pids[0] || waitpid(mid, NULL, 0) != mid)
		_exit(2);
	pid_t c = fork();
	if (c == 0) {
		if (reaper_cgroup_enter(sub, NULL, 0) < 0)
			_exit(3);
		char *argv[] = { "sleep", "300", NULL };
		char *envp[] = { NULL };
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	pids[1] = c;
	if (write(wr, pids, sizeof pids) != (ssize_t)sizeof pids)
		_exit(2);
}

START_TEST(current_create_enter_remove)
{
	if (!need_cgroup())
		return;
	char cur[PATH_MAX], prev[PATH_MAX], in[PATH_MAX], sub[PATH_MAX];
	ck_assert_int_eq(reaper_cgroup_current(cur, sizeof cur), 0);
	ck_assert_int_eq(reaper_cgroup_of(getpid(), in, sizeof in), 0);
	ck_assert_str_eq(in, cur);
	ck_assert_msg(!strncmp(cg, cur, strlen(cur)) && cg[strlen(cur)] == '/', "%s not below %s", cg, cur);
	ck_assert_int_eq(reaper_cgroup_create(cg, "sub", sub, sizeof sub), 0);
	ck_assert_int_eq(reaper_cgroup_create(cg, "sub", in, sizeof in), -EEXIST);
	ck_assert_int_eq(reaper_cgroup_create(cg, "a/b", in, sizeof in), -EINVAL);
	ck_assert_int_eq(reaper_cgroup_create(cg, "..", in, sizeof in), -EINVAL);
	ck_assert_int_eq(reaper_cgroup_create(cg, "x", in, 8), -ENAMETOOLONG);
	ck_assert_int_eq(reaper_cgroup_usable("/proc"), -ENOTDIR);
	ck_assert_int_eq(reaper_cgroup_populated(sub), 0);

	/* in and back out, the whole process */
	ck_assert_int_eq(reaper_cgroup_enter(sub, prev, sizeof prev), 0);
	ck_assert_str_eq(prev, cur);
	ck_assert_int_eq(reaper_cgroup_current(in, sizeof in), 0);
	ck_assert_str_eq(in, sub);
	/* the usual mount's way (no mountinfo) and mountinfo's (another pid's cgroup is found by
	 * it) name the same directory, below the root and at it */
	char via[PATH_MAX];
	ck_assert_int_eq(reaper_cgroup_of(getpid(), via, sizeof via), 0);
	ck_assert_str_eq(via, in);
	ck_assert_int_eq(reaper_cgroup_populated(cg), 1);
	/* the caller inside: nothing is killed */
	ck_assert_int_eq(reaper_cgroup_kill(cg), -EDEADLK);
	ck_assert_int_eq(reaper_cgroup_remove(cg), -EBUSY);
	ck_assert_int_eq(reaper_cgroup_enter(prev, NULL, 0), 0);
	ck_assert_int_eq(reaper_cgroup_current(in, sizeof in), 0);
	ck_assert_str_eq(in, cur);
	drop_cgroup(); /* removes sub too */
}
END_TEST

START_TEST(members_below_found_through_setsid_double_fork_and_env_i)
{
	if (!need_cgroup())
		return;
	char sub[PATH_MAX];
	ck_assert_int_eq(reaper_cgroup_create(cg, "inner", sub, sizeof sub), 0);
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t c = reaper_cgroup_fork(cg);
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		leave_family(p[1], sub);
		_exit(0);
	}
	pid_t pids[2];
	ck_assert_int_eq(read(p[0], pids, sizeof pids), (ssize_t)sizeof pids);
	close(p[0]);
	close(p[1]);
	int st;
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	ck_assert_int_eq(st, 0);
	uint64_t start[2] = { tu_start_time(pids[0]), tu_start_time(pids[1]) };

	pid_t *v;
	size_t n;
	ck_assert_int_eq(reaper_cgroup_procs(cg, &v, &n), 0);
	int seen = 0;
	for (size_t i = 0; i < n; i++) /* (cgroup.procs may list a pid twice: one moving as it is read) */
		seen |= (v[i] == pids[0]) | (v[i] == pids[1]) * 2;
	free(v);
	ck_assert_int_eq(seen, 3);
	ck_assert_int_eq(reaper_cgroup_populated(cg), 1);

	struct reaper_finder f = reaper_find_cgroup(cg);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
	ck_assert_int_eq((int)r->n, 2);
	for (size_t i = 0; i < r->n; i++) {
		ck_assert_uint_eq(r->procs[i].matched_by, 1u);
		ck_assert_int_eq(r->procs[i].fate, REAPER_ALIVE);
		char by[64];
		ck_assert_int_eq(reaper_matched_by(&f, 1, 1, by, sizeof by), 0);
		ck_assert_str_eq(by, "cgroup");
	}
	reaper_report_free(r);

	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0.05;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	ck_assert_int_eq((int)r->killed, 2);
	ck_assert_int_eq((int)r->leaks, 2);
	ck_assert_double_eq(r->marker_scan, 0);
	reaper_report_free(r);
	ck_assert_int_eq(tu_wait_gone(pids[0], start[0], 10), 0);
	ck_assert_int_eq(tu_wait_gone(pids[1], start[1], 10), 0);
	/* thawed again: a process entering later runs */
	char fz[PATH_MAX + 16], b[8] = "";
	snprintf(fz, sizeof fz, "%s/cgroup.freeze", cg);
	FILE *fp = fopen(fz, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(b, sizeof b, fp));
	fclose(fp);
	ck_assert_str_eq(b, "0\n");
	drop_cgroup();
}
END_TEST

static void *linger(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

START_TEST(zombie_leader_found_alive_and_killed)
{
	if (!need_cgroup())
		return;
	pid_t c = reaper_cgroup_fork(cg);
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		if (fork() == 0) { /* an orphan of ours: only the cgroup ties it to us */
			setsid();
			pthread_t t;
			if (pthread_create(&t, NULL, linger, NULL) != 0)
				_exit(2);
			pthread_exit(NULL);
		}
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	pid_t *v;
	size_t n;
	pid_t zl = 0;
	double t0 = tu_now();
	while (!zl && tu_now() - t0 < 10) {
		ck_assert_int_eq(reaper_cgroup_procs(cg, &v, &n), 0);
		if (n == 1 && tu_state(v[0]) == 'Z')
			zl = v[0];
		free(v);
		if (!zl)
			usleep(1000); /* the leader's exit is not an event we can wait for */
	}
	ck_assert_msg(zl, "no zombie leader showed up in the cgroup");
	uint64_t start = tu_start_time(zl);

	struct reaper_finder f = reaper_find_cgroup(cg);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
	ck_assert_int_eq((int)r->n, 1);
	ck_assert_int_eq(r->procs[0].pid, zl);
	ck_assert_int_eq(r->procs[0].fate, REAPER_ALIVE);
	ck_assert_int_eq((int)r->leaks, 1);
	reaper_report_free(r);

	struct reaper_opts o;
	reaper_opts_init(&o);
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	ck_assert_msg(r->n == 1 && r->procs[0].pid == zl && r->killed == 1, "%zu found, %zu killed, fate %s", r->n,
		      r->killed, r->n ? reaper_fate_name(r->procs[0].fate) : "-");
	reaper_report_free(r);
	ck_assert_int_eq(tu_wait_gone(zl, start, 10), 0);
	drop_cgroup();
}
END_TEST

START_TEST(wait_ends_on_cgroup_events)
{
	if (!need_cgroup())
		return;
	struct tu_proc lone = { 0 };
	pid_t c = reaper_cgroup_fork(cg);
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		char *argv[] = { "sleep", "0.3", NULL };
		execv("/bin/sleep", argv);
		_exit(127);
	}
	ck_assert_int_eq(tu_pin(&lone, c, 0), 0);
	ck_assert_int_eq(reaper_cgroup_populated(cg), 1);
	ck_assert_int_eq(reaper_cgroup_wait(cg, 0.01), -ETIMEDOUT);
	ck_assert_int_eq(reaper_cgroup_wait(cg, NAN), -EINVAL); /* not "no bound" */
	ck_assert_int_eq(reaper_cgroup_wait(cg, 1e12), 0);      /* a bound beyond poll's int */
	/* populated 0 came with its exit: it is a zombie of ours, or gone */
	ck_assert_int_ne(tu_alive(c, lone.start_time), 1);
	ck_assert_int_eq(tu_wait_exit(&lone), 0);

	/* cgroup.kill: one write ends all of it, forks and all */
	c = reaper_cgroup_fork(cg);
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		if (fork() == 0)
			sleep_forever();
		sleep_forever();
	}
	ck_assert_int_eq(tu_pin(&lone, c, 0), 0);
	ck_assert_int_eq(reaper_cgroup_freeze(cg, 1), 0);
	ck_assert_int_eq(reaper_cgroup_kill(cg), 0);
	ck_assert_int_eq(reaper_cgroup_wait(cg, 10), 0);
	int st = tu_wait_exit(&lone);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ck_assert_int_eq(reaper_cgroup_freeze(cg, 0), 0);
	drop_cgroup();
}
END_TEST

/* A reap called from inside the cgroup kills the members one by one, never itself. */
START_TEST(reap_from_inside_spares_the_caller)
{
	if (!need_cgroup())
		return;
	char prev[PATH_MAX];
	ck_assert_int_eq(reaper_cgroup_enter(cg, prev, sizeof prev), 0);
	struct tu_proc p;
	char *argv[] = { "/bin/sleep", "300", NULL };
	ck_assert_int_eq(tu_spawn(&p, argv, NULL, -1, -1), 0);
	struct reaper_finder f = reaper_find_cgroup(cg);
	struct reaper_report *r = NULL;
	struct reaper_opts o;
	reaper_opts_init(&o);
	int e = reaper_reap(&f, 1, &o, &r);
	ck_assert_int_eq(reaper_cgroup_enter(prev, NULL, 0), 0);
	ck_assert_int_eq(e, 0);
	ck_assert_int_eq((int)r->n, 1);
	ck_assert_int_eq(r->procs[0].pid, p.pid);
	ck_assert_int_eq(r->procs[0].fate, REAPER_KILLED);
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(p.pid, p.start_time), 0); /* collected: it was our child */
	tu_proc_close(&p);
	drop_cgroup();
}
END_TEST

/* The marker finder still runs, once, for what carries the marker outside the cgroup. */
START_TEST(marker_scan_finds_what_is_outside_the_cgroup)
{
	if (!need_cgroup())
		return;
	struct tu_proc out, in;
	char *argv[] = { "/bin/sleep", "300", NULL };
	char *envp[] = { marker, NULL };
	ck_assert_int_eq(tu_spawn(&out, argv, envp, -1, -1), 0);
	pid_t c = reaper_cgroup_fork(cg);
	ck_assert_int_ge(c, 0);
	if (c == 0)
		sleep_forever();
	ck_assert_int_eq(tu_pin(&in, c, 0), 0);
	struct reaper_finder f[2] = { reaper_find_cgroup(cg), reaper_find_env(marker) };
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0.05;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(f, 2, &o, &r), 0);
	for (size_t i = 0; r->n != 2 && i < r->n; i++)
		fprintf(stderr, "check_cgroup: found %d (%s, by %u, %s); out %d, in %d\n", (int)r->procs[i].pid,
			r->procs[i].cmdline, r->procs[i].matched_by, reaper_fate_name(r->procs[i].fate), (int)out.pid,
			(int)in.pid);
	/* each of the two exactly once, killed, found by what it is; (a loaded machine has shown a
	 * third entry once: it is printed above when it happens) */
	int seen_out = 0, seen_in = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (p->pid == out.pid && p->start_time == out.start_time) {
			seen_out++;
			ck_assert_uint_eq(p->matched_by, 2u);
			ck_assert_int_eq(p->fate, REAPER_KILLED);
		} else if (p->pid == in.pid && p->start_time == in.start_time) {
			seen_in++;
			ck_assert_uint_eq(p->matched_by, 3u);
			ck_assert_int_eq(p->fate, REAPER_KILLED);
		}
	}
	ck_assert_int_eq(seen_out, 1);
	ck_assert_int_eq(seen_in, 1);
	ck_assert(r->marker_scan > 0);
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(out.pid, out.start_time), 0);
	ck_assert_int_eq(tu_exists(in.pid, in.start_time), 0);
	tu_proc_close(&out);
	tu_proc_close(&in);
	drop_cgroup();
}
END_TEST

/* Put a process of ours (not yet in cg) into it, as a root COMMAND may write any pid. */
static void move_in(pid_t pid)
{
	char path[PATH_MAX + 16], v[24];
	snprintf(path, sizeof path, "%s/cgroup.procs", cg);
	snprintf(v, sizeof v, "%d", (int)pid);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_gt(fputs(v, f), -1);
	ck_assert_int_eq(fclose(f), 0);
}

/* An origin taken a clock tick after start_time: what started at start_time is older. */
static void origin_after(uint64_t start_time, struct reaper_origin *o)
{
	double t0 = tu_now();
	do {
		ck_assert_int_eq(reaper_origin_now(o), 0);
		if (o->start_time <= start_time)
			usleep(1000);
	} while (o->start_time <= start_time && tu_now() - t0 < 30);
	ck_assert_uint_gt(o->start_time, start_time);
}

/* The fate the report gives each of pids[0..n) (-1: not in it). */
static void fates_of(const struct reaper_report *r, const pid_t *pids, int *fates, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		fates[k] = -1;
		for (size_t i = 0; i < r->n; i++)
			if (r->procs[i].pid == pids[k])
				fates[k] = r->procs[i].fate;
	}
}

/* A child started in cg that ignores SIGTERM and sleeps (only SIGKILL ends it). */
static pid_t deaf_sleeper(void)
{
	pid_t c = reaper_cgroup_fork(cg);
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		signal(SIGTERM, SIG_IGN);
		char *argv[] = { "sleep", "302", NULL };
		char *envp[] = { marker, NULL };
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	return c;
}

/* The escalation freezes the cgroup and writes cgroup.kill; what the per-process rules spare
 * (a kept process, one older than the cgroup's since: moved in) leaves for the cgroup above
 * first and lives on. With kill_moved_in the moved-in one is ended like any other. */
START_TEST(kept_and_moved_in_survive_freeze_and_kill)
{
	if (!need_cgroup())
		return;
	struct tu_proc outsider, kept, deaf;
	char *old_argv[] = { "/bin/sleep", "300", NULL }, *keep_argv[] = { "/bin/sleep", "301", NULL };
	char *envp[] = { marker, NULL };
	ck_assert_int_eq(tu_spawn(&outsider, old_argv, envp, -1, -1), 0);
	/* the run begins a tick after the outsider did */
	struct reaper_origin o0;
	origin_after(outsider.start_time, &o0);
	pid_t k = reaper_cgroup_fork(cg);
	ck_assert_int_ge(k, 0);
	if (k == 0) {
		execve(keep_argv[0], keep_argv, envp);
		_exit(127);
	}
	ck_assert_int_eq(tu_pin(&kept, k, 0), 0);
	ck_assert_int_eq(tu_pin(&deaf, deaf_sleeper(), 0), 0);
	move_in(outsider.pid);

	struct reaper_finder f = reaper_find_cgroup(cg);
	f.since = o0.start_time;
	struct reaper_pattern keep = { REAPER_KEEP, "/bin/sleep 301" };
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0.05;
	o.grace = 0.05;
	o.patterns = &keep;
	o.npatterns = 1;
	/* the kept one must have exec'd for its cmdline to be judged */
	for (double t0 = tu_now(); tu_now() - t0 < 30;) {
		char path[64], b[64] = "";
		snprintf(path, sizeof path, "/proc/%d/cmdline", (int)k);
		FILE *fp = fopen(path, "r");
		size_t n = fp ? fread(b, 1, sizeof b - 1, fp) : 0;
		if (fp)
			fclose(fp);
		if (n > 10 && !strcmp(b + 11, "301"))
			break;
		usleep(1000);
	}
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	int fates[3];
	fates_of(r, (pid_t[]){ outsider.pid, kept.pid, deaf.pid }, fates, 3);
	ck_assert_msg(fates[0] == REAPER_MOVED_IN && fates[1] == REAPER_KEPT && fates[2] == REAPER_KILLED,
		      "outsider %s, kept %s, deaf %s", reaper_fate_name(fates[0]), reaper_fate_name(fates[1]),
		      reaper_fate_name(fates[2]));
	ck_assert_int_eq((int)r->leaks, 1);
	ck_assert_int_eq((int)r->moved_in, 1);
	ck_assert_int_eq((int)r->kept, 1);
	ck_assert_int_eq(r->escalated, 1);
	reaper_report_free(r);
	ck_assert_int_eq(tu_alive(kept.pid, kept.start_time), 1);
	ck_assert_int_eq(tu_alive(outsider.pid, outsider.start_time), 1);
	ck_assert_int_eq(tu_exists(deaf.pid, deaf.start_time), 0);
	ck_assert_int_eq(tu_kill_wait(&kept), 0);

	/* asked to: the moved-in one is ended too */
	move_in(outsider.pid);
	o.kill_moved_in = 1;
	o.npatterns = 0;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	ck_assert_msg(r->n == 1 && r->procs[0].pid == outsider.pid && r->procs[0].fate == REAPER_TERMINATED,
		      "%zu found, fate %s", r->n, r->n ? reaper_fate_name(r->procs[0].fate) : "-");
	ck_assert_int_eq((int)r->leaks, 1);
	reaper_report_free(r);
	ck_assert_int_eq(tu_exists(outsider.pid, outsider.start_time), 0);
	tu_proc_close(&outsider);
	tu_proc_close(&kept);
	tu_proc_close(&deaf);
	drop_cgroup();
}
END_TEST

/* What a moved-in process starts in the cgroup after it was moved in is its work, not the
 * run's (a /proc run would not find it): moved in as well, spared by the freeze and the
 * cgroup.kill, while the run's own deaf leftover is killed. */
START_TEST(moved_in_outsiders_child_is_moved_in)
{
	if (!need_cgroup())
		return;
	int go[2], back[2];
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(back), 0);
	pid_t o = fork();
	ck_assert_int_ge(o, 0);
	if (o == 0) { /* the outsider: forks a sleeper when told to, then waits */
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(10);
		pid_t g = fork();
		if (g == 0) {
			char *argv[] = { "sleep", "303", NULL };
			char *envp[] = { marker, NULL };
			execve("/bin/sleep", argv, envp);
			_exit(127);
		}
		if (write(back[1], &g, sizeof g) != (ssize_t)sizeof g)
			_exit(11);
		while (read(go[0], &c, 1) < 0)
			;
		_exit(0);
	}
	close(go[0]);
	close(back[1]);
	struct tu_proc outsider, child, deaf;
	ck_assert_int_eq(tu_pin(&outsider, o, 0), 0);
	struct reaper_origin o0;
	origin_after(outsider.start_time, &o0);
	ck_assert_int_eq(tu_pin(&deaf, deaf_sleeper(), 0), 0);
	move_in(o);
	ck_assert_int_eq(write(go[1], "f", 1), 1);
	pid_t g = 0;
	ck_assert_int_eq(read(back[0], &g, sizeof g), (ssize_t)sizeof g);
	ck_assert_int_eq(tu_pin(&child, g, 0), 0);

	struct reaper_finder f = reaper_find_cgroup(cg);
	f.since = o0.start_time;
	struct reaper_opts opts;
	reaper_opts_init(&opts);
	opts.timeout = 0.05;
	opts.grace = 0.05;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &opts, &r), 0);
	int fates[3];
	fates_of(r, (pid_t[]){ outsider.pid, child.pid, deaf.pid }, fates, 3);
	ck_assert_msg(fates[0] == REAPER_MOVED_IN && fates[1] == REAPER_MOVED_IN && fates[2] == REAPER_KILLED,
		      "outsider %s, its child %s, deaf %s", reaper_fate_name(fates[0]), reaper_fate_name(fates[1]),
		      reaper_fate_name(fates[2]));
	ck_assert_int_eq((int)r->leaks, 1);
	ck_assert_int_eq((int)r->moved_in, 2);
	reaper_report_free(r);
	ck_assert_int_eq(tu_alive(child.pid, child.start_time), 1);
	ck_assert_int_eq(tu_alive(outsider.pid, outsider.start_time), 1);
	ck_assert_int_eq(tu_exists(deaf.pid, deaf.start_time), 0);
	close(go[1]); /* the outsider exits; its child is killed (collected by whoever it passed to) */
	int st = tu_wait_exit(&outsider);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the outsider: status %#x", st);
	ck_assert_int_eq(tu_kill_wait(&child), 0);
	close(back[0]);
	tu_proc_close(&deaf);
	drop_cgroup();
}
END_TEST

/* The caller's ancestor moved into the cgroup is never a candidate, and the freeze and the
 * cgroup.kill do not reach it either: it leaves for the cgroup above first. */
START_TEST(callers_ancestor_in_the_cgroup_survives_freeze_and_kill)
{
	if (!need_cgroup())
		return;
	struct tu_proc deaf;
	ck_assert_int_eq(tu_pin(&deaf, deaf_sleeper(), 0), 0);
	int go[2];
	ck_assert_int_eq(pipe(go), 0);
	pid_t a = fork();
	ck_assert_int_ge(a, 0);
	if (a == 0) {
		pid_t b = fork();
		if (b == 0) { /* the caller: its parent is in the cgroup when it reaps */
			char c;
			if (read(go[0], &c, 1) != 1)
				_exit(10);
			struct reaper_finder f = reaper_find_cgroup(cg);
			struct reaper_opts o;
			reaper_opts_init(&o);
			o.timeout = 0.05;
			o.grace = 0.05;
			struct reaper_report *r = NULL;
			if (reaper_reap(&f, 1, &o, &r) < 0)
				_exit(11);
			int ok = r->n == 1 && r->procs[0].fate == REAPER_KILLED && r->escalated;
			reaper_report_free(r);
			_exit(ok ? 0 : 12);
		}
		int st = 0;
		if (b < 0 || waitpid(b, &st, 0) != b)
			_exit(13);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 14);
	}
	close(go[0]);
	move_in(a);
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	int st;
	ck_assert_int_eq(waitpid(a, &st, 0), a);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the caller's parent: status %#x", st);
	st = tu_wait_exit(&deaf); /* killed by the reap; our child to collect */
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the deaf sleeper: status %#x", st);
	tu_proc_close(&deaf);
	drop_cgroup();
}
END_TEST

/* Started by the escalation's first SIGTERM: a marked process outside the cgroup, as an
 * outside daemon starts one while the run is being ended. */
struct late_marked {
	struct tu_proc p;
	int started;
};

static void start_late_marked(void *ctx, int sig)
{
	struct late_marked *l = ctx;
	char *argv[] = { "/bin/sleep", "304", NULL };
	char *envp[] = { marker, NULL };
	if (sig == SIGTERM && !l->started && tu_spawn(&l->p, argv, envp, -1, -1) == 0)
		l->started = 1;
}

/* The marker scan runs again at the end of the grace wait: what an outside daemon started
 * with the run's marker after the timeout's scan is found and ended (a /proc run's rescans
 * find it), not left running. */
START_TEST(marked_process_started_during_the_grace_is_found)
{
	if (!need_cgroup())
		return;
	struct tu_proc deaf;
	ck_assert_int_eq(tu_pin(&deaf, deaf_sleeper(), 0), 0);
	struct late_marked late = { .started = 0 };
	struct reaper_finder f[2] = { reaper_find_cgroup(cg), reaper_find_env(marker) };
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0.05;
	o.grace = 0.2;
	o.on_escalate = start_late_marked;
	o.escalate_ctx = &late;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(f, 2, &o, &r), 0);
	ck_assert(late.started);
	int fate = -1;
	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].pid == late.p.pid && r->procs[i].start_time == late.p.start_time)
			fate = r->procs[i].fate;
	reaper_report_free(r);
	int alive = tu_alive(late.p.pid, late.p.start_time);
	if (alive)
		tu_kill_wait(&late.p);
	ck_assert_msg(fate == REAPER_TERMINATED || fate == REAPER_KILLED, "the late marked one: %s, %s",
		      fate < 0 ? "not found" : reaper_fate_name(fate), alive ? "left running" : "gone");
	ck_assert_int_eq(alive, 0);
	ck_assert_int_eq(tu_exists(deaf.pid, deaf.start_time), 0);
	tu_proc_close(&late.p);
	tu_proc_close(&deaf);
	drop_cgroup();
}
END_TEST

/* In a private mount namespace with the cgroup2 mount read-only: the cause is named. */
START_TEST(read_only_cgroup2_is_named)
{
	if (!need_cgroup())
		return;
	char cur[PATH_MAX];
	ck_assert_int_eq(reaper_cgroup_current(cur, sizeof cur), 0);
	pid_t c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(10);
		/* the mount that shows our cgroup: walk up from it to its mount point */
		char mnt[PATH_MAX];
		snprintf(mnt, sizeof mnt, "%s", cur);
		struct stat a, b;
		for (;;) {
			char up[PATH_MAX];
			snprintf(up, sizeof up, "%s", mnt);
			char *s = strrchr(up, '/');
			if (!s || s == up)
				break;
			*s = 0;
			if (stat(mnt, &a) < 0 || stat(up, &b) < 0 || a.st_dev != b.st_dev)
				break;
			snprintf(mnt, sizeof mnt, "%s", up);
		}
		if (mount("none", mnt, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			_exit(11);
		char buf[PATH_MAX];
		if (reaper_cgroup_usable(NULL) != -EROFS)
			_exit(12);
		if (reaper_cgroup_create(NULL, NULL, buf, sizeof buf) != -EROFS)
			_exit(13);
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "read-only check failed at step %d", WEXITSTATUS(st));
	drop_cgroup();
}
END_TEST

/* Out of descriptors (a reaper that ran out of them cleans up last): an empty cgroup with
 * none below it is still removed. */
START_TEST(remove_needs_no_descriptor)
{
	if (!need_cgroup())
		return;
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open("/", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(100);
		close(fd); /* the lowest free descriptor: none at or above the limit can be had */
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = (rlim_t)fd; /* (valgrind lets the soft limit alone be lowered) */
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || open("/", O_RDONLY) >= 0)
			_exit(101);
		_exit(-reaper_cgroup_remove(cg));
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "remove out of descriptors: status %#x (%s)", st,
		      WIFEXITED(st) ? strerror(WEXITSTATUS(st)) : "signal");
	ck_assert_int_eq(access(cg, F_OK), -1);
}
END_TEST

/* 1 when readdir of dir gives name b after name a. */
static int listed_after(const char *dir, const char *a, const char *b)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int seen_a = 0, after = 0;
	for (struct dirent *e; (e = readdir(d));) {
		seen_a |= !strcmp(e->d_name, a);
		if (!strcmp(e->d_name, b))
			after = seen_a;
	}
	closedir(d);
	return after;
}

#define CHAIN 2000
#define BRANCH_AT 1000
#define BRANCH 40
#define CHAIN_FDS 64

/* n nested cgroups below the one dfd names, the first called first, the others name (relative
 * steps: a deep chain's path is longer than PATH_MAX); a descriptor of the deepest. */
static int chain_below(int dfd, const char *first, const char *name, int n)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < n; i++) {
		const char *step = i ? name : first;
		ck_assert_int_eq(mkdirat(fd, step, 0755), 0);
		int next = openat(fd, step, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
	}
	return fd;
}

/* The walks of a cgroup tree in a child allowed CHAIN_FDS descriptors: the member in the
 * sibling listed, the cgroup killed, then removed bottom-up. The failing step, or 0. */
static int walk_with_few_descriptors(pid_t member, pid_t deep)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	rl.rlim_cur = CHAIN_FDS;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	pid_t *v;
	size_t n;
	int r = reaper_cgroup_procs(cg, &v, &n), found = 0;
	if (r < 0) {
		fprintf(stderr, "reaper_cgroup_procs: %s\n", strerror(-r));
		return 2;
	}
	for (size_t i = 0; i < n; i++)
		found |= (v[i] == member) | (v[i] == deep) * 2;
	free(v);
	if (found != 3)
		return 3;
	if ((r = reaper_cgroup_kill(cg)) < 0 || (r = reaper_cgroup_wait(cg, 60)) < 0) {
		fprintf(stderr, "kill: %s\n", strerror(-r));
		return 4;
	}
	if ((r = reaper_cgroup_remove(cg)) < 0) {
		fprintf(stderr, "reaper_cgroup_remove: %s\n", strerror(-r));
		return 5;
	}
	return 0;
}

/* A chain of empty cgroups far deeper than the descriptors a process may hold, with a branch
 * deep down holding a process at its end, and a sibling the kernel lists after the chain,
 * holding another: the walk reaches both, and the removal goes to the bottom of the chain and
 * back up. */
START_TEST(deep_chain_walked_with_few_descriptors)
{
	if (!need_cgroup())
		return;
	int top = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(top, 0);
	int mid = chain_below(top, "chain", "c", BRANCH_AT);
	close(chain_below(mid, "c", "c", CHAIN - BRANCH_AT));
	close(chain_below(mid, "b", "b", BRANCH));
	close(mid);
	close(top);
	char deep_cg[PATH_MAX], sib[PATH_MAX], name[32];
	size_t at = (size_t)snprintf(deep_cg, sizeof deep_cg, "%s/chain", cg);
	for (int i = 1; i < BRANCH_AT; i++)
		at += (size_t)snprintf(deep_cg + at, sizeof deep_cg - at, "/c");
	for (int i = 0; i < BRANCH; i++)
		at += (size_t)snprintf(deep_cg + at, sizeof deep_cg - at, "/b");
	ck_assert_int_lt(at, sizeof deep_cg);
	for (int i = 0;; i++) {
		ck_assert_int_lt(i, 1000);
		snprintf(name, sizeof name, "sibling%d", i);
		ck_assert_int_eq(reaper_cgroup_create(cg, name, sib, sizeof sib), 0);
		if (listed_after(cg, "chain", name))
			break;
		ck_assert_int_eq(rmdir(sib), 0);
	}
	pid_t member = reaper_cgroup_fork(sib);
	ck_assert_int_ge(member, 0);
	if (member == 0)
		sleep_forever();
	pid_t deep = reaper_cgroup_fork(deep_cg);
	ck_assert_int_ge(deep, 0);
	if (deep == 0)
		sleep_forever();
	pid_t walker = fork();
	ck_assert_int_ge(walker, 0);
	if (walker == 0)
		_exit(walk_with_few_descriptors(member, deep));
	int st;
	ck_assert_int_eq(waitpid(walker, &st, 0), walker);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the walk with %d descriptors failed: status %#x",
		      CHAIN_FDS, st);
	ck_assert_int_eq(waitpid(member, &st, 0), member);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the member in the sibling was not killed");
	ck_assert_int_eq(waitpid(deep, &st, 0), deep);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the member deep in the branch was not killed");
	ck_assert_int_eq(access(cg, F_OK), -1);
}
END_TEST

/* In a child allowed lim descriptors: a scan of the cgroup that holds member. 0 when it found
 * the member, failed, or said it is incomplete; 1 when it found nothing and said it was whole. */
static int scan_with_descriptors(rlim_t lim, pid_t member)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 2;
	rl.rlim_cur = lim; /* (valgrind lets the soft limit alone be lowered) */
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 2;
	struct reaper_finder f = reaper_find_cgroup(cg);
	struct reaper_report *r = NULL;
	if (reaper_scan(&f, 1, &r) < 0)
		return 0;
	int found = 0;
	for (size_t i = 0; i < r->n; i++)
		found |= r->procs[i].pid == member;
	int silent = !found && !r->incomplete;
	reaper_report_free(r);
	return silent;
}

/* A cgroup listing that fails for want of descriptors is a scan that is not whole: with each
 * limit from the lowest that lets a scan start, the member is found or the report says it
 * may not be all there is (never an empty report that claims to be whole). */
START_TEST(cgroup_listing_short_of_descriptors_is_incomplete)
{
	if (!need_cgroup())
		return;
	pid_t member = reaper_cgroup_fork(cg);
	ck_assert_int_ge(member, 0);
	if (member == 0)
		sleep_forever();
	int fd = open("/", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (int extra = 0; extra < 16; extra++) {
		pid_t scanner = fork();
		ck_assert_int_ge(scanner, 0);
		if (scanner == 0)
			_exit(scan_with_descriptors((rlim_t)(fd + extra), member));
		int st;
		ck_assert_int_eq(waitpid(scanner, &st, 0), scanner);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "a scan with %d descriptors found nothing and called itself whole (status %#x)",
			      fd + extra, st);
	}
	ck_assert_int_eq(reaper_cgroup_kill(cg), 0);
	int st;
	ck_assert_int_eq(waitpid(member, &st, 0), member);
	drop_cgroup();
}
END_TEST

/* In a child: enter a, fork one child that stays in a and one that enters c; each says
 * (index, pid) once it is where it stays; hold until hold closes, collect both, exit. */
static void family_in(const char *a, const char *c, int wr, int hold)
{
	char ch;
	if (reaper_cgroup_enter(a, NULL, 0) < 0)
		_exit(3);
	for (int i = 0; i < 3; i++) {
		pid_t p = i ? fork() : 0;
		if (p > 0)
			continue;
		if (i == 2 && reaper_cgroup_enter(c, NULL, 0) < 0)
			_exit(3);
		pid_t said[2] = { i, getpid() };
		if (write(wr, said, sizeof said) != (ssize_t)sizeof said)
			_exit(2);
		if (i == 0)
			continue;
		while (read(hold, &ch, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	while (read(hold, &ch, 1) < 0 && errno == EINTR)
		;
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

START_TEST(move_by_identity_with_what_it_forked)
{
	if (!need_cgroup())
		return;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], at[PATH_MAX], cur[PATH_MAX];
	ck_assert_int_eq(reaper_cgroup_create(cg, "a", a, sizeof a), 0);
	ck_assert_int_eq(reaper_cgroup_create(cg, "b", b, sizeof b), 0);
	ck_assert_int_eq(reaper_cgroup_create(cg, "c", c, sizeof c), 0);
	int rep[2], hold[2];
	ck_assert_int_eq(pipe(rep), 0);
	ck_assert_int_eq(pipe(hold), 0);
	pid_t x = fork();
	ck_assert_int_ge(x, 0);
	if (x == 0) {
		close(rep[0]);
		close(hold[1]);
		signal(SIGTERM, SIG_DFL);
		family_in(a, c, rep[1], hold[0]);
	}
	close(rep[1]);
	close(hold[0]);
	pid_t pids[3];
	for (int i = 0; i < 3; i++) {
		pid_t said[2];
		ck_assert_int_eq(read(rep[0], said, sizeof said), (ssize_t)sizeof said);
		ck_assert(said[0] >= 0 && said[0] < 3);
		pids[said[0]] = said[1];
	}
	close(rep[0]);
	ck_assert_int_eq(pids[0], x);
	struct reaper_ident id = { x, tu_start_time(x) }, other = { x, id.start_time + 1 };
	ck_assert_int_eq(reaper_cgroup_of(0, at, sizeof at), 0);
	ck_assert_int_eq(reaper_cgroup_current(cur, sizeof cur), 0);
	ck_assert_str_eq(at, cur);
	ck_assert_int_eq(reaper_cgroup_of(pids[1], at, sizeof at), 0);
	ck_assert_str_eq(at, a);
	/* another start time: nothing moves */
	ck_assert_int_eq(reaper_cgroup_move(b, &other), -ESRCH);
	ck_assert_int_eq(reaper_cgroup_move_tree(b, &other, (const char *const[]){ a }, 1), -ESRCH);
	ck_assert_int_eq(reaper_cgroup_of(x, at, sizeof at), 0);
	ck_assert_str_eq(at, a);
	/* x and what it forked in a go to b; its child in c stays there */
	ck_assert_int_eq(reaper_cgroup_move_tree(b, &id, (const char *const[]){ a, cur }, 2), 2);
	ck_assert_int_eq(reaper_cgroup_of(x, at, sizeof at), 0);
	ck_assert_str_eq(at, b);
	ck_assert_int_eq(reaper_cgroup_of(pids[1], at, sizeof at), 0);
	ck_assert_str_eq(at, b);
	ck_assert_int_eq(reaper_cgroup_of(pids[2], at, sizeof at), 0);
	ck_assert_str_eq(at, c);
	ck_assert_int_eq(reaper_cgroup_populated(a), 0);
	/* one alone */
	struct reaper_ident z = { pids[2], tu_start_time(pids[2]) };
	ck_assert_int_eq(reaper_cgroup_move(a, &z), 0);
	ck_assert_int_eq(reaper_cgroup_of(pids[2], at, sizeof at), 0);
	ck_assert_str_eq(at, a);
	close(hold[1]);
	int st;
	ck_assert_int_eq(waitpid(x, &st, 0), x);
	ck_assert_int_eq(reaper_cgroup_of(x, at, sizeof at), -ESRCH);
	ck_assert_int_eq(reaper_cgroup_move(b, &id), -ESRCH);
	drop_cgroup();
}
END_TEST

int main(void)
{
	tu_unique_marker(marker, sizeof marker, "CGROUP_TEST", "cg");
	int r = reaper_cgroup_usable(NULL);
	cgroup_tests_run = r == 0 || geteuid() == 0;
	snprintf(cgroup_why, sizeof cgroup_why, "no writable cgroup2 for uid %d (%s)", (int)geteuid(), strerror(-r));
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("cgroup");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_cgroup_test(tc, current_create_enter_remove);
	tcase_add_cgroup_test(tc, read_only_cgroup2_is_named);
	tcase_add_cgroup_test(tc, remove_needs_no_descriptor);
	suite_add_tcase(s, tc);
	/* they pin and kill processes that are not the caller's children */
	tc = tcase_create("cgroup-processes");
	tcase_set_tags(tc, "pidfd");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_cgroup_test(tc, members_below_found_through_setsid_double_fork_and_env_i);
	tcase_add_cgroup_test(tc, zombie_leader_found_alive_and_killed);
	tcase_add_cgroup_test(tc, wait_ends_on_cgroup_events);
	tcase_add_cgroup_test(tc, reap_from_inside_spares_the_caller);
	tcase_add_cgroup_test(tc, marker_scan_finds_what_is_outside_the_cgroup);
	tcase_add_cgroup_test(tc, marked_process_started_during_the_grace_is_found);
	tcase_add_cgroup_test(tc, kept_and_moved_in_survive_freeze_and_kill);
	tcase_add_cgroup_test(tc, moved_in_outsiders_child_is_moved_in);
	tcase_add_cgroup_test(tc, callers_ancestor_in_the_cgroup_survives_freeze_and_kill);
	tcase_add_cgroup_test(tc, deep_chain_walked_with_few_descriptors);
	tcase_add_cgroup_test(tc, cgroup_listing_short_of_descriptors_is_incomplete);
	tcase_add_cgroup_test(tc, move_by_identity_with_what_it_forked);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, marker);
	return tu_run_suite(s);
}
