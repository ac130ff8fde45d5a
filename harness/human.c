/* SPDX-License-Identifier: MIT */
/* human: see human.h. Every string from /proc goes through escape_text, so a cmdline can
 * neither break the layout nor send escape sequences to the terminal. */
#define _GNU_SOURCE
#include "human.h"

#include "escape.h"

#include <stdlib.h>
#include <string.h>

#define CMDLINE_MAX 120
#define HOLDS_MAX 400

struct tree {
	FILE *out;
	const struct output *o;
	const struct reaper_report *r;
	const struct reaper_finder *f;
	size_t nf;
	ssize_t *parent;  /* index of the shown parent, -1 for a root */
	struct sbuf line;
};

static const char *color(const struct output *o, const char *code)
{
	return o->color ? code : "";
}

static void label(struct tree *t, const struct reaper_proc *p)
{
	const char *what, *code;
	if (reaper_proc_is_leak(p))
		what = "LEAK", code = "\033[1;31m";
	else if (p->allowed)
		what = "ALLOWED", code = "\033[36m";
	else if (p->fate == REAPER_KEPT)
		what = "KEPT", code = "\033[33m";
	else if (p->fate == REAPER_ZOMBIE_HELD)
		what = "ZOMBIE", code = "\033[35m";
	else
		what = "SEEN", code = "";
	sbuf_printf(&t->line, "%s%s%s (%s%s)", color(t->o, code), what, color(t->o, "\033[0m"), reaper_fate_name(p->fate),
		    p->fate == REAPER_ALIVE && t->o->report_only ? ", report only" : "");
}

static void node(struct tree *t, size_t i, const char *prefix, int last, int root)
{
	const struct reaper_proc *p = &t->r->procs[i];
	struct sbuf *l = &t->line;
	l->len = 0;
	sbuf_printf(l, "  %s%s%d ", prefix, root ? "" : last ? "`- " : "|- ", (int)p->pid);
	label(t, p);
	sbuf_puts(l, " ");
	escape_text(l, p->cmdline, strlen(p->cmdline), CMDLINE_MAX);
	fprintf(t->out, "%s\n", sbuf_str(l));

	/* details hang under the node, beside the lines of its children */
	char sub[256];
	/* past what a line can show, deeper levels are drawn without more indentation */
	snprintf(sub, sizeof sub, "%s%s", prefix, root || strlen(prefix) > 200 ? "" : last ? "   " : "|  ");
	int kids = 0;
	for (size_t j = 0; j < t->r->n; j++)
		kids += t->parent[j] == (ssize_t)i;
	const char *bar = kids ? "|  " : "   ";
	l->len = 0;
	sbuf_printf(l, "  %s%s  age %.1f s, state %c", sub, bar, p->age, p->state ? p->state : '?');
	if (p->holdings_read)
		sbuf_printf(l, ", rss %.1f MiB, cpu %.2f s", (double)p->rss / 1048576.0, p->cpu_time);
	if (p->test[0]) {
		sbuf_puts(l, ", test ");
		escape_text(l, p->test, strlen(p->test), CMDLINE_MAX);
	}
	sbuf_puts(l, ", cwd ");
	escape_text(l, p->cwd[0] ? p->cwd : "?", p->cwd[0] ? strlen(p->cwd) : 1, CMDLINE_MAX);
	fprintf(t->out, "%s\n", sbuf_str(l));
	l->len = 0;
	sbuf_printf(l, "  %s%s  found by ", sub, bar);
	char name[512];
	int first = 1;
	for (size_t k = 0; k < t->nf && k < 32; k++) {
		if (!(p->matched_by & (1u << k)))
			continue;
		output_finder_name(t->f, k, name, sizeof name);
		if (!first)
			sbuf_puts(l, ", ");
		escape_text(l, name, strlen(name), CMDLINE_MAX);
		first = 0;
	}
	fprintf(t->out, "%s\n", sbuf_str(l));
	if (p->holds && p->holds[0]) {
		l->len = 0;
		sbuf_printf(l, "  %s%s  holds ", sub, bar);
		escape_text(l, p->holds, strlen(p->holds), HOLDS_MAX);
		fprintf(t->out, "%s\n", sbuf_str(l));
	}

	int seen = 0;
	for (size_t j = 0; j < t->r->n; j++)
		if (t->parent[j] == (ssize_t)i)
			node(t, j, sub, ++seen == kids, 0);
}

/* A shown process's parent is the shown process that had its ppid as pid when first seen
 * and started no later (a pid reused after the parent died is not its parent). */
static void link_parents(struct tree *t)
{
	const struct reaper_report *r = t->r;
	for (size_t i = 0; i < r->n; i++) {
		t->parent[i] = -1;
		if (!output_shown(&r->procs[i]))
			continue;
		for (size_t j = 0; j < r->n; j++)
			if (j != i && output_shown(&r->procs[j]) && r->procs[j].pid == r->procs[i].ppid &&
			    r->procs[j].start_time <= r->procs[i].start_time)
				t->parent[i] = (ssize_t)j;
	}
	/* equal start times could make a loop in theory: cut it */
	for (size_t i = 0; i < r->n; i++) {
		ssize_t p = t->parent[i];
		for (size_t steps = 0; p >= 0; steps++) {
			if (steps > r->n || (size_t)p == i) {
				t->parent[i] = -1;
				break;
			}
			p = t->parent[p];
		}
	}
}

static void draw_tree(struct tree *t)
{
	const struct reaper_report *r = t->r;
	const char *last_context = NULL;
	size_t nshown = 0;
	for (size_t i = 0; i < r->n; i++)
		nshown += output_shown(&r->procs[i]);
	if (!nshown)
		return;
	fprintf(t->out, "reaper: %zu process%s left behind (process tree as first seen):\n", nshown,
		nshown == 1 ? "" : "es");
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (!output_shown(p) || t->parent[i] >= 0)
			continue;
		if (!last_context || strcmp(last_context, p->ancestry)) {
			t->line.len = 0;
			sbuf_puts(&t->line, "  under ");
			escape_text(&t->line, p->ancestry[0] ? p->ancestry : "?", p->ancestry[0] ? strlen(p->ancestry) : 1,
				    CMDLINE_MAX * 2);
			fprintf(t->out, "%s\n", sbuf_str(&t->line));
			last_context = p->ancestry;
		}
		node(t, i, "", 1, 1);
	}
}

static void summary(struct tree *t)
{
	const struct reaper_report *r = t->r;
	struct sbuf *l = &t->line;
	l->len = 0;
	sbuf_printf(l,
		    "reaper: %sSUMMARY: %zu leaked%s (%zu terminated, %zu killed, %zu unkillable%s), %zu exited in time, "
		    "%zu kept, %zu allowed, %zu zombies held by live parents%s",
		    color(t->o, r->leaks ? "\033[1;31m" : "\033[32m"), r->leaks, color(t->o, "\033[0m"), r->terminated,
		    r->killed, r->unkillable, t->o->report_only ? ", report only: nothing signalled" : "", r->exited,
		    r->kept, r->allowed, r->zombies_held, r->escalated ? "; SIGKILL was needed" : "");
	struct test_count *tc;
	size_t n = output_tests(r, &tc);
	for (size_t i = 0; i < n; i++) {
		sbuf_puts(l, i ? ", " : "; leaks per test: ");
		if (tc[i].test[0])
			escape_text(l, tc[i].test, strlen(tc[i].test), CMDLINE_MAX);
		else
			sbuf_puts(l, "(no test)");
		sbuf_printf(l, " %zu", tc[i].leaks);
	}
	free(tc);
	fprintf(t->out, "%s\n", sbuf_str(l));
}

/* As sanitizer suppression lists do: every pattern with how often it matched. */
static void pattern_table(struct tree *t)
{
	const struct output *o = t->o;
	if (!o->npatterns)
		return;
	fprintf(t->out, "reaper: ------------------------------------------------------------\n"
			"reaper: patterns:   hits  kind   pattern  (from)\n");
	for (size_t i = 0; i < o->npatterns; i++) {
		t->line.len = 0;
		size_t hits = i < t->r->npatterns && t->r->pattern_hits ? t->r->pattern_hits[i] : 0;
		sbuf_printf(&t->line, "reaper: %15zu  %-5s  ", hits, o->patterns[i].kind == REAPER_KEEP ? "keep" : "allow");
		escape_text(&t->line, o->patterns[i].glob, strlen(o->patterns[i].glob), CMDLINE_MAX);
		sbuf_puts(&t->line, "  (");
		escape_text(&t->line, o->pattern_from[i], strlen(o->pattern_from[i]), CMDLINE_MAX);
		sbuf_puts(&t->line, ")");
		fprintf(t->out, "%s\n", sbuf_str(&t->line));
	}
	fprintf(t->out, "reaper: ------------------------------------------------------------\n");
}

void human_report(FILE *out, const struct output *o, const struct reaper_report *r, const struct reaper_finder *f,
		  size_t nf)
{
	struct tree t = { .out = out, .o = o, .r = r, .f = f, .nf = nf };
	t.parent = calloc(r->n ? r->n : 1, sizeof *t.parent);
	if (t.parent) {
		link_parents(&t);
		draw_tree(&t);
	}
	summary(&t);
	pattern_table(&t);
	free(t.parent);
	sbuf_free(&t.line);
	fflush(out);
}
