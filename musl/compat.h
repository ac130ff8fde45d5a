/* SPDX-License-Identifier: MIT */
/* compat: what the command's sources take from glibc and musl (1.2.3) lacks, for its build
 * against musl (musl.mk), where this header is included ahead of each source. */
#ifndef MUSL_COMPAT_H
#define MUSL_COMPAT_H

#define _GNU_SOURCE
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef W_EXITCODE
#define W_EXITCODE(ret, sig) ((ret) << 8 | (sig))
#endif

/* statx came in musl 1.2.5, with its flags and struct in sys/stat.h */
#ifndef STATX_TYPE
#include <linux/stat.h>
static inline int musl_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	return (int)syscall(SYS_statx, dirfd, path, flags, mask, sx);
}
#define statx(...) musl_statx(__VA_ARGS__)
#endif

static inline int musl_close_range(unsigned lo, unsigned hi, int flags)
{
	return (int)syscall(SYS_close_range, lo, hi, flags);
}
#define close_range(...) musl_close_range(__VA_ARGS__)

/* Messages name errors as glibc does (musl words some differently): what reaper says does not
 * depend on the libc it was built against. */
char *musl_strerror(int e);
#define strerror(e) musl_strerror(e)

#endif
