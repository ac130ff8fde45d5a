/* SPDX-License-Identifier: MIT */
/* ci: what CI systems read beside the reports. GitHub Actions: an ::error workflow command per
 * leak (with file= when the test that started it is a pytest node id, and line= when
 * REAPER_TEST_LOCATION in reaper's environment gives FILE:LINE for that file), and a Markdown
 * table of the leaks appended to $GITHUB_STEP_SUMMARY. */
#ifndef HARNESS_CI_H
#define HARNESS_CI_H

#include "reaper/reaper.h"

/* The ::error lines on stdout. */
void ci_github_annotations(const struct reaper_report *r);
/* Append the leak table (or one "no leaked processes" line) to the file $GITHUB_STEP_SUMMARY
 * names, when it is set. A summary that cannot be written is a warning on stderr, not a
 * failure: the environment asked for it, not the caller, and a clean run stays clean. */
void ci_step_summary(const struct reaper_report *r);

#endif
