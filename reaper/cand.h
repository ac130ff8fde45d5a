/* SPDX-License-Identifier: MIT */
/* cand: one process a reap has found, held by its identity, and what the reap did to it. */
#ifndef REAPER_CAND_H
#define REAPER_CAND_H

#include "pidref.h"
#include "reaper.h"

struct cand {
	struct pidref ref;
	struct reaper_proc info;
	unsigned live : 1;      /* not exited yet (and not kept) */
	unsigned term_sent : 1;
	unsigned kill_sent : 1;
	unsigned stopped : 1;   /* we sent SIGSTOP */
	unsigned collected : 1; /* its zombie was collected by us */
	unsigned polled : 1;    /* its exit is looked for by polling (no pidfd or no epoll watch) */
	unsigned env_read : 1;  /* its environment was read when it was pinned (info.test from it) */
	unsigned unexeced : 1;  /* pinned between its fork and its exec: comm and environ its parent's */
	unsigned described : 1; /* cmdline, exe, cwd, uid and test were read (describe_cand) */
	unsigned cmd_pinned : 1; /* its cmdline was read under its pin (by the pass gen) */
	/* its cmdline, exe, cwd and uid were read under its pin (by the pass gen), before the
	 * stat that showed it had not exec'd */
	unsigned details_pinned : 1;
	unsigned gen;           /* the pass (scanner.pass.gen) that pinned it */
};

/* Close a candidate's pidfd and free its strings. */
void cand_clear(struct cand *c);

#endif
