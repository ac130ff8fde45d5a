/* SPDX-License-Identifier: MIT */
/* callers: never the caller's. Besides the caller and its ancestors (reader_caller), the
 * identities and the process group the reap's options name, the finders that match nothing
 * in the caller's sessions (its own and its ancestors'), and the caller's pipeline: the
 * processes at the other end of the pipes on its fd 0, 1 and 2, and what those are linked to
 * by pipes of their own. */
#ifndef REAPER_CALLERS_H
#define REAPER_CALLERS_H

#include "pidref.h"
#include "procfs.h"
#include "reader.h"
#include "reaper.h"

struct callers {
	const struct reaper_ident *exclude;
	size_t nexclude;
	pid_t exclude_pgrp;
	pid_t sessions[8];
	size_t nsessions;
	uint32_t outside_session;
	struct {
		unsigned long ino;
		int acc; /* the access mode of the caller's end */
		int named; /* a named FIFO (`>fifo`): ino is of its file system's, not of a pipe */
		unsigned long long mnt_id; /* a named FIFO's mount (0: not known) */
	} pipes[3];
	size_t npipes;
	int pipes_read;   /* pipes[] holds ours (own_pipes in callers.c) */
	/* the processes of the caller's sessions holding a pipe on fd 0-2, each marked when it is
	 * a member of the caller's pipeline past its partners (`reaper | tee | cat`: cat), as
	 * found in the pass they were last looked for in (pl_pass - 1; 0: never) */
	struct pl_seen {
		struct reaper_ident id;
		int member;
	} *pl_seen;
	size_t npl_seen;
	unsigned pl_pass;
	unsigned pl_rereads; /* the looks again in this pass, for processes the last look missed */
	uint64_t self_start; /* our own start time (0: not read yet) */
	/* the pipes the caller's ancestors hold on fd 0-2, read in pass anc_pass - 1 (0: never) */
	unsigned long anc_pipes[3 * sizeof ((struct reader *)0)->anc / sizeof(pid_t)];
	size_t nanc_pipes;
	unsigned anc_pass;
	/* pipes and memory devices (our /dev/null) the processes looked at in this pass hold on fd
	 * 0-2, each a copy of ours with what it is (a pipe and its end, or no pipe): a process
	 * holding the same file (a suite's leftovers share their stdio) is told by comparing it
	 * with the copy, without reading its links. Closed when the pass ends
	 * (callers_pass_done): never held across a wait. */
	struct {
		int fd;
		unsigned long ino; /* 0: no pipe */
		int acc;
	} seen[4];
	size_t nseen;
	unsigned long long dev_mnt; /* the mount of our /dev/null, where memory devices are copied from */
	int dev_mnt_read;	    /* dev_mnt was read this pass */
	/* the files other than pipes the caller holds on fd 0-2 (what a run inherits from the
	 * caller's side: a CI step's output, a terminal, a log), read at the first need of a pass:
	 * a process holding the same one is told by one compare with our descriptor (kcmp), no
	 * copy taken, no link read. Not its ancestors': their descriptors may change during the
	 * pass, their pids change hands. Cleared when the pass ends. */
	struct {
		pid_t pid; /* ours; 0: compares are refused */
		int fd;
		char link[64];
	} kin[3];
	size_t nkin;
	int kin_read;
	unsigned kin_misses[3]; /* per fd number: compares in a row that found a different file (a cap
				  * ends them for that fd: our fd 1 a pipe, a match's fd 1 is no file of ours) */
	int kin_hint[3]; /* per fd number: the entry that fd last was (-1: none) */
	int by_link;     /* the copies cannot be had here (no pidfd_getfd or kcmp): links only */
	int no_copy;     /* a copy was refused (ptrace rules, descriptors): no more are tried */
	int seen_hint[3]; /* per fd number: the copy that fd last was (-1: it was not copied) */
	int sid_later;    /* the last match whose session was asked was of the caller's: a
			   * match's pipes are read before its session is asked */
};

/* What the caller is, as o (the reap's options) and its standard descriptors say. */
void callers_init(struct callers *cl, struct reader *rd, const struct reaper_opts *o);
void callers_free(struct callers *cl);
/* The pass has ended: the copies of other processes' files it took are closed. */
void callers_pass_done(struct callers *cl);
/* mask without the finders that may not take the process pinned as ref (its stat st): 0 when
 * it is the caller's (what o named, its job, its pipeline). pass: the scan pass it is judged
 * in (the pipeline beyond the partners is read once per pass). */
uint32_t callers_filter(struct callers *cl, struct reader *rd, unsigned pass, const struct pidref *ref,
			const struct reaper_stat *st, uint32_t mask);
/* callers_filter for a process pinned as ref whose stat was not read (its process group and
 * session asked by pid when o names a group or session-bound finders): 0 or -EAGAIN when the
 * answer needs its stat (an identity o named, a member of the pipeline past the partners by
 * its pid, a process gone since its pin), *mask narrowed. */
int callers_filter_unstated(struct callers *cl, struct reader *rd, unsigned pass, const struct pidref *ref,
			    uint32_t *mask);

#endif
