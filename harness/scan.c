/* SPDX-License-Identifier: MIT */
/* scan: `reaper scan FINDERS [--json]` and `reaper reap FINDERS [--timeout S] [--grace S]`.
 * Both take their finders from the command line (--home DIR, --env NAME=VALUE, --tree PID)
 * and the report flags of output.h. Exit codes: see scan_usage(), reap_usage(), reaper(1). */
#define _GNU_SOURCE
#include "scan.h"

#include "config.h"
#include "escape.h"
#include "json.h"
#include "msg.h"
#include "options.h"
#include "reaper/marker.h"
#include "reaper/procfs.h"
#include "reaper/report.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_FINDERS 32

enum { OPT_HOME = 1, OPT_ENV, OPT_TREE, OPT_JSON, OPT_TIMEOUT, OPT_GRACE, OPT_LEAK, OPT_HELP };

struct cli {
	const char *name;                /* "scan" or "reap" */
	struct reaper_finder f[MAX_FINDERS];
	char *owned[MAX_FINDERS];        /* "HOME=DIR" strings built for --home */
	size_t nf, nowned;
	const char *hold_dirs[MAX_FINDERS + 3];
	int json;
	const char *timeout_arg, *grace_arg, *leak_arg; /* flag values, NULL when not given */
	double timeout, grace;
	int leak_code;
	struct output out;
};

static const char scan_synopsis[] =
	"usage: reaper scan [--home DIR] [--env NAME=VALUE] [--tree PID] [--json] [REPORT OPTIONS]\n";
static const char reap_synopsis[] =
	"usage: reaper reap [--home DIR] [--env NAME=VALUE] [--tree PID] [--timeout S] [--grace S]\n"
	"                   [--leak-exit-code N] [REPORT OPTIONS]\n";

__attribute__((format(printf, 2, 3))) static int usage_error(struct cli *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	fputs(strcmp(c->name, "scan") ? reap_synopsis : scan_synopsis, stderr);
	fprintf(stderr, "Try 'reaper %s --help'; the manual is reaper(1).\n", c->name);
	return EXIT_USAGE;
}

static int add_finder(struct cli *c, struct reaper_finder f)
{
	if (c->nf == MAX_FINDERS)
		return usage_error(c, "too many finders (at most %d)", MAX_FINDERS);
	c->f[c->nf++] = f;
	return 0;
}

/* --home DIR: a finder for the marker HOME=DIR, which we own. */
static int add_home(struct cli *c, const char *dir)
{
	char *s;
	if (dir[0] != '/')
		return usage_error(c, "--home wants an absolute path, not '%s'", dir);
	if (add_finder(c, reaper_find_env(NULL)))
		return EXIT_USAGE;
	if (asprintf(&s, "HOME=%s", dir) < 0)
		return usage_error(c, "out of memory");
	c->owned[c->nowned++] = s;
	c->f[c->nf - 1].marker = s;
	return 0;
}

/* One getopt_long value with its argument: 0, -1 for --help, or EXIT_USAGE (said). */
static int option(struct cli *c, int opt, char **argv, int reap)
{
	long pid;
	int h;
	switch (opt) {
	case OPT_HOME:
		return add_home(c, optarg);
	case OPT_ENV:
		if (marker_check(optarg) < 0)
			return usage_error(c, "--env wants NAME=VALUE, not '%s'", optarg);
		return add_finder(c, reaper_find_env(optarg));
	case OPT_TREE:
		if (config_parse_int(optarg, &pid) < 0 || pid <= 0 || pid > 0x7fffffff)
			return usage_error(c, "--tree wants a process id, not '%s'", optarg);
		return add_finder(c, reaper_find_tree((pid_t)pid));
	case OPT_JSON:
		if (reap)
			return usage_error(c, "--json is for scan; use --report FILE");
		c->json = 1;
		return 0;
	case OPT_TIMEOUT:
	case OPT_GRACE:
	case OPT_LEAK:
		if (!reap)
			return usage_error(c, "'%s' is for reap, not scan", argv[optind - 1]);
		*(opt == OPT_TIMEOUT ? &c->timeout_arg : opt == OPT_GRACE ? &c->grace_arg : &c->leak_arg) = optarg;
		return 0;
	case 'h':
	case OPT_HELP:
		return -1;
	default:
		if ((h = output_option(&c->out, opt, optarg)) > 0)
			return 0;
		if (h < 0)
			return usage_error(c, "%s", c->out.err);
		return usage_error(c, "unknown or incomplete option '%s'", argv[optind - 1]);
	}
}

/* 0, -1 for --help, or EXIT_USAGE (message printed). */
static int parse(struct cli *c, int argc, char **argv, int reap)
{
	static const struct option opts[] = {
		{ "home", required_argument, 0, OPT_HOME },
		{ "env", required_argument, 0, OPT_ENV },
		{ "tree", required_argument, 0, OPT_TREE },
		{ "json", no_argument, 0, OPT_JSON },
		{ "timeout", required_argument, 0, OPT_TIMEOUT },
		{ "grace", required_argument, 0, OPT_GRACE },
		{ "leak-exit-code", required_argument, 0, OPT_LEAK },
		{ "help", no_argument, 0, OPT_HELP },
		OUTPUT_LONG_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	char msg[256];
	int opt, r;
	opterr = 0;
	optind = 0; /* 0, not 1: getopt forgets a cluster of short options a former parse left */
	while ((opt = getopt_long(argc, argv, "+hv", opts, NULL)) != -1)
		if ((r = option(c, opt, argv, reap)))
			return r;
	if (optind < argc)
		return usage_error(c, "unexpected argument '%s'", argv[optind]);
	if (!c->nf)
		return usage_error(c, "%s", "no finder given: use --home DIR, --env NAME=VALUE or --tree PID");
	if (reap && (config_reap_times(msg, sizeof msg, c->timeout_arg, c->grace_arg, &c->timeout, &c->grace) < 0 ||
		     config_leak_exit_code(msg, sizeof msg, c->leak_arg, &c->leak_code) < 0))
		return usage_error(c, "%s", msg);
	return 0;
}

static void cli_done(struct cli *c)
{
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	output_done(&c->out);
}

/* A pidfd per match: with thousands of leftovers the soft limit of 1024 is too low. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Parse argv for scan or reap: -1 to go on, else the exit status (--help or a usage error). */
static int start(struct cli *c, const char *name, int argc, char **argv)
{
	int reap = !strcmp(name, "reap");
	*c = (struct cli){ .name = name };
	output_init(&c->out, name);
	int code = parse(c, argc, argv, reap);
	if (!code) {
		raise_nofile();
		return -1;
	}
	if (code < 0)
		(reap ? reap_usage : scan_usage)(stdout);
	cli_done(c);
	return code < 0 ? 0 : code;
}

int scan_check_args(int argc, char **argv, int reap)
{
	struct cli c = { .name = reap ? "reap" : "scan" };
	output_init(&c.out, c.name);
	int code = parse(&c, argc, argv, reap);
	cli_done(&c);
	return code;
}

/* Open files of a leak are named under each --home DIR, our HOME, our cwd and /tmp. */
static void set_hold_dirs(struct cli *c, struct reaper_opts *o)
{
	size_t n = 0;
	for (size_t i = 0; i < c->nowned; i++)
		c->hold_dirs[n++] = c->owned[i] + strlen("HOME=");
	c->hold_dirs[n++] = getenv("HOME");
	c->hold_dirs[n++] = ".";
	c->hold_dirs[n++] = "/tmp";
	o->hold_dirs = c->hold_dirs;
	o->nhold_dirs = n;
}

/* A marker finder whose NAME=VALUE our own environment holds matches our caller's shell and
 * everything else it started, not only what a suite left: said once. The caller itself (its
 * ancestors, its pipeline, its job) is left out whatever the finders match. */
static void warn_own_markers(const struct cli *c)
{
	for (size_t i = 0; i < c->nf; i++) {
		if (c->f[i].kind == REAPER_FIND_ENV && marker_own(c->f[i].marker))
			warn("warning: %s is in reaper's own environment: whatever else the caller started carries "
			     "it too; reaper, its ancestors and its pipeline are left out", c->f[i].marker);
	}
}

/* Our process group when it is a job of its own (a job-control shell made it for our
 * pipeline: our parent is in another): everything in it is the pipeline's, 0 otherwise (a
 * script's one group holds what its suite left too). */
static pid_t own_job(void)
{
	struct reaper_stat st;
	pid_t pg = getpgrp();
	if (procfs_stat(-1, getppid(), &st) < 0 || st.pgrp == pg || st.session != getsid(0))
		return 0;
	return pg;
}

/* The reap's options for c: its deadlines (0 for a scan), the report flags', the hold
 * directories; the command adds its own. */
static void reap_opts(struct cli *c, struct reaper_opts *o)
{
	reaper_opts_init(o);
	o->timeout = c->timeout;
	o->grace = c->grace;
	output_reap_opts(&c->out, o);
	set_hold_dirs(c, o);
	o->exclude_pgrp = own_job();
	warn_own_markers(c);
}

/* What a scan found, as 'PID CMDLINE' lines or the JSON report on stdout, and the files
 * asked for; the scan's exit status. */
static int list(struct cli *c, const struct reaper_report *rep)
{
	struct sbuf b = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < rep->n; i++)
		n += output_shown(&rep->procs[i]);
	if (c->json) {
		json_report(&b, &c->out, rep, c->f, c->nf);
		fwrite(sbuf_str(&b), 1, b.len, stdout);
	}
	for (size_t i = 0; i < rep->n && !c->json; i++) {
		const struct reaper_proc *p = &rep->procs[i];
		if (!output_shown(p))
			continue;
		b.len = 0;
		sbuf_printf(&b, "%d ", (int)p->pid);
		escape_text(&b, p->cmdline, strlen(p->cmdline), 0);
		printf("%s\n", sbuf_str(&b));
	}
	sbuf_free(&b);
	fflush(stdout);
	int failed = output_emit(&c->out, rep, c->f, c->nf, OUT_FILES) < 0;
	if (output_incomplete(rep))
		return EXIT_INCOMPLETE;
	return failed ? EXIT_REPORT_FAILED : n ? EXIT_OK : EXIT_NO_MATCH;
}

/* Every output of a reap; its exit status: incomplete, then a leak, then a report file that
 * could not be written. */
static int report(struct cli *c, const struct reaper_report *rep)
{
	int failed = output_emit(&c->out, rep, c->f, c->nf, OUT_ALL) < 0;
	if (output_incomplete(rep))
		return EXIT_INCOMPLETE;
	return rep->leaks ? c->leak_code : failed ? EXIT_REPORT_FAILED : EXIT_OK;
}

/* scan or reap: parse, reap with the command's options, report, clean up. */
static int scan_or_reap(const char *name, int argc, char **argv)
{
	struct cli c;
	struct reaper_opts o;
	struct reaper_report *rep = NULL;
	int reap = !strcmp(name, "reap");
	int code = start(&c, name, argc, argv);
	if (code >= 0)
		return code;
	/* an output pipe closed early (`| head`, `| true`) must not take the exit status with it */
	signal(SIGPIPE, SIG_IGN);
	reap_opts(&c, &o);
	if (!reap) {
		/* the pgrep-like listing shows no holdings: they cost a read of every fd per match */
		o.holdings = c.json || c.out.report_path || c.out.junit_path;
		o.report_only = 1; /* a scan never signals */
		o.on_progress = NULL;
	}
	/* the listing alone shows a match by its pid and cmdline: nothing else is read */
	int brief = !reap && !c.json && !c.out.report_path && !c.out.junit_path;
	int r = (brief ? reap_listing : reaper_reap)(c.f, c.nf, &o, &rep);
	if (r < 0)
		code = reap ? die(EXIT_REAP_FAILED, "the reap failed: %s", strerror(-r))
			    : die(EXIT_CANNOT_EXEC, "cannot scan: %s", strerror(-r));
	else
		code = reap ? report(&c, rep) : list(&c, rep);
	reaper_report_free(rep);
	cli_done(&c);
	return code;
}

int cmd_scan(int argc, char **argv)
{
	return scan_or_reap("scan", argc, argv);
}

int cmd_reap(int argc, char **argv)
{
	return scan_or_reap("reap", argc, argv);
}

void scan_usage(FILE *out)
{
	fputs(scan_synopsis, out);
	fprintf(out,
		"List the live processes the finders match, as 'PID CMDLINE' lines (--json: the JSON\n"
		"report on stdout). Signals nothing.\n\n"
		"  --home DIR           processes whose environment holds HOME=DIR\n"
		"  --env NAME=VALUE     processes whose environment holds NAME=VALUE (repeatable)\n"
		"  --tree PID           descendants of PID (repeatable)\n"
		"  --json               print the JSON report (schema reaper-report/1.2) on stdout\n\n"
		"Exit status: %d some process matched; %d none did; %d usage error; %d a --report or\n"
		"--junit file could not be written; %d the scan is incomplete (out of descriptors, say);\n"
		"%d /proc could not be scanned.\n",
		EXIT_OK, EXIT_NO_MATCH, EXIT_USAGE, EXIT_REPORT_FAILED, EXIT_INCOMPLETE, EXIT_CANNOT_EXEC);
}

void reap_usage(FILE *out)
{
	fputs(reap_synopsis, out);
	fprintf(out,
		"Wait for the processes the finders match to exit, then SIGTERM, then SIGKILL them, and\n"
		"report them: the reap phase of 'reaper run' on its own.\n\n"
		"  --home DIR           processes whose environment holds HOME=DIR\n"
		"  --env NAME=VALUE     processes whose environment holds NAME=VALUE (repeatable)\n"
		"  --tree PID           descendants of PID (repeatable)\n"
		"  --timeout S          time to exit by themselves (REAPER_TIMEOUT, default %g)\n"
		"  --grace S            time between SIGTERM and SIGKILL (REAPER_GRACE, default %g)\n"
		"  --leak-exit-code N   exit status when something leaked (REAPER_LEAK_EXIT_CODE,\n"
		"                       default %d; 3..125, not 64)\n"
		"S: seconds, or a number with ms, s, m, h or d (1.5, 30s, 2m, 1h).\n\n"
		"Exit status: %d nothing leaked; the leak exit code when something did; %d usage error;\n"
		"%d nothing leaked but a --report or --junit file could not be written; %d the reap is\n"
		"incomplete (processes may have been missed or left running: out of descriptors, say);\n"
		"%d the reap failed.\n",
		CONFIG_TIMEOUT_DEFAULT, CONFIG_GRACE_DEFAULT, EXIT_LEAK_DEFAULT, EXIT_OK, EXIT_USAGE, EXIT_REPORT_FAILED,
		EXIT_INCOMPLETE, EXIT_REAP_FAILED);
}
