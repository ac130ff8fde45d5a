/* SPDX-License-Identifier: MIT */
/* sbuf: see sbuf.h. */
#include "sbuf.h"
#include "array.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct sbuf *b, size_t more)
{
	if (b->oom)
		return -1;
	/* a length that would wrap the room needed is one no memory holds */
	if (more >= SIZE_MAX - b->len || ARRAY_RESERVE(b->p, b->cap, b->len + more + 1, 64) < 0) {
		b->oom = 1;
		return -1;
	}
	return 0;
}

void sbuf_add(struct sbuf *b, const char *s, size_t len)
{
	if (grow(b, len) < 0)
		return;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = 0;
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || grow(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *sbuf_str(struct sbuf *b)
{
	return b->p && !b->oom ? b->p : "";
}

void sbuf_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}
