/* SPDX-License-Identifier: MIT */
/* msg: every message the command writes on stderr, each starting "reaper: " (a line in a CI
 * log must say which tool wrote it; the severity, if any, follows: "warning: ", "note: "). */
#ifndef HARNESS_MSG_H
#define HARNESS_MSG_H

#include <stdarg.h>

/* "reaper: " + the message + a newline, on stderr. */
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
__attribute__((format(printf, 1, 0))) void vwarn(const char *fmt, va_list ap);
/* Say why the command ends with code, as warn(), and return code: the caller leaves through
 * its one exit path, so what it set up is still cleaned up. */
__attribute__((format(printf, 2, 3))) int die(int code, const char *fmt, ...);

#endif
