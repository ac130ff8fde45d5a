/* SPDX-License-Identifier: MIT */
/* home: see home.h. */
#define _GNU_SOURCE
#include "home.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* May a directory on the way to HOME be trusted: owned by root or the caller, and writable by
 * nobody else unless sticky (like /tmp: there only an entry's owner can rename or remove it)? */
static const char *untrusted_parent(const struct stat *sb)
{
	if (!S_ISDIR(sb->st_mode))
		return "a parent directory is not a directory";
	if (sb->st_uid != 0 && sb->st_uid != geteuid())
		return "a parent directory is owned by another user (who could swap DIR after the check)";
	if ((sb->st_mode & (S_IWGRP | S_IWOTH)) && !(sb->st_mode & S_ISVTX))
		return "a parent directory is writable by group or others (and not sticky)";
	return NULL;
}

/* Resolves the parents of home from / one component at a time, without trusting anything
 * another user could change: each directory on the way must be trusted (untrusted_parent), a
 * symlink on the way is followed only when it is ours or root's (in a trusted directory), and a
 * missing level is created 0700. The last component is created when missing and otherwise
 * left to home_check's checks. Walking down from / keeps this free of races with other users:
 * nobody else can change an entry of a directory already found trusted. */
static int walk_home(const char *home, const char **why)
{
	char path[PATH_MAX] = "", rest[PATH_MAX], tmp[PATH_MAX];
	struct stat sb;
	int links = 0;
	if (snprintf(rest, sizeof rest, "%s", home) >= (int)sizeof rest) {
		*why = "cannot open it";
		return -ENAMETOOLONG;
	}
	if (lstat("/", &sb) < 0) {
		*why = "cannot open it";
		return -errno;
	}
	if ((*why = untrusted_parent(&sb)))
		return HOME_REFUSED;
	for (;;) {
		char *c = rest + strspn(rest, "/");
		size_t len = strcspn(c, "/");
		int last = !c[len + strspn(c + len, "/")];
		if (!len)
			return 0;
		if (len == 1 && c[0] == '.') {
			memmove(rest, c + len, strlen(c + len) + 1);
			continue;
		}
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			char *slash = strrchr(path, '/'); /* path holds no symlink: its parent is lexical */
			if (slash)
				*slash = 0;
			memmove(rest, c + len, strlen(c + len) + 1);
			continue;
		}
		size_t plen = strlen(path);
		if (plen + 1 + len >= sizeof path) {
			*why = "cannot open it";
			return -ENAMETOOLONG;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, c, len);
		path[plen + 1 + len] = 0;
		memmove(rest, c + len, strlen(c + len) + 1);
		if (lstat(path, &sb) < 0 && (errno != ENOENT || (mkdir(path, 0700) < 0 && errno != EEXIST) ||
					     lstat(path, &sb) < 0)) {
			*why = "cannot create it";
			return -errno;
		}
		if (last)
			return 0;
		if (S_ISLNK(sb.st_mode)) {
			if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
				*why = "a parent directory is another user's symlink";
				return HOME_REFUSED;
			}
			ssize_t n = readlink(path, tmp, sizeof tmp - 1);
			if (n < 0 || ++links > 40 || (size_t)n + 1 + strlen(rest) >= sizeof rest) {
				*why = "cannot open it";
				return n < 0 ? -errno : -ELOOP;
			}
			tmp[n] = 0;
			strcat(tmp, "/");
			strcat(tmp, rest);
			strcpy(rest, tmp);
			if (tmp[0] == '/')
				path[0] = 0;
			else
				path[plen] = 0;
			continue;
		}
		if ((*why = untrusted_parent(&sb)))
			return HOME_REFUSED;
	}
}

int home_check(const char *home, const char **why)
{
	int w = walk_home(home, why);
	if (w)
		return w;
	int fd = open(home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd < 0) {
		int e = errno;
		if (lstat(home, &sb) == 0 && S_ISLNK(sb.st_mode))
			*why = "it is a symlink (a real directory is needed)";
		else if (e == ENOTDIR)
			*why = "it is not a directory";
		else {
			*why = "cannot open it";
			return -e;
		}
		return HOME_REFUSED;
	}
	int r = fstat(fd, &sb) < 0 ? -errno : 0;
	close(fd);
	if (r) {
		*why = "cannot open it";
		return r;
	}
	if (sb.st_uid != geteuid()) {
		*why = geteuid() == 0 ? "it is not owned by root (the caller)" : "it is not owned by the caller";
		return HOME_REFUSED;
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		*why = "it is writable by group or others";
		return HOME_REFUSED;
	}
	return 0;
}
