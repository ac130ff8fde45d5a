/* SPDX-License-Identifier: MIT */
/* array: the one way the library and the command grow an array they append to. */
#ifndef REAPER_ARRAY_H
#define REAPER_ARRAY_H

#include <errno.h>
#include <stddef.h>

/* v with room for need elements of size bytes: the room doubles (starting from min), so
 * appending one at a time costs amortized O(1). Returns the array, moved or not, and
 * updates *cap; NULL when out of memory, and then v and *cap are as they were. */
void *array_grow(void *v, size_t *cap, size_t need, size_t size, size_t min);

/* Room for need elements in the typed array v whose capacity is cap (both lvalues, updated):
 * 0, or -ENOMEM with both unchanged. */
#define ARRAY_RESERVE(v, cap, need, min)                                              \
	__extension__({                                                                \
		void *grown_ = array_grow((v), &(cap), (need), sizeof *(v), (min));   \
		if (grown_)                                                            \
			(v) = grown_;                                                  \
		grown_ ? 0 : -ENOMEM;                                                  \
	})

#endif
