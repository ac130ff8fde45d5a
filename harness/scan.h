/* SPDX-License-Identifier: MIT */
/* scan: `reaper scan` (list what the finders match, as pgrep does) and `reaper reap` (the
 * reap phase on its own, for a CI step after a suite that ran without the wrapper). */
#ifndef HARNESS_SCAN_H
#define HARNESS_SCAN_H

#include <stdio.h>

int cmd_scan(int argc, char **argv);
int cmd_reap(int argc, char **argv);
/* Parse argv as `reaper reap` (reap) or `reaper scan` would, and do nothing: 0, -1 for
 * --help, or EXIT_USAGE after the message (for tests and fuzzing). */
int scan_check_args(int argc, char **argv, int reap);
void scan_usage(FILE *out);
void reap_usage(FILE *out);

#endif
