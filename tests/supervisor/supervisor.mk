# SPDX-License-Identifier: MIT
# The `reaper run` supervisor suite: pytest with real processes, under the system
# /usr/bin/python3 (it has pytest). soak-supervisor is the long 100,000-orphan soak; it is not
# part of make check.
SUP_FIXTURES := $(BUILD)/fixtures/sup_orphans

# `fixtures` (tests/tests.mk) builds every fixture: the suite uses hard_sig and others too
check-supervisor: $(BUILD)/reaper $(SUP_FIXTURES) fixtures
	REAPER_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/supervisor

soak-supervisor: $(BUILD)/reaper $(SUP_FIXTURES)
	REAPER_BUILD=$(abspath $(BUILD)) $(PYTHON) tests/supervisor/soak.py $(or $(SOAK_ORPHANS),100000)

.PHONY: check-supervisor soak-supervisor
CHECK_TARGETS += check-supervisor
