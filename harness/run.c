/* SPDX-License-Identifier: MIT */
/* `reaper run`: run COMMAND as a subreaper (or as PID 1), supervise the whole run, then
 * reap what it left behind.  One event loop on a signalfd and COMMAND's pidfd; signals to
 * processes go through libreaper's pidref only.  Exit codes: see reaper(1) and usage(). */
#define _GNU_SOURCE
#include "run.h"

#include "config.h"
#include "exec.h"
#include "guardian.h"
#include "home.h"
#include "isolate.h"
#include "msg.h"
#include "options.h"
#include "slice.h"
#include <linux/sched.h>
#include "state.h"
#include "reaper/cgroup.h"
#include "reaper/marker.h"
#include "reaper/origin.h"
#include "reaper/pidref.h"
#include "reaper/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_MARKERS 16

struct run {
	const char *home;
	char *home_marker;          /* "HOME=<home>", COMMAND's; a finder holds it for the whole run */
	const char *markers[MAX_MARKERS];
	size_t nmarkers;
	double timeout, grace;
	int leak_code;
	int isolate;                /* --isolate: the run in its own PID namespace */
	int kill_moved_in;          /* --kill-moved-in: end what was moved into the run's cgroup too */
	char **argv;
	char run_marker[64];
	struct reaper_finder finders[MAX_MARKERS + 4];
	struct reaper_origin origin; /* where pid allocation stood before the run began */
	int cgroup_mode;            /* CGROUP_OFF, CGROUP_AUTO, CGROUP_ON */
	char cgroup[PATH_MAX];      /* the run's own cgroup; "" when the run is tracked by /proc */
	size_t nfinders;
	size_t nmarked;             /* finders[2..nmarked): --marker and --home (not the run's alone) */
	sigset_t mask, oldmask;
	struct sigaction oldpipe;   /* SIGPIPE as we got it: COMMAND gets it back */
	struct rlimit nofile;
	struct slice_attr sched;    /* our scheduling as we got it: COMMAND gets it back */
	int sched_short;            /* we asked for short slices (slice.h) */
	int sfd, procfd, tty;       /* tty: fd of the controlling terminal we are foreground of, or -1 */
	struct pidref cmd;
	int cmd_status, cmd_done;
	int cancels;                /* cancellation signals received */
	int supervising;            /* COMMAND runs under our job control (not yet being reaped) */
	int reaping;                /* the reap runs: the exit statuses of our children are its own */
	int state_begun;            /* the state document was started: it must end "exited" */
	int guardian_fd;
	int outer_proc;             /* --isolate, in the namespace: the caller's /proc (-1: none) */
	struct pidref guardian; /* pinned while guardian_fd is open */
	struct reaper_ident own;    /* the guardian, never a candidate of the run's reap */
	struct run_state st;
	struct reaper_opts opts;    /* the reap's: read by it while it runs (term_signal, below) */
	const char *hold_dirs[3];   /* the run's HOME, working directory and /tmp */
	struct sbuf buf;
	struct output out;          /* report flags and outputs (output.h) */
};

enum { CGROUP_OFF, CGROUP_AUTO, CGROUP_ON };
static const char *const cgroup_modes[] = { [CGROUP_OFF] = "off", [CGROUP_AUTO] = "auto", [CGROUP_ON] = "on", NULL };

static const int cancel_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
static const int forward_sigs[] = { SIGUSR1, SIGUSR2, SIGWINCH };

static int is_cancel(int sig)
{
	for (size_t i = 0; i < sizeof cancel_sigs / sizeof *cancel_sigs; i++)
		if (cancel_sigs[i] == sig)
			return 1;
	return 0;
}

static int status_to_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return EXIT_SIGNAL_BASE + WTERMSIG(status);
	return EXIT_FAILURE; /* neither: no status we wait for without WUNTRACED */
}

/* Children of ours that are alive now, for the state counts (the guardian is not one of the
 * run's). The main thread's children file is all of them: reaper is single-threaded, and a
 * children file lists only the children that thread forked. */
static long count_children(struct run *r)
{
	char what[48];
	snprintf(what, sizeof what, "task/%d/children", (int)getpid());
	ssize_t n = procfs_read(r->procfd, getpid(), what, &r->buf);
	long count = 0;
	for (ssize_t i = 0; i < n; i++)
		count += r->buf.p[i] == ' ';
	return count - (count > 0 && r->guardian.pid > 0);
}

static void state_update(struct run *r, const char *phase)
{
	if (phase)
		state_phase(&r->st, phase);
	if (!r->st.path)
		return;
	r->st.active_children = count_children(r);
	r->st.adopted_children = r->st.active_children - (r->cmd_done ? 0 : 1);
	if (r->st.adopted_children < 0)
		r->st.adopted_children = 0;
	r->st.orphaned_children_total = r->st.reaped_orphans_total + (unsigned long)r->st.adopted_children;
	state_write(&r->st);
}

/* The shim owns all its children: collect every zombie, remember COMMAND's status. */
static void reap_children(struct run *r)
{
	int status;
	pid_t pid;
	/* Stops matter only while COMMAND is under job control: once the reap runs, its own
	 * SIGSTOP (the freeze before SIGKILL) must not stop us too. */
	int flags = WNOHANG | (r->tty >= 0 && r->supervising ? WUNTRACED : 0);
	while ((pid = waitpid(-1, &status, flags)) > 0) {
		if (WIFSTOPPED(status) && pid != r->cmd.pid)
			continue; /* a stopped orphan is not gone */
		if (pid == r->guardian.pid) {
			/* it ended early (killed from outside): the run goes on unguarded, and its pid,
			 * free now, is nobody guardian_stop may wait for, nor the document's to name */
			pidref_done(&r->guardian);
			r->st.guardian_pid = 0;
			continue;
		}
		if (pid == r->cmd.pid && WIFSTOPPED(status)) {
			/* Ctrl-Z reached COMMAND: take the terminal back and stop too, so the shell
			 * sees the job stop; on `fg` hand the terminal over again and continue it. */
			tcsetpgrp(r->tty, getpgrp());
			raise(SIGSTOP);
			if (tcgetpgrp(r->tty) == getpgrp())
				tcsetpgrp(r->tty, r->cmd.pid);
			pidref_signal_group(&r->cmd, r->procfd, SIGCONT);
			continue;
		}
		r->st.reaped_children_total++;
		if (pid == r->cmd.pid) {
			r->cmd_status = status;
			r->cmd_done = 1;
			r->st.runner_exit_code = status_to_code(status);
		} else {
			r->st.reaped_orphans_total++;
		}
	}
}

/* Read what the signalfd holds; returns the strongest wish (enum reaper_action). */
static int drain_signals(struct run *r)
{
	struct signalfd_siginfo si[16];
	int action = REAPER_CONTINUE;
	ssize_t n;
	while ((n = read(r->sfd, si, sizeof si)) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof *si; i++) {
			int sig = (int)si[i].ssi_signo;
			if (sig == SIGCHLD) {
				/* while the reap runs it collects what it found (and reports each
				 * status); the rest is collected once it is done */
				if (!r->reaping)
					reap_children(r);
			} else if (is_cancel(sig)) {
				/* The reap reads term_signal when it escalates: a cancellation during
				 * the drain reaches the leftovers as itself, as in terminate_run. */
				if (!r->st.termination_signal)
					r->st.termination_signal = r->opts.term_signal = sig;
				r->cancels++;
				action = r->cancels > 1 ? REAPER_KILL_NOW : REAPER_TERMINATE_NOW;
			} else if (!r->cmd_done) {
				pidref_signal(&r->cmd, r->procfd, sig); /* SIGUSR1, SIGUSR2, SIGWINCH */
			}
		}
	}
	return action;
}

static int on_event(void *ctx)
{
	int action = drain_signals(ctx);
	state_update(ctx, NULL); /* orphans collected while the reap waits show up at once */
	return action;
}

static void on_escalate(void *ctx, int sig)
{
	struct run *r = ctx;
	if (sig == SIGKILL)
		r->st.escalated = 1;
	state_update(r, "terminating");
}

extern char **environ;

/* Does entry set one of the names the run sets (NAME of each NAME=VALUE in set)? */
static int overridden(const char *entry, const char *const *set, size_t nset)
{
	for (size_t i = 0; i < nset; i++) {
		size_t len = (size_t)(strchr(set[i], '=') - set[i]) + 1;
		if (!strncmp(entry, set[i], len))
			return 1;
	}
	return 0;
}

/* COMMAND's environment, built before the fork (the child shares our memory until its exec):
 * ours without REAPER_STATE (the document is this reaper's: a reaper run nested in COMMAND
 * must not write over it) and without what the run sets, then the run's HOME, REAPER_RUN
 * and markers. */
static char **command_env(struct run *r)
{
	const char *set[MAX_MARKERS + 3];
	size_t nset = 0, n = 0;
	set[nset++] = "REAPER_STATE=";
	set[nset++] = r->run_marker;
	if (r->home_marker)
		set[nset++] = r->home_marker;
	for (size_t i = 0; i < r->nmarkers; i++)
		set[nset++] = r->markers[i];
	for (char **e = environ; *e; e++)
		n++;
	char **env = malloc((n + nset + 1) * sizeof *env);
	if (!env)
		return NULL;
	n = 0;
	for (char **e = environ; *e; e++)
		if (!overridden(*e, set, nset))
			env[n++] = *e;
	for (size_t i = 1; i < nset; i++)
		env[n++] = (char *)set[i];
	env[n] = NULL;
	return env;
}

/* In the child, on our memory until the exec (vfork): COMMAND's group, terminal and signal
 * state, then exec; system calls only. An exec failure goes back to the parent as a
 * struct exec_failure: written into *shared, the parent's own memory, by a child on it (the
 * parent resumes once the child has exec'd or exited), else through errfd. */
static void exec_command(struct run *r, char **env, int errfd, struct exec_failure *shared)
{
	setpgid(0, 0);
	if (r->tty >= 0)
		tcsetpgrp(r->tty, getpid()); /* SIGTTOU is still blocked here, so this cannot stop us */
	/* COMMAND inherits the dispositions we inherited (an ignored SIGHUP under nohup stays
	 * ignored); only what we changed is put back. */
	sigaction(SIGPIPE, &r->oldpipe, NULL);
	sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
	if (r->nofile.rlim_cur != r->nofile.rlim_max)
		setrlimit(RLIMIT_NOFILE, &r->nofile);
	/* With SCHED_RESET_ON_FORK the kernel already gave this child what a direct child of
	 * the caller gets (nice >= 0, the default slice, the flag cleared): giving back the
	 * caller's attributes would hand COMMAND the negative nice and the flag the kernel
	 * deliberately dropped. */
	if (r->sched_short && !(r->sched.sched_flags & SCHED_FLAG_RESET_ON_FORK))
		slice_restore(&r->sched);
	struct exec_failure f;
	exec_search(r->argv, env, &f);
	if (shared)
		*shared = f;
	else if (write(errfd, &f, sizeof f) < 0) {
		/* the parent sees EOF and the status below instead */
	}
	_exit(exec_failure_code(&f));
}

struct command_args {
	struct run *r;
	char **env;
	struct exec_failure *failed;
};

static int command_child(void *arg)
{
	struct command_args *a = arg;
	exec_command(a->r, a->env, -1, a->failed);
	return 127;
}

/* vfork: no copy of our memory for a child that only execs, and we resume once it has.
 * With a cgroup the child starts inside it (clone3 CLONE_INTO_CGROUP: moving a vfork child
 * in would take the kernel's cgroup migration lock, an RCU grace period), so nothing COMMAND
 * forks can start outside; on our memory too where clone3 allows (an exec failure is then
 * written into *failed, its err set), else a fork. A fork, and vfork() (a fork under an
 * emulator such as valgrind), send their failure back through a pipe (*errfd: its read end,
 * -1 without one). */
static pid_t spawn_command(struct run *r, char **env, struct exec_failure *failed, int *errfd)
{
	struct command_args a = { r, env, failed };
	*errfd = -1;
	pid_t pid = r->cgroup[0] ? cgroup_vfork(r->cgroup, command_child, &a) : -ENOSYS;
	if (pid == -ENOSYS) {
		int ep[2];
		if (pipe2(ep, O_CLOEXEC) < 0)
			return -1;
		pid = r->cgroup[0] ? reaper_cgroup_fork(r->cgroup) : vfork();
		if (pid == 0)
			exec_command(r, env, ep[1], NULL);
		close(ep[1]);
		if (pid < 0)
			close(ep[0]);
		else
			*errfd = ep[0];
	}
	if (pid < -1) {
		errno = -pid;
		pid = -1;
	}
	/* what the child wrote into our memory is there now: the compiler must read it again */
	__asm__ volatile("" ::: "memory");
	return pid;
}

static int start_command(struct run *r)
{
	int errfd;
	struct exec_failure failed = { 0 };
	char **env = command_env(r);
	if (!env)
		return -ENOMEM;
	/* COMMAND starts only with descriptors to spare once it runs (its pidfd taken): the
	 * run's end needs two at least, to read /proc and to remove the cgroup */
	int spare[2] = { fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3), -1 };
	if (spare[0] >= 0)
		spare[1] = fcntl(spare[0], F_DUPFD_CLOEXEC, 3);
	pid_t pid = spare[1] < 0 ? -1 : spawn_command(r, env, &failed, &errfd);
	int e = errno;
	for (int i = 0; i < 2; i++)
		if (spare[i] >= 0)
			close(spare[i]);
	free(env);
	if (pid < 0) {
		warn("cannot start COMMAND: %s", strerror(e));
		return -e;
	}
	/* a child on our memory set its group itself before its exec (after it, a setpgid
	 * fails); a fork may not have yet */
	if (errfd >= 0)
		setpgid(pid, pid);
	if (r->tty >= 0)
		tcsetpgrp(r->tty, pid);
	/* COMMAND is our unreaped child, so its pid cannot change hands: whatever stat is read
	 * is its own. Without a pidfd to spare, pid + start time; with no stat either, a start
	 * time of 0 that no check accepts, never an uninitialised one. */
	struct reaper_stat st = { 0 };
	if (pidref_open_stat(&r->cmd, r->procfd, pid, &st) < 0) {
		if (procfs_stat(r->procfd, pid, &st) < 0)
			st = (struct reaper_stat){ 0 };
		r->cmd = (struct pidref){ .pid = pid, .start_time = st.start_time, .fd = -1 };
	}
	r->st.command_pid = pid;
	if (r->st.ns_reaper_pid) { /* --isolate: the caller's pid, the namespace's beside it */
		pid_t outer = pidref_pid_in(&r->cmd, r->outer_proc);
		r->st.command_pid = outer > 0 ? outer : 0;
		r->st.ns_command_pid = pid;
	}
	if (errfd >= 0) {
		struct exec_failure f;
		size_t got = 0;
		ssize_t n;
		while (got < sizeof f &&
		       ((n = read(errfd, (char *)&f + got, sizeof f - got)) > 0 || (n < 0 && errno == EINTR)))
			got += n > 0 ? (size_t)n : 0;
		close(errfd);
		if (got == sizeof f)
			failed = f;
	}
	if (failed.err) {
		char msg[3200];
		exec_failure_describe(&failed, r->argv[0], msg, sizeof msg);
		warn("%s", msg);
		return exec_failure_code(&failed) == EXIT_NOT_FOUND ? -ENOENT : -EACCES; /* the caller's 127 / 126 */
	}
	return 0;
}

static int usage_error(const char *msg)
{
	warn("%s", msg);
	fputs("usage: reaper run [OPTIONS] -- COMMAND [ARG...]\n"
	      "Try 'reaper run --help'; the manual is reaper(1).\n",
	      stderr);
	return EXIT_USAGE;
}

static int parse(struct run *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "home", required_argument, 0, 'H' },    { "marker", required_argument, 0, 'm' },
		{ "timeout", required_argument, 0, 't' }, { "grace", required_argument, 0, 'g' },
		{ "state", required_argument, 0, 's' },   { "leak-exit-code", required_argument, 0, 'l' },
		{ "isolate", no_argument, 0, 'I' },       { "cgroup", required_argument, 0, 'c' },
		{ "kill-moved-in", no_argument, 0, 'M' }, { "help", no_argument, 0, 'h' },
		OUTPUT_LONG_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	const char *timeout = NULL, *grace = NULL, *leak = NULL, *cgroup = NULL;
	int c;
	opterr = 0;
	optind = 0; /* 0, not 1: getopt forgets a cluster of short options a former parse left */
	while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
		switch (c) {
		case 'H': r->home = optarg; break;
		case 'm':
			if (marker_check(optarg) < 0)
				return usage_error("--marker wants NAME=VALUE");
			if (r->nmarkers == MAX_MARKERS)
				return usage_error("too many --marker");
			r->markers[r->nmarkers++] = optarg;
			break;
		case 't': timeout = optarg; break;
		case 'g': grace = optarg; break;
		case 's': r->st.path = optarg; break;
		case 'l': leak = optarg; break;
		case 'I': r->isolate = 1; break;
		case 'M': r->kill_moved_in = 1; break;
		case 'c': cgroup = optarg; break;
		case 'h': return -1;
		default: {
			int h = output_option(&r->out, c, optarg);
			if (h < 0)
				return usage_error(r->out.err);
			if (h > 0)
				break;
			char msg[128];
			snprintf(msg, sizeof msg, "unknown or incomplete option '%s'", argv[optind - 1]);
			return usage_error(msg);
		}
		}
	}
	if (optind >= argc)
		return usage_error("no COMMAND given");
	r->argv = argv + optind;
	if (r->home && r->home[0] != '/')
		return usage_error("--home wants an absolute path");
	if (!r->st.path && getenv("REAPER_STATE") && *getenv("REAPER_STATE"))
		r->st.path = getenv("REAPER_STATE");
	char msg[256];
	if (config_reap_times(msg, sizeof msg, timeout, grace, &r->timeout, &r->grace) < 0 ||
	    config_leak_exit_code(msg, sizeof msg, leak, &r->leak_code) < 0 ||
	    config_choice(msg, sizeof msg, "--cgroup", cgroup, "REAPER_CGROUP", cgroup_modes, CGROUP_AUTO,
			  &r->cgroup_mode) < 0)
		return usage_error(msg);
	r->st.timeout = r->timeout;
	r->st.grace = r->grace;
	r->st.leak_exit_code = r->leak_code;
	return 0;
}

static int setup_finders(struct run *r)
{
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		memcpy(rnd, &(pid_t){ getpid() }, sizeof(pid_t));
	int n = snprintf(r->run_marker, sizeof r->run_marker, "REAPER_RUN=");
	for (size_t i = 0; i < sizeof rnd; i++)
		n += snprintf(r->run_marker + n, sizeof r->run_marker - (size_t)n, "%02x", rnd[i]);
	r->st.run_id = r->run_marker + strlen("REAPER_RUN=");
	r->finders[r->nfinders++] = reaper_find_env(r->run_marker);
	r->finders[r->nfinders++] = reaper_find_tree(0);
	/* A marker reaper's own environment holds is the caller's too (CI=true is in every
	 * process of a CI job, reaper's guardian included): it cannot tell the run from them. */
	for (size_t i = 0; i < r->nmarkers; i++) {
		if (marker_own(r->markers[i]))
			warn("warning: --marker %s is in reaper's own environment: leftovers are not found by it, only "
			     "by the run's marker and by descent", r->markers[i]);
		else
			r->finders[r->nfinders++] = reaper_find_env(r->markers[i]);
	}
	/* A leftover that left the tree and cleared its environment down to HOME is still ours.
	 * Not when reaper's own HOME is DIR: then HOME=DIR names the caller's session too (and
	 * our guardian), not the run. */
	r->nmarked = r->nfinders;
	if (!r->home)
		return 0;
	if (asprintf(&r->home_marker, "HOME=%s", r->home) < 0) {
		r->home_marker = NULL;
		return -ENOMEM;
	}
	const char *own = getenv("HOME");
	if (own && !strcmp(own, r->home))
		warn("warning: --home %s is reaper's own HOME: leftovers are not found by it, only by the run's "
		     "marker and by descent", r->home);
	else
		r->finders[r->nfinders++] = reaper_find_env(r->home_marker);
	r->nmarked = r->nfinders;
	return 0;
}

/* Why the run gets no cgroup of its own, for a person to act on. */
static void cgroup_why(int e, char *buf, size_t len)
{
	char own[PATH_MAX];
	int have = reaper_cgroup_current(own, sizeof own) == 0;
	if (e == -ENOENT && !have)
		snprintf(buf, len, "no cgroup2 hierarchy is mounted (cgroup v1 only, or none)");
	else if (e == -EROFS)
		snprintf(buf, len, "the cgroup2 mount at %s is read-only", have ? own : "?");
	else if (e == -EACCES || e == -EPERM)
		snprintf(buf, len, "no permission to create a cgroup in %s (not delegated to this user)",
			 have ? own : "reaper's cgroup");
	else
		snprintf(buf, len, "cannot create a cgroup in %s: %s", have ? own : "reaper's cgroup", strerror(-e));
}

static int wants_cgroup(const struct run *r)
{
	/* --isolate: the PID namespace holds the run already, and dies with it even when nobody
	 * is left to remove a cgroup; auto makes none there */
	return r->cgroup_mode != CGROUP_OFF && !(r->isolate && r->cgroup_mode == CGROUP_AUTO);
}

/* Where the run's cgroup is to be (r->cgroup, below reaper's own in *own), known before it is
 * made: the guardian, started in between, then removes it even when we are killed the moment
 * it exists. 0, or -errno for setup_cgroup to tell. */
static int plan_cgroup(struct run *r, char *own, size_t len)
{
	int e = 0;
	r->cgroup[0] = 0;
	if (!wants_cgroup(r))
		return 0;
	if ((e = reaper_cgroup_current(own, len)) == 0 && (e = reaper_cgroup_usable(own)) == 0 &&
	    (size_t)snprintf(r->cgroup, sizeof r->cgroup, "%s/reaper-run-%s", own, r->st.run_id) >= sizeof r->cgroup)
		e = -ENAMETOOLONG;
	if (e < 0)
		r->cgroup[0] = 0;
	return e;
}

/* auto and on: the run gets its own cgroup below reaper's (r->cgroup, as planned; e: why it could
 * not be planned), and COMMAND starts in it. auto falls back to the marker and descent (said
 * once); on fails. -1: on was impossible. */
static int setup_cgroup(struct run *r, int e)
{
	r->st.tracking = r->out.tracking = "proc";
	if (!wants_cgroup(r))
		return 0;
	/* planned: reaper's cgroup is a writable cgroup2 directory (reaper_cgroup_usable) and
	 * r->cgroup a name in it; a mkdir is all reaper_cgroup_create would add to that */
	if (e == 0 && mkdir(r->cgroup, 0755) < 0)
		e = -errno;
	if (e < 0) {
		char why[PATH_MAX + 128];
		cgroup_why(e, why, sizeof why);
		r->cgroup[0] = 0;
		if (r->cgroup_mode == CGROUP_ON) {
			warn("--cgroup on: the run cannot have a cgroup: %s", why);
			return -1;
		}
		/* said when something is wrong, not for the usual case of a user without a delegated
		 * cgroup or a system without cgroup2 (the summary still says "tracking: proc") */
		if (e != -EACCES && e != -EPERM && e != -ENOENT)
			warn("note: %s; tracking the run by its marker and by descent", why);
		return 0;
	}
	/* The cgroup joins the finders; the marker stays one: an outside daemon (a process
	 * server, a job queue) starts work with the run's environment in no cgroup of the run.
	 * The marker finders run once, at the end of the wait, and the run's reads only the pids
	 * given out since the run began. A member older than the run was moved in. */
	struct reaper_finder *cg = &r->finders[r->nfinders++];
	*cg = reaper_find_cgroup(r->cgroup);
	cg->since = r->origin.start_time;
	r->st.tracking = r->out.tracking = "cgroup";
	return 0;
}

/* The run's cgroup goes when the run does. What the reap left alive on purpose (--keep,
 * --report-only) or could not kill moves up into reaper's own cgroup first. */
static void drop_cgroup(struct run *r)
{
	if (!r->cgroup[0])
		return;
	/* the end of a clean run: the cgroup we made is empty, and goes by one rmdir (what
	 * reaper_cgroup_remove checks first, that the path is a cgroup, was so when we made it) */
	if (rmdir(r->cgroup) == 0 || errno == ENOENT) { /* ENOENT: the released guardian removed it */
		r->cgroup[0] = 0;
		return;
	}
	/* the released guardian moves out and removes it too: one of the two finds it gone,
	 * which is the end wanted (ENOENT, or ENODEV from a file of it opened before) */
	int e = reaper_cgroup_release(r->cgroup);
	if (e < 0 && access(r->cgroup, F_OK) == 0)
		warn("warning: cannot remove the run's cgroup %s: %s", r->cgroup, strerror(-e));
	r->cgroup[0] = 0;
}

/* The reap's options, shared by the drain and the cancellation; term_signal is the
 * cancellation signal once one arrived (0: SIGTERM). */
static void init_reap_opts(struct run *r, double timeout, double grace)
{
	reaper_opts_init(&r->opts);
	r->opts.timeout = timeout;
	r->opts.grace = grace;
	r->opts.term_signal = r->st.termination_signal;
	r->opts.event_fd = r->sfd;
	r->opts.outer_procfd = r->outer_proc;
	r->opts.on_event = on_event;
	r->opts.on_escalate = on_escalate;
	r->opts.event_ctx = r;
	r->opts.escalate_ctx = r;
	output_reap_opts(&r->out, &r->opts);
	r->hold_dirs[0] = r->home ? r->home : getenv("HOME");
	r->hold_dirs[1] = "."; /* COMMAND's working directory is ours */
	r->hold_dirs[2] = "/tmp";
	r->opts.hold_dirs = r->hold_dirs;
	r->opts.nhold_dirs = 3;
	r->opts.kill_moved_in = r->kill_moved_in;
	/* Never the caller: the guardian is ours, and what --home and --marker match in our own
	 * session (the caller's shell, its pipeline, its other jobs) is not the run's; the run's
	 * own processes there are found by the run's marker, descent and its cgroup. */
	r->own = (struct reaper_ident){ r->guardian.pid, r->guardian.start_time };
	r->opts.exclude = &r->own;
	r->opts.nexclude = r->own.pid > 0;
	r->opts.outside_session = (uint32_t)((1ull << r->nmarked) - 1) & ~3u;
}

/* Everything of the run gets the cancellation signal (COMMAND's group as one), then grace,
 * then SIGKILL; a second cancellation cuts the grace short (on_event). */
static int terminate_run(struct run *r, struct reaper_report **rep)
{
	state_update(r, "terminating");
	if (!r->cmd_done) {
		pidref_signal_group(&r->cmd, r->procfd, r->st.termination_signal);
		/* a stopped suite (Ctrl-Z, a debugger) could not act on it before the grace ends */
		pidref_signal_group(&r->cmd, r->procfd, SIGCONT);
	}
	init_reap_opts(r, 0, r->cancels > 1 ? 0 : (r->grace > 0 ? r->grace : 0.001));
	r->opts.term_skip_pgrp = r->cmd_done ? 0 : r->cmd.pid;
	return reaper_reap(r->finders, r->nfinders, &r->opts, rep);
}

static int drain_run(struct run *r, struct reaper_report **rep)
{
	state_update(r, "draining");
	init_reap_opts(r, r->timeout, r->grace);
	return reaper_reap(r->finders, r->nfinders, &r->opts, rep);
}

/* Fire in ms milliseconds, then every second. */
static void arm_timer(int tfd, long ms)
{
	if (tfd < 0)
		return;
	struct itimerspec its = { .it_interval = { 1, 0 }, .it_value = { ms / 1000, (ms % 1000) * 1000000L } };
	timerfd_settime(tfd, 0, &its, NULL);
}

/* Supervise until COMMAND exits or a cancellation arrives. Orphans adopted meanwhile are
 * collected as their SIGCHLDs arrive; nothing is kept per orphan. */
static void supervise(struct run *r)
{
	/* The document follows changes within 100 ms but is replaced at most ten times a second
	 * (a stream of orphans would otherwise cost a file replace each); adoption raises no
	 * event, so it is also refreshed once a second. Without a document only signals and
	 * COMMAND's pidfd wake us. */
	int tfd = -1, pending = 0;
	if (r->st.path && !r->st.failed)
		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r->supervising = 1;
	state_update(r, "running");
	arm_timer(tfd, 1000);
	while (!r->cmd_done && !r->cancels) {
		struct pollfd p[3] = { { .fd = r->sfd, .events = POLLIN },
				       { .fd = r->cmd.fd, .events = POLLIN },
				       { .fd = tfd, .events = POLLIN } };
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			break;
		drain_signals(r);
		if (p[1].revents)
			reap_children(r); /* COMMAND's exit, even when SIGCHLDs coalesced */
		uint64_t ticks = 0;
		if (p[2].revents && read(tfd, &ticks, sizeof ticks) < 0)
			ticks = 0; /* EAGAIN: nothing to consume */
		if (ticks || tfd < 0 || r->cmd_done || r->cancels) {
			state_update(r, NULL);
			pending = 0;
			arm_timer(tfd, 1000);
		} else if (!pending) {
			pending = 1;
			arm_timer(tfd, 100);
		}
	}
	r->supervising = 0;
	if (tfd >= 0)
		close(tfd);
	/* COMMAND is gone: the terminal is ours again, so Ctrl-C now cancels the drain. */
	if (r->cmd_done && r->tty >= 0)
		tcsetpgrp(r->tty, getpgrp());
}

/* Add sig to the mask unless it was ignored when we started: a signal our caller chose to
 * ignore (nohup's SIGHUP, SIGINT of a background job) is neither cancellation nor forwarded. */
static void want_signal(struct run *r, int sig)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
		return;
	sigaddset(&r->mask, sig);
}

static int setup_signals(struct run *r)
{
	/* SIGCHLD is back to SIG_DFL since set_up began (an inherited SIG_IGN would make the
	 * kernel discard our children's exit statuses); a closed stderr must not kill us before
	 * the exit status is out. */
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigaction(SIGPIPE, &ign, &r->oldpipe);
	sigemptyset(&r->mask);
	sigaddset(&r->mask, SIGCHLD);
	sigaddset(&r->mask, SIGTTOU);
	sigaddset(&r->mask, SIGTTIN);
	for (size_t i = 0; i < sizeof cancel_sigs / sizeof *cancel_sigs; i++)
		want_signal(r, cancel_sigs[i]);
	for (size_t i = 0; i < sizeof forward_sigs / sizeof *forward_sigs; i++)
		want_signal(r, forward_sigs[i]);
	if (sigprocmask(SIG_BLOCK, &r->mask, &r->oldmask) < 0)
		return -errno;
	sigset_t fdmask = r->mask;
	sigdelset(&fdmask, SIGTTOU);
	sigdelset(&fdmask, SIGTTIN);
	r->sfd = signalfd(-1, &fdmask, SFD_NONBLOCK | SFD_CLOEXEC);
	return r->sfd < 0 ? -errno : 0;
}

/* Collect COMMAND (killed or exited by now) within seconds: 1 collected, 0 still there,
 * negative errno. An unkillable COMMAND (D state) must not keep us forever: it stays our
 * child, and is init's to collect once we exit. */
static int wait_command(struct run *r, double seconds)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		/* our own child by pid: safe even where pidref checks would refuse (start time 0) */
		pid_t w = waitpid(r->cmd.pid, &r->cmd_status, WNOHANG);
		if (w == r->cmd.pid)
			return 1;
		if (w < 0 && errno != EINTR)
			return -errno;
		clock_gettime(CLOCK_MONOTONIC, &t);
		double left = seconds - ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9);
		if (left <= 0)
			return 0;
		/* the pidfd wakes us at the exit; without one, look again every 10 ms */
		int ms = r->cmd.fd >= 0 ? (int)(left * 1000.0) + 1 : 10;
		struct pollfd p = { .fd = r->cmd.fd, .events = POLLIN };
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			return -errno;
	}
}

/* A cancelled run's reap also ends COMMAND (it is the run's first process), but COMMAND is
 * the runner, not a leftover: its fate is its exit status, so it leaves the leak report. */
static void drop_command(struct run *r, struct reaper_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		struct reaper_proc *p = &rep->procs[i];
		if (p->pid != r->cmd.pid || p->start_time != r->cmd.start_time)
			continue;
		reaper_report_remove(rep, i);
		return;
	}
}

/* COMMAND's status is taken from the reap when the reap collected it; every other process
 * the reap collected was an orphan of the run. */
static void fold_report(struct run *r, const struct reaper_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		const struct reaper_proc *p = &rep->procs[i];
		if (p->exit_status < 0)
			continue;
		if (p->pid != r->cmd.pid) {
			r->st.reaped_children_total++;
			r->st.reaped_orphans_total++;
		} else if (!r->cmd_done && p->start_time == r->cmd.start_time) {
			r->cmd_status = p->exit_status;
			r->cmd_done = 1;
			r->st.reaped_children_total++;
		}
	}
}

/* After supervise: a cancelled run is terminated, a finished one drained; what the reap says
 * is folded into the counters. 0, or the reap's negative errno (rep is NULL then). */
static int reap_leftovers(struct run *r, struct reaper_report **rep)
{
	/* What died before the reap is collected now; from here the reap owns every exit
	 * status of what it finds (supervisor and library never wait for the same child). */
	reap_children(r);
	r->reaping = 1;
	int rr = r->cancels ? terminate_run(r, rep) : drain_run(r, rep);
	r->reaping = 0;
	if (rr < 0)
		return rr;
	fold_report(r, *rep);
	drop_command(r, *rep);
	return 0;
}

/* The reap failed or could not see COMMAND (no pidfd to spare, say), or supervise() gave up
 * on a poll error: COMMAND still ends. It is our unwaited child, so its pid cannot have been
 * reused and a late pidfd is still its own. */
static void kill_command(struct run *r)
{
	struct pidref late;
	if (r->cmd.fd < 0 && pidref_open(&late, r->procfd, r->cmd.pid, r->cmd.start_time) == 0) {
		pidref_done(&r->cmd);
		r->cmd = late; /* on failure r->cmd keeps the pid the wait needs */
	}
	if (!pidref_exited(&r->cmd, r->procfd)) {
		if (pidref_signal_group(&r->cmd, r->procfd, SIGKILL) < 0)
			pidref_signal(&r->cmd, r->procfd, SIGKILL);
		r->st.escalated = 1;
	}
}

/* Make sure COMMAND is dead and collected, within the settle bound, and take the terminal
 * back: the reports and a Ctrl-C are ours from here on. */
static void end_command(struct run *r)
{
	if (!r->cmd_done)
		kill_command(r);
	double settle = r->opts.settle > 0 ? r->opts.settle : REAPER_SETTLE;
	int w = r->cmd_done ? 1 : wait_command(r, settle);
	if (w == 0)
		warn("COMMAND (pid %d) is still there %g s after SIGKILL (uninterruptible sleep?); not waiting for it",
		     (int)r->cmd.pid, settle);
	else if (w < 0)
		warn("cannot wait for COMMAND (pid %d): %s", (int)r->cmd.pid, strerror(-w));
	if (w <= 0) {
		r->cmd_status = W_EXITCODE(0, SIGKILL); /* EXIT_KILLED: it had to be killed, its end unseen */
		r->st.escalated = 1;
	}
	r->cmd_done = 1;
	reap_children(r);
	if (r->tty >= 0)
		tcsetpgrp(r->tty, getpgrp());
	r->st.runner_exit_code = status_to_code(r->cmd_status);
}

/* COMMAND's status, unless it succeeded and something else went wrong: a leak, an incomplete
 * or failed reap, a report file that cannot be written (reaper(1), EXIT STATUS). The reports
 * are written here. */
static int choose_exit(struct run *r, int rr, const struct reaper_report *rep)
{
	int code = status_to_code(r->cmd_status);
	if (rr < 0) {
		warn("the reap failed: %s", strerror(-rr));
		/* out of descriptors or memory: what was left may still run, nothing says it leaked */
		int incomplete = rr == -EMFILE || rr == -ENFILE || rr == -ENOMEM;
		if (code == EXIT_OK || (incomplete && code == r->leak_code))
			code = incomplete ? EXIT_INCOMPLETE : r->leak_code;
		return code;
	}
	/* COMMAND, our one child, has left the report: a leak we are the parent of was re-parented */
	r->out.adopter = getpid();
	/* a report file that cannot be written decides only what nothing else does */
	if (output_emit(&r->out, rep, r->finders, r->nfinders, OUT_ALL) < 0 && code == EXIT_OK && !rep->leaks)
		code = EXIT_REPORT_FAILED;
	r->st.leaks = rep->leaks;
	r->st.escalated |= rep->escalated;
	if (code == EXIT_OK && rep->leaks)
		code = r->leak_code;
	if (output_incomplete(rep) && (code == EXIT_OK || code == r->leak_code))
		code = EXIT_INCOMPLETE;
	return code;
}

/* What a step returns to let the run go on; any other value is the status it ends with. */
#define GO_ON (-1)

static int take_home(struct run *r)
{
	const char *why = NULL;
	int e = r->home ? home_check(r->home, &why) : 0;
	if (e == HOME_REFUSED)
		return die(EXIT_USAGE, "--home %s refused: %s", r->home, why);
	if (e < 0)
		return die(EXIT_CANNOT_EXEC, "--home %s: %s: %s", r->home, why, strerror(-e));
	return GO_ON;
}

/* The run's cgroup, and the owner-death guardian that removes it when we are killed: started
 * before the cgroup is made, with its path planned (so it is not in it). None as PID 1, a namespace's init, whose whole
 * namespace dies with it; with --isolate, only for the cgroup (the namespace takes the rest). */
static int own_cgroup(struct run *r)
{
	char own[PATH_MAX];
	int planned = plan_cgroup(r, own, sizeof own);
	/* The run begins here: only what starts from now on can carry its marker, so a scan for
	 * it reads only the pids given out since (when that can be told), and a member of its
	 * cgroup older than this was moved in. HOME=DIR and --marker are not the run's alone:
	 * whatever carries them is looked for everywhere. */
	if (origin_now_at(r->procfd, &r->origin) == 0)
		r->finders[0].origin = &r->origin;
	/* The guardian keeps the run's rules: what --keep keeps, --report-only and the origin. */
	struct guardian_rules rules = { .patterns = r->out.patterns, .npatterns = r->out.npatterns,
					.origin = r->finders[0].origin, .kill_moved_in = r->kill_moved_in,
					.report_only = r->out.report_only };
	if (getpid() != 1 && (!r->isolate || r->cgroup[0]))
		r->guardian_fd = guardian_start(r->run_marker, r->cgroup, &rules, r->procfd, &r->guardian);
	r->st.guardian_pid = r->guardian.pid;
	/* The guardian (which took the origin as it was: its own reap needs one) got the pid
	 * given out last now, as far as the run is concerned: nothing of the run has started
	 * yet, so the pids up to it are nobody's the marker scan needs to read (the guardian's
	 * own environ, say, read by every run's end for nothing). Pids go out in turn, so its
	 * pid is at or past the origin's; the fork count stays the origin's (a window judged by
	 * more forks than it holds is only judged the stricter). */
	if (r->finders[0].origin && r->guardian.pid > 0 && r->origin.pidns)
		r->origin.last_pid = r->guardian.pid;
	return setup_cgroup(r, planned) < 0 ? EXIT_CANNOT_EXEC : GO_ON;
}

/* --isolate: the cgroup and the guardian are the outer reaper's, made before the namespace
 * (its init is PID 1 there, and dies with us), so a SIGKILLed reaper still has its run's
 * cgroup removed. The outer one ends here once the run in the namespace has: it stops the
 * guardian, and removes the cgroup if the run could not (its init was killed). The run goes
 * on in the namespace, the guardian named by the pid its caller sees. */
static int isolate(struct run *r)
{
	int code = own_cgroup(r), status;
	if (code != GO_ON)
		return code;
	int e = isolate_enter(&status, &r->outer_proc);
	if (e == 0) {
		if (r->guardian_fd >= 0)
			close(r->guardian_fd); /* the outer reaper's to stop */
		r->guardian_fd = -1;
		pidref_done(&r->guardian);
		/* the state names us by the pid the caller sees (the caller's /proc's "self") */
		char self[24] = "";
		ssize_t n = r->outer_proc >= 0 ? readlinkat(r->outer_proc, "self", self, sizeof self - 1) : -1;
		if (n > 0 && (self[n] = 0, atoi(self) > 0)) {
			r->st.reaper_pid = atoi(self);
			r->st.ns_reaper_pid = getpid();
		}
		/* the marker's origin again, in here: pids are the namespace's */
		r->finders[0].origin = reaper_origin_now(&r->origin) == 0 ? &r->origin : NULL;
		return GO_ON;
	}
	if (r->cgroup[0] && access(r->cgroup, F_OK) < 0)
		r->cgroup[0] = 0;
	return e < 0 ? EXIT_CANNOT_EXEC : status_to_code(status);
}

/* Everything the run needs before COMMAND starts. */
static int set_up(struct run *r)
{
	int e, code;
	if (setup_finders(r) < 0)
		return die(EXIT_CANNOT_EXEC, "out of memory");
	/* before the guardian's fork: it inherits them */
	r->sched_short = slice_shorten(&r->sched);
	/* An inherited SIG_IGN for SIGCHLD lets the kernel collect our children unseen and sends
	 * no SIGCHLD: --isolate's outer reaper would wait for the inner one forever, and the
	 * guardian, started before the signals are set up there, would be gone unnoticed. */
	sigaction(SIGCHLD, &(struct sigaction){ .sa_handler = SIG_DFL }, NULL);
	if (r->isolate && (code = isolate(r)) != GO_ON)
		return code;
	if ((code = take_home(r)) != GO_ON)
		return code;
	if ((r->procfd = procfs_open()) < 0)
		return die(EXIT_CANNOT_EXEC, "cannot open /proc: %s", strerror(-r->procfd));
	/* Cancellation is ours before the run owns anything: a SIGTERM between the cgroup's
	 * creation and the guardian's start would end us by default and leave the cgroup. */
	if ((e = setup_signals(r)) < 0)
		return die(EXIT_CANNOT_EXEC, "cannot set up signals: %s", strerror(-e));
	if (!r->isolate && (code = own_cgroup(r)) != GO_ON)
		return code;
	if ((e = reaper_adopt()) < 0 && getpid() != 1)
		warn("warning: cannot become a child subreaper: %s; orphans go to init", strerror(-e));
	/* a pidfd per leftover; COMMAND gets the limit back (exec_command) */
	if (getrlimit(RLIMIT_NOFILE, &r->nofile) < 0)
		r->nofile.rlim_cur = r->nofile.rlim_max = 0; /* nothing raised, nothing to give back */
	struct rlimit raised = { r->nofile.rlim_max, r->nofile.rlim_max };
	if (r->nofile.rlim_cur != r->nofile.rlim_max)
		setrlimit(RLIMIT_NOFILE, &raised);
	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp())
		r->tty = STDIN_FILENO;
	return GO_ON;
}

/* A COMMAND whose exec failed has said so and is exiting; a fork into the run's cgroup (not a
 * vfork) may not have ended yet. Wait (bounded, without collecting) until it has, so that
 * reap_children counts it and the last document does not show it alive. */
static void await_failed_exec(struct run *r)
{
	for (int ms = 0; r->cmd.pid > 0 && ms < (int)(REAPER_SETTLE * 1000); ms += 10) {
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)r->cmd.pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid)
			return;
		poll(NULL, 0, 10);
	}
}

/* Start COMMAND; when it cannot be, its status is the run's (126, 127, or how it ended). */
static int start(struct run *r)
{
	r->state_begun = 1;
	state_update(r, "starting");
	int e = start_command(r);
	if (e == 0)
		return GO_ON;
	await_failed_exec(r);
	reap_children(r);
	r->st.runner_exit_code = r->cmd_done		      ? status_to_code(r->cmd_status)
				 : -e == ENOENT || -e == ENOTDIR ? EXIT_NOT_FOUND
								 : EXIT_CANNOT_EXEC;
	return r->st.runner_exit_code;
}

/* The run, step by step: set up, start COMMAND, supervise it, reap what is left, make sure
 * COMMAND is dead, choose the exit status. */
static int run(struct run *r)
{
	int code = set_up(r);
	if (code == GO_ON)
		code = start(r);
	if (code != GO_ON)
		return code;
	supervise(r);
	struct reaper_report *rep = NULL;
	int rr = reap_leftovers(r, &rep);
	end_command(r);
	/* The reap is over and COMMAND collected: the guardian has nothing left to do on owner
	 * death that the reap did not (an incomplete reap excepted: then it keeps guarding until
	 * the end). It exits, and removes the run's cgroup, while we write the reports; run_done
	 * collects it. */
	if (rr == 0 && !rep->incomplete) /* (output_incomplete says it, in choose_exit) */
		guardian_release(&r->guardian_fd);
	code = choose_exit(r, rr, rep);
	reaper_report_free(rep);
	return code;
}

static void run_init(struct run *r)
{
	*r = (struct run){ .sfd = -1, .procfd = -1, .tty = -1, .guardian_fd = -1, .outer_proc = -1, .guardian = PIDREF_NULL,
			   .cmd = PIDREF_NULL };
	r->st.runner_exit_code = -1;
	r->st.phase = "starting";
	output_init(&r->out, "run");
}

/* Whatever a run got this far, it gives back: the terminal, the run's cgroup, the guardian;
 * the state document ends "exited" once it began. */
static void run_done(struct run *r)
{
	if (r->tty >= 0)
		tcsetpgrp(r->tty, getpgrp());
	/* the descriptors the run no longer needs go first: moving what is left out of the cgroup
	 * takes a few, and a run out of them (the reap incomplete) must still remove it */
	pidref_done(&r->cmd);
	if (r->sfd >= 0)
		close(r->sfd);
	if (r->procfd >= 0)
		close(r->procfd);
	if (r->outer_proc >= 0)
		close(r->outer_proc);
	r->sfd = r->procfd = r->outer_proc = -1;
	drop_cgroup(r);
	if (r->state_begun)
		state_update(r, "exited");
	guardian_stop(r->guardian_fd, &r->guardian);
	free(r->home_marker);
	sbuf_free(&r->buf);
	output_done(&r->out);
}

int cmd_run(int argc, char **argv)
{
	guardian_hide_environ(); /* first: nothing holds a pointer into it yet */
	struct run r;
	run_init(&r);
	int code = parse(&r, argc, argv);
	if (code < 0) {
		run_usage(stdout);
		fputc('\n', stdout);
		output_usage(stdout);
		code = EXIT_OK;
	} else if (code == 0) {
		code = run(&r);
	}
	run_done(&r);
	return code;
}

int run_check_args(int argc, char **argv)
{
	struct run r;
	run_init(&r);
	int code = parse(&r, argc, argv);
	run_done(&r);
	return code;
}

void run_usage(FILE *out)
{
	fprintf(out,
		"usage: reaper run [OPTIONS] -- COMMAND [ARG...]\n"
		"Run COMMAND as a child subreaper, then wait for, kill and report what it left behind.\n\n"
		"  --home DIR           run COMMAND with HOME=DIR (created 0700; an existing DIR must be a\n"
		"                       directory of ours, not a symlink, not group/other-writable);\n"
		"                       find leftovers by it\n"
		"  --marker NAME=VALUE  also set NAME=VALUE for COMMAND and find leftovers by it (repeatable)\n"
		"  --timeout S          time leftovers get to exit by themselves (REAPER_TIMEOUT, default %g)\n"
		"  --grace S            time between SIGTERM and SIGKILL (REAPER_GRACE, default %g)\n"
		"  --state FILE         keep a JSON state document at FILE (REAPER_STATE)\n"
		"  --leak-exit-code N   exit status when COMMAND succeeded but leaked (REAPER_LEAK_EXIT_CODE,\n"
		"                       default %d; 3..125, not 64)\n"
		"  --isolate            run in a PID namespace of its own (with a user namespace when not\n"
		"                       root): nothing of the run outlives it, even if reaper is SIGKILLed\n"
		"  --cgroup MODE        auto (default): the run in a cgroup v2 of its own when a writable\n"
		"                       cgroup2 is there, else tracked by marker and descent; on: fail without\n"
		"                       one; off: never (REAPER_CGROUP)\n"
		"  --kill-moved-in      also end processes older than the run that were moved into its\n"
		"                       cgroup (without it they are reported 'moved-in', untouched)\n\n"
		"S: seconds, or a number with ms, s, m, h or d (1.5, 30s, 2m, 1h).\n"
		"Every process of the run carries REAPER_RUN=<random id> and is found by it, by descent, and\n"
		"by the run's cgroup (removed when the run ends).\n"
		"Exit status: COMMAND's own; %d+N when signal N ended it; the leak exit code when it\n"
		"succeeded but left processes behind; %d instead of 0 or the leak exit code when the reap\n"
		"is incomplete (out of descriptors, say); %d COMMAND cannot be executed; %d not found;\n"
		"%d usage error.\n",
		CONFIG_TIMEOUT_DEFAULT, CONFIG_GRACE_DEFAULT, EXIT_LEAK_DEFAULT, EXIT_SIGNAL_BASE, EXIT_INCOMPLETE,
		EXIT_CANNOT_EXEC, EXIT_NOT_FOUND, EXIT_USAGE);
}
