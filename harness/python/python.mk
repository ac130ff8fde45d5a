# SPDX-License-Identifier: MIT
# The Python package harness/python/reaper (ctypes over libreaper) and its pytest plugin:
# tests (check-python, part of make check) and installation for Debian's python3.
# The package's metadata is harness/python/pyproject.toml; `make install` builds its wheel
# (without a bundled library: it loads the libreaper installed beside it, LIBDIR) and unpacks
# it where python3 looks. Without python3 or pip that step is skipped with a message: the
# rest of `make install` needs a C compiler and libc only. INSTALL_PYTHON=no leaves the package
# out of install and uninstall (for a packager who builds it on its own).
PY_DIR   := harness/python
PY_WHEEL_DIR := $(BUILD)/python-wheel
# Debian's python3 reads /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages.
PY_SITE ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)/dist-packages)
# The suite itself runs with the plugin: a test of it that leaked would fail.
PY_TEST_ENV = REAPER_BUILD=$(abspath $(BUILD)) PYTHONPATH=$(abspath $(PY_DIR)) PYTHONDONTWRITEBYTECODE=1

.PHONY: check-python install-python uninstall-python
check-python: $(BUILD)/libreaper.so
	$(PY_TEST_ENV) $(PYTHON) -m pytest -q -p no:cacheprovider -p reaper.pytest_plugin --reaper $(PY_DIR)/tests

CHECK_TARGETS += check-python

INSTALL_PYTHON ?= yes
ifneq ($(INSTALL_PYTHON),no)
install: install-python
uninstall: uninstall-python
endif
install-python:
	@if ! $(PYTHON) -m pip --version >/dev/null 2>&1; then \
		echo "install-python: skipped ($(PYTHON) -m pip is not there; Debian: python3-pip python3-setuptools)"; \
	else set -e; umask 022; rm -rf $(PY_WHEEL_DIR); set -x; \
		REAPER_PY_LIBDIR=$(LIBDIR) $(PYTHON) -m pip wheel -q --no-build-isolation --no-deps --no-cache-dir \
			-w $(PY_WHEEL_DIR) $(PY_DIR); \
		install -d "$(DESTDIR)$(PY_SITE)"; \
		$(PYTHON) -m zipfile -e $(PY_WHEEL_DIR)/pytest_reaper-$(VERSION)-*.whl "$(DESTDIR)$(PY_SITE)"; \
	fi

# Removes what the installed wheel's RECORD lists.
uninstall-python:
	@set -e; for rec in "$(DESTDIR)$(PY_SITE)"/pytest_reaper-*.dist-info/RECORD; do \
		[ -f "$$rec" ] || continue; \
		sed 's/,[^,]*,[^,]*$$//' "$$rec" | while IFS= read -r f; do rm -f "$(DESTDIR)$(PY_SITE)/$$f"; done; \
		rm -rf "$(DESTDIR)$(PY_SITE)"/reaper/__pycache__; \
		rmdir "$(DESTDIR)$(PY_SITE)"/reaper "$${rec%/RECORD}" 2>/dev/null || true; \
	done
