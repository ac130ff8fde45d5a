# SPDX-License-Identifier: MIT
# The examples leak on purpose, so they fail: each target runs one, shows its report, and
# succeeds only when the leak was caught (a passing example would mean reaper missed it).
# Not part of make check (their failure lines would read as the suite's).
.PHONY: example-pytest example-check
EXAMPLE_CHECK := $(BUILD)/examples/check-example

example-pytest: $(BUILD)/libreaper.so
	@echo "== $(PYTHON) -m pytest -p reaper.pytest_plugin --reaper --reaper-timeout 1 harness/examples/pytest"
	@if REAPER_BUILD=$(abspath $(BUILD)) PYTHONPATH=$(abspath harness/python) PYTHONDONTWRITEBYTECODE=1 \
		$(PYTHON) -m pytest -p no:cacheprovider -p reaper.pytest_plugin --reaper --reaper-timeout 1 \
		--reaper-report $(BUILD)/examples-pytest-leaks.json harness/examples/pytest; then \
		echo "example-pytest: the leak was NOT caught" >&2; exit 1; \
	else echo "example-pytest: caught the leak on purpose (JSON: $(BUILD)/examples-pytest-leaks.json)"; fi

$(EXAMPLE_CHECK): harness/examples/check/example.c harness/check/reaper/check.h $(CHECKH_LIB) $(BUILD)/libreaper.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iharness/check $(CHECK_CFLAGS) -o $@ $< $(CHECKH_LIB) $(BUILD)/libreaper.a $(CHECK_LIBS) $(LDLIBS)

example-check: $(EXAMPLE_CHECK)
	@echo "== $(EXAMPLE_CHECK)"
	@if REAPER_CHECK_TIMEOUT=1 $(EXAMPLE_CHECK); then \
		echo "example-check: the leak was NOT caught" >&2; exit 1; \
	else echo "example-check: caught the leak on purpose"; fi
