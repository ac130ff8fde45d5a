/* SPDX-License-Identifier: MIT */
/* marker: see marker.h. */
#include "marker.h"

#include <errno.h>
#include <string.h>

extern char **environ;

int marker_own(const char *m)
{
	for (char **e = environ; *e; e++)
		if (!strcmp(*e, m))
			return 1;
	return 0;
}

int marker_check(const char *m)
{
	return m && m[0] != '=' && strchr(m, '=') ? 0 : -EINVAL;
}
