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
	/* A normal stop, sent once the run's reap is over: the run's cgroup goes now, here while
	 * reaper writes its reports, and still when reaper is killed before its own rmdir. Gone
	 * already (ENOENT): reaper removed it, or it was never made. */
	if (n == 1 && (!*cgroup || rmdir(cgroup) == 0 || errno == ENOENT))
		_exit(0);
	/* Owner death, or a stop with the cgroup not empty. Nothing we open from here on may land
	 * on 0-2, where a warning would write into it: /dev/null goes there first (the pipe, done
	 * with, makes room if it was one of them). */
	close(rfd);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; null >= 0 && fd <= 2; fd++)
		if (fd != null)
			dup2(null, fd);
	if (n == 1) {
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

int guardian_start(const char *marker, const char *cgroup, const struct guardian_rules *rules, int procfd,
		   struct pidref *guardian)
{
	/* p: reaper -> guardian, its write end held open for the run */
	int p[2] = { -1, -1 }, e = 0;
	*guardian = PIDREF_NULL;
	/* Our child, started by one fork and never waited for by the run: nothing waits for it
	 * to start (a middle process that forks it and exits would be one more process, and one
	 * more hand-off, on every run) */
	pid_t g = pipe2(p, O_CLOEXEC) < 0 ? -1 : fork_without_environ();
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
	pidref_done(guardian);
}
