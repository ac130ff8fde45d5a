/* SPDX-License-Identifier: MIT */
/* output: the report flags that `reaper run`, `reaper reap` and `reaper scan` share
 * (--report, --junit, --allow, --keep, --allow-file, --report-only, --any-user), the countdown on a
 * tty (a progress line every few seconds elsewhere), and output_emit(), which writes every output that
 * was asked for from one struct reaper_report. */
#ifndef HARNESS_OUTPUT_H
#define HARNESS_OUTPUT_H

#include "reaper/reaper.h"

#include <getopt.h>
#include <stdio.h>

/* A requested report file that cannot be written, when nothing else decides the status
 * (EX_IOERR of sysexits.h; see reaper(1), EXIT STATUS). */
#define EXIT_REPORT_FAILED 74
/* The result is incomplete: processes may have been missed or left unsignalled (out of
 * descriptors, say); EX_TEMPFAIL of sysexits.h: try again with more. */
#define EXIT_INCOMPLETE 75

#define OUTPUT_OPT_BASE 0x4000
enum {
	OUTPUT_OPT_REPORT = OUTPUT_OPT_BASE,
	OUTPUT_OPT_JUNIT,
	OUTPUT_OPT_ALLOW,
	OUTPUT_OPT_KEEP,
	OUTPUT_OPT_ALLOW_FILE,
	OUTPUT_OPT_REPORT_ONLY,
	OUTPUT_OPT_ANY_USER,
};
/* Entries for a getopt_long table; output_option() handles what they return. */
#define OUTPUT_LONG_OPTIONS                                                     \
	{ "report", required_argument, 0, OUTPUT_OPT_REPORT },                  \
	{ "junit", required_argument, 0, OUTPUT_OPT_JUNIT },                    \
	{ "allow", required_argument, 0, OUTPUT_OPT_ALLOW },                    \
	{ "keep", required_argument, 0, OUTPUT_OPT_KEEP },                      \
	{ "allow-file", required_argument, 0, OUTPUT_OPT_ALLOW_FILE },          \
	{ "report-only", no_argument, 0, OUTPUT_OPT_REPORT_ONLY },             \
	{ "any-user", no_argument, 0, OUTPUT_OPT_ANY_USER }

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
	int github;                    /* GITHUB_ACTIONS=true: ::error lines on stdout */
	int color;                     /* stderr is a tty and NO_COLOR is unset or empty */
	int tty;                       /* stderr is a tty: the countdown line */
	int progress_shown;            /* a countdown line is on the screen now */
	unsigned progress_calls;       /* off a tty: a progress line every few of these */
	double timeout, grace;         /* recorded in the JSON report */
	const char *tracking;          /* "cgroup" or "proc" (NULL: "proc"): how the run was tracked */
	char err[512];                 /* the message of a failed output_option() */
};

/* What output_emit writes. */
enum { OUT_HUMAN = 1, OUT_FILES = 2, OUT_GITHUB = 4, OUT_ALL = 7 };

void output_init(struct output *o, const char *command);
/* Handle a getopt_long value c (OUTPUT_OPT_*) with its argument: 1 handled, 0 not a
 * report flag, -1 a usage error described in o->err. */
int output_option(struct output *o, int c, const char *arg);
/* The lines of an allow file read from f ("allow: GLOB", "keep: GLOB", blank lines and '#'
 * comments; path names it in messages): 0, or -1 with o->err naming PATH:LINE, and then
 * nothing of the file is used. */
int output_allow_stream(struct output *o, FILE *f, const char *path);
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
/* When r is incomplete: say so on stderr ("reaper COMMAND: ...") and return 1; else 0. */
int output_incomplete(const char *command, const struct reaper_report *r);
/* The report flags for --help. */
void output_usage(FILE *out);

/* Leaks per test, in the order the tests first appear; test "" means unattributed. */
struct test_count {
	const char *test;
	size_t leaks;
};
size_t output_tests(const struct reaper_report *r, struct test_count **out);
/* "env HOME=/x" for the single finder bit i. */
void output_finder_name(const struct reaper_finder *f, size_t i, char *buf, size_t len);

#endif
