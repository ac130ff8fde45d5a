/* SPDX-License-Identifier: MIT */
/* options: the report flags that `reaper run`, `reaper reap` and `reaper scan` share
 * (--report, --junit, --allow, --keep, --allow-file, --report-only, --any-user,
 * -v/--verbose), read into a
 * struct output (output.h) as getopt_long meets them. */
#ifndef HARNESS_OPTIONS_H
#define HARNESS_OPTIONS_H

#include "output.h"

#include <getopt.h>
#include <stdio.h>

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
	{ "any-user", no_argument, 0, OUTPUT_OPT_ANY_USER },                  \
	{ "verbose", no_argument, 0, 'v' }

/* Handle a getopt_long value c (OUTPUT_OPT_*, or 'v') with its argument: 1 handled, 0 not a
 * report flag, -1 a usage error described in o->err. */
int output_option(struct output *o, int c, const char *arg);
/* The lines of an allow file read from f ("allow: GLOB", "keep: GLOB", blank lines and '#'
 * comments; path names it in messages): 0, or -1 with o->err naming PATH:LINE, and then
 * nothing of the file is used. */
int output_allow_stream(struct output *o, FILE *f, const char *path);
/* The report flags for --help. */
void output_usage(FILE *out);

#endif
