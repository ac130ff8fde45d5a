/* SPDX-License-Identifier: MIT */
/* isolate: `reaper run --isolate`, the run in a PID namespace of its own (see isolate.c). */
#ifndef HARNESS_ISOLATE_H
#define HARNESS_ISOLATE_H

/* Fork the reaper into new namespaces as the init of the run's PID namespace.
 * Returns 0 in that init (the run goes on there, as usual; *outer_proc: the caller's /proc,
 * opened before the namespace's own was mounted over it, for the caller's pids of the run's
 * processes, or -1), 1 in the outer reaper once the inner one has ended (*status: its wait
 * status), or a negative errno when the namespaces cannot be had (a message naming the
 * reason is on stderr). */
int isolate_enter(int *status, int *outer_proc);

#endif
