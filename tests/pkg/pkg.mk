# SPDX-License-Identifier: MIT
# Packaging suite (tests/pkg/): the exported symbols, a plain build by a non-root user with a
# compiler only, install/uninstall, the pip-installed package in a fresh venv, licence lines.
.PHONY: check-pkg
check-pkg: all $(BUILD)/tests/check_hard_priv
	REAPER_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/pkg

CHECK_TARGETS += check-pkg

# The docs' facts alone (part of check-pkg): exit statuses, variables, man --warnings, ...
.PHONY: check-docs
check-docs: all
	REAPER_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/pkg/test_docs.py
