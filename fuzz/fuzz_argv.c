/* SPDX-License-Identifier: MIT */
/* Fuzz the command lines of `reaper run`, `reaper scan` and `reaper reap` (harness/run.c,
 * harness/scan.c, the report flags of harness/options.c): the input is argv, arguments split
 * at NUL bytes. Any command line is accepted, is --help, or is a usage error (64); never a
 * crash, a leak or an out-of-bounds write (40 --home once overflowed the finder array). */
#include "harness/exits.h"
#include "harness/run.h"
#include "harness/scan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 256

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the usage errors go nowhere; libFuzzer and the sanitizers keep the real stderr */
	FILE *null = fopen("/dev/null", "w");
	if (null)
		stderr = null;
	unsetenv("REAPER_TIMEOUT");
	unsetenv("REAPER_GRACE");
	unsetenv("REAPER_LEAK_EXIT_CODE");
	return 0;
}

/* An --allow-file argument names a file that is read: keep the fuzzer off the system's
 * special files, whose reading is slow or endless. */
static int hermetic(const char *a)
{
	static const char *const avoid[] = { "proc", "sys", "dev", "run", "tmp", "var" };
	for (size_t i = 0; i < sizeof avoid / sizeof *avoid; i++)
		if (strstr(a, avoid[i]))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	char *buf = malloc(size + 1);
	char *argv[MAX_ARGS + 2];
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = 0;
	int argc = 0;
	argv[argc++] = (char *)(data[0] % 3 == 0 ? "run" : data[0] % 3 == 1 ? "scan" : "reap");
	for (char *p = buf; p < buf + size - 1 && argc <= MAX_ARGS; p += strlen(p) + 1) {
		if (!hermetic(p)) {
			free(buf);
			return 0;
		}
		argv[argc++] = p;
	}
	argv[argc] = NULL;
	int code = data[0] % 3 == 0 ? run_check_args(argc, argv) : scan_check_args(argc, argv, data[0] % 3 == 2);
	check(code == 0 || code == -1 || code == EXIT_USAGE);
	free(buf);
	return 0;
}
