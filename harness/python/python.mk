# SPDX-License-Identifier: MIT
# The Python package harness/python/reaper (ctypes over libreaper) and its pytest plugin:
# tests (check-python, part of make check) and installation for Debian's python3.
PY_DIR   := harness/python
PY_FILES := $(filter-out $(PY_DIR)/reaper/_installed.py,$(sort $(wildcard $(PY_DIR)/reaper/*.py)))
PY_VERSION = $(VERSION)
# Debian's python3 reads /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages.
PY_SITE ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages)
# The suite itself runs with the plugin: a test of it that leaked would fail.
PY_TEST_ENV = REAPER_BUILD=$(abspath $(BUILD)) PYTHONPATH=$(abspath $(PY_DIR)) PYTHONDONTWRITEBYTECODE=1

.PHONY: check-python install-python
check-python: $(BUILD)/libreaper.so
	$(PY_TEST_ENV) $(PYTHON) -m pytest -q -p no:cacheprovider -p reaper.pytest_plugin $(PY_DIR)/tests

CHECK_TARGETS += check-python

install: install-python
install-python:
	install -d $(DESTDIR)$(PY_SITE)/reaper $(DESTDIR)$(PY_SITE)/reaper-$(PY_VERSION).dist-info
	install -m 0644 $(PY_FILES) $(DESTDIR)$(PY_SITE)/reaper/
	printf 'LIBDIR = "%s"\n' '$(LIBDIR)' > $(DESTDIR)$(PY_SITE)/reaper/_installed.py
	cd $(DESTDIR)$(PY_SITE)/reaper-$(PY_VERSION).dist-info && \
	printf 'Metadata-Version: 2.1\nName: reaper\nVersion: %s\nSummary: %s\n' '$(PY_VERSION)' \
		'find, wait for, kill and report the processes a test left behind' > METADATA && \
	printf '[pytest11]\nreaper = reaper.pytest_plugin\n' > entry_points.txt && \
	printf 'reaper\n' > top_level.txt && printf 'make\n' > INSTALLER && \
	{ for f in ../reaper/*.py METADATA entry_points.txt top_level.txt INSTALLER; do \
		echo "$${f#../},,"; done; echo 'reaper-$(PY_VERSION).dist-info/RECORD,,'; } > RECORD
