/* config: see config.h. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int config_parse_seconds(const char *s, double *out)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		v /= 1000.0;
	else if (strcmp(end, "m") == 0)
		v *= 60.0;
	else if (*end && strcmp(end, "s") != 0)
		return -EINVAL;
	if (!isfinite(v)) /* "1e308m" overflows only after the unit is applied */
		return -EINVAL;
	*out = v;
	return 0;
}

int config_parse_int(const char *s, long *out)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end)
		return -EINVAL;
	if (errno)
		return -ERANGE;
	*out = v;
	return 0;
}

double config_seconds(FILE *err, const char *flag, const char *flag_value, const char *env, double def,
		      double min, double max)
{
	const char *v = flag_value, *src = flag;
	if (!v && env && (v = getenv(env)) && !*v)
		v = NULL;
	if (!flag_value)
		src = env;
	if (!v)
		return def;
	double d;
	if (config_parse_seconds(v, &d) < 0) {
		fprintf(err, "reaper: warning: %s: '%s' is not a number of seconds; using %g\n", src, v, def);
		return def;
	}
	if (d < min || d > max) {
		double c = d < min ? min : max;
		fprintf(err, "reaper: warning: %s: %s is out of range [%g, %g]; using %g\n", src, v, min, max, c);
		return c;
	}
	return d;
}

int config_leak_exit_code(FILE *err, const char *flag_value)
{
	const char *v = flag_value, *src = "--leak-exit-code";
	if (!v) {
		v = getenv("REAPER_LEAK_EXIT_CODE");
		src = "REAPER_LEAK_EXIT_CODE";
	}
	if (!v || (!*v && !flag_value)) /* an empty variable is an unset one; an empty flag is bad */
		return DEFAULT_LEAK_EXIT;
	long n;
	if (config_parse_int(v, &n) < 0 || n == EXIT_USAGE) {
		fprintf(err, "reaper: warning: %s: '%s' is not a usable exit code (3..125, not 64); using %d\n", src,
			v, DEFAULT_LEAK_EXIT);
		return DEFAULT_LEAK_EXIT;
	}
	if (n < 3 || n > 125) {
		long c = n < 3 ? 3 : 125;
		fprintf(err, "reaper: warning: %s: %s is out of range [3, 125]; using %ld\n", src, v, c);
		return (int)c;
	}
	return (int)n;
}
