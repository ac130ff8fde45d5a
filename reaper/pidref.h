/* SPDX-License-Identifier: MIT */
/* pidref: a process identity (pid + kernel start time + pidfd). Every signal, wait and
 * identity comparison in libreaper goes through here; raw kill() lives nowhere else. */
#ifndef REAPER_PIDREF_H
#define REAPER_PIDREF_H

#include <stdint.h>
#include <sys/types.h>

struct pidref {
	pid_t pid;
	uint64_t start_time; /* stat field 22, clock ticks since boot */
	int fd;              /* pidfd; -1 without pidfd support (then pid + start time alone) */
};
/* A pidref is set while pid > 0; PIDREF_NULL and pidref_done() clear it. */

#define PIDREF_NULL ((struct pidref){ .pid = 0, .start_time = 0, .fd = -1 })

/* A pidref that lives in a block: `_cleanup_(pidref_done) struct pidref ref = PIDREF_NULL;` is
 * released on every path out of it, but for the one that hands it on with TAKE_PIDREF(ref)
 * (its value, leaving PIDREF_NULL behind). */
#define _cleanup_(f) __attribute__((cleanup(f)))
#define TAKE_PIDREF(p)                          \
	({                                      \
		struct pidref *_taken = &(p);   \
		struct pidref _value = *_taken; \
		*_taken = PIDREF_NULL;          \
		_value;                         \
	})

/* Pin the process now at pid whose start time is start_time: open a pidfd, then re-read the
 * start time, so the fd is known to refer to that very process. -ESRCH when it is gone or
 * was replaced; -EMFILE etc. from pidfd_open. procfd: an open /proc (or -1). Where pidfds
 * do not exist (ENOSYS: kernels before 5.3, valgrind 3.19) the pidref holds no fd, every
 * use re-checks the start time first, only the caller's own children can be signalled, and
 * the reap polls such processes for their exit. */
int pidref_open(struct pidref *p, int procfd, pid_t pid, uint64_t start_time);
/* Pin whatever holds pid now and read its stat into st: pidfd_open, read stat, and the fd
 * not yet readable proves the stat was that very process's (a pid cannot change hands while
 * its holder is unreaped); one stat read fewer than pidref_open. A holder that has exited
 * (a zombie) is checked the pidref_open way. -ESRCH when gone; -EMFILE etc. */
struct reaper_stat;
int pidref_open_stat(struct pidref *p, int procfd, pid_t pid, struct reaper_stat *st);
/* pidref_open_stat that also calls reads(ctx) between the pidfd's open and the stat, so the
 * one check after the stat proves what it read the pinned process's, and the stat later than
 * it (a stat that says the process has not exec'd says it had not when they were read):
 * *pinned is 1 when so, 0 when what it read is not known to be the pinned process's (no
 * pidfd, or the holder had exited: read it again through the pin). */
int pidref_open_stat_read(struct pidref *p, int procfd, pid_t pid, struct reaper_stat *st, void (*reads)(void *),
			  void *ctx, int *pinned);
struct sbuf;
/* Read the file what of /proc/PID into b (*n its length or -errno), then pin whatever holds pid
 * by a pidfd alone. Nothing here proves the two the same process, nor that it is still
 * running: the caller proves the pid never changed hands between them (and looks at the pidfd
 * for an exit). No stat is read: the start time stays 0, so pidref_verify fails and nothing may
 * be signalled through it; for a listing. -ESRCH when gone. */
int pidref_read_open(struct pidref *p, pid_t pid, const char *what, int procfd, struct sbuf *b, ssize_t *n);
/* Pin pid by its stat alone (pid + start time, no pidfd: for when descriptors run out);
 * uses are re-checked the way pidfd-less kernels' are, and a signal to a process that is
 * not the caller's child opens a pidfd just for it. -ESRCH when gone. */
int pidref_pin_stat(struct pidref *p, int procfd, pid_t pid, struct reaper_stat *st);
/* 0 while pid still names the same process (zombies included), -ESRCH otherwise. */
int pidref_verify(const struct pidref *p, int procfd);
/* pidref_verify, sharper and cheaper with a pidfd: one that shows no exit answers without
 * reading /proc (an unexited process keeps its pid), and one whose process has been reaped
 * fails even when the pid's new holder started in the same clock tick. */
int pidref_held(const struct pidref *p, int procfd);
/* Verify, then pidfd_send_signal. -ESRCH: gone or replaced, nothing was signalled.
 * Without pidfds only the caller's own children can be signalled (-ENOSYS otherwise). */
int pidref_signal(const struct pidref *p, int procfd, int sig);
/* Signal the process group that the verified process leads (-ESRCH when it is gone,
 * replaced, or no longer leads a group of its own). Only safe for an unreaped child. */
int pidref_signal_group(const struct pidref *leader, int procfd, int sig);
/* 1 when the process has exited (zombie or reaped), 0 while it runs: a zombie leader whose
 * other threads run is running. */
int pidref_exited(const struct pidref *p, int procfd);
/* Collect its zombie when the caller is its parent: 1 collected, 0 not exited yet,
 * -ECHILD not our child (or already collected). Never touches any other child. */
int pidref_collect(const struct pidref *p, int procfd, int *status);
/* Its pid in the PID namespace of the /proc at procfd (an ancestor namespace's: a process of a
 * namespace of its own has a pid in each one above it), read from its pidfd's fdinfo there;
 * 0 when it is not known (no pidfd, procfd -1, reaped). */
pid_t pidref_pid_in(const struct pidref *p, int procfd);
/* Close the pidfd and clear the pidref. */
void pidref_done(struct pidref *p);

#endif
