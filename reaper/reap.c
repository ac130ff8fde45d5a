/* SPDX-License-Identifier: MIT */
/* reap: wait for what the finders found, then terminate, freeze and kill it until a rescan
 * finds nothing new. Exits are events (pidfds in epoll); rescans only look for what forked
 * meanwhile, on a backoff, and once more the moment everything known is gone. */
#define _GNU_SOURCE
#include "report.h"
#include "clock.h"
#include "describe.h"
#include "finders.h"
#include "holdings.h"
#include "why.h"
#include "cgroup.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define EVENT_KEY UINT64_MAX
#define CGROUP_KEY (UINT64_MAX - 1)
#define RESCAN_MIN 0.002
#define RESCAN_MAX 0.100
#define QUIESCE_ROUNDS 10000
#define UNWATCHED_POLL 0.010 /* without pidfds, how often exits are looked for */

enum phase { WAIT, TERM, FREEZE, KILL };
enum outcome { DONE, DEADLINE, ACT_TERM, ACT_KILL, FAILED };

struct reap {
	struct scanner sc;
	struct candset cs;
	const struct reaper_opts *o;
	int ep;
	enum phase phase;
	int escalated;
	int err;
	size_t unwatched; /* live candidates whose exit is polled, not an epoll event */
	struct holdings *hold; /* opts->holdings: what each leak holds */
	struct why *why;       /* and why it is still running */
	int incomplete;   /* positive errno: a match could not be signalled (descriptors) */
	const char *incomplete_why;
	int short_scans;  /* scans in a row that could not read everything */
	int guard_users;  /* root without opts.any_user: other users' marker-only matches are foreign */
	/* cgroup finders: cgroup.events watched per finder bit (-1: none); the ones the caller
	 * is outside of may be frozen and killed whole; which ones were */
	int cgev[32];
	uint32_t cg_ours, cg_frozen, cg_killed;
	double marker_scan;
};

/* Another user's process that only a marker matched: a marker such as HOME=/tmp/x is a
 * string anyone can put in their own environment. A descendant or a cgroup member is ours
 * whoever it runs as; one gone before its uid could be read (-1) is nobody's. */
static int foreign(const struct reap *rp, const struct cand *c)
{
	return rp->guard_users && c->info.uid != 0 && c->info.uid != (uid_t)-1 && c->info.matched_by &&
	       !(c->info.matched_by & ~scanner_mask(&rp->sc, FINDER_ENV));
}

/* Older than the cgroup that holds it, and found by nothing else: moved in by whoever may
 * write cgroup.procs, not started by the run. So is what such a process starts there (its
 * work, which no /proc run would find): a child of a moved-in candidate that is still the
 * same process. Whatever else matched it (descent, a marker) makes it the run's. */
static int moved_in(const struct reap *rp, const struct cand *c)
{
	uint32_t m = c->info.matched_by;
	if (rp->o->kill_moved_in || !m || (m & ~scanner_mask(&rp->sc, FINDER_CGROUP)))
		return 0;
	if (c->info.fate == REAPER_MOVED_IN)
		return 1;
	int older = 1;
	for (size_t i = 0; i < rp->sc.nf; i++)
		if ((m & (1u << i)) && c->info.start_time >= rp->sc.f[i].since)
			older = 0;
	if (older)
		return 1;
	ssize_t pi = c->info.ppid > 0 ? candset_find(&rp->cs, c->info.ppid) : -1;
	const struct cand *p = pi >= 0 ? &rp->cs.v[pi] : NULL;
	return p && p != c && p->info.fate == REAPER_MOVED_IN && p->info.start_time <= c->info.start_time &&
	       pidref_held(&p->ref, rp->sc.rd.procfd) == 0;
}

static void unwatch(struct reap *rp, struct cand *c)
{
	c->live = 0;
	rp->cs.live--;
	if (c->polled)
		rp->unwatched--;
	else if (c->ref.fd >= 0)
		epoll_ctl(rp->ep, EPOLL_CTL_DEL, c->ref.fd, NULL);
}

/* After a whole scan (every finder has had its say on matched_by), foreign and moved-in
 * matches leave the reap: never signalled, never waited for. */
static void let_go(struct reap *rp)
{
	/* a child may be listed before its moved-in parent: again until nothing more is let go */
	for (int more = 1; more;) {
		more = 0;
		for (size_t i = 0; i < rp->cs.n; i++) {
			struct cand *c = &rp->cs.v[i];
			enum reaper_fate f = !c->live ? REAPER_ALIVE
					     : foreign(rp, c) ? REAPER_FOREIGN
					     : moved_in(rp, c) ? REAPER_MOVED_IN
								: REAPER_ALIVE;
			if (f != REAPER_ALIVE) {
				(void)describe_cand(&rp->sc, c); /* reported, as it is now */
				unwatch(rp, c);
				c->info.fate = f;
				more |= f == REAPER_MOVED_IN;
			}
		}
	}
}

/* A candidate left alone on purpose and still there: what a bulk action must not reach. */
static int spared(const struct reap *rp, const struct cand *c)
{
	enum reaper_fate f = c->info.fate;
	return !c->live && c->ref.pid > 0 && (f == REAPER_KEPT || f == REAPER_FOREIGN || f == REAPER_MOVED_IN) &&
	       pidref_held(&c->ref, rp->sc.rd.procfd) == 0;
}

static void signal_cand(struct reap *rp, struct cand *c, int sig)
{
	/* foreign or moved in: a scan still under way may yet find it by descent */
	if (rp->o->report_only || !c->live || foreign(rp, c) || moved_in(rp, c))
		return;
	if (sig == SIGTERM && rp->o->term_skip_pgrp && c->info.pgrp == rp->o->term_skip_pgrp) {
		c->term_sent = 1; /* the caller signalled its group */
		return;
	}
	if (sig == SIGTERM && rp->o->term_signal)
		sig = rp->o->term_signal;
	/* a member of a frozen or killed cgroup has been dealt with as a whole */
	if (sig == SIGSTOP && (c->info.matched_by & rp->cg_frozen)) {
		c->stopped = 1;
		return;
	}
	if (sig == SIGKILL && (c->info.matched_by & rp->cg_killed)) {
		c->kill_sent = 1;
		rp->escalated = 1;
		/* cgroup.kill signals each listed task alone, and a process whose main thread
		 * has exited is listed by that dead thread: only a process-wide SIGKILL ends it */
		pidref_signal(&c->ref, rp->sc.rd.procfd, SIGKILL);
		return;
	}
	int r = pidref_signal(&c->ref, rp->sc.rd.procfd, sig);
	if (r == -EMFILE || r == -ENFILE) {
		rp->incomplete = -r; /* tried again on the next round; said if it never works */
		rp->incomplete_why = "a process could not be signalled";
		return;
	}
	if (r < 0)
		return; /* gone or replaced: its pidfd reports the exit */
	if (sig == SIGSTOP)
		c->stopped = 1;
	else if (sig == SIGKILL) {
		c->kill_sent = 1;
		rp->escalated = 1;
	} else
		c->term_sent = 1;
}

/* c is a leak (still there at the deadline): what it holds and why it is still running are
 * read now, before any signal changes them. What holdings are compared with (our outputs,
 * terminal, directories) is read at the first leak: a reap without one needs none of it. */
static void leak_found(struct reap *rp, struct cand *c)
{
	if (!c->live || c->info.allowed || !rp->o->holdings)
		return;
	if (!rp->hold)
		rp->hold = holdings_new(rp->o); /* out of memory: a report without holdings */
	if (rp->hold)
		holdings_gather(rp->hold, rp->sc.rd.procfd, &c->info);
	if (!rp->why)
		rp->why = why_new();
	why_gather(rp->why, rp->sc.rd.procfd, &c->info);
}

/* A report-only reap without a timeout (reaper_scan): it waits for nothing and takes
 * nothing from anyone. */
static int scan_only(const struct reap *rp)
{
	return rp->o->report_only && rp->o->timeout <= 0;
}

/* A new candidate: watch its pidfd, and bring it to the phase everyone else is in. */
static void on_added(void *ctx, size_t idx)
{
	struct reap *rp = ctx;
	struct cand *c = &rp->cs.v[idx];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = idx };
	if (scan_only(rp))
		; /* never waits for an exit */
	else if (c->ref.fd < 0 || epoll_ctl(rp->ep, EPOLL_CTL_ADD, c->ref.fd, &ev) < 0) {
		c->polled = 1; /* no pidfd here, or no epoll watch to spare: polled in wait_until */
		rp->unwatched++;
	}
	static const int sig_of[] = { [WAIT] = 0, [TERM] = SIGTERM, [FREEZE] = SIGSTOP, [KILL] = SIGKILL };
	if (sig_of[rp->phase]) {
		(void)describe_cand(&rp->sc, c); /* its last look before the signal */
		leak_found(rp, c);
		signal_cand(rp, c, sig_of[rp->phase]);
	}
}

/* Wait for a dead candidate (1: collected). Never the host's own child, whose status is
 * the host's to wait for, and never in a scan. A report-only reap that waits collects what
 * exited as any reap does: it signals nothing, but the zombies are still its to collect. */
static int collect(struct reap *rp, struct cand *c)
{
	if (c->info.host_child || scan_only(rp))
		return 0;
	return pidref_collect(&c->ref, rp->sc.rd.procfd, &c->info.exit_status);
}

static void on_exit_event(struct reap *rp, struct cand *c)
{
	if (!c->live)
		return;
	unwatch(rp, c);
	c->info.fate = c->kill_sent ? REAPER_KILLED : c->term_sent ? REAPER_TERMINATED : REAPER_EXITED;
	if (collect(rp, c) == 1) {
		c->collected = 1;
		cand_unpin(&rp->cs, c);
	} else if (pidref_held(&c->ref, rp->sc.rd.procfd) < 0) {
		cand_unpin(&rp->cs, c); /* already collected by its parent */
	} /* else a zombie of someone else: looked at again at the end */
}

static int scan(struct reap *rp)
{
	int r = finders_scan(&rp->sc, &rp->cs);
	if (r >= 0 && rp->err)
		r = rp->err;
	if (r >= 0)
		let_go(rp);
	return r;
}

/* With a cgroup finder the marker finders run once at the end of each wait (the timeout, the
 * grace, the settle), for processes outside the cgroup. When they find some, the reap goes on scanning /proc for them (their
 * children need not be in any tree we walk). */
static int marker_scan(struct reap *rp)
{
	if (rp->sc.env_deferred != 1)
		return 0;
	double t = monotonic_now();
	rp->sc.env_deferred = 0;
	int r = scan(rp);
	rp->marker_scan += monotonic_now() - t;
	rp->sc.env_deferred = r == 0 ? -1 : 0; /* -1: ran and found nothing: stays left out */
	return r;
}

/* Every cgroup finder's cgroup is empty now (cgroup.events, already open for the wait, says
 * "populated 0"; one gone has nothing either): a scan can find nothing in them. */
static int cgroups_empty(struct reap *rp)
{
	for (size_t i = 0; i < rp->sc.nf; i++) {
		if (!(scanner_mask(&rp->sc, FINDER_CGROUP) & (1u << i)) || rp->cgev[i] < 0)
			continue;
		int pop = 1;
		if (cgroup_events_read(rp->cgev[i], &pop, NULL) < 0 || pop)
			return 0;
	}
	return 1;
}

/* Act on what epoll returned: exits, a cgroup's change (look again now), the host's event.
 * Returns what the host's event asks for (ACT_TERM, ACT_KILL), else DONE: wait on. */
static enum outcome take_events(struct reap *rp, const struct epoll_event *evs, int n, double *next_scan)
{
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == CGROUP_KEY) {
			/* populated or frozen changed: look now (the read re-arms the event) */
			for (size_t k = 0; k < 32; k++)
				if (rp->cgev[k] >= 0)
					cgroup_events_read(rp->cgev[k], NULL, NULL);
			*next_scan = monotonic_now();
			continue;
		}
		if (evs[i].data.u64 == EVENT_KEY) {
			int act = rp->o->on_event ? rp->o->on_event(rp->o->event_ctx) : REAPER_CONTINUE;
			if (act == REAPER_TERMINATE_NOW && rp->phase == WAIT)
				return ACT_TERM;
			if (act == REAPER_KILL_NOW && rp->phase < FREEZE)
				return ACT_KILL;
			continue;
		}
		on_exit_event(rp, &rp->cs.v[evs[i].data.u64]);
	}
	return DONE;
}

/* Wait until everything known has exited and a rescan finds nothing new (DONE), or until
 * deadline, or until the host's event asks for more. */
static enum outcome wait_until(struct reap *rp, double deadline)
{
	double interval = RESCAN_MIN, next_scan = monotonic_now() + interval, next_tick = monotonic_now() + 1.0;
	struct epoll_event evs[256];
	int looked_late = 0;
	for (;;) {
		double t = monotonic_now();
		if (rp->cs.live == 0 || t >= next_scan) {
			/* Nothing known is alive and the cgroups are empty (the end of a clean run):
			 * the marker scan that would follow a scan finding nothing is the scan itself
			 * (it runs every finder), instead of a second pass over the same finders. */
			int r = rp->cs.live == 0 && rp->sc.env_deferred == 1 && cgroups_empty(rp) ? marker_scan(rp)
												     : scan(rp);
			if (r < 0) {
				rp->err = r;
				return FAILED;
			}
			/* a scan short of descriptors may have missed something: a few more
			 * tries, then the report says it is incomplete */
			rp->short_scans = rp->sc.pass.err ? rp->short_scans + 1 : 0;
			if (rp->cs.live == 0 && r == 0 && (r = marker_scan(rp)) < 0) {
				rp->err = r;
				return FAILED;
			}
			if (rp->cs.live == 0 && r == 0 && (!rp->sc.pass.err || rp->short_scans >= 3))
				return DONE;
			interval = r > 0 || rp->sc.pass.starved || rp->sc.pass.err ? RESCAN_MIN : interval * 2;
			if (interval > RESCAN_MAX)
				interval = RESCAN_MAX;
			next_scan = monotonic_now() + interval;
			continue;
		}
		/* Past the deadline, the exits already there are taken first (one look that does
		 * not wait): a process that exited before the deadline exited in time, also when
		 * this thread runs late on a busy machine. */
		int late = t >= deadline;
		if (late && looked_late) {
			int r = marker_scan(rp);
			if (r < 0) {
				rp->err = r;
				return FAILED;
			}
			return DEADLINE;
		}
		looked_late = late;
		if (!late && rp->o->on_progress && t >= next_tick) {
			rp->o->on_progress(rp->o->progress_ctx, rp->cs.live, deadline - t);
			next_tick = t + 1.0;
		}
		double until = deadline < next_scan ? deadline : next_scan;
		if (rp->o->on_progress && next_tick < until)
			until = next_tick;
		if (rp->unwatched && until > t + UNWATCHED_POLL)
			until = t + UNWATCHED_POLL;
		int ms = late ? 0 : (int)((until - t) * 1000.0 + 0.999);
		int n = epoll_wait(rp->ep, evs, 256, ms < 0 ? 0 : ms);
		if (n < 0 && errno != EINTR) {
			rp->err = -errno;
			return FAILED;
		}
		enum outcome asked = take_events(rp, evs, n, &next_scan);
		if (asked != DONE)
			return asked;
		for (size_t i = 0; rp->unwatched && i < rp->cs.n; i++)
			if (rp->cs.v[i].live && rp->cs.v[i].polled &&
			    pidref_exited(&rp->cs.v[i].ref, rp->sc.rd.procfd))
				on_exit_event(rp, &rp->cs.v[i]);
	}
}

static void signal_all(struct reap *rp, int sig)
{
	for (size_t i = 0; i < rp->cs.n; i++) {
		struct cand *c = &rp->cs.v[i];
		/* once is enough: a resend costs a verify and a syscall per candidate per round */
		if (c->live && !(sig == SIGSTOP && c->stopped) && !(sig == SIGTERM && c->term_sent) &&
		    !(sig == SIGKILL && c->kill_sent))
			signal_cand(rp, c, sig);
	}
}

/* Before cgroup finder i's cgroup is frozen or killed as a whole, what must survive that
 * leaves it for the cgroup above: what the reap spares (kept, foreign, moved in) and the
 * caller's ancestors, which are never candidates. A frozen process that moves out thaws. 0,
 * or -errno when one could not be moved: the cgroup is then left to the per-process signals,
 * which spare them. */
static int move_out_spared(struct reap *rp, size_t i)
{
	const char *path = rp->sc.f[i].cgroup;
	pid_t *v = NULL;
	size_t n = 0, cap = 0;
	int r = cgroup_members(path, &v, &n, &cap);
	for (size_t k = 0; r == 0 && k < n; k++) {
		ssize_t ci = candset_find(&rp->cs, v[k]);
		if (ci >= 0 && spared(rp, &rp->cs.v[ci])) {
			r = cgroup_move_up(path, &rp->cs.v[ci].ref, rp->sc.rd.procfd);
		} else if (reader_caller(&rp->sc.rd, v[k])) {
			struct pidref ref;
			struct reaper_stat st;
			if ((r = pidref_open_stat(&ref, rp->sc.rd.procfd, v[k], &st)) == 0) {
				r = cgroup_move_up(path, &ref, rp->sc.rd.procfd);
				pidref_done(&ref);
			}
		}
		if (r == -ESRCH)
			r = 0; /* gone meanwhile */
	}
	free(v);
	return r == -ENOENT ? 0 : r;
}

/* Freeze (FREEZE) or kill (KILL) each cgroup finder's cgroup as a whole, where the caller
 * is outside it and what must survive could be moved out; what the kernel cannot do is left
 * to the per-process signals. */
static void cgroups_act(struct reap *rp, enum phase phase)
{
	for (size_t i = 0; i < rp->sc.nf; i++) {
		if (!(rp->cg_ours & (1u << i)) || (phase != FREEZE && phase != KILL) || move_out_spared(rp, i) < 0)
			continue;
		const char *path = rp->sc.f[i].cgroup;
		if (phase == FREEZE) {
			int r = reaper_cgroup_freeze(path, 1);
			if (r == 0 || r == -EAGAIN)
				rp->cg_frozen |= 1u << i;
		} else if (phase == KILL && cgroup_write(path, "cgroup.kill", "1") == 0) {
			rp->cg_killed |= 1u << i;
		}
	}
}

/* Thaw what we froze: a frozen cgroup would stop whatever enters it later. */
static void cgroups_thaw(struct reap *rp)
{
	for (size_t i = 0; i < rp->sc.nf; i++)
		if (rp->cg_frozen & (1u << i))
			reaper_cgroup_freeze(rp->sc.f[i].cgroup, 0);
	rp->cg_frozen = 0;
}

/* Signal everything live, rescan (on_added signals the new), until a scan finds nothing. */
static int quiesce(struct reap *rp, enum phase phase, int sig)
{
	if (rp->phase == WAIT)
		for (size_t i = 0; i < rp->cs.n; i++)
			if (rp->cs.v[i].live) {
				(void)describe_cand(&rp->sc, &rp->cs.v[i]);
				leak_found(rp, &rp->cs.v[i]);
			}
	rp->phase = phase;
	/* an outside daemon may start marked work while we escalate, as a /proc run's rescans
	 * would see: the marker scan runs again at the end of the wait that follows */
	if (rp->sc.env_deferred == -1)
		rp->sc.env_deferred = 1;
	if (rp->o->on_escalate && rp->cs.live && sig != SIGSTOP)
		rp->o->on_escalate(rp->o->escalate_ctx, sig == SIGTERM && rp->o->term_signal ? rp->o->term_signal : sig);
	cgroups_act(rp, phase);
	signal_all(rp, sig);
	/* SIGTERM can be ignored by a process that keeps forking, so "until a scan finds nothing"
	 * may never come: one rescan here, and the grace wait's rescans TERM what appears later
	 * (on_added). Only a frozen run can be brought to quiet. */
	int rounds = phase == TERM ? 1 : QUIESCE_ROUNDS;
	int r = 0;
	for (int round = 0; round < rounds; round++) {
		if ((r = scan(rp)) <= 0)
			break;
		signal_all(rp, sig);
	}
	if (phase == KILL)
		cgroups_thaw(rp); /* everything in it has its SIGKILL: it dies thawed as well */
	return r;
}

/* What is left once the killing is over: collect our zombies, name the held ones. */
static void finish(struct reap *rp)
{
	for (size_t i = 0; i < rp->cs.n; i++) {
		struct cand *c = &rp->cs.v[i];
		if (c->live) {
			if (rp->phase == WAIT) {
				(void)describe_cand(&rp->sc, c);
				leak_found(rp, c);
			}
			c->info.fate = rp->o->report_only ? REAPER_ALIVE : REAPER_UNKILLABLE;
			continue;
		}
		if (!c->ref.pid)
			continue;
		if (c->info.fate == REAPER_KEPT || c->info.fate == REAPER_FOREIGN || c->info.fate == REAPER_MOVED_IN) {
			cand_unpin(&rp->cs, c); /* left alone, zombie included */
			continue;
		}
		if (collect(rp, c) == 1) {
			c->collected = 1;
		} else if (c->info.state == 'Z' && !c->kill_sent && !c->term_sent &&
			   pidref_held(&c->ref, rp->sc.rd.procfd) == 0) {
			/* found dead (or its main thread was, and it ended by itself), its parent lives
			 * outside the run; one we killed keeps its fate */
			c->info.fate = REAPER_ZOMBIE_HELD;
			(void)describe_cand(&rp->sc, c);
		}
		cand_unpin(&rp->cs, c);
	}
}

/* Say so when the result may not be all there is: the last scan could not read or judge
 * everything, or a match that is still there could not be signalled. */
static void incomplete(struct reap *rp, struct reaper_report *r)
{
	int left = 0;
	for (size_t i = 0; i < r->n; i++)
		left |= r->procs[i].fate == REAPER_UNKILLABLE;
	if (rp->sc.pass.err == EAGAIN) {
		r->incomplete = EAGAIN;
		r->incomplete_reason = "an environment under an exec could not be judged in time";
	} else if (rp->sc.pass.err) {
		r->incomplete = rp->sc.pass.err;
		r->incomplete_reason = "/proc could not be read in full";
	} else if (rp->incomplete && left) {
		r->incomplete = rp->incomplete;
		r->incomplete_reason = rp->incomplete_why;
	}
}

/* A NaN deadline compares false with every clock reading: the wait would never end. */
static int valid_time(double t)
{
	return isfinite(t) && t >= 0;
}

/* Cgroup finders: watch cgroup.events (populated and frozen changes wake the wait), note
 * which cgroups the caller is outside of (only those are frozen and killed whole), and
 * leave the /proc-wide marker scan to the end of the wait. */
static int watch_cgroups(struct reap *rp)
{
	if (!scanner_mask(&rp->sc, FINDER_CGROUP))
		return 0;
	rp->sc.env_deferred = scanner_mask(&rp->sc, FINDER_ENV) != 0;
	for (size_t i = 0; i < rp->sc.nf; i++) {
		if (!(scanner_mask(&rp->sc, FINDER_CGROUP) & (1u << i)))
			continue;
		const char *path = rp->sc.f[i].cgroup;
		int fd = cgroup_events_open(path);
		if (fd == -ENOMEM)
			return fd;
		/* an empty cgroup (the end of a clean run) holds no caller: no listing to read */
		int pop = 1;
		if (fd >= 0 && cgroup_events_read(fd, &pop, NULL) < 0)
			pop = 1;
		if (!pop || cgroup_holds_self(path) == 0)
			rp->cg_ours |= 1u << i;
		if (fd < 0)
			continue; /* gone already: its scan finds nothing */
		rp->cgev[i] = fd;
		struct epoll_event ev = { .events = EPOLLPRI, .data.u64 = CGROUP_KEY };
		if (epoll_ctl(rp->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -errno;
	}
	return 0;
}

/* The epoll set the reap waits on: candidates' pidfds join it as they are found, and the
 * caller's event_fd, when it gave one, wakes the wait. */
static int open_epoll(struct reap *rp)
{
	if ((rp->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return -errno;
	if (rp->o->event_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EVENT_KEY };
		if (epoll_ctl(rp->ep, EPOLL_CTL_ADD, rp->o->event_fd, &ev) < 0)
			return -errno;
	}
	return 0;
}

/* Wait until the deadline, then end what is left: SIGTERM and the grace period, then SIGSTOP,
 * SIGKILL and the settle bound. *w is how the last wait ended; 0, or the -errno of a
 * signalling pass that failed. */
static int escalate(struct reap *rp, double t0, enum outcome *w)
{
	const struct reaper_opts *o = rp->o;
	int r = 0;
	*w = wait_until(rp, t0 + o->timeout);
	if (*w == FAILED || *w == DONE || o->report_only)
		return 0;
	if (*w != ACT_KILL && o->grace > 0) {
		if ((r = quiesce(rp, TERM, SIGTERM)) < 0)
			return r;
		*w = wait_until(rp, monotonic_now() + o->grace);
	}
	if (*w == DONE || *w == FAILED)
		return 0;
	if ((r = quiesce(rp, FREEZE, SIGSTOP)) < 0 || (r = quiesce(rp, KILL, SIGKILL)) < 0)
		return r;
	double settle = o->settle > 0 ? o->settle : REAPER_SETTLE;
	*w = wait_until(rp, monotonic_now() + settle);
	return 0;
}

void reaper_opts_init(struct reaper_opts *o)
{
	memset(o, 0, sizeof *o);
	o->event_fd = -1;
	o->outer_procfd = -1;
	o->settle = REAPER_SETTLE;
}

static int reap_as(const struct reaper_finder *finders, size_t n, const struct reaper_opts *opts, int brief,
		   struct reaper_report **out)
{
	struct reaper_opts defaults;
	reaper_opts_init(&defaults);
	if (!opts)
		opts = &defaults;
	*out = NULL;
	if ((n && !finders) || !valid_time(opts->timeout) || !valid_time(opts->grace) || !valid_time(opts->settle))
		return -EINVAL;
	struct reap rp = { .o = opts, .ep = -1, .guard_users = geteuid() == 0 && !opts->any_user };
	for (size_t i = 0; i < 32; i++)
		rp.cgev[i] = -1;
	double t0 = monotonic_now();
	int r = finders_open(&rp.sc, finders, n, opts->patterns, opts->npatterns);
	if (r < 0)
		goto out;
	rp.sc.added = on_added;
	/* the uid says whether a match is foreign: a listing shows foreign ones all the same */
	rp.sc.want_uid = rp.guard_users && !brief;
	rp.sc.brief = brief;
	rp.sc.describe_now = (opts->report_only && opts->timeout <= 0) || opts->npatterns;
	rp.sc.ctx = &rp;
	if (opts->nhost_children && !opts->host_children) {
		r = -EINVAL;
		goto out;
	}
	rp.sc.host = opts->host_children;
	rp.sc.nhost = opts->nhost_children;
	rp.sc.outer_procfd = opts->outer_procfd;
	callers_init(&rp.sc.callers, &rp.sc.rd, opts);
	rp.sc.stat_free = brief && scan_only(&rp) && !opts->npatterns && !opts->nhost_children && !opts->holdings &&
			  !rp.sc.callers.nexclude;
	for (size_t i = 0; i < n; i++)
		rp.sc.stat_free &= !finders[i].origin;
	if ((r = open_epoll(&rp)) < 0 || (r = watch_cgroups(&rp)) < 0)
		goto out;
	rp.sc.cgroup_events = rp.cgev;
	enum outcome w;
	r = escalate(&rp, t0, &w);
	if (r < 0 || w == FAILED || rp.err) {
		/* never leave what we froze stopped: it was about to be killed anyway */
		if (rp.phase >= FREEZE)
			signal_all(&rp, SIGKILL);
		cgroups_thaw(&rp);
		r = r < 0 ? r : rp.err ? rp.err : -EIO;
		goto out;
	}
	finish(&rp);
	r = report_build(&rp.cs, &rp.sc.pattern_hits, rp.sc.npatterns, out);
	if (r == 0) {
		(*out)->escalated = rp.escalated;
		(*out)->waited = monotonic_now() - t0;
		incomplete(&rp, *out);
		(*out)->marker_scan = rp.marker_scan;
	}
out:
	for (size_t i = 0; i < 32; i++)
		if (rp.cgev[i] >= 0)
			close(rp.cgev[i]);
	if (rp.ep >= 0)
		close(rp.ep);
	candset_free(&rp.cs);
	finders_close(&rp.sc);
	holdings_free(rp.hold);
	why_free(rp.why);
	return r;
}

int reaper_reap(const struct reaper_finder *finders, size_t n, const struct reaper_opts *opts,
		struct reaper_report **out)
{
	return reap_as(finders, n, opts, 0, out);
}

int reap_listing(const struct reaper_finder *finders, size_t n, const struct reaper_opts *opts,
		 struct reaper_report **out)
{
	return reap_as(finders, n, opts, 1, out);
}

int reaper_scan(const struct reaper_finder *finders, size_t n, struct reaper_report **out)
{
	struct reaper_opts o;
	reaper_opts_init(&o);
	o.report_only = 1;
	return reaper_reap(finders, n, &o, out);
}
