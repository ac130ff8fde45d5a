#!/usr/bin/env bash
# The Check suites (SUITE or SUITE:TCASE) named as arguments under valgrind memcheck, in one
# process each (CK_FORK=no, so a leak or an invalid access anywhere in the suite is
# seen), following exec into the reaper command but not into the fixtures (plain programs
# that only sleep, fork and exit; tracing them would only slow the timing-bound tests).
# Any memcheck error or definite leak fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-vg}
make=${MAKE:-make}
$make --no-print-directory BUILD="$build" CFLAGS='-O1 -g' all fixtures
bins=() cases=()
for s in "$@"; do
	suite=${s%%:*} case=
	[ "$suite" = "$s" ] || case=${s#*:}
	[ -f "tests/$suite.c" ] || { echo "check-valgrind: no suite tests/$suite.c" >&2; exit 1; }
	bins+=("$build/tests/$suite")
	cases+=("$case")
done
$make --no-print-directory BUILD="$build" CFLAGS='-O1 -g' "${bins[@]}"
for i in "${!bins[@]}"; do
	b=${bins[$i]} c=${cases[$i]}
	echo "== valgrind $b ${c:+(tcase $c)}"
	env ${c:+CK_RUN_CASE=$c} CK_FORK=no CK_DEFAULT_TIMEOUT=120 REAPER_BUILD="$(pwd)/$build" \
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite --track-origins=yes \
		--trace-children=yes --trace-children-skip='*/fixtures/*,/bin/*,/usr/bin/*,/usr/sbin/*' \
		"$b"
done
echo "check-valgrind: memcheck clean"
