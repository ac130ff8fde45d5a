# SPDX-License-Identifier: MIT
# Check suites: every tests/check_*.c is one suite binary, linked with tests/testutil.c and the
# library's internal archive (they test its insides too); fixtures/*.c are small programs the
# tests run (a C compiler is all they need).
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)
TEST_SRC     := $(sort $(wildcard tests/check_*.c))
TEST_BIN     := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TESTUTIL     := $(wildcard tests/testutil.c)
FIXTURE_SRC  := $(sort $(wildcard fixtures/*.c))
FIXTURE_BIN  := $(FIXTURE_SRC:fixtures/%.c=$(BUILD)/fixtures/%)

$(BUILD)/fixtures/%: fixtures/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TESTUTIL) $(wildcard tests/*.h) $(INTERNAL_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -o $@ $< $(TESTUTIL) $(INTERNAL_LIB) $(CHECK_LIBS) $(LDLIBS)

fixtures: $(FIXTURE_BIN)
.PHONY: fixtures check-c

# Each suite that can leave tests not run lists them, one row each, in a file of its own under
# NOT_RUN_DIR (the suites may run side by side: see make check's lanes); make check and
# check-c end with the count. $(1): the closing line; $(2): the lists it counts.
NOT_RUN_DIR := $(BUILD)/tests/not-run
not_run_summary = rows=$$(cat $(2) 2>/dev/null || true); if [ -n "$$rows" ]; then \
	printf '%s; %s: see the lists above or %s\n' "$(1)" \
		"$$(printf '%s\n' "$$rows" | awk -F'\t' '{n[$$3]++} END {s=""; for (k in n) s = s (s ? ", " : "") n[k] " not run (need " k ")"; print s}')" \
		"$(NOT_RUN_DIR)/"; else echo "$(1)"; fi

# Each suite binary runs with BUILD in its environment so it finds the fixtures and reaper.
# A test that cannot run for this user (root-only, say) is not registered, and each suite
# lists those it did not run, appending them to TESTS_NOT_RUN_FILE, so a passing run says how
# many tests it did not run.
check-c: all $(FIXTURE_BIN) $(TEST_BIN)
	@mkdir -p $(NOT_RUN_DIR); rm -f $(NOT_RUN_DIR)/check-c.txt
	@set -e; for t in $(TEST_BIN); do echo "== $$t"; \
		REAPER_BUILD=$(abspath $(BUILD)) TESTS_NOT_RUN_FILE=$(abspath $(NOT_RUN_DIR))/check-c.txt $$t; done
	@$(call not_run_summary,check-c: every Check test that ran passed,$(NOT_RUN_DIR)/check-c.txt)

CHECK_TARGETS += check-c

# The suites that run the build's programs as another user, once more with the build in a
# directory only its owner can enter (as a clone in /root or in a mktemp -d is): they must not
# need that user to reach the checkout. As another user than root they skip those cases anyway.
UNREACHABLE_SUITES := $(BUILD)/tests/check_hard_priv $(BUILD)/tests/check_hard_lost
check-unreachable-build: all $(FIXTURE_BIN) $(UNREACHABLE_SUITES)
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; chmod 0700 "$$d"; \
	mkdir "$$d/build" "$$d/build/tests"; cp -p $(BUILD)/reaper "$$d/build/"; cp -rp $(BUILD)/fixtures "$$d/build/"; \
	cp -p $(UNREACHABLE_SUITES) "$$d/build/tests/"; \
	for t in $(notdir $(UNREACHABLE_SUITES)); do echo "== $$t (build in a 0700 directory)"; \
		REAPER_BUILD="$$d/build" "$$d/build/tests/$$t"; done
.PHONY: check-unreachable-build
CHECK_TARGETS += check-unreachable-build
