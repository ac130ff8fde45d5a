/* SPDX-License-Identifier: MIT */
/* cgroup: the cgroup v2 pieces the finder and the reap share (the public calls are in
 * reaper.h, section cgroup v2). */
#ifndef REAPER_CGROUP_H
#define REAPER_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

/* Called by cgroup_walk: enter with a cgroup's own descriptor (name NULL) before the cgroups
 * below it, leave with its parent's descriptor and its name there after them. 0 goes on;
 * -ENOENT or -ENODEV says the cgroup is gone (the walk goes on without it); any other
 * negative value ends the walk with it. */
typedef int (*cgroup_visit_fn)(void *ctx, int dfd, const char *name);
/* Walk the cgroup at path and every cgroup below it, parents entered before their children
 * and left after them (enter or leave may be NULL; path itself is entered, never left). No
 * depth limit, and a bounded number of descriptors however deep the tree. 0 or -errno. */
int cgroup_walk(const char *path, cgroup_visit_fn enter, cgroup_visit_fn leave, void *ctx);
/* Append the pids of cgroup.procs of path and of every cgroup below it to *v (grown with
 * realloc; *n used, *cap allocated). 0 or -errno (-ENOENT: path is gone). */
int cgroup_members(const char *path, pid_t **v, size_t *n, size_t *cap);
struct pidref;
/* 1 when the pinned process ref is listed in path or below now (a listing read before it was
 * pinned may name an earlier holder of its pid), 0 when not, -errno. *v, *cap: a buffer kept
 * by the caller for the listing. */
int cgroup_holds(const char *path, const struct pidref *ref, int procfd, pid_t **v, size_t *cap);
/* Move the pinned process ref (a member of path or of a cgroup below it) into the cgroup
 * directly above path, all its threads. 0, -ESRCH when ref is gone, or -errno. */
int cgroup_move_up(const char *path, const struct pidref *ref, int procfd);
/* open path/cgroup.events for reading (poll it for POLLPRI). fd or -errno. */
int cgroup_events_open(const char *path);
/* Read "populated" and "frozen" (either pointer may be NULL) from an open cgroup.events. */
int cgroup_events_read(int fd, int *populated, int *frozen);
/* Write val to path/file. 0 or -errno (-ENOENT: the kernel has no such file). */
int cgroup_write(const char *path, const char *file, const char *val);
/* 1 when the calling process's cgroup is path or below it, 0 when not, -errno. */
int cgroup_holds_self(const char *path);
/* Start fn(arg) in a child that begins inside the cgroup at path and runs on our memory (and
 * our stack) until it execs or exits; we resume then, as after vfork: no copy of our memory
 * for a child that only execs. Its pid, or -errno; -ENOSYS where this cannot be done (no
 * clone3 or no CLONE_INTO_CGROUP, another architecture, valgrind, seccomp): fork then. */
pid_t cgroup_vfork(const char *path, int (*fn)(void *), void *arg);

#endif
