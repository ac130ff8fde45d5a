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

static void guard(int rfd, int ready, const char *marker, const char *cgroup, const struct guardian_rules *rules)
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
	/* from here no finder takes us for the run's: the run may start (closed below with the rest) */
	if (write(ready, "r", 1) < 0) {
		/* reaper is gone: the read below says so */
	}
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

/* How long the run waits for its guardian to clear its environment (one memset away,
 * unless the machine does not run it for a while) */
#define READY_WAIT_MS 10000

int guardian_start(const char *marker, const char *cgroup, const struct guardian_rules *rules,
		   struct pidref *guardian)
{
	/* p: reaper -> guardian, its write end held open for the run */
	int p[2] = { -1, -1 }, ready[2] = { -1, -1 }, e = 0;
	*guardian = PIDREF_NULL;
	if (pipe2(ready, O_CLOEXEC) < 0)
		ready[0] = ready[1] = -1;
	/* Our child, started by one fork and never waited for by the run: nothing waits for it
	 * to start (a middle process that forks it and exits would be one more process, and one
	 * more hand-off, on every run) */
	pid_t g = pipe2(p, O_CLOEXEC) < 0 ? -1 : fork();
	if (g == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		guard(p[0], ready[1], marker, cgroup, rules);
	}
	if (g < 0)
		e = -errno;
	if (p[0] >= 0)
		close(p[0]); /* the guardian holds its own copy of the read end */
	/* Until the guardian has cleared its environment (ours, copied by the fork), a finder of
	 * the run (a `reaper reap --env` that COMMAND runs) would take it for a leftover: the run
	 * starts when it says so, or is gone (end of file), within a bound */
	if (ready[1] >= 0)
		close(ready[1]);
	if (ready[0] >= 0) {
		struct pollfd rp = { .fd = ready[0], .events = POLLIN };
		char c;
		if (!e && poll(&rp, 1, READY_WAIT_MS) > 0 && read(ready[0], &c, 1) < 0) {
			/* the guardian is gone: the run goes on unguarded, as after any early end */
		}
		close(ready[0]);
	}
	/* Our unwaited child: whatever holds its pid is it. Unpinned (no descriptor to spare),
	 * it is named and waited for by pid. */
	struct reaper_stat gst;
	if (!e && pidref_open_stat(guardian, -1, g, &gst) < 0)
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

void guardian_stop(int fd, struct pidref *guardian)
{
	if (fd < 0)
		return;
	if (write(fd, "q", 1) < 0) {
		/* EPIPE: the guardian is gone already */
	}
	close(fd);
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
		if (guardian->fd >= 0 ? poll(&pfd, 1, step) < 0 && errno != EINTR : poll(NULL, 0, step) < 0)
			break;
		waited += step;
	}
	pidref_done(guardian);
}
