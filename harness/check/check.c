/* SPDX-License-Identifier: MIT */
/* Check helper: a checked fixture per TCase that marks each test's processes and fails the
 * test with what it left behind. Check's fixtures take no argument, so each checked TCase
 * gets its own slot of small trampolines that know which TCase they belong to. */
#define _GNU_SOURCE
#include "reaper/check.h"
#include "reaper/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MARKER "REAPER_CHECK"
#define RUN_MARKER "REAPER_CHECK_RUN"
#define MAX_ALLOW 32
#define MAX_LISTED 8
#define DEFAULT_TIMEOUT 2.0

static char *names[REAPER_CHECK_MAX_TCASES];
static int ntcases;
static double timeout = -1;
static struct reaper_pattern allow[MAX_ALLOW];
static size_t nallow;
static char run_value[48]; /* this runner's: every test's processes carry it */
static unsigned long seq;  /* tests begun in this process (CK_NOFORK counts on) */

/* The running test; one at a time per process in both fork modes. */
static struct {
	char entry[160]; /* REAPER_CHECK=<value> */
	char *saved[3];
	int had[3];
	int adopted;
	uint64_t since; /* when it began, in clock ticks since boot (as a start time) */
} cur;
static const char *const vars[3] = { "REAPER_TEST", MARKER, RUN_MARKER };

static void random_hex(char *out, size_t n)
{
	unsigned char b[8] = { 0 };
	if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		memcpy(b, &ts.tv_nsec, sizeof ts.tv_nsec < sizeof b ? sizeof ts.tv_nsec : sizeof b);
	}
	for (size_t i = 0; i < sizeof b && 2 * i + 2 < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static double timeout_now(void)
{
	if (timeout >= 0)
		return timeout;
	const char *e = getenv("REAPER_CHECK_TIMEOUT");
	char *end;
	double v = e ? strtod(e, &end) : -1;
	if (e && (end == e || *end || !isfinite(v) || v < 0)) {
		fprintf(stderr, "reaper: REAPER_CHECK_TIMEOUT=%s is not a number of seconds >= 0; using %g\n",
			e, DEFAULT_TIMEOUT);
		v = -1;
	}
	timeout = v >= 0 ? v : DEFAULT_TIMEOUT;
	return timeout;
}

int reaper_check_set_timeout(double seconds)
{
	if (!isfinite(seconds) || seconds < 0)
		return -EINVAL;
	timeout = seconds;
	return 0;
}

int reaper_check_allow(const char *glob)
{
	if (!glob)
		return -EINVAL;
	if (nallow == MAX_ALLOW)
		return -ENOSPC;
	allow[nallow++] = (struct reaper_pattern){ .kind = REAPER_ALLOW, .glob = glob };
	return 0;
}

static void env_set(int i, const char *value)
{
	const char *old = getenv(vars[i]);
	cur.had[i] = old != NULL;
	cur.saved[i] = old ? strdup(old) : NULL;
	setenv(vars[i], value, 1);
}

static void env_restore(void)
{
	for (int i = 0; i < 3; i++) {
		if (cur.had[i] && cur.saved[i])
			setenv(vars[i], cur.saved[i], 1);
		else
			unsetenv(vars[i]);
		free(cur.saved[i]);
		cur.saved[i] = NULL;
	}
}

/* Now, in the unit of a process's start time. */
static uint64_t ticks_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	long hz = sysconf(_SC_CLK_TCK);
	return (uint64_t)ts.tv_sec * (uint64_t)hz + (uint64_t)ts.tv_nsec / (1000000000u / (uint64_t)hz);
}

/* What carries entry; with since, also what this process started from then on that carries
 * no other test's marker (children forked without exec carry our exec-time environment, not
 * what setenv changed since). */
static int reap(const char *entry, uint64_t since, double secs, struct reaper_report **rep)
{
	struct reaper_finder f[2] = { reaper_find_env(entry), reaper_find_tree(0) };
	f[1].since = since;
	f[1].marker = entry;
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = secs;
	o.patterns = allow;
	o.npatterns = nallow;
	return reaper_reap(f, since ? 2 : 1, &o, rep);
}

/* "PID: cmdline" lines of the leaks, at most MAX_LISTED, into buf. */
static void list_leaks(const struct reaper_report *rep, char *buf, size_t len)
{
	size_t used = strlen(buf), listed = 0;
	for (size_t i = 0; i < rep->n && used + 1 < len; i++) {
		const struct reaper_proc *p = &rep->procs[i];
		int leak = !p->allowed && (p->fate == REAPER_KILLED || p->fate == REAPER_TERMINATED ||
					   p->fate == REAPER_UNKILLABLE || p->fate == REAPER_ALIVE);
		if (!leak)
			continue;
		int w = listed++ < MAX_LISTED
				? snprintf(buf + used, len - used, "\n  %d: %.200s [%s, cwd %s]", (int)p->pid,
					   p->cmdline, reaper_fate_name(p->fate), p->cwd[0] ? p->cwd : "?")
				: 0;
		if (w > 0)
			used += (size_t)w < len - used ? (size_t)w : len - used - 1;
	}
	if (listed > MAX_LISTED && used + 1 < len)
		snprintf(buf + used, len - used, "\n  ... and %zu more", listed - MAX_LISTED);
}

/* Orphans the test left and we adopted that exited before its reap began look like our own
 * exited children, which the library never collects: the test is over, so its zombie
 * children (started since it began) are collected here, each by its pid, none other. */
static void collect_test_zombies(uint64_t since)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task", (int)getpid());
	DIR *tasks = opendir(path);
	struct dirent *t;
	while (tasks && (t = readdir(tasks))) {
		if (t->d_name[0] < '1' || t->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", (int)getpid(), t->d_name);
		FILE *f = fopen(path, "re");
		int pid;
		while (f && fscanf(f, "%d", &pid) == 1) {
			snprintf(path, sizeof path, "/proc/%d/stat", pid);
			FILE *sf = fopen(path, "re");
			size_t n = sf ? fread(buf, 1, sizeof buf - 1, sf) : 0;
			if (sf)
				fclose(sf);
			buf[n] = 0;
			char *rp = strrchr(buf, ')'), state = 0;
			unsigned long long start = 0;
			/* after the comm: state (3), then fields 4-21, then the start time (22) */
			if (rp && sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
					 &state, &start) == 2 && state == 'Z' && start >= since) {
				siginfo_t si;
				waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG);
			}
		}
		if (f)
			fclose(f);
	}
	if (tasks)
		closedir(tasks);
}

static void checked_setup(int slot)
{
	char rnd[17], value[128];
	random_hex(rnd, sizeof rnd);
	snprintf(value, sizeof value, "%s.%d.%lu.%s", run_value, (int)getpid(), ++seq, rnd);
	snprintf(cur.entry, sizeof cur.entry, MARKER "=%s", value);
	env_set(0, names[slot]);
	env_set(1, value);
	env_set(2, run_value);
	cur.adopted = reaper_adopt() > 0;
	cur.since = ticks_now();
}

static void checked_teardown(int slot)
{
	static char msg[4096];
	struct reaper_report *rep = NULL;
	const char *test = tcase_name();
	env_restore();
	double secs = timeout_now();
	int r = reap(cur.entry, cur.since, secs, &rep);
	collect_test_zombies(cur.since);
	if (cur.adopted)
		reaper_release();
	cur.adopted = 0;
	if (r < 0)
		ck_abort_msg("reaper: cannot check test %s for leftovers: %s", test ? test : names[slot], strerror(-r));
	size_t leaks = rep->leaks;
	if (leaks) {
		snprintf(msg, sizeof msg, "reaper: test %s left %zu process%s running; killed after %g s:",
			 test ? test : names[slot], leaks, leaks > 1 ? "es" : "", secs);
		list_leaks(rep, msg, sizeof msg);
	}
	reaper_report_free(rep);
	if (leaks)
		ck_abort_msg("%s", msg);
}

/* Tests that failed or crashed in CK_FORK mode skipped their teardown: clean up after them. */
static void unchecked_teardown(int slot)
{
	char entry[96], msg[4096];
	struct reaper_report *rep = NULL;
	snprintf(entry, sizeof entry, RUN_MARKER "=%s", run_value);
	int r = reap(entry, 0, 0, &rep);
	if (r < 0) {
		fprintf(stderr, "reaper: tcase %s: cannot look for leftovers: %s\n", names[slot], strerror(-r));
		return;
	}
	if (rep->leaks) {
		snprintf(msg, sizeof msg, "reaper: tcase %s: killed %zu process%s left by tests that failed or "
			 "crashed:", names[slot], rep->leaks, rep->leaks > 1 ? "es" : "");
		list_leaks(rep, msg, sizeof msg);
		fprintf(stderr, "%s\n", msg);
	}
	reaper_report_free(rep);
}

#define SLOT(i)                                                      \
	static void cs_##i(void) { checked_setup(i); }               \
	static void ct_##i(void) { checked_teardown(i); }            \
	static void ut_##i(void) { unchecked_teardown(i); }
#define SLOT8(a) SLOT(a##0) SLOT(a##1) SLOT(a##2) SLOT(a##3) SLOT(a##4) SLOT(a##5) SLOT(a##6) SLOT(a##7)
SLOT8(0) SLOT8(1) SLOT8(2) SLOT8(3) SLOT8(4) SLOT8(5) SLOT8(6) SLOT8(7)
#define ROW(i) { cs_##i, ct_##i, ut_##i },
#define ROW8(a) ROW(a##0) ROW(a##1) ROW(a##2) ROW(a##3) ROW(a##4) ROW(a##5) ROW(a##6) ROW(a##7)
static const struct {
	SFun cs, ct, ut;
} slots[] = { ROW8(0) ROW8(1) ROW8(2) ROW8(3) ROW8(4) ROW8(5) ROW8(6) ROW8(7) };
_Static_assert(sizeof slots / sizeof *slots == REAPER_CHECK_MAX_TCASES, "one slot per checked TCase");

int reaper_check_tcase(TCase *tc, const char *name)
{
	if (!tc)
		return -EINVAL;
	if (ntcases == REAPER_CHECK_MAX_TCASES)
		return -ENOSPC;
	char fallback[32];
	snprintf(fallback, sizeof fallback, "tcase %d", ntcases + 1);
	if (!(names[ntcases] = strdup(name ? name : fallback)))
		return -ENOMEM;
	if (!run_value[0]) {
		char rnd[17];
		random_hex(rnd, sizeof rnd);
		snprintf(run_value, sizeof run_value, "%d.%s", (int)getpid(), rnd);
	}
	int i = ntcases++;
	tcase_add_unchecked_fixture(tc, NULL, slots[i].ut);
	tcase_add_checked_fixture(tc, slots[i].cs, slots[i].ct);
	return 0;
}
