/* human: the leak report for people, on stderr. */
#ifndef HARNESS_HUMAN_H
#define HARNESS_HUMAN_H

#include "reaper/reaper.h"

#include <stdio.h>

/* A block per leak (and per kept / zombie-held process), then a SUMMARY: line. */
void human_report(FILE *out, const struct reaper_report *r, const struct reaper_finder *f, size_t nf);

#endif
