/* SPDX-License-Identifier: MIT */
/* check_kin: the calls a harness follows its own processes with (reaper.h, "processes by
 * identity"), on real processes: a pid's stat and children, the trees below several roots,
 * one identity signalled or collected, and the orphan collector that takes the zombies of
 * adopted orphans and never a child the caller started. Every process here is forked by the
 * test and ends when its hold pipe closes. */
#define _GNU_SOURCE
#include "reaper/reaper.h"
#include "tests/testutil.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BOUND 30.0 /* seconds any condition below may take on a loaded machine */

/* Processes that hold until hold[1] is closed: a chain of depth of them (each the child of
 * the one before), the first forked by the caller; each writes its pid into pids (first
 * first), and at the end waits for its child before it exits, so the chain is gone once the
 * first is collected. setsid_first: the first starts a session of its own. The first's pid. */
static pid_t chain(int hold[2], int depth, int setsid_first, pid_t *pids)
{
	int rep[2];
	ck_assert_int_eq(pipe(rep), 0);
	pid_t first = fork();
	ck_assert_int_ge(first, 0);
	if (first == 0) {
		close(rep[0]);
		close(hold[1]);
		/* the Check runner's handlers are not theirs: a signal ends them */
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		if (setsid_first)
			setsid();
		for (int level = 0; level < depth; level++) {
			pid_t me = getpid();
			if (write(rep[1], &me, sizeof me) != sizeof me)
				_exit(2);
			if (level + 1 < depth && fork() != 0)
				break; /* the parent holds; the child goes one level down */
		}
		close(rep[1]);
		char c;
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		while (wait(NULL) > 0 || errno == EINTR)
			;
		_exit(0);
	}
	close(rep[1]);
	for (int i = 0; i < depth; i++)
		ck_assert_int_eq(read(rep[0], &pids[i], sizeof *pids), (ssize_t)sizeof *pids);
	close(rep[0]);
	return first;
}

static struct reaper_ident ident(pid_t pid)
{
	return (struct reaper_ident){ pid, tu_start_time(pid) };
}

/* Until pid is a zombie (or gone when start is 0 at the end). */
static void await_state(pid_t pid, char want)
{
	double end = tu_now() + BOUND;
	while (tu_state(pid) != want && tu_now() < end)
		usleep(2000);
	ck_assert_int_eq(tu_state(pid), want);
}

/* Close hold (every chain on it ends), collect first (a child of ours), and see each of
 * pids gone. */
static void end_chain(int hold[2], pid_t first, const pid_t *pids, const uint64_t *starts, int n)
{
	int status;
	close(hold[1]);
	close(hold[0]);
	if (first > 0)
		ck_assert_int_eq(waitpid(first, &status, 0), first);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(tu_wait_gone(pids[i], starts[i], BOUND), 0);
}

static int find(const struct reaper_pstat *v, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (v[i].pid == pid)
			return i;
	return -1;
}

START_TEST(pstat_reads_self_and_a_child)
{
	int hold[2];
	pid_t p;
	ck_assert_int_eq(pipe(hold), 0);
	chain(hold, 1, 0, &p);
	struct reaper_pstat ps;
	ck_assert_int_eq(reaper_pstat(p, &ps), 0);
	ck_assert_int_eq(ps.pid, p);
	ck_assert_int_eq(ps.ppid, getpid());
	ck_assert_int_eq(ps.session, getsid(0));
	ck_assert_uint_eq(ps.start_time, tu_start_time(p));
	ck_assert(ps.state == 'S' || ps.state == 'R');
	ck_assert_int_eq(reaper_pstat(0, &ps), 0);
	ck_assert_int_eq(ps.pid, getpid());
	ck_assert_int_eq(ps.ppid, getppid());
	close(hold[1]);
	int status;
	ck_assert_int_eq(waitpid(p, &status, 0), p);
	ck_assert_int_eq(reaper_pstat(p, &ps), -ESRCH);
	ck_assert_int_eq(reaper_pstat(-1, &ps), -EINVAL);
}
END_TEST

struct forker {
	int *hold;
	int go[2], stop[2];
	pid_t child;
};

/* A thread that forks a child and stays until told to go: meanwhile its child is listed in
 * its own task/T/children only. */
static void *fork_from_thread(void *arg)
{
	struct forker *f = arg;
	char c = 0;
	chain(f->hold, 1, 0, &f->child);
	if (write(f->go[1], &c, 1) != 1)
		return NULL;
	while (read(f->stop[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

START_TEST(children_of_every_thread_zombies_included)
{
	int hold[2];
	ck_assert_int_eq(pipe(hold), 0);
	pid_t a, z = fork();
	ck_assert_int_ge(z, 0);
	if (z == 0)
		_exit(3);
	chain(hold, 1, 0, &a);
	struct forker f = { .hold = hold };
	ck_assert_int_eq(pipe(f.go), 0);
	ck_assert_int_eq(pipe(f.stop), 0);
	pthread_t t;
	char c;
	ck_assert_int_eq(pthread_create(&t, NULL, fork_from_thread, &f), 0);
	ck_assert_int_eq(read(f.go[0], &c, 1), 1);
	await_state(z, 'Z');
	struct reaper_pstat v[8];
	int n = reaper_children(0, v, 8);
	ck_assert_int_eq(n, 3);
	ck_assert_int_ge(find(v, n, a), 0);
	ck_assert_int_ge(find(v, n, f.child), 0);
	int zi = find(v, n, z);
	ck_assert_int_ge(zi, 0);
	ck_assert_int_eq(v[zi].state, 'Z');
	ck_assert_int_eq(v[zi].ppid, getpid());
	ck_assert_uint_eq(v[zi].start_time, tu_start_time(z));
	/* room for one: the count of all, and one written */
	memset(v, 0, sizeof v);
	ck_assert_int_eq(reaper_children(getpid(), v, 1), 3);
	ck_assert_int_gt(v[0].pid, 0);
	ck_assert_int_eq(v[1].pid, 0);
	ck_assert_int_eq(reaper_children(0, NULL, 0), 3);
	ck_assert_int_eq(reaper_children(0, NULL, 1), -EINVAL);
	ck_assert_int_eq(write(f.stop[1], &c, 1), 1);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	int status;
	ck_assert_int_eq(waitpid(z, &status, 0), z);
	close(hold[1]);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	ck_assert_int_eq(waitpid(f.child, &status, 0), f.child);
	ck_assert_int_eq(reaper_children(0, v, 8), 0);
}
END_TEST

START_TEST(children_of_another_process)
{
	int hold[2];
	pid_t p[3];
	ck_assert_int_eq(pipe(hold), 0);
	chain(hold, 3, 0, p);
	uint64_t starts[3] = { tu_start_time(p[0]), tu_start_time(p[1]), tu_start_time(p[2]) };
	struct reaper_pstat v[4];
	ck_assert_int_eq(reaper_children(p[0], v, 4), 1);
	ck_assert_int_eq(v[0].pid, p[1]);
	ck_assert_int_eq(v[0].ppid, p[0]);
	ck_assert_int_eq(reaper_children(p[2], v, 4), 0);
	end_chain(hold, p[0], p, starts, 3);
	ck_assert_int_eq(reaper_children(p[0], v, 4), -ESRCH);
}
END_TEST

START_TEST(descendants_of_several_roots_each_once)
{
	int hold[2];
	pid_t a[3], d;
	ck_assert_int_eq(pipe(hold), 0);
	chain(hold, 3, 0, a);
	chain(hold, 1, 1, &d);
	uint64_t starts[4] = { tu_start_time(a[0]), tu_start_time(a[1]), tu_start_time(a[2]), tu_start_time(d) };
	/* a[1] lies in a[0]'s tree; the last root names a[0]'s pid with another start time */
	struct reaper_ident roots[4] = { ident(a[1]), ident(a[0]), ident(d), { a[0], starts[0] + 1 } };
	struct reaper_pstat v[8];
	int n = reaper_descendants(roots, 4, v, 8);
	ck_assert_int_eq(n, 4);
	int i0 = find(v, n, a[0]), i1 = find(v, n, a[1]), i2 = find(v, n, a[2]), id = find(v, n, d);
	ck_assert(i0 >= 0 && i1 >= 0 && i2 >= 0 && id >= 0);
	ck_assert_int_lt(i1, i2); /* a parent before its children */
	ck_assert_int_eq(v[i2].ppid, a[1]);
	ck_assert_uint_eq(v[i2].start_time, starts[2]);
	ck_assert_int_eq(v[id].session, d);
	/* cap: the count, cap written */
	memset(v, 0, sizeof v);
	ck_assert_int_eq(reaper_descendants(roots, 4, v, 2), 4);
	ck_assert_int_gt(v[1].pid, 0);
	ck_assert_int_eq(v[2].pid, 0);
	/* no root that is still its process: nothing */
	ck_assert_int_eq(reaper_descendants(roots + 3, 1, v, 8), 0);
	ck_assert_int_eq(reaper_descendants(NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(reaper_descendants(NULL, 1, v, 8), -EINVAL);
	pid_t all[4] = { a[0], a[1], a[2], d };
	int status;
	ck_assert_int_eq(tu_alive(d, starts[3]), 1);
	end_chain(hold, a[0], all, starts, 3);
	ck_assert_int_eq(waitpid(d, &status, 0), d);
}
END_TEST

START_TEST(descendants_not_through_a_parent_gone)
{
	int hold[2];
	pid_t p[3];
	ck_assert_int_eq(pipe(hold), 0);
	ck_assert_int_eq(reaper_adopt(), 1);
	chain(hold, 3, 0, p);
	uint64_t starts[3] = { tu_start_time(p[0]), tu_start_time(p[1]), tu_start_time(p[2]) };
	struct reaper_ident root = ident(p[0]);
	struct reaper_pstat v[8];
	ck_assert_int_eq(reaper_descendants(&root, 1, v, 8), 3);
	/* p[1] killed: p[2], its child, is adopted by the test process (a subreaper), out of
	 * p[0]'s tree */
	struct reaper_ident mid = ident(p[1]);
	ck_assert_int_eq(reaper_signal(&mid, SIGKILL), 0);
	await_state(p[1], 'Z');
	/* p[0] holds in its read and never collects p[1], whose zombie keeps its pid; p[2] was
	 * reparented at p[1]'s exit */
	struct reaper_pstat ps;
	ck_assert_int_eq(reaper_pstat(p[2], &ps), 0);
	ck_assert_int_eq(ps.ppid, getpid());
	int n = reaper_descendants(&root, 1, v, 8);
	ck_assert_int_eq(n, 2); /* p[0] and the zombie p[1] */
	ck_assert_int_lt(find(v, n, p[2]), 0);
	ck_assert_int_eq(v[find(v, n, p[1])].state, 'Z');
	int status;
	end_chain(hold, p[2], p + 2, starts + 2, 1);
	/* p[0] collects p[1]'s zombie on its way out */
	ck_assert_int_eq(waitpid(p[0], &status, 0), p[0]);
	ck_assert_int_eq(tu_wait_gone(p[1], starts[1], BOUND), 0);
	ck_assert_int_eq(reaper_release(), 0);
}
END_TEST

START_TEST(signal_only_the_identity)
{
	int hold[2];
	pid_t p;
	ck_assert_int_eq(pipe(hold), 0);
	chain(hold, 1, 0, &p);
	struct reaper_ident id = ident(p), other = { p, id.start_time + 1 };
	ck_assert_int_eq(reaper_signal(&other, SIGKILL), -ESRCH);
	ck_assert_int_eq(tu_alive(p, id.start_time), 1);
	ck_assert_int_eq(reaper_signal(&id, 0), 0);
	ck_assert_int_eq(reaper_signal(&id, -1), -EINVAL);
	ck_assert_int_eq(reaper_signal(&id, SIGKILL), 0);
	int status;
	ck_assert_int_eq(waitpid(p, &status, 0), p);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(reaper_signal(&id, 0), -ESRCH);
	close(hold[1]);
	close(hold[0]);
}
END_TEST

START_TEST(collect_one_identity)
{
	int hold[2];
	pid_t p[2];
	ck_assert_int_eq(pipe(hold), 0);
	chain(hold, 2, 0, p);
	uint64_t starts[2] = { tu_start_time(p[0]), tu_start_time(p[1]) };
	struct reaper_ident id = { p[0], starts[0] }, grand = { p[1], starts[1] }, other = { p[0], starts[0] + 1 };
	ck_assert_int_eq(reaper_collect(&id, NULL), 0); /* running */
	ck_assert_int_eq(reaper_collect(&grand, NULL), -ECHILD);
	ck_assert_int_eq(reaper_signal(&id, SIGTERM), 0);
	await_state(p[0], 'Z');
	ck_assert_int_eq(reaper_collect(&other, NULL), -ESRCH);
	ck_assert_int_eq(tu_state(p[0]), 'Z'); /* still there for its owner */
	int status = 0;
	ck_assert_int_eq(reaper_collect(&id, &status), 1);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	ck_assert_int_eq(reaper_collect(&id, &status), -ESRCH);
	ck_assert_int_eq(waitpid(p[0], &status, WNOHANG), -1);
	/* p[1], reparented away from p[0], is not ours to wait for */
	close(hold[1]);
	close(hold[0]);
	ck_assert_int_eq(tu_wait_gone(p[1], starts[1], BOUND), 0);
}
END_TEST

/* The orphan collector's looks, until pid is no zombie of ours any more or BOUND passes. */
static int look_until_collected(struct reaper_orphans *o, pid_t pid, const struct reaper_ident *own, size_t nown)
{
	int total = 0;
	double end = tu_now() + BOUND;
	while (tu_state(pid) == 'Z' && tu_now() < end) {
		int r = reaper_orphans_collect(o, own, nown);
		ck_assert_int_ge(r, 0);
		total += r;
		usleep(2000);
	}
	return total;
}

/* A child of the caller's that exits with code at once: its pid, once it is a zombie. */
static pid_t zombie_child(int code)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(code);
	await_state(pid, 'Z');
	return pid;
}

START_TEST(orphans_collected_own_children_left)
{
	struct reaper_orphans *o;
	ck_assert_int_eq(reaper_adopt(), 1);
	ck_assert_int_eq(reaper_orphans_open(&o), 0);
	int hold[2];
	ck_assert_int_eq(pipe(hold), 0);

	/* 1. a child of ours in our session (what C code below a harness starts): exits, and its
	 * zombie stays for its owner through every look */
	pid_t mine = zombie_child(5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(reaper_orphans_collect(o, NULL, 0), 0);
	ck_assert_int_eq(tu_state(mine), 'Z');
	int status;
	ck_assert_int_eq(waitpid(mine, &status, 0), mine);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 5);

	/* 2. an orphan in our session: seen running below a child of ours, adopted when that
	 * child exits, collected once it dies */
	pid_t p[2];
	chain(hold, 2, 0, p);
	struct reaper_ident top = ident(p[0]), orphan = ident(p[1]);
	ck_assert_int_eq(reaper_orphans_collect(o, NULL, 0), 0); /* notes p[1] below p[0] */
	ck_assert_int_eq(reaper_signal(&top, SIGKILL), 0);
	ck_assert_int_eq(waitpid(p[0], &status, 0), p[0]);
	struct reaper_pstat ps;
	double end = tu_now() + BOUND;
	while (reaper_pstat(p[1], &ps) == 0 && ps.ppid != getpid() && tu_now() < end)
		usleep(2000);
	ck_assert_int_eq(ps.ppid, getpid());
	ck_assert_int_eq(reaper_signal(&orphan, SIGKILL), 0);
	await_state(p[1], 'Z');
	ck_assert_int_eq(look_until_collected(o, p[1], NULL, 0), 1);
	ck_assert_int_eq(tu_exists(p[1], orphan.start_time), 0);

	/* 3. a child that made a session of its own (what subprocess's start_new_session does):
	 * it leads its session, and may be a child we started: left for its owner */
	pid_t leader;
	chain(hold, 1, 1, &leader);
	struct reaper_ident lid = ident(leader);
	ck_assert_int_eq(reaper_signal(&lid, SIGKILL), 0);
	await_state(leader, 'Z');
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(reaper_orphans_collect(o, NULL, 0), 0);
	ck_assert_int_eq(waitpid(leader, &status, 0), leader);

	/* 4. a daemon's orphan (its session's leader gone, never seen below anything: no look
	 * ran while it was): in another session than ours and not its own leader, collected; 5.
	 * the same, but listed as one of our own: left */
	pid_t d1[2], d2[2];
	chain(hold, 2, 1, d1);
	chain(hold, 2, 1, d2);
	struct reaper_ident l1 = ident(d1[0]), l2 = ident(d2[0]), o1 = ident(d1[1]), o2 = ident(d2[1]);
	ck_assert_int_eq(reaper_signal(&l1, SIGKILL), 0);
	ck_assert_int_eq(reaper_signal(&l2, SIGKILL), 0);
	ck_assert_int_eq(waitpid(d1[0], &status, 0), d1[0]);
	ck_assert_int_eq(waitpid(d2[0], &status, 0), d2[0]);
	ck_assert_int_eq(reaper_signal(&o1, SIGKILL), 0);
	ck_assert_int_eq(reaper_signal(&o2, SIGKILL), 0);
	await_state(d1[1], 'Z');
	await_state(d2[1], 'Z');
	ck_assert_int_eq(look_until_collected(o, d1[1], &o2, 1), 1);
	ck_assert_int_eq(tu_state(d2[1]), 'Z');
	ck_assert_int_eq(reaper_orphans_collect(o, &o2, 1), 0);
	ck_assert_int_eq(waitpid(d2[1], &status, 0), d2[1]);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	ck_assert_int_eq(reaper_orphans_collect(NULL, NULL, 0), -EINVAL);
	ck_assert_int_eq(reaper_orphans_collect(o, NULL, 1), -EINVAL);
	reaper_orphans_close(o);
	reaper_orphans_close(NULL);
	close(hold[1]);
	close(hold[0]);
	ck_assert_int_eq(tu_zombie_children(), 0);
	ck_assert_int_eq(reaper_release(), 0);
}
END_TEST

/* The same collection in libreaper's own thread: a daemon's orphan collected without a call of
 * ours, a zombie child of ours in our session left for us; one thread per process. */
START_TEST(orphans_collected_by_a_thread_of_the_library)
{
	ck_assert_int_eq(reaper_adopt(), 1);
	ck_assert_int_eq(reaper_orphans_start(0), -EINVAL);
	ck_assert_int_eq(reaper_orphans_start(1e9), -EINVAL);
	ck_assert_int_eq(reaper_orphans_stop(), -ESRCH);
	ck_assert_int_eq(reaper_orphans_start(0.01), 0);
	ck_assert_int_eq(reaper_orphans_start(0.01), -EBUSY);
	int hold[2], status;
	ck_assert_int_eq(pipe(hold), 0);
	pid_t mine = zombie_child(5);
	/* a daemon: its session's leader gone, its orphan killed */
	pid_t d[2];
	chain(hold, 2, 1, d);
	struct reaper_ident leader = ident(d[0]), orphan = ident(d[1]);
	ck_assert_int_eq(reaper_signal(&leader, SIGKILL), 0);
	ck_assert_int_eq(waitpid(d[0], &status, 0), d[0]);
	ck_assert_int_eq(reaper_signal(&orphan, SIGKILL), 0);
	double end = tu_now() + BOUND;
	while (tu_exists(d[1], orphan.start_time) && tu_now() < end)
		usleep(2000);
	ck_assert_int_eq(tu_exists(d[1], orphan.start_time), 0); /* collected by the thread */
	ck_assert_int_eq(tu_state(mine), 'Z'); /* the looks that took it left ours */
	ck_assert_int_eq(waitpid(mine, &status, 0), mine);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 5);
	/* a forked child's stop does not stop ours */
	pid_t kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0)
		_exit(reaper_orphans_stop() == -ESRCH ? 0 : 1);
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(reaper_orphans_stop(), 1);
	ck_assert_int_eq(reaper_orphans_stop(), -ESRCH);
	ck_assert_int_eq(reaper_orphans_start(0.01), 0); /* again, once stopped */
	ck_assert_int_eq(reaper_orphans_stop(), 0);
	close(hold[1]);
	close(hold[0]);
	ck_assert_int_eq(tu_zombie_children(), 0);
	ck_assert_int_eq(reaper_release(), 0);
}
END_TEST

static volatile int flipping;

static void *flip_collector(void *arg)
{
	while (flipping) {
		if (reaper_orphans_start(0.001) == 0)
			reaper_orphans_stop();
	}
	return NULL;
}

/* A fork while another thread starts or stops the collector: the child's stop answers at once
 * (the lock it takes is never inherited held). Only stop: a child of a process with threads may
 * call only what is safe after such a fork until it execs, and a start allocates. */
START_TEST(orphans_thread_start_and_stop_in_a_child_forked_meanwhile)
{
	pthread_t t;
	flipping = 1;
	ck_assert_int_eq(pthread_create(&t, NULL, flip_collector, NULL), 0);
	for (int i = 0; i < 40; i++) {
		pid_t kid = fork();
		ck_assert_int_ge(kid, 0);
		if (kid == 0) {
			signal(SIGALRM, SIG_DFL);
			alarm(20); /* a child that hangs ends by SIGALRM, and the test fails */
			/* ended by an exec: under valgrind, no leak check of a heap copied from a process
			 * whose other thread held memory of its own when the fork came */
			execl("/bin/sh", "sh", "-c", reaper_orphans_stop() == -ESRCH ? "exit 0" : "exit 1", (char *)NULL);
			_exit(3);
		}
		int status;
		ck_assert_int_eq(waitpid(kid, &status, 0), kid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %#x", i, status);
	}
	flipping = 0;
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(reaper_orphans_stop(), -ESRCH);
}
END_TEST

START_TEST(last_pid_moves_with_a_fork)
{
	char buf[32] = { 0 };
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
	fclose(f);
	long max = atol(buf);
	pid_t before = reaper_last_pid();
	ck_assert_int_gt(before, 0);
	pid_t c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0)
		_exit(0);
	pid_t after = reaper_last_pid();
	int status;
	ck_assert_int_eq(waitpid(c, &status, 0), c);
	/* c was given out after before and no later than after, wherever the pids wrapped */
	ck_assert_int_ne(after, before);
	ck_assert_int_le((c - before + max) % max, (after - before + max) % max);
	ck_assert_int_gt((c - before + max) % max, 0);
}
END_TEST

START_TEST(environ_as_started)
{
	static const char want[] = "KIN_A=1\0KIN_B=two words\0";
	char *argv[] = { "/bin/sleep", "300", NULL }, *envp[] = { "KIN_A=1", "KIN_B=two words", NULL };
	struct tu_proc p;
	ck_assert_int_eq(tu_spawn(&p, argv, envp, -1, -1), 0);
	char buf[256];
	ssize_t n = 0;
	double end = tu_now() + BOUND;
	/* until its exec is done: before, the environment is the test's */
	while (((n = reaper_environ(p.pid, buf, sizeof buf)) != (ssize_t)sizeof want - 1 ||
		memcmp(buf, want, sizeof want - 1)) && tu_now() < end)
		usleep(2000);
	ck_assert_int_eq(n, (ssize_t)sizeof want - 1);
	ck_assert_int_eq(memcmp(buf, want, sizeof want - 1), 0);
	memset(buf, 'x', sizeof buf);
	ck_assert_int_eq(reaper_environ(p.pid, buf, 4), (ssize_t)sizeof want - 1);
	ck_assert_int_eq(memcmp(buf, "KIN_", 4), 0); /* 4 bytes written, no more */
	ck_assert_int_eq(buf[4], 'x');
	ck_assert_int_eq(reaper_environ(p.pid, NULL, 0), (ssize_t)sizeof want - 1);
	ck_assert_int_eq(reaper_environ(p.pid, NULL, 1), -EINVAL);
	ck_assert_int_gt(reaper_environ(0, NULL, 0), 0);
	pid_t pid = p.pid;
	ck_assert_int_eq(tu_kill_wait(&p), 0);
	ck_assert_int_eq(reaper_environ(pid, buf, sizeof buf), -ESRCH);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kin");
	TCase *tc = tcase_create("kin");
	tcase_add_test(tc, pstat_reads_self_and_a_child);
	tcase_add_test(tc, children_of_every_thread_zombies_included);
	tcase_add_test(tc, children_of_another_process);
	tcase_add_test(tc, descendants_of_several_roots_each_once);
	tcase_add_test(tc, last_pid_moves_with_a_fork);
	tcase_add_test(tc, environ_as_started);
	tcase_add_test(tc, orphans_thread_start_and_stop_in_a_child_forked_meanwhile);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	/* "pidfd": signals and collects through pidfds (valgrind 3.19 has none); check-valgrind
	 * excludes this tag */
	tc = tcase_create("identity");
	tcase_set_tags(tc, "pidfd");
	tcase_add_test(tc, descendants_not_through_a_parent_gone);
	tcase_add_test(tc, signal_only_the_identity);
	tcase_add_test(tc, collect_one_identity);
	tcase_add_test(tc, orphans_collected_own_children_left);
	tcase_add_test(tc, orphans_collected_by_a_thread_of_the_library);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
