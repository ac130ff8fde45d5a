/* SPDX-License-Identifier: MIT */
/* marker: see marker.h. */
#include "marker.h"

#include <errno.h>
#include <string.h>

int marker_check(const char *m)
{
	return m && m[0] != '=' && strchr(m, '=') ? 0 : -EINVAL;
}
