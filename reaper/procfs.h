/* SPDX-License-Identifier: MIT */
/* procfs: the raw /proc reads of libreaper (openat on one /proc dirfd, no stdio). */
#ifndef REAPER_PROCFS_H
#define REAPER_PROCFS_H

#include "reaper.h"
#include "sbuf.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- /proc parsers (pure functions: tests and fuzzing call them directly) ---------- */

struct reaper_stat {
	pid_t pid, ppid, pgrp, session;
	char state;
	uint64_t start_time;
	char comm[64];
	uint64_t tty_nr;               /* field 7: the controlling terminal's device number */
	unsigned long flags;           /* field 9 (PF_*); 0x00200000 marks a kernel thread */
	uint64_t utime, stime;         /* fields 14, 15: CPU time in clock ticks */
	long num_threads;              /* field 20: a zombie leader with live threads counts > 1 */
	uint64_t rss;                  /* field 24: resident pages (0 when not shown) */
	uint64_t env_start, env_end;   /* fields 50, 51 (0 when not shown: no mm, no permission,
	                                  or an exec that has not laid out the new stack yet) */
};
/* Parse the text of /proc/PID/stat (comm may hold spaces, newlines and ')'). */
int reaper_parse_stat(const char *buf, size_t len, struct reaper_stat *st);
/* 1 when the NUL-separated environ block holds exactly the entry "NAME=VALUE". */
int reaper_environ_has(const char *environ, size_t len, const char *entry, size_t entry_len);
/* The value of NAME in an environ block, or NULL; *vlen gets its length. */
const char *reaper_environ_get(const char *environ, size_t len, const char *name, size_t *vlen);

/* ---- reading /proc ------------------------------------------------------------------- */

/* open("/proc") as a directory fd. */
int procfs_open(void);
/* Read /proc/PID/stat into st. -ENOENT/-ESRCH when the process is gone. procfd -1: "/proc". */
int procfs_stat(int procfd, pid_t pid, struct reaper_stat *st);
/* Read all of /proc/PID/WHAT (what may be "environ", "cmdline", "task/T/children", ...) into
 * b, replacing what it held. Returns the length (b->p is NUL-terminated after it) or -errno. */
ssize_t procfs_read(int procfd, pid_t pid, const char *what, struct sbuf *b);
/* The inode number of /proc/PID/what ("" for the directory itself); 0, or -errno. */
int procfs_ino(int procfd, pid_t pid, const char *what, unsigned long *ino);
/* Read all of a /proc file that is not a process's (path relative to procfd, e.g. "stat"). */
ssize_t procfs_read_file(int procfd, const char *path, struct sbuf *b);
/* The pids of a whitespace-separated list (task/T/children, cgroup.procs; text NUL-terminated
 * at len), appended to *v (grown with realloc: *n used, *cap allocated). 0 or -ENOMEM. */
int procfs_parse_pids(const char *text, size_t len, pid_t **v, size_t *n, size_t *cap);
/* The children of every thread of pid (task/T/children), appended to *kids (grown with
 * realloc: *nk used, *ck allocated); b holds the reads. A thread gone meanwhile lists none,
 * and the worst failure of a read goes into *failed (-errno, EMFILE/ENFILE/ENOMEM first; left
 * as it was when none failed). 0; -ESRCH when pid's tasks cannot be listed (gone), another
 * -errno from opening them; -ENOMEM when *kids cannot grow. */
int procfs_children(int procfd, pid_t pid, struct sbuf *b, pid_t **kids, size_t *nk, size_t *ck, int *failed);
/* readlink /proc/PID/WHAT into a new string ("" when unreadable). */
char *procfs_link(int procfd, pid_t pid, const char *what);
/* Now in the clock of a process's start time (stat field 22): ticks (sysconf _SC_CLK_TCK)
 * since boot. */
uint64_t procfs_tick_now(long ticks);
/* Seconds since boot. */
double procfs_uptime(int procfd);

#endif
