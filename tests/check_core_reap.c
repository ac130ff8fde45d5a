/* SPDX-License-Identifier: MIT */
/* check_core_reap: reaper_reap / reaper_scan and the finders against real processes, one
 * fixture per way of leaving something behind. Every test spawns its leftovers with its own
 * HOME marker, checks the report against the pids the fixture printed, then checks /proc:
 * the leftovers are gone, no zombie child of ours is left, bystanders are untouched. */
#define _GNU_SOURCE
#include "reaper/pidref.h"
#include "reaper/procfs.h"
#include "reaper/reaper.h"
#include "tests/testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char suite_marker[128];

/* One test's world: a HOME marker of its own, the environment its leftovers get, and the
 * finders a harness would use (marker first, descent of the caller second). */
struct world {
	char home[160];
	char *env[4];
	struct reaper_finder f[2];
};
enum { BY_ENV = 1u << 0, BY_TREE = 1u << 1 };

static void world_init(struct world *w, const char *tag)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "/tmp/reaper-core-%s", tag);
	ck_assert_int_eq(tu_unique_marker(w->home, sizeof w->home, "HOME", prefix), 0);
	w->env[0] = "PATH=/usr/bin:/bin";
	w->env[1] = w->home;
	w->env[2] = suite_marker;
	w->env[3] = NULL;
	w->f[0] = reaper_find_env(w->home);
	w->f[1] = reaper_find_tree(0);
}

/* world_init, and become the subreaper orphans come back to */
static void begin(struct world *w, const char *tag)
{
	world_init(w, tag);
	ck_assert_int_eq(reaper_adopt(), 1);
}

static int fixture(struct world *w, const char *name, char *const args[], pid_t *pids, size_t max)
{
	int n = tu_fixture(name, args, w->env, pids, max);
	ck_assert_msg(n >= 0, "fixture %s failed: %s", name, strerror(-n));
	return n;
}

/* A fixture that leaves one process: its pid. */
static pid_t one(struct world *w, const char *name, char *const args[])
{
	pid_t pid = 0;
	ck_assert_int_eq(fixture(w, name, args, &pid, 1), 1);
	return pid;
}

static const struct reaper_proc *proc_of(const struct reaper_report *r, pid_t pid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	return NULL;
}

static const struct reaper_proc *must_have(const struct reaper_report *r, pid_t pid)
{
	const struct reaper_proc *p = proc_of(r, pid);
	ck_assert_msg(p != NULL, "pid %d is not in the report (%zu entries)", (int)pid, r->n);
	return p;
}

/* Zombie children we had when the last reap began: the host's own (a leftover that died
 * unseen before the reap started is one too), never the reap's to collect. */
static pid_t pre_zombies[256];
static int npre_zombies;
static uint64_t reap_started;               /* clock ticks since boot */
static const struct reaper_report *last_report;

static uint64_t ticks_now(void)
{
	FILE *f = fopen("/proc/uptime", "r");
	double up = 0;
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lf", &up), 1);
	fclose(f);
	return (uint64_t)(up * (double)sysconf(_SC_CLK_TCK));
}

static struct reaper_report *reap(struct world *w, size_t nf, double timeout, double grace)
{
	npre_zombies = tu_zombie_pids(pre_zombies, 256);
	ck_assert_int_le(npre_zombies, 256);
	reap_started = ticks_now();
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = timeout;
	o.grace = grace;
	o.settle = 20;
	struct reaper_report *r = NULL;
	int e = reaper_reap(w->f, nf, &o, &r);
	ck_assert_msg(e == 0, "reaper_reap: %s", strerror(-e));
	ck_assert_ptr_nonnull(r);
	last_report = r;
	return r;
}

/* Gone from /proc altogether: not alive, and no zombie either. */
static void assert_gone(const struct reaper_proc *p)
{
	ck_assert_msg(tu_wait_gone(p->pid, p->start_time, 10) == 0, "pid %d (%s) is still there, state %c",
		      (int)p->pid, p->comm, tu_state(p->pid));
}

/* Nothing carries the marker; the reap left no zombie child but the host's own: those we
 * had before it, which the host (this test) collects now. A leftover that died unseen in
 * the instant between our look and the reap's own look is the host's too: it is not in the
 * report and started before the reap (clock-tick granularity: one tick of slack). */
static void assert_clean(struct world *w)
{
	ck_assert_int_eq(tu_marked(w->home, NULL, 0), 0);
	pid_t z[256];
	int nz = tu_zombie_pids(z, 256);
	for (int i = 0; i < nz && i < 256; i++) {
		int pre = 0;
		for (int k = 0; k < npre_zombies; k++)
			pre |= pre_zombies[k] == z[i];
		if (!pre && last_report && !proc_of(last_report, z[i]))
			pre = tu_start_time(z[i]) <= reap_started + 1;
		ck_assert_msg(pre, "zombie child %d left by the reap", (int)z[i]);
		ck_assert_int_eq(waitpid(z[i], NULL, WNOHANG), z[i]);
	}
	npre_zombies = 0;
	last_report = NULL;
	ck_assert_int_eq(tu_zombie_children(), 0);
}

/* The end of every test that began(): clean, and the subreaper off again. */
static void end(struct world *w, struct reaper_report *r)
{
	assert_clean(w);
	reaper_report_free(r);
	ck_assert_int_eq(reaper_release(), 0);
}

/* ---- one fixture each ---- */

START_TEST(double_fork_daemon_killed)
{
	struct world w;
	begin(&w, "daemon");
	pid_t pid = one(&w, "daemon", NULL);
	ck_assert(tu_alive(pid, 0));
	struct reaper_report *r = reap(&w, 2, 0.2, 0);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_uint_eq(p->matched_by, BY_ENV | BY_TREE); /* adopted: both find it */
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	ck_assert_uint_eq(r->leaks, 1);
	ck_assert_uint_eq(r->killed, 1);
	ck_assert_int_eq(r->escalated, 1);
	/* collected by the reap (our adopted child): its status says SIGKILL */
	ck_assert(WIFSIGNALED(p->exit_status) && WTERMSIG(p->exit_status) == SIGKILL);
	char by[512];
	ck_assert_int_eq(reaper_matched_by(w.f, 2, p->matched_by, by, sizeof by), 0);
	ck_assert_msg(strstr(by, w.home) && strstr(by, "descendant of the run"), "matched_by: %s", by);
	assert_gone(p);
	end(&w, r);
}
END_TEST

START_TEST(setsid_escapee_terminated)
{
	struct world w;
	begin(&w, "escapee");
	pid_t pid = one(&w, "escapee", NULL);
	ck_assert_int_eq(getsid(pid), pid);
	struct reaper_report *r = reap(&w, 2, 0.2, 10);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_uint_eq(p->matched_by, BY_ENV | BY_TREE);
	ck_assert_int_eq(p->fate, REAPER_TERMINATED); /* SIGTERM was enough */
	ck_assert_int_eq(r->escalated, 0);
	ck_assert(WIFSIGNALED(p->exit_status) && WTERMSIG(p->exit_status) == SIGTERM);
	ck_assert_uint_eq(r->leaks, 1);
	assert_gone(p);
	end(&w, r);
}
END_TEST

START_TEST(sigterm_ignorer_killed_after_grace)
{
	struct world w;
	begin(&w, "termignore");
	pid_t pid = one(&w, "termignore", NULL);
	struct reaper_report *r = reap(&w, 2, 0.1, 0.3);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	ck_assert_int_eq(r->escalated, 1);
	ck_assert(WIFSIGNALED(p->exit_status) && WTERMSIG(p->exit_status) == SIGKILL);
	ck_assert_uint_eq(r->leaks, 1);
	assert_gone(p);
	end(&w, r);
}
END_TEST

/* Without adoption the daemon belongs to init (or an outer subreaper): only the marker finds
 * it, the reap still kills it, and its zombie is its new parent's to collect. */
START_TEST(marker_alone_finds_unadopted_daemon)
{
	struct world w;
	world_init(&w, "unadopted");
	pid_t pid = one(&w, "daemon", NULL);
	struct reaper_report *r = reap(&w, 2, 0.1, 0);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_uint_eq(p->matched_by, BY_ENV);
	ck_assert_int_ne(p->ppid, getpid());
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	ck_assert_int_eq(p->exit_status, -1); /* not ours to collect */
	assert_gone(p);
	assert_clean(&w);
	reaper_report_free(r);
}
END_TEST

/* A child that re-executed itself with an empty environment: descent finds it, no marker does. */
START_TEST(cleared_environment_found_by_descent_only)
{
	struct world w;
	begin(&w, "noenv");
	pid_t pid = one(&w, "noenv", NULL);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(w.f, 1, &r), 0); /* the marker alone */
	ck_assert_ptr_null(proc_of(r, pid));
	reaper_report_free(r);
	ck_assert(tu_alive(pid, 0));
	r = reap(&w, 2, 0.1, 0);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_uint_eq(p->matched_by, BY_TREE);
	ck_assert_int_eq(p->environ_unreadable, 0); /* readable, just empty */
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	assert_gone(p);
	end(&w, r);
}
END_TEST

static void chain(const char *tag, char *const args[])
{
	struct world w;
	begin(&w, tag);
	one(&w, "forkchain", args); /* its first member: it moves on at once */
	struct reaper_report *r = reap(&w, 2, 0.3, 0);
	ck_assert_uint_ge(r->n, 1); /* the first member may be gone already: it moved on */
	ck_assert_uint_ge(r->killed, 1);
	ck_assert_uint_eq(r->unkillable, 0);
	for (size_t i = 0; i < r->n; i++) {
		ck_assert_uint_ne(r->procs[i].matched_by, 0);
		if (r->procs[i].fate != REAPER_GONE)
			assert_gone(&r->procs[i]);
	}
	end(&w, r); /* nothing forked after the last rescan */
}

START_TEST(fork_chain_moving_target)
{
	/* each member forks the next and exits every 10 ms, for 3 s: the reap must follow it */
	char *args[] = { "-n", "300", "-i", "10", NULL };
	chain("chain", args);
}
END_TEST

START_TEST(fork_chain_accumulating)
{
	/* members stay: a growing line of processes still forking while being killed */
	char *args[] = { "-n", "200", "-i", "5", "-k", NULL };
	chain("chaink", args);
}
END_TEST

START_TEST(exits_within_deadline_not_a_leak)
{
	struct world w;
	begin(&w, "selfexit");
	pid_t pids[3];
	char *args[] = { "-n", "3", "-m", "1500", NULL };
	ck_assert_int_eq(fixture(&w, "selfexit", args, pids, 3), 3);
	struct reaper_report *r = reap(&w, 2, 60, 0);
	for (int i = 0; i < 3; i++) {
		const struct reaper_proc *p = must_have(r, pids[i]);
		ck_assert_int_eq(p->fate, REAPER_EXITED);
		ck_assert(WIFEXITED(p->exit_status) && WEXITSTATUS(p->exit_status) == 0);
		assert_gone(p);
	}
	ck_assert_uint_eq(r->leaks, 0);
	ck_assert_uint_eq(r->exited, 3);
	ck_assert_int_eq(r->escalated, 0);
	/* the wait ended with the last exit, not at the 60 s deadline (generous bound) */
	ck_assert_msg(r->waited < 30, "waited %.1f s", r->waited);
	end(&w, r);
}
END_TEST

/* The host's event comes while the reap waits: the leftover exits meanwhile, and the callback
 * returns only after the deadline, as a reaping thread does that ran late on a busy machine. */
struct late {
	int efd, wr;  /* the host's event; the pipe end the leftover waits on */
	pid_t pid;
	double after; /* return once the clock is past it */
};

static int exit_and_run_late(void *ctx)
{
	struct late *l = ctx;
	uint64_t v;
	if (read(l->efd, &v, sizeof v) != (ssize_t)sizeof v || l->wr < 0)
		return REAPER_CONTINUE;
	close(l->wr);
	l->wr = -1;
	for (double end = tu_now() + 30; tu_state(l->pid) != 'Z' && tu_now() < end;)
		usleep(1000);
	while (tu_now() < l->after)
		usleep(10000);
	return REAPER_CONTINUE;
}

/* An exit that happened before the deadline is an exit in time, however late the reap looks
 * at it: no SIGTERM for it, not a leak. */
START_TEST(exit_seen_after_the_deadline_is_in_time)
{
	struct world w;
	begin(&w, "late");
	int pfd[2];
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;
		close(pfd[1]);
		_exit(read(pfd[0], &c, 1) == 0 ? 0 : 1);
	}
	close(pfd[0]);
	struct late l = { .efd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK), .wr = pfd[1], .pid = pid };
	ck_assert_int_ge(l.efd, 0);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 0.5;
	o.grace = 5;
	o.event_fd = l.efd;
	o.on_event = exit_and_run_late;
	o.event_ctx = &l;
	l.after = tu_now() + o.timeout + 0.5;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&w.f[1], 1, &o, &r), 0);
	ck_assert_int_lt(l.wr, 0); /* the event came */
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_msg(p->fate == REAPER_EXITED, "fate %s", reaper_fate_name(p->fate));
	ck_assert(WIFEXITED(p->exit_status) && WEXITSTATUS(p->exit_status) == 0);
	ck_assert_uint_eq(r->leaks, 0);
	ck_assert_int_eq(r->escalated, 0);
	assert_gone(p);
	close(l.efd);
	end(&w, r);
}
END_TEST

START_TEST(exits_past_deadline_killed)
{
	struct world w;
	begin(&w, "late");
	char *eargs[] = { "-m", "1000", NULL }, *largs[] = { "-m", "60000", NULL };
	pid_t late = one(&w, "selfexit", largs), early = one(&w, "selfexit", eargs);
	struct reaper_report *r = reap(&w, 2, 5.0, 0);
	ck_assert_int_eq(must_have(r, early)->fate, REAPER_EXITED);
	ck_assert_int_eq(must_have(r, late)->fate, REAPER_KILLED);
	ck_assert_uint_eq(r->leaks, 1);
	ck_assert_uint_eq(r->exited, 1);
	assert_gone(must_have(r, early));
	assert_gone(must_have(r, late));
	end(&w, r);
}
END_TEST

START_TEST(zombie_of_live_leaked_parent)
{
	struct world w;
	begin(&w, "zombie");
	pid_t pids[2];
	ck_assert_int_eq(fixture(&w, "zombieholder", NULL, pids, 2), 2);
	ck_assert_int_eq(tu_state(pids[1]), 'Z');
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(w.f, 2, &r), 0);
	ck_assert_int_eq(must_have(r, pids[0])->fate, REAPER_ALIVE);
	ck_assert_int_eq(must_have(r, pids[1])->state, 'Z');
	ck_assert_uint_eq(must_have(r, pids[1])->matched_by, BY_TREE); /* a zombie has no environ */
	reaper_report_free(r);
	ck_assert_int_eq(tu_state(pids[1]), 'Z'); /* a scan collects nothing */
	r = reap(&w, 2, 0.1, 0);
	const struct reaper_proc *parent = must_have(r, pids[0]), *zombie = must_have(r, pids[1]);
	ck_assert_int_eq(parent->fate, REAPER_KILLED);
	ck_assert_int_ne(zombie->fate, REAPER_KILLED);
	ck_assert_uint_eq(r->leaks, 1);
	/* the killed parent's zombie child came to us and was collected with it */
	assert_gone(parent);
	assert_gone(zombie);
	end(&w, r);
}
END_TEST

START_TEST(comm_with_spaces_and_parens)
{
	struct world w;
	begin(&w, "comm");
	char *args[] = { "-c", ") ) Z 1 (x) 2", NULL };
	pid_t pid = one(&w, "comm", args);
	uint64_t st = tu_start_time(pid);
	struct reaper_report *r = reap(&w, 2, 0.1, 0);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_str_eq(p->comm, ") ) Z 1 (x) 2");
	ck_assert_uint_eq(p->start_time, st);
	ck_assert_msg(strchr("RSD", p->state), "state %c", p->state);
	ck_assert_ptr_nonnull(strstr(p->cmdline, "fixtures/comm -c ) ) Z 1 (x) 2"));
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	assert_gone(p);
	end(&w, r);
}
END_TEST

static void many(int nofile)
{
	enum { N = 1000 };
	struct world w;
	begin(&w, "many");
	static pid_t pids[N];
	char *args[] = { "-n", "1000", NULL };
	ck_assert_int_eq(fixture(&w, "many", args, pids, N), N);
	if (nofile) {
		/* fewer fds than leftovers: the reap cannot hold a pidfd for each at once */
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = (rlim_t)nofile;
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	double t0 = tu_now();
	struct reaper_report *r = reap(&w, 2, 0, 0);
	double took = tu_now() - t0;
	for (int i = 0; i < N; i++) {
		const struct reaper_proc *p = must_have(r, pids[i]);
		ck_assert_int_eq(p->fate, REAPER_KILLED);
		/* with fds short, a tree pass that could not open a task dir may miss its bit */
		ck_assert_uint_eq(p->matched_by & BY_ENV, BY_ENV);
		if (!nofile)
			ck_assert_uint_eq(p->matched_by, BY_ENV | BY_TREE);
		assert_gone(p);
	}
	ck_assert_uint_eq(r->killed, N);
	ck_assert_uint_eq(r->leaks, N);
	ck_assert_int_eq(tu_live_children(), 0);
	fprintf(stderr, "reap of %d leftovers (RLIMIT_NOFILE %s): %.3f s\n", N, nofile ? "256" : "as is", took);
	end(&w, r);
}

START_TEST(thousand_leftovers)
{
	many(0);
}
END_TEST

START_TEST(thousand_leftovers_few_fds)
{
	many(256);
}
END_TEST

/* ---- what must not be touched ---- */

/* A bystander with another HOME, outside our tree (started before we adopt, so its orphaned
 * self goes elsewhere), survives a reap that kills a daemon beside it. */
START_TEST(control_process_untouched)
{
	struct world w, other;
	world_init(&w, "mine");
	world_init(&other, "control");
	pid_t control = one(&other, "daemon", NULL);
	struct tu_proc cp;
	ck_assert_int_eq(tu_pin(&cp, control, 0), 0);
	ck_assert_int_ne(tu_state(control), 0);
	ck_assert_int_eq(reaper_adopt(), 1);
	pid_t pid = one(&w, "daemon", NULL);
	struct reaper_report *r = reap(&w, 2, 0.1, 0);
	ck_assert_int_eq(must_have(r, pid)->fate, REAPER_KILLED);
	ck_assert_ptr_null(proc_of(r, control));
	ck_assert_uint_eq(r->n, 1);
	ck_assert(tu_alive(control, cp.start_time));
	ck_assert_int_ne(tu_state(control), 'T'); /* not stopped by the freeze either */
	assert_gone(must_have(r, pid));
	ck_assert_int_eq(tu_kill_wait(&cp), 0);
	ck_assert(!tu_alive(control, cp.start_time));
	end(&w, r);
}
END_TEST

/* A pidref whose start time is not the live process's never signals it. */
START_TEST(identity_mismatch_not_signalled)
{
	char *argv[] = { "/bin/sleep", "60", NULL };
	struct tu_proc child;
	ck_assert_int_eq(tu_spawn(&child, argv, NULL, -1, -1), 0);
	ck_assert_int_eq(tu_wait_present(child.pid, 5), 0);
	struct pidref ref;
	ck_assert_int_eq(pidref_open(&ref, -1, child.pid, child.start_time + 1), -ESRCH);
	ck_assert_int_eq(ref.fd, -1);
	ck_assert_int_eq(pidref_open(&ref, -1, child.pid, child.start_time), 0);
	ck_assert_int_eq(pidref_verify(&ref, -1), 0);
	ref.start_time = child.start_time + 1; /* what a pid reused under us looks like */
	ck_assert_int_eq(pidref_verify(&ref, -1), -ESRCH);
	ck_assert_int_eq(pidref_signal(&ref, -1, SIGKILL), -ESRCH);
	ck_assert_int_eq(pidref_signal(&ref, -1, SIGSTOP), -ESRCH);
	usleep(100000);
	ck_assert(tu_alive(child.pid, child.start_time));
	ck_assert_int_ne(tu_state(child.pid), 'T');
	ck_assert_int_eq(waitpid(child.pid, NULL, WNOHANG), 0);
	/* the right identity does reach it, and once it is gone nothing is signalled */
	ref.start_time = child.start_time;
	ck_assert_int_eq(pidref_signal(&ref, -1, SIGKILL), 0);
	ck_assert_int_eq(tu_wait_exit(&child), SIGKILL);
	ck_assert_int_eq(pidref_exited(&ref, -1), 1);
	ck_assert_int_eq(pidref_signal(&ref, -1, SIGKILL), -ESRCH);
	pidref_done(&ref);
}
END_TEST

static int ns_last_pid_writable(void)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0 && tu_have_cap(21 /* CAP_SYS_ADMIN */);
}

/* The real thing: the pid of a dead candidate handed to a new process. Needs the right to
 * choose the next pid (ns_last_pid: CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE). */
START_TEST(identity_pid_reused_not_signalled)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "ns_last_pid: %s", strerror(errno));
	char *argv[] = { "/bin/sleep", "60", NULL };
	struct tu_proc old, fresh = { .pidfd = -1 };
	ck_assert_int_eq(tu_spawn(&old, argv, NULL, -1, -1), 0);
	struct pidref ref;
	ck_assert_int_eq(pidref_open(&ref, -1, old.pid, old.start_time), 0);
	pid_t pid = old.pid;
	uint64_t seen = old.start_time;
	/* start times count clock ticks: let one pass, so the new process is told apart by
	 * start time as well as by the pidfd (within one tick only the pidfd tells) */
	usleep(30000);
	ck_assert_int_eq(tu_kill_wait(&old), 0);
	int reused = 0;
	for (int attempt = 0; attempt < 1000 && !reused; attempt++) {
		char last[24];
		int n = snprintf(last, sizeof last, "%d", (int)pid - 1);
		ck_assert_msg(pwrite(fd, last, (size_t)n, 0) == n, "ns_last_pid: %s", strerror(errno));
		ck_assert_int_eq(tu_spawn(&fresh, argv, NULL, -1, -1), 0);
		reused = fresh.pid == pid; /* another process may fork in between: try again */
		if (!reused)
			ck_assert_int_eq(tu_kill_wait(&fresh), 0);
	}
	close(fd);
	ck_assert_msg(reused, "could not get pid %d again", (int)pid);
	ck_assert_uint_ne(fresh.start_time, seen);
	/* the candidate as first seen (pid + old start time) is never the new process */
	struct pidref again;
	ck_assert_int_eq(pidref_open(&again, -1, pid, seen), -ESRCH);
	ck_assert_int_eq(pidref_verify(&ref, -1), -ESRCH);
	ck_assert_int_eq(pidref_signal(&ref, -1, SIGKILL), -ESRCH);
	usleep(100000);
	ck_assert(tu_alive(pid, fresh.start_time));
	ck_assert_int_ne(tu_state(pid), 'T');
	pidref_done(&ref);
	ck_assert_int_eq(tu_kill_wait(&fresh), 0);
}
END_TEST

/* A child the host exited-and-left before the reap keeps its status for the host, even
 * though it carries the marker and is the host's descendant. */
START_TEST(host_child_keeps_exit_status)
{
	struct world w;
	begin(&w, "host");
	char *argv[] = { "/bin/sh", "-c", "exit 42", NULL };
	struct tu_proc mine;
	ck_assert_int_eq(tu_spawn(&mine, argv, w.env, -1, -1), 0);
	for (double end = tu_now() + 10; tu_state(mine.pid) != 'Z' && tu_now() < end;)
		usleep(1000);
	ck_assert_int_eq(tu_state(mine.pid), 'Z');
	pid_t pid = one(&w, "daemon", NULL);
	struct reaper_report *r = reap(&w, 2, 0.1, 0);
	ck_assert_int_eq(must_have(r, pid)->fate, REAPER_KILLED);
	ck_assert_ptr_null(proc_of(r, mine.pid));
	ck_assert_int_eq(tu_state(mine.pid), 'Z'); /* still waiting for us */
	int status = 0;
	ck_assert_int_eq(waitpid(mine.pid, &status, 0), mine.pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 42);
	tu_proc_close(&mine);
	assert_gone(must_have(r, pid));
	end(&w, r);
}
END_TEST

/* A child the host lists as its own is killed when it leaked, but its zombie and its status
 * stay for the host: the host's wait sees SIGKILL. */
START_TEST(listed_host_child_killed_but_not_collected)
{
	char *argv[] = { "/bin/sleep", "600", NULL };
	struct tu_proc mine;
	ck_assert_int_eq(tu_spawn(&mine, argv, NULL, -1, -1), 0);
	struct reaper_finder f = reaper_find_tree(0);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.host_children = &mine.pid;
	o.nhost_children = 1;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	const struct reaper_proc *p = proc_of(r, mine.pid);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	ck_assert_int_eq(p->host_child, 1);
	ck_assert_int_eq(p->exit_status, -1);
	ck_assert_int_eq(tu_state(mine.pid), 'Z');
	int status = 0;
	ck_assert_int_eq(waitpid(mine.pid, &status, 0), mine.pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	tu_proc_close(&mine);
	reaper_report_free(r);
	o.nhost_children = 1;
	o.host_children = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), -EINVAL);
}
END_TEST

/* Until pid runs /bin/sleep: before its exec, its environment is still ours. */
static void wait_exec_sleep(pid_t pid)
{
	char path[64], exe[256];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	for (double end = tu_now() + 30; tu_now() < end; usleep(1000)) {
		ssize_t n = readlink(path, exe, sizeof exe - 1);
		if (n > 0 && (exe[n] = 0, strstr(exe, "sleep")))
			return;
	}
	ck_abort_msg("pid %d never ran sleep", (int)pid);
}

/* A tree finder narrowed to one test: what started before `since`, what carries another
 * value of the marker, and what is skipped are not matched; what carries this value, no value,
 * or the value the root was started with is. */
START_TEST(tree_narrowed_to_one_test)
{
	char *argv[] = { "/bin/sleep", "600", NULL };
	char *other[] = { "T=other", NULL }, *same[] = { "T=this", NULL }, *none[] = { NULL };
	char inherited[64];
	snprintf(inherited, sizeof inherited, "T=%s", getenv("T") ? getenv("T") : "");
	char *inh[] = { inherited, NULL };
	struct tu_proc early, p_other, p_same, p_none, p_skip, p_inh;
	ck_assert_int_eq(tu_spawn(&early, argv, none, -1, -1), 0);
	uint64_t since = early.start_time + 1;
	while (ticks_now() < since + 1)
		usleep(2000);
	ck_assert_int_eq(tu_spawn(&p_other, argv, other, -1, -1), 0);
	ck_assert_int_eq(tu_spawn(&p_same, argv, same, -1, -1), 0);
	ck_assert_int_eq(tu_spawn(&p_none, argv, none, -1, -1), 0);
	ck_assert_int_eq(tu_spawn(&p_skip, argv, same, -1, -1), 0);
	ck_assert_int_eq(tu_spawn(&p_inh, argv, getenv("T") ? inh : none, -1, -1), 0);
	struct tu_proc *all[] = { &early, &p_other, &p_same, &p_none, &p_skip, &p_inh };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		wait_exec_sleep(all[i]->pid);
	struct reaper_finder f = reaper_find_tree(0);
	f.since = since;
	f.marker = "T=this";
	f.skip = &p_skip.pid;
	f.nskip = 1;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
	ck_assert_ptr_null(proc_of(r, early.pid));
	ck_assert_ptr_null(proc_of(r, p_other.pid));
	ck_assert_ptr_null(proc_of(r, p_skip.pid));
	ck_assert_ptr_nonnull(proc_of(r, p_same.pid));
	ck_assert_ptr_nonnull(proc_of(r, p_none.pid));
	ck_assert_ptr_nonnull(proc_of(r, p_inh.pid));
	ck_assert_uint_eq(r->n, 3);
	reaper_report_free(r);
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		ck_assert_int_eq(tu_kill_wait(all[i]), 0);
	f.marker = "=x";
	ck_assert_int_eq(reaper_scan(&f, 1, &r), -EINVAL);
}
END_TEST

/* A scan reports and signals nothing. */
START_TEST(scan_signals_nothing)
{
	struct world w;
	begin(&w, "scan");
	pid_t pid = one(&w, "termignore", NULL);
	uint64_t st = tu_start_time(pid);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(w.f, 2, &r), 0);
	const struct reaper_proc *p = must_have(r, pid);
	ck_assert_int_eq(p->fate, REAPER_ALIVE);
	ck_assert_uint_eq(p->start_time, st);
	ck_assert_int_eq(p->ppid, getpid());
	ck_assert_uint_eq(r->leaks, 1);
	ck_assert_uint_eq(r->n, 1);
	reaper_report_free(r);
	usleep(100000);
	ck_assert(tu_alive(pid, st));
	ck_assert_int_ne(tu_state(pid), 'T');
	ck_assert_int_eq(tu_kill_marked(w.home), 1);
	assert_clean(&w);
	reaper_release();
}
END_TEST

/* A scan takes nothing: a child of the caller that dies while the scan runs (a child another
 * thread of the caller has yet to wait for) keeps its status for the caller. Many rounds, so
 * that the exit falls inside the scan in some of them. */
START_TEST(scan_leaves_a_dying_child_to_its_parent)
{
	struct reaper_finder f = reaper_find_tree(0);
	for (int i = 0; i < 300; i++) {
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			for (volatile int spin = 0; spin < (i % 50) * 2000; spin++)
				;
			_exit(7);
		}
		struct reaper_report *r = NULL;
		ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
		reaper_report_free(r);
		int status = 0;
		ck_assert_msg(waitpid(pid, &status, 0) == pid, "round %d: the scan took the status of %d: %s",
			      i, (int)pid, strerror(errno));
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	}
}
END_TEST

/* The caller and its ancestors never show up, even when a finder matches them. */
START_TEST(caller_and_ancestors_never_candidates)
{
	static char entry[8192];
	snprintf(entry, sizeof entry, "PATH=%s", getenv("PATH"));
	struct reaper_finder f[2] = { reaper_find_env(entry), reaper_find_tree(getppid()) };
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(f, 2, &r), 0); /* a scan: it signals nothing */
	for (pid_t p = getpid(); p > 1;) {
		ck_assert_msg(proc_of(r, p) == NULL, "ancestor %d is a candidate", (int)p);
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
		FILE *fp = fopen(path, "r");
		if (!fp)
			break;
		char buf[1024];
		size_t n = fread(buf, 1, sizeof buf - 1, fp);
		fclose(fp);
		buf[n] = 0;
		struct reaper_stat st;
		if (reaper_parse_stat(buf, n, &st) < 0)
			break;
		p = st.ppid;
	}
	reaper_report_free(r);
}
END_TEST

/* A marked sleep of ours: how 1 leads a process group of its own, 2 a session of its own;
 * in/out >= 0 become its stdin/stdout. */
static void marked_sleep(struct tu_proc *p, char *const env[], int how, int in, int out)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (how == 1)
			setpgid(0, 0);
		else if (how == 2)
			setsid();
		if (in >= 0)
			dup2(in, 0);
		if (out >= 0)
			dup2(out, 1);
		char *argv[] = { "/bin/sleep", "600", NULL };
		execve(argv[0], argv, env);
		_exit(127);
	}
	for (double end = tu_now() + 30; tu_now() < end && tu_marked(env[1], NULL, 0) == 0;)
		usleep(1000);
	ck_assert_int_eq(tu_pin(p, pid, 0), 0);
}

/* Wait until every one of n is marked (exec'd with the marker), so a reap cannot miss it. */
static void await_marked(const char *entry, int n)
{
	for (double end = tu_now() + 30; tu_now() < end && tu_marked(entry, NULL, 0) < n;)
		usleep(1000);
	ck_assert_int_eq(tu_marked(entry, NULL, 0), n);
}

/* Never the caller: what opts names by identity and process group, what a finder must not
 * match in the caller's session, and the caller's pipeline (the reader of its output), while
 * the same kinds of process elsewhere (another session, the same end of the pipe) are reaped. */
START_TEST(callers_own_never_candidates)
{
	struct world w;
	world_init(&w, "caller");
	struct tu_proc mine, group, other;
	marked_sleep(&mine, w.env, 0, -1, -1);
	marked_sleep(&group, w.env, 1, -1, -1);
	marked_sleep(&other, w.env, 2, -1, -1);
	await_marked(w.home, 3);
	struct reaper_ident id = { mine.pid, mine.start_time };
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.exclude = &id;
	o.nexclude = 1;
	o.exclude_pgrp = group.pid;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(w.f, 1, &o, &r), 0);
	ck_assert_ptr_null(proc_of(r, mine.pid));
	ck_assert_ptr_null(proc_of(r, group.pid));
	ck_assert_int_eq(must_have(r, other.pid)->fate, REAPER_KILLED);
	ck_assert(tu_alive(mine.pid, mine.start_time) && tu_alive(group.pid, group.start_time));
	reaper_report_free(r);
	tu_proc_close(&other);

	/* outside_session: mine (our session) is not the finder's; one in a session of its own is */
	marked_sleep(&other, w.env, 2, -1, -1);
	await_marked(w.home, 3);
	reaper_opts_init(&o);
	o.exclude_pgrp = group.pid;
	o.outside_session = 1;
	ck_assert_int_eq(reaper_reap(w.f, 1, &o, &r), 0);
	ck_assert_ptr_null(proc_of(r, mine.pid));
	ck_assert_int_eq(must_have(r, other.pid)->fate, REAPER_KILLED);
	reaper_report_free(r);
	tu_proc_close(&other);
	ck_assert_int_eq(tu_kill_wait(&mine), 0);
	ck_assert_int_eq(tu_kill_wait(&group), 0);

	/* our stdout is a pipe: its reader is our pipeline, its other writer is not; two
	 * leftovers that hold a file on fd 0 and 1 (found first: the file is copied, the second
	 * is told by it) are not either, nor is the reader told by that copy */
	char path[] = "/tmp/reaper-core-caller-file-XXXXXX";
	int file = mkstemp(path);
	ck_assert_int_ge(file, 0);
	unlink(path);
	int pfd[2], saved = dup(1);
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	ck_assert_int_ge(saved, 0);
	dup2(pfd[1], 1);
	struct tu_proc reader, writer, filer[2];
	for (int i = 0; i < 2; i++)
		marked_sleep(&filer[i], w.env, 0, file, file);
	close(file);
	marked_sleep(&reader, w.env, 0, pfd[0], -1);
	marked_sleep(&writer, w.env, 0, -1, pfd[1]);
	await_marked(w.home, 4);
	int e = reaper_reap(w.f, 1, NULL, &r);
	dup2(saved, 1);
	close(saved);
	close(pfd[0]);
	close(pfd[1]);
	ck_assert_int_eq(e, 0);
	ck_assert_ptr_null(proc_of(r, reader.pid));
	ck_assert_int_eq(must_have(r, writer.pid)->fate, REAPER_KILLED);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(must_have(r, filer[i].pid)->fate, REAPER_KILLED);
	ck_assert(tu_alive(reader.pid, reader.start_time));
	reaper_report_free(r);
	tu_proc_close(&writer);
	for (int i = 0; i < 2; i++)
		tu_proc_close(&filer[i]);
	ck_assert_int_eq(tu_kill_wait(&reader), 0);
}
END_TEST

START_TEST(bad_input_refused)
{
	struct reaper_report *r = (void *)1;
	struct reaper_finder f[33];
	for (int i = 0; i < 33; i++)
		f[i] = reaper_find_tree(0);
	struct reaper_finder nomark = reaper_find_env("HOME"), empty_name = reaper_find_env("=x"),
			     null_mark = reaper_find_env(NULL), bad_root = reaper_find_tree(-5),
			     bad_kind = { .kind = 99 };
	ck_assert_int_eq(reaper_scan(&nomark, 1, &r), -EINVAL);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(reaper_scan(&empty_name, 1, &r), -EINVAL);
	ck_assert_int_eq(reaper_scan(&null_mark, 1, &r), -EINVAL);
	ck_assert_int_eq(reaper_scan(&bad_root, 1, &r), -EINVAL);
	ck_assert_int_eq(reaper_scan(&bad_kind, 1, &r), -EINVAL);
	ck_assert_int_eq(reaper_scan(f, 33, &r), -E2BIG);
	ck_assert_int_eq(reaper_scan(NULL, 1, &r), -EINVAL);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = -1;
	ck_assert_int_eq(reaper_reap(f, 1, &o, &r), -EINVAL);
	reaper_opts_init(&o);
	o.grace = -0.5;
	ck_assert_int_eq(reaper_reap(f, 1, &o, &r), -EINVAL);
}
END_TEST

int main(void)
{
	tu_unique_marker(suite_marker, sizeof suite_marker, "REAPER_CHECK_SUITE", "core-reap");
	Suite *s = suite_create("core-reap");
	TCase *tc = tcase_create("fixtures");
	tcase_add_test(tc, double_fork_daemon_killed);
	tcase_add_test(tc, setsid_escapee_terminated);
	tcase_add_test(tc, sigterm_ignorer_killed_after_grace);
	tcase_add_test(tc, cleared_environment_found_by_descent_only);
	tcase_add_test(tc, exits_within_deadline_not_a_leak);
	tcase_add_test(tc, exits_past_deadline_killed);
	tcase_add_test(tc, exit_seen_after_the_deadline_is_in_time);
	tcase_add_test(tc, zombie_of_live_leaked_parent);
	tcase_add_test(tc, comm_with_spaces_and_parens);
	tcase_add_test(tc, thousand_leftovers);
	tcase_add_test(tc, thousand_leftovers_few_fds);
	tcase_set_timeout(tc, 180);
	suite_add_tcase(s, tc);
	/* "pidfd": leftovers (and a control) that are not our children, killed by pidfd; without
	 * pidfds (valgrind 3.19) they are unkillable. check-valgrind excludes this tag. */
	tc = tcase_create("fixtures_pidfd");
	tcase_set_tags(tc, "pidfd");
	tcase_add_test(tc, marker_alone_finds_unadopted_daemon);
	tcase_add_test(tc, fork_chain_moving_target);
	tcase_add_test(tc, fork_chain_accumulating);
	tcase_add_test(tc, control_process_untouched);
	tcase_set_timeout(tc, 180);
	suite_add_tcase(s, tc);
	tc = tcase_create("untouched");
	tcase_add_test(tc, identity_mismatch_not_signalled);
	/* not root, or root in a container whose /proc/sys is mounted read-only */
	tu_add_test_if(tc, identity_pid_reused_not_signalled, ns_last_pid_writable(), "root",
		       "choosing the next pid (ns_last_pid) needs root and a writable /proc/sys");
	tcase_add_test(tc, host_child_keeps_exit_status);
	tcase_add_test(tc, listed_host_child_killed_but_not_collected);
	tcase_add_test(tc, tree_narrowed_to_one_test);
	tcase_add_test(tc, scan_signals_nothing);
	tcase_add_test(tc, scan_leaves_a_dying_child_to_its_parent);
	tcase_add_test(tc, caller_and_ancestors_never_candidates);
	tcase_add_test(tc, callers_own_never_candidates);
	tcase_add_test(tc, bad_input_refused);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, suite_marker);
	return tu_run_suite(s);
}
