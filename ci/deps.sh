#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages reaper needs when they are missing (as root), or names the
# exact apt-get line and fails (as anyone else).  Extra packages: REAPER_DEPS_EXTRA.
set -eu
# The packaging suite (tests/pkg) builds the Python wheel in a venv (pip, venv, setuptools,
# wheel), validates JUnit with xmllint, reads action.yml (yaml) and resolves man page links;
# it runs Debian's pytest on older Pythons too (3.9 and 3.10 need exceptiongroup and tomli).
# musl-tools: the command links statically against musl where it can (musl/musl.mk).
# make deb / check-deb build the Debian packages (dpkg-dev, debhelper, dh-python) and lint them.
pkgs="gcc make binutils pkg-config musl-tools check libproc2-dev python3 python3-pytest clang libclang-rt-14-dev valgrind util-linux procps
	python3-pip python3-venv python3-setuptools python3-wheel python3-yaml libxml2-utils man-db
	python3-exceptiongroup python3-tomli dpkg-dev debhelper dh-python lintian ${REAPER_DEPS_EXTRA:-}"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "ci/deps.sh: installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || apt-get update
	apt-get install -y -qq --no-install-recommends $missing >/dev/null || apt-get install -y --no-install-recommends $missing
else
	echo "reaper needs these Debian packages; run as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi
