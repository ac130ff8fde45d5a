/* SPDX-License-Identifier: MIT */
/* human: the leak report for people, on stderr: what was left behind drawn as a process
 * tree (pstree-like, parents as first seen) with age, state, cwd, trimmed cmdline, how each
 * was found and the test that started it; a SUMMARY: line with the leaks per test; then,
 * when patterns were given, their hit counts. Nothing at all when no process is shown (none
 * was left behind, kept, allowed or held as a zombie) unless o->verbose. Colour only when
 * o->color. */
#ifndef HARNESS_HUMAN_H
#define HARNESS_HUMAN_H

#include "output.h"

#include <stdio.h>

void human_report(FILE *out, const struct output *o, const struct reaper_report *r, const struct reaper_finder *f,
		  size_t nf);

#endif
