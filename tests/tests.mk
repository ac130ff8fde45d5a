# Check suites: every tests/check_*.c is one suite binary, linked with libreaper.a and
# tests/testutil.c; fixtures/*.c are small programs the tests run.
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)
TEST_SRC     := $(sort $(wildcard tests/check_*.c))
TEST_BIN     := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TESTUTIL     := $(wildcard tests/testutil.c)
FIXTURE_SRC  := $(sort $(wildcard fixtures/*.c))
FIXTURE_BIN  := $(FIXTURE_SRC:fixtures/%.c=$(BUILD)/fixtures/%)

$(BUILD)/fixtures/%: fixtures/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TESTUTIL) $(wildcard tests/*.h) $(BUILD)/libreaper.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -o $@ $< $(TESTUTIL) $(BUILD)/libreaper.a $(CHECK_LIBS) $(LDLIBS)

fixtures: $(FIXTURE_BIN)
.PHONY: fixtures check-c

# Each suite binary runs with BUILD in its environment so it finds the fixtures and reaper.
check-c: all $(FIXTURE_BIN) $(TEST_BIN)
	@set -e; for t in $(TEST_BIN); do echo "== $$t"; REAPER_BUILD=$(abspath $(BUILD)) $$t; done

CHECK_TARGETS += check-c
