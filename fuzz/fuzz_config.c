/* Fuzz the flag and environment parsing of `reaper run` (harness/config.c): any text as a
 * flag value or as REAPER_TIMEOUT / REAPER_LEAK_EXIT_CODE gives a value inside the
 * documented range (or the default), never a crash, never NaN. */
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

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!sink && !(sink = fopen("/dev/null", "w")))
		return 0;
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

	double t = config_seconds(sink, "--timeout", s, "REAPER_TIMEOUT", 10.0, 0, 86400);
	check(isfinite(t) && t >= 0 && t <= 86400);
	setenv("REAPER_TIMEOUT", s, 1);
	t = config_seconds(sink, "--timeout", NULL, "REAPER_TIMEOUT", 10.0, 0, 86400);
	check(isfinite(t) && t >= 0 && t <= 86400);
	/* the flag wins over the environment */
	check(config_seconds(sink, "--grace", "2", "REAPER_TIMEOUT", 5.0, 0, 3600) == 2.0);

	int code = config_leak_exit_code(sink, s);
	check(code >= 3 && code <= 125 && code != 64);
	setenv("REAPER_LEAK_EXIT_CODE", s, 1);
	code = config_leak_exit_code(sink, NULL);
	check(code >= 3 && code <= 125 && code != 64);
	unsetenv("REAPER_TIMEOUT");
	unsetenv("REAPER_LEAK_EXIT_CODE");
	free(s);
	return 0;
}
