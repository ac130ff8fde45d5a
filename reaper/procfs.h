/* procfs: the raw /proc reads of libreaper (openat on one /proc dirfd, no stdio). */
#ifndef REAPER_PROCFS_H
#define REAPER_PROCFS_H

#include "reaper.h"

#include <stddef.h>
#include <sys/types.h>

/* A growable read buffer, reused across processes on the hot path. */
struct pbuf {
	char *p;
	size_t cap;
};

/* open("/proc") as a directory fd. */
int procfs_open(void);
/* Read /proc/PID/stat into st. -ENOENT/-ESRCH when the process is gone. procfd -1: "/proc". */
int procfs_stat(int procfd, pid_t pid, struct reaper_stat *st);
/* Read all of /proc/PID/WHAT (what may be "environ", "cmdline", "task/T/children", ...).
 * Returns the length (b->p is NUL-terminated after it) or -errno. */
ssize_t procfs_read(int procfd, pid_t pid, const char *what, struct pbuf *b);
/* readlink /proc/PID/WHAT into a new string ("" when unreadable). */
char *procfs_link(int procfd, pid_t pid, const char *what);
/* Seconds since boot. */
double procfs_uptime(int procfd);
void pbuf_free(struct pbuf *b);

#endif
