/* SPDX-License-Identifier: MIT */
/* Fuzz the flag and environment parsing of `reaper run` (harness/config.c): any text as a
 * flag value gives a value inside the documented range or a refusal naming the flag; as
 * REAPER_TIMEOUT / REAPER_LEAK_EXIT_CODE, a value inside the range (or the default); never a
 * crash, never NaN. */
#include "harness/config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the warnings go nowhere; libFuzzer and the sanitizers keep the real stderr */
	FILE *null = fopen("/dev/null", "w");
	if (null)
		stderr = null;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0; /* a flag or variable ends at the first NUL, as in argv and environ */

	double d = -1;
	if (config_parse_seconds(s, &d) == 0)
		check(isfinite(d));
	long n;
	int r = config_parse_int(s, &n);
	check(r == 0 || r == -22 || r == -34);

	/* a flag value: accepted inside the range, or refused with a message naming the flag */
	char err[256] = "";
	double t = -1, g = -1;
	if (config_reap_times(err, sizeof err, s, NULL, &t, &g) == 0)
		check(isfinite(t) && t >= 0 && t <= 86400 && !err[0]);
	else
		check(!strncmp(err, "--timeout: ", 11));
	/* the environment: a warning and the default or a clamped value, never a refusal */
	setenv("REAPER_TIMEOUT", s, 1);
	check(config_reap_times(err, sizeof err, NULL, NULL, &t, &g) == 0);
	check(isfinite(t) && t >= 0 && t <= 86400);
	/* the flag wins over the environment */
	check(config_seconds(err, sizeof err, "--grace", "2", "REAPER_TIMEOUT", 5.0, 0, 3600, &t) == 0 && t == 2.0);

	int code = -1;
	if (config_leak_exit_code(err, sizeof err, s, &code) == 0)
		check(code >= 3 && code <= 125 && code != 64);
	else
		check(!strncmp(err, "--leak-exit-code: ", 18));
	setenv("REAPER_LEAK_EXIT_CODE", s, 1);
	check(config_leak_exit_code(err, sizeof err, NULL, &code) == 0);
	check(code >= 3 && code <= 125 && code != 64);
	unsetenv("REAPER_TIMEOUT");
	unsetenv("REAPER_LEAK_EXIT_CODE");
	free(s);
	return 0;
}
