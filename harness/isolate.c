/* SPDX-License-Identifier: MIT */
/* isolate: see isolate.h. The reaper clones itself into a new PID namespace and a new mount
 * namespace (and, when not root, a new user namespace that maps the caller's uid and gid to
 * themselves, so COMMAND runs as the caller, without capabilities once it execs). The clone
 * is the namespace's init: it mounts a /proc of its own and goes on with the whole run
 * (supervision, the reap, the reports), and every orphan of the run reparents to it. It
 * gets SIGKILL when the outer reaper dies (PR_SET_PDEATHSIG), and when a PID namespace's
 * init dies the kernel kills everything in it: nothing of the run outlives the run, even
 * when the outer reaper is SIGKILLed. The outer reaper relays signals and the exit status. */
#define _GNU_SOURCE
#include "isolate.h"

#include "exits.h"
#include "msg.h"
#include "reaper/pidref.h"
#include "reaper/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum step { STEP_PDEATHSIG = 1, STEP_SETGROUPS, STEP_UID_MAP, STEP_GID_MAP, STEP_MOUNT_PRIVATE, STEP_MOUNT_PROC };

static const char *const step_name[] = {
	[STEP_PDEATHSIG] = "PR_SET_PDEATHSIG",
	[STEP_SETGROUPS] = "writing /proc/self/setgroups",
	[STEP_UID_MAP] = "writing /proc/self/uid_map",
	[STEP_GID_MAP] = "writing /proc/self/gid_map",
	[STEP_MOUNT_PRIVATE] = "making the mounts private",
	[STEP_MOUNT_PROC] = "mounting the namespace's /proc",
};

struct failure {
	int step, err;
};

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

/* The first line of a sysctl file, "" when it does not exist. */
static void sysctl(const char *path, char *buf, size_t len)
{
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/* Why the kernel refused, in the words of the setting that did it. */
static void explain(int rootless, const struct failure *f)
{
	char v[32];
	const char *step = f->step ? step_name[f->step] : rootless ? "creating user, PID and mount namespaces"
								   : "creating PID and mount namespaces";
	warn("--isolate: %s failed: %s", step, strerror(f->err));
	if (rootless) {
		sysctl("/proc/sys/kernel/unprivileged_userns_clone", v, sizeof v);
		if (!strcmp(v, "0")) {
			warn("unprivileged user namespaces are off: sysctl kernel.unprivileged_userns_clone=0 "
			     "(run as root, or set it to 1)");
			return;
		}
		sysctl("/proc/sys/user/max_user_namespaces", v, sizeof v);
		if (!strcmp(v, "0") || f->err == ENOSPC) {
			warn("no user namespace may be created: sysctl user.max_user_namespaces=%s", v[0] ? v : "?");
			return;
		}
		sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v, sizeof v);
		if (!strcmp(v, "1") && f->err == EPERM && f->step) {
			warn("AppArmor restricts unprivileged user namespaces: sysctl "
			     "kernel.apparmor_restrict_unprivileged_userns=1 (an AppArmor profile allowing "
			     "userns for reaper, or running as root, lifts it)");
			return;
		}
	}
	if (f->err == ENOSPC)
		warn("the namespace limit is reached: sysctl user.max_pid_namespaces, user.max_mnt_namespaces");
	else if (f->err == EPERM && f->step == STEP_MOUNT_PROC)
		warn("/proc could not be mounted in the namespace: a container that masks parts of /proc "
		     "(Docker's default) forbids it to a user namespace");
	else if (f->err == EPERM || f->err == EINVAL || f->err == ENOSYS)
		warn("namespaces are forbidden here: a seccomp filter or the container's policy refuses them "
		     "(Docker's default profile without CAP_SYS_ADMIN, systemd's RestrictNamespaces=)");
}

/* In the clone: be the init of the new PID namespace. Returns only on success. */
static void become_init(int rootless, uid_t uid, gid_t gid, int report, int alive, int foreground, int *outer_proc)
{
	struct failure f = { 0 };
	char map[64];
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		f = (struct failure){ STEP_PDEATHSIG, errno };
	/* the outer reaper died before the prctl: its end of the pipe is closed already */
	struct pollfd p = { .fd = alive, .events = POLLIN };
	if (!f.step && poll(&p, 1, 0) > 0)
		_exit(EXIT_CANNOT_EXEC);
	int e;
	if (!f.step && rootless) {
		if ((e = write_file("/proc/self/setgroups", "deny")) < 0 && e != -ENOENT)
			f = (struct failure){ STEP_SETGROUPS, -e };
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if (!f.step && (e = write_file("/proc/self/uid_map", map)) < 0)
			f = (struct failure){ STEP_UID_MAP, -e };
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if (!f.step && (e = write_file("/proc/self/gid_map", map)) < 0)
			f = (struct failure){ STEP_GID_MAP, -e };
	}
	/* the caller's /proc stays reachable by this descriptor once ours covers it */
	*outer_proc = f.step ? -1 : open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* private first, or the new /proc would propagate to the caller's mount namespace */
	if (!f.step && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		f = (struct failure){ STEP_MOUNT_PRIVATE, errno };
	if (!f.step && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		f = (struct failure){ STEP_MOUNT_PROC, errno };
	if (f.step) {
		if (write(report, &f, sizeof f) < 0) {
			/* the outer reaper sees EOF and our exit status */
		}
		_exit(EXIT_CANNOT_EXEC);
	}
	close(report);
	close(alive);
	prctl(PR_SET_NAME, "reaper-init", 0, 0, 0);
	/* The outer reaper's process group is invisible in here (getpgrp() would say 0): lead a
	 * group of our own and, when the outer one had the terminal, take it, so the run's job
	 * control (COMMAND in the foreground, the terminal back for the drain) works inside. */
	setpgid(0, 0);
	if (foreground) {
		sigset_t ttou, old;
		sigemptyset(&ttou);
		sigaddset(&ttou, SIGTTOU);
		sigprocmask(SIG_BLOCK, &ttou, &old);
		tcsetpgrp(STDIN_FILENO, getpgrp());
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
}

/* The outer reaper: pass on the signals a process sent us (a terminal's reach the inner
 * reaper by themselves: it is in our process group), until the inner one ends; its wait
 * status. */
/* What the outer reaper relays (those its caller did not ignore), SIGCHLD, and SIGTTOU
 * (blocked only: taking the terminal back at the end must not stop it). Blocked before the
 * clone, so a signal sent the moment the run starts is relayed, not fatal. */
static void relayed_signals(sigset_t *mask)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
	sigemptyset(mask);
	sigaddset(mask, SIGCHLD);
	sigaddset(mask, SIGTTOU);
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		struct sigaction sa;
		if (sigaction(sigs[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
			sigaddset(mask, sigs[i]);
	}
}

static int relay(pid_t pid, sigset_t mask)
{
	sigdelset(&mask, SIGTTOU);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int procfd = procfs_open();
	struct pidref inner = PIDREF_NULL;
	struct reaper_stat st;
	/* our unreaped child: its pid cannot change hands; without a pidfd, pid + start time */
	if (pidref_open_stat(&inner, procfd, pid, &st) < 0)
		inner = (struct pidref){ .pid = pid, .start_time = procfs_stat(procfd, pid, &st) == 0 ? st.start_time : 0,
					 .fd = -1 };
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		struct signalfd_siginfo si;
		if (sfd < 0) {
			w = waitpid(pid, &status, 0);
			if (w == pid || (w < 0 && errno != EINTR))
				break;
			continue;
		}
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo != SIGCHLD && si.ssi_code != SI_KERNEL)
			pidref_signal(&inner, procfd, (int)si.ssi_signo);
	}
	pidref_done(&inner);
	if (sfd >= 0)
		close(sfd);
	if (procfd >= 0)
		close(procfd);
	return status;
}

int isolate_enter(int *status, int *outer_proc)
{
	int rootless = geteuid() != 0;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int report[2], alive[2];
	int foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	if (pipe2(report, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(alive, O_CLOEXEC) < 0) {
		int e = -errno;
		close(report[0]);
		close(report[1]);
		return e;
	}
	sigset_t mask, orig;
	relayed_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	fflush(NULL);
	unsigned long flags = CLONE_NEWPID | CLONE_NEWNS | (rootless ? CLONE_NEWUSER : 0);
	/* clone without a stack is fork into new namespaces (glibc's fork() takes no flags) */
	pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &orig, NULL); /* the run sets up its own */
		close(report[0]);
		close(alive[1]);
		become_init(rootless, uid, gid, report[1], alive[0], foreground, outer_proc);
		return 0;
	}
	int e = pid < 0 ? errno : 0;
	close(report[1]);
	close(alive[0]);
	struct failure f = { 0, e };
	if (pid > 0) {
		ssize_t n;
		do
			n = read(report[0], &f, sizeof f);
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof f)
			f.step = 0; /* EOF: the init is set up and runs */
	}
	close(report[0]);
	if (pid < 0 || f.step) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		close(alive[1]);
		explain(rootless, &f);
		sigprocmask(SIG_SETMASK, &orig, NULL);
		return -(f.err ? f.err : EPERM);
	}
	/* alive[1] stays open while we live: the init polls it once to see we did not die early */
	*status = relay(pid, mask);
	if (foreground)
		tcsetpgrp(STDIN_FILENO, getpgrp()); /* SIGTTOU is blocked */
	close(alive[1]);
	return 1;
}
