/* SPDX-License-Identifier: MIT */
/* state: see state.h. Written 0600 as every file reaper writes (replace.h): a reader sees
 * the old document or the new one, never half of one. */
#define _GNU_SOURCE
#include "state.h"

#include "msg.h"
#include "replace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* snprintf's return is what it wanted to write, not what it wrote: this is the length of a
 * whole write into n bytes, or -1 for a cut (or failed) one, which must never be added up. */
static ssize_t whole(int len, size_t n)
{
	return len < 0 || (size_t)len >= n ? -1 : (ssize_t)len;
}

void state_phase(struct run_state *s, const char *phase)
{
	if (s->nphases && !strcmp(s->phases[s->nphases - 1], phase))
		return;
	if (s->nphases < (int)(sizeof s->phases / sizeof *s->phases))
		s->phases[s->nphases++] = phase;
	s->phase = phase;
}

void state_write(struct run_state *s)
{
	if (!s->path || s->failed)
		return;
	char doc[1024], when[64], code[16], sig[16], seen[160] = "";
	for (size_t i = 0, o = 0; i < (size_t)s->nphases; i++) {
		ssize_t w = whole(snprintf(seen + o, sizeof seen - o, "%s\"%s\"", i ? ", " : "", s->phases[i]),
				  sizeof seen - o);
		if (w < 0) {
			seen[o] = 0; /* a cut name would break the JSON: the list ends before it */
			break;
		}
		o += (size_t)w;
	}
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t wl = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm); /* 0 on failure */
	snprintf(when + wl, sizeof when - wl, ".%03ldZ", ts.tv_nsec / 1000000);
	snprintf(code, sizeof code, s->runner_exit_code < 0 ? "null" : "%d", s->runner_exit_code);
	snprintf(sig, sizeof sig, s->termination_signal ? "%d" : "null", s->termination_signal);
	char guardian[16], ns[80] = "";
	snprintf(guardian, sizeof guardian, s->guardian_pid ? "%d" : "null", (int)s->guardian_pid);
	/* in a namespace of its own, the pids the caller can use, the namespace's beside them */
	if (s->ns_reaper_pid)
		snprintf(ns, sizeof ns, "\"reaper_ns_pid\": %d, \"command_ns_pid\": %d, ", (int)s->ns_reaper_pid,
			 (int)s->ns_command_pid);
	ssize_t len = whole(snprintf(doc, sizeof doc,
			   "{\"version\": 1, \"phase\": \"%s\", \"run_id\": \"%s\", \"reaper_pid\": %d, "
			   "\"command_pid\": %d, %s\"guardian_pid\": %s, \"active_children\": %ld, \"adopted_children\": %ld, "
			   "\"orphaned_children_total\": %lu, \"reaped_children_total\": %lu, "
			   "\"reaped_orphans_total\": %lu, \"escalated\": %s, \"termination_signal\": %s, "
			   "\"runner_exit_code\": %s, \"leaks\": %lu, \"phases\": [%s], \"timeout\": %g, "
			   "\"grace\": %g, \"leak_exit_code\": %d, \"tracking\": \"%s\", \"updated_at\": \"%s\"}\n",
			   s->phase, s->run_id ? s->run_id : "", (int)(s->reaper_pid ? s->reaper_pid : getpid()), (int)s->command_pid, ns, guardian,
			   s->active_children, s->adopted_children, s->orphaned_children_total,
			   s->reaped_children_total, s->reaped_orphans_total, s->escalated ? "true" : "false",
			   sig, code, s->leaks, seen, s->timeout, s->grace, s->leak_exit_code,
			   s->tracking ? s->tracking : "proc", when), sizeof doc);
	/* a cut document is no JSON: not written (the fields are bounded, so this is latent) */
	int r = len < 0 ? -EOVERFLOW : replace_file(s->path, doc, (size_t)len, REPLACE_PRIVATE);
	if (r < 0) {
		warn("warning: process state unavailable: %s: %s", s->path, strerror(-r));
		s->failed = 1;
	}
}
