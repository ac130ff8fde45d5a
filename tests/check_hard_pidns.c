/* SPDX-License-Identifier: MIT */
/* Recycled pids. Inside a PID namespace of its own (where this test is pid 1 and owns every
 * pid), a reaper is held (ptrace) at the very pidfd_send_signal it aims at a leftover it
 * found; the leftover is then killed and collected, /proc/sys/kernel/ns_last_pid makes an
 * unrelated process take its pid, and the reaper is let go. The unrelated process must never
 * be signalled: through reaper_reap, through `reaper run`'s cancellation (SIGTERM to reaper),
 * and through the owner-death guardian (reaper SIGKILLed). Held the same way between finding a
 * leftover and reading what it tells about it, the reaper describes only what it pinned. */
#include "check_hard.h"
#include "reaper/report.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>

/* ---- inside the namespace: failures go out as text on msgfd ------------------------- */

static int msgfd = -1;

#define NS_FAIL(...)                                                                     \
	do {                                                                             \
		dprintf(msgfd, __VA_ARGS__);                                             \
		dprintf(msgfd, " (%s:%d)\n", __FILE__, __LINE__);                        \
		return 1;                                                                \
	} while (0)
#define NS_CHECK(cond, ...)                                                              \
	do {                                                                             \
		if (!(cond))                                                             \
			NS_FAIL(__VA_ARGS__);                                            \
	} while (0)

struct sigproc {
	pid_t pid;
	int rd; /* its signal report pipe (non-blocking) */
};

/* A hard_sig child of ours with exactly envp (and flag, unless NULL), ready (handlers
 * installed) when this returns. */
static int ns_sig_spawn_with(struct sigproc *sp, char *const envp[], char *flag)
{
	char *argv[] = { (char *)hard_path("hard_sig"), "-f", "3", flag, NULL };
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	sp->pid = hard_spawn_raw(argv, envp, pfd[1]);
	close(pfd[1]);
	char c = 0;
	if (sp->pid < 0 || read(pfd[0], &c, 1) != 1 || c != 'R') {
		close(pfd[0]);
		return -EIO;
	}
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	sp->rd = pfd[0];
	return 0;
}

static int ns_sig_spawn(struct sigproc *sp, char *const envp[])
{
	return ns_sig_spawn_with(sp, envp, NULL);
}

/* The pid a pidfd of process `holder` refers to (fdinfo "Pid:"), or 0. */
static pid_t pidfd_target(pid_t holder, int fd)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)holder, fd);
	FILE *f = fopen(path, "re");
	pid_t pid = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid;
}

static int wait_stopped(pid_t pid, int *st, double timeout)
{
	double end = tu_now() + timeout;
	for (;;) {
		pid_t w = waitpid(pid, st, __WALL | WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (tu_now() > end)
			return -ETIMEDOUT;
		hard_nap(0.0005);
	}
}

/* Attach to tracee and follow its system calls (call before it starts to reap). */
static int trace_begin(pid_t tracee)
{
	int st;
	if (ptrace(PTRACE_SEIZE, tracee, 0, PTRACE_O_TRACESYSGOOD) < 0 || ptrace(PTRACE_INTERRUPT, tracee, 0, 0) < 0)
		return -errno;
	int r = wait_stopped(tracee, &st, 10);
	if (r < 0)
		return r;
	return ptrace(PTRACE_SYSCALL, tracee, 0, 0) < 0 ? -errno : 0;
}

/* Let tracee run until it enters pidfd_send_signal on a pidfd that refers to victim; it stays
 * stopped right there, with the signal not sent yet. */
static int trace_until_signal_to(pid_t tracee, pid_t victim, int *sig)
{
	for (;;) {
		int st;
		int r = wait_stopped(tracee, &st, 30);
		if (r < 0)
			return r;
		if (!WIFSTOPPED(st))
			return -ECHILD; /* it ended without ever signalling the victim */
		int deliver = 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info si;
			memset(&si, 0, sizeof si);
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tracee, sizeof si, &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_ENTRY && si.entry.nr == SYS_pidfd_send_signal &&
			    pidfd_target(tracee, (int)si.entry.args[0]) == victim) {
				*sig = (int)si.entry.args[1];
				return 0;
			}
		} else if ((st >> 16) == 0) {
			deliver = WSTOPSIG(st); /* a signal on its way in: pass it on */
		}
		if (ptrace(PTRACE_SYSCALL, tracee, 0, deliver) < 0)
			return -errno;
	}
}

/* Kill and collect victim (our child), then fork an unrelated hard_sig onto its pid. */
static int take_over_pid(struct sigproc *victim, struct sigproc *u)
{
	int st;
	if (kill(victim->pid, SIGKILL) < 0 || waitpid(victim->pid, &st, 0) != victim->pid)
		return -errno;
	close(victim->rd);
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[16];
	int n = snprintf(buf, sizeof buf, "%d", (int)victim->pid - 1);
	ssize_t w = write(fd, buf, (size_t)n);
	close(fd);
	if (w != n)
		return -EIO;
	char *env[] = { "PATH=/usr/bin:/bin", "HARD_ROLE=unrelated", NULL };
	int r = ns_sig_spawn(u, env);
	if (r < 0)
		return r;
	return u->pid == victim->pid ? 0 : -EAGAIN;
}

/* The unrelated process is alive, not stopped, and caught no signal at all. */
static int unrelated_untouched(struct sigproc *u)
{
	int st;
	NS_CHECK(waitpid(u->pid, &st, WNOHANG) == 0, "the unrelated process %d died (status %#x)", (int)u->pid, st);
	char s = tu_state(u->pid);
	NS_CHECK(s != 'T' && s != 't', "the unrelated process %d is stopped (%c)", (int)u->pid, s);
	const char *seen = hard_signals_seen(u->rd);
	NS_CHECK(!*seen, "the unrelated process %d was signalled: %s", (int)u->pid, seen);
	kill(u->pid, SIGKILL);
	waitpid(u->pid, &st, 0);
	close(u->rd);
	return 0;
}

/* Hold `holder` at its signal to victim, swap victim for an unrelated process on the same
 * pid, let holder go, then (after `after` ran) check the unrelated one was never touched. */
static int swap_and_release(pid_t holder, struct sigproc *victim, struct sigproc *u)
{
	int sig = 0, r;
	pid_t vpid = victim->pid;
	NS_CHECK((r = trace_until_signal_to(holder, vpid, &sig)) == 0,
		 "never caught %d signalling the leftover %d: %s", (int)holder, (int)vpid, strerror(-r));
	NS_CHECK((r = take_over_pid(victim, u)) == 0, "could not put a new process on pid %d: %s (got %d)", (int)vpid,
		 strerror(-r), (int)u->pid);
	fprintf(stderr, "hard: %d held at signal %d to %d; pid %d now belongs to an unrelated process\n", (int)holder,
		sig, (int)vpid, (int)u->pid);
	NS_CHECK(ptrace(PTRACE_DETACH, holder, 0, 0) == 0, "detach: %s", strerror(errno));
	return 0;
}

/* Collect every child of ours that has ended (this is pid 1 here). */
static void ns_collect(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* ---- the three paths ------------------------------------------------------------------ */

static int path_library(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "lib");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	struct sigproc v, u = { 0, -1 };
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the leftover");
	int go[2], res[2];
	NS_CHECK(pipe2(go, O_CLOEXEC) == 0 && pipe2(res, O_CLOEXEC) == 0, "pipe");
	pid_t reaper = fork();
	if (reaper == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		struct reaper_finder f = reaper_find_env(m);
		struct reaper_opts o;
		reaper_opts_init(&o);
		o.timeout = 0;
		o.grace = 0.3;
		o.settle = 3;
		struct reaper_report *r = NULL;
		int e = reaper_reap(&f, 1, &o, &r);
		dprintf(res[1], "%d\n", e);
		for (size_t i = 0; e == 0 && i < r->n; i++)
			dprintf(res[1], "%d %llu %s\n", (int)r->procs[i].pid, (unsigned long long)r->procs[i].start_time,
				reaper_fate_name(r->procs[i].fate));
		reaper_report_free(r);
		_exit(0);
	}
	close(res[1]);
	uint64_t vst = tu_start_time(v.pid);
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go[1], "g", 1) == 1, "go");
	if (swap_and_release(reaper, &v, &u))
		return 1;
	int st;
	NS_CHECK(waitpid(reaper, &st, 0) == reaper && WIFEXITED(st) && WEXITSTATUS(st) == 0, "reaper status %#x", st);
	char out[2048] = "";
	ssize_t n = read(res[0], out, sizeof out - 1);
	out[n > 0 ? n : 0] = 0;
	NS_CHECK(atoi(out) == 0, "reaper_reap failed: %s", out);
	/* the leftover is in the report by its own identity, and was not signalled either */
	char want[64];
	snprintf(want, sizeof want, "\n%d %llu ", (int)v.pid, (unsigned long long)vst);
	char *line = strstr(out, want);
	NS_CHECK(line, "the leftover %d is not in the report:\n%s", (int)v.pid, out);
	line += strlen(want);
	NS_CHECK(!strncmp(line, "exited", 6), "the replaced leftover's fate is not 'exited': %.20s", line);
	NS_CHECK(!strstr(out, "killed") && !strstr(out, "terminated"), "something was reported signalled:\n%s", out);
	return unrelated_untouched(&u);
}

static int run_marker_of(pid_t pid, char *buf, size_t len);

/* `reaper run --marker M -- hard_sig`: its COMMAND, once it runs (reaper's child that carries
 * the run's marker: the guardian carries no environment, and neither is COMMAND's before its
 * exec). */
static pid_t start_reaper_run(const char *marker, pid_t *reaper, int errfd)
{
	char mflag[160];
	snprintf(mflag, sizeof mflag, "%s", marker);
	char *argv[] = { (char *)hard_path("reaper"), "run", "--timeout", "30", "--grace", "1", "--marker", mflag,
			 "--", (char *)hard_path("hard_sig"), NULL };
	char *env[] = { "PATH=/usr/bin:/bin", NULL };
	pid_t pid = fork();
	if (pid == 0) {
		/* reaper in a session of its own: the leftovers started here are outside it, as an
		 * outside daemon's are (what --marker finds; in reaper's session they would be its
		 * caller's, never a candidate) */
		setsid();
		dup2(errfd, 2);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		execve(argv[0], argv, env);
		_exit(127);
	}
	*reaper = pid;
	/* COMMAND is up once a child of reaper shows the marker in its environment */
	char what[64];
	snprintf(what, sizeof what, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(what, "re");
		int c = 0, cmd = 0;
		char runm[96];
		while (f && !cmd && fscanf(f, "%d", &c) == 1)
			if (c > 0 && run_marker_of(c, runm, sizeof runm) == 0)
				cmd = c;
		if (f)
			fclose(f);
		pid_t pids[4];
		if (cmd > 0 && tu_marked(marker, pids, 4) > 0)
			return cmd;
		hard_nap(0.005);
	}
	return -1;
}

/* The REAPER_RUN=... entry of pid's environment into buf. */
static int run_marker_of(pid_t pid, char *buf, size_t len)
{
	char path[64], env[65536];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, env, sizeof env - 1);
	close(fd);
	for (ssize_t i = 0; i < n;) {
		const char *e = env + i;
		size_t l = strnlen(e, (size_t)(n - i));
		if (!strncmp(e, "REAPER_RUN=", 11) && l < len) {
			memcpy(buf, e, l);
			buf[l] = 0;
			return 0;
		}
		i += (ssize_t)l + 1;
	}
	return -ENOENT;
}

static int path_cancel(void)
{
	char m[128], errpath[] = "/tmp/hard-ns-run-XXXXXX";
	tu_unique_marker(m, sizeof m, "HARD_NS", "cancel");
	int errfd = mkstemp(errpath);
	NS_CHECK(errfd >= 0, "mkstemp");
	unlink(errpath);
	pid_t reaper;
	pid_t cmd = start_reaper_run(m, &reaper, errfd);
	NS_CHECK(cmd > 0, "reaper run did not start its command");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	struct sigproc v, u = { 0, -1 };
	/* in a session of its own: in ours (reaper's parent's) it would be the caller's */
	NS_CHECK(ns_sig_spawn_with(&v, venv, "-s") == 0, "spawn the leftover");
	NS_CHECK(trace_begin(reaper) == 0, "trace reaper: %s", strerror(errno));
	NS_CHECK(kill(reaper, SIGTERM) == 0, "SIGTERM to reaper");
	if (swap_and_release(reaper, &v, &u))
		return 1;
	int st;
	NS_CHECK(waitpid(reaper, &st, 0) == reaper, "wait reaper");
	char log[4096] = "";
	ssize_t n = pread(errfd, log, sizeof log - 1, 0);
	log[n > 0 ? n : 0] = 0;
	/* COMMAND died of the forwarded SIGTERM: reaper exits 128 + 15 */
	NS_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 143, "reaper run status %#x; its stderr:\n%s", st, log);
	ns_collect();
	return unrelated_untouched(&u);
}

static int path_owner_death(void)
{
	char m[128], errpath[] = "/tmp/hard-ns-run-XXXXXX";
	tu_unique_marker(m, sizeof m, "HARD_NS", "owner");
	int errfd = mkstemp(errpath);
	NS_CHECK(errfd >= 0, "mkstemp");
	unlink(errpath);
	pid_t reaper;
	pid_t cmd = start_reaper_run(m, &reaper, errfd);
	NS_CHECK(cmd > 0, "reaper run did not start its command");
	/* the guardian reaps by REAPER_RUN only: the leftover carries the run's own marker */
	char runm[96];
	NS_CHECK(run_marker_of(cmd, runm, sizeof runm) == 0, "no REAPER_RUN in the command's environment");
	char *venv[] = { "PATH=/usr/bin:/bin", runm, NULL };
	struct sigproc v, u = { 0, -1 };
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the leftover");
	/* the guardian is reaper's child; once reaper is killed, ours (pid 1 here) */
	pid_t guard = 0;
	char kids[64];
	snprintf(kids, sizeof kids, "/proc/%d/task/%d/children", (int)reaper, (int)reaper);
	for (int i = 0; i < 1000 && !guard; i++) {
		FILE *f = fopen(kids, "re");
		int c;
		while (f && !guard && fscanf(f, "%d", &c) == 1) {
			char path[64], comm[32] = "";
			snprintf(path, sizeof path, "/proc/%d/comm", c);
			FILE *cf = fopen(path, "re");
			if (cf && fgets(comm, sizeof comm, cf) && !strcmp(comm, "reaper-guard\n"))
				guard = c;
			if (cf)
				fclose(cf);
		}
		if (f)
			fclose(f);
		if (!guard)
			hard_nap(0.005);
	}
	NS_CHECK(guard > 0, "no reaper-guard process found");
	NS_CHECK(trace_begin(guard) == 0, "trace the guardian: %s", strerror(errno));
	int st;
	NS_CHECK(kill(reaper, SIGKILL) == 0 && waitpid(reaper, &st, 0) == reaper, "SIGKILL reaper");
	if (swap_and_release(guard, &v, &u))
		return 1;
	NS_CHECK(waitpid(guard, &st, 0) == guard, "wait guardian");
	NS_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "guardian status %#x", st);
	/* the guardian did its work: the orphaned COMMAND (ours now) died of SIGKILL */
	NS_CHECK(waitpid(cmd, &st, 0) == cmd && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "command status %#x", st);
	ns_collect();
	return unrelated_untouched(&u);
}

/* ---- identity of what a scan walks and knows ------------------------------------------- */

/* 1 once process holder has a pidfd open that refers to target. */
static int holds_pidfd_to(pid_t holder, pid_t target)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)holder);
	DIR *d = opendir(path);
	int found = 0;
	for (struct dirent *e; d && !found && (e = readdir(d));)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			found = pidfd_target(holder, atoi(e->d_name)) == target;
	if (d)
		closedir(d);
	return found;
}

static int wait_pidfd_to(pid_t holder, pid_t target)
{
	for (int i = 0; i < 6000; i++) {
		if (holds_pidfd_to(holder, target))
			return 0;
		hard_nap(0.005);
	}
	return -ETIMEDOUT;
}

/* Make the next process forked take pid (it must be free). */
static int next_pid_is(pid_t pid)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[16];
	int n = snprintf(buf, sizeof buf, "%d", (int)pid - 1);
	ssize_t w = write(fd, buf, (size_t)n);
	close(fd);
	return w == n ? 0 : -EIO;
}

/* A reaper in a child: reaper_reap(f) with timeout, its report as "pid start fate" lines on
 * *res. Starts when go is written. */
static pid_t reaper_child(const struct reaper_finder *f, size_t nf, const struct reaper_pattern *pat, size_t npat,
			  double timeout, int *go, int *res)
{
	int g[2], r[2];
	if (pipe2(g, O_CLOEXEC) < 0 || pipe2(r, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		if (read(g[0], &c, 1) != 1)
			_exit(2);
		struct reaper_opts o;
		reaper_opts_init(&o);
		o.timeout = timeout;
		o.grace = 0.3;
		o.settle = 3;
		o.patterns = pat;
		o.npatterns = npat;
		struct reaper_report *rep = NULL;
		int e = reaper_reap(f, nf, &o, &rep);
		dprintf(r[1], "%d\n", e);
		for (size_t i = 0; e == 0 && i < rep->n; i++)
			dprintf(r[1], "%d %llu %s cmdline=%s exe=%s cwd=%s uid=%ld test=%s comm=%s\n", (int)rep->procs[i].pid,
				(unsigned long long)rep->procs[i].start_time, reaper_fate_name(rep->procs[i].fate),
				rep->procs[i].cmdline, rep->procs[i].exe, rep->procs[i].cwd,
				rep->procs[i].uid == (uid_t)-1 ? -1L : (long)rep->procs[i].uid, rep->procs[i].test,
				rep->procs[i].comm);
		reaper_report_free(rep);
		_exit(0);
	}
	close(g[0]);
	close(r[1]);
	*go = g[1];
	*res = r[0];
	return pid;
}

static int reaper_result(pid_t reaper, int res, char *out, size_t len)
{
	int st;
	NS_CHECK(waitpid(reaper, &st, 0) == reaper && WIFEXITED(st) && WEXITSTATUS(st) == 0, "reaper status %#x", st);
	size_t used = 0;
	ssize_t n;
	while (used < len - 1 && (n = read(res, out + used, len - 1 - used)) > 0)
		used += (size_t)n;
	out[used] = 0;
	close(res);
	NS_CHECK(atoi(out) == 0, "reaper_reap failed: %s", out);
	return 0;
}

/* A tree candidate first seen as a zombie, collected by its parent, its pid then taken by an
 * unrelated process with a child of its own: that child is no descendant of the tree. */
static int path_recycled_tree_root(void)
{
	/* T: the tree's root; M its child that exits at once (a zombie T keeps until told), L a
	 * live child that keeps the reap waiting */
	int cmd[2], info[2];
	NS_CHECK(pipe2(cmd, O_CLOEXEC) == 0 && pipe2(info, O_CLOEXEC) == 0, "pipe");
	pid_t t = fork();
	if (t == 0) {
		/* Check's handlers (inherited, not exec'd away) would answer a SIGTERM by
		 * signalling the test's whole group */
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		pid_t m = fork();
		if (m == 0)
			_exit(0);
		pid_t l = fork();
		if (l == 0) {
			for (;;)
				pause();
		}
		pid_t both[2] = { m, l };
		if (write(info[1], both, sizeof both) != sizeof both)
			_exit(3);
		char c;
		if (read(cmd[0], &c, 1) != 1 || waitpid(m, NULL, 0) != m)
			_exit(4);
		if (write(info[1], "c", 1) != 1)
			_exit(5);
		for (;;)
			pause();
	}
	pid_t ml[2];
	NS_CHECK(read(info[0], ml, sizeof ml) == sizeof ml, "T did not start");
	for (int i = 0; i < 2000 && tu_state(ml[0]) != 'Z'; i++)
		hard_nap(0.005);
	NS_CHECK(tu_state(ml[0]) == 'Z', "M %d is not a zombie", (int)ml[0]);
	struct reaper_finder f = reaper_find_tree(t);
	int go, res;
	pid_t reaper = reaper_child(&f, 1, NULL, 0, 5, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(write(go, "g", 1) == 1, "go");
	/* the reaper has pinned the zombie M: T collects it, and M's pid goes to U */
	NS_CHECK(wait_pidfd_to(reaper, ml[0]) == 0, "the reaper never pinned the zombie %d", (int)ml[0]);
	char c;
	NS_CHECK(write(cmd[1], "c", 1) == 1 && read(info[0], &c, 1) == 1, "T did not collect M");
	int rp[2], up[2];
	NS_CHECK(pipe2(rp, O_CLOEXEC) == 0 && pipe2(up, O_CLOEXEC) == 0, "pipe");
	NS_CHECK(next_pid_is(ml[0]) == 0, "ns_last_pid");
	pid_t u = fork();
	if (u == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		char *argv[] = { (char *)hard_path("hard_sig"), "-f", "3", NULL };
		char *env[] = { "PATH=/usr/bin:/bin", "HARD_ROLE=unrelated-child", NULL };
		pid_t uc = hard_spawn_raw(argv, env, rp[1]);
		if (write(up[1], &uc, sizeof uc) != sizeof uc)
			_exit(3);
		for (;;)
			pause();
	}
	close(rp[1]);
	NS_CHECK(u == ml[0], "U got pid %d, not M's %d", (int)u, (int)ml[0]);
	pid_t uc;
	NS_CHECK(read(up[0], &uc, sizeof uc) == sizeof uc && read(rp[0], &c, 1) == 1 && c == 'R',
		 "U's child did not start");
	fcntl(rp[0], F_SETFL, O_NONBLOCK);
	fprintf(stderr, "hard: zombie %d collected; its pid now holds %d, parent of %d\n", (int)ml[0], (int)u, (int)uc);
	char out[4096];
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	char want[32];
	snprintf(want, sizeof want, "\n%d ", (int)uc);
	NS_CHECK(!strstr(out, want), "U's child %d was taken for a descendant of the tree:\n%s", (int)uc, out);
	snprintf(want, sizeof want, "\n%d ", (int)ml[1]);
	NS_CHECK(strstr(out, want), "the live child L %d of the tree is missing:\n%s", (int)ml[1], out);
	int st;
	NS_CHECK(waitpid(u, &st, WNOHANG) == 0, "U died");
	struct sigproc ucp = { uc, rp[0] };
	/* uc is U's child, not ours: unrelated_untouched's wait does not apply */
	char s2 = tu_state(uc);
	NS_CHECK(s2 && s2 != 'Z' && s2 != 'T', "U's child %d is %c", (int)uc, s2 ? s2 : '-');
	const char *seen = hard_signals_seen(ucp.rd);
	NS_CHECK(!*seen, "U's child %d was signalled: %s", (int)uc, seen);
	return 0;
}

/* A candidate kept by a pattern dies and its pid goes to a new process of the run: that
 * process is found (known means the same identity, not the same pid). */
static int path_reused_pid_found(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "reuse");
	char *env[] = { "PATH=/usr/bin:/bin", m, NULL };
	char *kargv[] = { "/bin/sleep", "1001", NULL }, *largv[] = { "/bin/sleep", "1002", NULL };
	pid_t k = hard_spawn_raw(kargv, env, -1), l = hard_spawn_raw(largv, env, -1);
	NS_CHECK(k > 0 && l > 0 && k < l, "spawn the two sleeps (%d, %d)", (int)k, (int)l);
	for (int i = 0; i < 2000 && tu_marked(m, NULL, 0) < 2; i++)
		hard_nap(0.005);
	NS_CHECK(tu_marked(m, NULL, 0) == 2, "the sleeps do not carry the marker");
	struct reaper_finder f = reaper_find_env(m);
	struct reaper_pattern keep = { REAPER_KEEP, "*sleep 1001*" };
	int go, res;
	pid_t reaper = reaper_child(&f, 1, &keep, 1, 5, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(write(go, "g", 1) == 1, "go");
	/* L pinned: the scan that did it passed K (lower pid) already, and kept it */
	NS_CHECK(wait_pidfd_to(reaper, l) == 0, "the reaper never pinned %d", (int)l);
	int st;
	/* N's start time must differ from K's for the report lines to tell them apart: wait
	 * (on the clock stat's start times count in) until K's tick is past */
	uint64_t kst = tu_start_time(k);
	long hz = sysconf(_SC_CLK_TCK);
	for (int i = 0; i < 1000; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_BOOTTIME, &ts);
		if ((uint64_t)ts.tv_sec * (uint64_t)hz + (uint64_t)ts.tv_nsec / (1000000000u / (uint64_t)hz) > kst + 1)
			break;
		hard_nap(0.002);
	}
	NS_CHECK(kill(k, SIGKILL) == 0 && waitpid(k, &st, 0) == k, "end K");
	NS_CHECK(next_pid_is(k) == 0, "ns_last_pid");
	struct sigproc n;
	NS_CHECK(ns_sig_spawn(&n, env) == 0, "spawn N");
	NS_CHECK(n.pid == k, "N got pid %d, not K's %d", (int)n.pid, (int)k);
	uint64_t nst = tu_start_time(n.pid);
	fprintf(stderr, "hard: kept %d ended; its pid now holds a new marked process\n", (int)k);
	char out[4096];
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	char want[64];
	snprintf(want, sizeof want, "\n%d %llu ", (int)n.pid, (unsigned long long)nst);
	char *line = strstr(out, want);
	NS_CHECK(line, "the new process %d on the kept one's pid was never found:\n%s", (int)n.pid, out);
	line += strlen(want);
	NS_CHECK(!strncmp(line, "terminated", 10) || !strncmp(line, "killed", 6), "its fate: %.12s", line);
	NS_CHECK(waitpid(n.pid, &st, 0) == n.pid, "collect N");
	close(n.rd);
	ns_collect();
	return 0;
}

/* `sh -c 'setsid sleep 120 & exit 0'`, scanned the moment sh is gone, where a scan of the few
 * processes of this namespace lands inside the sleep's exec: it is found every time. */
static int path_setsid_sleep_race(void)
{
	int missed = 0, rounds = 60;
	for (int i = 0; i < rounds; i++) {
		char m[128];
		tu_unique_marker(m, sizeof m, "HARD_NS", "exec");
		char *env[] = { "PATH=/usr/bin:/bin", m, NULL };
		char *argv[] = { "/bin/sh", "-c", "setsid sleep 120 </dev/null >/dev/null 2>&1 & exit 0", NULL };
		pid_t sh = hard_spawn_raw(argv, env, -1);
		int st;
		NS_CHECK(sh > 0 && waitpid(sh, &st, 0) == sh && WIFEXITED(st) && WEXITSTATUS(st) == 0, "sh");
		struct reaper_finder f = reaper_find_env(m);
		struct reaper_report *r = NULL;
		NS_CHECK(reaper_scan(&f, 1, &r) == 0, "reaper_scan");
		missed += r->n != 1;
		reaper_report_free(r);
		/* the sleep is ours (we are init here): end it and collect it (this oracle reads
		 * environ too, so it looks again while an exec is under way) */
		int killed = 0;
		for (int k = 0; k < 1000 && killed < 1; k++) {
			killed += tu_kill_marked(m);
			if (!killed)
				hard_nap(0.005);
		}
		NS_CHECK(killed == 1, "round %d: %d processes carried the marker, not the one sleep", i, killed);
		ns_collect();
	}
	NS_CHECK(missed == 0, "missed the setsid sleep in %d of %d scans", missed, rounds);
	return 0;
}

/* Let tracee run until it enters system call nr with its first arguments a0 (and a1, when
 * not -1): it stays stopped there. -ECHILD when it ended without making that call. */
static int trace_until(pid_t tracee, long nr, pid_t a0, pid_t a1)
{
	for (;;) {
		int st;
		int r = wait_stopped(tracee, &st, 30);
		if (r < 0)
			return r;
		if (!WIFSTOPPED(st))
			return -ECHILD;
		int deliver = 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info si;
			memset(&si, 0, sizeof si);
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tracee, sizeof si, &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_ENTRY && (long)si.entry.nr == nr &&
			    (pid_t)si.entry.args[0] == a0 && (a1 == -1 || (pid_t)si.entry.args[1] == a1))
				return 0;
		} else if ((st >> 16) == 0) {
			deliver = WSTOPSIG(st);
		}
		if (ptrace(PTRACE_SYSCALL, tracee, 0, deliver) < 0)
			return -errno;
	}
}

/* Let tracee run until it enters pidfd_open(victim): it stays stopped there, having read what
 * made victim a match but not pinned it yet. */
static int trace_until_pidfd_open(pid_t tracee, pid_t victim)
{
	return trace_until(tracee, SYS_pidfd_open, victim, -1);
}

/* The traced reaper is held as it pins v; v's pid is given to a new process u (who says
 * what u is to the finder), then the reaper goes on: u must not be in its result, and must
 * be untouched. */
static int replaced_before_pinning(pid_t reaper, int res, struct sigproc *v, struct sigproc *u, const char *who)
{
	int r;
	NS_CHECK((r = trace_until_pidfd_open(reaper, v->pid)) == 0, "never caught the reaper pinning %d: %s",
		 (int)v->pid, strerror(-r));
	NS_CHECK((r = take_over_pid(v, u)) == 0, "could not put a new process on pid %d: %s (got %d)", (int)v->pid,
		 strerror(-r), (int)u->pid);
	fprintf(stderr, "hard: reaper held before pinning %d; the pid now holds %s\n", (int)u->pid, who);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096];
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	char want[32];
	snprintf(want, sizeof want, "\n%d ", (int)u->pid);
	NS_CHECK(!strstr(out, want), "%d, %s, was taken for one of the reaper's:\n%s", (int)u->pid, who, out);
	return unrelated_untouched(u);
}

/* The marker was read from a leftover's environ; before the reaper pins it, the leftover is
 * gone and an unmarked process holds its pid: the pinned process is checked again and is no
 * match. */
static int path_marker_rechecked(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "recheck");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	struct sigproc v, u = { 0, -1 };
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the leftover");
	struct reaper_finder f = reaper_find_env(m);
	int go, res;
	pid_t reaper = reaper_child(&f, 1, NULL, 0, 0, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	return replaced_before_pinning(reaper, res, &v, &u, "an unmarked process");
}

/* A reaper in a child making the listing `reaper scan` makes (reap_listing: pid and cmdline of
 * each match, nothing else read), its result as reaper_child gives it; exclude_pgrp (0: none)
 * the process group it leaves, as a listing run as a job of its own does. Starts when go is
 * written. */
static pid_t listing_child_of(const struct reaper_finder *f, pid_t exclude_pgrp, int *go, int *res)
{
	int g[2], r[2];
	if (pipe2(g, O_CLOEXEC) < 0 || pipe2(r, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		if (read(g[0], &c, 1) != 1)
			_exit(2);
		struct reaper_opts o;
		reaper_opts_init(&o);
		o.report_only = 1;
		o.exclude_pgrp = exclude_pgrp;
		struct reaper_report *rep = NULL;
		int e = reap_listing(f, 1, &o, &rep);
		dprintf(r[1], "%d\n", e);
		for (size_t i = 0; e == 0 && i < rep->n; i++)
			dprintf(r[1], "%d cmdline=%s fate=%s\n", (int)rep->procs[i].pid, rep->procs[i].cmdline,
				reaper_fate_name(rep->procs[i].fate));
		reaper_report_free(rep);
		_exit(0);
	}
	close(g[0]);
	close(r[1]);
	*go = g[1];
	*res = r[0];
	return pid;
}

static pid_t listing_child(const struct reaper_finder *f, int *go, int *res)
{
	return listing_child_of(f, 0, go, res);
}

/* The listing pins a match after reading its environment; pid allocation is not always
 * cyclic (ns_last_pid written, clone3 with set_tid: what a checkpoint restore does), so where
 * it went since the pass began proves nothing of one pid. Held as it pins the second of two
 * marked processes, that one is replaced by an unmarked one put on its pid, and another process
 * is put just past where allocation stood (a restore of two processes): the unmarked one must
 * not be listed. */
static int path_listing_pid_chosen(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "listing");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	char *uenv[] = { "PATH=/usr/bin:/bin", "HARD_ROLE=unrelated", NULL };
	/* a: the pass's first match, v: the one replaced (listed after a: a lower pid) */
	struct sigproc a, v, u = { 0, -1 }, w = { 0, -1 };
	NS_CHECK(ns_sig_spawn(&a, venv) == 0 && ns_sig_spawn(&v, venv) == 0 && a.pid < v.pid, "spawn the leftovers");
	struct reaper_finder f = reaper_find_env(m);
	int go, res, r;
	pid_t reaper = listing_child(&f, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	NS_CHECK((r = trace_until_pidfd_open(reaper, v.pid)) == 0, "never caught the reaper pinning %d: %s",
		 (int)v.pid, strerror(-r));
	char last[32] = "";
	int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
	NS_CHECK(fd >= 0 && read(fd, last, sizeof last - 1) > 0, "read ns_last_pid");
	close(fd);
	NS_CHECK((r = take_over_pid(&v, &u)) == 0, "could not put a new process on pid %d: %s (got %d)", (int)v.pid,
		 strerror(-r), (int)u.pid);
	NS_CHECK(next_pid_is(atoi(last) + 1) == 0 && ns_sig_spawn(&w, uenv) == 0 && w.pid == atoi(last) + 1,
		 "could not put a process on pid %d", atoi(last) + 1);
	fprintf(stderr, "hard: listing held before pinning %d; the pid now holds an unmarked process\n", (int)u.pid);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096], want[32];
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	snprintf(want, sizeof want, "\n%d ", (int)u.pid);
	NS_CHECK(!strstr(out, want), "%d, an unmarked process, was listed as a match:\n%s", (int)u.pid, out);
	snprintf(want, sizeof want, "\n%d ", (int)a.pid);
	NS_CHECK(strstr(out, want), "the leftover %d was not listed:\n%s", (int)a.pid, out);
	int st;
	kill(a.pid, SIGKILL);
	waitpid(a.pid, &st, 0);
	close(a.rd);
	if (unrelated_untouched(&w))
		return 1;
	return unrelated_untouched(&u);
}

/* A listing reads a match's cmdline before it pins it. Held as it pins the second of two
 * marked leftovers, that one is killed (a zombie of ours, not collected): it exited before the
 * pass ended, and the listing must not show it as running; the first one is listed. */
static int path_listing_exit_before_pin(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "exited");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	struct sigproc a, v;
	NS_CHECK(ns_sig_spawn(&a, venv) == 0 && ns_sig_spawn(&v, venv) == 0 && a.pid < v.pid, "spawn the leftovers");
	struct reaper_finder f = reaper_find_env(m);
	int go, res, r;
	pid_t reaper = listing_child(&f, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	NS_CHECK((r = trace_until_pidfd_open(reaper, v.pid)) == 0, "never caught the reaper pinning %d: %s",
		 (int)v.pid, strerror(-r));
	siginfo_t si = { 0 };
	NS_CHECK(kill(v.pid, SIGKILL) == 0 && waitid(P_PID, (id_t)v.pid, &si, WEXITED | WNOWAIT) == 0,
		 "kill %d and see it exit", (int)v.pid);
	fprintf(stderr, "hard: listing held before pinning %d, which has exited since its cmdline was read\n",
		(int)v.pid);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096], want[32];
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	snprintf(want, sizeof want, "\n%d ", (int)v.pid);
	const char *line = strstr(out, want);
	const char *end = line ? strchr(line + 1, '\n') : NULL;
	NS_CHECK(!line || (end && memmem(line, (size_t)(end - line), " fate=alive", 11) == NULL),
		 "%d, exited before the pass ended, was listed as running:\n%s", (int)v.pid, out);
	snprintf(want, sizeof want, "\n%d ", (int)a.pid);
	NS_CHECK(strstr(out, want), "the leftover %d was not listed:\n%s", (int)a.pid, out);
	int st;
	NS_CHECK(waitpid(v.pid, &st, 0) == v.pid, "collect %d", (int)v.pid);
	close(v.rd);
	kill(a.pid, SIGKILL);
	waitpid(a.pid, &st, 0);
	close(a.rd);
	return 0;
}

/* A listing run as a job of its own leaves its process group, asked of the kernel by pid.
 * Held as it asks the group of its pass's first match (a member of that group, proven the
 * process whose environment was read by its /proc directory), the member is gone and an
 * unmarked process of another group holds its pid: the answer is the newcomer's, and the
 * member must not be listed on a pid that now names a stranger. */
static int path_listing_job_member_replaced(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "job");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	/* j leads a session and process group of its own: the group the listing leaves */
	struct sigproc j, u = { 0, -1 };
	NS_CHECK(ns_sig_spawn_with(&j, venv, "-s") == 0, "spawn the job's member");
	NS_CHECK(getpgid(j.pid) == j.pid, "%d leads no group of its own", (int)j.pid);
	struct reaper_finder f = reaper_find_env(m);
	int go, res, r;
	pid_t reaper = listing_child_of(&f, j.pid, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	char out[4096], want[32];
	if ((r = trace_until(reaper, SYS_getpgid, j.pid, -1)) == -ECHILD) {
		/* ended without asking: the member was judged by its stat under the pin, and left */
		ssize_t n = read(res, out, sizeof out - 1);
		out[n > 0 ? n : 0] = 0;
		close(res);
		snprintf(want, sizeof want, "\n%d ", (int)j.pid);
		NS_CHECK(atoi(out) == 0 && !strstr(out, want), "the job's member %d was listed:\n%s", (int)j.pid, out);
		int st;
		kill(j.pid, SIGKILL);
		waitpid(j.pid, &st, 0);
		close(j.rd);
		return 0;
	}
	NS_CHECK(r == 0, "never caught the listing asking the group of %d: %s", (int)j.pid, strerror(-r));
	NS_CHECK((r = take_over_pid(&j, &u)) == 0, "could not put a new process on pid %d: %s (got %d)", (int)j.pid,
		 strerror(-r), (int)u.pid);
	NS_CHECK(getpgid(u.pid) != j.pid, "the newcomer %d is of the job's group", (int)u.pid);
	fprintf(stderr, "hard: listing held asking the group of %d; the pid now holds an unmarked process\n",
		(int)u.pid);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	snprintf(want, sizeof want, "\n%d ", (int)u.pid);
	NS_CHECK(!strstr(out, want), "%d, the job's member gone and its pid an unmarked process's, was listed:\n%s",
		 (int)u.pid, out);
	return unrelated_untouched(&u);
}

/* A hard_sig child of ours with envp, its fd 0 in, its fd 1 and 2 /dev/null, ready when this
 * returns. */
static int ns_sig_spawn_stdin(struct sigproc *sp, char *const envp[], int in)
{
	char *argv[] = { (char *)hard_path("hard_sig"), "-f", "3", NULL };
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		/* (a dup2 onto itself would leave the close-on-exec flag on) */
		if (null < 0 || (pfd[1] == 3 ? fcntl(3, F_SETFD, 0) : dup2(pfd[1], 3)) < 0 || dup2(in, 0) < 0 ||
		    dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(126);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(pfd[1]);
	char c = 0;
	if (pid < 0 || read(pfd[0], &c, 1) != 1 || c != 'R') {
		close(pfd[0]);
		return -EIO;
	}
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	sp->pid = pid;
	sp->rd = pfd[0];
	return 0;
}

/* A reaper's ancestor A holds a file F on its fd 0; the reaper's output is a pipe whose read
 * end a partner T holds on its fd 0 (a `| tee` of it), and A holds that read end too, on
 * another fd. A leftover L that opened F by its name is looked at first (its pid is lower),
 * then T. Held as the reaper looks at T's fd 0, A moves the read end onto its own fd 0 (a
 * descriptor of the caller's side changes during the pass): T is still the reaper's partner,
 * never signalled; L is reaped. */
static int path_partner_holder_changed(void)
{
	char m[128], fpath[] = "/tmp/reaper-hard-kin-XXXXXX";
	tu_unique_marker(m, sizeof m, "HARD_NS", "kin");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	int ff = mkstemp(fpath);
	NS_CHECK(ff >= 0, "mkstemp: %s", strerror(errno));
	close(ff);
	int p[2], go[2], ctl[2], info[2], res[2];
	NS_CHECK(pipe2(p, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0 && pipe2(ctl, O_CLOEXEC) == 0 &&
		 pipe2(info, O_CLOEXEC) == 0 && pipe2(res, O_CLOEXEC) == 0, "pipe");
	struct reaper_finder f = reaper_find_env(m);
	pid_t a = fork();
	if (a == 0) {
		close(ctl[1]); /* (its end of the test's: the read below ends when the test closes its own) */
		int in = open(fpath, O_RDONLY | O_CLOEXEC);
		if (in < 0 || dup2(in, 0) < 0)
			_exit(3);
		pid_t r = fork();
		if (r == 0) {
			/* the caller: its output the pipe, its input /dev/null */
			int null = open("/dev/null", O_RDWR | O_CLOEXEC);
			char c;
			if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || read(go[0], &c, 1) != 1)
				_exit(2);
			struct reaper_opts o;
			reaper_opts_init(&o);
			o.timeout = 0;
			o.grace = 0.3;
			struct reaper_report *rep = NULL;
			int e = reaper_reap(&f, 1, &o, &rep);
			dprintf(res[1], "%d\n", e);
			for (size_t i = 0; e == 0 && i < rep->n; i++)
				dprintf(res[1], "%d %s\n", (int)rep->procs[i].pid, reaper_fate_name(rep->procs[i].fate));
			reaper_report_free(rep);
			_exit(0);
		}
		char c;
		if (r < 0 || write(info[1], &r, sizeof r) != sizeof r)
			_exit(4);
		/* told to: the read end of the reaper's output onto fd 0 */
		if (read(ctl[0], &c, 1) == 1 && (dup2(p[0], 0) < 0 || write(info[1], "d", 1) != 1))
			_exit(5);
		int st;
		_exit(waitpid(r, &st, 0) == r && WIFEXITED(st) ? WEXITSTATUS(st) : 6);
	}
	NS_CHECK(a > 0, "fork A");
	pid_t reaper;
	NS_CHECK(read(info[0], &reaper, sizeof reaper) == sizeof reaper, "A did not start the reaper");
	close(p[1]);
	close(res[1]);
	struct sigproc l, t;
	int lin = open(fpath, O_RDONLY | O_CLOEXEC);
	NS_CHECK(lin >= 0 && ns_sig_spawn_stdin(&l, venv, lin) == 0, "spawn the leftover");
	NS_CHECK(ns_sig_spawn_stdin(&t, venv, p[0]) == 0 && l.pid < t.pid, "spawn the partner");
	close(lin);
	int r;
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go[1], "g", 1) == 1, "go");
	r = trace_until(reaper, SYS_kcmp, a, t.pid); /* held at kcmp(a, t, ...) */
	NS_CHECK(r == 0 || r == -ECHILD, "tracing the reaper: %s", strerror(-r));
	if (r == 0) {
		char c;
		NS_CHECK(write(ctl[1], "d", 1) == 1 && read(info[0], &c, 1) == 1, "A did not move the pipe");
		fprintf(stderr, "hard: reaper held comparing %d's fd 0 with A's; A's fd 0 is now the pipe's read end\n",
			(int)t.pid);
		NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	}
	close(ctl[1]);
	int st;
	NS_CHECK(waitpid(a, &st, 0) == a && WIFEXITED(st) && WEXITSTATUS(st) == 0, "A/reaper status %#x", st);
	char out[4096];
	size_t used = 0;
	ssize_t n;
	while (used < sizeof out - 1 && (n = read(res[0], out + used, sizeof out - 1 - used)) > 0)
		used += (size_t)n;
	out[used] = 0;
	unlink(fpath);
	NS_CHECK(atoi(out) == 0, "reaper_reap failed: %s", out);
	const char *seen = hard_signals_seen(t.rd);
	char want[32];
	snprintf(want, sizeof want, "\n%d ", (int)t.pid);
	NS_CHECK(!*seen && !strstr(out, want), "the partner %d was taken for a leftover (signals: %s):\n%s",
		 (int)t.pid, seen, out);
	snprintf(want, sizeof want, "\n%d ", (int)l.pid);
	NS_CHECK(strstr(out, want), "the leftover %d was not reaped:\n%s", (int)l.pid, out);
	waitpid(l.pid, &st, 0);
	close(l.rd);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, &st, 0);
	close(t.rd);
	return 0;
}

/* Let tracee run until it enters system call nr with want as its path (second argument): it
 * stays stopped there, the call not made yet. */
static int trace_until_path(pid_t tracee, long nr, const char *want)
{
	char mem[64], path[64];
	snprintf(mem, sizeof mem, "/proc/%d/mem", (int)tracee);
	int fd = open(mem, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		int st;
		int r = wait_stopped(tracee, &st, 30);
		if (r < 0 || !WIFSTOPPED(st)) {
			close(fd);
			return r < 0 ? r : -ECHILD;
		}
		int deliver = 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info si;
			memset(&si, 0, sizeof si);
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tracee, sizeof si, &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_ENTRY && si.entry.nr == (unsigned long long)nr) {
				ssize_t n = pread(fd, path, sizeof path - 1, (off_t)si.entry.args[1]);
				path[n > 0 ? n : 0] = 0;
				if (!strcmp(path, want)) {
					close(fd);
					return 0;
				}
			}
		} else if ((st >> 16) == 0) {
			deliver = WSTOPSIG(st);
		}
		if (ptrace(PTRACE_SYSCALL, tracee, 0, deliver) < 0) {
			close(fd);
			return -errno;
		}
	}
}

/* Let tracee run until it enters openat() of "VICTIM/what" (a /proc read about victim): it
 * stays stopped there, the file not opened yet. */
static int trace_until_open(pid_t tracee, pid_t victim, const char *what)
{
	char want[64];
	snprintf(want, sizeof want, "%d/%s", (int)victim, what);
	return trace_until_path(tracee, SYS_openat, want);
}

/* Until pid runs what (its cmdline starts with a word holding it), as uid (-1: any), bounded:
 * an exec under way is over then. 0 or -ETIMEDOUT. */
static int runs_as(pid_t pid, const char *what, long uid)
{
	char path[64], line[64];
	for (int i = 0; i < 6000; i++) {
		struct stat sb;
		snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
		int c = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = c >= 0 ? read(c, line, sizeof line - 1) : -1;
		line[n > 0 ? n : 0] = 0;
		if (c >= 0)
			close(c);
		snprintf(path, sizeof path, "/proc/%d", (int)pid);
		if (strstr(line, what) && (uid < 0 || (stat(path, &sb) == 0 && (long)sb.st_uid == uid)))
			return 0;
		hard_nap(0.005);
	}
	return -ETIMEDOUT;
}

/* A reaper_child of finder f, held at its first read of victim's cmdline (a description it
 * makes): 0 with *reaper and *res set, or 1 (said on msgfd). */
static int reaper_held_at_cmdline(const struct reaper_finder *f, double timeout, pid_t victim, pid_t *reaper,
				  int *res)
{
	int go, r;
	*reaper = reaper_child(f, 1, NULL, 0, timeout, &go, res);
	NS_CHECK(*reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(*reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	NS_CHECK((r = trace_until_open(*reaper, victim, "cmdline")) == 0,
		 "never caught the reaper reading %d/cmdline: %s", (int)victim, strerror(-r));
	return 0;
}

/* A leftover is pinned when it is found and described (cmdline, exe, cwd) later. Held at
 * the first read of its cmdline, the reaper finds it gone and a sleep on its pid: what it
 * reads then is the sleep's and is not told as the leftover's. */
static int path_describe_rechecked(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "describe");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	struct sigproc v;
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the leftover");
	struct reaper_finder f = reaper_find_env(m);
	int res, st;
	pid_t reaper;
	if (reaper_held_at_cmdline(&f, 0, v.pid, &reaper, &res))
		return 1;
	NS_CHECK(kill(v.pid, SIGKILL) == 0 && waitpid(v.pid, &st, 0) == v.pid, "end the leftover");
	close(v.rd);
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	NS_CHECK(fd >= 0 && dprintf(fd, "%d", (int)v.pid - 1) > 0, "ns_last_pid: %s", strerror(errno));
	close(fd);
	char *uargv[] = { "/bin/sleep", "1000", NULL }, *uenv[] = { "PATH=/usr/bin:/bin", NULL };
	pid_t u = hard_spawn_raw(uargv, uenv, -1);
	NS_CHECK(u == v.pid, "could not put a sleep on pid %d (got %d)", (int)v.pid, (int)u);
	/* the sleep's exec is over once its cmdline shows */
	NS_CHECK(runs_as(u, "sleep", -1) == 0, "the sleep %d never ran", (int)u);
	fprintf(stderr, "hard: reaper held at reading %d/cmdline; the pid now holds a sleep\n", (int)u);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096];
	int failed = reaper_result(reaper, res, out, sizeof out);
	NS_CHECK(waitpid(u, &st, WNOHANG) == 0, "the sleep on pid %d was signalled (status %#x)", (int)u, st);
	kill(u, SIGKILL);
	waitpid(u, &st, 0);
	if (failed)
		return 1;
	NS_CHECK(!strstr(out, "sleep"), "the sleep on the leftover's pid was described as the leftover:\n%s", out);
	return 0;
}

/* A leftover found by its marker while it was root's is the run's, whatever uid it takes
 * afterwards (a privilege drop, an exec through setpriv or su): it is signalled like the rest.
 * Held at the reaper's first look at its cmdline (its description before the signal), the
 * leftover execs as nobody. */
static int path_described_uid_as_found(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "setuid");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	char *vargv[] = { "/bin/sh", "-c",
			  "read go <&3; exec setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sleep 1000", NULL };
	int g[2], res, st;
	NS_CHECK(pipe2(g, O_CLOEXEC) == 0, "pipe");
	pid_t v = hard_spawn_raw(vargv, venv, g[0]), reaper;
	close(g[0]);
	NS_CHECK(v > 0 && runs_as(v, "sh", 0) == 0, "spawn the leftover");
	struct reaper_finder f = reaper_find_env(m);
	if (reaper_held_at_cmdline(&f, 1.0, v, &reaper, &res))
		return 1;
	NS_CHECK(write(g[1], "g\n", 2) == 2, "let the leftover go on");
	close(g[1]);
	NS_CHECK(runs_as(v, "sleep", 65534) == 0, "the leftover %d never ran as nobody", (int)v);
	fprintf(stderr, "hard: reaper held at reading %d/cmdline; the leftover now runs as nobody\n", (int)v);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096];
	int failed = reaper_result(reaper, res, out, sizeof out);
	pid_t w = waitpid(v, &st, WNOHANG);
	if (w == 0) {
		kill(v, SIGKILL);
		waitpid(v, NULL, 0);
	}
	if (failed)
		return 1;
	NS_CHECK(w == v && WIFSIGNALED(st), "the leftover %d was left running (%d, status %#x):\n%s", (int)v, (int)w, st,
		 out);
	char want[32];
	snprintf(want, sizeof want, "\n%d ", (int)v);
	const char *line = strstr(out, want);
	NS_CHECK(line && strstr(line, " terminated "), "the leftover %d is not reported terminated:\n%s", (int)v, out);
	return 0;
}

/* A leftover found between its fork and its exec shows its parent's comm and environment (its
 * test). Held at the reaper's first read of its cmdline (its description before the signal),
 * the leftover execs: it is told as one program, the one it runs then (cmdline, comm and test
 * all of that exec), never as a mix of the two. */
static int path_described_as_one_exec(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "oneexec");
	char *venv[] = { "PATH=/usr/bin:/bin", m, "REAPER_TEST=first", NULL };
	char *vargv[] = { "/bin/sh", "-c", "(read go <&3; REAPER_TEST=second exec /bin/sleep 300) & exec /bin/sleep 301",
			  NULL };
	int g[2], res;
	NS_CHECK(pipe2(g, O_CLOEXEC) == 0, "pipe");
	pid_t v = hard_spawn_raw(vargv, venv, g[0]), both[4], reaper;
	close(g[0]);
	/* the shell forks its child before it execs the sleep */
	NS_CHECK(v > 0 && runs_as(v, "sleep", -1) == 0, "spawn the leftover");
	NS_CHECK(tu_marked(m, both, 4) == 2, "the shell's child is not there");
	pid_t u = both[0] == v ? both[1] : both[0];
	struct reaper_finder f = reaper_find_env(m);
	if (reaper_held_at_cmdline(&f, 0, u, &reaper, &res))
		return 1;
	NS_CHECK(write(g[1], "g\n", 2) == 2, "let the leftover exec");
	close(g[1]);
	NS_CHECK(runs_as(u, "sleep", -1) == 0, "the leftover %d never ran its sleep", (int)u);
	fprintf(stderr, "hard: reaper held at reading %d/cmdline; the leftover has exec'd since\n", (int)u);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096];
	if (reaper_result(reaper, res, out, sizeof out))
		return 1;
	char want[32], told[1024];
	snprintf(want, sizeof want, "\n%d ", (int)u);
	const char *line = strstr(out, want);
	NS_CHECK(line, "the leftover %d is not in the report:\n%s", (int)u, out);
	snprintf(told, sizeof told, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
	NS_CHECK(strstr(told, " cmdline=/bin/sleep 300 ") && strstr(told, " test=second ") && strstr(told, " comm=sleep"),
		 "the leftover is told as a mix of two programs: %s", told);
	return 0;
}

/* A leftover found by its marker is gone by the time its uid is read, and another user's
 * process holds its pid: it is told as what it was (it exited), not with that process's uid
 * (another user's: foreign). */
static int path_uid_read_rechecked(void)
{
	char m[128];
	tu_unique_marker(m, sizeof m, "HARD_NS", "uid");
	char *venv[] = { "PATH=/usr/bin:/bin", m, NULL };
	struct sigproc v;
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the leftover");
	uint64_t vst = tu_start_time(v.pid);
	struct reaper_finder f = reaper_find_env(m);
	int go, res, r, st;
	pid_t reaper = reaper_child(&f, 1, NULL, 0, 5, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	char dir[16];
	snprintf(dir, sizeof dir, "%d", (int)v.pid);
	NS_CHECK((r = trace_until_path(reaper, SYS_newfstatat, dir)) == 0, "never caught the reaper reading %d's uid: %s",
		 (int)v.pid, strerror(-r));
	NS_CHECK(kill(v.pid, SIGKILL) == 0 && waitpid(v.pid, &st, 0) == v.pid, "end the leftover");
	close(v.rd);
	NS_CHECK(next_pid_is(v.pid) == 0, "ns_last_pid");
	pid_t u = fork();
	if (u == 0) {
		char *uargv[] = { "/bin/sleep", "1000", NULL }, *uenv[] = { "PATH=/usr/bin:/bin", NULL };
		if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0)
			execve(uargv[0], uargv, uenv);
		_exit(127);
	}
	NS_CHECK(u == v.pid, "could not put a process on pid %d (got %d)", (int)v.pid, (int)u);
	r = runs_as(u, "sleep", 65534);
	fprintf(stderr, "hard: reaper held at reading %d's uid; the pid now holds nobody's sleep\n", (int)u);
	NS_CHECK(ptrace(PTRACE_DETACH, reaper, 0, 0) == 0, "detach: %s", strerror(errno));
	char out[4096];
	int failed = reaper_result(reaper, res, out, sizeof out);
	int alive = waitpid(u, &st, WNOHANG) == 0;
	kill(u, SIGKILL);
	waitpid(u, &st, 0);
	if (failed)
		return 1;
	NS_CHECK(r == 0, "nobody's sleep %d never ran", (int)u);
	NS_CHECK(alive, "nobody's sleep on pid %d was signalled", (int)u);
	char want[64];
	snprintf(want, sizeof want, "\n%d %llu ", (int)v.pid, (unsigned long long)vst);
	const char *line = strstr(out, want);
	NS_CHECK(line, "the leftover %d is not in the report:\n%s", (int)v.pid, out);
	char told[1024];
	snprintf(told, sizeof told, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
	NS_CHECK(!strncmp(line + strlen(want), "exited ", 7), "the leftover that exited is told otherwise: %s", told);
	NS_CHECK(!strstr(told, " uid=65534 "), "the leftover is told with the uid of the process now on its pid: %s", told);
	return 0;
}

/* The cgroups a test below made (in the namespace's pid 1): whatever is in them is killed and
 * they go, passed or failed. */
static char ns_cg[2][PATH_MAX];

static int cgroups_dropped(int (*fn)(void))
{
	int r = fn();
	for (size_t i = 0; i < 2; i++) {
		if (!ns_cg[i][0] || access(ns_cg[i], F_OK) < 0)
			continue;
		reaper_cgroup_kill(ns_cg[i]);
		reaper_cgroup_wait(ns_cg[i], 60);
		int e = reaper_cgroup_remove(ns_cg[i]);
		NS_CHECK(e == 0, "remove %s: %s", ns_cg[i], strerror(-e));
	}
	return r;
}

static int move_to(const char *cg, pid_t pid)
{
	char procs[PATH_MAX + 16];
	snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = dprintf(fd, "%d", (int)pid) > 0 ? 0 : -errno;
	close(fd);
	return r;
}

/* A cgroup member was listed; before the reaper pins it, the member is gone and a process
 * outside the cgroup holds its pid: the pinned process is listed again and is no member. */
static int member_rechecked(void)
{
	char *cg = ns_cg[0];
	int r = reaper_cgroup_create(NULL, NULL, cg, PATH_MAX);
	NS_CHECK(r == 0, "create a cgroup: %s", strerror(-r));
	char *venv[] = { "PATH=/usr/bin:/bin", "HARD_ROLE=member", NULL };
	struct sigproc v, u = { 0, -1 };
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the member");
	NS_CHECK((r = move_to(cg, v.pid)) == 0, "move %d into %s: %s", (int)v.pid, cg, strerror(-r));
	struct reaper_finder f = reaper_find_cgroup(cg);
	int go, res;
	pid_t reaper = reaper_child(&f, 1, NULL, 0, 0, &go, &res);
	NS_CHECK(reaper > 0, "fork the reaper");
	NS_CHECK(trace_begin(reaper) == 0, "trace the reaper: %s", strerror(errno));
	NS_CHECK(write(go, "g", 1) == 1, "go");
	return replaced_before_pinning(reaper, res, &v, &u, "a process outside the cgroup");
}

/* The pid of a member of the cgroup being released passes to a process in another cgroup
 * before the release pins it: that process stays where it is. */
static int release_rechecked(void)
{
	char *cg = ns_cg[0], *other = ns_cg[1], line[PATH_MAX + 64];
	int r = reaper_cgroup_create(NULL, NULL, cg, PATH_MAX);
	NS_CHECK(r == 0, "create a cgroup: %s", strerror(-r));
	NS_CHECK((r = reaper_cgroup_create(NULL, NULL, other, PATH_MAX)) == 0, "create a cgroup: %s", strerror(-r));
	char *venv[] = { "PATH=/usr/bin:/bin", "HARD_ROLE=member", NULL };
	struct sigproc v, u = { 0, -1 };
	NS_CHECK(ns_sig_spawn(&v, venv) == 0, "spawn the member");
	NS_CHECK((r = move_to(cg, v.pid)) == 0, "move %d into %s: %s", (int)v.pid, cg, strerror(-r));
	int g[2];
	NS_CHECK(pipe2(g, O_CLOEXEC) == 0, "pipe");
	pid_t rel = fork();
	if (rel == 0) {
		char c;
		_exit(read(g[0], &c, 1) == 1 && reaper_cgroup_release(cg) >= 0 ? 0 : 1);
	}
	close(g[0]);
	NS_CHECK(rel > 0, "fork the releaser");
	NS_CHECK(trace_begin(rel) == 0, "trace the releaser: %s", strerror(errno));
	NS_CHECK(write(g[1], "g", 1) == 1, "go");
	close(g[1]);
	NS_CHECK((r = trace_until_pidfd_open(rel, v.pid)) == 0, "never caught the release pinning %d: %s", (int)v.pid,
		 strerror(-r));
	NS_CHECK((r = take_over_pid(&v, &u)) == 0, "could not put a new process on pid %d: %s (got %d)", (int)v.pid,
		 strerror(-r), (int)u.pid);
	NS_CHECK((r = move_to(other, u.pid)) == 0, "move %d into %s: %s", (int)u.pid, other, strerror(-r));
	fprintf(stderr, "hard: release held before pinning %d; the pid now holds a process of another cgroup\n",
		(int)u.pid);
	NS_CHECK(ptrace(PTRACE_DETACH, rel, 0, 0) == 0, "detach: %s", strerror(errno));
	int st;
	NS_CHECK(waitpid(rel, &st, 0) == rel && WIFEXITED(st) && WEXITSTATUS(st) == 0, "release status %#x", st);
	snprintf(line, sizeof line, "/proc/%d/cgroup", (int)u.pid);
	FILE *f = fopen(line, "re");
	int stayed = 0;
	const char *name = strrchr(other, '/');
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "0::", 3) && strstr(line, name))
			stayed = 1;
	if (f)
		fclose(f);
	kill(u.pid, SIGKILL);
	waitpid(u.pid, &st, 0);
	close(u.rd);
	NS_CHECK(stayed, "the process %d of another cgroup was moved by the release of %s", (int)u.pid, cg);
	NS_CHECK(access(cg, F_OK) < 0, "%s still there after its release", cg);
	return 0;
}

static int path_cgroup_member_rechecked(void)
{
	return cgroups_dropped(member_rechecked);
}

static int path_release_rechecked(void)
{
	return cgroups_dropped(release_rechecked);
}

/* ---- namespace plumbing ---------------------------------------------------------------- */

/* Run fn as pid 1 of a new PID namespace with its own /proc; fails the test with fn's
 * message when it returns non-zero. */
static void in_pid_namespace(int (*fn)(void))
{
	int mp[2];
	ck_assert_int_eq(pipe2(mp, O_CLOEXEC), 0);
	pid_t h = fork();
	ck_assert_int_ge(h, 0);
	if (h == 0) {
		close(mp[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0) {
			dprintf(mp[1], "unshare(CLONE_NEWPID|CLONE_NEWNS): %s\n", strerror(errno));
			_exit(1);
		}
		pid_t init = fork();
		if (init == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			msgfd = mp[1];
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
				dprintf(msgfd, "mount /proc in the namespace: %s\n", strerror(errno));
				_exit(1);
			}
			/* leaving pid 1 ends every process of the namespace (the kernel kills them) */
			_exit(fn());
		}
		int st = 0;
		while (init > 0 && waitpid(init, &st, 0) < 0 && errno == EINTR)
			;
		_exit(init < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
	}
	close(mp[1]);
	char msg[4096] = "";
	size_t len = 0;
	ssize_t n;
	while ((n = read(mp[0], msg + len, sizeof msg - 1 - len)) > 0)
		len += (size_t)n;
	msg[len] = 0;
	close(mp[0]);
	int st;
	ck_assert_int_eq(waitpid(h, &st, 0), h);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "in the PID namespace (status %#x): %s", st, msg);
}

#define PIDNS_WHY "a PID namespace and ns_last_pid need root"

START_TEST(recycled_pid_reap)
{
	in_pid_namespace(path_library);
}
END_TEST

START_TEST(recycled_pid_run_cancellation)
{
	in_pid_namespace(path_cancel);
}
END_TEST

START_TEST(recycled_pid_owner_death)
{
	in_pid_namespace(path_owner_death);
}
END_TEST

START_TEST(recycled_tree_root_not_walked)
{
	in_pid_namespace(path_recycled_tree_root);
}
END_TEST

START_TEST(reused_pid_of_kept_found)
{
	in_pid_namespace(path_reused_pid_found);
}
END_TEST

START_TEST(marker_rechecked_after_pinning)
{
	in_pid_namespace(path_marker_rechecked);
}
END_TEST

START_TEST(listing_pid_chosen_not_listed)
{
	in_pid_namespace(path_listing_pid_chosen);
}
END_TEST

START_TEST(listing_job_member_replaced_not_listed)
{
	in_pid_namespace(path_listing_job_member_replaced);
}
END_TEST

START_TEST(listing_exit_before_pin_not_running)
{
	in_pid_namespace(path_listing_exit_before_pin);
}
END_TEST

START_TEST(partner_holder_changed)
{
	in_pid_namespace(path_partner_holder_changed);
}
END_TEST

START_TEST(described_through_its_identity)
{
	in_pid_namespace(path_describe_rechecked);
}
END_TEST

START_TEST(described_uid_as_found)
{
	in_pid_namespace(path_described_uid_as_found);
}
END_TEST

START_TEST(described_as_one_exec)
{
	in_pid_namespace(path_described_as_one_exec);
}
END_TEST

START_TEST(uid_read_rechecked)
{
	in_pid_namespace(path_uid_read_rechecked);
}
END_TEST

START_TEST(cgroup_member_rechecked_after_pinning)
{
	in_pid_namespace(path_cgroup_member_rechecked);
}
END_TEST

START_TEST(release_member_rechecked_after_pinning)
{
	in_pid_namespace(path_release_rechecked);
}
END_TEST

START_TEST(setsid_sleep_found_mid_exec)
{
	in_pid_namespace(path_setsid_sleep_race);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hard_pidns");
	TCase *tc = tcase_create("recycled");
	/* "pidfd": PID namespaces, ptrace and leftovers that are not the reaper's children
	 * (valgrind 3.19 has no pidfds); check-valgrind excludes this tag */
	tcase_set_tags(tc, "pidfd");
	tcase_set_timeout(tc, 90);
	tcase_add_root_test(tc, recycled_pid_reap, PIDNS_WHY);
	tcase_add_root_test(tc, recycled_pid_run_cancellation, PIDNS_WHY);
	tcase_add_root_test(tc, recycled_pid_owner_death, PIDNS_WHY);
	tcase_add_root_test(tc, recycled_tree_root_not_walked, PIDNS_WHY);
	tcase_add_root_test(tc, reused_pid_of_kept_found, PIDNS_WHY);
	tcase_add_root_test(tc, setsid_sleep_found_mid_exec, PIDNS_WHY);
	tcase_add_root_test(tc, marker_rechecked_after_pinning, PIDNS_WHY);
	tcase_add_root_test(tc, listing_pid_chosen_not_listed, PIDNS_WHY);
	tcase_add_root_test(tc, listing_job_member_replaced_not_listed, PIDNS_WHY);
	tcase_add_root_test(tc, listing_exit_before_pin_not_running, PIDNS_WHY);
	tcase_add_root_test(tc, partner_holder_changed, PIDNS_WHY);
	tcase_add_root_test(tc, described_through_its_identity, PIDNS_WHY);
	tcase_add_root_test(tc, described_uid_as_found, PIDNS_WHY);
	tcase_add_root_test(tc, described_as_one_exec, PIDNS_WHY);
	tcase_add_root_test(tc, uid_read_rechecked, PIDNS_WHY);
	tcase_add_root_test(tc, cgroup_member_rechecked_after_pinning, PIDNS_WHY);
	tcase_add_root_test(tc, release_member_rechecked_after_pinning, PIDNS_WHY);
	suite_add_tcase(s, tc);
	tc = tcase_create("zz_nothing_left");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, nothing_left_behind);
	suite_add_tcase(s, tc);
	return hard_run(s);
}
