/* SPDX-License-Identifier: MIT */
/* exec: run COMMAND the way a shell does, and say why it could not be run.
 *
 * A name without '/' is looked for in each PATH directory in turn. A directory that cannot be
 * searched does not hold the name as far as this user can tell, so "not found" (127) stays
 * "not found"; "cannot be executed" (126) is only for a file that was found. */
#ifndef HARNESS_EXEC_H
#define HARNESS_EXEC_H

#include <stddef.h>

struct exec_failure {
	int err;               /* errno of the attempt that decides the outcome */
	int found;             /* 1: a file was found but could not be executed */
	char path[1024];       /* that file, when found */
	char unsearched[1024]; /* the first PATH directory that could not be searched, or "" */
};

/* execve argv[0] with envp (searched in our own PATH when it holds no '/', as execvpe does;
 * a file the kernel cannot run as a program is run by /bin/sh). Returns only on failure,
 * with f filled in. System calls only (no allocation, no stdio): safe in a vfork child. */
void exec_search(char *const argv[], char *const envp[], struct exec_failure *f);
/* EXIT_CANNOT_EXEC or EXIT_NOT_FOUND for f. */
int exec_failure_code(const struct exec_failure *f);
/* "cannot run 'NAME': REASON" for f, into buf. */
void exec_failure_describe(const struct exec_failure *f, const char *name, char *buf, size_t len);

#endif
