/* SPDX-License-Identifier: MIT */
/* scanner: what finds the processes the finders match, one pass over /proc at a time. */
#ifndef REAPER_SCANNER_H
#define REAPER_SCANNER_H

#include "candset.h"
#include "pidref.h"
#include "procfs.h"
#include "reaper.h"

#include <dirent.h>

#define PF_KTHREAD 0x00200000 /* stat flags: a kernel thread */

/* What one scan needs; lives for a whole reap. */
struct scanner {
	int procfd;
	int outer_procfd; /* reaper_opts.outer_procfd: where each match's outer_pid is read (-1: none) */
	DIR *dir;
	pid_t self;
	pid_t ancestors[64];
	size_t nanc;
	const struct reaper_finder *f;
	size_t nf;
	size_t elen[32];
	uint32_t env_mask, tree_mask, call_mask, cgroup_mask;
	uint32_t tree_marked; /* tree finders with a marker: they judge by the environment */
	/* the oldest origin of the marker finders when every one has an origin: a scan then reads
	 * the environment of the pids given out since it only (NULL: of every process) */
	const struct reaper_origin *origin;
	int want_uid; /* the uid of a marker-only match is needed when it is found (foreign) */
	int brief;    /* a match is described by its cmdline alone (a listing shows no more) */
	struct reaper_ident *ids; /* what the REAPER_FIND_CALL finders returned */
	size_t ids_cap;
	/* with a cgroup finder the reap waits on the cgroup: the /proc-wide marker scan is
	 * left out of scanner_scan while this is not 0 (1: still to run once, -1: ran) */
	int env_deferred;
	pid_t *cgpids; /* cgroup members, reused by every scan */
	size_t cgcap;
	pid_t *cgagain; /* members listed again to check one pinned late */
	size_t cgagain_cap;
	const struct reaper_pattern *patterns;
	size_t npatterns;
	size_t *pattern_hits;
	struct sbuf buf, aux;
	long ticks;
	int starved; /* a pidfd could not be opened (EMFILE): rescan sooner */
	unsigned gen; /* scans so far */
	/* start-time tick when this scan began: a process that started before it held its pid
	 * through every read of the scan, so what was read about that pid was about it; a
	 * younger one has the fact read again once it is pinned */
	uint64_t tick0;
	/* positive errno when this scan could not read all it had to (descriptors, memory) or
	 * could not judge a process in time: what it found may not be all there is */
	int scan_err;
	size_t unjudged;         /* processes the last scan could not judge (EAGAIN) */
	pid_t *pending;          /* environments that could not be judged yet (an exec under way) */
	size_t npending, cpending;
	/* pidfds candidates may hold: the rest are held by pid + start time (polled, and a
	 * signal to a non-child opens a pidfd just for it), so a scan always has descriptors
	 * left to read /proc with */
	size_t pidfd_budget;
	/* the tree finders' roots, pinned when the scan began (pid 0: the caller, or gone) */
	struct pidref roots[32];
	/* zombie children of the caller when the reap began: exited-and-left by the host, their
	 * statuses are never ours. A zombie child that appears later (an orphan adopted and dead
	 * between two scans) is found and collected like any other. */
	pid_t *host_zombies;
	size_t nhost_zombies;
	/* kthreadd's children (read with the first environment), sorted: an empty environment
	 * there is a kernel thread's, with no stat read to tell it from a zombie leader's */
	pid_t *kthreads;
	size_t nkthreads;
	int kthreads_read;
	/* ancestors read during the current scan (candidates share their ancestry): pid -> its
	 * parent and comm, direct-mapped by pid, emptied at the start of every scan */
	struct {
		pid_t pid, ppid;
		char comm[64];
	} anc_cache[64];
	/* the ancestry line of the parent last asked about in the current scan (-1: none yet):
	 * the matches of one scan mostly share their parent */
	pid_t anc_last;
	char anc_line[512];
	/* the caller's own children (reaper_opts.host_children): never collected */
	const pid_t *host;
	size_t nhost;
	/* per tree finder with a marker: the value of its NAME that root was started with
	 * (NULL when root's environment had none) */
	char *tree_inherited[32];
	/* never the caller's: the identities and the group reaper_opts names, and the finders
	 * that match nothing in the caller's sessions (its own and its ancestors'); the pipes on
	 * its fd 0, 1 and 2 (inode, and the access mode of the caller's end) find its pipeline */
	const struct reaper_ident *exclude;
	size_t nexclude;
	pid_t exclude_pgrp, sessions[8];
	size_t nsessions;
	uint32_t outside_session;
	struct {
		unsigned long ino;
		int acc;
	} pipes[3];
	size_t npipes;
	/* the members of the caller's pipeline past its partners (`reaper | tee | cat`: cat),
	 * found the scan they were first looked for in (pl_gen - 1; 0: never) */
	struct reaper_ident *pl_members;
	size_t npl_members;
	unsigned pl_gen;
	/* called for each newly added live candidate (the reap registers its pidfd) */
	void (*added)(void *ctx, size_t idx);
	void *ctx;
};

int scanner_init(struct scanner *sc, const struct reaper_finder *f, size_t nf,
		 const struct reaper_pattern *patterns, size_t npatterns);
void scanner_done(struct scanner *sc);
/* One pass of every finder; adds what is new. Returns how many were added, or -errno. */
int scanner_scan(struct scanner *sc, struct candset *cs);
/* Describe a candidate that goes into a report or is about to be signalled: its cmdline,
 * exe, cwd and test as they are now (it may have exec'd since it was found), its uid unless
 * read already, plus its state and comm when it was pinned by an earlier scan. Read through its pinned identity: when
 * it is no longer the process pinned after the reads, nothing read is used. 0 or -ENOMEM. */
int scanner_describe(struct scanner *sc, struct cand *c);

/* ---- shared by the scanner's files (scanner.c, identify.c, finder.c) ------------------ */

/* scanner.c: the reads every finder uses */
void scanner_read_failed(struct scanner *sc, ssize_t r);
int scanner_excluded(struct scanner *sc, pid_t pid);
void scanner_callers(struct scanner *sc, const struct reaper_opts *o);
uint32_t scanner_not_callers(struct scanner *sc, const struct pidref *ref, const struct reaper_stat *st,
			     uint32_t mask);
int scanner_known(const struct scanner *sc, const struct candset *cs, pid_t pid);
ssize_t scanner_environ(struct scanner *sc, pid_t pid);
int scanner_children(struct scanner *sc, pid_t pid, pid_t **kids, size_t *nk, size_t *ck);
int pid_in_list(const pid_t *v, size_t n, pid_t pid);

/* identify.c: a matched pid becomes a candidate (its index), or not (-1), or -errno */
ssize_t identify(struct scanner *sc, struct candset *cs, pid_t pid, uint32_t mask, const char *env,
		 ssize_t envlen, uint64_t want, pid_t parent, const struct pidref *pref);

/* finder.c: each kind of finder */
int finder_tree_inherit(struct scanner *sc, size_t i);
uint32_t finder_tree_keep(const struct scanner *sc, uint32_t bits, const struct reaper_stat *st,
			  const char *env, ssize_t envlen);
uint32_t finder_env_bits(const struct scanner *sc, const char *env, size_t len);
uint32_t finder_env_since(const struct scanner *sc, uint32_t mask, uint64_t start_time);
int finder_pend(struct scanner *sc, pid_t pid);
int finder_in_cgroups(struct scanner *sc, const struct pidref *ref, uint32_t mask);
int finder_scan_env(struct scanner *sc, struct candset *cs);
int finder_scan_tree(struct scanner *sc, struct candset *cs);
int finder_scan_call(struct scanner *sc, struct candset *cs);
int finder_scan_cgroup(struct scanner *sc, struct candset *cs);

#endif
