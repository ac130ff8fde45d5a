/* SPDX-License-Identifier: MIT */
/* check_core: unit tests of the /proc primitives (stat parsing, environ marker matching),
 * against hand-written input and against the kernel's own text for a real process whose
 * comm is built to fool a naive parser; a pidref released at the end of its block; and the
 * adoption refcount. */
#define _GNU_SOURCE
#include "reaper/pidref.h"
#include "reaper/procfs.h"
#include "reaper/reaper.h"
#include "tests/testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char suite_marker[128];

/* The fields after comm as the kernel writes them (3..52), with ppid 77, pgrp 78, session 79,
 * tty 34817 (pts/1), utime 1, stime 2, start time 123456789 and rss 200. */
#define TAIL " S 77 78 79 34817 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 123456789 1000 200 " \
	"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"

static int parse(const char *text, struct reaper_stat *st)
{
	return reaper_parse_stat(text, strlen(text), st);
}

static void check_tail(const struct reaper_stat *st)
{
	ck_assert_int_eq(st->state, 'S');
	ck_assert_int_eq(st->ppid, 77);
	ck_assert_int_eq(st->pgrp, 78);
	ck_assert_int_eq(st->session, 79);
	ck_assert_uint_eq(st->start_time, 123456789u);
	ck_assert_uint_eq(st->tty_nr, 34817u);
	ck_assert_uint_eq(st->utime, 1u);
	ck_assert_uint_eq(st->stime, 2u);
	ck_assert_uint_eq(st->rss, 200u);
}

START_TEST(stat_plain)
{
	struct reaper_stat st;
	ck_assert_int_eq(parse("4242 (sleep)" TAIL, &st), 0);
	ck_assert_int_eq(st.pid, 4242);
	ck_assert_str_eq(st.comm, "sleep");
	check_tail(&st);
}
END_TEST

START_TEST(stat_comm_spaces_and_parens)
{
	static const struct {
		const char *comm;
	} cases[] = {
		{ "a b c" }, { "a) b" }, { ") ) )" }, { "x) Z 1 2 3 (y" }, { "" }, { "(" }, { "((()" },
		{ "new\nline)" }, { ")" }, { " " },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[512];
		struct reaper_stat st;
		snprintf(text, sizeof text, "31 (%s)" TAIL, cases[i].comm);
		ck_assert_msg(parse(text, &st) == 0, "comm '%s' did not parse", cases[i].comm);
		ck_assert_int_eq(st.pid, 31);
		ck_assert_str_eq(st.comm, cases[i].comm);
		check_tail(&st);
	}
}
END_TEST

START_TEST(stat_truncated)
{
	const char *full = "4242 (a) b)" TAIL;
	struct reaper_stat st;
	/* every prefix that may have cut the start time (field 22) short is refused and never
	 * read past its end: each is copied to an exact-size heap block so ASan/valgrind see it.
	 * "...1234" could be a cut "123456789": only the delimiter after it proves it whole. */
	const char *start = strstr(full, " 123456789 ");
	size_t need = (size_t)(start - full) + strlen(" 123456789 ");
	for (size_t len = 0; len < need; len++) {
		char *copy = malloc(len + 1);
		memcpy(copy, full, len);
		ck_assert_msg(reaper_parse_stat(copy, len, &st) < 0, "prefix of %zu bytes accepted", len);
		free(copy);
	}
	/* and the first prefix that holds the whole start time is enough */
	ck_assert_int_eq(reaper_parse_stat(full, need, &st), 0);
	ck_assert_uint_eq(st.start_time, 123456789u);
}
END_TEST

START_TEST(stat_garbage)
{
	struct reaper_stat st;
	ck_assert_int_lt(parse("", &st), 0);
	ck_assert_int_lt(parse("no parens at all 1 2 3", &st), 0);
	ck_assert_int_lt(parse(") 1 (x", &st), 0);
	ck_assert_int_lt(parse("1 (x) S a b c d e f g h i j k l m n o p q r s t", &st), 0);
	ck_assert_int_lt(parse("1 (x)  S 77 78 79 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5\n", &st), 0);
	/* a start time that overflows 64 bits is not silently wrapped */
	ck_assert_int_lt(parse("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99999999999999999999999\n", &st), 0);
}
END_TEST

START_TEST(stat_long_comm_clipped)
{
	char text[1024], comm[300];
	memset(comm, 'c', sizeof comm - 1);
	comm[sizeof comm - 1] = 0;
	snprintf(text, sizeof text, "5 (%s)" TAIL, comm);
	struct reaper_stat st;
	ck_assert_int_eq(parse(text, &st), 0);
	ck_assert_uint_eq(strlen(st.comm), sizeof st.comm - 1);
	check_tail(&st);
}
END_TEST

/* PPid: from /proc/PID/status, which has no comm to trip over before it. */
static pid_t status_ppid(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	int ppid = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "PPid: %d", &ppid) == 1)
			break;
	fclose(f);
	return ppid;
}

/* The kernel's own stat text for a live process named to look like stat fields. */
START_TEST(stat_real_process_fooling_comm)
{
	char env_home[160];
	ck_assert_int_eq(tu_unique_marker(env_home, sizeof env_home, "HOME", "/tmp/reaper-core-stat"), 0);
	char *env[] = { "PATH=/usr/bin:/bin", env_home, suite_marker, NULL };
	static const char *names[] = { ") ) Z 1 (x) 2", "a b) R 9 9 9 9", ")", "x\ny) T" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		char *args[] = { "-c", (char *)names[i], NULL };
		pid_t pid;
		ck_assert_int_eq(tu_fixture("comm", args, env, &pid, 1), 1);
		struct tu_proc p;
		ck_assert_int_eq(tu_pin(&p, pid, 0), 0);
		char path[64], buf[1024];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		int fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		ssize_t n = read(fd, buf, sizeof buf);
		close(fd);
		ck_assert_int_gt(n, 0);
		struct reaper_stat st;
		ck_assert_int_eq(reaper_parse_stat(buf, (size_t)n, &st), 0);
		ck_assert_int_eq(st.pid, pid);
		ck_assert_str_eq(st.comm, names[i]);
		/* a wrong parse past the comm reads ')' or a digit; R is a busy machine */
		ck_assert_msg(st.state == 'S' || st.state == 'R', "state %c", st.state);
		ck_assert_int_eq(st.ppid, status_ppid(pid)); /* what /proc/PID/status says too */
		ck_assert_int_eq(st.pgrp, st.session);       /* the double fork's setsid */
		ck_assert_int_ne(st.session, getsid(0));
		ck_assert_uint_eq(st.start_time, p.start_time);
		ck_assert_int_eq(tu_kill_wait(&p), 0);
		ck_assert(!tu_exists(pid, p.start_time));
	}
}
END_TEST

/* ---- environ ---- */

#define ENV(lit) lit, sizeof(lit) - 1 /* a block with its final NUL, like /proc gives */

static int has(const char *env, size_t len, const char *entry)
{
	return reaper_environ_has(env, len, entry, strlen(entry));
}

START_TEST(environ_exact_entry_only)
{
	static const char e[] = "PATH=/bin\0HOME=/tmp/a\0XHOME=/tmp/b\0HOME2=/tmp/c\0";
	size_t len = sizeof e - 1;
	ck_assert_int_eq(has(e, len, "HOME=/tmp/a"), 1);
	ck_assert_int_eq(has(e, len, "XHOME=/tmp/b"), 1);
	ck_assert_int_eq(has(e, len, "HOME=/tmp/b"), 0);   /* suffix of another entry */
	ck_assert_int_eq(has(e, len, "HOME=/tmp/"), 0);    /* prefix of an entry */
	ck_assert_int_eq(has(e, len, "HOME=/tmp/ab"), 0);  /* an entry is a prefix of it */
	ck_assert_int_eq(has(e, len, "HOME=/tmp/c"), 0);   /* HOME2 is another name */
	ck_assert_int_eq(has(e, len, "OME=/tmp/a"), 0);
	ck_assert_int_eq(reaper_environ_has(e, len, "HOME=/tmp/a\0XHOME=/tmp/b", 24), 0); /* spans two */
}
END_TEST

START_TEST(environ_last_entry_without_nul)
{
	const char e[] = { 'A', '=', '1', 0, 'B', '=', '2' }; /* no NUL at the end, none after */
	char *heap = malloc(sizeof e);
	memcpy(heap, e, sizeof e);
	ck_assert_int_eq(has(heap, sizeof e, "B=2"), 1);
	ck_assert_int_eq(has(heap, sizeof e, "B=2x"), 0);
	ck_assert_int_eq(has(heap, sizeof e, "B="), 0);
	ck_assert_int_eq(has(heap, sizeof e, "A=1"), 1);
	size_t vlen = 99;
	const char *v = reaper_environ_get(heap, sizeof e, "B", &vlen);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(vlen, 1);
	ck_assert_int_eq(v[0], '2');
	free(heap);
}
END_TEST

START_TEST(environ_empty)
{
	size_t vlen = 0;
	ck_assert_int_eq(has("", 0, "HOME=/x"), 0);
	ck_assert_int_eq(reaper_environ_has("HOME=/x", 7, "", 0), 0); /* empty entry never matches */
	ck_assert_int_eq(has(ENV("\0\0"), "HOME=/x"), 0);
	ck_assert_ptr_null(reaper_environ_get("", 0, "HOME", &vlen));
	ck_assert_ptr_null(reaper_environ_get(ENV("\0\0"), "HOME", &vlen));
	/* an empty value is a value */
	const char *v = reaper_environ_get(ENV("HOME=\0"), "HOME", &vlen);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(vlen, 0);
	ck_assert_int_eq(has(ENV("HOME=\0"), "HOME="), 1);
}
END_TEST

START_TEST(environ_get_name_exact)
{
	size_t vlen = 0;
	static const char e[] = "HOMEX=1\0HOM=2\0HOME\0REAPER_TEST=test_a b\0HOME=/h\0HOME=/second\0";
	size_t len = sizeof e - 1;
	const char *v = reaper_environ_get(e, len, "HOME", &vlen);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(vlen, 2);
	ck_assert_int_eq(memcmp(v, "/h", 2), 0); /* the first HOME= entry, as getenv(3) takes it */
	v = reaper_environ_get(e, len, "REAPER_TEST", &vlen);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(vlen, 8);
	ck_assert_int_eq(memcmp(v, "test_a b", 8), 0);
	ck_assert_ptr_null(reaper_environ_get(e, len, "HO", &vlen));
	ck_assert_ptr_null(reaper_environ_get(e, len, "MISSING", &vlen));
}
END_TEST

/* Against the kernel: our own environ holds PATH exactly as getenv sees it. */
START_TEST(environ_real_proc)
{
	char buf[1 << 16];
	int fd = open("/proc/self/environ", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf + len, sizeof buf - len)) > 0)
		len += (size_t)n;
	close(fd);
	const char *path = getenv("PATH");
	ck_assert_ptr_nonnull(path);
	char entry[8192];
	snprintf(entry, sizeof entry, "PATH=%s", path);
	ck_assert_int_eq(has(buf, len, entry), 1);
	entry[strlen(entry) - 1] = 0;
	ck_assert_int_eq(has(buf, len, entry), 0);
	size_t vlen = 0;
	const char *v = reaper_environ_get(buf, len, "PATH", &vlen);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(vlen, strlen(path));
}
END_TEST

/* ---- adoption ---- */

static int subreaper_flag(void)
{
	int flag = -1;
	ck_assert_int_eq(prctl(PR_GET_CHILD_SUBREAPER, &flag, 0, 0, 0), 0);
	return flag;
}

/* A pidref with the cleanup attribute closes its pidfd when its block ends, but for the one
 * handed on with TAKE_PIDREF, which stays open in its new holder. */
START_TEST(pidref_cleanup_and_take)
{
	int hold[2];
	ck_assert_int_eq(pipe(hold), 0);
	pid_t kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		char c;
		close(hold[1]);
		_exit(read(hold[0], &c, 1) < 0);
	}
	close(hold[0]);
	struct reaper_stat st;
	int dropped = -1, taken = -1;
	struct pidref kept = PIDREF_NULL;
	{
		_cleanup_(pidref_done) struct pidref a = PIDREF_NULL;
		ck_assert_int_eq(pidref_open_stat(&a, -1, kid, &st), 0);
		dropped = a.fd;
		{
			_cleanup_(pidref_done) struct pidref b = PIDREF_NULL;
			ck_assert_int_eq(pidref_open_stat(&b, -1, kid, &st), 0);
			taken = b.fd;
			kept = TAKE_PIDREF(b);
			ck_assert_int_eq(b.pid, 0);
			ck_assert_int_eq(b.fd, -1);
		}
		ck_assert_int_ge(fcntl(dropped, F_GETFD), 0); /* its block has not ended yet */
	}
	ck_assert_int_ge(dropped, 0);
	errno = 0;
	ck_assert_int_eq(fcntl(dropped, F_GETFD), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(kept.fd, taken);
	ck_assert_int_ge(fcntl(taken, F_GETFD), 0);
	ck_assert_int_eq(pidref_held(&kept, -1), 0);
	close(hold[1]); /* the child reads EOF and exits */
	int ws;
	ck_assert_int_eq(waitpid(kid, &ws, 0), kid);
	pidref_done(&kept);
	errno = 0;
	ck_assert_int_eq(fcntl(taken, F_GETFD), -1);
}
END_TEST

START_TEST(adopt_refcount)
{
	ck_assert_int_eq(reaper_adopted(), 0);
	ck_assert_int_eq(subreaper_flag(), 0);
	ck_assert_int_eq(reaper_release(), -EINVAL);
	ck_assert_int_eq(reaper_adopt(), 1);
	ck_assert_int_eq(subreaper_flag(), 1);
	ck_assert_int_eq(reaper_adopt(), 2);
	ck_assert_int_eq(reaper_release(), 1);
	ck_assert_int_eq(subreaper_flag(), 1); /* still held by the other adopter */
	ck_assert_int_eq(reaper_adopted(), 1);
	ck_assert_int_eq(reaper_release(), 0);
	ck_assert_int_eq(subreaper_flag(), 0);
	ck_assert_int_eq(reaper_release(), -EINVAL);
	ck_assert_int_eq(reaper_adopted(), 0);
}
END_TEST

/* A host that made itself a subreaper before it used the library stays one after the last
 * release (each test runs in a forked process, so the setting does not outlive it). */
START_TEST(adopt_release_restores_host_setting)
{
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	ck_assert_int_eq(reaper_adopt(), 1);
	ck_assert_int_eq(reaper_adopt(), 2);
	ck_assert_int_eq(reaper_release(), 1);
	ck_assert_int_eq(reaper_release(), 0);
	ck_assert_int_eq(subreaper_flag(), 1);
	/* and a host that was not one is not left one, even after it had been meanwhile */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
	ck_assert_int_eq(reaper_adopt(), 1);
	ck_assert_int_eq(subreaper_flag(), 1);
	ck_assert_int_eq(reaper_release(), 0);
	ck_assert_int_eq(subreaper_flag(), 0);
}
END_TEST

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	handled = sig;
}

static void on_signal_info(int sig, siginfo_t *info, void *ctx)
{
	handled = info->si_signo == sig ? sig : -1;
}

/* A forked child of the caller's, that waits in sigsuspend() until a handler has run (then exits
 * 42; SIGALRM ends it after a minute if nothing else does), sent sig once it is running: how
 * it ended. */
static int child_sent(int sig)
{
	int ready[2], status;
	ck_assert_int_eq(pipe(ready), 0);
	pid_t kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		sigset_t block, none;
		sigemptyset(&block);
		sigaddset(&block, sig);
		sigemptyset(&none);
		sigprocmask(SIG_BLOCK, &block, NULL); /* delivered in sigsuspend only: none is lost */
		signal(SIGALRM, SIG_DFL);
		alarm(60);
		close(ready[0]);
		if (write(ready[1], "x", 1) != 1)
			_exit(3);
		handled = 0;
		while (!handled)
			sigsuspend(&none);
		_exit(42); /* the inherited handler ran */
	}
	close(ready[1]);
	char c;
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	/* through a pidfd; valgrind has none, and a child not collected yet keeps its pid anyway */
	int pfd = (int)syscall(SYS_pidfd_open, kid, 0);
	if (pfd >= 0) {
		ck_assert_int_eq(syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0), 0);
		close(pfd);
	} else {
		ck_assert_int_eq(errno, ENOSYS);
		ck_assert_int_eq(kill(kid, sig), 0);
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	return status;
}

/* A kept handler runs in the process that kept it, and a child forked afterwards ends by the
 * signal as at its default action (each test runs in a forked process of its own). */
START_TEST(kept_handler_runs_in_its_process_only)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(reaper_keep_handler(0), -EINVAL);
	ck_assert_int_eq(reaper_keep_handler(SIGKILL), -EINVAL);
	ck_assert_int_eq(reaper_keep_handler(NSIG), -EINVAL);
	sa.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(reaper_keep_handler(SIGUSR1), -EINVAL); /* nothing to keep */
	sa.sa_handler = on_signal;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	/* without it, a child runs the inherited handler and waits on */
	int status = child_sent(SIGUSR1);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 42);
	ck_assert_int_eq(reaper_keep_handler(SIGUSR1), 0);
	ck_assert_int_eq(reaper_keep_handler(SIGUSR1), 0); /* kept already */
	handled = 0;
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(handled, SIGUSR1);
	status = child_sent(SIGUSR1);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1);
	/* a handler that takes siginfo gets it */
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO;
	sa.sa_sigaction = on_signal_info;
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	ck_assert_int_eq(reaper_keep_handler(SIGUSR2), 0);
	handled = 0;
	ck_assert_int_eq(raise(SIGUSR2), 0);
	ck_assert_int_eq(handled, SIGUSR2);
	status = child_sent(SIGUSR2);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR2);
	/* another handler installed undoes it: a child runs that one */
	sa.sa_flags = 0;
	sa.sa_handler = on_signal;
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	status = child_sent(SIGUSR2);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 42);
	ck_assert_int_eq(tu_zombie_children(), 0);
}
END_TEST

static void *adopt_churn(void *arg)
{
	for (int i = 0; i < 2000; i++) {
		if (reaper_adopt() < 1)
			return (void *)1;
		if (subreaper_flag() != 1) /* someone holds it: it must be on */
			return (void *)2;
		if (reaper_release() < 0)
			return (void *)3;
	}
	return NULL;
}

START_TEST(adopt_threads)
{
	pthread_t t[4];
	ck_assert_int_eq(reaper_adopt(), 1); /* held throughout, so the flag never drops */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, adopt_churn, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		ck_assert_ptr_null(ret);
	}
	ck_assert_int_eq(reaper_adopted(), 1);
	ck_assert_int_eq(reaper_release(), 0);
	ck_assert_int_eq(subreaper_flag(), 0);
}
END_TEST

/* Adoption is what brings a double-forked daemon back to us. */
START_TEST(adopt_brings_orphans_back)
{
	char env_home[160];
	ck_assert_int_eq(tu_unique_marker(env_home, sizeof env_home, "HOME", "/tmp/reaper-core-adopt"), 0);
	char *env[] = { "PATH=/usr/bin:/bin", env_home, suite_marker, NULL };
	pid_t pid;
	ck_assert_int_eq(reaper_adopt(), 1);
	ck_assert_int_eq(tu_fixture("daemon", NULL, env, &pid, 1), 1);
	char buf[1024];
	snprintf(buf, sizeof buf, "/proc/%d/stat", (int)pid);
	struct tu_proc p;
	ck_assert_int_eq(tu_pin(&p, pid, 0), 0);
	FILE *f = fopen(buf, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
	fclose(f);
	struct reaper_stat st;
	ck_assert_int_eq(reaper_parse_stat(buf, strlen(buf), &st), 0);
	ck_assert_int_eq(st.ppid, getpid());
	ck_assert_int_eq(tu_kill_wait(&p), 0); /* our child now: collected, no zombie */
	ck_assert_int_eq(tu_zombie_children(), 0);
	ck_assert_int_eq(reaper_release(), 0);
}
END_TEST

int main(void)
{
	tu_unique_marker(suite_marker, sizeof suite_marker, "REAPER_CHECK_SUITE", "core");
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("stat");
	tcase_add_test(tc, stat_plain);
	tcase_add_test(tc, stat_comm_spaces_and_parens);
	tcase_add_test(tc, stat_truncated);
	tcase_add_test(tc, stat_garbage);
	tcase_add_test(tc, stat_long_comm_clipped);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	/* "pidfd": kills a process that is not our child, which needs pidfds (valgrind 3.19
	 * has none); check-valgrind excludes this tag */
	tc = tcase_create("stat_pidfd");
	tcase_set_tags(tc, "pidfd");
	tcase_add_test(tc, stat_real_process_fooling_comm);
	tcase_add_test(tc, pidref_cleanup_and_take);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("environ");
	tcase_add_test(tc, environ_exact_entry_only);
	tcase_add_test(tc, environ_last_entry_without_nul);
	tcase_add_test(tc, environ_empty);
	tcase_add_test(tc, environ_get_name_exact);
	tcase_add_test(tc, environ_real_proc);
	suite_add_tcase(s, tc);
	tc = tcase_create("adopt");
	tcase_add_test(tc, adopt_refcount);
	tcase_add_test(tc, adopt_release_restores_host_setting);
	tcase_add_test(tc, adopt_threads);
	tcase_add_test(tc, adopt_brings_orphans_back);
	tcase_add_test(tc, kept_handler_runs_in_its_process_only);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, suite_marker);
	return tu_run_suite(s);
}
