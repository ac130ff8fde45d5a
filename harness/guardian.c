/* SPDX-License-Identifier: MIT */
/* guardian: see guardian.h. */
#define _GNU_SOURCE
#include "guardian.h"

#include "exits.h"
#include "msg.h"
#include "reaper/clone3.h"
#include "reaper/procfs.h"
#include "reaper/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* close_range, or one close per fd where it does not exist (ENOSYS: kernels before 5.9) */
static void close_fds(unsigned lo, unsigned hi)
{
	if (lo > hi || close_range(lo, hi, 0) == 0)
		return;
	struct rlimit rl;
	unsigned end = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
				       rl.rlim_cur < 1u << 20
			       ? (unsigned)rl.rlim_cur
			       : 1u << 20;
	for (unsigned fd = lo; fd <= hi && fd < end; fd++)
		close((int)fd);
}

extern char **environ;

/* Where our environment's exec-time strings lie, [*lo, *hi): what /proc/PID/environ reads.
 * The kernel lays them out one after the other; environ still points at them in that order
 * unless something changed it since the exec (then the kernel's own bounds, but only where
 * libc found our strings: under an emulator such as valgrind they are the host's memory).
 * 0, or -ENOENT when there is nothing of ours to clear. */
static int environ_span(char **lo, char **hi)
{
	if (!environ || !environ[0])
		return -ENOENT;
	char *end = environ[0];
	size_t i = 0;
	for (; environ[i] && environ[i] == end; i++)
		end += strlen(end) + 1;
	*lo = environ[0];
	*hi = end;
	if (!environ[i])
		return 0;
	struct reaper_stat st;
	if (procfs_stat(-1, getpid(), &st) < 0 || !st.env_start || st.env_end <= st.env_start)
		return -ENOENT;
	for (i = 0; environ[i]; i++)
		if ((uintptr_t)environ[i] >= st.env_start && (uintptr_t)environ[i] < st.env_end) {
			*lo = (char *)(uintptr_t)st.env_start;
			*hi = (char *)(uintptr_t)st.env_end;
			return 0;
		}
	return -ENOENT;
}

/* fork, with the child born with no environment in /proc/PID/environ: a finder of another
 * reaper (a `reaper reap --env` the command runs, a nested run's --home) must not take the
 * guardian for what the run left, not even in the moment after the fork, and nobody has to
 * wait for the child to clear it. Our strings are zeroed for the fork and put back after it;
 * the child's copy keeps the zeros. */
static pid_t fork_without_environ(void)
{
	char *lo = NULL, *hi = NULL, *saved = NULL;
	int span = environ_span(&lo, &hi) == 0;
	if (span && (saved = malloc((size_t)(hi - lo)))) {
		memcpy(saved, lo, (size_t)(hi - lo));
		memset(lo, 0, (size_t)(hi - lo));
	}
	pid_t g = fork();
	int e = errno;
	if (saved && g != 0)
		memcpy(lo, saved, (size_t)(hi - lo));
	else if (span && !saved && g == 0)
		memset(lo, 0, (size_t)(hi - lo)); /* no copy to spare: the child clears its own at once */
	free(saved);
	errno = e;
	return g;
}

/* What the guardian does once its wait is over: release (the run ended normally: remove the
 * run's cgroup, moving out what it still holds), or, on owner death, reap the run. Never
 * returns. */
static void guard_act(int release, const char *marker, const char *cgroup, const struct guardian_rules *rules)
{
	/* A normal stop, sent once the run's reap is over: the run's cgroup goes now, here while
	 * reaper writes its reports, and still when reaper is killed before its own rmdir. Gone
	 * already (ENOENT): reaper removed it, or it was never made. */
	if (release && (!*cgroup || rmdir(cgroup) == 0 || errno == ENOENT))
		_exit(0);
	/* Owner death, or a stop with the cgroup not empty. Nothing we open from here on may land
	 * on 0-2, where a warning would write into it: /dev/null goes there first. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; null >= 0 && fd <= 2; fd++)
		if (fd != null)
			dup2(null, fd);
	if (release) {
		/* What the run spared there (--keep, --report-only, moved in) moves up first, as
		 * reaper would move it (and as an owner-death reap does): nothing is left for a
		 * reaper killed from here on. */
		reaper_cgroup_release(cgroup);
		_exit(0);
	}
	/* The run's cgroup holds what carries no marker (env -i). We were given its path before
	 * it was made: made or not, only the run makes that name. The reap freezes and kills it
	 * whole once what the run's rules spare has left it. */
	struct stat sb;
	if (*cgroup && stat(cgroup, &sb) < 0)
		cgroup = "";
	struct reaper_finder f[2] = { reaper_find_env(marker), reaper_find_cgroup(cgroup) };
	f[0].origin = rules->origin;
	f[1].since = rules->origin ? rules->origin->start_time : 0;
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.settle = 3.0;
	o.patterns = rules->patterns;
	o.npatterns = rules->npatterns;
	o.kill_moved_in = rules->kill_moved_in;
	o.report_only = rules->report_only;
	/* the run's marker is random and never seen outside the run: a process of another user
	 * that carries it (a daemon the suite started as that user) is the run's */
	o.any_user = 1;
	struct reaper_report *rep = NULL;
	/* Rescan until quiet: the run's processes may still fork while we kill. */
	int r = reaper_reap(f, *cgroup ? 2 : 1, &o, &rep);
	/* What is still exiting is waited for (boundedly), what could not be killed moves up to
	 * our cgroup: the run's cgroup goes either way, it is not left behind empty. */
	if (*cgroup)
		reaper_cgroup_release(cgroup);
	_exit(r < 0 ? 1 : 0);
}

/* The guardian as a fork of ours (where it cannot share our memory, below): it waits on its
 * own copy of it. */
static void guard(int rfd, const char *marker, const char *cgroup, const struct guardian_rules *rules)
{
	/* A process group of our own (reaper sets it too, whichever runs first): signals sent to
	 * reaper's group or COMMAND's (job control, kill -- -PGID, a terminal's keys, which reach
	 * only its foreground group) miss us. Not a session of our own: setsid() makes a new
	 * scheduler autogroup, which costs the run's start a millisecond on a busy machine, and a
	 * session buys nothing more: no signal is sent to a session, and a hangup reaches only the
	 * session's leader and the terminal's foreground group. */
	setpgid(0, 0);
	prctl(PR_SET_NAME, "reaper-guard", 0, 0, 0);
	/* Carry no environment: ours is the caller's (CI=true, HOME); /proc shows none since the
	 * fork (fork_without_environ) */
	clearenv();
	/* Hold nothing of the run: no pipe, terminal or file of it (a reader waiting for EOF must
	 * not wait for us), not even its standard streams, and no directory a cleanup might want
	 * to unmount. 0-2 stay closed while we wait (nothing here writes to them); they get
	 * /dev/null before the reap, which may. */
	if (rfd > 0)
		close_fds(0, (unsigned)rfd - 1);
	close_fds((unsigned)rfd + 1, ~0u);
	if (chdir("/") < 0) {
		/* stay where we are: only an unmount could notice */
	}
	char c;
	ssize_t n;
	while ((n = read(rfd, &c, 1)) < 0 && errno == EINTR)
		;
	close(rfd); /* done with: it makes room on 0-2 if it was one of them */
	guard_act(n == 1, marker, cgroup, rules);
}

/* The guardian on our memory (x86-64, Linux 5.16 or later): a clone with CLONE_VM, not a fork. A fork copies our
 * page tables, and every page either side writes after it is copied once more (some thirty
 * faults a run, most of them ours, on the run's way); a child on our memory costs neither,
 * and its exit tears no address space down. While we live it only waits, on a stack of its
 * own, by bare system calls: no libc, whose state (errno, the heap) is ours. When it has work
 * to do (our death, or a release with the cgroup not empty) it execs reaper afresh
 * (`reaper __guardian ...`, guardian_main) with the job written out before the clone, and
 * works in a memory of its own: a reaper SIGKILLed in the middle of a malloc leaves our heap
 * as it was then, which nothing may use. Our environment is hidden for it (guardian_hide_environ):
 * /proc shows the environment of a process's memory, ours. The price: the OOM killer kills
 * every process of the memory it picks, the guardian with an OOM-killed reaper (build with
 * -DREAPER_FORK_GUARDIAN for a fork, which survives it). */
/* The guardian's argv: "reaper", GUARDIAN_SUBCOMMAND, MODE, MARKER, CGROUP, FLAGS, ORIGIN,
 * then KIND GLOB for each pattern; MODE is "release" or "death", FLAGS holds k
 * (--kill-moved-in) and r (--report-only) or is "-", ORIGIN is "-" or the origin's six fields
 * joined by ':'. */
enum { GA_MODE = 2, GA_MARKER, GA_CGROUP, GA_FLAGS, GA_ORIGIN, GA_PATTERNS };

#if defined(CLONE3_RUN) && !defined(REAPER_FORK_GUARDIAN)
#define VM_GUARDIAN 1

static struct vm_guardian {
	int rfd;
	unsigned nofile;           /* where closing one by one stops (no close_range) */
	char **argv;               /* the exec's, GA_MODE set by the guardian */
	struct guardian_rules rules; /* for the last resort: no exec */
	struct reaper_origin origin;
	char marker[96];
	char cgroup[PATH_MAX];
	char flags[4];
	char origin_arg[160];
	char *kinds;               /* the patterns' KIND arguments, one block */
} vmg;
/* Its stack; only the pages it touches are ever faulted in (the last resort, a reap on it
 * when the exec failed, goes deepest) */
static char vm_stack[256 * 1024] __attribute__((aligned(64)));
/* guardian_hide_environ hid our environment (or found none to hide): a guardian on our memory
 * shows none then */
static int vm_hidden;

static long sys4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}
#define sys(nr, a, b, c) sys4((nr), (long)(a), (long)(b), (long)(c), 0)
#ifndef SYS_close_range
#define SYS_close_range 436 /* x86-64's, where the headers are older than Linux 5.9 */
#endif

/* (not instrumented by ASan: nothing of the sanitizer's runtime, which is reaper's, may run
 * in it) */
__attribute__((no_sanitize_address)) static int vm_guard(void *arg)
{
	struct vm_guardian *v = arg;
	/* as guard(), by bare system calls */
	sys(SYS_setpgid, 0, 0, 0);
	sys(SYS_prctl, PR_SET_NAME, "reaper-guard", 0);
	uint64_t none = 0;
	sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none);
	/* one by one where close_range fails, whatever the error: ENOSYS before Linux 5.9, EPERM
	 * from a seccomp filter that does not list it (a copy of the pipe's write end kept here
	 * would hide our death) */
	long e = v->rfd > 0 ? sys(SYS_close_range, 0, v->rfd - 1, 0) : 0;
	if (e == 0)
		e = sys(SYS_close_range, v->rfd + 1, ~0u, 0);
	for (unsigned fd = 0; e < 0 && fd < v->nofile; fd++)
		if ((int)fd != v->rfd)
			sys(SYS_close, fd, 0, 0);
	sys(SYS_chdir, "/", 0, 0);
	char c;
	long n;
	while ((n = sys(SYS_read, v->rfd, &c, 1)) == -EINTR)
		;
	if (n == 1 && (!v->cgroup[0] || (e = sys(SYS_rmdir, v->cgroup, 0, 0)) == 0 || e == -ENOENT))
		sys(SYS_exit, 0, 0, 0);
	static char *const no_env[] = { NULL };
	v->argv[GA_MODE] = n == 1 ? "release" : "death";
	sys(SYS_execve, "/proc/self/exe", v->argv, no_env);
	/* No exec (no /proc here, say). Released: reaper, alive, moves out and removes what is
	 * left itself (drop_cgroup). Otherwise reaper is gone and its memory ours alone: the
	 * reap runs on it, as a forked guardian's would, our last resort. */
	if (n == 1)
		sys(SYS_exit, 0, 0, 0);
	sys(SYS_close, v->rfd, 0, 0);
	guard_act(0, v->marker, v->cgroup, &v->rules);
	return 0;
}

/* The exec's argv, written now: nothing of ours the guardian reads may change under it */
static char **vm_argv(const char *marker, const char *cgroup, const struct guardian_rules *rules)
{
	if (strlen(marker) >= sizeof vmg.marker || strlen(cgroup) >= sizeof vmg.cgroup)
		return NULL;
	char **argv = calloc(GA_PATTERNS + 2 * rules->npatterns + 1, sizeof *argv);
	char *kinds = vmg.kinds = malloc(rules->npatterns * 2 + 1);
	if (!argv || !kinds) {
		free(argv);
		free(kinds);
		vmg.kinds = NULL;
		return NULL;
	}
	strcpy(vmg.marker, marker);
	strcpy(vmg.cgroup, cgroup);
	char *f = vmg.flags;
	if (rules->kill_moved_in)
		*f++ = 'k';
	if (rules->report_only)
		*f++ = 'r';
	strcpy(f, f == vmg.flags ? "-" : "");
	strcpy(vmg.origin_arg, "-");
	vmg.rules = *rules;
	if (rules->origin) {
		const struct reaper_origin *o = rules->origin;
		vmg.origin = *o;
		vmg.rules.origin = &vmg.origin;
		snprintf(vmg.origin_arg, sizeof vmg.origin_arg, "%d:%d:%llu:%llu:%llu:%llu", (int)o->last_pid,
			 (int)o->pid_max, (unsigned long long)o->forks, (unsigned long long)o->tasks,
			 (unsigned long long)o->start_time, (unsigned long long)o->pidns);
	}
	size_t i = 0;
	argv[i++] = "reaper";
	argv[i++] = GUARDIAN_SUBCOMMAND;
	argv[i++] = "death";
	argv[i++] = vmg.marker;
	argv[i++] = vmg.cgroup;
	argv[i++] = vmg.flags;
	argv[i++] = vmg.origin_arg;
	for (size_t k = 0; k < rules->npatterns; k++) {
		kinds[2 * k] = rules->patterns[k].kind == REAPER_KEEP ? 'k' : 'a';
		kinds[2 * k + 1] = 0;
		argv[i++] = &kinds[2 * k];
		argv[i++] = (char *)rules->patterns[k].glob;
	}
	argv[i] = NULL;
	return argv;
}

static void vm_argv_free(void)
{
	free(vmg.argv);
	free(vmg.kinds);
	vmg.argv = NULL;
	vmg.kinds = NULL;
}

/* clone3(CLONE_VM) of vm_guard, its job ready: the guardian's pid, or -1 (errno set, nothing
 * started: no clone3, under valgrind say; the caller forks then) */
static pid_t vm_guardian_start(int rfd, const char *marker, const char *cgroup, const struct guardian_rules *rules)
{
	if (!vm_hidden) { /* our environment shows (guardian_hide_environ): a fork hides it from its copy */
		errno = EPERM;
		return -1;
	}
	if (vmg.argv) { /* one guardian at a time */
		errno = EBUSY;
		return -1;
	}
	char **argv = vm_argv(marker, cgroup, rules);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	struct rlimit rl;
	vmg.nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1u << 20 ? (unsigned)rl.rlim_cur : 1u << 20;
	vmg.rfd = rfd;
	vmg.argv = argv;
	/* (clone3, not clone: valgrind answers it ENOSYS, as seccomp filters may, where it would
	 * end the program at such a clone) */
	struct clone_args a = { .flags = CLONE_VM, .exit_signal = SIGCHLD,
				.stack = (uint64_t)(uintptr_t)vm_stack, .stack_size = sizeof vm_stack };
	long g = clone3_run(&a, vm_guard, &vmg);
	if (g < 0) {
		vm_argv_free();
		return -1;
	}
	return (pid_t)g;
}
#endif

#ifdef VM_GUARDIAN
/* Before Linux 5.16 a core-dumping signal (SIGSEGV, SIGABRT, SIGQUIT) killed every process
 * of the memory, not only the thread group: a crash of reaper would take a guardian on its
 * memory along, and the run would be left. 1 when the kernel is 5.16 or later. */
static int shared_memory_survives_core_dumps(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return 0;
	return major > 5 || (major == 5 && minor >= 16);
}
#endif

/* Hide our environment: its strings, where /proc/PID/environ reads them, are copied to the
 * heap (environ points there from now on) and zeroed. A guardian on our memory shows our
 * environment; it must show none (fork_without_environ). Before anything keeps a pointer
 * into it (getenv): cmd_run calls it first. */
void guardian_hide_environ(void)
{
#ifdef VM_GUARDIAN
	if (!shared_memory_survives_core_dumps())
		return; /* a forked guardian then */
	/* Nested in another reaper's run (REAPER_RUN is its marker): we are one of that run's
	 * processes and must show its marker, for its guardian finds the run by it alone when
	 * there is no cgroup (the outer reaper SIGKILLed: we are killed, our guardian ends our
	 * run). A guardian on our memory would show it too and be killed along with us: ours is
	 * a fork then (fork_without_environ), whose copy shows none. */
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "REAPER_RUN=", strlen("REAPER_RUN=")))
			return;
	char *lo = NULL, *hi = NULL;
	if (environ_span(&lo, &hi) < 0) {
		vm_hidden = 1; /* nothing of ours shows */
		return;
	}
	char *copy = malloc((size_t)(hi - lo));
	if (!copy)
		return; /* then fork_without_environ hides it from a forked guardian */
	memcpy(copy, lo, (size_t)(hi - lo));
	for (char **e = environ; *e; e++)
		if (*e >= lo && *e < hi)
			*e = copy + (*e - lo);
	memset(lo, 0, (size_t)(hi - lo));
	vm_hidden = 1;
#endif
}

int guardian_start(const char *marker, const char *cgroup, const struct guardian_rules *rules, int procfd,
		   struct pidref *guardian)
{
	/* p: reaper -> guardian, its write end held open for the run */
	int p[2] = { -1, -1 }, e = 0;
	*guardian = PIDREF_NULL;
	/* Our child, started by one fork and never waited for by the run: nothing waits for it
	 * to start (a middle process that forks it and exits would be one more process, and one
	 * more hand-off, on every run) */
	pid_t g = pipe2(p, O_CLOEXEC) < 0 ? -1 : -2;
#ifdef VM_GUARDIAN
	if (g == -2)
		g = vm_guardian_start(p[0], marker, cgroup, rules);
#endif
	if (g < 0 && p[0] >= 0)
		g = fork_without_environ();
	if (g == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		guard(p[0], marker, cgroup, rules);
	}
	if (g < 0)
		e = -errno;
	else
		setpgid(g, g); /* out of our group before anything can signal it: see guard() */
	if (p[0] >= 0)
		close(p[0]); /* the guardian holds its own copy of the read end */
	/* Our unwaited child: whatever holds its pid is it. Unpinned (no descriptor to spare),
	 * it is named and waited for by pid. */
	struct reaper_stat gst;
	if (!e && pidref_open_stat(guardian, procfd, g, &gst) < 0)
		*guardian = (struct pidref){ .pid = g, .fd = -1 };
	if (!e)
		return p[1];
	if (p[1] >= 0)
		close(p[1]);
	warn("warning: no owner-death guardian (%s); a SIGKILLed reaper leaves its run", strerror(-e));
	return e;
}

/* How long a stopped guardian may take to exit: it only reads one byte and exits, but a
 * loaded machine may not run it for a while. */
#define STOP_WAIT_MS 30000

void guardian_release(int *fd)
{
	if (*fd < 0)
		return;
	if (write(*fd, "q", 1) < 0) {
		/* EPIPE: the guardian is gone already */
	}
	close(*fd);
	*fd = -1;
}

void guardian_stop(int fd, struct pidref *guardian)
{
	guardian_release(&fd);
	/* A caller that looks for leftovers the moment we return must not find our guardian,
	 * nor its zombie: it is collected here (by pid while it is our unwaited child: an early
	 * exit the run collected is gone, ECHILD). */
	pid_t g = guardian->pid;
	for (int waited = 0; g > 0 && waited < STOP_WAIT_MS;) {
		pid_t w = guardian->fd >= 0 ? (pidref_collect(guardian, -1, NULL) == 0 ? 0 : g)
					    : waitpid(g, NULL, WNOHANG);
		if (w != 0)
			break; /* collected, or not ours to collect any more */
		struct pollfd pfd = { .fd = guardian->fd, .events = POLLIN };
		int step = guardian->fd >= 0 ? STOP_WAIT_MS - waited : 10; /* no pidfd: look again */
		int n = guardian->fd >= 0 ? poll(&pfd, 1, step) : poll(NULL, 0, step);
		if (n < 0 && errno != EINTR)
			break;
		/* it exited (or a signal came): collected in the next round; only a wait that
		 * timed out counts against the bound */
		if (n == 0)
			waited += step;
	}
#ifdef VM_GUARDIAN
	/* its job, once it is gone (collected, or not ours: it ended early): not before, it may
	 * still read it */
	if (g <= 0 || waitpid(g, NULL, WNOHANG) < 0)
		vm_argv_free();
#endif
	pidref_done(guardian);
}

/* `reaper __guardian MODE MARKER CGROUP FLAGS ORIGIN [KIND GLOB]...`: what a guardian on our
 * memory execs to do its work (see vm_guard): never run by hand. */
int guardian_main(int argc, char **argv)
{
	prctl(PR_SET_NAME, "reaper-guard", 0, 0, 0);
	argc++; /* as the exec's argv: argv[1] is the subcommand, MODE argv[GA_MODE] */
	argv--;
	if (argc < GA_PATTERNS || (argc - GA_PATTERNS) % 2 || (strcmp(argv[GA_MODE], "death") && strcmp(argv[GA_MODE], "release")))
		return EXIT_USAGE;
	struct guardian_rules rules = { 0 };
	size_t np = (size_t)(argc - GA_PATTERNS) / 2;
	struct reaper_pattern *pat = np ? calloc(np, sizeof *pat) : NULL;
	if (np && !pat)
		return 1;
	for (size_t k = 0; k < np; k++) {
		pat[k].kind = argv[GA_PATTERNS + 2 * k][0] == 'k' ? REAPER_KEEP : REAPER_ALLOW;
		pat[k].glob = argv[GA_PATTERNS + 2 * k + 1];
	}
	rules.patterns = pat;
	rules.npatterns = np;
	rules.kill_moved_in = strchr(argv[GA_FLAGS], 'k') != NULL;
	rules.report_only = strchr(argv[GA_FLAGS], 'r') != NULL;
	struct reaper_origin origin = { 0 };
	int lp, pm;
	unsigned long long forks, tasks, start, ns;
	if (sscanf(argv[GA_ORIGIN], "%d:%d:%llu:%llu:%llu:%llu", &lp, &pm, &forks, &tasks, &start, &ns) == 6) {
		origin = (struct reaper_origin){ lp, pm, forks, tasks, start, ns };
		rules.origin = &origin;
	}
	guard_act(!strcmp(argv[GA_MODE], "release"), argv[GA_MARKER], argv[GA_CGROUP], &rules);
	return 0;
}
