#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make deb: the Debian packages, built with `dpkg-buildpackage -us -uc -b` from a copy of the
# checkout in OUT/reaper-VERSION. dpkg-buildpackage writes the .deb, .changes and .buildinfo
# files into the parent of the tree it builds: that is OUT, never the directory that holds the
# checkout (which may be anyone's, read-only, or the / of a 0700 mktemp -d); the tree and what
# dpkg-buildpackage writes beside it are in a directory of their own inside OUT, and only the
# packages, .changes and .buildinfo move to OUT: whatever else OUT holds is kept (this
# project's packages of an earlier build are replaced). The copy holds
# the files git tracks (changes not yet committed included) or, outside git, every file but
# OUT and the build trees. Usage: deb.sh OUT VERSION
set -euo pipefail
out=${1:?usage: deb.sh OUT VERSION}
version=${2:?usage: deb.sh OUT VERSION}
cd "$(dirname "$0")/.."
for tool in dpkg-buildpackage dh dh_python3; do
	command -v "$tool" >/dev/null || {
		echo "make deb: $tool is missing; Debian: apt-get install dpkg-dev debhelper dh-python" >&2
		exit 1
	}
done
dpkg-checkbuilddeps || { echo "make deb: install the build dependencies above (debian/control)" >&2; exit 1; }
changelog=$(dpkg-parsechangelog -S Version)
if [ "$changelog" != "$version" ]; then
	echo "make deb: debian/changelog is at $changelog, reaper/reaper.h at $version: add a changelog entry (dch -v $version)" >&2
	exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "$out/.deb-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/reaper-$version
mkdir "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
		case $PWD/$f in "$out"/*) continue ;; esac  # OUT inside the checkout: what it holds is not the source
		[ -f "$f" ] && printf '%s\0' "$f"  # a file deleted but not yet committed is left out
	done | tar --null -T - -cf - | tar -xf - -C "$src"
else
	here=$(pwd)
	tar -cf - --exclude=./.git --exclude="./${out#"$here"/}" --exclude=./build --exclude='./build-*' \
		--exclude=./debian/build --exclude=./harness/python/build . | tar -xf - -C "$src"
fi
# as a packager runs it: not with the settings of the make that called this (DEV=1 under check-deb)
(cd "$src" && env -u DEV -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b)
for pkg in $(sed -n 's/^Package: *//p' debian/control); do
	rm -f "$out/${pkg}_"*.deb "$out/${pkg}-dbgsym_"*.deb
done
rm -f "$out"/reaper_*.changes "$out"/reaper_*.buildinfo
built=$(cd "$work" && ls -- *.deb)
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
(cd "$out" && ls -l -- $built)
