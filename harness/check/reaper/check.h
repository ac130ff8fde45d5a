/* SPDX-License-Identifier: MIT */
/* reaper for Check: every test of a TCase is checked for the processes it leaves behind.
 *
 *     #include <reaper/check.h>
 *     TCase *tc = tcase_create("core");
 *     reaper_check_tcase(tc, "core");
 *
 * Around each test (a checked fixture, so it runs in the test's own process in CK_FORK
 * mode, and around each test in CK_NOFORK mode too) the helper:
 *   - puts REAPER_TEST=<name> and a per-test marker REAPER_CHECK=<unique> in the environment,
 *     so every process the test starts carries them (Check names a test only once its body
 *     runs, so REAPER_TEST holds the name given here, normally the tcase's);
 *   - without a cgroup (below), makes the test's process a child subreaper, so what it
 *     detaches is adopted;
 *   - where a cgroup v2 can be made (see reaper_check_use_cgroup), moves the test's process
 *     into a cgroup of the test's own for the checked fixtures added after this call and the
 *     test, and out of it again before the check: everything the test starts stays in it,
 *     whatever it does to its environment, session or parent;
 *   - after the test, gives whatever is in the test's cgroup, whatever carries the marker, and
 *     every process under the test's process started since the test began (not a child
 *     already there when it began: a checked fixture's added before) that carries no
 *     other test's marker (children forked without exec carry the environment of the last
 *     exec, not setenv's changes), the timeout to exit, kills the survivors (identity-checked,
 *     through libreaper) and fails the test with the list:
 *     "reaper: test NAME left N process(es) running; killed after T s: PID: cmdline ...";
 *   - collects the zombie children of the test's process that started since the test began
 *     (an adopted orphan that exited before the check, a child the test never waited for),
 *     except the test's own children (reaper_check_own), and removes the test's cgroup.
 * The failure is reported at the test's own file and line (its START_TEST), as a failure of
 * the test (":F:" in Check's log), and each leftover that one of the test's own children
 * (reaper_check_fork) started is listed with the line of that call.
 *
 * However a test ends, nothing it started is left:
 *   - a test that calls exit() in its body (CK_FORK: Check counts exit(0) as a pass and runs
 *     no teardown) is checked as it exits, and fails with the list if it left anything;
 *   - in CK_NOFORK mode exit() in a test ends the runner itself: the test's leftovers and
 *     its TCase's are killed and listed on stderr naming the test at its file and line, the
 *     cgroups are removed, and an exit(0) becomes exit status 1 when anything was left
 *     (the helper's exit handler, registered with on_exit at the first reaper_check_tcase
 *     call, flushes stdio and ends the process with _exit: exit handlers registered before
 *     that call do not run then, nor in CK_FORK mode when the exiting test fails);
 *   - a test that fails, crashes or is ended by Check's timeout in CK_FORK mode never reaches
 *     its teardown; what it left is killed when the TCase ends (an unchecked fixture, in the
 *     runner: whatever is in the TCase's cgroup, carries the run's marker, or, without
 *     cgroups, descends from the runner since the TCase began) and listed on stderr; the
 *     test itself is reported failed by Check.
 * Without cgroups the runner is a child subreaper (libreaper's refcounted adoption) while a
 * checked TCase runs, so what its tests orphan (a setsid child of a test that ended) is its
 * child and is found there; with cgroups the cgroups hold everything and the runner's
 * parentage is left alone. A test calling _exit() skips every exit handler: Check counts
 * _exit(0) as a pass and only the TCase's sweep finds (and lists) what it left.
 * In CK_NOFORK mode a test that calls _exit(), crashes or is killed ends the runner itself:
 * a guardian process, which the runner forks when a TCase's first test runs in it and
 * collects when the TCase ends, then kills what is in the TCase's cgroup or carries the run's
 * marker, removes the cgroups and says so on stderr ("reaper: the runner (pid N) ended during
 * a test of tcase NAME ..."). Without cgroups a child forked without exec carries neither
 * and is out of its reach.
 * Unchecked fixtures run in the runner's own cgroup, never in a test's, and what their
 * setups start (the runner's children when the TCase's first test begins) is the runner's:
 * the TCase's sweep leaves it alone, with or without cgroups.
 *
 * Fixture order: Check runs checked setups in the order they were added and teardowns in
 * the reverse order. A checked fixture added after reaper_check_tcase() sets up inside the
 * test's cgroup and under its marker and is torn down before the check; one added before
 * sets up outside them and is torn down after the check (when the check passed: a failed
 * check ends the teardowns).
 *
 * A runner started inside a checked test (or fixture) defers to it: the inner TCases'
 * fixtures do nothing, and what the inner tests leave is the outer test's.
 *
 * Link with -lreaper-check -lreaper and Check's libraries. Functions return 0 or -errno. */
#ifndef REAPER_CHECK_H
#define REAPER_CHECK_H

#include <check.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How many checked TCases can be waiting to run at once; a TCase's slot is free again once
 * its run has ended (run a TCase again after that with another reaper_check_tcase call). */
#define REAPER_CHECK_MAX_TCASES 64

/* Add the leak check to tc; name (copied; NULL: "tcase N") goes into REAPER_TEST.
 * -ENOSPC past REAPER_CHECK_MAX_TCASES TCases not yet run, -ENOMEM. */
int reaper_check_tcase(TCase *tc, const char *name);

/* Check's tests added through this header (tcase_add_test and its loop, signal and exit
 * variants) are noted with their START_TEST file and line, where a failure is reported; a
 * test added where this header is not included is reported at the helper's line (still as
 * the test's failure). */
void reaper_check_add_test_(TCase *tc, const TTest *ttest, int signal, int allowed_exit_value, int start, int end);
#undef _tcase_add_test
#define _tcase_add_test(tc, ttest, signal, allowed_exit_value, start, end) \
	reaper_check_add_test_((tc), (ttest), (signal), (allowed_exit_value), (start), (end))

/* Seconds a test's leftovers get to exit by themselves before they are killed, for every
 * checked TCase (default 2, or REAPER_CHECK_TIMEOUT from the environment). Keep a TCase's
 * Check timeout (tcase_set_timeout) above its tests' run time plus this. -EINVAL if < 0, NaN
 * or infinite. */
int reaper_check_set_timeout(double seconds);

/* Where the tests run: a cgroup v2 of their own per test (ON: a test that cannot have one
 * fails), AUTO (default) where the caller's cgroup2 is writable (as root on a unified or
 * hybrid system; not on a read-only mount, as in most containers), OFF: by marker and
 * descent only. The environment's REAPER_CHECK_CGROUP=auto|on|off sets it when this is not
 * called. -EINVAL for another value. */
enum reaper_check_cgroup { REAPER_CHECK_CGROUP_AUTO = 0, REAPER_CHECK_CGROUP_ON = 1, REAPER_CHECK_CGROUP_OFF = 2 };
int reaper_check_use_cgroup(enum reaper_check_cgroup mode);

/* The running test's own child pid (what its fork returned), which the test will wait for
 * itself: if it is still running at the check it is a leak like any other and is killed,
 * but its exit status is never collected, so the test's own waitpid() reads it (the
 * failure message says so). For the test that runs now only. -EINVAL for pid <= 0, -ENOSPC
 * past 64 children per test. */
int reaper_check_own(pid_t pid);
/* fork() that registers the child with reaper_check_own in the parent: the child pid, 0 in
 * the child, or -errno (-ENOSPC past 64; nothing was started). The macro records the line
 * it is called from (file NULL: none), which the failure names for that child and what it
 * started, and puts it into the child's environment as REAPER_STARTED_AT=FILE:LINE:FUNC
 * (what the child execs, and what that starts, carries it into every reaper report); the
 * function (its address) records none. */
pid_t reaper_check_fork_at(const char *file, int line, const char *func);
pid_t reaper_check_fork(void);
#define reaper_check_fork() reaper_check_fork_at(__FILE__, __LINE__, __func__)

/* A glob (fnmatch on the cmdline or the exe path) of leftovers that are cleaned up but are
 * not a failure. The string is referenced, not copied. -ENOSPC past 32 globs. */
int reaper_check_allow(const char *glob);

#ifdef __cplusplus
}
#endif
#endif
