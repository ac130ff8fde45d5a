/* SPDX-License-Identifier: MIT */
/* testid: what CI systems need from the name of the test that started a leaked process
 * (its REAPER_TEST). A pytest node id "tests/e2e/test_x.py::TestA::test_b[1]" gives a source
 * file (tests/e2e/test_x.py), the JUnit classname JUnit consumers group by
 * (tests.e2e.test_x.TestA) and the test's own name (test_b[1]); any other name (a Check
 * test, a shell step) has no file, classname "reaper" and is the name itself. */
#ifndef HARNESS_TESTID_H
#define HARNESS_TESTID_H

#include "escape.h"

#include <stddef.h>

/* Length of the source file part of test (before the first "::", when it names a path or a
 * .py file), 0 when there is none. */
size_t testid_file(const char *test);
/* The JUnit classname of test ("reaper" when test is empty or has no "::"). */
void testid_classname(struct sbuf *b, const char *test);
/* The test's own name: the last "::" part, or the whole name; "" for "". */
void testid_name(struct sbuf *b, const char *test);
/* A command line as a name that stays the same from run to run: visible single-line text,
 * at most about max bytes, every run of digits (pids, ports, counters) as one "N", and the
 * random part of a temporary name (a path component starting "tmp") as "*". */
void testid_command(struct sbuf *b, const char *cmdline, size_t max);

#endif
