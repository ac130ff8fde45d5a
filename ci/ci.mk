# SPDX-License-Identifier: MIT
# Sanitizer and valgrind runs of the Check suites. Not part of CHECK_TARGETS: `make check`
# runs those; .ci/run calls these after it (see ci/sanitize.sh and ci/valgrind.sh).
SAN_BUILD ?= $(BUILD)-asan
VG_BUILD  ?= $(BUILD)-vg
# What valgrind runs, as SUITE or SUITE:TCASE; empty: every Check suite. ci/valgrind.sh
# leaves out the test cases tagged "pidfd" (Debian 12's valgrind 3.19 has no pidfd_open or
# pidfd_send_signal, so libreaper signals only its own children there) and then runs a few
# `reaper` command lines under memcheck too.
VALGRIND_SUITES ?=

.PHONY: check-sanitize check-valgrind
check-sanitize:
	@BUILD=$(SAN_BUILD) MAKE="$(MAKE)" bash ci/sanitize.sh

check-valgrind:
	@BUILD=$(VG_BUILD) MAKE="$(MAKE)" bash ci/valgrind.sh $(VALGRIND_SUITES)
