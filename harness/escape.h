/* SPDX-License-Identifier: MIT */
/* escape: turn arbitrary bytes (a cmdline, a cwd, a marker: anything but NUL, as /proc
 * gives them) into text that a JSON parser, an XML parser, a terminal or a GitHub Actions
 * log accepts, whatever the bytes were.
 *
 * The common rules (documented in reaper(1), REPORTS):
 * - Bytes are decoded as strict UTF-8 (no overlong forms, no surrogates, nothing past
 *   U+10FFFF). Each byte that does not start a valid sequence is invalid on its own.
 * - JSON: invalid bytes become U+FFFD; control characters (< 0x20 and DEL) become \n, \t,
 *   \r, \b, \f or \u00XX; '"' and '\' are escaped. The output is ASCII-safe valid UTF-8.
 * - XML 1.0: invalid bytes become U+FFFD; the control characters XML 1.0 cannot hold at
 *   all, even as character references (0x00-0x08, 0x0B, 0x0C, 0x0E-0x1F), become their
 *   visible Unicode Control Pictures (U+2400 + c, e.g. ESC -> U+241B); tab, LF and CR
 *   become &#9; &#10; &#13; (so attributes keep them); & < > " ' become entities.
 * - Text (terminal, GitHub log): valid UTF-8 is kept, except control characters, which
 *   become \n \t \r \e or \xNN; invalid bytes become \xNN; a backslash stays as it is.
 */
#ifndef HARNESS_ESCAPE_H
#define HARNESS_ESCAPE_H

#include "reaper/sbuf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decode one strict UTF-8 sequence at s (len > 0): returns its length and the code point
 * in *cp, or 0 when the byte at s does not start a valid sequence. */
size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);
/* 1 when all len bytes are valid strict UTF-8. */
int utf8_valid(const char *s, size_t len);

/* A JSON string literal, quotes included. Returns 1 when an invalid byte had to be
 * replaced (the text lost information), else 0. */
int escape_json(struct sbuf *b, const char *s, size_t len);
/* XML 1.0 character data, valid in element content and in quoted attributes. Returns 1
 * when anything was replaced (invalid bytes, or control characters made visible). */
int escape_xml(struct sbuf *b, const char *s, size_t len);
/* Visible single-line text: see the rules above. max > 0: at most about max output bytes,
 * then "..." (never cutting a sequence in half). Returns 1 when it was cut. */
int escape_text(struct sbuf *b, const char *s, size_t len, size_t max);
/* A GitHub Actions workflow command message (after escape_text): % CR LF as %25 %0D %0A.
 * property: also ':' and ',' (for title=...). */
void escape_github(struct sbuf *b, const char *s, size_t len, int property);

#endif
