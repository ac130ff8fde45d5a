/* SPDX-License-Identifier: MIT */
/* json: the JSON report, schema "reaper-report/1.2" (docs/report-schema.md). */
#ifndef HARNESS_JSON_H
#define HARNESS_JSON_H

#include "escape.h"
#include "output.h"

/* Append the whole document (one object and a newline) to b. */
void json_report(struct sbuf *b, const struct output *o, const struct reaper_report *r,
		 const struct reaper_finder *f, size_t nf);

#endif
