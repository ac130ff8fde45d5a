#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python suite (harness/python/tests) on every Python the package claims: the versions
# pyproject.toml's classifiers name. An interpreter is known by what it says it is
# (sys.version_info), never by its directory's name; the candidates are pyenv's versions
# (PYENV_ROOT, `pyenv root`, ~/.pyenv, /root/.pyenv) and pythonX.Y on PATH, the newest patch
# release of a version first. Each runs Debian's pure-Python pytest (DEBIAN_SITE on its path:
# 3.9 and 3.10 also need python3-exceptiongroup and python3-tomli) and loads the libreaper of
# the build (REAPER_BUILD).
#
#   pythons.sh claimed      prints the claimed versions, oldest first
#   pythons.sh find X.Y     prints the interpreter of X.Y (status 1 and nothing: none here)
#   pythons.sh version PY   prints X.Y, the version interpreter PY says it is
#   pythons.sh run          runs the suite on each of PY_VERSIONS ("all": the claimed ones) but
#                           PY_DONE's: PY_FULL's the whole suite, the others the core set PY_CORE
#                           (files or test ids below harness/python/tests)
#
# A claimed version with no interpreter, or one that cannot import pytest, fails the run under
# CI=true (the CI machine image has them all); elsewhere it is said not run, in the run's last
# line and as a row of TESTS_NOT_RUN_FILE (make check's closing line counts it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
DEBIAN_SITE=${DEBIAN_SITE:-/usr/lib/python3/dist-packages}

claimed() {
	sed -n 's/^ *"Programming Language :: Python :: \(3\.[0-9]*\)",*$/\1/p' "$here/pyproject.toml"
}

version_of() {
	"$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

candidates() {
	local root seen=" "
	for root in "${PYENV_ROOT:-}" "$(pyenv root 2>/dev/null)" "$HOME/.pyenv" /root/.pyenv; do
		[ -n "$root" ] && [ -d "$root/versions" ] || continue
		case $seen in *" $root "*) continue ;; esac
		seen="$seen$root "
		# another user's pyenv (/root/.pyenv for a plain user) lists nothing
		ls -d "$root"/versions/*/bin/python 2>/dev/null | sort -rV
	done
	command -v "python$1" 2>/dev/null || true
}

find_python() {
	local py
	while IFS= read -r py; do
		[ -x "$py" ] && [ "$(version_of "$py")" = "$1" ] && { echo "$py"; return 0; }
	done < <(candidates "$1")
	return 1
}

# missing VERSION NEED WHY: fails under CI, else a not-run row
missing() {
	if [ "${CI:-}" = true ]; then
		echo "check-pythons: Python $1: $3 (under CI=true every claimed version must run)" >&2
		failed="$failed $1"
	else
		echo "check-pythons: Python $1 not run: $3"
		not_run="$not_run $1"
		[ -z "${TESTS_NOT_RUN_FILE:-}" ] || printf 'check-pythons\tpython%s\t%s\t%s\n' "$1" "$2" "$3" >>"$TESTS_NOT_RUN_FILE"
	fi
}

run() {
	local v py what t0 paths failed="" not_run="" ran=""
	[ ! -f "${TESTS_NOT_RUN_FILE:-}" ] || sed -i '/^check-pythons\t/d' "$TESTS_NOT_RUN_FILE"
	local versions=${PY_VERSIONS:-}
	[ "$versions" != all ] || versions=$(claimed)
	for v in $versions; do
		case " ${PY_DONE:-} " in *" $v "*) continue ;; esac
		if ! py=$(find_python "$v"); then
			missing "$v" "Python $v" "no interpreter (pyenv's versions, python$v on PATH)"
			continue
		fi
		if ! PYTHONPATH="$DEBIAN_SITE" "$py" -c 'import pytest' 2>/dev/null; then
			missing "$v" "pytest for Python $v" "$py cannot import pytest from $DEBIAN_SITE"
			continue
		fi
		case " ${PY_FULL:-} " in
		*" $v "*) paths=("$here/tests") what="the whole suite" ;;
		*) read -ra paths <<<"${PY_CORE:?}"; paths=("${paths[@]/#/$here/tests/}") what="the core set" ;;
		esac
		echo "== Python $v: $py ($what)"
		t0=$SECONDS
		if REAPER_BUILD="${REAPER_BUILD:?}" PYTHONPATH="$here:$DEBIAN_SITE" \
			"$py" -m pytest -q -p no:cacheprovider -p reaper.pytest_plugin --reaper \
			-W 'ignore::DeprecationWarning:_pytest.assertion.rewrite' "${paths[@]}"; then
			ran="$ran $v"
		else
			failed="$failed $v"
		fi
		echo "== Python $v: $((SECONDS - t0)) s"
	done
	if [ -n "$failed" ]; then
		echo "check-pythons: failed on Python$failed" >&2
		return 1
	fi
	if [ -z "$ran$not_run" ]; then
		echo "check-pythons: no other Python asked for (PY_VERSIONS=${PY_VERSIONS:-})"
	else
		echo "check-pythons: passed on Python${ran:- (none)}${not_run:+; not run on Python$not_run}"
	fi
}

case ${1:-} in
claimed) claimed ;;
find) find_python "${2:?a version: 3.9}" ;;
version) version_of "${2:?an interpreter}" ;;
run) run ;;
*) echo "usage: $0 claimed | find X.Y | version PYTHON | run" >&2; exit 64 ;;
esac
