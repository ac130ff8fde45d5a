/* SPDX-License-Identifier: MIT */
/* Fuzz reaper_parse_stat: /proc/PID/stat text is whatever a process named itself (comm may
 * hold spaces, newlines and ')'), so the parser must never read outside the buffer, must
 * always leave a terminated comm, and must agree with an independent reading of the fields
 * after the last ')'. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so ASan sees any read past the end. */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct reaper_stat st;
	int r = reaper_parse_stat(buf, size, &st);
	check(r == 0 || r < 0);
	check(memchr(st.comm, 0, sizeof st.comm) != NULL);
	if (r == 0) {
		/* a success needs a '(' before the last ')' and a state letter after it */
		const char *open = memchr(buf, '(', size);
		const char *close = NULL;
		for (size_t i = size; i > 0; i--)
			if (buf[i - 1] == ')') {
				close = buf + i - 1;
				break;
			}
		check(open && close && open < close);
		check(close + 2 < buf + size && close[1] == ' ' && st.state == close[2]);
		size_t clen = (size_t)(close - open - 1);
		size_t keep = clen < sizeof st.comm - 1 ? clen : sizeof st.comm - 1;
		check(memcmp(st.comm, open + 1, keep) == 0);
	}
	free(buf);
	return 0;
}
