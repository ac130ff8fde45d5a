/* SPDX-License-Identifier: MIT */
/* reaper: the command.  `reaper run|scan|reap ...`; see usage() and reaper(1). */
#include "exits.h"
#include "guardian.h"
#include "msg.h"
#include "options.h"
#include "run.h"
#include "scan.h"
#include "reaper/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out, "usage: reaper run [OPTIONS] -- COMMAND [ARG...]\n"
		     "       reaper scan FINDERS [--json] [REPORT OPTIONS]\n"
		     "       reaper reap FINDERS [--timeout S] [--grace S] [REPORT OPTIONS]\n"
		     "       reaper -h | --help | -V | --version\n\n");
	run_usage(out);
	fputc('\n', out);
	scan_usage(out);
	fputc('\n', out);
	reap_usage(out);
	fputc('\n', out);
	output_usage(out);
	fprintf(out, "\nSee reaper(1).\n");
}

/* A usage error: the synopsis and where to read more, not the whole help. */
static void short_usage(void)
{
	fputs("usage: reaper run [OPTIONS] -- COMMAND [ARG...]\n"
	      "       reaper scan|reap FINDERS [OPTIONS]\n"
	      "Try 'reaper --help' or 'reaper COMMAND --help'; the manual is reaper(1).\n",
	      stderr);
}

/* Started with stdin, stdout or stderr closed, the first pipe we make would land there, and
 * whatever later puts /dev/null on 0-2 (the guardian does) would close it unseen. */
static void hold_std_fds(void)
{
	/* one call for the three: poll marks a closed one POLLNVAL, but also an O_PATH one (open:
	 * a /dev/null opened for it would land above 2, and COMMAND would inherit it), which
	 * fcntl tells apart; poll fails (EINVAL) under a limit of fewer than 3 descriptors */
	struct pollfd p[3] = { { .fd = 0 }, { .fd = 1 }, { .fd = 2 } };
	int polled = poll(p, 3, 0) >= 0;
	for (int fd = 0; fd <= 2; fd++)
		if ((!polled || (p[fd].revents & POLLNVAL)) && fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", O_RDWR) < 0)
			return; /* then nothing opens onto 0-2 either */
}

int main(int argc, char **argv)
{
	hold_std_fds();
	if (argc < 2) {
		short_usage();
		return EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "--version") || !strcmp(sub, "-V")) {
		printf("reaper %s\n", reaper_version());
		return 0;
	}
	if (!strcmp(sub, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(sub, GUARDIAN_SUBCOMMAND))
		return guardian_main(argc - 1, argv + 1);
	if (!strcmp(sub, "scan"))
		return cmd_scan(argc - 1, argv + 1);
	if (!strcmp(sub, "reap"))
		return cmd_reap(argc - 1, argv + 1);
	if (sub[0] == '-' && argc > 2 && (!strcmp(argv[2], "run") || !strcmp(argv[2], "scan") || !strcmp(argv[2], "reap")))
		warn("%s goes after the command: reaper %s %s ...", sub, argv[2], sub);
	else
		warn("unknown %s '%s'", sub[0] == '-' ? "option" : "command", sub);
	short_usage();
	return EXIT_USAGE;
}
