/* SPDX-License-Identifier: MIT */
/* state: the --state document of `reaper run` (JSON, mode 0600, replaced atomically). */
#ifndef HARNESS_STATE_H
#define HARNESS_STATE_H

#include <sys/types.h>

struct run_state {
	const char *path;     /* NULL: no document */
	int failed;           /* warned once; written no more */
	const char *phase;    /* starting running draining terminating exited */
	const char *phases[8]; /* every phase entered, in order: a poller cannot miss one */
	int nphases;
	const char *run_id;
	pid_t command_pid;
	pid_t reaper_pid;     /* 0: getpid() */
	pid_t ns_reaper_pid, ns_command_pid; /* --isolate: their pids in the run's namespace (0: none) */
	pid_t guardian_pid;   /* 0: none (PID 1, it could not be started, or it ended early) */
	long active_children, adopted_children;
	unsigned long orphaned_children_total, reaped_children_total, reaped_orphans_total;
	int escalated;
	int termination_signal; /* 0: none */
	int runner_exit_code;   /* -1: not known yet */
	unsigned long leaks;
	double timeout, grace;  /* the settings in effect, after flags, environment and clamping */
	int leak_exit_code;
	const char *tracking;   /* "cgroup" or "proc" */
};

/* Enter phase (recorded once in phases[] when it differs from the current one). */
void state_phase(struct run_state *s, const char *phase);
/* Write the document now (when a path is set). A failure is warned about once, with
 * "process state unavailable", and never changes the exit status. */
void state_write(struct run_state *s);

#endif
