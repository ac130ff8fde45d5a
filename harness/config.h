/* config: values from flags and the environment, with the documented precedence (the flag
 * wins), warnings for invalid values (the default is used) and clamping of out-of-range ones. */
#ifndef HARNESS_CONFIG_H
#define HARNESS_CONFIG_H

#include <stdio.h>

#define EXIT_USAGE 64
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127
#define DEFAULT_LEAK_EXIT 23 /* as LeakSanitizer's default exitcode */

/* Parse seconds ("1.5", "2s", "250ms", "1m"). 0 or -EINVAL. */
int config_parse_seconds(const char *s, double *out);
/* Parse a whole number. 0 or -EINVAL / -ERANGE. */
int config_parse_int(const char *s, long *out);

/* The value of a seconds setting: flag (may be NULL), else getenv(env), else def. Invalid:
 * a warning on err and def. Out of [min, max]: clamped, with a warning. */
double config_seconds(FILE *err, const char *flag, const char *flag_value, const char *env, double def,
		      double min, double max);
/* The leak exit code: 3..125 but never 64; invalid: warning and the default. */
int config_leak_exit_code(FILE *err, const char *flag_value);

#endif
