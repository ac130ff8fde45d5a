/* SPDX-License-Identifier: MIT */
/* escape: see escape.h for the rules. Every escaper walks the bytes once with the same
 * strict UTF-8 decoder, so JSON, XML and text agree on what counts as invalid. */
#define _GNU_SOURCE
#include "escape.h"

#include <stdlib.h>
#include <string.h>

size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xC2 && c <= 0xDF) {
		n = 2, v = c & 0x1F, min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3, v = c & 0x0F, min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return n;
}

int utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_decode(u + i, len - i, &cp);
		if (!n)
			return 0;
		i += n;
	}
	return 1;
}

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

int escape_json(struct sbuf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	int lossy = 0;
	sbuf_add(b, "\"", 1);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(u + i, len - i, &cp);
		if (!n) {
			sbuf_add(b, "\\ufffd", 6);
			lossy = 1;
			i++;
			continue;
		}
		switch (cp) {
		case '"': sbuf_add(b, "\\\"", 2); break;
		case '\\': sbuf_add(b, "\\\\", 2); break;
		case '\n': sbuf_add(b, "\\n", 2); break;
		case '\t': sbuf_add(b, "\\t", 2); break;
		case '\r': sbuf_add(b, "\\r", 2); break;
		case '\b': sbuf_add(b, "\\b", 2); break;
		case '\f': sbuf_add(b, "\\f", 2); break;
		default:
			if (cp < 0x20 || cp == 0x7F)
				sbuf_printf(b, "\\u%04x", (unsigned)cp);
			else
				sbuf_add(b, s + i, n);
		}
		i += n;
	}
	sbuf_add(b, "\"", 1);
	return lossy;
}

int escape_xml(struct sbuf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	int changed = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(u + i, len - i, &cp);
		if (!n || cp == 0xFFFE || cp == 0xFFFF) {
			sbuf_add(b, REPLACEMENT, 3);
			changed = 1;
			i += n ? n : 1;
			continue;
		}
		switch (cp) {
		case '&': sbuf_add(b, "&amp;", 5); break;
		case '<': sbuf_add(b, "&lt;", 4); break;
		case '>': sbuf_add(b, "&gt;", 4); break;
		case '"': sbuf_add(b, "&quot;", 6); break;
		case '\'': sbuf_add(b, "&apos;", 6); break;
		case '\t': sbuf_add(b, "&#9;", 4); break;
		case '\n': sbuf_add(b, "&#10;", 5); break;
		case '\r': sbuf_add(b, "&#13;", 5); break;
		default:
			if (cp < 0x20) {
				/* U+2400 + cp: three bytes E2 90 80+cp */
				char pic[3] = { (char)0xE2, (char)0x90, (char)(0x80 + cp) };
				sbuf_add(b, pic, 3);
				changed = 1;
			} else {
				sbuf_add(b, s + i, n);
			}
		}
		i += n;
	}
	return changed;
}

int escape_text(struct sbuf *b, const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = b->len;
	for (size_t i = 0; i < len;) {
		if (max && b->len - start >= max) {
			sbuf_add(b, "...", 3);
			return 1;
		}
		/* a run of printable ASCII (most of any command line) goes in at once */
		size_t run = i;
		while (run < len && u[run] >= 0x20 && u[run] < 0x7F && (!max || b->len - start + (run - i) < max))
			run++;
		if (run > i) {
			sbuf_add(b, s + i, run - i);
			i = run;
			continue;
		}
		uint32_t cp;
		size_t n = utf8_decode(u + i, len - i, &cp);
		if (!n) {
			sbuf_printf(b, "\\x%02x", u[i]);
			i++;
			continue;
		}
		if (cp == '\n')
			sbuf_add(b, "\\n", 2);
		else if (cp == '\t')
			sbuf_add(b, "\\t", 2);
		else if (cp == '\r')
			sbuf_add(b, "\\r", 2);
		else if (cp == 0x1B)
			sbuf_add(b, "\\e", 2);
		else if (cp < 0x20 || cp == 0x7F)
			sbuf_printf(b, "\\x%02x", (unsigned)cp);
		else if (cp >= 0x80 && cp <= 0x9F) /* C1 controls: some terminals act on them */
			sbuf_printf(b, "\\u%04x", (unsigned)cp);
		else
			sbuf_add(b, s + i, n);
		i += n;
	}
	return 0;
}

void escape_github(struct sbuf *b, const char *s, size_t len, int property)
{
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '%')
			sbuf_add(b, "%25", 3);
		else if (c == '\r')
			sbuf_add(b, "%0D", 3);
		else if (c == '\n')
			sbuf_add(b, "%0A", 3);
		else if (property && c == ':')
			sbuf_add(b, "%3A", 3);
		else if (property && c == ',')
			sbuf_add(b, "%2C", 3);
		else
			sbuf_add(b, &c, 1);
	}
}
