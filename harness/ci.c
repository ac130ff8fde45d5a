/* SPDX-License-Identifier: MIT */
/* ci: see ci.h. */
#define _GNU_SOURCE
#include "ci.h"

#include "escape.h"
#include "msg.h"
#include "output.h"
#include "testid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The line REAPER_TEST_LOCATION=FILE:LINE gives for file (a test runner that knows where
 * its test is defined sets it), 0 when it does not name this file. */
static unsigned long location_line(const char *file, size_t flen)
{
	const char *loc = getenv("REAPER_TEST_LOCATION");
	const char *colon = loc ? strrchr(loc, ':') : NULL;
	if (!colon || (size_t)(colon - loc) != flen || strncmp(loc, file, flen))
		return 0;
	char *end;
	unsigned long line = strtoul(colon + 1, &end, 10);
	return *end || end == colon + 1 ? 0 : line;
}

void ci_github_annotations(const struct reaper_report *r)
{
	struct sbuf line = { 0 }, msg = { 0 };
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (!reaper_proc_is_leak(p))
			continue;
		msg.len = 0;
		sbuf_puts(&msg, "pid ");
		output_pid(&msg, p);
		sbuf_printf(&msg, " (%s, age %.1f s", reaper_fate_name(p->fate), p->age);
		if (p->test[0]) {
			sbuf_puts(&msg, ", test ");
			escape_text(&msg, p->test, strlen(p->test), 200);
		}
		sbuf_puts(&msg, ") leaked: ");
		escape_text(&msg, p->cmdline, strlen(p->cmdline), 300);
		if (p->cwd[0]) {
			sbuf_puts(&msg, " (cwd ");
			escape_text(&msg, p->cwd, strlen(p->cwd), 200);
			sbuf_puts(&msg, ")");
		}
		if (p->why_read && p->why_text[0]) {
			sbuf_puts(&msg, "; still running: ");
			escape_text(&msg, p->why_text, strlen(p->why_text), 300);
		}
		if (p->holds && p->holds[0]) {
			sbuf_puts(&msg, "; holds ");
			escape_text(&msg, p->holds, strlen(p->holds), 300);
		}
		struct sbuf at = { 0 };
		if (output_started_at(&at, p)) {
			sbuf_puts(&msg, "; started at ");
			escape_text(&msg, sbuf_str(&at), at.len, 300);
		}
		sbuf_free(&at);
		line.len = 0;
		sbuf_puts(&line, "::error ");
		/* the line that started it, else the test's file (and its line when known) */
		const char *site = p->started_file && *p->started_file ? p->started_file : p->started_in_file;
		unsigned site_line = site == p->started_file ? p->started_line : p->started_in_line;
		size_t flen = testid_file(p->test);
		if (site && *site) {
			struct sbuf file = { 0 };
			escape_text(&file, site, strlen(site), 0);
			sbuf_puts(&line, "file=");
			escape_github(&line, sbuf_str(&file), file.oom ? 0 : file.len, 1);
			sbuf_free(&file);
			if (site_line)
				sbuf_printf(&line, ",line=%u", site_line);
			sbuf_puts(&line, ",");
		} else if (flen) {
			/* visible text like the message: a file name's bytes must not reach a log raw */
			struct sbuf file = { 0 };
			escape_text(&file, p->test, flen, 0);
			sbuf_puts(&line, "file=");
			escape_github(&line, sbuf_str(&file), file.oom ? 0 : file.len, 1);
			sbuf_free(&file);
			unsigned long ln = location_line(p->test, flen);
			if (ln)
				sbuf_printf(&line, ",line=%lu", ln);
			sbuf_puts(&line, ",");
		}
		sbuf_puts(&line, "title=process leak::");
		escape_github(&line, sbuf_str(&msg), msg.oom ? 0 : msg.len, 0);
		printf("%s\n", sbuf_str(&line));
	}
	fflush(stdout);
	sbuf_free(&line);
	sbuf_free(&msg);
}

/* s as the text of a Markdown table cell: single-line visible text, '|' and '`' escaped. */
static void cell(struct sbuf *b, const char *s, size_t max)
{
	struct sbuf t = { 0 };
	escape_text(&t, s, strlen(s), max);
	const char *v = sbuf_str(&t);
	for (size_t i = 0; i < t.len && !t.oom; i++) {
		if (v[i] == '|' || v[i] == '`' || v[i] == '\\' || v[i] == '<' || v[i] == '*' || v[i] == '_')
			sbuf_puts(b, "\\");
		sbuf_add(b, v + i, 1);
	}
	sbuf_free(&t);
}

void ci_step_summary(const struct reaper_report *r)
{
	const char *path = getenv("GITHUB_STEP_SUMMARY");
	if (!path || !*path)
		return;
	struct sbuf b = { 0 };
	if (!r->leaks) {
		sbuf_puts(&b, "### reaper: no leaked processes\n\n");
	} else {
		sbuf_printf(&b, "### reaper: %zu leaked process%s\n\n", r->leaks, r->leaks == 1 ? "" : "es");
		sbuf_puts(&b, "| test | pid | fate | age | command | cwd |\n|---|---:|---|---:|---|---|\n");
		for (size_t i = 0; i < r->n; i++) {
			const struct reaper_proc *p = &r->procs[i];
			if (!reaper_proc_is_leak(p))
				continue;
			sbuf_puts(&b, "| ");
			cell(&b, p->test[0] ? p->test : OUTPUT_NO_TEST, 200);
			sbuf_puts(&b, " | ");
			output_pid(&b, p);
			sbuf_printf(&b, " | %s | %.1f s | ", reaper_fate_name(p->fate), p->age);
			cell(&b, p->cmdline, 200);
			sbuf_puts(&b, " | ");
			cell(&b, p->cwd[0] ? p->cwd : "?", 200);
			sbuf_puts(&b, " |\n");
		}
		sbuf_puts(&b, "\n");
	}
	/* one write of the whole table, appended: other steps' summaries stay as they are */
	int fd = b.oom ? -1 : open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	int e = b.oom ? ENOMEM : errno;
	if (fd >= 0) {
		ssize_t w = write(fd, b.p, b.len);
		e = w == (ssize_t)b.len ? 0 : w < 0 ? errno : EIO;
		if (close(fd) != 0 && !e)
			e = errno;
	}
	sbuf_free(&b);
	if (e)
		warn("warning: cannot append to GITHUB_STEP_SUMMARY %s: %s", path, strerror(e));
}
