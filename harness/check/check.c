/* SPDX-License-Identifier: MIT */
/* Check helper: a checked fixture per TCase that marks each test's processes and fails the
 * test with what it left behind, and an exit handler for the tests that end without their
 * teardown. Check's fixtures take no argument, so each checked TCase gets its own slot of
 * small trampolines that know which TCase they belong to. */
#define _GNU_SOURCE
#include "reaper/check.h"
#include "reaper/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MARKER "REAPER_CHECK"
#define RUN_MARKER "REAPER_CHECK_RUN"
#define MAX_ALLOW 32
#define MAX_LISTED 8
#define MAX_OWN 64
#define DEFAULT_TIMEOUT 2.0

static char *names[REAPER_CHECK_MAX_TCASES];
static int in_use[REAPER_CHECK_MAX_TCASES]; /* registered and its run not yet ended */
static int ntcases;                          /* reaper_check_tcase calls that took a slot */
static double timeout = -1;
static struct reaper_pattern allow[MAX_ALLOW];
static size_t nallow;
static char run_value[48]; /* this runner's: every test's processes carry it */
static pid_t run_owner;    /* the process run_value was made in */
static unsigned long seq;  /* tests begun in this process (CK_NOFORK counts on) */
static int cg_mode = -1;   /* enum reaper_check_cgroup; -1: not read from the environment yet */
/* The runner's cgroup for one TCase's tests ("" while there is none): made by the runner
 * (an unchecked fixture) below its own cgroup; each test's cgroup is made below it, so the
 * runner finds what tests that never reached their teardown left in theirs. */
static char session_cg[PATH_MAX];
static char session_why[160]; /* why there is none, in words */
static int tcase_open; /* a checked TCase's run has begun in this process (or the one it forked from) */
/* TCase runs begun while another one was open: a runner inside a test (or a fixture). Their
 * tests belong to the outer test, whose check finds what they leave: the inner fixtures do
 * nothing, so the inner runner neither kills under the outer test nor takes its cgroups. */
static int nested;
/* The process that runs the open TCase's unchecked fixtures, and what it holds for it. */
static pid_t runner_pid;
static int session_slot = -1;
static int runner_adopted; /* without cgroups: the runner adopts what its tests orphan */
static uint64_t session_since;
static pid_t session_earlier[MAX_OWN]; /* its children at the TCase's start, in that tick */
static size_t nsession_earlier;
static int ran_in_runner; /* a test of the open TCase ran in the runner (CK_NOFORK) */
/* The runner's children that unchecked fixtures added after ours started (after the TCase
 * began, before its first test): the runner's, not its tests'. The first test's setup notes
 * them (in CK_FORK mode in the test's process, so the page is shared with the runner). */
static struct fixture_page {
	int noted;
	size_t n;
	pid_t pid[MAX_OWN];
} *fpage;
/* CK_NOFORK: a test that crashes, is killed or calls _exit() ends the runner, and none of
 * our code runs after it. A guardian process, forked from the runner when the open TCase's
 * first test runs there, waits for the runner's end or for the TCase's; on the runner's end
 * it kills what the tests left (the TCase's cgroup, the run's marker), removes the cgroups
 * and names the test that ran. Its page, shared with the runner, holds that name. */
static int guardian_wake = -1; /* the runner's end of the pipe that says the TCase ended */
static struct guardian_page {
	char test[160];
} *gpage;
/* Every test added through the header (its START_TEST record: name, file, line). */
static const TTest **ttests;
static size_t nttests, ttests_cap;

/* The running test; one at a time per process in both fork modes. */
static struct {
	int open;        /* set up and not yet checked */
	char entry[160]; /* REAPER_CHECK=<value> */
	char *saved[3];
	int had[3];
	int adopted;
	uint64_t since; /* when it began, in clock ticks since boot (as a start time) */
	char cg[PATH_MAX];   /* the test's cgroup, "" when it has none */
	char prev[PATH_MAX]; /* where its process was before it entered cg */
	pid_t own[MAX_OWN];  /* the test's own children (reaper_check_own) */
	const char *own_file[MAX_OWN]; /* where reaper_check_fork was called for each, or NULL */
	int own_line[MAX_OWN];
	size_t nown;
	int slot;   /* its TCase's */
	pid_t pid;  /* the process it runs in */
	/* children already there when it began, started in the clock tick it began in (a
	 * fixture's before ours): start times alone would count them as the test's */
	pid_t earlier[MAX_OWN];
	size_t nearlier;
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

/* A new run marker value, made in and owned by this process. */
static void run_value_make(void)
{
	char rnd[17];
	random_hex(rnd, sizeof rnd);
	snprintf(run_value, sizeof run_value, "%d.%s", (int)getpid(), rnd);
	run_owner = getpid();
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

int reaper_check_use_cgroup(enum reaper_check_cgroup mode)
{
	if (mode != REAPER_CHECK_CGROUP_AUTO && mode != REAPER_CHECK_CGROUP_ON && mode != REAPER_CHECK_CGROUP_OFF)
		return -EINVAL;
	cg_mode = (int)mode;
	return 0;
}

static enum reaper_check_cgroup cgroup_mode(void)
{
	if (cg_mode >= 0)
		return (enum reaper_check_cgroup)cg_mode;
	const char *e = getenv("REAPER_CHECK_CGROUP");
	cg_mode = REAPER_CHECK_CGROUP_AUTO;
	if (e && !strcmp(e, "on"))
		cg_mode = REAPER_CHECK_CGROUP_ON;
	else if (e && !strcmp(e, "off"))
		cg_mode = REAPER_CHECK_CGROUP_OFF;
	else if (e && *e && strcmp(e, "auto"))
		fprintf(stderr, "reaper: REAPER_CHECK_CGROUP=%s is not auto, on or off; using auto\n", e);
	return (enum reaper_check_cgroup)cg_mode;
}

static int pid_in(const pid_t *list, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == pid)
			return 1;
	return 0;
}

static int is_own(pid_t pid)
{
	return pid_in(cur.own, cur.nown, pid);
}

int reaper_check_own(pid_t pid)
{
	if (pid <= 0)
		return -EINVAL;
	if (is_own(pid))
		return 0;
	if (cur.nown == MAX_OWN)
		return -ENOSPC;
	cur.own_file[cur.nown] = NULL;
	cur.own[cur.nown++] = pid;
	return 0;
}

pid_t reaper_check_fork_at(const char *file, int line, const char *func)
{
	if (cur.nown == MAX_OWN)
		return -ENOSPC;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0 && file) {
		char at[PATH_MAX + 160];
		snprintf(at, sizeof at, "%s:%d:%.128s", file, line, func ? func : "");
		setenv("REAPER_STARTED_AT", at, 1);
	}
	if (pid > 0) {
		cur.own_file[cur.nown] = file;
		cur.own_line[cur.nown] = line;
		cur.own[cur.nown++] = pid;
	}
	return pid;
}

pid_t(reaper_check_fork)(void)
{
	return reaper_check_fork_at(NULL, 0, NULL);
}

void reaper_check_add_test_(TCase *tc, const TTest *ttest, int signal, int allowed_exit_value, int start, int end)
{
	size_t i = 0;
	while (ttest && i < nttests && ttests[i] != ttest)
		i++;
	if (ttest && i == nttests) {
		if (nttests == ttests_cap) {
			size_t cap = ttests_cap ? 2 * ttests_cap : 32;
			const TTest **grown = realloc(ttests, cap * sizeof *grown);
			if (grown) {
				ttests = grown;
				ttests_cap = cap;
			}
		}
		if (nttests < ttests_cap) /* out of memory: only its failures lose their line */
			ttests[nttests++] = ttest;
	}
	(_tcase_add_test)(tc, ttest, signal, allowed_exit_value, start, end);
}

/* The running test's START_TEST record (Check names the test as its body begins), or NULL. */
static const TTest *running_test(void)
{
	const char *name = tcase_name();
	for (size_t i = 0; name && i < nttests; i++)
		if (ttests[i]->name == name)
			return ttests[i];
	return NULL;
}

/* Fail the running test at its own file and line, as the test's failure (not the
 * fixture's): Check takes the location of the last one given in the test's context. */
static void fail_test(const char *msg)
{
	const TTest *t = running_test();
	if (t) {
		tcase_fn_start(t->name, t->file, t->line);
		_ck_assert_failed(t->file, t->line, "Failed", "%s", msg);
	}
	/* a test added where the header is not included: at our line, but the test's failure */
	if (tcase_name())
		tcase_fn_start(tcase_name(), __FILE__, __LINE__);
	ck_abort_msg("%s", msg);
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
 * what setenv changed since); with cg, whatever lives in that cgroup or below it. The test's
 * own children (own) are signalled but their exit status is left for the test. */
static int reap(const char *entry, uint64_t since, const char *cg, double secs, struct reaper_report **rep)
{
	struct reaper_finder f[3] = { reaper_find_env(entry) };
	size_t n = 1;
	if (since) {
		f[n] = reaper_find_tree(0);
		f[n].since = since;
		f[n].skip = cur.earlier;
		f[n].nskip = cur.nearlier;
		f[n++].marker = entry;
	}
	if (cg && cg[0])
		f[n++] = reaper_find_cgroup(cg);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = secs;
	o.patterns = allow;
	o.npatterns = nallow;
	o.host_children = cur.own;
	o.nhost_children = since ? cur.nown : 0;
	return reaper_reap(f, n, &o, rep);
}

/* Where the test's own child that p is or descends from was forked (reaper_check_fork),
 * going up p's ancestry as first seen ("ppid comm < its ppid comm < ..."). */
static int fork_site(const struct reaper_proc *p, const char **file, int *line)
{
	const char *a = p->ancestry;
	pid_t pid = p->pid;
	for (;;) {
		for (size_t i = 0; i < cur.nown; i++)
			if (cur.own[i] == pid && cur.own_file[i]) {
				*file = cur.own_file[i];
				*line = cur.own_line[i];
				return 1;
			}
		if (!a || !*a)
			return 0;
		pid = (pid_t)strtol(a, NULL, 10);
		if ((a = strstr(a, " < ")))
			a += 3;
	}
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
		const char *file = NULL;
		int line = 0;
		char site[PATH_MAX + 64] = "";
		if (fork_site(p, &file, &line))
			snprintf(site, sizeof site, " (started by reaper_check_fork() at %s:%d)", file, line);
		else if (p->started_file) /* a reaper_check_fork() child's descendant gone astray */
			snprintf(site, sizeof site, " (started at %.1024s:%u)", p->started_file, p->started_line);
		int w = listed++ < MAX_LISTED
				? snprintf(buf + used, len - used, "\n  %d: %.200s [%s, cwd %s]%s%s", (int)p->pid,
					   p->cmdline, reaper_fate_name(p->fate), p->cwd[0] ? p->cwd : "?",
					   p->host_child ? " (the test's own child: its exit status is left for it)" : "",
					   site)
				: 0;
		if (w > 0)
			used += (size_t)w < len - used ? (size_t)w : len - used - 1;
	}
	if (listed > MAX_LISTED && used + 1 < len)
		snprintf(buf + used, len - used, "\n  ... and %zu more", listed - MAX_LISTED);
}

/* fn(pid, state) for each child of process of (of any of its threads) started at since or
 * later. */
static void each_child_of_since(pid_t of, uint64_t since, void (*fn)(pid_t pid, char state))
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task", (int)of);
	DIR *tasks = opendir(path);
	struct dirent *t;
	while (tasks && (t = readdir(tasks))) {
		if (t->d_name[0] < '1' || t->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", (int)of, t->d_name);
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
					 &state, &start) == 2 && start >= since)
				fn(pid, state);
		}
		if (f)
			fclose(f);
	}
	if (tasks)
		closedir(tasks);
}

static void each_child_since(uint64_t since, void (*fn)(pid_t pid, char state))
{
	each_child_of_since(getpid(), since, fn);
}

static void note_earlier(pid_t pid, char state)
{
	(void)state;
	if (cur.nearlier < MAX_OWN)
		cur.earlier[cur.nearlier++] = pid;
}

/* Orphans the test left and we adopted that exited before its reap began look like our own
 * exited children, which the library never collects: the test is over, so its zombie
 * children (started since it began) are collected here, each by its pid, none other but
 * the test's own children, whose exit status is the test's, and the children that were
 * there when it began (a fixture's, started in the same clock tick). */
static void collect_zombie(pid_t pid, char state)
{
	if (state == 'Z' && !is_own(pid) && !pid_in(cur.earlier, cur.nearlier, pid)) {
		siginfo_t si;
		waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG);
	}
}

static void collect_test_zombies(uint64_t since)
{
	each_child_since(since, collect_zombie);
}

static void note_session_earlier(pid_t pid, char state)
{
	(void)state;
	if (nsession_earlier < MAX_OWN)
		session_earlier[nsession_earlier++] = pid;
}

/* The runner's zombie children since the TCase began that were not there when it began:
 * orphans of its forked tests that it adopted and that exited before the sweep. */
static void collect_session_zombie(pid_t pid, char state)
{
	if (state == 'Z' && !pid_in(session_earlier, nsession_earlier, pid)) {
		siginfo_t si;
		waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG);
	}
}

/* The runner makes a cgroup for a TCase's tests when the TCase begins (an unchecked fixture,
 * so it runs in the runner in both fork modes; forked tests inherit its name). Without one,
 * tests are tracked by their marker and by descent, and the runner adopts what they orphan:
 * a test's child that outlives the test then is the runner's, found at the sweep. */
static void session_open(int slot)
{
	if (tcase_open) {
		nested++;
		return;
	}
	tcase_open = 1;
	session_slot = slot;
	runner_pid = getpid();
	/* a runner forked from another one (or from a process that was one) is a run of its own:
	 * its guardian and sweep must not take the other's tests by a shared marker or cgroup */
	if (run_owner != runner_pid)
		run_value_make();
	ran_in_runner = 0;
	session_since = ticks_now();
	nsession_earlier = 0;
	each_child_since(session_since, note_session_earlier);
	if (!fpage) {
		void *m = mmap(NULL, sizeof *fpage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		fpage = m == MAP_FAILED ? NULL : m;
	}
	if (fpage)
		fpage->noted = 0, fpage->n = 0;
	if (cgroup_mode() != REAPER_CHECK_CGROUP_OFF) {
		static int noted;
		char name[96];
		snprintf(name, sizeof name, "reaper-check-%s", run_value);
		int r = reaper_cgroup_create(NULL, name, session_cg, sizeof session_cg);
		if (r == -EEXIST) /* an earlier TCase's, that could not be removed: it is ours */
			r = 0;
		if (r < 0) {
			session_cg[0] = 0;
			snprintf(session_why, sizeof session_why, "%s", strerror(-r));
			/* no cgroup2, or not ours to write to, is the normal case for a non-root user */
			if (!noted++ && cgroup_mode() == REAPER_CHECK_CGROUP_AUTO && r != -EACCES && r != -EPERM &&
			    r != -ENOENT && r != -ENOTDIR)
				fprintf(stderr,
					"reaper: note: the tests cannot have cgroups (%s); tracking them by marker and by descent\n",
					session_why);
		}
	}
	runner_adopted = !session_cg[0] && reaper_adopt() > 0;
}

/* The test's setup and body are over: its environment is restored and its process leaves
 * the test's cgroup (the library neither freezes nor kills a cgroup that holds the caller).
 * 0 or -errno. */
static int test_leave(void)
{
	env_restore();
	return cur.cg[0] ? reaper_cgroup_enter(cur.prev, NULL, 0) : 0;
}

/* After the test's reap: its zombies collected, adoption and its cgroup released (what is
 * still there, unkillable, moves up to the TCase's cgroup, whose sweep tries again).
 * 0 or -errno of the cgroup's removal. */
static int test_finish(void)
{
	collect_test_zombies(cur.since);
	if (cur.adopted)
		reaper_release();
	cur.adopted = 0;
	int r = cur.cg[0] ? reaper_cgroup_release(cur.cg) : 0;
	cur.cg[0] = 0;
	cur.open = 0;
	return r < 0 ? r : 0;
}

/* A test whose teardown never ran (CK_NOFORK: a checked setup after ours or a teardown
 * before ours failed): what it left is killed at once and listed on stderr. */
static void test_abandon(int slot)
{
	char msg[4096];
	struct reaper_report *rep = NULL;
	test_leave();
	int r = reap(cur.entry, cur.since, cur.cg, 0, &rep);
	test_finish();
	if (r == 0 && rep->leaks) {
		snprintf(msg, sizeof msg, "reaper: tcase %s: killed %zu process%s left by a test whose teardown did not run:",
			 names[slot], rep->leaks, rep->leaks > 1 ? "es" : "");
		list_leaks(rep, msg, sizeof msg);
		fprintf(stderr, "%s\n", msg);
	}
	reaper_report_free(rep);
}

/* The guardian's side: wait for the runner (its pidfd) or the TCase's end (a byte on wake);
 * on the runner's end, reap what its tests left and remove the cgroups. Never returns. */
static void guardian_run(int runner_fd, int wake)
{
	char entry[96], msg[4096];
	struct pollfd pf[2] = { { .fd = runner_fd, .events = POLLIN }, { .fd = wake, .events = POLLIN } };
	for (;;) {
		int n = poll(pf, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			_exit(0);
		/* a byte: the TCase ended in the runner. It is written before the runner goes on, so
		 * a runner that ended after its TCase had ended left it here: it is read first, also
		 * when both are ready at once (a guardian that waited for a CPU past the runner's
		 * end). An end of file (the runner's end closed as it exits, its exec'd children's on
		 * exec) says nothing: the pidfd does. */
		if (pf[1].fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP))) {
			char c;
			ssize_t got = read(wake, &c, 1);
			if (got == 1)
				_exit(0);
			if (got == 0)
				pf[1].fd = -1;
		}
		if (pf[0].revents)
			break;
	}
	struct reaper_finder f[2];
	size_t nf = 0;
	snprintf(entry, sizeof entry, RUN_MARKER "=%s", run_value);
	f[nf++] = reaper_find_env(entry);
	if (session_cg[0])
		f[nf++] = reaper_find_cgroup(session_cg);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = timeout_now();
	o.patterns = allow;
	o.npatterns = nallow;
	struct reaper_report *rep = NULL;
	int r = reaper_reap(f, nf, &o, &rep);
	const char *test = gpage && gpage->test[0] ? gpage->test : names[session_slot];
	if (r < 0) {
		fprintf(stderr, "reaper: the runner (pid %d) ended during %s; cannot look for leftovers: %s\n",
			(int)runner_pid, test, strerror(-r));
	} else if (rep->leaks) {
		snprintf(msg, sizeof msg, "reaper: the runner (pid %d) ended during %s, leaving %zu process%s running; "
			 "killed after %g s:", (int)runner_pid, test, rep->leaks, rep->leaks > 1 ? "es" : "", o.timeout);
		cur.nown = 0;
		list_leaks(rep, msg, sizeof msg);
		fprintf(stderr, "%s\n", msg);
	}
	reaper_report_free(rep);
	/* (gone already: a runner that called exit() removed it on its way out) */
	if (session_cg[0] && (r = reaper_cgroup_release(session_cg)) < 0 && r != -ENOENT)
		fprintf(stderr, "reaper: cannot remove the cgroup %s: %s\n", session_cg, strerror(-r));
	_exit(0);
}

/* Start the open TCase's guardian (CK_NOFORK, before the test's environment and cgroup are
 * set: it carries neither). Without one, a runner that dies leaves what its test started.
 * It is forked twice so that it is not the runner's child (a host waiting for all its
 * children would wait for it): the runner is no subreaper meanwhile, so it goes up. */
static void guardian_start(void)
{
	int p[2], rfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (!gpage) {
		void *m = mmap(NULL, sizeof *gpage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		gpage = m == MAP_FAILED ? NULL : m;
	}
	if (rfd < 0 || pipe2(p, O_CLOEXEC) < 0) {
		if (rfd >= 0)
			close(rfd);
		return;
	}
	int sub = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&sub, 0, 0, 0) < 0)
		sub = 0;
	if (sub)
		prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	fflush(NULL); /* the guardian writes to stderr: nothing buffered is written twice */
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		setpgid(0, 0); /* a signal to the runner's process group leaves it to clean up */
		/* none of the runner's descriptors but stderr: a pipe the runner's tests read to its
		 * end must not stay open in the guardian. Closed here, before the guardian is forked:
		 * the runner waits for this process, so none is open anywhere once it goes on (the
		 * guardian closing its own could come after a test's first read) */
		int lo = rfd < p[0] ? rfd : p[0], hi = rfd < p[0] ? p[0] : rfd, nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		syscall(SYS_close_range, 3u, (unsigned)lo - 1, 0u);
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
		syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
		if (fork() == 0)
			guardian_run(rfd, p[0]);
		_exit(0);
	}
	int st;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (sub)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	close(rfd);
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return;
	}
	guardian_wake = p[1];
}

/* The TCase ended in the runner: its guardian exits. */
static void guardian_stop(void)
{
	if (guardian_wake < 0)
		return;
	while (write(guardian_wake, "", 1) < 0 && errno == EINTR)
		;
	close(guardian_wake);
	guardian_wake = -1;
}

static void note_fixture_child(pid_t pid, char state)
{
	(void)state;
	if (pid != getpid() && !pid_in(session_earlier, nsession_earlier, pid) && fpage->n < MAX_OWN)
		fpage->pid[fpage->n++] = pid;
}

static void checked_setup(int slot)
{
	if (nested)
		return;
	if (fpage && !fpage->noted) {
		fpage->noted = 1;
		each_child_of_since(runner_pid, session_since, note_fixture_child);
	}
	if (cur.open) /* CK_NOFORK: a setup after ours failed, so no teardown ran */
		test_abandon(slot);
	if (getpid() == runner_pid && guardian_wake < 0)
		guardian_start();
	char rnd[17], value[128];
	random_hex(rnd, sizeof rnd);
	snprintf(value, sizeof value, "%s.%d.%lu.%s", run_value, (int)getpid(), ++seq, rnd);
	snprintf(cur.entry, sizeof cur.entry, MARKER "=%s", value);
	env_set(0, names[slot]);
	env_set(1, value);
	env_set(2, run_value);
	cur.open = 1;
	cur.nown = 0;
	cur.slot = slot;
	cur.pid = getpid();
	if (cur.pid == runner_pid)
		ran_in_runner = 1;
	if (gpage && cur.pid == runner_pid)
		snprintf(gpage->test, sizeof gpage->test, "a test of tcase %s", names[slot]);
	cur.since = ticks_now();
	cur.nearlier = 0;
	each_child_since(cur.since, note_earlier);
	const char *why = session_cg[0] ? NULL : session_why[0] ? session_why : "not asked for";
	if (session_cg[0]) {
		char name[64];
		snprintf(name, sizeof name, "test-%d.%lu", (int)getpid(), seq);
		int r = reaper_cgroup_create(session_cg, name, cur.cg, sizeof cur.cg);
		if (r == 0 && (r = reaper_cgroup_enter(cur.cg, cur.prev, sizeof cur.prev)) < 0)
			reaper_cgroup_remove(cur.cg);
		if (r < 0) {
			cur.cg[0] = 0;
			why = strerror(-r);
		}
	}
	/* Without a cgroup the test's process adopts what the test orphans, so that descent finds
	 * it at the check; with one, the cgroup holds it and the host's parentage is left alone.
	 * A test forked from the runner got the runner's adoption count but not its subreaper
	 * setting (fork does not pass that on): the count is put back to the child's own first. */
	if (!cur.cg[0]) {
		if (runner_adopted && cur.pid != runner_pid) {
			reaper_release();
			runner_adopted = 0;
		}
		cur.adopted = reaper_adopt() > 0;
	}
	if (!cur.cg[0] && cgroup_mode() == REAPER_CHECK_CGROUP_ON)
		ck_abort_msg("reaper: REAPER_CHECK_CGROUP=on: test %s cannot have a cgroup: %s", names[slot], why);
}

static void checked_teardown(int slot)
{
	if (nested)
		return;
	static char msg[4096];
	struct reaper_report *rep = NULL;
	const TTest *t = running_test();
	const char *test = t ? t->name : tcase_name();
	char cg[PATH_MAX];
	snprintf(cg, sizeof cg, "%s", cur.cg);
	int left = test_leave();
	double secs = timeout_now();
	int r = reap(cur.entry, cur.since, cur.cg, secs, &rep);
	int removed = test_finish();
	if (r < 0) {
		snprintf(msg, sizeof msg, "reaper: cannot check test %s for leftovers: %s", test ? test : names[slot],
			 strerror(-r));
		fail_test(msg);
	}
	size_t leaks = rep->leaks;
	if (leaks) {
		snprintf(msg, sizeof msg, "reaper: test %s left %zu process%s running; killed after %g s:",
			 test ? test : names[slot], leaks, leaks > 1 ? "es" : "", secs);
		list_leaks(rep, msg, sizeof msg);
	}
	reaper_report_free(rep);
	if (leaks)
		fail_test(msg);
	if (left < 0 || removed < 0) {
		snprintf(msg, sizeof msg, "reaper: test %s: its cgroup %.1024s could not be %s: %s", test ? test : names[slot],
			 cg, left < 0 ? "left" : "removed", strerror(-(left < 0 ? left : removed)));
		fail_test(msg);
	}
}

/* The TCase's end, in the runner: what its tests left that no check found (tests that failed,
 * crashed, were ended by Check's timeout or called _exit in CK_FORK mode skipped their
 * teardown) is killed and listed on stderr: whatever is in the TCase's cgroup, carries the
 * run's marker or, without cgroups, descends from the runner since the TCase began (their
 * orphans, which it adopted). Then the TCase's cgroup is removed and adoption released.
 * Returns how many it killed. */
static size_t sweep(int slot)
{
	char entry[96], msg[4096];
	struct reaper_report *rep = NULL;
	struct reaper_finder f[3];
	size_t n = 0, leaks = 0;
	tcase_open = 0;
	guardian_stop();
	for (size_t i = 0; fpage && i < fpage->n && nsession_earlier < MAX_OWN; i++)
		session_earlier[nsession_earlier++] = fpage->pid[i];
	snprintf(entry, sizeof entry, RUN_MARKER "=%s", run_value);
	f[n++] = reaper_find_env(entry);
	if (session_cg[0])
		f[n++] = reaper_find_cgroup(session_cg);
	if (runner_adopted) {
		f[n] = reaper_find_tree(0);
		f[n].since = session_since;
		f[n].skip = session_earlier;
		f[n].nskip = nsession_earlier;
		f[n++].marker = entry;
	}
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.patterns = allow;
	o.npatterns = nallow;
	int r = reaper_reap(f, n, &o, &rep);
	if (r < 0) {
		fprintf(stderr, "reaper: tcase %s: cannot look for leftovers: %s\n", names[slot], strerror(-r));
	} else if ((leaks = rep->leaks)) {
		snprintf(msg, sizeof msg, "reaper: tcase %s: killed %zu process%s left by tests that failed, crashed, "
			 "timed out or ended without their check:", names[slot], leaks, leaks > 1 ? "es" : "");
		list_leaks(rep, msg, sizeof msg);
		fprintf(stderr, "%s\n", msg);
	}
	reaper_report_free(rep);
	/* a test that ran here may still wait for its own children's zombies */
	if (!ran_in_runner)
		each_child_since(session_since, collect_session_zombie);
	if (runner_adopted)
		reaper_release();
	runner_adopted = 0;
	if (session_cg[0] && (r = reaper_cgroup_release(session_cg)) < 0)
		fprintf(stderr, "reaper: tcase %s: cannot remove the cgroup %s: %s\n", names[slot], session_cg, strerror(-r));
	session_cg[0] = 0;
	session_slot = -1;
	return leaks;
}

static void unchecked_teardown(int slot)
{
	in_use[slot] = 0;
	if (nested) {
		nested--;
		return;
	}
	if (cur.open && cur.pid == getpid()) /* CK_NOFORK: the last test's teardown never ran */
		test_abandon(slot);
	sweep(slot);
}

/* A test that calls exit() in its body (or a fixture of it) skips its teardown. In CK_FORK
 * mode its result is not sent yet: it is checked here and fails if it left anything. In
 * CK_NOFORK mode the runner itself is ending: the test's and its TCase's leftovers are
 * killed and listed, the cgroups removed, and exit(0) becomes 1 if anything was left. */
static void at_process_exit(int status, void *arg)
{
	(void)arg;
	static char msg[4096];
	pid_t self = getpid();
	size_t left = 0;
	if (cur.open && cur.pid == self) {
		struct reaper_report *rep = NULL;
		const TTest *t = running_test();
		const char *test = t ? t->name : names[cur.slot];
		test_leave();
		double secs = timeout_now();
		int r = reap(cur.entry, cur.since, cur.cg, secs, &rep);
		test_finish();
		msg[0] = 0;
		if (r < 0)
			snprintf(msg, sizeof msg, "reaper: test %s called exit(%d) before its check; cannot check it for "
				 "leftovers: %s", test, status, strerror(-r));
		else if ((left = rep->leaks)) {
			snprintf(msg, sizeof msg, "reaper: test %s called exit(%d) before its check and left %zu process%s "
				 "running; killed after %g s:", test, status, left, left > 1 ? "es" : "", secs);
			list_leaks(rep, msg, sizeof msg);
		}
		reaper_report_free(rep);
		/* (under a runner inside the test, Check's failure path may be the inner runner's
		 * CK_NOFORK one, a longjmp: then the exit status says it instead) */
		if (msg[0] && self != runner_pid && !nested) {
			fflush(NULL); /* fail_test ends the process at once, without the exit's flush */
			fail_test(msg); /* Check reads it once this process has ended */
		}
		if (msg[0])
			fprintf(stderr, "%s:%d: %s\n", t ? t->file : "?", t ? t->line : 0, msg);
		left += r < 0;
	}
	if (tcase_open && runner_pid == self && session_slot >= 0)
		left += sweep(session_slot);
	if (left && status == 0) {
		fflush(NULL);
		_exit(EXIT_FAILURE);
	}
}

/* Slot 8 * a + b of REAPER_CHECK_MAX_TCASES: its trampolines are us_ab, cs_ab, ct_ab and ut_ab. */
#define SLOT(a, b)                                                       \
	static void us_##a##b(void) { session_open(8 * a + b); }         \
	static void cs_##a##b(void) { checked_setup(8 * a + b); }        \
	static void ct_##a##b(void) { checked_teardown(8 * a + b); }     \
	static void ut_##a##b(void) { unchecked_teardown(8 * a + b); }
#define SLOT8(a) SLOT(a, 0) SLOT(a, 1) SLOT(a, 2) SLOT(a, 3) SLOT(a, 4) SLOT(a, 5) SLOT(a, 6) SLOT(a, 7)
SLOT8(0) SLOT8(1) SLOT8(2) SLOT8(3) SLOT8(4) SLOT8(5) SLOT8(6) SLOT8(7)
#define ROW(a, b) { us_##a##b, cs_##a##b, ct_##a##b, ut_##a##b },
#define ROW8(a) ROW(a, 0) ROW(a, 1) ROW(a, 2) ROW(a, 3) ROW(a, 4) ROW(a, 5) ROW(a, 6) ROW(a, 7)
static const struct {
	SFun us, cs, ct, ut;
} slots[] = { ROW8(0) ROW8(1) ROW8(2) ROW8(3) ROW8(4) ROW8(5) ROW8(6) ROW8(7) };
_Static_assert(sizeof slots / sizeof *slots == REAPER_CHECK_MAX_TCASES, "one slot per checked TCase");

int reaper_check_tcase(TCase *tc, const char *name)
{
	if (!tc)
		return -EINVAL;
	int i = 0;
	while (i < REAPER_CHECK_MAX_TCASES && in_use[i])
		i++;
	if (i == REAPER_CHECK_MAX_TCASES)
		return -ENOSPC;
	char fallback[32];
	snprintf(fallback, sizeof fallback, "tcase %d", ntcases + 1);
	char *copy = strdup(name ? name : fallback);
	if (!copy)
		return -ENOMEM;
	static int hooked;
	if (!hooked) {
		if (on_exit(at_process_exit, NULL) != 0) {
			free(copy);
			return -ENOMEM;
		}
		hooked = 1;
	}
	if (!run_value[0])
		run_value_make();
	free(names[i]); /* a TCase whose run has ended: its slot is free again */
	names[i] = copy;
	in_use[i] = 1;
	ntcases++;
	tcase_add_unchecked_fixture(tc, slots[i].us, slots[i].ut);
	tcase_add_checked_fixture(tc, slots[i].cs, slots[i].ct);
	return 0;
}
