/* scan: `reaper scan` (list what the finders match, as pgrep does) and `reaper reap` (the
 * reap phase on its own, for a CI step after a suite that ran without the wrapper). */
#ifndef HARNESS_SCAN_H
#define HARNESS_SCAN_H

#include <stdio.h>

int cmd_scan(int argc, char **argv);
int cmd_reap(int argc, char **argv);
void scan_usage(FILE *out);
void reap_usage(FILE *out);

#endif
