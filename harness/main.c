/* reaper: the command.  `reaper run|scan|reap ...`; see usage() and reaper(1). */
#include "config.h"
#include "run.h"
#include "reaper/reaper.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out, "usage: reaper run [OPTIONS] -- COMMAND [ARG...]\n"
		     "       reaper --help | --version\n\n");
	run_usage(out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "--version")) {
		printf("reaper %s\n", REAPER_VERSION);
		return 0;
	}
	if (!strcmp(sub, "run"))
		return cmd_run(argc - 1, argv + 1);
	fprintf(stderr, "reaper: unknown command '%s'\n", sub);
	usage(stderr);
	return EXIT_USAGE;
}
