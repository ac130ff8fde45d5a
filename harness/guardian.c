/* SPDX-License-Identifier: MIT */
/* guardian: see guardian.h. */
#define _GNU_SOURCE
#include "guardian.h"

#include "msg.h"
#include "reaper/procfs.h"
#include "reaper/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

/* Whether one of our environment's strings lies in [start, end). */
static int environ_in(uint64_t start, uint64_t end)
{
	for (char **e = environ; e && *e; e++)
		if ((uintptr_t)*e >= start && (uintptr_t)*e < end)
			return 1;
	return 0;
}

static void guard(int rfd, const char *marker, const char *cgroup, const struct guardian_rules *rules)
{
	setsid();
	prctl(PR_SET_NAME, "reaper-guard", 0, 0, 0);
	/* Carry no environment: ours is the caller's (CI=true, HOME), and a finder of another
	 * reaper (a `reaper reap --env` the command runs, a nested run's --home) must not take the
	 * guardian for what the run left. /proc/PID/environ reads the exec-time strings where
	 * they are: zeroed, they match nothing. They are written only where libc found them (an
	 * environ string inside the kernel's range): under an emulator such as valgrind the range
	 * is the host's memory, not ours. */
	struct reaper_stat st;
	if (procfs_stat(-1, getpid(), &st) == 0 && st.env_start && st.env_end > st.env_start &&
	    environ_in(st.env_start, st.env_end))
		memset((void *)(uintptr_t)st.env_start, 0, (size_t)(st.env_end - st.env_start));
	clearenv();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	/* Hold nothing of the run: no pipe, terminal or file of it (a reader waiting for EOF must
	 * not wait for us), and no directory a cleanup might want to unmount. */
	if (rfd > 3)
		close_fds(3, (unsigned)rfd - 1);
	close_fds((unsigned)rfd + 1, ~0u);
	if (chdir("/") < 0) {
		/* stay where we are: only an unmount could notice */
	}
	char c;
	ssize_t n;
	while ((n = read(rfd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 1)
		_exit(0); /* a normal stop */
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

/* Shared with the middle process while it runs on our memory. */
struct middle_args {
	int p[2], q[2];
	const char *marker;
	const char *cgroup;
	const struct guardian_rules *rules;
};

/* The middle process: on our memory and a stack of its own (CLONE_VM | CLONE_VFORK), so
 * starting it copies nothing and we sleep until it exits. It forks the guardian, the one
 * copy of our memory the run needs, and exits at once: the guardian is nobody's child of
 * ours. Its fd table is its own: what it closes stays open here. */
static int middle(void *arg)
{
	struct middle_args *m = arg;
	close(m->p[1]);
	close(m->q[0]);
	pid_t g = fork();
	if (g == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		guard(m->p[0], m->marker, m->cgroup, m->rules);
	}
	/* the status tells the parent why (an errno fits in it) */
	if (g < 0)
		_exit(errno & 0xff ? errno & 0xff : EAGAIN);
	_exit(write(m->q[1], &g, sizeof g) != (ssize_t)sizeof g ? EIO : 0);
}

/* The middle's stack, which the guardian keeps (a copy of) for its whole life and its reap:
 * as large as a reap may need, with a guard page below it. */
#define STACK_SIZE (1024 * 1024)

/* Run the middle process; it is gone when this returns (CLONE_VFORK). 0 with its pid in *mid,
 * or -errno. */
static int spawn_middle(struct middle_args *m, pid_t *mid)
{
	long page = sysconf(_SC_PAGESIZE);
	char *stack = mmap(NULL, STACK_SIZE + (size_t)page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	mprotect(stack, (size_t)page, PROT_NONE);
	*mid = clone(middle, stack + page + STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, m);
	int e = *mid < 0 ? -errno : 0;
	munmap(stack, STACK_SIZE + (size_t)page);
	return e;
}

/* Collect the middle process and read the guardian's pid it sent through fd: 0 or -errno
 * (the middle's exit status carries the errno of its failed fork). */
static int middle_result(pid_t mid, int fd, pid_t *g)
{
	int st = 0;
	pid_t w;
	while ((w = waitpid(mid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w != mid)
		return -errno;
	if (!WIFEXITED(st))
		return -ECHILD;
	if (WEXITSTATUS(st))
		return -WEXITSTATUS(st);
	ssize_t n = read(fd, g, sizeof *g);
	if (n != (ssize_t)sizeof *g)
		return n < 0 ? -errno : -EIO;
	return 0;
}

static void drop_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int guardian_start(const char *marker, const char *cgroup, const struct guardian_rules *rules,
		   struct pidref *guardian)
{
	/* p: reaper -> guardian, held open for the run; q: the middle process tells us the pid */
	struct middle_args m = { .p = { -1, -1 }, .q = { -1, -1 }, .marker = marker, .cgroup = cgroup, .rules = rules };
	struct sigaction dfl = { .sa_handler = SIG_DFL }, oldchld;
	struct reaper_stat gst;
	int chld_saved = 0, e = 0;
	pid_t mid = -1, g = 0;
	*guardian = PIDREF_NULL;
	if (pipe2(m.p, O_CLOEXEC) < 0 || pipe2(m.q, O_CLOEXEC) < 0)
		e = -errno;
	/* An inherited SIG_IGN for SIGCHLD would let the kernel collect the middle process
	 * before we can wait for it; the caller's disposition is put back below. */
	if (!e)
		chld_saved = sigaction(SIGCHLD, &dfl, &oldchld) == 0;
	if (!e)
		e = spawn_middle(&m, &mid);
	/* the guardian holds its own copy of the read end; the middle has written, or never will */
	drop_fd(&m.p[0]);
	drop_fd(&m.q[1]);
	if (!e)
		e = middle_result(mid, m.q[0], &g);
	/* It waits on the pipe we hold until we stop it: whatever holds its pid now is it.
	 * Unpinned (no descriptor to spare), it is named but not waited for when stopped. */
	if (!e && pidref_open_stat(guardian, -1, g, &gst) < 0)
		*guardian = (struct pidref){ .pid = g, .fd = -1 };
	if (chld_saved)
		sigaction(SIGCHLD, &oldchld, NULL);
	drop_fd(&m.q[0]);
	if (!e)
		return m.p[1];
	drop_fd(&m.p[1]);
	warn("warning: no owner-death guardian (%s); a SIGKILLed reaper leaves its run", strerror(-e));
	return e;
}

/* How long a stopped guardian may take to exit: it only reads one byte and exits, but a
 * loaded machine may not run it for a while. */
#define STOP_WAIT_MS 30000

void guardian_stop(int fd, struct pidref *guardian)
{
	if (fd < 0)
		return;
	if (write(fd, "q", 1) < 0) {
		/* EPIPE: the guardian is gone already */
	}
	close(fd);
	/* A caller that looks for leftovers the moment we return must not find our guardian. */
	for (int waited = 0; guardian->pid > 0 && !pidref_exited(guardian, -1) && waited < STOP_WAIT_MS;) {
		struct pollfd pfd = { .fd = guardian->fd, .events = POLLIN };
		int step = guardian->fd >= 0 ? STOP_WAIT_MS - waited : 10; /* no pidfd: look again */
		if (guardian->fd >= 0 ? poll(&pfd, 1, step) < 0 && errno != EINTR : poll(NULL, 0, step) < 0)
			break;
		waited += step;
	}
	pidref_done(guardian);
}
