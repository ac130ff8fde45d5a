/* SPDX-License-Identifier: MIT */
/* sbuf: the one growable byte buffer, of the library (the /proc reads reuse one across
 * processes on the hot path) and of the command (the reports it writes). */
#ifndef REAPER_SBUF_H
#define REAPER_SBUF_H

#include <stddef.h>

/* A growable string. On allocation failure oom is set and later appends do nothing. */
struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

void sbuf_add(struct sbuf *b, const char *s, size_t len);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text so far, NUL-terminated ("" when empty or out of memory). */
const char *sbuf_str(struct sbuf *b);
void sbuf_free(struct sbuf *b);

#endif
