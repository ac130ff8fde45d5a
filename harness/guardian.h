/* SPDX-License-Identifier: MIT */
/* guardian: makes a run's processes die with reaper even when reaper is SIGKILLed.
 *
 * A small process, detached into its own session (so job-control and process-group signals
 * meant for the run miss it) and not our child, holds the read end of a pipe whose only
 * write end reaper holds. When reaper dies, the kernel closes that end; the guardian sees EOF
 * and reaps by the run's REAPER_RUN marker (identity-verified, SIGKILL). A normal stop writes
 * one byte first, and the guardian exits without looking. */
#ifndef HARNESS_GUARDIAN_H
#define HARNESS_GUARDIAN_H

#include "reaper/pidref.h"

/* Start the guardian for marker ("REAPER_RUN=id") and the run's cgroup (cgroup: its
 * directory, "" for none; it may be made after this, or never): on owner death it kills the
 * cgroup (when it exists) in one write, reaps by the marker and the cgroup, and removes it. Returns the pipe's write end and the
 * guardian pinned in *guardian, or -errno (with a warning) when it could not be started. */
int guardian_start(const char *marker, const char *cgroup, struct pidref *guardian);
/* Tell the guardian the run ended normally, close fd, and wait (boundedly) until it has
 * exited: reaper leaves no process of its own behind when it returns. */
void guardian_stop(int fd, struct pidref *guardian);

#endif
