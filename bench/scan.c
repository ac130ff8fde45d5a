/* SPDX-License-Identifier: MIT */
/* bench-scan: the marker-scan contenders, one round each per command, so the driver can
 * interleave them (and the hand-written Python reaper) on the same processes.  Reads commands
 * on stdin, answers one JSON line each:
 *   scan ENTRY      floor, the floor of what reaper_scan returns, reaper_scan, rescan, libproc2
 *                   (reap and get) over every process
 *   details ENTRY   per-candidate details of every process holding ENTRY: raw reads as
 *                   libreaper does them, beside libproc2 procps_pids_select; and why
 *                   each would still be running, as a reap describes a leak (why.c)
 * Each contender answers [wall seconds, how many it found (they must agree), CPU seconds];
 * CPU time is what the other users of a shared machine do not inflate. */
#define _GNU_SOURCE
#include "bench/benchlib.h"
#include "reaper/finders.h"
#include "reaper/procfs.h"
#include "reaper/reaper.h"
#include "reaper/why.h"

#include <libproc2/pids.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int procfd;

static double t_floor(const char *entry, long *n, double *cpu)
{
	double t = bench_now(), c = bench_cpu();
	*n = floor_scan(procfd, entry);
	*cpu = bench_cpu() - c;
	return bench_now() - t;
}

/* The reads of what reaper_scan() returns for each match (floor_listing with report). */
static double t_floor_report(const char *entry, long *n, double *cpu)
{
	double t = bench_now(), c = bench_cpu();
	*n = floor_listing(procfd, entry, 1, NULL);
	*cpu = bench_cpu() - c;
	return bench_now() - t;
}

static double t_reaper_scan(const char *entry, long *n, double *cpu)
{
	struct reaper_finder f = reaper_find_env(entry);
	struct reaper_report *rep = NULL;
	double t = bench_now(), c = bench_cpu();
	int r = reaper_scan(&f, 1, &rep);
	*cpu = bench_cpu() - c;
	t = bench_now() - t;
	*n = r < 0 ? r : (long)rep->n;
	reaper_report_free(rep);
	return t;
}

/* What every rescan of a reap's wait loop costs once the matches are known. */
static double t_rescan(const char *entry, long *n, double *cpu)
{
	struct reaper_finder f = reaper_find_env(entry);
	struct scanner sc;
	struct candset cs = { 0 };
	double t = -1;
	*cpu = -1;
	if (finders_open(&sc, &f, 1, NULL, 0) == 0 && finders_scan(&sc, &cs) >= 0) {
		t = bench_now();
		double c = bench_cpu();
		int r = finders_scan(&sc, &cs);
		*cpu = bench_cpu() - c;
		t = bench_now() - t;
		*n = r < 0 ? r : (long)cs.n;
	}
	candset_free(&cs);
	finders_close(&sc);
	return t;
}

static int has(char **v, const char *entry)
{
	for (; v && *v; v++)
		if (strcmp(*v, entry) == 0)
			return 1;
	return 0;
}

static double t_libproc2_reap(const char *entry, long *n, double *cpu)
{
	enum pids_item items[] = { PIDS_ID_PID, PIDS_ENVIRON_V };
	struct pids_info *info = NULL;
	double t = bench_now(), c = bench_cpu();
	*n = 0;
	if (procps_pids_new(&info, items, 2) < 0)
		return -1;
	struct pids_fetch *f = procps_pids_reap(info, PIDS_FETCH_TASKS_ONLY);
	for (int i = 0; f && i < f->counts->total; i++)
		*n += has(PIDS_VAL(1, strv, f->stacks[i], info), entry);
	procps_pids_unref(&info);
	*cpu = bench_cpu() - c;
	return bench_now() - t;
}

static double t_libproc2_get(const char *entry, long *n, double *cpu)
{
	enum pids_item items[] = { PIDS_ID_PID, PIDS_ENVIRON_V };
	struct pids_info *info = NULL;
	double t = bench_now(), c = bench_cpu();
	*n = 0;
	if (procps_pids_new(&info, items, 2) < 0)
		return -1;
	struct pids_stack *s;
	while ((s = procps_pids_get(info, PIDS_FETCH_TASKS_ONLY)))
		*n += has(PIDS_VAL(1, strv, s, info), entry);
	procps_pids_unref(&info);
	*cpu = bench_cpu() - c;
	return bench_now() - t;
}

typedef double (*contender)(const char *, long *, double *);

static void cmd_scan(const char *entry, unsigned round)
{
	static const char *names[] = { "floor", "floor_report", "reaper_scan", "rescan", "libproc2_reap", "libproc2_get" };
	static const contender fns[] = { t_floor, t_floor_report, t_reaper_scan, t_rescan, t_libproc2_reap,
					 t_libproc2_get };
	enum { K = sizeof fns / sizeof *fns };
	double t[K], cpu[K];
	long n[K];
	/* rotate the order each round: no contender always runs on a cold or warm cache */
	for (unsigned k = 0; k < K; k++) {
		unsigned i = (k + round) % K;
		cpu[i] = -1;
		t[i] = fns[i](entry, &n[i], &cpu[i]);
	}
	printf("{");
	for (unsigned i = 0; i < K; i++)
		printf("%s\"%s\": [%.9f, %ld, %.9f]", i ? ", " : "", names[i], t[i], n[i], cpu[i]);
	printf("}\n");
	fflush(stdout);
}

/* The raw detail reads libreaper's add() makes for one candidate (besides its pidfd). */
static int raw_details(pid_t pid, struct sbuf *b)
{
	struct reaper_stat st;
	if (procfs_stat(procfd, pid, &st) < 0)
		return -1;
	char dir[16];
	struct stat sb;
	snprintf(dir, sizeof dir, "%d", (int)pid);
	fstatat(procfd, dir, &sb, 0);
	procfs_read(procfd, pid, "cmdline", b);
	free(procfs_link(procfd, pid, "exe"));
	free(procfs_link(procfd, pid, "cwd"));
	return 0;
}

static void cmd_details(const char *entry)
{
	/* the pids holding entry, found once */
	enum pids_item env_items[] = { PIDS_ID_PID, PIDS_ENVIRON_V };
	struct pids_info *info = NULL;
	unsigned *pids = NULL;
	int np = 0;
	if (procps_pids_new(&info, env_items, 2) == 0) {
		struct pids_fetch *f = procps_pids_reap(info, PIDS_FETCH_TASKS_ONLY);
		pids = calloc(f ? (size_t)f->counts->total + 1 : 1, sizeof *pids);
		for (int i = 0; f && pids && i < f->counts->total; i++)
			if (has(PIDS_VAL(1, strv, f->stacks[i], info), entry))
				pids[np++] = (unsigned)PIDS_VAL(0, s_int, f->stacks[i], info);
		procps_pids_unref(&info);
	}
	struct sbuf b = { 0 };
	double t_raw = bench_now();
	long n_raw = 0;
	for (int i = 0; i < np; i++)
		n_raw += raw_details((pid_t)pids[i], &b) == 0;
	t_raw = bench_now() - t_raw;
	sbuf_free(&b);
	enum pids_item items[] = { PIDS_ID_PID, PIDS_ID_PPID, PIDS_ID_PGRP, PIDS_STATE, PIDS_TICS_BEGAN,
				   PIDS_ID_EUID, PIDS_CMD, PIDS_CMDLINE, PIDS_EXE };
	double t_lp = bench_now();
	long n_lp = 0;
	if (procps_pids_new(&info, items, sizeof items / sizeof *items) == 0) {
		/* procps_pids_select takes at most FILL_ID_MAX (255) pids a call */
		for (int i = 0; i < np && n_lp >= 0; i += 200) {
			struct pids_fetch *f = procps_pids_select(info, pids + i, np - i < 200 ? np - i : 200,
								  PIDS_SELECT_PID);
			n_lp = f ? n_lp + f->counts->total : -1;
		}
		procps_pids_unref(&info);
	}
	t_lp = bench_now() - t_lp;
	/* why each was still running, as a reap describes a leak: libproc2 (dlopen and
	 * procps_pids_new at the first, then one procps_pids_select each) plus TracerPid and the
	 * identity re-check; the first leak's cost apart */
	double t_first = bench_now(), t_why = 0;
	long n_why = 0;
	int first = 1;
	struct why *w = why_new();
	for (int i = 0; w && i < np; i++) {
		struct reaper_proc p = { .pid = (pid_t)pids[i] };
		struct reaper_stat st;
		if (procfs_stat(procfd, p.pid, &st) < 0)
			continue;
		p.start_time = st.start_time;
		double t1 = bench_now();
		why_gather(w, procfd, &p);
		if (first)
			t_first = bench_now() - t_first, first = 0;
		else
			t_why += bench_now() - t1;
		n_why += p.why_read && (p.why & REAPER_WHY_READ_SIGNALS);
		why_clear(&p);
	}
	why_free(w);
	printf("{\"details_raw\": [%.9f, %ld], \"details_libproc2\": [%.9f, %ld], \"why_libproc2\": [%.9f, %ld, %.9f]}\n",
	       t_raw, n_raw, t_lp, n_lp, t_why, n_why, first ? 0.0 : t_first);
	fflush(stdout);
	free(pids);
}

int main(void)
{
	/* reaper_scan holds a pidfd per match */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	procfd = procfs_open();
	if (procfd < 0)
		return 1;
	char line[4096];
	unsigned round = 0;
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "scan ", 5) == 0)
			cmd_scan(line + 5, round++);
		else if (strncmp(line, "details ", 8) == 0)
			cmd_details(line + 8);
		else if (strcmp(line, "quit") == 0)
			break;
	}
	return 0;
}
