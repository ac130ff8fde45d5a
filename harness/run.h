/* The subcommands of the reaper command. */
#ifndef HARNESS_RUN_H
#define HARNESS_RUN_H

#include <stdio.h>

int cmd_run(int argc, char **argv);
void run_usage(FILE *out);

#endif
