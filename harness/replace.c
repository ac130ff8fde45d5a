/* SPDX-License-Identifier: MIT */
/* replace: see replace.h. */
#define _GNU_SOURCE
#include "replace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A new file beside path, named path.XXXXXXXX.tmp: a name nobody could plant in advance, and
 * O_EXCL refuses whatever is there anyway (a symlink included). The name's own part is cut
 * so that the temporary name stays within NAME_MAX when path's last component is near it. */
static int create_beside(const char *path, char *tmp, size_t tmplen, mode_t mode)
{
	const char *base = strrchr(path, '/');
	int dirlen = base ? (int)(base + 1 - path) : 0;
	int baselen = (int)strnlen(path + dirlen, NAME_MAX);
	if (baselen > NAME_MAX - 13) /* 13: ".XXXXXXXX.tmp" */
		baselen = NAME_MAX - 13;
	for (int tries = 0; tries < 16; tries++) {
		uint32_t rnd;
		if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
			rnd = (uint32_t)getpid() * 2654435761u + (uint32_t)tries;
		int n = snprintf(tmp, tmplen, "%.*s%.*s.%08x.tmp", dirlen, path, baselen, path + dirlen, rnd);
		if (n < 0 || (size_t)n >= tmplen)
			return -ENAMETOOLONG;
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

int replace_file(const char *path, const char *data, size_t len, unsigned flags)
{
	char tmp[4096];
	int fd = create_beside(path, tmp, sizeof tmp, flags & REPLACE_PRIVATE ? 0600 : 0666);
	if (fd < 0)
		return fd;
	/* the umask may have taken the owner's bits too: a private file is exactly 0600 */
	int r = flags & REPLACE_PRIVATE && fchmod(fd, 0600) < 0 ? -errno : write_all(fd, data, len);
	if (r == 0 && flags & REPLACE_SYNC && fdatasync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}
