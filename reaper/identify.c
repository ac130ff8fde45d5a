/* SPDX-License-Identifier: MIT */
/* identify: see identify.h. */
#define _GNU_SOURCE
#include "identify.h"
#include "array.h"
#include "describe.h"
#include "origin.h"

#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PF_FORKNOEXEC 0x00000040 /* stat flags: forked, has not exec'd since */

static int pattern_match(struct scanner *sc, const struct reaper_proc *info)
{
	for (size_t i = 0; i < sc->npatterns; i++) {
		const char *g = sc->patterns[i].glob;
		if (fnmatch(g, info->cmdline, 0) == 0 || (info->exe[0] && fnmatch(g, info->exe, 0) == 0)) {
			sc->pattern_hits[i]++;
			return (int)sc->patterns[i].kind;
		}
	}
	return 0;
}

/* What a pin reads of a match before its stat: a listing's cmdline; a report's cmdline, exe,
 * cwd and uid when the match is likely not to have exec'd (details: the one pinned before had
 * not), which a stat after them that says it still has not proves of the process as its
 * environment showed it, with no stat to read again when it is described. */
struct pinned {
	struct scanner *sc;
	pid_t pid;
	int details;
	int pinned;     /* what was read is the pinned process's (pidref_open_stat_read) */
	ssize_t cmdlen; /* its cmdline in sc->rd.aux or -errno; -ENODATA: not read under the pin */
	char *exe, *cwd;
	uid_t uid;
};

static void pinned_reads(void *ctx)
{
	struct pinned *pr = ctx;
	struct reader *rd = &pr->sc->rd;
	pr->cmdlen = procfs_read(rd->procfd, pr->pid, "cmdline", &rd->aux);
	if (pr->details) {
		pr->exe = procfs_link(rd->procfd, pr->pid, "exe");
		pr->cwd = procfs_link(rd->procfd, pr->pid, "cwd");
		pr->uid = reader_owner(rd, pr->pid);
	}
}

static void pinned_done(struct pinned *pr)
{
	free(pr->exe), free(pr->cwd);
}

/* Pin pid: a pidfd while the budget allows (pr read under it), else pid + start time. The
 * matches a listing holds until its pass proves them hold pidfds too: past the budget with
 * them, the pass would be left without the descriptors it reads the caller's pipeline with
 * (its members would be listed). */
static int pin(struct scanner *sc, const struct candset *cs, struct pidref *ref, pid_t pid, struct reaper_stat *st,
	       struct pinned *pr)
{
	int r = -EMFILE;
	size_t held = cs->pidfds + sc->nunproven;
	if (held < scanner_budget(sc))
		r = pidref_open_stat_read(ref, sc->rd.procfd, pid, st, sc->brief || pr->details ? pinned_reads : NULL,
					  pr, &pr->pinned);
	if (!pr->pinned)
		pr->cmdlen = -ENODATA;
	if (r == -EMFILE || r == -ENFILE) {
		if (held < sc->pidfd_budget)
			sc->pass.starved = 1;
		r = pidref_pin_stat(ref, sc->rd.procfd, pid, st);
	}
	return r;
}

/* What its stat says, kept as first seen. */
static void from_stat(struct scanner *sc, struct reaper_proc *pi, pid_t pid, const struct reaper_stat *st,
		      uint32_t mask)
{
	pi->pid = pid;
	pi->ppid = st->ppid;
	pi->pgrp = st->pgrp;
	pi->exit_status = -1;
	pi->start_time = st->start_time;
	pi->state = st->state;
	pi->matched_by = mask;
	double up = procfs_uptime(sc->rd.procfd);
	pi->age = up - (double)st->start_time / (double)sc->rd.ticks;
	if (pi->age < 0)
		pi->age = 0;
}

/* Its fate by the patterns: kept (never signalled; its pidref only says whether it is still
 * it), or alive (allowed or not), or exited already. */
static void set_fate(struct scanner *sc, struct cand *c, const struct reaper_stat *st)
{
	struct reaper_proc *pi = &c->info;
	int pol = pattern_match(sc, pi);
	if (pol == REAPER_KEEP) {
		pi->fate = REAPER_KEPT;
		return;
	}
	pi->allowed = pol == REAPER_ALLOW;
	pi->fate = REAPER_ALIVE;
	/* a leader that has exited while its other threads run on is alive */
	c->live = (st->state != 'Z' && st->state != 'X') || st->num_threads > 1;
	if (!c->live)
		pi->fate = REAPER_EXITED;
}

/* Which finders of m still take the process pinned as ref (st): 0 or -ENOMEM, m->mask
 * narrowed (0: none does). */
static int judge(struct scanner *sc, struct match *m, const struct pidref *ref, const struct reaper_stat *st)
{
	struct finder_kind *k = m->by;
	int r = 0;
	if (m->want && st->start_time != m->want) {
		m->mask = 0; /* the pid has changed hands: not the process meant */
		return 0;
	}
	/* (an exited one is never signalled: collecting it when it is the caller's child is
	 * all that is done with it, so its match stands) */
	int exited = (st->state == 'Z' || st->state == 'X') && st->num_threads <= 1;
	if (st->start_time >= sc->pass.tick0 && !exited && k->recheck && (r = k->recheck(k, sc, m, ref, st)) < 0)
		return r;
	if (m->mask && k->keep && (r = k->keep(k, sc, m, st)) < 0)
		return r;
	/* A zombie child of ours that the host exited and left before the reap: its exit
	 * status is the host's, never ours to take. A kernel thread is the kernel's: no test
	 * starts one (a tree rooted at kthreadd). */
	if ((exited && st->ppid == sc->rd.self && pid_in_list(sc->host_zombies, sc->nhost_zombies, st->pid)) ||
	    (st->flags & PF_KTHREAD))
		m->mask = 0;
	/* never the caller: what it named, its own job, its pipeline */
	if (m->mask)
		m->mask = callers_filter(&sc->callers, &sc->rd, sc->pass.gen, ref, st, m->mask);
	return 0;
}

/* c joins the set (the set takes its strings, or they are freed) and the reap hears of it
 * when it is live. 0 or -errno. */
static int enlist(struct scanner *sc, struct candset *cs, struct cand *c, size_t *idx)
{
	ssize_t i = candset_add(cs, c);
	if (i < 0) {
		cand_clear(c);
		return (int)i;
	}
	*idx = (size_t)i;
	if (cs->v[i].live && sc->added)
		sc->added(sc->ctx, (size_t)i);
	return 0;
}

/* What the reap's options exclude (the run's guardian) is told by its stat alone: no pin for
 * what is never a candidate. */
static int excluded(struct scanner *sc, pid_t pid)
{
	const struct callers *cl = &sc->callers;
	for (size_t i = 0; i < cl->nexclude; i++) {
		struct reaper_stat st;
		if (cl->exclude[i].pid == pid)
			return procfs_stat(sc->rd.procfd, pid, &st) == 0 && st.start_time == cl->exclude[i].start_time;
	}
	return 0;
}

/* A listing's marker match without its stat (scanner.stat_free): pinned by its pidfd, its
 * cmdline read under the pin. The environment was read before the pin, and is proven the
 * pinned process's when the pid never changed hands between the two (what its start time
 * proves otherwise). Two proofs, neither keeping anything open:
 * - no task at all was created since the pass took its origin (before this environment was
 *   read): another process on the pid would be one created since. The count of tasks the
 *   kernel created (/proc/stat "processes") says so for every pid at once, read when the
 *   marker scan ends (identify_settle), which holds the matches until then: nothing a pass
 *   looks at is listed before. Where pid allocation went since proves nothing of one pid:
 *   a process may be put on a pid of its choosing (ns_last_pid written, clone3 with set_tid:
 *   a checkpoint restore does both), outside any window of cyclic allocation.
 * - the listing of /proc gave the inode of the pid's directory before its environment was
 *   read: /proc gives each instance of a process's directory an inode number of its own and
 *   drops an instance once its process is gone, so the directory showing the same inode after
 *   the pin proves the pid never changed hands since: one stat of the directory, for the
 *   match the origin was taken at, and for every one when a task was created during the pass
 *   or the count cannot be read.
 * -EAGAIN when it has to be judged the full way (gone or exited, no cmdline to show, a
 * caller's rule needs its stat, not listed, no proof), else as identify (0 for a match held
 * until the pass proves it). */
static int identify_stat_free(struct scanner *sc, struct candset *cs, struct match *m, size_t *idx)
{
	_cleanup_(pidref_done) struct pidref ref = PIDREF_NULL;
	ssize_t cmdlen;
	unsigned long ino;
	uint32_t matched = m->mask;
	if (!m->dir_ino || m->by->kind != FINDER_ENV || cs->pidfds + sc->nunproven >= scanner_budget(sc))
		return -EAGAIN;
	/* (the origin is taken at the pass's first match, after its environment was read: that
	 * one is proven by its directory; a clean pass takes none) */
	int later = sc->origin_state == 1;
	if (!sc->origin_state)
		sc->origin_state = origin_forks(sc->rd.procfd, &sc->forks0) == 0 ? 1 : -1;
	if (pidref_read_open(&ref, m->pid, "cmdline", sc->rd.procfd, &sc->rd.aux, &cmdlen) < 0)
		return -EAGAIN;
	later = later && ARRAY_RESERVE(sc->unproven, sc->cunproven, sc->nunproven + 1, 64) == 0;
	if (!later && (procfs_ino(sc->rd.procfd, m->pid, "", &ino) < 0 || ino != m->dir_ino))
		return -EAGAIN;
	while (cmdlen > 0 && sc->rd.aux.p[cmdlen - 1] == 0)
		cmdlen--;
	if (cmdlen <= 0) /* its comm is shown instead: in its stat */
		return -EAGAIN;
	int r = callers_filter_unstated(&sc->callers, &sc->rd, sc->pass.gen, &ref, &m->mask);
	if (r < 0 || !m->mask)
		return r;
	/* what the caller's rules asked of it by pid (its process group, its session, its pipes)
	 * and left it matched was the pinned process's answer only while that one was alive: a
	 * match proven now is looked at after them (one held unproven is at the pass's end, by
	 * identify_settle), else a member of the caller's job gone meanwhile would be listed on a
	 * pid whose new holder answered for it */
	if (!later && pidref_exited(&ref, sc->rd.procfd))
		return -EAGAIN;
	struct cand c = { .gen = sc->pass.gen, .live = 1, .env_read = 1 };
	struct reaper_proc *pi = &c.info;
	*pi = (struct reaper_proc){ .pid = m->pid, .matched_by = m->mask, .exit_status = -1, .uid = (uid_t)-1,
				    .fate = REAPER_ALIVE };
	pi->outer_pid = pidref_pid_in(&ref, sc->outer_procfd);
	c.ref = TAKE_PIDREF(ref);
	struct reaper_stat st = { .pid = m->pid };
	if (describe_found(sc, pi, &st, m->env, m->envlen) < 0 || describe_pinned(&c, &sc->rd.aux, cmdlen) < 0) {
		cand_clear(&c);
		return -ENOMEM;
	}
	if (later) {
		sc->unproven[sc->nunproven++] = (struct unproven){ .c = c, .by = m->by, .mask = matched,
								   .dir_ino = m->dir_ino };
		return 0;
	}
	if ((r = enlist(sc, cs, &c, idx)) < 0)
		return r;
	return 1;
}

/* Which of the n matches held unproven have exited since they were pinned (their pidfds
 * readable): one poll for all of them; exited[i] set, or each asked alone when that poll cannot
 * be made. Shown as live, each was then. 0 or -ENOMEM. */
static int unproven_exited(struct scanner *sc, size_t n, char *exited)
{
	struct pollfd *v = malloc(n * sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct pollfd){ .fd = sc->unproven[i].c.ref.fd, .events = POLLIN };
	int r = poll(v, (nfds_t)n, 0);
	for (size_t i = 0; i < n; i++)
		exited[i] = r < 0 ? (char)pidref_exited(&sc->unproven[i].c.ref, sc->rd.procfd) : v[i].revents != 0;
	free(v);
	return 0;
}

int identify_settle(struct scanner *sc, struct candset *cs, int discard)
{
	size_t n = sc->nunproven;
	uint64_t forks = 0;
	char *exited = n && !discard ? calloc(n, 1) : NULL;
	if (n && !discard && (!exited || unproven_exited(sc, n, exited) < 0)) {
		free(exited);
		for (size_t i = 0; i < n; i++)
			cand_clear(&sc->unproven[i].c);
		sc->nunproven = 0;
		return -ENOMEM;
	}
	/* (a task the kernel creates, a thread included, is counted in the same locked section,
	 * interrupts off, that makes it found by its pid: one a pin found was counted long before
	 * the scan ends) */
	int quiet = n && !discard && origin_forks(sc->rd.procfd, &forks) == 0 && forks == sc->forks0;
	int added = 0, r = 0;
	for (size_t i = 0; i < n; i++) {
		struct unproven *u = &sc->unproven[i];
		/* (the ones after this one still hold their pidfds: a pin below counts them) */
		sc->nunproven = n - i - 1;
		pid_t pid = u->c.info.pid;
		unsigned long ino;
		size_t idx;
		if (discard || r < 0) {
			cand_clear(&u->c);
			continue;
		}
		if (!exited[i] && (quiet ||
				   (procfs_ino(sc->rd.procfd, pid, "", &ino) == 0 && ino == u->dir_ino))) {
			if ((r = enlist(sc, cs, &u->c, &idx)) == 0)
				added++;
			continue;
		}
		/* the pid may have changed hands, or its process has exited: judged the full way,
		 * its environment read again when it is younger than the pass */
		cand_clear(&u->c);
		struct match m = { .pid = pid, .by = u->by, .mask = u->mask, .envlen = -ENODATA };
		int k = identify(sc, cs, &m, &idx);
		if (k < 0)
			r = k;
		else
			added += k;
	}
	free(exited);
	return r < 0 ? r : added;
}

int identify(struct scanner *sc, struct candset *cs, struct match *m, size_t *idx)
{
	_cleanup_(pidref_done) struct pidref ref = PIDREF_NULL;
	struct reaper_stat st;
	if (excluded(sc, m->pid))
		return 0;
	if (sc->stat_free) {
		int r = identify_stat_free(sc, cs, m, idx);
		if (r != -EAGAIN)
			return r;
	}
	/* (a match by its environment only: one by a tree or a cgroup has it read when described) */
	_cleanup_(pinned_done) struct pinned pr = { .sc = sc, .pid = m->pid, .cmdlen = -ENODATA, .uid = (uid_t)-1,
						    .details = !sc->brief && sc->describe_now && sc->pin_details &&
								m->env && m->envlen >= 0 };
	int r = pin(sc, cs, &ref, m->pid, &st, &pr);
	if (r < 0) {
		reader_failed(&sc->rd, r);
		return r == -ENOMEM ? r : 0;
	}
	int details = pr.pinned && pr.details && (st.flags & PF_FORKNOEXEC);
	if (!sc->brief)
		sc->pin_details = (st.flags & PF_FORKNOEXEC) != 0;
	if ((r = judge(sc, m, &ref, &st)) < 0 || !m->mask)
		return r;
	struct cand c = { .gen = sc->pass.gen };
	struct reaper_proc *pi = &c.info;
	from_stat(sc, pi, m->pid, &st, m->mask);
	pi->outer_pid = pidref_pid_in(&ref, sc->outer_procfd);
	/* as root, a match by a marker alone is another user's or not at once (foreign); the uid
	 * read is its own only if the pin still holds after the read (-1: gone, nobody's) */
	if (details) {
		pi->uid = pr.uid; /* read under the pin */
	} else {
		pi->uid = sc->want_uid && m->by->kind == FINDER_ENV ? reader_owner(&sc->rd, m->pid) : (uid_t)-1;
		if (pi->uid != (uid_t)-1 && pidref_held(&ref, sc->rd.procfd) < 0)
			pi->uid = (uid_t)-1;
	}
	pi->host_child = st.ppid == sc->rd.self && pid_in_list(sc->host, sc->nhost, m->pid);
	/* an environment read in this pass names its test; the others are read when described */
	c.env_read = m->env && m->envlen >= 0;
	c.unexeced = (st.flags & PF_FORKNOEXEC) != 0;
	pi->environ_unreadable = m->env && (m->envlen == -EACCES || m->envlen == -EPERM);
	c.ref = TAKE_PIDREF(ref);
	if (describe_found(sc, pi, &st, m->env, m->envlen) < 0 || describe_pinned(&c, &sc->rd.aux, sc->brief ? pr.cmdlen : -ENODATA) < 0 ||
	    (details && describe_pinned_details(&c, &sc->rd.aux, pr.cmdlen, &pr.exe, &pr.cwd) < 0) ||
	    /* patterns judge the cmdline and exe: described now */
	    (sc->npatterns && describe_cand(sc, &c) == -ENOMEM)) {
		cand_clear(&c);
		return -ENOMEM;
	}
	set_fate(sc, &c, &st);
	if ((r = enlist(sc, cs, &c, idx)) < 0)
		return r;
	return 1;
}

int identify_listed(struct scanner *sc, struct candset *cs, struct finder_kind *k, pid_t pid, uint32_t bit,
		    uint64_t want)
{
	if (reader_caller(&sc->rd, pid))
		return 0;
	ssize_t i = candset_find(cs, pid);
	if (i >= 0 && scanner_known(sc, cs, pid)) {
		if (!want || cs->v[i].info.start_time == want)
			cs->v[i].info.matched_by |= bit;
		return 0;
	}
	struct match m = { .pid = pid, .by = k, .mask = bit, .want = want };
	size_t idx;
	return identify(sc, cs, &m, &idx);
}
