/* SPDX-License-Identifier: MIT */
/* Fuzz reaper_environ_has and reaper_environ_get against a plain reference: the input is
 * split at its first 0xff byte into an entry/name and an environ block (NUL-separated, not
 * necessarily NUL-terminated, as /proc gives it). */
#include "reaper/procfs.h"
#include "reaper/reaper.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(int cond)
{
	if (!cond)
		abort();
}

/* The entries of env, one at a time, the obvious way. */
static int ref_has(const char *env, size_t len, const char *e, size_t elen)
{
	size_t start = 0;
	for (size_t i = 0; i <= len; i++)
		if (i == len || env[i] == 0) {
			if (elen && i - start == elen && memcmp(env + start, e, elen) == 0)
				return 1;
			start = i + 1;
		}
	return 0;
}

static const char *ref_get(const char *env, size_t len, const char *name, size_t nlen, size_t *vlen)
{
	size_t start = 0;
	for (size_t i = 0; i <= len; i++)
		if (i == len || env[i] == 0) {
			if (i - start > nlen && env[start + nlen] == '=' && memcmp(env + start, name, nlen) == 0) {
				*vlen = i - start - nlen - 1;
				return env + start + nlen + 1;
			}
			start = i + 1;
		}
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t klen = sep ? (size_t)(sep - data) : 0;
	size_t elen = sep ? size - klen - 1 : size;
	char *key = malloc(klen + 1), *env = malloc(elen ? elen : 1);
	if (!key || !env)
		goto out;
	memcpy(key, data, klen);
	key[klen] = 0;
	memcpy(env, sep ? sep + 1 : data, elen);

	check(reaper_environ_has(env, elen, key, klen) == ref_has(env, elen, key, klen));

	/* a name is what precedes '=', so only names without NUL bytes make sense */
	if (!memchr(key, 0, klen) && !memchr(key, '=', klen)) {
		size_t v1 = 0, v2 = 0;
		const char *g1 = reaper_environ_get(env, elen, key, &v1);
		const char *g2 = ref_get(env, elen, key, klen, &v2);
		check(g1 == g2);
		if (g1) {
			check(v1 == v2);
			check(g1 >= env && g1 + v1 <= env + elen);
		}
	}
out:
	free(key);
	free(env);
	return 0;
}
