/* bench-wrap: wrapper overhead.  bench-wrap RUNS "CMD ARG..." "CMD ARG..." ...
 * Runs every command RUNS times, interleaved (one of each per round, the order rotating), each
 * by fork + execve + wait4 with output to /dev/null; prints one JSON object: per command the
 * median, the 10th and 90th percentile wall time (seconds) and the median peak RSS (KiB, from
 * wait4: the largest of the command and what it waited for). */
#define _GNU_SOURCE
#include "bench/benchlib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double run_once(char **argv, long *maxrss, int *status)
{
	double t = bench_now();
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	struct rusage ru;
	while (wait4(pid, status, 0, &ru) < 0 && errno == EINTR)
		;
	t = bench_now() - t;
	*maxrss = ru.ru_maxrss;
	return t;
}

int main(int argc, char **argv)
{
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
	int bad[16] = { 0 };
	for (int i = 0; i < k; i++) { /* warm the page cache and the dynamic loader */
		long m;
		int st;
		run_once(cmds[i], &m, &st);
	}
	for (long r = 0; r < runs; r++)
		for (int j = 0; j < k; j++) {
			int i = (int)((j + r) % k);
			long m;
			int st;
			t[i * runs + r] = run_once(cmds[i], &m, &st);
			rss[i * runs + r] = (double)m;
			bad[i] |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		}
	printf("{");
	for (int i = 0; i < k; i++) {
		double *v = t + i * runs;
		double med = bench_median(v, (size_t)runs);
		printf("%s\"%s\": {\"median\": %.9f, \"p10\": %.9f, \"p90\": %.9f, \"maxrss_kib\": %.0f, \"failed\": %d}",
		       i ? ", " : "", argv[i + 2], med, v[runs / 10], v[runs * 9 / 10],
		       bench_median(rss + i * runs, (size_t)runs), bad[i]);
	}
	printf("}\n");
	return 0;
}
