# SPDX-License-Identifier: MIT
# The Debian packages (debian/): `make deb` builds them into DEB_OUT with dpkg-buildpackage
# (ci/deb.sh says how it keeps the checkout's parent directory out of it); `make check-deb`
# builds them, runs lintian, unpacks them into a throwaway root and runs the demo suite, the
# pytest plugin and the Check helper from the unpacked files (tests/deb). .ci/run runs
# check-deb once; it is not part of make check, which CI runs twice.
DEB_OUT ?= $(BUILD)/deb

.PHONY: deb check-deb
deb:
	bash ci/deb.sh "$(DEB_OUT)" "$(VERSION)"

# tests/deb runs `make deb` itself (into DEB_OUT, beside files it checks the build keeps)
check-deb: deps $(BUILD)/fixtures/daemon
	REAPER_BUILD=$(abspath $(BUILD)) REAPER_DEB_OUT="$(DEB_OUT)" $(PYTHON) -m pytest -q -p no:cacheprovider tests/deb
