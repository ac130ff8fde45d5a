/* SPDX-License-Identifier: MIT */
/* options: see options.h. */
#define _GNU_SOURCE
#include "options.h"

#include "reaper/array.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((format(printf, 2, 3))) static int fail(struct output *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(o->err, sizeof o->err, fmt, ap);
	va_end(ap);
	return -1;
}

static int add_pattern(struct output *o, enum reaper_pattern_kind kind, const char *glob, char *from)
{
	if (!from)
		return fail(o, "out of memory");
	if (ARRAY_RESERVE(o->patterns, o->cap, o->npatterns + 1, 8) < 0 ||
	    ARRAY_RESERVE(o->pattern_from, o->from_cap, o->npatterns + 1, 8) < 0) {
		free(from);
		return fail(o, "out of memory");
	}
	o->patterns[o->npatterns] = (struct reaper_pattern){ .kind = kind, .glob = glob };
	o->pattern_from[o->npatterns++] = from;
	return 0;
}

static char *own(struct output *o, char *s)
{
	if (!s || ARRAY_RESERVE(o->owned, o->owned_cap, o->nowned + 1, 8) < 0) {
		free(s);
		return NULL;
	}
	o->owned[o->nowned++] = s;
	return s;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = 0;
	return s;
}

/* A '#' at the start of the pattern or after a blank starts a comment to the end of the line
 * (`allow: *sleep* # the test's sleeper`); a pattern that needs " #" writes " \#" (fnmatch
 * reads \# as #). */
static void cut_comment(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
			*p = 0;
			return;
		}
}

/* A regular file only: a FIFO or a device (/dev/zero) would hang or never end a line. */
static int load_allow_file(struct output *o, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat sb;
	if (fd < 0)
		return fail(o, "--allow-file %s: cannot read it: %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return fail(o, "--allow-file %s: not a regular file", path);
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return fail(o, "out of memory");
	}
	int r = output_allow_stream(o, f, path);
	fclose(f);
	return r;
}

int output_allow_stream(struct output *o, FILE *f, const char *path)
{
	size_t before = o->npatterns;
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	int r = 0;
	ssize_t len;
	while (r == 0 && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		/* a NUL would end the pattern early: what follows it would be lost without a word */
		if (memchr(line, 0, (size_t)len)) {
			r = fail(o, "--allow-file %s:%ld: %s", path, lineno, "a NUL byte in the line");
			break;
		}
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		enum reaper_pattern_kind kind;
		if (!strncmp(s, "allow:", 6))
			kind = REAPER_ALLOW, s += 6;
		else if (!strncmp(s, "keep:", 5))
			kind = REAPER_KEEP, s += 5;
		else {
			r = fail(o, "--allow-file %s:%ld: %s", path, lineno,
				 "expected 'allow: PATTERN' or 'keep: PATTERN' (or a # comment)");
			break;
		}
		cut_comment(s);
		s = trim(s);
		if (!*s) {
			r = fail(o, "--allow-file %s:%ld: %s", path, lineno, "empty pattern");
			break;
		}
		char *glob = own(o, strdup(s)), *from = NULL;
		if (!glob || asprintf(&from, "%s:%ld", path, lineno) < 0)
			r = fail(o, "out of memory");
		else
			r = add_pattern(o, kind, glob, from);
	}
	if (r == 0 && ferror(f))
		r = fail(o, "--allow-file %s: read error", path);
	free(line);
	if (r < 0) {
		while (o->npatterns > before)
			free(o->pattern_from[--o->npatterns]);
	}
	return r;
}

int output_option(struct output *o, int c, const char *arg)
{
	switch (c) {
	case OUTPUT_OPT_REPORT:
		if (!*arg)
			return fail(o, "--report wants a file name");
		o->report_path = arg;
		return 1;
	case OUTPUT_OPT_JUNIT:
		if (!*arg)
			return fail(o, "--junit wants a file name");
		o->junit_path = arg;
		return 1;
	case OUTPUT_OPT_ALLOW:
	case OUTPUT_OPT_KEEP:
		if (!*arg)
			return fail(o, "%s wants a non-empty pattern", c == OUTPUT_OPT_ALLOW ? "--allow" : "--keep");
		return add_pattern(o, c == OUTPUT_OPT_ALLOW ? REAPER_ALLOW : REAPER_KEEP, arg,
				   strdup(c == OUTPUT_OPT_ALLOW ? "--allow" : "--keep")) < 0
			       ? -1
			       : 1;
	case OUTPUT_OPT_ALLOW_FILE:
		return load_allow_file(o, arg) < 0 ? -1 : 1;
	case OUTPUT_OPT_REPORT_ONLY:
		o->report_only = 1;
		return 1;
	case OUTPUT_OPT_ANY_USER:
		o->any_user = 1;
		return 1;
	case 'v':
		o->verbose = 1;
		return 1;
	default:
		return 0;
	}
}

void output_usage(FILE *out)
{
	fprintf(out,
		"Report options (run, reap, scan):\n"
		"  --report FILE        write the JSON report (schema reaper-report/1.2) to FILE\n"
		"  --junit FILE         write a JUnit XML report (testsuite 'reaper') to FILE\n"
		"  --allow PATTERN      a leftover matching PATTERN is cleaned up but is not a leak\n"
		"  --keep PATTERN       a leftover matching PATTERN is left running and is not a leak\n"
		"  --allow-file FILE    'allow: PATTERN' and 'keep: PATTERN' lines, '#' comments\n"
		"  --report-only        find, wait and report; signal nothing\n"
		"  --any-user           as root, also signal other users' processes found only by a\n"
		"                       marker (without it they are reported 'foreign', untouched)\n"
		"  -v, --verbose        the SUMMARY line even when nothing was left behind\n"
		"PATTERNs are fnmatch(3) globs matched against the cmdline and the exe path; the first\n"
		"matching pattern wins. With GITHUB_ACTIONS=true each leak is also an ::error line on\n"
		"stdout. NO_COLOR disables colour. A report file that cannot be written is an error;\n"
		"the other outputs are still written, and the exit status is 74 when nothing else\n"
		"(a leak, a failed COMMAND) decides it.\n");
}
