# Sanitizer and valgrind runs of the Check suites. Not part of CHECK_TARGETS: `make check`
# runs those; .ci/run calls these after it (see ci/sanitize.sh and ci/valgrind.sh).
SAN_BUILD ?= $(BUILD)-asan
VG_BUILD  ?= $(BUILD)-vg
# What valgrind runs, as SUITE or SUITE:TCASE. Debian 12's valgrind (3.19) does not know
# pidfd_open or pidfd_send_signal (syscalls 434, 424: ENOSYS under memcheck), and every
# real-process path of libreaper pins processes by pidfd, so under memcheck only the cases
# that need no pidfd can pass: the /proc parsing, environ matching and hostile-input units.
# The real-process suites run under ASan + UBSan (check-sanitize) instead.
VALGRIND_CASES ?= check_core:environ check_hard_input:parse

.PHONY: check-sanitize check-valgrind
check-sanitize:
	@BUILD=$(SAN_BUILD) MAKE="$(MAKE)" bash ci/sanitize.sh

check-valgrind:
	@BUILD=$(VG_BUILD) MAKE="$(MAKE)" bash ci/valgrind.sh $(VALGRIND_CASES)
