/* SPDX-License-Identifier: MIT */
/* strerror: see compat.h. */
#include <errno.h>
#include <string.h>

#undef strerror

/* glibc's words where musl's differ, for the errors a run, a scan or a reap can meet */
static const struct {
	int e;
	const char *msg;
} words[] = {
	{ EIO, "Input/output error" },
	{ ECHILD, "No child processes" },
	{ ENOMEM, "Cannot allocate memory" },
	{ EBUSY, "Device or resource busy" },
	{ EXDEV, "Invalid cross-device link" },
	{ EMFILE, "Too many open files" },
	{ ENOTTY, "Inappropriate ioctl for device" },
	{ ESPIPE, "Illegal seek" },
	{ ERANGE, "Numerical result out of range" },
	{ ENAMETOOLONG, "File name too long" },
	{ ELOOP, "Too many levels of symbolic links" },
	{ EOVERFLOW, "Value too large for defined data type" },
	{ ENOTSUP, "Operation not supported" },
	{ ETIMEDOUT, "Connection timed out" },
	{ EDQUOT, "Disk quota exceeded" },
	{ EUCLEAN, "Structure needs cleaning" },
	{ EOWNERDEAD, "Owner died" },
};

char *musl_strerror(int e)
{
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (words[i].e == e)
			return (char *)words[i].msg;
	return strerror(e);
}
