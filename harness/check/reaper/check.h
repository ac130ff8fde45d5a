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
 *   - makes the test's process a child subreaper, so what it detaches is adopted;
 *   - after the test, gives whatever carries the marker, and every process under the test's
 *     process started since the test began that carries no other test's marker (children
 *     forked without exec carry the environment of the last exec, not setenv's changes),
 *     the timeout to exit, kills the
 *     survivors (identity-checked, through libreaper) and fails the test with the list:
 *     "reaper: test NAME left N process(es) running; killed after T s: PID: cmdline ...";
 *   - collects the zombie children of the test's process that started since the test began
 *     (an adopted orphan that exited before the check, a child the test never waited for).
 * A test that fails or crashes in CK_FORK mode never reaches its teardown; what it left is
 * killed when the TCase ends (an unchecked fixture) and listed on stderr.
 *
 * Link with -lreaper-check -lreaper and Check's libraries. Functions return 0 or -errno. */
#ifndef REAPER_CHECK_H
#define REAPER_CHECK_H

#include <check.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How many TCases of one program can be checked. */
#define REAPER_CHECK_MAX_TCASES 64

/* Add the leak check to tc; name (copied; NULL: "tcase N") goes into REAPER_TEST.
 * -ENOSPC past REAPER_CHECK_MAX_TCASES, -ENOMEM. */
int reaper_check_tcase(TCase *tc, const char *name);

/* Seconds a test's leftovers get to exit by themselves before they are killed, for every
 * checked TCase (default 2, or REAPER_CHECK_TIMEOUT from the environment). Keep a TCase's
 * Check timeout (tcase_set_timeout) above its tests' run time plus this. -EINVAL if < 0, NaN
 * or infinite. */
int reaper_check_set_timeout(double seconds);

/* A glob (fnmatch on the cmdline or the exe path) of leftovers that are cleaned up but are
 * not a failure. The string is referenced, not copied. -ENOSPC past 32 globs. */
int reaper_check_allow(const char *glob);

#ifdef __cplusplus
}
#endif
#endif
