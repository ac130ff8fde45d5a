/* SPDX-License-Identifier: MIT */
/* check_core_holdings: reaper_opts.holdings against a real leftover that listens on a port,
 * holds a locked file and a deleted one under its directory, and keeps a connection open: the
 * report names each, read before the SIGKILL; without the option nothing is gathered, and an
 * allowed process gets none. The leftover is our own child, so this runs without pidfds too. */
#define _GNU_SOURCE
#include "reaper/reaper.h"
#include "tests/testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char suite_marker[128];

struct holder {
	pid_t pid;
	int port;
	char dir[64];
};

/* Fork a child that takes its holdings, says so on a pipe, then waits to be killed. */
static void start_holder(struct holder *h, const char *tag)
{
	snprintf(h->dir, sizeof h->dir, "/tmp/reaper-hold-%s-XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(h->dir));
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	h->pid = fork();
	ck_assert_int_ge(h->pid, 0);
	if (h->pid == 0) {
		close(p[0]);
		putenv(suite_marker);
		int ls = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof a;
		if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4) < 0 ||
		    getsockname(ls, (struct sockaddr *)&a, &al) < 0)
			_exit(1);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0)
			_exit(1);
		char path[128];
		snprintf(path, sizeof path, "%s/app.db", h->dir);
		int db = open(path, O_RDWR | O_CREAT, 0600);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		if (db < 0 || fcntl(db, F_SETLK, &fl) < 0)
			_exit(1);
		snprintf(path, sizeof path, "%s/scratch", h->dir);
		int gone = open(path, O_RDWR | O_CREAT, 0600);
		if (gone < 0 || unlink(path) < 0)
			_exit(1);
		int port = ntohs(a.sin_port);
		if (write(p[1], &port, sizeof port) != (ssize_t)sizeof port)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &h->port, sizeof h->port), (ssize_t)sizeof h->port);
	close(p[0]);
}

static void end_holder(struct holder *h)
{
	char path[128];
	snprintf(path, sizeof path, "%s/app.db", h->dir);
	unlink(path);
	rmdir(h->dir);
}

static const struct reaper_proc *find(const struct reaper_report *r, pid_t pid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	ck_abort_msg("pid %d not in the report", (int)pid);
	return NULL;
}

static int has(const struct reaper_proc *p, enum reaper_hold_kind kind, const char *what)
{
	for (size_t i = 0; i < p->nholdings; i++)
		if (p->holdings[i].kind == kind && !strcmp(p->holdings[i].what, what))
			return 1;
	return 0;
}

/* A holder, the finder that finds it (descent from us), and default options. */
static void begin(struct holder *h, const char *tag, struct reaper_finder *f, struct reaper_opts *o)
{
	start_holder(h, tag);
	*f = reaper_find_tree(0);
	reaper_opts_init(o);
}

START_TEST(leak_holdings_are_named_before_the_kill)
{
	struct holder h;
	struct reaper_finder f;
	struct reaper_opts o;
	begin(&h, "named", &f, &o);
	const char *dirs[] = { h.dir };
	o.holdings = 1;
	o.hold_dirs = dirs;
	o.nhold_dirs = 1;
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	const struct reaper_proc *p = find(r, h.pid);
	ck_assert(reaper_proc_is_leak(p));
	ck_assert_int_eq(p->holdings_read, 1);
	ck_assert_ptr_nonnull(p->holds);
	char want[256];
	snprintf(want, sizeof want, "127.0.0.1:%d (listening)", h.port);
	ck_assert_msg(has(p, REAPER_HOLD_LISTENING, want), "%s not in: %s", want, p->holds);
	ck_assert_msg(strncmp(p->holds, want, strlen(want)) == 0, "the port comes first: %s", p->holds);
	snprintf(want, sizeof want, "%s/app.db (locked)", h.dir);
	ck_assert_msg(has(p, REAPER_HOLD_FILE, want), "%s not in: %s", want, p->holds);
	snprintf(want, sizeof want, "%s/scratch (deleted)", h.dir);
	ck_assert_msg(has(p, REAPER_HOLD_DELETED, want), "%s not in: %s", want, p->holds);
	snprintf(want, sizeof want, "(established, to 127.0.0.1:%d)", h.port);
	int connected = 0;
	for (size_t i = 0; i < p->nholdings; i++)
		connected += p->holdings[i].kind == REAPER_HOLD_CONNECTED && strstr(p->holdings[i].what, want);
	ck_assert_msg(connected == 1, "one end of the connection to the port: %s", p->holds);
	ck_assert(p->rss > 0);
	ck_assert_str_eq(reaper_hold_kind_name(REAPER_HOLD_DELETED), "deleted");
	reaper_report_free(r);
	ck_assert(!tu_exists(h.pid, 0));
	end_holder(&h);
}
END_TEST

START_TEST(nothing_gathered_unless_asked_or_for_the_allowed)
{
	struct holder h;
	struct reaper_finder f;
	struct reaper_opts o;
	begin(&h, "off", &f, &o);
	struct reaper_report *r = NULL;
	ck_assert_int_eq(reaper_scan(&f, 1, &r), 0);
	const struct reaper_proc *p = find(r, h.pid);
	ck_assert_int_eq(p->holdings_read, 0);
	ck_assert_ptr_null(p->holds);
	ck_assert_uint_eq(p->nholdings, 0);
	reaper_report_free(r);
	/* allowed: cleaned up, not a leak, so nothing of it is looked at */
	char glob[64];
	snprintf(glob, sizeof glob, "*");
	struct reaper_pattern allow = { REAPER_ALLOW, glob };
	o.holdings = 1;
	o.patterns = &allow;
	o.npatterns = 1;
	ck_assert_int_eq(reaper_reap(&f, 1, &o, &r), 0);
	p = find(r, h.pid);
	ck_assert(p->allowed);
	ck_assert_int_eq(p->holdings_read, 0);
	ck_assert_ptr_null(p->holds);
	reaper_report_free(r);
	ck_assert(!tu_exists(h.pid, 0));
	end_holder(&h);
}
END_TEST

int main(void)
{
	tu_unique_marker(suite_marker, sizeof suite_marker, "REAPER_CHECK_SUITE", "core-holdings");
	Suite *s = suite_create("core-holdings");
	TCase *tc = tcase_create("holdings");
	tcase_add_test(tc, leak_holdings_are_named_before_the_kill);
	tcase_add_test(tc, nothing_gathered_unless_asked_or_for_the_allowed);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tu_add_nothing_left(s, suite_marker);
	return tu_run_suite(s);
}
