/* SPDX-License-Identifier: MIT */
/* json: see json.h; the schema is documented in docs/report-schema.md. Every string goes
 * through escape_json, and a string that was not valid UTF-8 also gets a NAME_hex twin
 * holding its exact bytes, so nothing /proc said is lost. */
#define _GNU_SOURCE
#include "json.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA "reaper-report/1.2"

static void key(struct sbuf *b, const char *k)
{
	sbuf_printf(b, "\"%s\": ", k);
}

static void field_str(struct sbuf *b, const char *k, const char *s, const char *sep)
{
	size_t len = strlen(s);
	key(b, k);
	if (escape_json(b, s, len)) {
		sbuf_printf(b, ", \"%s_hex\": \"", k);
		for (size_t i = 0; i < len; i++)
			sbuf_printf(b, "%02x", (unsigned char)s[i]);
		sbuf_puts(b, "\"");
	}
	sbuf_puts(b, sep);
}

static void put_name(struct sbuf *b, const char *name)
{
	escape_json(b, name, strlen(name));
}

static const char *boolean(int v)
{
	return v ? "true" : "false";
}

/* The stat state letter; anything unexpected becomes '?' so it needs no escaping. */
static char state_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ? c : '?';
}

/* A frame of where it was started: {"file", "line", "function"}, or null. */
static void frame(struct sbuf *b, const char *file, unsigned line, const char *func)
{
	if (!file || !*file) {
		sbuf_puts(b, "null");
		return;
	}
	sbuf_puts(b, "{");
	field_str(b, "file", file, ", ");
	sbuf_printf(b, "\"line\": %u, ", line);
	field_str(b, "function", func ? func : "", "}");
}

static void started_at(struct sbuf *b, const struct reaper_proc *p)
{
	key(b, "started_at");
	if ((!p->started_file || !*p->started_file) && (!p->started_in_file || !*p->started_in_file)) {
		sbuf_puts(b, "null,\n      ");
		return;
	}
	sbuf_puts(b, "{\"test_frame\": ");
	frame(b, p->started_file, p->started_line, p->started_func);
	sbuf_puts(b, ", \"innermost\": ");
	frame(b, p->started_in_file, p->started_in_line, p->started_in_func);
	sbuf_puts(b, "},\n      ");
}

/* Why a leak was still running: the reasons in words and each fact alone. */
static void why(struct sbuf *b, const struct reaper_proc *p)
{
	const char *term = p->why & REAPER_WHY_TERM_IGNORED ? "\"ignored\""
			   : p->why & REAPER_WHY_TERM_CAUGHT ? "\"caught\""
			   : p->why & REAPER_WHY_READ_SIGNALS ? "\"default\""
						      : "null";
	sbuf_puts(b, ",\n      \"why\": {");
	field_str(b, "summary", p->why_text, ", ");
	sbuf_printf(b, "\"sigterm\": %s, \"stopped\": %s, \"traced_by\": ", term,
		    boolean(p->why & REAPER_WHY_STOPPED));
	if (p->why & REAPER_WHY_TRACED)
		sbuf_printf(b, "%d, ", (int)p->tracer);
	else
		sbuf_puts(b, "null, ");
	if (p->wchan[0])
		field_str(b, "wchan", p->wchan, ", ");
	else
		sbuf_puts(b, "\"wchan\": null, ");
	if (p->tty[0])
		field_str(b, "tty", p->tty, ", ");
	else
		sbuf_puts(b, "\"tty\": null, ");
	sbuf_printf(b, "\"holds_output\": %s, \"holds_stdin\": %s}", boolean(p->why & REAPER_WHY_OUTPUT),
		    boolean(p->why & REAPER_WHY_INPUT));
}

static void proc(struct sbuf *b, const struct output *o, const struct reaper_proc *p, const struct reaper_finder *f,
		 size_t nf)
{
	/* the caller's pid, and beside it the one in the run's namespace (--isolate) */
	sbuf_printf(b, "    {\"pid\": %d, ", (int)(p->outer_pid > 0 ? p->outer_pid : p->pid));
	if (p->outer_pid > 0)
		sbuf_printf(b, "\"ns_pid\": %d, ", (int)p->pid);
	sbuf_printf(b, "\"ppid\": %d, \"pgrp\": %d, \"uid\": %ld, \"start_time\": %llu, "
		       "\"age\": %.3f, \"state\": \"%c\",\n      ",
		    (int)p->ppid, (int)p->pgrp, p->uid == (uid_t)-1 ? -1L : (long)p->uid,
		    (unsigned long long)p->start_time, p->age, state_char(p->state));
	field_str(b, "cmdline", p->cmdline, ",\n      ");
	field_str(b, "comm", p->comm, ", ");
	field_str(b, "exe", p->exe, ",\n      ");
	field_str(b, "cwd", p->cwd, ",\n      ");
	key(b, "found_by");
	sbuf_puts(b, "[");
	output_found_by(b, f, nf, p->matched_by, put_name);
	sbuf_puts(b, "],\n      ");
	field_str(b, "ancestry", p->ancestry, ", ");
	sbuf_printf(b, "\"reparented\": %s,\n      ", boolean(output_reparented(o, p)));
	if (p->test[0])
		field_str(b, "test", p->test, ", ");
	else
		sbuf_puts(b, "\"test\": null, ");
	started_at(b, p);
	sbuf_printf(b, "\"fate\": \"%s\", \"leak\": %s, \"allowed\": %s, \"kept\": %s, ", reaper_fate_name(p->fate),
		    boolean(reaper_proc_is_leak(p)), boolean(p->allowed), boolean(p->fate == REAPER_KEPT));
	if (p->exit_status >= 0)
		sbuf_printf(b, "\"exit_status\": %d, ", p->exit_status);
	else
		sbuf_puts(b, "\"exit_status\": null, ");
	sbuf_printf(b, "\"environ_unreadable\": %s", boolean(p->environ_unreadable));
	if (p->holdings_read) {
		sbuf_printf(b, ",\n      \"holdings\": {\"rss\": %llu, \"cpu_time\": %.2f, ", (unsigned long long)p->rss,
			    p->cpu_time);
		field_str(b, "summary", p->holds, ", \"held\": [");
		for (size_t i = 0; i < p->nholdings; i++) {
			const struct reaper_holding *hd = &p->holdings[i];
			sbuf_printf(b, "%s{\"kind\": \"%s\", \"fd\": %d, ", i ? ", " : "", reaper_hold_kind_name(hd->kind),
				    hd->fd);
			field_str(b, "what", hd->what, "}");
		}
		sbuf_puts(b, "]}");
	}
	if (p->why_read)
		why(b, p);
	sbuf_puts(b, "}");
}

void json_report(struct sbuf *b, const struct output *o, const struct reaper_report *r,
		 const struct reaper_finder *f, size_t nf)
{
	char when[32] = "";
	time_t t = time(NULL);
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	sbuf_printf(b, "{\n  \"schema\": \"%s\",\n  \"tool\": {\"name\": \"reaper\", \"version\": \"%s\"},\n", SCHEMA,
		    REAPER_VERSION);
	sbuf_printf(b, "  \"command\": \"%s\",\n  \"generated_at\": \"%s\",\n  \"clock_ticks_per_second\": %ld,\n",
		    o->command ? o->command : "reaper", when, sysconf(_SC_CLK_TCK));
	sbuf_printf(b, "  \"options\": {\"timeout\": %.3f, \"grace\": %.3f, \"report_only\": %s},\n", o->timeout,
		    o->grace, boolean(o->report_only));
	sbuf_printf(b, "  \"tracking\": \"%s\",\n", o->tracking ? o->tracking : "proc");
	sbuf_puts(b, "  \"finders\": [");
	output_found_by(b, f, nf, UINT32_MAX, put_name);
	sbuf_puts(b, "],\n");
	sbuf_printf(b,
		    "  \"summary\": {\"processes\": %zu, \"leaks\": %zu, \"exited\": %zu, \"terminated\": %zu, "
		    "\"killed\": %zu, \"unkillable\": %zu, \"alive\": %zu, \"zombies_held\": %zu, \"kept\": %zu, "
		    "\"allowed\": %zu, \"foreign\": %zu, \"escalated\": %s, \"waited\": %.3f, \"marker_scan\": %.3f, "
		    "\"moved_in\": %zu},\n",
		    r->n, r->leaks, r->exited, r->terminated, r->killed, r->unkillable, output_still_running(r),
		    r->zombies_held, r->kept, r->allowed, r->foreign, boolean(r->escalated), r->waited, r->marker_scan,
		    r->moved_in);
	struct test_count *tc;
	size_t ntc = output_tests(r, &tc);
	sbuf_puts(b, "  \"leaks_per_test\": [");
	for (size_t i = 0; i < ntc; i++) {
		sbuf_puts(b, i ? ", {" : "{");
		if (tc[i].test[0])
			field_str(b, "test", tc[i].test, ", ");
		else
			sbuf_puts(b, "\"test\": null, ");
		sbuf_printf(b, "\"leaks\": %zu}", tc[i].leaks);
	}
	free(tc);
	sbuf_puts(b, "],\n  \"patterns\": [");
	for (size_t i = 0; i < o->npatterns; i++) {
		sbuf_printf(b, "%s\n    {\"kind\": \"%s\", ", i ? "," : "",
			    o->patterns[i].kind == REAPER_KEEP ? "keep" : "allow");
		field_str(b, "pattern", o->patterns[i].glob, ", ");
		field_str(b, "from", o->pattern_from[i], ", ");
		sbuf_printf(b, "\"hits\": %zu}", i < r->npatterns && r->pattern_hits ? r->pattern_hits[i] : 0);
	}
	sbuf_puts(b, o->npatterns ? "\n  ],\n  \"processes\": [" : "],\n  \"processes\": [");
	for (size_t i = 0; i < r->n; i++) {
		sbuf_puts(b, i ? ",\n" : "\n");
		proc(b, o, &r->procs[i], f, nf);
	}
	sbuf_puts(b, r->n ? "\n  ]\n}\n" : "]\n}\n");
}
