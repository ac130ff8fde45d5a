/* SPDX-License-Identifier: MIT */
/* Fuzz the allow-file parser (harness/options.c): any file text is either taken whole (every
 * pattern non-empty, trimmed, named FILE:LINE) or refused whole with a message naming the
 * file, never a crash or a leak. */
#define _GNU_SOURCE
#include "harness/options.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	struct output o;
	output_init(&o, "reap");
	check(output_option(&o, OUTPUT_OPT_ALLOW, "*first*") == 1);
	int r = output_allow_stream(&o, f, "fuzz.allow");
	fclose(f);
	if (r < 0) {
		check(o.npatterns == 1);
		check(!strncmp(o.err, "--allow-file fuzz.allow", 23) || !strcmp(o.err, "out of memory"));
	} else {
		check(r == 0 && o.npatterns >= 1);
		for (size_t i = 1; i < o.npatterns; i++) {
			const char *g = o.patterns[i].glob;
			size_t n = strlen(g);
			check(n > 0 && g[0] != ' ' && g[0] != '\t' && g[n - 1] != ' ' && g[n - 1] != '\n');
			check(o.patterns[i].kind == REAPER_ALLOW || o.patterns[i].kind == REAPER_KEEP);
			check(!strncmp(o.pattern_from[i], "fuzz.allow:", 11));
		}
	}
	output_done(&o);
	return 0;
}
