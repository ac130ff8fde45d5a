/* SPDX-License-Identifier: MIT */
/* check_core_why: why a leak was still running, against real children: one that ignores
 * SIGTERM, one stopped (SIGSTOP), one that catches SIGTERM, one that blocks it, one we trace;
 * and the describer on a process that is gone or whose pid is not the one described (a pid
 * that changed hands mid-read): it says so and nothing else, and the report loses nothing
 * else. */
#define _GNU_SOURCE
#include "reaper/reaper.h"
#include "reaper/why.h"
#include "reaper/pidref.h"
#include "reaper/procfs.h"
#include "tests/testutil.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static char suite_marker[128];

enum kind { IGNORES, STOPS, CATCHES };

/* A child in the state kind says, exec'd (a program of its own, not a fork of this one,
 * whose dispositions are the runner's, or valgrind's under it): hard_sig -i ignores SIGTERM,
 * hard_sig alone catches it; a sleep is stopped through its pidfd. Returns its pid. */
static pid_t start_child(enum kind k)
{
	char path[512];
	char *env[] = { suite_marker, NULL };
	struct tu_proc t;
	if (k == STOPS) {
		char *argv[] = { "/bin/sleep", "600", NULL };
		ck_assert_int_eq(tu_spawn(&t, argv, env, -1, -1), 0);
		double end = tu_now() + 60;
		char comm[64] = "";
		while (strcmp(comm, "sleep\n") && tu_now() < end) {
			char f[64];
			snprintf(f, sizeof f, "/proc/%d/comm", (int)t.pid);
			FILE *c = fopen(f, "r");
			if (!c || !fgets(comm, sizeof comm, c))
				comm[0] = 0;
			if (c)
				fclose(c);
		}
		struct pidref ref;
		ck_assert_int_eq(pidref_open(&ref, -1, t.pid, t.start_time), 0);
		ck_assert_int_eq(pidref_signal(&ref, -1, SIGSTOP), 0);
		pidref_done(&ref);
		while (tu_state(t.pid) != 'T' && tu_now() < end)
			usleep(1000);
		ck_assert_int_eq(tu_state(t.pid), 'T');
	} else {
		int pfd[2];
		ck_assert_int_eq(pipe(pfd), 0);
		ck_assert_int_eq(tu_build_path(path, sizeof path, "hard_sig"), 0);
		char *argv[] = { path, "-f", "1", k == IGNORES ? "-i" : NULL, NULL };
		ck_assert_int_eq(tu_spawn(&t, argv, env, pfd[1], -1), 0);
		close(pfd[1]);
		char c = 0;
		while (c != 'R' && read(pfd[0], &c, 1) == 1)
			;
		close(pfd[0]);
		ck_assert_int_eq(c, 'R');
		/* 'R' comes just before pause(): the wait the reap reads is there once it sleeps */
		double end = tu_now() + 60;
		while (tu_state(t.pid) != 'S' && tu_now() < end)
			usleep(1000);
		ck_assert_int_eq(tu_state(t.pid), 'S');
	}
	pid_t pid = t.pid;
	tu_proc_close(&t);
	return pid;
}

static const struct reaper_proc *find(const struct reaper_report *r, pid_t pid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	ck_abort_msg("pid %d not in the report", (int)pid);
	return NULL;
}

/* Reap our children (each a leak: none ends by itself), their holdings and why read. */
static struct reaper_report *reap_ours(void)
{
	struct reaper_finder f = reaper_find_tree(0);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.holdings = 1;
	o.grace = 0.2;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	return r;
}

START_TEST(each_reason_is_read_before_the_kill)
{
	pid_t ign = start_child(IGNORES), stop = start_child(STOPS), cgt = start_child(CATCHES);
	struct reaper_report *r = reap_ours();

	const struct reaper_proc *p = find(r, ign);
	ck_assert_int_eq(p->why_read, 1);
	ck_assert(p->why & REAPER_WHY_TERM_IGNORED);
	ck_assert(p->why & REAPER_WHY_READ_SIGNALS);
	ck_assert(!(p->why & (REAPER_WHY_STOPPED | REAPER_WHY_TERM_CAUGHT)));
	ck_assert_msg(p->wchan[0] && (p->why & REAPER_WHY_WAITS), "pause() sleeps in the kernel: '%s'", p->wchan);
	ck_assert_msg(!strncmp(p->why_text, "ignores SIGTERM; waits in ", 26), "%s", p->why_text);
	ck_assert_int_eq(p->fate, REAPER_KILLED);

	p = find(r, stop);
	ck_assert(p->why & REAPER_WHY_STOPPED);
	ck_assert(!(p->why & REAPER_WHY_WAITS));
	ck_assert_msg(!strncmp(p->why_text, "stopped (state T)", 17), "%s", p->why_text);
	ck_assert_int_eq(p->fate, REAPER_KILLED);

	p = find(r, cgt);
	ck_assert(p->why & REAPER_WHY_TERM_CAUGHT);
	ck_assert(!(p->why & REAPER_WHY_TERM_IGNORED));
	ck_assert_msg(!strncmp(p->why_text, "catches SIGTERM", 15), "%s", p->why_text);
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	reaper_report_free(r);
	ck_assert(!tu_exists(ign, 0) && !tu_exists(stop, 0) && !tu_exists(cgt, 0));
}
END_TEST

/* A sleep exec'd with SIGTERM blocked (the mask survives exec; its disposition is the
 * default): SIGTERM waits, pending, for as long as it runs, and the why says it blocks it. */
START_TEST(a_blocked_sigterm_is_named)
{
	int pfd[2];
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		sigset_t term;
		sigemptyset(&term);
		sigaddset(&term, SIGTERM);
		sigprocmask(SIG_BLOCK, &term, NULL);
		char *argv[] = { "/bin/sleep", "600", NULL }, *env[] = { suite_marker, NULL };
		execve(argv[0], argv, env);
		_exit(127);
	}
	close(pfd[1]);
	char c;
	ck_assert_int_eq(read(pfd[0], &c, 1), 0); /* EOF: exec'd */
	close(pfd[0]);
	struct reaper_report *r = reap_ours();
	const struct reaper_proc *p = find(r, pid);
	ck_assert(p->why & REAPER_WHY_TERM_BLOCKED);
	ck_assert(!(p->why & (REAPER_WHY_TERM_IGNORED | REAPER_WHY_TERM_CAUGHT)));
	ck_assert_msg(!strncmp(p->why_text, "blocks SIGTERM", 14), "%s", p->why_text);
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	reaper_report_free(r);
	ck_assert(!tu_exists(pid, 0));
}
END_TEST

/* A child we trace (PTRACE_TRACEME, then its exec stops it): traced by us, in a tracing stop. */
START_TEST(a_traced_leak_names_its_tracer)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { "/bin/sleep", "600", NULL }, *env[] = { suite_marker, NULL };
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(1);
		execve(argv[0], argv, env);
		_exit(1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSTOPPED(status), "the exec stops a traced child (status %#x)", status);
	struct reaper_report *r = reap_ours();
	const struct reaper_proc *p = find(r, pid);
	ck_assert(p->why & REAPER_WHY_TRACED);
	ck_assert_int_eq(p->tracer, getpid());
	char want[64];
	snprintf(want, sizeof want, "traced by pid %d", (int)getpid());
	ck_assert_msg(strstr(p->why_text, want) != NULL, "%s", p->why_text);
	ck_assert_int_eq(p->fate, REAPER_KILLED);
	reaper_report_free(r);
	ck_assert(!tu_exists(pid, 0));
}
END_TEST

/* A describer asked about pid with start time start: what it says. */
static void describe(struct why *w, pid_t pid, uint64_t start, struct reaper_proc *p)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->start_time = start;
	int procfd = procfs_open();
	ck_assert_int_ge(procfd, 0);
	why_gather(w, procfd, p);
	close(procfd);
}

START_TEST(a_process_gone_or_replaced_is_said_so)
{
	struct why *w = why_new();
	ck_assert_ptr_nonnull(w);
	pid_t ign = start_child(IGNORES);
	uint64_t st = tu_start_time(ign);
	struct reaper_proc p;
	/* the pid held by a process of another start time: not the one described */
	describe(w, ign, st + 1, &p);
	ck_assert_int_eq(p.why_read, 1);
	ck_assert_uint_eq(p.why, 0);
	ck_assert_str_eq(p.why_text, "not looked at: it exited meanwhile");
	ck_assert_str_eq(p.wchan, "");
	why_clear(&p);
	/* the same process as itself */
	describe(w, ign, st, &p);
	ck_assert(p.why & REAPER_WHY_TERM_IGNORED);
	why_clear(&p);
	struct tu_proc t;
	ck_assert_int_eq(tu_pin(&t, ign, st), 0);
	ck_assert_int_eq(tu_kill_wait(&t), 0);
	/* gone */
	describe(w, ign, st, &p);
	ck_assert_int_eq(p.why_read, 1);
	ck_assert_uint_eq(p.why, 0);
	ck_assert_str_eq(p.why_text, "not looked at: it exited meanwhile");
	why_clear(&p);
	why_free(w);
}
END_TEST

/* A child whose controlling terminal is a pty we opened (it makes a session, then opens the
 * slave): its tty is named as ps names it, and no reason comes of it. */
START_TEST(a_terminal_is_named)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	char slave[64];
	ck_assert_int_eq(ptsname_r(master, slave, sizeof slave), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { "/bin/sleep", "600", NULL }, *env[] = { suite_marker, NULL };
		int fd = setsid() < 0 ? -1 : open(slave, O_RDWR); /* a session leader's first tty */
		if (fd < 0 || dup2(fd, 0) < 0)
			_exit(1);
		execve(argv[0], argv, env);
		_exit(1);
	}
	/* exec'd once its comm is sleep's, and its stat has the terminal by then */
	double end = tu_now() + 60;
	char comm[64] = "";
	while (strcmp(comm, "sleep\n") && tu_now() < end) {
		char f[64];
		snprintf(f, sizeof f, "/proc/%d/comm", (int)pid);
		FILE *c = fopen(f, "r");
		if (!c || !fgets(comm, sizeof comm, c))
			comm[0] = 0;
		if (c)
			fclose(c);
		if (strcmp(comm, "sleep\n"))
			usleep(1000);
	}
	ck_assert_str_eq(comm, "sleep\n");
	struct why *w = why_new();
	ck_assert_ptr_nonnull(w);
	uint64_t st = tu_start_time(pid);
	struct reaper_proc p;
	describe(w, pid, st, &p);
	ck_assert_int_eq(p.why_read, 1);
	ck_assert_str_eq(p.tty, slave + strlen("/dev/"));
	ck_assert(p.why & REAPER_WHY_READ_SIGNALS);
	ck_assert(!(p.why & (REAPER_WHY_TERM_IGNORED | REAPER_WHY_TERM_CAUGHT)));
	why_clear(&p);
	why_free(w);
	struct tu_proc t;
	ck_assert_int_eq(tu_pin(&t, pid, st), 0);
	ck_assert_int_eq(tu_kill_wait(&t), 0);
	close(master);
}
END_TEST

int main(void)
{
	tu_unique_marker(suite_marker, sizeof suite_marker, "REAPER_CHECK_SUITE", "core-why");
	Suite *s = suite_create("core-why");
	TCase *tc = tcase_create("why");
	tcase_add_test(tc, each_reason_is_read_before_the_kill);
	tcase_add_test(tc, a_process_gone_or_replaced_is_said_so);
	tcase_add_test(tc, a_traced_leak_names_its_tracer);
	tcase_add_test(tc, a_terminal_is_named);
	tcase_add_test(tc, a_blocked_sigterm_is_named);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, suite_marker);
	return tu_run_suite(s);
}
