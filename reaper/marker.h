/* SPDX-License-Identifier: MIT */
/* marker: the NAME=VALUE environment entry a marker finder looks for. */
#ifndef REAPER_MARKER_H
#define REAPER_MARKER_H

/* 0 when m can be a marker (a NAME, an '=', a VALUE that may be empty), else -EINVAL: an entry
 * without a name would match what no one marked. */
int marker_check(const char *m);
/* 1 when the calling process's own environment holds the entry m exactly: then whatever it
 * and its caller started carries m too, the caller's shell included. */
int marker_own(const char *m);

#endif
