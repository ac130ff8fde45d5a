/* SPDX-License-Identifier: MIT */
/* msg: see msg.h. */
#define _GNU_SOURCE
#include "msg.h"

#include <stdio.h>
#include <stdlib.h>

/* One write per message where memory allows: a line of ours must not interleave with the
 * run's own stderr. */
void vwarn(const char *fmt, va_list ap)
{
	char *line;
	va_list copy;
	va_copy(copy, ap);
	if (vasprintf(&line, fmt, copy) >= 0) {
		fprintf(stderr, "reaper: %s\n", line);
		free(line);
	} else {
		fputs("reaper: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(copy);
}

void warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

int die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	return code;
}
