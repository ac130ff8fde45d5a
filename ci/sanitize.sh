#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ASan + UBSan build of libreaper, the reaper command, the fixtures and the Check suites
# (clang), then every Check suite and the Check helper's test run under the sanitized
# `reaper run` itself. Any ASan, UBSan or LeakSanitizer report ends the process that made it
# with an error, which fails the test (or the run) it happened in.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-asan}
make=${MAKE:-make}
flags='-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1'
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:exitcode=86:detect_stack_use_after_return=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87
export LSAN_OPTIONS=exitcode=88
suites=$(ls tests/check_*.c | sed "s|^tests/\(.*\)\.c$|$build/tests/\1|")
$make --no-print-directory -j"$(nproc)" BUILD="$build" CC=clang CFLAGS='-g' EXTRA_CFLAGS="$flags" all fixtures $suites
"$build/reaper" run --timeout 10 --grace 2 -- \
	$make --no-print-directory BUILD="$build" CC=clang CFLAGS='-g' EXTRA_CFLAGS="$flags" check-c check-checkhelper
echo "check-sanitize: ASan + UBSan clean"
