/* SPDX-License-Identifier: MIT */
/* bench-wrap: wrapper overhead.  bench-wrap RUNS "CMD ARG..." "CMD ARG..." ...
 * Runs every command RUNS times, interleaved (one of each per round, the order rotating), each
 * by fork + execve + wait4 with output to /dev/null; prints one JSON object: per command the
 * median, the 10th and 90th percentile wall time (seconds), the median CPU time (user + system
 * of the command and what it waited for: contention does not inflate it) and the median peak
 * RSS (KiB, from wait4: the largest of the command and what it waited for).
 * --breakdown, --guardian, --hwm: below. */
#define _GNU_SOURCE
#include "bench/benchlib.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_ARGS 32

static int split(char *s, char **argv)
{
	int n = 0;
	for (char *tok = strtok(s, " "); tok && n < MAX_ARGS - 1; tok = strtok(NULL, " "))
		argv[n++] = tok;
	argv[n] = NULL;
	return n;
}

/* fork and exec argv with its standard streams on /dev/null; the child's pid */
static pid_t spawn_quiet(char **argv)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	return pid;
}

static double run_once(char **argv, long *maxrss, double *cpu, int *status)
{
	double t = bench_now();
	pid_t pid = spawn_quiet(argv);
	struct rusage ru;
	while (wait4(pid, status, 0, &ru) < 0 && errno == EINTR)
		;
	t = bench_now() - t;
	*maxrss = ru.ru_maxrss;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
	return t;
}

/* bench-wrap --hwm CMD ARG...: run CMD once, stopped at its exit by ptrace (before its memory
 * is torn down) to read its own VmHWM: the peak RSS of that very process, not of what it
 * waited for. Prints {"hwm_kib": N, "status": S, "seconds": T}. */
static int hwm(char **argv)
{
	double t = bench_now();
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	long kib = -1;
	waitpid(pid, &st, 0); /* the SIGSTOP before exec */
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL));
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	for (;;) {
		if (waitpid(pid, &st, 0) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		int sig = 0;
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
			char path[64], line[256];
			snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
			FILE *f = fopen(path, "r");
			while (f && fgets(line, sizeof line, f))
				if (strncmp(line, "VmHWM:", 6) == 0)
					kib = atol(line + 6);
			if (f)
				fclose(f);
		} else if (WIFSTOPPED(st) && WSTOPSIG(st) != SIGTRAP) {
			sig = WSTOPSIG(st); /* pass every other signal on */
		}
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
	printf("{\"hwm_kib\": %ld, \"status\": %d, \"seconds\": %.6f}\n", kib,
	       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), bench_now() - t);
	return 0;
}

/* The middle process of a guardian start on our memory (CLONE_VM | CLONE_VFORK), as reaper
 * run starts it: it forks the helper (which exits at once) and exits. */
static int vfork_middle(void *arg)
{
	(void)arg;
	if (fork() == 0)
		_exit(0);
	_exit(0);
}

/* bench-wrap --guardian RUNS: what starting a detached helper costs, the ways reaper run has
 * started its owner-death guardian: one fork (the caller goes on at once, the helper is
 * collected when it is stopped, outside the timing), a middle process on our memory that forks
 * the helper and exits, a double fork (fork a middle process that forks the helper and exits;
 * we wait for the middle one), and a clone on our memory (CLONE_VM, a stack of its own: how
 * harness/guardian.c starts it on x86-64; collected as the fork is). The helper exits at once.
 * Prints, per way, the median wall and CPU seconds (the CPU of this process and of what it
 * collected). */
static int exit_at_once(void *arg)
{
	(void)arg;
	return 0;
}

static int guardian(long runs)
{
	double *t = calloc((size_t)runs * 4, sizeof *t), *c = calloc((size_t)runs * 4, sizeof *c);
	static char stack[65536] __attribute__((aligned(16)));
	static char helper_stack[65536] __attribute__((aligned(16)));
	for (long r = 0; r < runs * 4; r++) {
		struct rusage ru0, ru1, ch0, ch1;
		getrusage(RUSAGE_SELF, &ru0);
		getrusage(RUSAGE_CHILDREN, &ch0);
		double w = bench_now();
		pid_t mid;
		int way = (int)(r % 4);
		if (way == 3) {
			mid = clone(exit_at_once, helper_stack + sizeof helper_stack, CLONE_VM | SIGCHLD, NULL);
		} else if (way == 0) {
			mid = fork();
			if (mid == 0)
				_exit(0);
		} else if (way == 1) {
			mid = clone(vfork_middle, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		} else {
			mid = fork();
			if (mid == 0) {
				if (fork() == 0)
					_exit(0);
				_exit(0);
			}
		}
		double took = bench_now() - w;
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
		long i = way * runs + r / 4;
		t[i] = way == 0 || way == 3 ? took : bench_now() - w;
		getrusage(RUSAGE_SELF, &ru1);
		getrusage(RUSAGE_CHILDREN, &ch1);
#define TV(x) ((double)(x).tv_sec + (double)(x).tv_usec / 1e6)
		c[i] = TV(ru1.ru_utime) - TV(ru0.ru_utime) + TV(ru1.ru_stime) - TV(ru0.ru_stime) + TV(ch1.ru_utime) -
		       TV(ch0.ru_utime) + TV(ch1.ru_stime) - TV(ch0.ru_stime);
#undef TV
	}
	printf("{\"fork\": {\"median\": %.9f, \"cpu\": %.9f}, \"vfork_middle\": {\"median\": %.9f, \"cpu\": %.9f}, "
	       "\"double_fork\": {\"median\": %.9f, \"cpu\": %.9f}, \"vm_clone\": {\"median\": %.9f, \"cpu\": %.9f}}\n",
	       bench_median(t, (size_t)runs), bench_median(c, (size_t)runs), bench_median(t + runs, (size_t)runs),
	       bench_median(c + runs, (size_t)runs), bench_median(t + 2 * runs, (size_t)runs),
	       bench_median(c + 2 * runs, (size_t)runs), bench_median(t + 3 * runs, (size_t)runs),
	       bench_median(c + 3 * runs, (size_t)runs));
	return 0;
}

static long last_pid(void)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "r");
	long v = -1;
	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

/* bench-wrap --breakdown RUNS CMD ARG...: what one run of CMD costs in processes and
 * hand-offs, medians over RUNS: the pids given out during it (in a PID namespace where only
 * this runs: the processes it started, itself included), its voluntary context switches
 * (each a wait for another process or for I/O: under load every one of them waits for a CPU
 * again) and involuntary ones, and its minor faults, of CMD and what it waited for. */
static int breakdown(long runs, char **argv)
{
	double *procs = calloc((size_t)runs, sizeof *procs), *vcs = calloc((size_t)runs, sizeof *vcs);
	double *ics = calloc((size_t)runs, sizeof *ics), *flt = calloc((size_t)runs, sizeof *flt);
	int bad = 0;
	for (long r = 0; r < runs; r++) {
		long before = last_pid();
		pid_t pid = spawn_quiet(argv);
		struct rusage ru;
		int st;
		while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
			;
		procs[r] = (double)(last_pid() - before);
		vcs[r] = (double)ru.ru_nvcsw;
		ics[r] = (double)ru.ru_nivcsw;
		flt[r] = (double)ru.ru_minflt;
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	printf("{\"processes\": %.0f, \"voluntary_switches\": %.0f, \"involuntary_switches\": %.0f, "
	       "\"minor_faults\": %.0f, \"failed\": %d}\n",
	       bench_median(procs, (size_t)runs), bench_median(vcs, (size_t)runs), bench_median(ics, (size_t)runs),
	       bench_median(flt, (size_t)runs), bad);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "--breakdown") == 0)
		return breakdown(atol(argv[2]), argv + 3);
	if (argc >= 3 && strcmp(argv[1], "--hwm") == 0)
		return hwm(argv + 2);
	if (argc == 3 && strcmp(argv[1], "--guardian") == 0)
		return guardian(atol(argv[2]));
	if (argc < 3) {
		fprintf(stderr, "usage: bench-wrap RUNS \"CMD ARG...\"...\n");
		return 64;
	}
	long runs = atol(argv[1]);
	int k = argc - 2;
	char *cmds[16][MAX_ARGS];
	if (k > 16)
		return 64;
	for (int i = 0; i < k; i++)
		split(strdup(argv[i + 2]), cmds[i]);
	double *t = calloc((size_t)(k * runs), sizeof *t), *rss = calloc((size_t)(k * runs), sizeof *rss);
	double *cpu = calloc((size_t)(k * runs), sizeof *cpu);
	int bad[16] = { 0 };
	for (int i = 0; i < k; i++) { /* warm the page cache and the dynamic loader */
		long m;
		double c;
		int st;
		run_once(cmds[i], &m, &c, &st);
	}
	for (long r = 0; r < runs; r++)
		for (int j = 0; j < k; j++) {
			int i = (int)((j + r) % k);
			long m;
			int st;
			t[i * runs + r] = run_once(cmds[i], &m, &cpu[i * runs + r], &st);
			rss[i * runs + r] = (double)m;
			bad[i] |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		}
	printf("{");
	for (int i = 0; i < k; i++) {
		double *v = t + i * runs;
		double med = bench_median(v, (size_t)runs);
		printf("%s\"%s\": {\"median\": %.9f, \"p10\": %.9f, \"p90\": %.9f, \"cpu\": %.9f, \"maxrss_kib\": %.0f, "
		       "\"failed\": %d}",
		       i ? ", " : "", argv[i + 2], med, v[runs / 10], v[runs * 9 / 10],
		       bench_median(cpu + i * runs, (size_t)runs), bench_median(rss + i * runs, (size_t)runs), bad[i]);
	}
	printf("}\n");
	return 0;
}
