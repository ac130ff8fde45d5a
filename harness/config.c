/* SPDX-License-Identifier: MIT */
/* config: see config.h. */
#define _GNU_SOURCE
#include "config.h"

#include "msg.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int config_parse_seconds(const char *s, double *out)
{
	static const struct {
		const char *unit;
		double factor;
	} units[] = { { "", 1 }, { "s", 1 }, { "ms", 0.001 }, { "m", 60 }, { "h", 3600 }, { "d", 86400 } };
	if (!s || !*s || isspace((unsigned char)*s)) /* strtod would skip leading blanks */
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* strtod also takes "inf", "nan" and hex floats: none is a duration */
	if (end == s || errno || !isfinite(v) || strpbrk(s, "xXnN"))
		return -EINVAL;
	/* below the smallest normal double: glibc's strtod calls it out of range, musl's returns
	 * it; out of range with either */
	if (fpclassify(v) == FP_SUBNORMAL)
		return -EINVAL;
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		if (strcmp(end, units[i].unit))
			continue;
		v *= units[i].factor;
		if (!isfinite(v)) /* "1e308d" overflows only after the unit is applied */
			return -EINVAL;
		*out = v;
		return 0;
	}
	return -EINVAL;
}

int config_parse_int(const char *s, long *out)
{
	if (!s || !*s || isspace((unsigned char)*s)) /* strtol would skip leading blanks */
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

int config_seconds(char *err, size_t errlen, const char *flag, const char *flag_value, const char *env, double def,
		   double min, double max, double *out)
{
	double d;
	if (flag_value) {
		if (config_parse_seconds(flag_value, &d) < 0) {
			snprintf(err, errlen, "%s: '%s' is not a duration (seconds, or a number with s, m, h or d)",
				 flag, flag_value);
			return -EINVAL;
		}
		if (d < min || d > max) {
			snprintf(err, errlen, "%s: '%s' is out of range [%g, %g] seconds", flag, flag_value, min, max);
			return -ERANGE;
		}
		*out = d;
		return 0;
	}
	const char *v = env ? getenv(env) : NULL;
	*out = def;
	if (!v || !*v) /* an empty variable is an unset one */
		return 0;
	if (config_parse_seconds(v, &d) < 0) {
		warn("warning: %s: '%s' is not a duration; using %g", env, v, def);
		return 0;
	}
	if (d < min || d > max) {
		double c = d < min ? min : max;
		warn("warning: %s: %s is out of range [%g, %g]; using %g", env, v, min, max, c);
		d = c;
	}
	*out = d;
	return 0;
}

int config_reap_times(char *err, size_t errlen, const char *timeout, const char *grace, double *timeout_out,
		      double *grace_out)
{
	int r = config_seconds(err, errlen, "--timeout", timeout, "REAPER_TIMEOUT", CONFIG_TIMEOUT_DEFAULT, 0,
			       CONFIG_TIMEOUT_MAX, timeout_out);
	if (r < 0)
		return r;
	return config_seconds(err, errlen, "--grace", grace, "REAPER_GRACE", CONFIG_GRACE_DEFAULT, 0, CONFIG_GRACE_MAX,
			      grace_out);
}

int config_leak_exit_code(char *err, size_t errlen, const char *flag_value, int *out)
{
	long n;
	if (flag_value) {
		if (config_parse_int(flag_value, &n) < 0 || n < 3 || n > 125 || n == EXIT_USAGE) {
			snprintf(err, errlen, "--leak-exit-code: '%s' is not a usable exit code (3..125, not 64)",
				 flag_value);
			return -EINVAL;
		}
		*out = (int)n;
		return 0;
	}
	const char *v = getenv("REAPER_LEAK_EXIT_CODE");
	*out = EXIT_LEAK_DEFAULT;
	if (!v || !*v)
		return 0;
	if (config_parse_int(v, &n) < 0 || n == EXIT_USAGE) {
		warn("warning: REAPER_LEAK_EXIT_CODE: '%s' is not a usable exit code (3..125, not 64); using %d", v,
		     EXIT_LEAK_DEFAULT);
		return 0;
	}
	if (n < 3 || n > 125) {
		long c = n < 3 ? 3 : 125;
		warn("warning: REAPER_LEAK_EXIT_CODE: %s is out of range [3, 125]; using %ld", v, c);
		n = c;
	}
	*out = (int)n;
	return 0;
}

int config_choice(char *err, size_t errlen, const char *flag, const char *flag_value, const char *env,
		  const char *const *choices, int def, int *out)
{
	const char *v = flag_value ? flag_value : getenv(env);
	*out = def;
	if (!v || (!*v && !flag_value)) /* an empty variable is an unset one */
		return 0;
	char names[128] = "";
	for (int i = 0; choices[i]; i++) {
		if (!strcmp(v, choices[i])) {
			*out = i;
			return 0;
		}
		size_t l = strlen(names);
		snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", choices[i]);
	}
	if (flag_value) {
		snprintf(err, errlen, "%s: '%s' is not one of %s", flag, v, names);
		return -EINVAL;
	}
	warn("warning: %s: '%s' is not one of %s; using %s", env, v, names, choices[def]);
	return 0;
}
