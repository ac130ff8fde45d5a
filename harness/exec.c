/* SPDX-License-Identifier: MIT */
/* exec: see exec.h. Runs in the forked child, between fork and exec. */
#define _GNU_SOURCE
#include "exec.h"

#include "exits.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dst = a + b + c, cut to the size of dst; its length, or -1 when it did not fit. */
static int join(char *dst, size_t size, const char *a, size_t alen, const char *b, const char *c)
{
	size_t blen = strlen(b), clen = strlen(c);
	if (alen + blen + clen >= size)
		return -1;
	memcpy(dst, a, alen);
	memcpy(dst + alen, b, blen);
	memcpy(dst + alen + blen, c, clen + 1);
	return (int)(alen + blen + clen);
}

static void set_path(struct exec_failure *f, const char *path)
{
	if (join(f->path, sizeof f->path, "", 0, path, "") < 0)
		f->path[0] = 0;
}

/* A file the kernel does not recognise as a program: a script without "#!", run by sh. */
static int exec_sh(const char *path, char *const argv[], char *const envp[])
{
	size_t n = 0;
	while (argv[n])
		n++;
	char *v[n + 2]; /* on the stack: no allocation between vfork and exec */
	v[0] = "/bin/sh";
	v[1] = (char *)path;
	for (size_t i = 1; i <= n; i++)
		v[i + 1] = argv[i];
	execve(v[0], v, envp);
	return -errno;
}

/* One attempt at path. 1: nothing runnable there (go on searching); 0: f holds why the file
 * found there could not be run. Returns only on failure. */
static int try_path(const char *path, char *const argv[], char *const envp[], struct exec_failure *f,
		    int searching)
{
	execve(path, argv, envp);
	int e = errno;
	if (e == ENOEXEC) {
		int r = exec_sh(path, argv, envp);
		e = r == -ENOENT ? ENOEXEC : -r;
	}
	struct stat sb;
	int exists = stat(path, &sb) == 0;
	int stat_err = exists ? 0 : errno;
	switch (e) {
	case EACCES:
		if (!exists) {
			/* a directory on the way cannot be searched: the name is not known to be there */
			if (searching && stat_err == EACCES && !f->unsearched[0])
				join(f->unsearched, sizeof f->unsearched, path, (size_t)(strrchr(path, '/') - path), "", "");
			if (!searching)
				f->err = e;
			return searching;
		}
		if (S_ISDIR(sb.st_mode)) {
			if (searching)
				return 1; /* a directory of that name is not a command */
			e = EISDIR; /* what the kernel's EACCES means here, as a shell says it */
		}
		/* a file that is there but may not be executed: remember the first, keep looking */
		if (!f->found) {
			f->found = 1;
			f->err = e;
			set_path(f, path);
		}
		return searching;
	case ENOENT:
	case ENOTDIR:
	case ELOOP:
	case ENAMETOOLONG:
	case ESTALE:
	case ENODEV:
	case ETIMEDOUT:
		if (exists && S_ISREG(sb.st_mode)) {
			/* the file is there: its interpreter or loader is missing */
			f->found = 1;
			f->err = e;
			set_path(f, path);
			return 0;
		}
		if (!f->found)
			f->err = e;
		return searching;
	default: /* found, and the kernel said why it cannot run (ETXTBSY, E2BIG, ENOMEM, ...) */
		f->found = 1;
		f->err = e;
		set_path(f, path);
		return 0;
	}
}

void exec_search(char *const argv[], char *const envp[], struct exec_failure *f)
{
	memset(f, 0, sizeof *f);
	f->err = ENOENT;
	const char *name = argv[0];
	if (!*name)
		return;
	if (strchr(name, '/')) {
		try_path(name, argv, envp, f, 0);
		if (f->err == EACCES && !f->found) {
			f->found = 1; /* as a shell: a path that cannot be reached is "Permission denied" */
			set_path(f, name);
		}
		return;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin"; /* execvp's default */
	char buf[PATH_MAX];
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		/* an empty entry is the current directory */
		if (join(buf, sizeof buf, p, dlen, dlen ? "/" : "", name) >= 0 && !try_path(buf, argv, envp, f, 1))
			return;
		if (!*end)
			break;
		p = end;
	}
	if (!f->found)
		f->err = ENOENT; /* whatever each directory said, the name is in none of them */
}

int exec_failure_code(const struct exec_failure *f)
{
	return f->found ? EXIT_CANNOT_EXEC : EXIT_NOT_FOUND;
}

void exec_failure_describe(const struct exec_failure *f, const char *name, char *buf, size_t len)
{
	if (f->found && (f->err == ENOENT || f->err == ENOTDIR))
		snprintf(buf, len, "cannot run '%s': %s: its interpreter or loader: %s", name, f->path, strerror(f->err));
	else if (f->found && strcmp(f->path, name))
		snprintf(buf, len, "cannot run '%s': %s: %s", name, f->path, strerror(f->err));
	else if (f->found || strchr(name, '/'))
		snprintf(buf, len, "cannot run '%s': %s", name, strerror(f->err));
	else if (f->unsearched[0])
		snprintf(buf, len, "cannot run '%s': not found in PATH (%s); the PATH directory %s could not be searched (%s)",
			 name, strerror(f->err), f->unsearched, strerror(EACCES));
	else
		snprintf(buf, len, "cannot run '%s': not found in PATH (%s)", name, strerror(f->err));
}
