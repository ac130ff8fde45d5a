/* SPDX-License-Identifier: MIT */
/* testid: see testid.h. */
#include "testid.h"

#include <string.h>

/* The next "::" of a node id from s on, NULL past the end of its path: a parameter id
 * ("test_connect[::1]") may hold "::" itself; the file part may hold '['. */
static const char *next_sep(const char *test, const char *s)
{
	const char *first = strstr(test, "::");
	const char *param = first ? strchr(first, '[') : NULL;
	const char *sep = strstr(s, "::");
	return sep && (!param || sep < param) ? sep : NULL;
}

size_t testid_file(const char *test)
{
	const char *sep = next_sep(test, test);
	if (!sep || sep == test)
		return 0;
	size_t n = (size_t)(sep - test);
	if (memchr(test, '/', n) || (n > 3 && !memcmp(sep - 3, ".py", 3)))
		return n;
	return 0;
}

void testid_classname(struct sbuf *b, const char *test)
{
	const char *sep = next_sep(test, test);
	if (!test[0] || !sep) {
		sbuf_puts(b, "reaper");
		return;
	}
	size_t n = (size_t)(sep - test);
	if (n > 3 && !memcmp(sep - 3, ".py", 3))
		n -= 3;
	const char *s = test;
	if (n >= 2 && s[0] == '.' && s[1] == '/')
		s += 2, n -= 2;
	size_t start = b->len;
	for (size_t i = 0; i < n; i++)
		sbuf_add(b, s[i] == '/' ? "." : &s[i], 1);
	/* the classes between the file and the test */
	const char *last = sep;
	for (const char *next; (next = next_sep(test, last + 2)); last = next) {
		sbuf_puts(b, ".");
		sbuf_add(b, last + 2, (size_t)(next - last - 2));
	}
	if (b->len == start)
		sbuf_puts(b, "reaper");
}

void testid_name(struct sbuf *b, const char *test)
{
	const char *last = test;
	for (const char *sep; (sep = next_sep(test, last)); last = sep + 2)
		;
	sbuf_puts(b, last);
}

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	       c == '.';
}

void testid_command(struct sbuf *b, const char *cmdline, size_t max)
{
	struct sbuf t = { 0 };
	escape_text(&t, cmdline, strlen(cmdline), max);
	const char *s = sbuf_str(&t);
	size_t n = t.oom ? 0 : t.len;
	for (size_t i = 0; i < n;) {
		int component_start = i == 0 || s[i - 1] == '/' || s[i - 1] == ' ' || s[i - 1] == '=';
		if (component_start && n - i > 3 && !memcmp(s + i, "tmp", 3) && word_char(s[i + 3])) {
			sbuf_puts(b, "tmp*");
			for (i += 3; i < n && word_char(s[i]); i++)
				;
		} else if (s[i] >= '0' && s[i] <= '9') {
			sbuf_puts(b, "N");
			while (i < n && s[i] >= '0' && s[i] <= '9')
				i++;
		} else {
			sbuf_add(b, s + i, 1);
			i++;
		}
	}
	sbuf_free(&t);
}
