/* SPDX-License-Identifier: MIT */
/* scanner: what the finder kinds share while they look for processes: the /proc reader, the
 * pass under way, the caller (never a candidate), the reap's finders and patterns, and where
 * a new candidate is told of. Set up once per reap (finders_open); one pass of every kind at a
 * time (finders_scan). */
#ifndef REAPER_SCANNER_H
#define REAPER_SCANNER_H

#include "callers.h"
#include "candset.h"
#include "finder.h"
#include "reader.h"
#include "reaper.h"

/* One pass of every finder over /proc. */
struct pass {
	unsigned gen; /* passes so far (this one's number) */
	/* start-time tick when this pass began: a process that started before it held its pid
	 * through every read of the pass, so what was read about that pid was about it; a
	 * younger one has the fact read again once it is pinned */
	uint64_t tick0;
	int starved; /* a pidfd could not be opened (EMFILE): rescan sooner */
	/* positive errno when this pass could not read all it had to (descriptors, memory) or
	 * could not judge a process in time: what it found may not be all there is */
	int err;
	/* ancestors read during this pass (candidates share their ancestry): pid -> its parent
	 * and comm, direct-mapped by pid */
	struct {
		pid_t pid, ppid;
		char comm[64];
	} anc_cache[64];
	/* the ancestry line of the parent last asked about in this pass (-1: none yet): the
	 * matches of one pass mostly share their parent */
	pid_t anc_last;
	char anc_line[512];
};

struct scanner {
	struct reader rd;
	struct pass pass;
	struct callers callers;
	const struct reaper_finder *f;
	size_t nf;
	struct finder_kind *kinds[FINDER_KINDS]; /* NULL: no finder of that kind */
	const struct reaper_pattern *patterns;
	size_t npatterns;
	size_t *pattern_hits;
	int want_uid; /* the uid of a marker-only match is needed when it is found (foreign) */
	int brief;    /* a match is described by its cmdline alone (a listing shows no more) */
	/* a one-pass listing that shows no stat field and judges by none (no identities,
	 * patterns, host children or origins to check; a process group or the sessions are
	 * asked of the kernel by pid): a marker
	 * match is pinned by its pidfd alone, without its stat, when its environment is proven
	 * its own another way (identify) */
	int stat_free;
	/* a stat-free listing's matches pinned in this pass whose environment is still to be
	 * proven theirs: proven together when the marker scan ends (identify_settle), by no task
	 * having been created since the pass's first match (forks0: the count then) */
	struct unproven {
		struct cand c;
		struct finder_kind *by;
		uint32_t mask;          /* what the listing matched */
		unsigned long dir_ino;  /* its /proc directory's inode as listed */
	} *unproven;
	size_t nunproven, cunproven;
	uint64_t forks0;
	int origin_state; /* forks0: 0 not read in this pass, 1 read, -1 cannot be had */
	/* every match is described in the pass that finds it (a scan that only reports, or one
	 * whose patterns judge it): its details may be read when it is pinned */
	int describe_now;
	/* the match pinned last had not exec'd: with describe_now, the next one's details are
	 * read under its pin, before its stat (identify), as a suite's forked copies are alike */
	int pin_details;
	int outer_procfd; /* reaper_opts.outer_procfd: where each match's outer_pid is read (-1) */
	/* with a cgroup finder the reap waits on the cgroup: the /proc-wide marker scan is left
	 * out of a pass while this is not 0 (1: still to run once, -1: ran) */
	int env_deferred;
	/* the reap's cgroup.events descriptor per finder (-1: none; NULL: none at all), open
	 * for its wait: a cgroup finder reads "populated" there instead of opening its own */
	const int *cgroup_events;
	/* pidfds candidates may hold: the rest are held by pid + start time (polled, and a
	 * signal to a non-child opens a pidfd just for it), so a pass always has descriptors
	 * left to read /proc with; counted when the first one is pinned (scanner_budget) */
	size_t pidfd_budget;
	int budget_counted;
	/* zombie children of the caller when the reap began: exited-and-left by the host, their
	 * statuses are never ours. A zombie child that appears later (an orphan adopted and dead
	 * between two passes) is found and collected like any other. */
	pid_t *host_zombies;
	size_t nhost_zombies;
	/* the caller's own children (reaper_opts.host_children): never collected */
	const pid_t *host;
	size_t nhost;
	/* called for each newly added live candidate (the reap registers its pidfd) */
	void (*added)(void *ctx, size_t idx);
	void *ctx;
};

/* Set up the shared part for finders f (validated by their kinds): the reader, the pidfd
 * budget, the host's zombies. 0 or -errno; scanner_done in either case. */
/* The pidfds candidates may hold (pidfd_budget), counted on the first call. */
size_t scanner_budget(struct scanner *sc);
int scanner_init(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns);
void scanner_done(struct scanner *sc);
/* A new pass begins. */
void scanner_pass(struct scanner *sc);
/* The finders of kind k (0 when there are none). */
uint32_t scanner_mask(const struct scanner *sc, enum finder_kinds k);
/* The marker finders an environment holds, for a process started at start_time. */
uint32_t scanner_environ_bits(const struct scanner *sc, const char *env, size_t len, uint64_t start_time);
/* A pid is new unless the process holding it now is a candidate already: the same
 * identity, not just the same number (a candidate's pid may have passed to another). */
int scanner_known(const struct scanner *sc, const struct candset *cs, pid_t pid);

#endif
