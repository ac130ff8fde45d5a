# SPDX-License-Identifier: MIT
# pytest suite of the reaper command's scan / reap subcommands and its reports (tests/cli/).
.PHONY: check-cli
check-cli: all $(BUILD)/fixtures/many fixtures
	REAPER_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/cli

CHECK_TARGETS += check-cli
