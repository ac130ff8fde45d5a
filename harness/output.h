/* SPDX-License-Identifier: MIT */
/* output: what `reaper run`, `reaper reap` and `reaper scan` report and how: struct output
 * (filled from the report flags by options.h), the countdown on a tty (a progress line every
 * few seconds elsewhere), and output_emit(), which writes every output that was asked for from
 * one struct reaper_report. */
#ifndef HARNESS_OUTPUT_H
#define HARNESS_OUTPUT_H

#include "escape.h"
#include "exits.h"
#include "reaper/reaper.h"

#include <stdio.h>

struct output {
	const char *command;           /* "run", "reap" or "scan": named in the JSON report */
	const char *report_path;       /* --report FILE: JSON */
	const char *junit_path;        /* --junit FILE */
	struct reaper_pattern *patterns;
	char **pattern_from;           /* per pattern: "--allow", "--keep" or "FILE:LINE" */
	size_t npatterns, cap, from_cap;
	char **owned;                  /* strings read from allow files */
	size_t nowned, owned_cap;
	int report_only;
	int any_user;                  /* --any-user: root signals other users' marker-only matches */
	int verbose;                   /* -v: the human report even when nothing was left behind */
	int github;                    /* GITHUB_ACTIONS=true: ::error lines on stdout */
	int color;                     /* stderr is a tty and NO_COLOR is unset or empty */
	int tty;                       /* stderr is a tty: the countdown line */
	int progress_shown;            /* a countdown line is on the screen now */
	unsigned progress_calls;       /* off a tty: a progress line every few of these */
	double timeout, grace;         /* recorded in the JSON report */
	const char *tracking;          /* "cgroup" or "proc" (NULL: "proc"): how the run was tracked */
	pid_t adopter;                 /* reaper run: our pid; COMMAND, our only child, is not in the
	                                  report, so a leak whose parent we are was re-parented to us */
	char err[512];                 /* the message of a failed output_option() */
};

/* What output_emit writes. */
enum { OUT_HUMAN = 1, OUT_FILES = 2, OUT_GITHUB = 4, OUT_ALL = 7 };

void output_init(struct output *o, const char *command);
/* Patterns, report_only and the countdown into opts (which the caller initialised). */
void output_reap_opts(struct output *o, struct reaper_opts *opts);
/* Every requested output: the human report on stderr, the JSON and JUnit files, the GitHub
 * annotations. A file that cannot be written is an error on stderr and the others are
 * still written. Returns 0, or -1 when a requested file was not written. */
int output_emit(struct output *o, const struct reaper_report *r, const struct reaper_finder *f, size_t nf,
		unsigned what);
void output_done(struct output *o);
/* A process the reports list: still there or dealt with, not one that exited in time. */
static inline int output_shown(const struct reaper_proc *p)
{
	return p->fate != REAPER_EXITED && p->fate != REAPER_GONE;
}
/* 1 when p was re-parented to the run's reaper (its own parent exited), as far as is known. */
static inline int output_reparented(const struct output *o, const struct reaper_proc *p)
{
	return o->adopter > 0 && p->ppid == o->adopter;
}
#define OUTPUT_REPARENTED "re-parented to reaper: its parent exited"
/* Where p was started, as raw text ("tests/test_x.py:12 in test_y, via helpers.py:30 in
 * start_server"), appended to b; nothing when it is not known. Returns 1 when known. */
int output_started_at(struct sbuf *b, const struct reaper_proc *p);
/* When r is incomplete: say so on stderr and return 1; else 0. */
int output_incomplete(const struct reaper_report *r);

/* A process an allow pattern kept from being a leak, as the counts take it (reaper_report): an
 * allowed one that exited in time, or is a zombie held by another, was never going to be one. */
static inline int output_allowed(const struct reaper_proc *p)
{
	return p->allowed && (p->fate == REAPER_ALIVE || p->fate == REAPER_TERMINATED || p->fate == REAPER_KILLED ||
			      p->fate == REAPER_UNKILLABLE);
}
/* How every report names a leak that no test is known to have started. */
#define OUTPUT_NO_TEST "(no test)"
/* The leaks a report-only reap left running (fate alive): with the terminated, killed and
 * unkillable ones they are all the leaks. */
static inline size_t output_still_running(const struct reaper_report *r)
{
	return r->leaks - r->terminated - r->killed - r->unkillable;
}
/* Leaks per test, in the order the tests first appear; test "" means unattributed. */
struct test_count {
	const char *test;
	size_t leaks;
};
size_t output_tests(const struct reaper_report *r, struct test_count **out);
/* p's pid as the caller sees it: "4242 (7 in the run's namespace)" for a process of a run in a
 * PID namespace of its own (--isolate), "7" otherwise. */
void output_pid(struct sbuf *b, const struct reaper_proc *p);
/* The names of the finders in mask ("env HOME=/x", "descendant of the run", ...), each
 * written by put, separated by ", ". */
void output_found_by(struct sbuf *b, const struct reaper_finder *f, size_t nf, uint32_t mask,
		     void (*put)(struct sbuf *b, const char *name));

#endif
