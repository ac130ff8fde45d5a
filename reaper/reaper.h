/* SPDX-License-Identifier: MIT */
/* libreaper: find, wait for, kill and report the processes a test run left behind.
 *
 * Functions that can fail return 0 (or a count) on success and a negative errno on failure;
 * the value constructors and predicates below say what they return.
 * The library installs no signal handlers, never waits for "any child" (pid -1), and keeps no
 * global state but the adoption refcount; all functions are safe to call from several
 * threads at once.
 *
 * Zombies: reaper_reap() collects only the zombies of processes it found whose parent is
 * the caller (adopted orphans, what it killed, and children that died during the reap);
 * zombie children the caller already had when the reap began are never touched. A child
 * the caller still means to wait for must be waited for before reaper_reap(), kept out
 * of the finders, or listed in opts->host_children. */
#ifndef REAPER_REAPER_H
#define REAPER_REAPER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REAPER_VERSION "0.2.0"

/* What libreaper.so exports: the functions of this header and nothing else (the library is
 * built with hidden visibility). */
#if defined(__GNUC__) && __GNUC__ >= 4
#define REAPER_EXPORT __attribute__((visibility("default")))
#else
#define REAPER_EXPORT
#endif

/* ---- adoption ------------------------------------------------------------------- */

/* Make the calling process a child subreaper (refcounted: the first adopt turns
 * PR_SET_CHILD_SUBREAPER on). Returns the new count, or -errno from prctl. */
REAPER_EXPORT int reaper_adopt(void);
/* Undo one reaper_adopt(); the last release puts back the subreaper setting the process had
 * before the first adopt (a host that was a subreaper itself stays one). Processes already
 * adopted stay our children. Returns the new count, -EINVAL when not adopted. */
REAPER_EXPORT int reaper_release(void);
/* The current adoption count. */
REAPER_EXPORT int reaper_adopted(void);
/* Keep sig's handler, as installed now, for the calling process alone: a process forked from
 * it afterwards ends by sig at once, as at sig's default action, instead of running the handler
 * it inherited (an interpreter's handler runs only once the child's code runs again, which a
 * child blocked in a wait never does). Installing another handler, in either process, undoes
 * it. 0; -EINVAL for a bad signal or one with no handler installed; -errno from sigaction. */
REAPER_EXPORT int reaper_keep_handler(int sig);

/* ---- finders -------------------------------------------------------------------- */

enum reaper_finder_kind {
	REAPER_FIND_ENV = 1,  /* an exact NAME=VALUE entry of /proc/PID/environ */
	REAPER_FIND_TREE = 2, /* every descendant of root (0: the caller), orphans seen once included */
	REAPER_FIND_CGROUP = 3, /* every process in a cgroup v2 directory and in the cgroups below it */
	REAPER_FIND_CALL = 4  /* the identities a function of the caller's returns at each scan */
};

/* A process identity: its pid and its kernel start time (stat field 22, clock ticks since
 * boot), which tells it apart from a later process that reuses the pid. */
struct reaper_ident {
	pid_t pid;
	uint64_t start_time;
};

/* Where the kernel's pid allocation stood at one moment (reaper_origin_now). A marker finder
 * given one (finder.origin) matches only processes started since then. */
struct reaper_origin {
	pid_t last_pid;      /* the pid given out last (ns_last_pid) */
	pid_t pid_max;       /* where pids wrap round (kernel.pid_max) */
	uint64_t forks;      /* processes and threads created since boot (/proc/stat "processes") */
	uint64_t tasks;      /* processes and threads alive (/proc/loadavg) */
	uint64_t start_time; /* the moment, in start-time clock ticks since boot */
	uint64_t pidns;      /* the PID namespace it was taken in (inode of /proc/self/ns/pid) */
};

/* A finder is a plain value; pass several to combine them (a process matches when any
 * finder matches; matched_by records which ones, bit i for finders[i]).
 *
 * A tree finder can be narrowed to what one test started inside a longer-lived process (a
 * test runner): `since` drops every descendant started before it, `marker` drops every
 * descendant whose environment gives NAME a value other than VALUE (another test's), unless
 * it is the value root itself was started with (what a fork without exec carries), and `skip`
 * drops the listed pids. A dropped process is not walked either: its subtree is whoever
 * started it's. */
struct reaper_finder {
	enum reaper_finder_kind kind;
	const char *marker; /* REAPER_FIND_ENV: "NAME=VALUE"; REAPER_FIND_TREE: optional, as above */
	pid_t root;         /* REAPER_FIND_TREE */
	/* REAPER_FIND_CALL: called at every scan of a reap; writes up to cap identities into out
	 * and returns how many it has (more than cap: it is called again with room for all), or
	 * -errno, which fails the reap. Each identity is pinned and verified like any match: a
	 * pid held by a process of another start time is not that process and is left alone; an
	 * identity with start time 0 is ignored. */
	int (*find)(void *ctx, struct reaper_ident *out, size_t cap);
	void *find_ctx;
	const char *cgroup; /* REAPER_FIND_CGROUP: the cgroup's directory, e.g. /sys/fs/cgroup/x */
	uint64_t since;     /* REAPER_FIND_TREE: start time (clock ticks since boot, as stat field
			       22) a descendant must have at least; 0: any. REAPER_FIND_CGROUP: a
			       member started before it was moved in (REAPER_MOVED_IN) */
	const pid_t *skip;  /* REAPER_FIND_TREE: pids that are not this finder's (nskip of them) */
	size_t nskip;
	/* REAPER_FIND_ENV, optional: only processes started at or after this origin match, and
	 * the scan reads the environment of only the pids given out since (see reaper_origin_now) */
	const struct reaper_origin *origin;
};

/* Note where pid allocation stands now, for a marker that nothing older can carry (a random
 * one given to what is started next). A marker finder with this origin matches only processes
 * started since (start time at least origin.start_time) and reads /proc/PID/environ of just
 * the pids given out since: a scan then costs the listing of /proc, or only as many reads as
 * processes were started since, instead of one read per process. Where that set cannot be told
 * (the pids may have wrapped round since, or /proc is another PID namespace's) every process
 * is read, with the same result. A process older than the origin that execs with the marker
 * later is no match: it is found by descent or by its cgroup, or not at all. 0 or -errno. */
REAPER_EXPORT int reaper_origin_now(struct reaper_origin *o);

/* Build finders (no allocation: marker is referenced, not copied). */
REAPER_EXPORT struct reaper_finder reaper_find_env(const char *marker);
REAPER_EXPORT struct reaper_finder reaper_find_tree(pid_t root);
REAPER_EXPORT struct reaper_finder reaper_find_call(int (*find)(void *ctx, struct reaper_ident *out, size_t cap),
						    void *ctx);
/* Every process whose cgroup is path or below it (cgroup.procs; a process whose main thread
 * has exited stays a member while any of its threads runs). With a cgroup finder,
 * reaper_reap() waits on cgroup.events instead of rescanning /proc, runs the marker
 * finders once at the end (for processes outside the cgroup), and ends the cgroup with
 * cgroup.freeze + cgroup.kill, unless the caller itself is inside it. What must survive
 * those (kept, foreign, moved in, the caller's ancestors) is first moved into the cgroup
 * above path; where it cannot be, the cgroup is left to the per-process signals. */
REAPER_EXPORT struct reaper_finder reaper_find_cgroup(const char *path);

/* ---- reap --------------------------------------------------------------------------- */

enum reaper_fate {
	REAPER_ALIVE = 0,       /* still running: a scan result, or --report-only */
	REAPER_EXITED,          /* exited by itself before the deadline: not a leak */
	REAPER_TERMINATED,      /* ended by SIGTERM within the grace period: a leak */
	REAPER_KILLED,          /* needed SIGKILL: a leak */
	REAPER_UNKILLABLE,      /* still there at the settle deadline (D state): a leak */
	REAPER_ZOMBIE_HELD,     /* a zombie whose live parent is outside the run */
	REAPER_KEPT,            /* matched a keep pattern: left running, not a leak */
	REAPER_GONE,            /* reserved: this version drops a match that vanishes before it is identified */
	REAPER_FOREIGN,         /* another user's, found only by a marker (not a descendant, not by a
	                           cgroup) while the caller is root: not signalled, not a leak
	                           (opts.any_user signals it like any other) */
	REAPER_MOVED_IN         /* older than its cgroup finder's since, found only in that cgroup:
	                           moved in from outside, not signalled, not a leak
	                           (opts.kill_moved_in signals it like any other) */
};

/* What a leak held when it was found still there at the deadline (reaper_opts.holdings). */
enum reaper_hold_kind {
	REAPER_HOLD_LISTENING = 1, /* a listening TCP or unix socket, a bound UDP socket */
	REAPER_HOLD_CONNECTED,     /* a TCP socket in any other state, a connected UDP or unix socket */
	REAPER_HOLD_FILE,          /* an open file under one of the hold directories */
	REAPER_HOLD_DELETED,       /* a deleted file still open */
	REAPER_HOLD_OUTPUT,        /* the run's stdout, stderr or terminal */
	REAPER_HOLD_UNREADABLE,    /* what could not be looked at, and why */
	REAPER_HOLD_INPUT          /* the run's stdin (a leak waiting to read it may wait forever) */
};

/* Why a leak was still running at the deadline (reaper_proc.why). */
enum reaper_why {
	REAPER_WHY_TERM_IGNORED = 1 << 0, /* SIGTERM is ignored (SigIgn) */
	REAPER_WHY_TERM_CAUGHT = 1 << 1,  /* SIGTERM has a handler (SigCgt), which may not exit */
	REAPER_WHY_STOPPED = 1 << 2,      /* stopped (state T): no signal but SIGKILL acts until SIGCONT */
	REAPER_WHY_TRACED = 1 << 3,       /* traced (TracerPid) or in a tracing stop (state t) */
	REAPER_WHY_WAITS = 1 << 4,        /* asleep in the kernel function named by wchan */
	REAPER_WHY_OUTPUT = 1 << 5,       /* holds the run's stdout, stderr or terminal */
	REAPER_WHY_INPUT = 1 << 6,        /* holds the run's stdin (the one holding named in why_text) */
	REAPER_WHY_TERM_BLOCKED = 1 << 7, /* every thread blocks SIGTERM (SigBlk): it stays pending */
	REAPER_WHY_READ_SIGNALS = 1 << 30 /* not a reason: the SIGTERM disposition, wchan and tty
					     were read (status could be), so their absence says
					     "default", "running", "none" */
};

struct reaper_holding {
	enum reaper_hold_kind kind;
	int fd;                      /* its descriptor in the leak, -1 when none */
	char *what;                  /* "127.0.0.1:6379 (listening)", "/home/u/db (locked)",
	                                "the run's stdout", "open files: Permission denied" */
};

/* One process the finders found. Strings are never NULL (but holds, see below); bytes are as
 * /proc gave them (cmdline with NULs turned into spaces), so they may hold any byte but NUL. */
struct reaper_proc {
	pid_t pid;
	pid_t ppid;                  /* parent when first seen */
	pid_t pgrp;                  /* process group when first seen */
	int exit_status;             /* wait status when reaper_reap collected it, else -1 */
	uint64_t start_time;         /* clock ticks since boot (stat field 22) */
	double age;                  /* seconds alive when first seen (refreshed at the deadline) */
	char state;                  /* stat state when first seen: R S D Z T t ... */
	uid_t uid;
	uint32_t matched_by;         /* bit i: finders[i] matched */
	enum reaper_fate fate;
	int allowed;                 /* matched an allow pattern: cleaned up, not a leak */
	int environ_unreadable;      /* found by descent, environ could not be read */
	char *cmdline;
	char *comm;
	char *exe;                   /* "" when unreadable */
	char *cwd;                   /* "" when unreadable */
	char *test;                  /* REAPER_TEST from its environment, else PYTEST_CURRENT_TEST
					without its " (call)" phase; "" if none */
	char *ancestry;              /* "pid comm < ppid comm < ..." as first seen */
	/* reaper_opts.holdings: what it held when found still there at the deadline, read before
	 * any signal. Only leaks get them; holds is NULL when nothing was gathered. */
	int holdings_read;           /* 1: the fields below were gathered */
	uint64_t rss;                /* resident bytes */
	double cpu_time;             /* seconds of user + system CPU */
	struct reaper_holding *holdings;
	size_t nholdings;
	char *holds;                 /* the holdings' texts joined by ", " ("" when it held none) */
	int host_child;              /* one of opts->host_children: signalled like any leftover,
					but its zombie is left for the caller to wait for */
	/* reaper_opts.holdings: why it was still running when found there at the deadline, read
	 * with its holdings, before any signal. The strings are NULL while why_read is 0. */
	int why_read;                /* 1: the fields below were gathered */
	uint32_t why;                /* enum reaper_why bits */
	pid_t tracer;                /* the process tracing it (TracerPid), 0 for none */
	char *wchan;                 /* the kernel function it sleeps in, "" when running or unknown */
	char *tty;                   /* its controlling terminal ("pts/3"), "" for none or unknown */
	char *why_text;              /* the reasons in words, joined by "; " ("ignores SIGTERM; waits
					in pipe_read; holds the run's stdin"), "" when none is known */
	/* Where it was started, when known: the spawn site a test harness records (the pytest
	 * plugin), or REAPER_STARTED_AT / REAPER_STARTED_IN ("FILE:LINE:FUNCTION") in its
	 * environment. started_* is the frame in the test's own file, started_in_* the innermost
	 * frame of the caller's code (a helper's). NULL and 0 when not known. */
	char *started_file;
	unsigned started_line;
	char *started_func;
	char *started_in_file;
	unsigned started_in_line;
	char *started_in_func;
	pid_t outer_pid;             /* its pid in the PID namespace of opts->outer_procfd (pid is
					the reap's own namespace's); 0 when not asked or not known */
};

struct reaper_report {
	struct reaper_proc *procs;
	size_t n;
	size_t leaks;                /* TERMINATED + KILLED + UNKILLABLE + ALIVE(report-only), not allowed */
	/* each process counts once: terminated, killed and unkillable count leaks only (with the
	 * report-only ALIVE ones they add up to leaks); allowed counts what an allow pattern kept
	 * from being a leak; an allowed process that exited in time counts as exited */
	size_t exited, terminated, killed, unkillable, zombies_held, kept, allowed;
	int escalated;               /* SIGKILL was needed */
	double waited;               /* seconds spent in reaper_reap */
	size_t *pattern_hits;        /* per opts->patterns entry */
	size_t npatterns;
	/* 0 when the result is complete; else a positive errno saying why it may miss processes
	 * or left some unsignalled (EMFILE/ENFILE: out of descriptors; ENOMEM; EAGAIN: a process
	 * under an exec could not be judged in time), and incomplete_reason in words (static). */
	int incomplete;
	const char *incomplete_reason;
	size_t foreign;              /* REAPER_FOREIGN */
	double marker_scan;          /* seconds of the one /proc-wide marker scan a reap with a
	                                cgroup finder makes (0: none was made) */
	size_t moved_in;             /* REAPER_MOVED_IN */
};

/* What reaper_reap may be told while it waits. */
enum reaper_action { REAPER_CONTINUE = 0, REAPER_TERMINATE_NOW, REAPER_KILL_NOW };

enum reaper_pattern_kind { REAPER_ALLOW = 1, REAPER_KEEP = 2 };
struct reaper_pattern {
	enum reaper_pattern_kind kind;
	const char *glob;            /* fnmatch(3) against the cmdline and the exe path */
};

struct reaper_opts {
	double timeout;              /* seconds to exit by themselves (default 0: none) */
	double grace;                /* > 0: SIGTERM, then this long, then SIGKILL; 0: SIGKILL */
	double settle;               /* bound on waiting for the killed to be gone (0: REAPER_SETTLE) */
	int report_only;             /* find, wait up to timeout, report; signal nothing */
	int term_signal;             /* sent at the end of timeout when grace > 0 (0: SIGTERM) */
	pid_t term_skip_pgrp;        /* members of this group get no term_signal (the caller
	                                signalled the group itself); they still get SIGKILL */
	const struct reaper_pattern *patterns;
	size_t npatterns;
	/* Optional callbacks, each called with its own context pointer. on_event: when event_fd
	 * (polled beside the pidfds) is readable; its return value (enum reaper_action) may cut
	 * the wait short. */
	int event_fd;
	int (*on_event)(void *ctx);
	void *event_ctx;
	/* on_escalate: when the reap starts sending term_signal (or SIGTERM) and SIGKILL. */
	void (*on_escalate)(void *ctx, int sig);
	void *escalate_ctx;
	/* on_progress: about once a second while waiting. */
	void (*on_progress)(void *ctx, size_t alive, double seconds_left);
	void *progress_ctx;
	/* Optional: gather what each leak holds (reaper_proc.holdings) before it is signalled:
	 * its sockets, its open files under hold_dirs, deleted files it keeps open, whether it
	 * holds the caller's fd 1, fd 2 or controlling terminal, its RSS and CPU time. Bounded in
	 * time and count; what cannot be read is said so in the holdings. hold_dirs NULL: $HOME,
	 * the current directory and /tmp. */
	int holdings;
	const char *const *hold_dirs;
	size_t nhold_dirs;
	/* Root only: also signal the processes of other users found only by a marker. Without it
	 * they are REAPER_FOREIGN: any local user can put a guessable NAME=VALUE (a HOME) into
	 * their own processes, and root must not kill those for it. */
	int any_user;
	/* Optional: the caller's own children that it will wait for itself (what its fork or
	 * spawn returned). They are found, waited for and signalled like any match, but their
	 * exit status is never collected: the report marks them host_child. */
	const pid_t *host_children;
	size_t nhost_children;
	/* Also signal the processes older than a cgroup finder's since that only that cgroup
	 * holds. Without it they are REAPER_MOVED_IN: whoever may write cgroup.procs can move any
	 * process in, and what began before the run is not the run's. */
	int kill_moved_in;
	/* Optional (-1: none): a /proc of a PID namespace above the reap's (opened before the reap's
	 * own /proc was mounted over it), for a reap that runs in a namespace of its own: each
	 * match's pid there is read while it is pinned (reaper_proc.outer_pid), so a report can
	 * name it as the caller outside sees it. */
	int outer_procfd;
	/* The caller, its ancestors and its pipeline (a process holding the other end of a pipe
	 * on its fd 0, 1 or 2: `| tee` reading its output; and one of the caller's sessions
	 * holding the other end of a member's: `| tee | cat`) are never candidates.
	 * Optional, never candidates either, whatever finds them: these identities (helpers of
	 * the caller's own)... */
	const struct reaper_ident *exclude;
	size_t nexclude;
	/* ...the members of this process group (0: none; the caller's own job, when nothing it
	 * reaps can be in it)... */
	pid_t exclude_pgrp;
	/* ...and, for the finders of bit i set here, the processes of the caller's sessions (its
	 * own and its ancestors', but init's): its
	 * shell and that shell's other jobs carry what the caller's environment holds. Other
	 * finders (descent, a cgroup) still find such a process. */
	uint32_t outside_session;
};

/* How long a reap waits for what it killed to be gone (seconds): SIGKILL ends a process at
 * once unless it is in uninterruptible sleep, which may never end. */
#define REAPER_SETTLE 5.0

/* Fill opts with the defaults (event_fd -1, outer_procfd -1, settle REAPER_SETTLE). */
REAPER_EXPORT void reaper_opts_init(struct reaper_opts *opts);

/* Find what the finders match, now; signal nothing, and wait for nothing: a child of the
 * caller that dies meanwhile keeps its status for the caller. *out is allocated (free with
 * reaper_report_free) with every match in fate REAPER_ALIVE. */
REAPER_EXPORT int reaper_scan(const struct reaper_finder *finders, size_t n, struct reaper_report **out);

/* The whole reap: wait (event-driven, rescanning for what forks meanwhile) until
 * opts->timeout for every match to exit, then SIGTERM + grace if asked, then freeze and
 * SIGKILL the identity-verified survivors until a rescan finds nothing new, wait up to
 * settle for them to be gone, and collect their zombies when the caller is their parent.
 * opts may be NULL for the defaults. -EINVAL for a bad finder or a negative, NaN or infinite
 * time, -E2BIG for more than 32 finders, -ENOMEM; on a failure after the freeze began, what was frozen is
 * killed before returning. Live matches hold pidfds while RLIMIT_NOFILE allows (the rest are
 * held by pid + start time and polled); a result that could not be completed says so in
 * report->incomplete. */
REAPER_EXPORT int reaper_reap(const struct reaper_finder *finders, size_t n, const struct reaper_opts *opts,
		struct reaper_report **out);

/* Free a report from reaper_scan or reaper_reap (NULL is fine). */
REAPER_EXPORT void reaper_report_free(struct reaper_report *r);
/* Take procs[i] out of the report, with its share of the counts (a caller that knows a
 * match is not a leftover, e.g. its own runner). 0, or -EINVAL. */
REAPER_EXPORT int reaper_report_remove(struct reaper_report *r, size_t i);
/* 1 when p counts as a leak: alive at the end (report-only), terminated, killed or
 * unkillable, and not allowed by a pattern; 0 otherwise. */
REAPER_EXPORT int reaper_proc_is_leak(const struct reaper_proc *p);

/* REAPER_VERSION of the library loaded at run time (which may differ from the header a
 * caller was compiled with; a binding loading it by name has no header at all). */
REAPER_EXPORT const char *reaper_version(void);
/* Names: "exited", "killed", ... */
REAPER_EXPORT const char *reaper_fate_name(enum reaper_fate f);
/* Names: "listening", "connected", "file", "deleted", "output", "unreadable", "input". */
REAPER_EXPORT const char *reaper_hold_kind_name(enum reaper_hold_kind k);
/* "env HOME=/x", "descendant of the run" (tree 0: the caller's tree), "descendant of PID
 * 123", "cgroup" or "call" for finders[i] matched in mask, joined by ", " into buf. 0, or -ENOSPC when buf is too small (-EINVAL when len is 0). */
REAPER_EXPORT int reaper_matched_by(const struct reaper_finder *finders, size_t n, uint32_t mask, char *buf, size_t len);

/* ---- processes by identity ---------------------------------------------------------
 * For a harness that starts processes itself and follows them (a test runner's plugin): what
 * /proc says of a pid, its children, the trees below given roots, and acting on one identity.
 * Each process is read from /proc/PID/stat; every act on one goes through its identity (a pidfd
 * opened, then its start time checked again), so a pid that has passed to another process is
 * never signalled nor collected. */

/* What /proc/PID/stat said of a process at one moment. */
struct reaper_pstat {
	pid_t pid;
	pid_t ppid;
	pid_t pgrp;
	pid_t session;
	uint64_t start_time; /* as reaper_ident.start_time */
	char state;          /* R S D Z T t X ... */
};

/* What /proc/PID/stat says of pid now (0: the caller), into out. 0, or -ESRCH when there is no
 * such process. */
REAPER_EXPORT int reaper_pstat(pid_t pid, struct reaper_pstat *out);
/* The children of pid now (0: the caller), of every thread of it, zombies included: up to cap
 * of them into out, each read after the listing and kept only while its stat still names pid
 * as its parent; pid itself pinned over the listing, so the children are of the process that
 * held pid when the call began. Returns how many there are (more than cap: call again with
 * room for all), -ESRCH when pid is gone, -EMFILE/-ENFILE/-ENOMEM. */
REAPER_EXPORT int reaper_children(pid_t pid, struct reaper_pstat *out, size_t cap);
/* Every process in the trees of roots: each root that is still the process its identity
 * names, then its descendants, each listed while its parent is still the process it was
 * pinned as (a pid that has passed to another process lends its new holder's children
 * nothing), zombies included, each process once (a root inside another root's tree too).
 * Up to cap into out, roots first and every parent before its children; returns how many
 * there are (more than cap: call again with room for all), -EINVAL for roots NULL with
 * nroots > 0, -EMFILE/-ENFILE/-ENOMEM. */
REAPER_EXPORT int reaper_descendants(const struct reaper_ident *roots, size_t nroots, struct reaper_pstat *out,
				     size_t cap);
/* The pid the kernel gave out last in the caller's PID namespace (ns_last_pid), or -errno: a
 * harness that sees it unchanged knows nothing was started meanwhile. */
REAPER_EXPORT pid_t reaper_last_pid(void);
/* The environment pid (0: the caller) was started with (/proc/PID/environ: NAME=VALUE
 * entries, each ending in NUL; what its last exec was given, not its later setenv): up to cap
 * bytes of it into buf. Returns its length (more than cap: call again with room for all), or
 * -ESRCH when there is no such process, -EACCES when it is another user's. */
REAPER_EXPORT ssize_t reaper_environ(pid_t pid, char *buf, size_t cap);
/* Send sig (0: only check) to the process id names, while it is that process. 0; -ESRCH when it
 * is gone or its pid is another process's now (nothing was signalled); -EPERM; -EINVAL for a
 * bad signal. */
REAPER_EXPORT int reaper_signal(const struct reaper_ident *id, int sig);
/* Collect the zombie of the process id names, when the caller is its parent; never waits.
 * 1 collected (*status, when not NULL, gets its wait status), 0 when it has not exited yet,
 * -ESRCH when it is gone or its pid is another process's, -ECHILD when it is not the
 * caller's child. No other child is touched. */
REAPER_EXPORT int reaper_collect(const struct reaper_ident *id, int *status);

/* The zombies of the orphans a subreaper (reaper_adopt) adopted, collected as they appear, and
 * only those: a zombie child of the caller is collected when it cannot be a child the caller
 * started itself, because its session is neither the caller's nor its own (a child stays in
 * its parent's session unless it calls setsid, which makes it its own session's leader), or
 * because an earlier look saw it running below another child of the caller's (a process's
 * parent changes only when that parent dies). Any other zombie child (one that code below the
 * harness started, in the caller's session) keeps its exit status for its owner. A handle
 * remembers what its looks saw below; one thread uses it at a time. */
struct reaper_orphans;
/* A new handle into *out. 0 or -ENOMEM. */
REAPER_EXPORT int reaper_orphans_open(struct reaper_orphans **out);
/* One look: every live child's tree noted, the adopted orphans' zombies collected, none of
 * own (the identities of children the caller started and will wait for itself). Returns how
 * many were collected, or -errno (-EINVAL for own NULL with nown > 0). */
REAPER_EXPORT int reaper_orphans_collect(struct reaper_orphans *o, const struct reaper_ident *own, size_t nown);
/* Collect them in a thread of libreaper's: a look (no own) every period seconds (0.001 to
 * 3600) until reaper_orphans_stop(), with every signal blocked. A harness in an interpreter
 * keeps no thread of its own for it (each of its threads is work in every forked child). One
 * per process. 0; -EINVAL for a bad period, -EBUSY when this process runs one, -errno. */
REAPER_EXPORT int reaper_orphans_start(double period);
/* Stop the thread reaper_orphans_start() started in this process and wait for it to end.
 * How many zombies it collected, or -ESRCH when this process runs none (a forked child's
 * call never touches its parent's). */
REAPER_EXPORT long reaper_orphans_stop(void);
/* Free a handle (NULL is fine). */
REAPER_EXPORT void reaper_orphans_close(struct reaper_orphans *o);

/* ---- cgroup v2 -------------------------------------------------------------------------
 * A cgroup is named by its directory on a cgroup2 mount (the unified /sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on hybrid systems). The library never enables controllers
 * (cgroup.subtree_control), so the cgroups it makes may hold processes and child cgroups at
 * once (the no-internal-processes rule binds only cgroups that distribute controllers); it
 * refuses to move a process into a cgroup that distributes them (-EBUSY from the kernel).
 * Errors common to all: -ENOENT no cgroup2 hierarchy holds the caller's cgroup (or path is
 * gone), -ENOTDIR path is not a cgroup2 directory, -EROFS the cgroup2 mount is read-only,
 * -EACCES / -EPERM no permission, -ENAMETOOLONG / -ENOSPC a buffer too small. */

/* The directory of the calling process's cgroup v2, from /proc/self/cgroup and the cgroup2
 * mount that shows it, into buf: a writable one at /sys/fs/cgroup or /sys/fs/cgroup/unified
 * when it provably does, else the most specific one /proc/self/mountinfo names (a writable
 * one over a read-only one). */
REAPER_EXPORT int reaper_cgroup_current(char *buf, size_t len);
/* The same for the process at pid (0: the caller); -ESRCH when there is none. */
REAPER_EXPORT int reaper_cgroup_of(pid_t pid, char *buf, size_t len);
/* 0 when cgroups can be created below dir and processes moved within it (a cgroup2
 * directory, mounted read-write, writable by the caller); else why not: -ENOENT, -ENOTDIR,
 * -EROFS, -EACCES. dir NULL: the caller's own cgroup. */
REAPER_EXPORT int reaper_cgroup_usable(const char *dir);
/* Create cgroup name below parent and put its directory in buf. parent NULL: the caller's
 * own cgroup (checked with reaper_cgroup_usable). name NULL: "reaper-PID-RANDOM". -EEXIST
 * when it exists, -EINVAL for a name with '/' or a dot name. */
REAPER_EXPORT int reaper_cgroup_create(const char *parent, const char *name, char *buf, size_t len);
/* Move the process id names (all its threads) into the cgroup at path, while it is that
 * process: -ESRCH when it is gone or its pid is another process's. */
REAPER_EXPORT int reaper_cgroup_move(const char *path, const struct reaper_ident *id);
/* reaper_cgroup_move, and with it every descendant of id found in one of the nfrom cgroups
 * from (directories; not the cgroups below them): what a child started before it was moved
 * (a shell script's first commands, forked where its parent forked it) goes with it. Looks
 * again until a look finds none left in from (at most 100 looks). Returns how many processes
 * were moved, -ESRCH when id is gone, -EINVAL for from NULL with nfrom > 0. */
REAPER_EXPORT int reaper_cgroup_move_tree(const char *path, const struct reaper_ident *id, const char *const *from,
					  size_t nfrom);
/* Move the calling process (all its threads) into the cgroup at path; where it was before
 * goes into prev (NULL: not wanted), for moving back with reaper_cgroup_enter(prev, ...). */
REAPER_EXPORT int reaper_cgroup_enter(const char *path, char *prev, size_t len);
/* fork(), the child starting inside the cgroup at path (clone3 CLONE_INTO_CGROUP; where the
 * kernel lacks it or a seccomp filter refuses it, the child moves itself before fork returns
 * in it). The child pid, 0 in the child, or -errno (nothing was started). A clone3 child skips glibc's fork handlers:
 * in it call only async-signal-safe functions and exec or _exit, as in a multi-threaded
 * program's fork child, and never raise() or abort(). */
REAPER_EXPORT pid_t reaper_cgroup_fork(const char *path);
/* The pids in cgroup.procs of path and of every cgroup below it, into *pids (malloc'd,
 * free it) and *n. Bare pids: pin one (pidfd + start time) before acting on it. */
REAPER_EXPORT int reaper_cgroup_procs(const char *path, pid_t **pids, size_t *n);
/* 1 while a process lives in path or below it (cgroup.events "populated"), 0 when empty. */
REAPER_EXPORT int reaper_cgroup_populated(const char *path);
/* Wait until nothing lives in path or below (cgroup.events "populated 0", polled for
 * POLLPRI, no sleep loop), at most timeout seconds (< 0 or infinite: no bound). 0, or
 * -ETIMEDOUT; -EINVAL for a NaN timeout. */
REAPER_EXPORT int reaper_cgroup_wait(const char *path, double timeout);
/* Freeze (frozen 1) or thaw (0) path and everything below it (cgroup.freeze). Freezing waits
 * up to a second for the kernel to report it done: -EAGAIN when it is not (a task in
 * uninterruptible sleep still runs). -EOPNOTSUPP where the kernel has no cgroup.freeze. */
REAPER_EXPORT int reaper_cgroup_freeze(const char *path, int frozen);
/* SIGKILL every process in path and below in one write to cgroup.kill; where the kernel has
 * none, every member is pinned and killed through its identity, over and over until none is
 * left that was not killed. -EDEADLK when the caller is inside (nothing is killed). Does not
 * wait: reaper_cgroup_wait() does. */
REAPER_EXPORT int reaper_cgroup_kill(const char *path);
/* Remove path and every cgroup below it, deepest first; all must be empty (-EBUSY). */
REAPER_EXPORT int reaper_cgroup_remove(const char *path);
/* Move whatever still lives in path and below (kept, report-only, unkillable) into the cgroup
 * above path, each pinned while it is moved, then remove path and every cgroup below it. A
 * process still exiting cannot be moved: it is waited for (cgroup.events, at most 30 s; then
 * -EBUSY). Returns how many processes were moved, or -errno. */
REAPER_EXPORT int reaper_cgroup_release(const char *path);

#ifdef __cplusplus
}
#endif
#endif
