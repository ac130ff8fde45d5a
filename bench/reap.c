/* SPDX-License-Identifier: MIT */
/* bench-reap: libreaper's reaper_reap() on leftovers of bench-spawn, orphans of this driver
 * (a subreaper, as `reaper run` and a pytest session with adopt_orphans() are).  One JSON
 * line per repetition on stdout.
 *   bench-reap SPAWN exit N REPS   N leftovers exit by themselves at a known moment (20 ms
 *                                  after the reap has identified them all, while it waits):
 *                                  seconds from the last exit to reap() returning
 *   bench-reap SPAWN kill N REPS   N SIGTERM-ignoring leftovers plus one that keeps forking;
 *                                  timeout 0.2 s, grace 0.1 s: seconds from the deadline
 *                                  (timeout + grace) to the report; what is left; zombies
 *   bench-reap SPAWN reap N REPS   N SIGTERM-ignoring leftovers, timeout 0, no grace: the
 *                                  whole reap (find, identify, kill, collect)
 *   bench-reap SPAWN collect N REPS  seconds to collect one of N zombie children, with and
 *                                  without a pidfd ever opened on them (a kernel cost) */
#define _GNU_SOURCE
#include "bench/benchlib.h"
#include "reaper/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct closer {
	struct pop *pop;
	long n;
	double at; /* when the population was released */
};

/* pidfds this process holds: the reap opens one per candidate it identified */
static long count_pidfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], link[64];
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t l = readlink(path, link, sizeof link - 1);
		n += l > 0 && (link[l] = 0, strcmp(link, "anon_inode:[pidfd]") == 0);
	}
	if (d)
		closedir(d);
	return n;
}

/* Release the population once the reap has identified all of it (and is waiting), so the
 * exits happen at a known moment after the first scan however slow the machine is. */
static void *close_when_found(void *arg)
{
	struct closer *c = arg;
	struct timespec tick = { 0, 2000000 };
	double give_up = bench_now() + 60;
	while (count_pidfds() < c->n && bench_now() < give_up)
		nanosleep(&tick, NULL);
	struct timespec settle = { 0, 20000000 };
	nanosleep(&settle, NULL);
	c->at = bench_now();
	pop_release(c->pop);
	return NULL;
}

/* Zombie children of ours that the reap left (a leftover it never saw alive would be one). */
static long zombies_left(void)
{
	long n = 0;
	for (;;) {
		siginfo_t si = { 0 };
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return n;
		/* count it, then take it out of the way to look for the next */
		waitpid(si.si_pid, NULL, 0);
		n++;
	}
}

static int run_exit(const char *spawn, const char *home, long n)
{
	struct pop pop;
	int shm_fd;
	uint64_t *shm = bench_shm((size_t)n, &shm_fd);
	if (!shm || pop_init(&pop) < 0 || pop_spawn(&pop, spawn, "hold", n, bench_env(home), shm_fd, 0) < 0)
		return -1;
	close(shm_fd);
	char entry[4200];
	snprintf(entry, sizeof entry, "HOME=%s", home);
	struct reaper_finder f = reaper_find_env(entry);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = 30;
	struct closer c = { &pop, n, 0 };
	pthread_t th;
	pthread_create(&th, NULL, close_when_found, &c);
	struct reaper_report *rep = NULL;
	int r = reaper_reap(&f, 1, &o, &rep);
	double t_ret = bench_now();
	pthread_join(th, NULL);
	uint64_t last = 0;
	for (long i = 0; i < n; i++)
		if (shm[i] > last)
			last = shm[i];
	double t_last = (double)last / 1e9;
	long zombies = zombies_left();
	printf("{\"n\": %ld, \"latency\": %.9f, \"since_release\": %.9f, \"found\": %ld, \"exited\": %ld, "
	       "\"leaks\": %ld, \"zombies\": %ld, \"rc\": %d}\n",
	       n, t_ret - t_last, t_ret - c.at, r < 0 ? -1 : (long)rep->n, r < 0 ? -1 : (long)rep->exited,
	       r < 0 ? -1 : (long)rep->leaks, zombies, r);
	fflush(stdout);
	reaper_report_free(rep);
	munmap(shm, (size_t)n * sizeof *shm);
	bench_collect(1);
	return r;
}

static int run_kill(const char *spawn, const char *home, long n, int forker, double timeout, double grace)
{
	struct pop pop;
	char **env = bench_env(home);
	if (pop_init(&pop) < 0 || pop_spawn(&pop, spawn, "ignterm", n, env, -1, 0) < 0 ||
	    (forker && pop_spawn(&pop, spawn, "forker", 1, env, -1, 0) < 0))
		return -1;
	char entry[4200];
	snprintf(entry, sizeof entry, "HOME=%s", home);
	struct reaper_finder f = reaper_find_env(entry);
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.timeout = timeout;
	o.grace = grace;
	struct reaper_report *rep = NULL;
	double t0 = bench_now();
	int r = reaper_reap(&f, 1, &o, &rep);
	double t_ret = bench_now();
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long left = floor_scan(procfd, entry);
	close(procfd);
	long zombies = zombies_left();
	printf("{\"n\": %ld, \"forker\": %d, \"after_deadline\": %.9f, \"total\": %.9f, \"found\": %ld, "
	       "\"killed\": %ld, \"leaks\": %ld, \"left\": %ld, \"zombies\": %ld, \"rc\": %d}\n",
	       n, forker, t_ret - (t0 + timeout + grace), t_ret - t0, r < 0 ? -1 : (long)rep->n,
	       r < 0 ? -1 : (long)(rep->killed + rep->terminated), r < 0 ? -1 : (long)rep->leaks, left, zombies, r);
	fflush(stdout);
	reaper_report_free(rep);
	pop_release(&pop); /* whatever survived exits by itself now */
	bench_collect(1);
	return r;
}

/* What collecting one zombie costs among n children, when a pidfd was opened on each of them
 * (as libreaper does for identity) and when none was. The children are ours (plain fork,
 * blocked in pause()), killed through their pidfd or, without one, by pid: an unreaped child
 * of ours cannot be replaced under its pid. */
static double collect_cost(long n, int with_pidfd)
{
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	int *fds = calloc((size_t)n, sizeof *fds);
	for (long i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			pause();
			_exit(0);
		}
		fds[i] = with_pidfd ? (int)syscall(SYS_pidfd_open, pids[i], 0) : -1;
	}
	for (long i = 0; i < n; i++) {
		if (fds[i] >= 0)
			syscall(SYS_pidfd_send_signal, fds[i], SIGKILL, NULL, 0);
		else
			kill(pids[i], SIGKILL);
	}
	for (long i = 0; i < n; i++) { /* all are zombies before the clock starts */
		siginfo_t si = { 0 };
		while (waitid(P_PID, (id_t)pids[i], &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
			;
	}
	double t = bench_now();
	for (long i = 0; i < n; i++)
		while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
			;
	t = (bench_now() - t) / (double)n;
	for (long i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(pids);
	free(fds);
	return t;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: bench-reap SPAWN exit|kill|reap N REPS\n");
		return 64;
	}
	const char *spawn = argv[1], *what = argv[2];
	long n = atol(argv[3]), reps = atol(argv[4]);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < 65536) {
		struct rlimit want = { 65536, 65536 };
		if (setrlimit(RLIMIT_NOFILE, &want) < 0) /* not root: the hard limit is the ceiling */
			want.rlim_cur = want.rlim_max = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &want);
	} else {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (reaper_adopt() < 0) {
		fprintf(stderr, "bench-reap: cannot become a subreaper\n");
		return 1;
	}
	for (long i = 0; i < reps; i++) {
		char home[128];
		snprintf(home, sizeof home, "/tmp/reaper-bench-%d-%s-%ld/home", (int)getpid(), what, i);
		int r;
		if (strcmp(what, "exit") == 0)
			r = run_exit(spawn, home, n);
		else if (strcmp(what, "kill") == 0)
			r = run_kill(spawn, home, n, 1, 0.2, 0.1);
		else if (strcmp(what, "reap") == 0)
			r = run_kill(spawn, home, n, 0, 0, 0);
		else if (strcmp(what, "collect") == 0) {
			double with = collect_cost(n, 1), without = collect_cost(n, 0);
			printf("{\"n\": %ld, \"with_pidfd\": %.9f, \"without_pidfd\": %.9f}\n", n, with, without);
			fflush(stdout);
			r = 0;
		}
		else
			return 64;
		if (r < 0)
			return 1;
	}
	return 0;
}
