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

struct frame {
	size_t i, plen; /* the process; the length of its prefix */
	int last, root;
};

struct tree {
	FILE *out;
	const struct output *o;
	const struct reaper_report *r;
	const struct reaper_finder *f;
	size_t nf;
	ssize_t *parent;  /* index of the shown parent, -1 for a root */
	ssize_t *first_child, *next_sibling; /* the children of each, in report order */
	size_t *nkids;
	struct frame *stack; /* draw_subtree's: one frame per process at most */
	struct sbuf line;
};

static void put_name(struct sbuf *b, const char *name)
{
	escape_text(b, name, strlen(name), CMDLINE_MAX);
}

static const char *color(const struct output *o, const char *code)
{
	return o->color ? code : "";
}

static void label(struct tree *t, const struct reaper_proc *p)
{
	const char *what, *code;
	if (reaper_proc_is_leak(p))
		what = "LEAK", code = "\033[1;31m";
	else if (output_allowed(p))
		what = "ALLOWED", code = "\033[36m";
	else if (p->fate == REAPER_KEPT)
		what = "KEPT", code = "\033[33m";
	else if (p->fate == REAPER_ZOMBIE_HELD)
		what = "ZOMBIE", code = "\033[35m";
	else if (p->fate == REAPER_FOREIGN)
		what = "FOREIGN", code = "\033[33m";
	else if (p->fate == REAPER_MOVED_IN)
		what = "MOVED IN", code = "\033[33m";
	else
		what = "SEEN", code = "";
	sbuf_printf(&t->line, "%s%s%s (%s%s)", color(t->o, code), what, color(t->o, "\033[0m"), reaper_fate_name(p->fate),
		    p->fate == REAPER_ALIVE && t->o->report_only ? ", report only" : "");
}

/* One process: its line, then its details under it. sub gets the prefix of its children. */
static void node(struct tree *t, size_t i, const char *prefix, int last, int root, char *sub, size_t sublen)
{
	const struct reaper_proc *p = &t->r->procs[i];
	struct sbuf *l = &t->line;
	l->len = 0;
	sbuf_printf(l, "  %s%s", prefix, root ? "" : last ? "`- " : "|- ");
	output_pid(l, p);
	sbuf_puts(l, " ");
	label(t, p);
	sbuf_puts(l, " ");
	escape_text(l, p->cmdline, strlen(p->cmdline), CMDLINE_MAX);
	fprintf(t->out, "%s\n", sbuf_str(l));

	/* details hang under the node, beside the lines of its children */
	/* past what a line can show, deeper levels are drawn without more indentation */
	size_t plen = strlen(prefix);
	const char *more = root || plen > 200 ? "" : last ? "   " : "|  ";
	if (plen > sublen - 4)
		plen = sublen - 4; /* never: prefixes stop growing at 200 */
	memcpy(sub, prefix, plen);
	strcpy(sub + plen, more);
	const char *bar = t->nkids[i] ? "|  " : "   ";
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
	struct sbuf at = { 0 };
	if (output_started_at(&at, p)) {
		l->len = 0;
		sbuf_printf(l, "  %s%s  started at ", sub, bar);
		escape_text(l, sbuf_str(&at), at.len, HOLDS_MAX);
		fprintf(t->out, "%s\n", sbuf_str(l));
	}
	sbuf_free(&at);
	l->len = 0;
	sbuf_printf(l, "  %s%s  found by ", sub, bar);
	output_found_by(l, t->f, t->nf, p->matched_by, put_name);
	fprintf(t->out, "%s\n", sbuf_str(l));
	if (p->why_read && p->why_text[0]) {
		l->len = 0;
		sbuf_printf(l, "  %s%s  still running: ", sub, bar);
		escape_text(l, p->why_text, strlen(p->why_text), HOLDS_MAX);
		fprintf(t->out, "%s\n", sbuf_str(l));
	}
	if (p->holds && p->holds[0]) {
		l->len = 0;
		sbuf_printf(l, "  %s%s  holds ", sub, bar);
		escape_text(l, p->holds, strlen(p->holds), HOLDS_MAX);
		fprintf(t->out, "%s\n", sbuf_str(l));
	}
}

/* The tree under root, depth first, with a stack of our own: a chain of leftovers can be as
 * deep as the kernel lets processes fork, far deeper than a call stack. Each frame keeps the
 * length of its prefix; the prefix bytes up to it stay as its ancestors wrote them. */
static void draw_subtree(struct tree *t, size_t root)
{
	struct frame *st = t->stack;
	char prefix[256], sub[256];
	size_t sp = 0;
	st[sp++] = (struct frame){ root, 0, 1, 1 };
	prefix[0] = 0;
	while (sp) {
		struct frame f = st[--sp];
		prefix[f.plen] = 0;
		node(t, f.i, prefix, f.last, f.root, sub, sizeof sub);
		size_t slen = strlen(sub);
		memcpy(prefix, sub, slen + 1);
		/* children in report order: pushed last first */
		size_t k = t->nkids[f.i], n = 0;
		for (ssize_t c = t->first_child[f.i]; c >= 0; c = t->next_sibling[c], n++)
			st[sp + k - 1 - n] = (struct frame){ (size_t)c, slen, n == k - 1, 0 };
		sp += k;
	}
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

/* Children lists from the parent links, each in report order. */
static void link_children(struct tree *t)
{
	size_t n = t->r->n;
	for (size_t i = 0; i < n; i++) {
		t->first_child[i] = t->next_sibling[i] = -1;
		t->nkids[i] = 0;
	}
	for (size_t i = n; i-- > 0;) {
		ssize_t p = t->parent[i];
		if (p < 0)
			continue;
		t->next_sibling[i] = t->first_child[p];
		t->first_child[p] = (ssize_t)i;
		t->nkids[p]++;
	}
}

static void draw_tree(struct tree *t)
{
	const struct reaper_report *r = t->r;
	const char *last_context = NULL;
	int last_reparented = 0;
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
		if (!last_context || strcmp(last_context, p->ancestry) || output_reparented(t->o, p) != last_reparented) {
			t->line.len = 0;
			sbuf_puts(&t->line, "  under ");
			escape_text(&t->line, p->ancestry[0] ? p->ancestry : "?", p->ancestry[0] ? strlen(p->ancestry) : 1,
				    CMDLINE_MAX * 2);
			if (output_reparented(t->o, p))
				sbuf_puts(&t->line, " (" OUTPUT_REPARENTED ")");
			fprintf(t->out, "%s\n", sbuf_str(&t->line));
			last_context = p->ancestry;
			last_reparented = output_reparented(t->o, p);
		}
		draw_subtree(t, i);
	}
}

static void summary(struct tree *t)
{
	const struct reaper_report *r = t->r;
	struct sbuf *l = &t->line;
	l->len = 0;
	sbuf_printf(l,
		    "reaper: %sSUMMARY: %zu leaked%s (%zu terminated, %zu killed, %zu unkillable", color(t->o, r->leaks ? "\033[1;31m" : "\033[32m"),
		    r->leaks, color(t->o, "\033[0m"), r->terminated, r->killed, r->unkillable);
	if (t->o->report_only)
		sbuf_printf(l, ", %zu still running, report only: nothing signalled", output_still_running(r));
	sbuf_printf(l, "), %zu exited in time, %zu kept, %zu allowed, %zu zombies held by live parents%s", r->exited,
		    r->kept, r->allowed, r->zombies_held, r->escalated ? "; SIGKILL was needed" : "");
	if (r->foreign)
		sbuf_printf(l, "; %zu foreign (another user's, found only by a marker): not signalled", r->foreign);
	if (r->moved_in)
		sbuf_printf(l, "; %zu moved in (moved into its cgroup from outside the run, or started there by one that was): not signalled", r->moved_in);
	struct test_count *tc;
	size_t n = output_tests(r, &tc);
	for (size_t i = 0; i < n; i++) {
		sbuf_puts(l, i ? ", " : "; leaks per test: ");
		if (tc[i].test[0])
			escape_text(l, tc[i].test, strlen(tc[i].test), CMDLINE_MAX);
		else
			sbuf_puts(l, OUTPUT_NO_TEST);
		sbuf_printf(l, " %zu", tc[i].leaks);
	}
	free(tc);
	if (t->o->tracking) /* reaper run: how the run was tracked */
		sbuf_printf(l, "; tracking: %s", t->o->tracking);
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
	size_t shown = 0;
	for (size_t i = 0; i < r->n; i++)
		shown += output_shown(&r->procs[i]);
	/* nothing left behind: a clean step is a silent one, as with timeout(1) or tini */
	if (!shown && !o->verbose)
		return;
	size_t n = r->n ? r->n : 1;
	t.parent = calloc(n, sizeof *t.parent);
	t.first_child = calloc(n, sizeof *t.first_child);
	t.next_sibling = calloc(n, sizeof *t.next_sibling);
	t.nkids = calloc(n, sizeof *t.nkids);
	t.stack = calloc(n, sizeof *t.stack);
	if (t.parent && t.first_child && t.next_sibling && t.nkids && t.stack) {
		link_parents(&t);
		link_children(&t);
		draw_tree(&t);
	} else {
		fprintf(out, "reaper: out of memory: the process tree is not shown\n");
	}
	summary(&t);
	pattern_table(&t);
	free(t.parent);
	free(t.first_child);
	free(t.next_sibling);
	free(t.nkids);
	free(t.stack);
	sbuf_free(&t.line);
	fflush(out);
}
