/* SPDX-License-Identifier: MIT */
/* The subcommands of the reaper command. */
#ifndef HARNESS_RUN_H
#define HARNESS_RUN_H

#include <stdio.h>

int cmd_run(int argc, char **argv);
/* Parse argv as `reaper run` would, and run nothing: 0, -1 for --help, or EXIT_USAGE after
 * the message (for tests and fuzzing). */
int run_check_args(int argc, char **argv);
void run_usage(FILE *out);

#endif
