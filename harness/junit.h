/* SPDX-License-Identifier: MIT */
/* junit: the JUnit XML report: testsuite "reaper", a failing testcase per leak, a skipped
 * one per kept or allowed process, one passing testcase when nothing leaked. */
#ifndef HARNESS_JUNIT_H
#define HARNESS_JUNIT_H

#include "escape.h"
#include "output.h"

void junit_report(struct sbuf *b, const struct output *o, const struct reaper_report *r,
		  const struct reaper_finder *f, size_t nf);

#endif
