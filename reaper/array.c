/* SPDX-License-Identifier: MIT */
/* array: see array.h. */
#include "array.h"

#include <stdint.h>
#include <stdlib.h>

void *array_grow(void *v, size_t *cap, size_t need, size_t size, size_t min)
{
	if (v && need <= *cap)
		return v;
	size_t nc = *cap ? *cap : min ? min : 1;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return NULL;
		nc *= 2;
	}
	if (nc > SIZE_MAX / size)
		return NULL;
	void *nv = realloc(v, nc * size);
	if (!nv)
		return NULL;
	*cap = nc;
	return nv;
}
