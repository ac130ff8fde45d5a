/* SPDX-License-Identifier: MIT */
/* config: values from flags and the environment, with the documented precedence (the flag
 * wins). A bad or out-of-range flag value is a usage error naming the flag and the value; a
 * bad environment value is a warning and the default, an out-of-range one is clamped. */
#ifndef HARNESS_CONFIG_H
#define HARNESS_CONFIG_H

#include <stdio.h>

#define EXIT_USAGE 64
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127
#define DEFAULT_LEAK_EXIT 23 /* as LeakSanitizer's default exitcode */

/* Parse a duration: a finite number of seconds, or one with the unit ms, s, m, h or d
 * ("1.5", "30s", "250ms", "2m", "1h", "1d"). 0 or -EINVAL. */
int config_parse_seconds(const char *s, double *out);
/* Parse a whole number. 0 or -EINVAL / -ERANGE. */
int config_parse_int(const char *s, long *out);

/* A seconds setting into *out: flag_value when given (NULL: not given), else getenv(env),
 * else def. A bad flag value: -EINVAL or -ERANGE with the message in err. A bad environment
 * value: a warning on warn and def; out of [min, max]: clamped, with a warning. */
int config_seconds(FILE *warn, char *err, size_t errlen, const char *flag, const char *flag_value, const char *env,
		   double def, double min, double max, double *out);
/* The leak exit code (3..125, never 64) into *out, from the flag, else REAPER_LEAK_EXIT_CODE,
 * else the default; errors and warnings as config_seconds. */
int config_leak_exit_code(FILE *warn, char *err, size_t errlen, const char *flag_value, int *out);
/* One of choices (NULL-terminated) into *out as its index: from the flag, else getenv(env),
 * else def; errors and warnings as config_seconds. */
int config_choice(FILE *warn, char *err, size_t errlen, const char *flag, const char *flag_value, const char *env,
		  const char *const *choices, int def, int *out);

#endif
