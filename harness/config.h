/* SPDX-License-Identifier: MIT */
/* config: values from flags and the environment, with the documented precedence (the flag
 * wins). A bad or out-of-range flag value is a usage error naming the flag and the value; a
 * bad environment value is a warning and the default, an out-of-range one is clamped. */
#ifndef HARNESS_CONFIG_H
#define HARNESS_CONFIG_H

#include "exits.h"

#include <stdio.h>

/* Parse a duration: a finite number of seconds, or one with the unit ms, s, m, h or d
 * ("1.5", "30s", "250ms", "2m", "1h", "1d"). 0 or -EINVAL. */
int config_parse_seconds(const char *s, double *out);
/* Parse a whole number. 0 or -EINVAL / -ERANGE. */
int config_parse_int(const char *s, long *out);

/* The reap's deadlines when neither flag nor environment sets them: long enough for a suite's
 * servers to shut down by themselves, short enough for a CI step. */
#define CONFIG_TIMEOUT_DEFAULT 10.0 /* --timeout, REAPER_TIMEOUT */
#define CONFIG_TIMEOUT_MAX 86400.0
#define CONFIG_GRACE_DEFAULT 5.0 /* --grace, REAPER_GRACE */
#define CONFIG_GRACE_MAX 3600.0

/* A seconds setting into *out: flag_value when given (NULL: not given), else getenv(env),
 * else def. A bad flag value: -EINVAL or -ERANGE with the message in err. A bad environment
 * value: a warning (msg.h) and def; out of [min, max]: clamped, with a warning. */
int config_seconds(char *err, size_t errlen, const char *flag, const char *flag_value, const char *env, double def,
		   double min, double max, double *out);
/* --timeout and --grace (flag values, NULL when not given) with their variables, defaults and
 * bounds, as config_seconds. */
int config_reap_times(char *err, size_t errlen, const char *timeout, const char *grace, double *timeout_out,
		      double *grace_out);
/* The leak exit code (3..125, never 64) into *out, from the flag, else REAPER_LEAK_EXIT_CODE,
 * else the default; errors and warnings as config_seconds. */
int config_leak_exit_code(char *err, size_t errlen, const char *flag_value, int *out);
/* One of choices (NULL-terminated) into *out as its index: from the flag, else getenv(env),
 * else def; errors and warnings as config_seconds. */
int config_choice(char *err, size_t errlen, const char *flag, const char *flag_value, const char *env,
		  const char *const *choices, int def, int *out);

#endif
