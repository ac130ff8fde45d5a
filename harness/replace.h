/* SPDX-License-Identifier: MIT */
/* replace: write a whole file the way every file reaper writes is written. A new file is
 * made in the same directory (exclusive create, a random name, no symlink followed), filled,
 * and renamed over the path: a reader sees the whole old file or the whole new one, never
 * half of one, and a symlink planted at the path is replaced, never written through. */
#ifndef HARNESS_REPLACE_H
#define HARNESS_REPLACE_H

#include <stddef.h>

enum {
	REPLACE_PRIVATE = 1, /* mode exactly 0600 (else 0666 less the umask) */
	REPLACE_SYNC = 2,    /* on disk before the rename (a report; not a document replaced often) */
};

/* Replace path with len bytes of data. 0 or -errno (nothing at path changed then). */
int replace_file(const char *path, const char *data, size_t len, unsigned flags);

#endif
