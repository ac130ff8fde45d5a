/* SPDX-License-Identifier: MIT */
/* Fuzz the report escapers (harness/escape.c) with arbitrary bytes, as a cmdline may hold:
 * - escape_json: a JSON string literal that is valid UTF-8 with no raw control byte; decoded
 *   back it equals the input exactly when the input was valid UTF-8 (and then it says it
 *   lost nothing), else it reports the loss;
 * - escape_xml: only characters XML 1.0 allows, no raw markup character;
 * - escape_text: valid UTF-8 without control characters, cut where asked;
 * - escape_github: no line break survives.
 * The first input byte picks escape_text's limit. */
#include "harness/escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(int cond)
{
	if (!cond)
		abort();
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decode a JSON string literal (no surrogate pairs: escape_json never writes them). */
static void json_decode(const char *s, size_t len, struct sbuf *out)
{
	check(len >= 2 && s[0] == '"' && s[len - 1] == '"');
	for (size_t i = 1; i < len - 1; i++) {
		unsigned char c = (unsigned char)s[i];
		check(c >= 0x20 && c != 0x7f && c != '"');
		if (c != '\\') {
			sbuf_add(out, s + i, 1);
			continue;
		}
		check(i + 1 < len - 1);
		char e = s[++i];
		const char *simple = strchr("\"\\/bfnrt", e);
		if (e && simple) {
			static const char map[] = "\"\\/\b\f\n\r\t";
			sbuf_add(out, &map[simple - "\"\\/bfnrt"], 1);
			continue;
		}
		check(e == 'u' && i + 4 < len - 1);
		unsigned v = 0;
		for (int k = 1; k <= 4; k++) {
			int h = hexval(s[i + (size_t)k]);
			check(h >= 0);
			v = v << 4 | (unsigned)h;
		}
		i += 4;
		check(v < 0xD800 || v > 0xDFFF);
		char u[3];
		if (v < 0x80) {
			u[0] = (char)v;
			sbuf_add(out, u, 1);
		} else if (v < 0x800) {
			u[0] = (char)(0xC0 | v >> 6), u[1] = (char)(0x80 | (v & 0x3F));
			sbuf_add(out, u, 2);
		} else {
			u[0] = (char)(0xE0 | v >> 12), u[1] = (char)(0x80 | ((v >> 6) & 0x3F)), u[2] = (char)(0x80 | (v & 0x3F));
			sbuf_add(out, u, 3);
		}
	}
}

/* Decode s as strict UTF-8 (it must be) and call each(cp, s + i, len - i) per character. */
static void each_char(const char *s, size_t len, void (*each)(uint32_t cp, const char *at, size_t left))
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(u + i, len - i, &cp);
		check(n > 0);
		each(cp, s + i, len - i);
		i += n;
	}
}

static void xml_char(uint32_t cp, const char *at, size_t left)
{
	check(cp >= 0x20 && cp != 0xFFFE && cp != 0xFFFF);
	check(cp != '<' && cp != '>' && cp != '"' && cp != '\'');
	if (cp == '&') {
		static const char *const ents[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#9;", "&#10;", "&#13;" };
		int ok = 0;
		for (size_t k = 0; k < sizeof ents / sizeof *ents; k++)
			ok |= left >= strlen(ents[k]) && !memcmp(at, ents[k], strlen(ents[k]));
		check(ok);
	}
}

static void text_char(uint32_t cp, const char *at, size_t left)
{
	check(cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp <= 0x9F));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t max = size ? data[0] % 64 : 0;
	const char *s = (const char *)data;
	int valid = utf8_valid(s, size);

	struct sbuf j = { 0 }, d = { 0 };
	int lossy = escape_json(&j, s, size);
	check(!j.oom);
	check(utf8_valid(j.p, j.len));
	check(lossy == !valid);
	json_decode(j.p, j.len, &d);
	if (valid)
		check(d.len == size && (size == 0 || memcmp(d.p, s, size) == 0));
	sbuf_free(&j);
	sbuf_free(&d);

	struct sbuf x = { 0 };
	escape_xml(&x, s, size);
	check(!x.oom);
	each_char(sbuf_str(&x), x.len, xml_char);
	sbuf_free(&x);

	struct sbuf t = { 0 };
	int cut = escape_text(&t, s, size, max);
	check(!t.oom);
	each_char(sbuf_str(&t), t.len, text_char);
	if (max && !cut)
		check(t.len <= max + 6);
	if (cut)
		check(t.len >= 3 && !memcmp(t.p + t.len - 3, "...", 3) && t.len <= max + 6 + 3);

	struct sbuf g = { 0 };
	escape_github(&g, sbuf_str(&t), t.len, (int)(size & 1));
	check(!memchr(sbuf_str(&g), '\n', g.len) && !memchr(sbuf_str(&g), '\r', g.len));
	sbuf_free(&g);
	sbuf_free(&t);

	struct sbuf gr = { 0 };
	escape_github(&gr, s, size, 1);
	check(!memchr(sbuf_str(&gr), '\n', gr.len) && !memchr(sbuf_str(&gr), '\r', gr.len));
	check(!memchr(sbuf_str(&gr), ',', gr.len) && !memchr(sbuf_str(&gr), ':', gr.len));
	sbuf_free(&gr);
	return 0;
}
