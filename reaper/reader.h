/* SPDX-License-Identifier: MIT */
/* reader: a scanner's look at /proc. One /proc directory and its listing, the buffers the
 * reads go into, a pid's environment as a finder judges it, the children of a pid, and what
 * is read once at its first need: the caller's ancestry, the kernel threads. */
#ifndef REAPER_READER_H
#define REAPER_READER_H

#include "sbuf.h"

#include <dirent.h>
#include <sys/types.h>

#define PF_KTHREAD 0x00200000 /* stat flags: a kernel thread */

struct reader {
	int procfd;
	DIR *dir;         /* the listing of /proc (reader_dir), NULL until then */
	pid_t self;
	long ticks;       /* clock ticks a second (start times are in them) */
	struct sbuf buf;  /* the environment last read (reader_environ) */
	struct sbuf aux;  /* every other read */
	/* positive errno once a read could not be made for want of descriptors or memory: what
	 * was looked for may not all have been seen (the pass clears it) */
	int err;
	pid_t anc[64];    /* the caller, then its ancestors (read at the first question) */
	size_t nanc;
	/* kthreadd's children, sorted (read with the first environment): an empty environment
	 * there is a kernel thread's, with no stat read to tell it from a zombie leader's */
	pid_t *kthreads;
	size_t nkthreads;
	int kthreads_read;
};

/* Open /proc for a reader (rd is cleared first). 0 or -errno. */
int reader_open(struct reader *rd);
/* The listing of /proc, opened at the first call; NULL (errno set) when it cannot be. */
DIR *reader_dir(struct reader *rd);
void reader_close(struct reader *rd);
/* Note a failed read (r: its -errno): a lack of descriptors or memory is remembered. */
void reader_failed(struct reader *rd, ssize_t r);
/* 1 when pid is the caller or one of its ancestors (never candidates). */
int reader_caller(struct reader *rd, pid_t pid);
/* The caller and its ancestors, the caller first; *n gets how many. */
const pid_t *reader_callers(struct reader *rd, size_t *n);
/* pid's environment into rd->buf: its length; 0 when there is none to judge (a kernel
 * thread, a zombie without live threads, an environment that is truly empty or whose memory
 * is gone, a process gone); -EAGAIN while it cannot be judged yet (an exec is replacing the
 * memory it lives in); other -errno when it cannot be read. */
ssize_t reader_environ(struct reader *rd, pid_t pid);
/* Children of every thread of pid, appended to *kids (grown as needed). 0 or -ENOMEM. */
int reader_children(struct reader *rd, pid_t pid, pid_t **kids, size_t *nk, size_t *ck);
/* The uid /proc gives the process (its owner for access checks); -1 when gone. */
uid_t reader_owner(const struct reader *rd, pid_t pid);

int pid_in_list(const pid_t *v, size_t n, pid_t pid);

#endif
