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
# The suite itself runs with the plugin: a test of it that leaked would fail. It runs on
# Debian's python3, or on the claimed version PY_VERSION names (PY_VERSION=3.13: the
# interpreter check-pythons finds for it, with Debian's pytest on its path).
PY_VERSION ?=
PYTHONS_SH := bash $(PY_DIR)/pythons.sh
DEBIAN_SITE := /usr/lib/python3/dist-packages
# Byte code goes to the build tree, nothing into the sources or Debian's dist-packages, and is
# kept: another Python than Debian's would compile Debian's pytest again at every start (about
# 0.3 s for each of the suite's inner pytest runs).
PY_CACHE_ENV = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(BUILD))/pycache
PY_TEST_ENV = REAPER_BUILD=$(abspath $(BUILD)) PYTHONPATH=$(abspath $(PY_DIR))$(if $(PY_VERSION),:$(DEBIAN_SITE)) \
	$(PY_CACHE_ENV)
# Debian's pytest 7 rewrites asserts with ast.Str, which Python 3.12 on deprecates.
PY_TEST_ARGS = -q -p no:cacheprovider -p reaper.pytest_plugin --reaper -W ignore::DeprecationWarning:_pytest.assertion.rewrite

.PHONY: check-python check-pythons install-python uninstall-python
check-python: $(BUILD)/libreaper.so
	@py=$(PYTHON); $(if $(PY_VERSION),py=$$($(PYTHONS_SH) find $(PY_VERSION)) || \
		{ echo "check-python: no Python $(PY_VERSION) here (PY_VERSION; pyenv's versions, python$(PY_VERSION) on PATH)" >&2; exit 1; };) \
	echo "$(PY_TEST_ENV) $$py -m pytest $(PY_TEST_ARGS) $(PY_DIR)/tests"; \
	$(PY_TEST_ENV) "$$py" -m pytest $(PY_TEST_ARGS) $(PY_DIR)/tests

CHECK_TARGETS += check-python

# The suite on the other Pythons the package claims (PY_VERSIONS: all, pyproject.toml's
# classifiers, or a list; the version check-python runs is left to it): PY_FULL's run it whole,
# the others the core set PY_CORE: the package's ctypes binding and API, the plugin's checks and
# reports, and each interception of a spawn through Python's private internals (subprocess's
# fork_exec, multiprocessing, concurrent.futures' work items, the frames and the call a spawn
# site is named by), and a clean session's exit status (each Python finalizes what the plugin
# keeps for the interpreter's life its own way). pythons.sh says how an interpreter is found
# and what a missing one means.
PY_VERSIONS ?= all
PY_FULL ?=
PY_CORE ?= test_layout.py test_site.py test_compat.py test_api.py test_kin.py test_plugin.py test_plugin_patches.py \
	test_plugin_guest.py::test_a_clean_session_ends_python_with_status_0 \
	test_plugin_guest.py::test_popen_and_pty_children_keep_their_exit_status_for_their_owner \
	test_plugin_guest.py::test_fork_without_exec_and_multiprocessing_leaks_are_the_tests \
	test_plugin_guest.py::test_what_a_test_submits_to_an_older_thread_pool_starts_is_the_tests \
	test_plugin_site.py::test_a_leak_through_a_helper_module_names_both_frames_and_the_call \
	test_plugin_site.py::test_a_child_forked_without_exec_and_what_it_execs_are_named
check-pythons: $(BUILD)/libreaper.so
	@mkdir -p $(NOT_RUN_DIR)
	@$(PY_CACHE_ENV) REAPER_BUILD=$(abspath $(BUILD)) TESTS_NOT_RUN_FILE=$(abspath $(NOT_RUN_DIR))/check-pythons.txt DEBIAN_SITE=$(DEBIAN_SITE) \
		PY_VERSIONS="$(PY_VERSIONS)" PY_FULL="$(PY_FULL)" PY_CORE="$(PY_CORE)" \
		PY_DONE="$(or $(PY_VERSION),$$($(PYTHONS_SH) version $(PYTHON)))" $(PYTHONS_SH) run

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
		rm -rf "$(DESTDIR)$(PY_SITE)"/reaper/__pycache__ "$(DESTDIR)$(PY_SITE)"/reaper/pytest/__pycache__; \
		rmdir "$(DESTDIR)$(PY_SITE)"/reaper/pytest "$(DESTDIR)$(PY_SITE)"/reaper "$${rec%/RECORD}" 2>/dev/null || true; \
	done
