# Sanitizer and valgrind runs of the Check suites. Not part of CHECK_TARGETS: `make check`
# runs those; .ci/run calls these after it (see ci/sanitize.sh and ci/valgrind.sh).
SAN_BUILD ?= $(BUILD)-asan
VG_BUILD  ?= $(BUILD)-vg
# The suites valgrind runs: the unit and core integration suites and the hardening suites
# that do not depend on timing under load (the PID-namespace and fork-storm ones do).
VALGRIND_SUITES ?= check_core check_hard_input check_hard_states check_hard_lost check_hard_threads

.PHONY: check-sanitize check-valgrind
check-sanitize:
	@BUILD=$(SAN_BUILD) MAKE="$(MAKE)" bash ci/sanitize.sh

check-valgrind:
	@BUILD=$(VG_BUILD) MAKE="$(MAKE)" bash ci/valgrind.sh $(VALGRIND_SUITES)
