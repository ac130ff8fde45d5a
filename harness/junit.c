/* SPDX-License-Identifier: MIT */
/* junit: see junit.h. The layout follows what GitLab and Jenkins read (the Ant JUnit format;
 * tests/junit.xsd is the schema the suite validates it against): <testsuites> around one
 * <testsuite name="reaper">, each <testcase> named so that it is the same testcase in the
 * next run (CI systems track a test's history, and new/fixed failures, by classname + name):
 * classname from the test that started the process (a pytest node id tests/test_x.py::TestA::
 * test_b gives tests.test_x.TestA), name "test_b: leaked CMDLINE" with the cmdline normalised
 * (digits, temp names: testid.h), no pid; a <failure message= type=> whose text holds the
 * details (pid included). Unattributed leaks: classname "reaper", name "leaked CMDLINE". Strings are first made visible single-line text (escape_text:
 * control characters as \n, \t, \xNN; invalid UTF-8 bytes as \xNN), then XML-escaped, so
 * the document is valid XML 1.0 whatever bytes a cmdline holds. */
#define _GNU_SOURCE
#include "junit.h"
#include "testid.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* XML-escaped visible text of s, at most about max bytes (0: all). */
static void text(struct sbuf *b, const char *s, size_t max)
{
	struct sbuf t = { 0 };
	escape_text(&t, s, strlen(s), max);
	escape_xml(b, sbuf_str(&t), t.oom ? 0 : t.len);
	sbuf_free(&t);
}

static void detail(struct sbuf *b, const char *k, const char *v)
{
	sbuf_printf(b, "%-9s ", k);
	text(b, v, 0);
	sbuf_puts(b, "\n");
}

/* classname and name of p's testcase into id (NUL-separated, so that two can be compared) */
static void testcase_id(struct sbuf *id, const struct reaper_proc *p)
{
	struct sbuf test = { 0 };
	escape_text(&test, p->test, strlen(p->test), 200);
	testid_classname(id, sbuf_str(&test));
	sbuf_add(id, "", 1);
	size_t start = id->len;
	testid_name(id, sbuf_str(&test));
	sbuf_free(&test);
	if (id->len > start)
		sbuf_puts(id, ": ");
	sbuf_puts(id, reaper_proc_is_leak(p) ? "leaked " : p->fate == REAPER_KEPT ? "kept " : "allowed ");
	testid_command(id, p->cmdline, 200);
}

/* dup: how many earlier testcases have the same classname and name (they get " (2)", ...) */
static void testcase(struct sbuf *b, const struct output *o, const struct reaper_proc *p,
		     const struct reaper_finder *f, size_t nf, struct sbuf *id, size_t dup)
{
	int leak = reaper_proc_is_leak(p);
	const char *cls = sbuf_str(id);
	sbuf_puts(b, "    <testcase classname=\"");
	escape_xml(b, cls, strlen(cls));
	sbuf_puts(b, "\" name=\"");
	escape_xml(b, cls + strlen(cls) + 1, id->len - strlen(cls) - 1);
	if (dup)
		sbuf_printf(b, " (%zu)", dup + 1);
	sbuf_puts(b, "\" time=\"0\">\n");
	if (leak) {
		sbuf_puts(b, "      <failure type=\"process leak\" message=\"pid ");
		output_pid(b, p);
		sbuf_printf(b, " leaked (%s): ", reaper_fate_name(p->fate));
		text(b, p->cmdline, 200);
		if (p->why_read && p->why_text[0]) {
			sbuf_puts(b, "; still running: ");
			text(b, p->why_text, 300);
		}
		struct sbuf at = { 0 };
		if (output_started_at(&at, p)) {
			sbuf_puts(b, "; started at ");
			text(b, sbuf_str(&at), 300);
		}
		sbuf_free(&at);
		sbuf_puts(b, "\">");
	} else {
		sbuf_puts(b, "      <skipped message=\"pid ");
		output_pid(b, p);
		sbuf_printf(b, " %s: ",
			    p->fate == REAPER_KEPT ? "kept running by a --keep pattern" : "allowed by an --allow pattern");
		text(b, p->cmdline, 200);
		sbuf_puts(b, "\">");
	}
	char tmp[512];
	struct sbuf pid = { 0 };
	output_pid(&pid, p);
	detail(b, "pid:", sbuf_str(&pid));
	sbuf_free(&pid);
	snprintf(tmp, sizeof tmp, "%llu (clock ticks since boot)", (unsigned long long)p->start_time);
	detail(b, "started:", tmp);
	snprintf(tmp, sizeof tmp, "%.1f s when first seen", p->age);
	detail(b, "age:", tmp);
	snprintf(tmp, sizeof tmp, "%c", p->state >= 'A' && p->state <= 'z' ? p->state : '?');
	detail(b, "state:", tmp);
	detail(b, "fate:", reaper_fate_name(p->fate));
	detail(b, "cmdline:", p->cmdline);
	detail(b, "exe:", p->exe[0] ? p->exe : "?");
	detail(b, "cwd:", p->cwd[0] ? p->cwd : "?");
	struct sbuf by = { 0 };
	output_found_by(&by, f, nf, p->matched_by, sbuf_puts);
	detail(b, "found by:", sbuf_str(&by));
	sbuf_free(&by);
	if (output_reparented(o, p)) {
		struct sbuf anc = { 0 };
		sbuf_printf(&anc, "%s (" OUTPUT_REPARENTED ")", p->ancestry[0] ? p->ancestry : "?");
		detail(b, "ancestry:", sbuf_str(&anc));
		sbuf_free(&anc);
	} else {
		detail(b, "ancestry:", p->ancestry[0] ? p->ancestry : "?");
	}
	detail(b, "test:", p->test[0] ? p->test : OUTPUT_NO_TEST " (no REAPER_TEST in its environment)");
	struct sbuf at = { 0 };
	if (output_started_at(&at, p))
		detail(b, "started at:", sbuf_str(&at));
	sbuf_free(&at);
	if (p->holdings_read) {
		detail(b, "holds:", p->holds[0] ? p->holds : "no socket, no file of the run, not its output");
		snprintf(tmp, sizeof tmp, "RSS %.1f MiB, CPU %.2f s", (double)p->rss / 1048576.0, p->cpu_time);
		detail(b, "used:", tmp);
	}
	if (p->why_read && p->why_text[0])
		detail(b, "why:", p->why_text);
	sbuf_puts(b, leak ? "</failure>\n" : "</skipped>\n");
	sbuf_puts(b, "    </testcase>\n");
}

void junit_report(struct sbuf *b, const struct output *o, const struct reaper_report *r,
		  const struct reaper_finder *f, size_t nf)
{
	size_t tests = 0, skipped = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (reaper_proc_is_leak(p))
			tests++;
		else if (output_allowed(p) || p->fate == REAPER_KEPT)
			tests++, skipped++;
	}
	if (!r->leaks)
		tests++; /* the passing "no leaked processes" case */
	char when[32] = "";
	time_t t = time(NULL);
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	sbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	/* no skipped= here: Jenkins' schema has it on <testsuite> only */
	sbuf_printf(b, "<testsuites name=\"reaper\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" time=\"%.3f\">\n",
		    tests, r->leaks, r->waited);
	sbuf_printf(b,
		    "  <testsuite name=\"reaper\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" "
		    "time=\"%.3f\" timestamp=\"%s\">\n",
		    tests, r->leaks, skipped, r->waited, when);
	struct sbuf *ids = r->n ? calloc(r->n, sizeof *ids) : NULL;
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (!reaper_proc_is_leak(p) && !output_allowed(p) && p->fate != REAPER_KEPT)
			continue;
		struct sbuf one = { 0 }, *id = ids ? &ids[i] : &one;
		testcase_id(id, p);
		size_t dup = 0;
		for (size_t j = 0; ids && j < i; j++)
			dup += ids[j].len == id->len && !memcmp(ids[j].p, id->p, id->len);
		testcase(b, o, p, f, nf, id, dup);
		sbuf_free(&one);
	}
	for (size_t i = 0; ids && i < r->n; i++)
		sbuf_free(&ids[i]);
	free(ids);
	if (!r->leaks)
		sbuf_printf(b, "    <testcase classname=\"reaper\" name=\"no leaked processes\" time=\"%.3f\"/>\n",
			    r->waited);
	sbuf_puts(b, "  </testsuite>\n</testsuites>\n");
}
