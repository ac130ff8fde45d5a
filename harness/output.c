/* SPDX-License-Identifier: MIT */
/* output: see output.h. */
#define _GNU_SOURCE
#include "output.h"

#include "ci.h"
#include "human.h"
#include "json.h"
#include "junit.h"
#include "msg.h"
#include "replace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void output_init(struct output *o, const char *command)
{
	memset(o, 0, sizeof *o);
	o->command = command;
	const char *gh = getenv("GITHUB_ACTIONS");
	o->github = gh && !strcmp(gh, "true");
	o->tty = isatty(STDERR_FILENO);
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");
	o->color = o->tty && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
}

static void clear_progress(struct output *o)
{
	if (o->progress_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		o->progress_shown = 0;
	}
}

/* Off a tty (a CI log) the wait is a line every this many progress calls (about seconds), so
 * that the log is never silent while leftovers are waited for. */
#define PROGRESS_LOG_EVERY 5

static void on_progress(void *ctx, size_t alive, double left)
{
	struct output *o = ctx;
	if (!o->tty) {
		if (o->progress_calls++ % PROGRESS_LOG_EVERY == 0)
			warn("waiting for %zu process%s to exit; next step in %.0f s", alive, alive == 1 ? "" : "es",
			     left < 0 ? 0.0 : left);
		return;
	}
	/* a line rewritten in place, not a message: no newline, so not warn() */
	fprintf(stderr, "\r\033[Kreaper: waiting for %zu process%s, %.0f s left", alive, alive == 1 ? "" : "es",
		left < 0 ? 0.0 : left);
	fflush(stderr);
	o->progress_shown = 1;
}

void output_reap_opts(struct output *o, struct reaper_opts *opts)
{
	opts->patterns = o->patterns;
	opts->npatterns = o->npatterns;
	opts->report_only = o->report_only;
	opts->holdings = 1;
	opts->any_user = o->any_user;
	o->timeout = opts->timeout;
	o->grace = opts->grace;
	opts->on_progress = on_progress;
	opts->progress_ctx = o;
}


size_t output_tests(const struct reaper_report *r, struct test_count **out)
{
	struct test_count *v = r->n ? calloc(r->n, sizeof *v) : NULL;
	size_t n = 0;
	*out = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (!reaper_proc_is_leak(p))
			continue;
		size_t j = 0;
		while (j < n && strcmp(v[j].test, p->test))
			j++;
		if (j == n)
			v[n++].test = p->test;
		v[j].leaks++;
	}
	return n;
}

void output_pid(struct sbuf *b, const struct reaper_proc *p)
{
	if (p->outer_pid > 0)
		sbuf_printf(b, "%d (%d in the run's namespace)", (int)p->outer_pid, (int)p->pid);
	else
		sbuf_printf(b, "%d", (int)p->pid);
}

void output_found_by(struct sbuf *b, const struct reaper_finder *f, size_t nf, uint32_t mask,
		     void (*put)(struct sbuf *b, const char *name))
{
	char name[512];
	const char *sep = "";
	for (size_t i = 0; i < nf && i < 32; i++) {
		if (!(mask & (1u << i)))
			continue;
		/* one finder at a time: each name is escaped, cut or quoted on its own */
		if (reaper_matched_by(f, i + 1, 1u << i, name, sizeof name) < 0)
			snprintf(name, sizeof name, "%s", f[i].kind == REAPER_FIND_ENV ? "env (marker too long)" : "tree");
		sbuf_puts(b, sep);
		put(b, name);
		sep = ", ";
	}
}

/* Write text to path whole (replace.h); an error is said on stderr. */
static int write_file(const char *what, const char *path, struct sbuf *b)
{
	int r = b->oom ? -ENOMEM : replace_file(path, b->p ? b->p : "", b->len, REPLACE_SYNC);
	if (r < 0) {
		warn("error: cannot write the %s %s: %s", what, path, strerror(-r));
		return -1;
	}
	return 0;
}

int output_emit(struct output *o, const struct reaper_report *r, const struct reaper_finder *f, size_t nf,
		unsigned what)
{
	int rc = 0;
	clear_progress(o);
	if (what & OUT_HUMAN)
		human_report(stderr, o, r, f, nf);
	if ((what & OUT_FILES) && o->report_path) {
		struct sbuf b = { 0 };
		json_report(&b, o, r, f, nf);
		rc |= write_file("JSON report", o->report_path, &b);
		sbuf_free(&b);
	}
	if ((what & OUT_FILES) && o->junit_path) {
		struct sbuf b = { 0 };
		junit_report(&b, o, r, f, nf);
		rc |= write_file("JUnit report", o->junit_path, &b);
		sbuf_free(&b);
	}
	if ((what & OUT_GITHUB) && o->github)
		ci_github_annotations(r);
	if (what & OUT_GITHUB)
		ci_step_summary(r);
	return rc ? -1 : 0;
}

void output_done(struct output *o)
{
	for (size_t i = 0; i < o->npatterns; i++)
		free(o->pattern_from[i]);
	for (size_t i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	free(o->pattern_from);
	free(o->patterns);
	free(o->owned);
	memset(o, 0, sizeof *o);
}

static void frame(struct sbuf *b, const char *file, unsigned line, const char *func)
{
	sbuf_printf(b, "%s:%u", file, line);
	if (func && *func)
		sbuf_printf(b, " in %s", func);
}

int output_started_at(struct sbuf *b, const struct reaper_proc *p)
{
	int at = p->started_file && *p->started_file, in = p->started_in_file && *p->started_in_file;
	if (at)
		frame(b, p->started_file, p->started_line, p->started_func);
	/* the innermost frame, when it is not the test's own; worded as the pytest plugin words a
	 * site ("T.py:1 in t; h.py:2 in f"), less the library call only the plugin sees */
	if (in && (!at || strcmp(p->started_in_file, p->started_file) || p->started_in_line != p->started_line)) {
		sbuf_puts(b, at ? "; " : "");
		frame(b, p->started_in_file, p->started_in_line, p->started_in_func);
	}
	return at || in;
}

int output_incomplete(const struct reaper_report *r)
{
	if (!r->incomplete)
		return 0;
	warn("the result is incomplete: %s (%s); processes may have been missed or left running",
	     r->incomplete_reason ? r->incomplete_reason : "", strerror(r->incomplete));
	return 1;
}
