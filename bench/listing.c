/* SPDX-License-Identifier: MIT */
/* bench-listing ENTRY: the floor of `reaper scan --env ENTRY` as a command: list every
 * process whose environment holds ENTRY as "PID CMDLINE" lines on stdout, with the reads that
 * listing needs and nothing else (floor_listing). Linked as the command is (bench.mk: libc
 * alone, musl where the command's is), so both start alike. */
#include "bench/benchlib.h"

#include <fcntl.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench-listing NAME=VALUE\n");
		return 64;
	}
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return 1;
	long n = floor_listing(procfd, argv[1], 0, stdout);
	fflush(stdout);
	return n > 0 ? 0 : 1;
}
