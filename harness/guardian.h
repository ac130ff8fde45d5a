/* SPDX-License-Identifier: MIT */
/* guardian: makes a run's processes die with reaper even when reaper is SIGKILLed.
 *
 * A small process, our child in a process group of its own (so job-control and process-group
 * signals meant for the run miss it), holds the read end of a pipe whose only write end
 * reaper holds. When reaper dies, the kernel closes that end; the guardian sees EOF
 * and reaps by the run's REAPER_RUN marker (identity-verified, SIGKILL). A normal stop writes
 * one byte first, and the guardian exits without looking. */
#ifndef HARNESS_GUARDIAN_H
#define HARNESS_GUARDIAN_H

#include "reaper/pidref.h"
#include "reaper/reaper.h"

/* The run's rules the guardian's reap keeps (referenced, not copied: the guardian has its own
 * copy of our memory from the moment it starts). */
struct guardian_rules {
	const struct reaper_pattern *patterns; /* --keep, --allow */
	size_t npatterns;
	const struct reaper_origin *origin;    /* where the run began (NULL: not known) */
	int kill_moved_in;                     /* --kill-moved-in */
	int report_only;                       /* --report-only: signal nothing */
};

/* Start the guardian for marker ("REAPER_RUN=id") and the run's cgroup (cgroup: its
 * directory, "" for none; it may be made after this, or never): on owner death it reaps by
 * the marker and the cgroup under the run's rules (what is kept or moved in is spared, the
 * cgroup frozen and killed around it), and removes the cgroup; procfd: our /proc (-1: none
 * open yet), where it is pinned. Returns the pipe's write end
 * and the guardian pinned in *guardian, or -errno (with a warning) when it could not be
 * started. */
int guardian_start(const char *marker, const char *cgroup, const struct guardian_rules *rules, int procfd,
		   struct pidref *guardian);
/* Tell the guardian the run ended normally (it removes the run's cgroup if that is empty, and
 * exits) and close *fd (set to -1): from here on nothing of the run is reaped on owner death.
 * Once the run's reap is over, so that the guardian exits while reaper writes its reports. */
void guardian_release(int *fd);
/* guardian_release (when fd is still open), then wait (boundedly) until the guardian has
 * exited, and collect it: reaper leaves no process of its own behind when it returns. */
void guardian_stop(int fd, struct pidref *guardian);

/* cmd_run, before anything else (a getenv's pointer into it): our environment's strings, as
 * /proc/PID/environ shows them, are moved to the heap and zeroed there, so that a guardian on
 * our memory shows no environment (environ and getenv work as before). Where the guardian is
 * a fork instead, nothing is done; so too in another reaper's run (REAPER_RUN set), where we
 * must show its marker, and the guardian is a fork. */
void guardian_hide_environ(void);

/* The subcommand a guardian on reaper's memory execs for its work (owner death, or a release
 * that finds the cgroup not empty): `reaper __guardian ...`, by guardian_start only. */
#define GUARDIAN_SUBCOMMAND "__guardian"
int guardian_main(int argc, char **argv);

#endif
