#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Check suites under valgrind memcheck, then a few `reaper` command lines. Any memcheck
# error or definite leak, in a suite or in a reaper it runs, fails the run.
#
# Arguments: SUITE or SUITE:TCASE; none means every tests/check_*.c. Each suite runs in one
# process (CK_FORK=no, so a leak or an invalid access anywhere in it is seen) without the
# test cases tagged "pidfd": Debian 12's valgrind (3.19) has no pidfd_open or
# pidfd_send_signal, libreaper then signals only the caller's own children, and those cases
# kill processes that are not (or call the pidfd syscalls, or use PID namespaces). valgrind
# follows exec into the reaper command but not into the fixtures or system programs (plain
# programs that only sleep, fork and exit; tracing them would only slow the timing-bound
# tests). VG_JOBS suites run at once (default: the number of CPUs, at most 2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-vg}
make=${MAKE:-make}
jobs=${VG_JOBS:-$(n=$(nproc); echo $((n < 2 ? n : 2)))}
root=$(pwd)
t0=$SECONDS

[ $# -gt 0 ] || set -- $(for f in tests/check_*.c; do basename "$f" .c; done)
bins=() cases=()
for s in "$@"; do
	suite=${s%%:*} case=
	[ "$suite" = "$s" ] || case=${s#*:}
	[ -f "tests/$suite.c" ] || { echo "check-valgrind: no suite tests/$suite.c" >&2; exit 1; }
	bins+=("$build/tests/$suite")
	cases+=("$case")
done
# reaper linked dynamically: memcheck replaces malloc and free in a dynamically linked program only
$make --no-print-directory BUILD="$build" CFLAGS='-O1 -g' CLI_STATIC= all fixtures "${bins[@]}"

# check_hard_input execs a 4 MB environment, which needs a stack limit of 16 MB or more;
# valgrind does not pass the test's own setrlimit on to the kernel, so raise it here.
ulimit -S -s 65536 2>/dev/null || true

logs=$(mktemp -d /tmp/reaper-vg.XXXXXX)
trap 'rm -rf "$logs"' EXIT
chmod 0711 "$logs" # check_hard_priv's reapers run as nobody and log under it too

# valgrind's own messages go to a file per process under DIR, not into the stderr the
# tests read (a reaper's report must stay parseable): vg DIR PROGRAM [ARG...]
vg()
{
	local dir=$1
	shift
	mkdir -p -m 1777 "$dir"
	valgrind -q --vgdb=no --log-file="$dir/%p" --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=yes "$@"
}

# Print what valgrind said under DIR, without its five-line notice for each pidfd syscall it
# does not know (ENOSYS is what libreaper expects there). Fails when it reported an error.
vg_said()
{
	local f out bad=0
	for f in "$1"/*; do
		[ -s "$f" ] || continue
		out=$(awk '/^--[0-9]+-- WARNING: unhandled amd64-linux syscall: (434|424)$/ { skip = 4; next }
			   skip > 0 && /^--[0-9]+-- / { skip--; next }
			   { skip = 0; print }' "$f")
		[ -n "$out" ] || continue
		printf '%s\n' "$out"
		! grep -q '^==[0-9]*== ' <<<"$out" || bad=1
	done
	return $bad
}

# One suite, in the background; its output goes to $logs/N, its exit status to $logs/N.rc.
run_suite()
{
	local n=$1 b=$2 c=$3 t=$SECONDS rc=0
	(
		[ -z "$c" ] || export CK_RUN_CASE=$c
		export CK_FORK=no CK_EXCLUDE_TAGS=pidfd CK_DEFAULT_TIMEOUT=120 REAPER_BUILD="$root/$build"
		vg "$logs/$n.vg" --trace-children=yes \
			--trace-children-skip='*/fixtures/*,/bin/*,/usr/bin/*,/usr/sbin/*' "$b"
	) >"$logs/$n" 2>&1 || rc=$?
	vg_said "$logs/$n.vg" >>"$logs/$n" 2>&1 || rc=${rc/#0/99}
	echo "== valgrind $b${c:+ (tcase $c)}: exit $rc in $((SECONDS - t)) s" >>"$logs/$n"
	echo "$rc" >"$logs/$n.rc"
}

failed=0
for i in "${!bins[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	run_suite "$i" "${bins[$i]}" "${cases[$i]}" &
done
wait
for i in "${!bins[@]}"; do
	cat "$logs/$i"
	[ "$(cat "$logs/$i.rc" 2>/dev/null)" = 0 ] || failed=1
done

# ---- the reaper command itself ------------------------------------------------------------
reaper=$build/reaper
out=$logs/out err=$logs/err
ncli=0
# cli NAME WANT-EXIT ARG...: reaper ARG... under valgrind; its exit status in $rc.
cli()
{
	local name=$1 want=$2
	shift 2
	ncli=$((ncli + 1))
	rc=0
	vg "$logs/cli$ncli.vg" "$reaper" "$@" >"$out" 2>"$err" || rc=$?
	echo "== valgrind reaper $*: exit $rc"
	cat "$err"
	vg_said "$logs/cli$ncli.vg" || cli_fail "$name: memcheck reported errors"
	[ "$rc" = "$want" ] || cli_fail "$name: exit $rc, want $want"
}
cli_fail()
{
	echo "check-valgrind: reaper $*" >&2
	failed=1
}
# Our own background child carrying NAME=VALUE: its pid in $bg, once its environ shows it.
start_marked()
{
	env "$1" "${@:2}" &
	bg=$!
	for _ in $(seq 200); do
		! grep -qzx "$1" "/proc/$bg/environ" 2>/dev/null || return 0
		sleep 0.05
	done
	cli_fail "setup: $* did not start"
}

# A leftover that escaped into its own session: exit 23, the report names it, it is gone.
cli "run with a setsid leftover" 23 run --home "$logs/home" --timeout 1 -- sh -c 'setsid sleep 300 & exit 0'
leak=$(sed -n 's/^ *\([0-9][0-9]*\) LEAK (.*) sleep 300$/\1/p' "$err" | head -1)
if [ -z "$leak" ]; then
	cli_fail "run with a setsid leftover: the report names no 'sleep 300' leak"
elif [ "$(tr '\0' ' ' 2>/dev/null <"/proc/$leak/cmdline")" = "sleep 300 " ]; then
	cli_fail "run with a setsid leftover: sleep 300 ($leak) still runs"
fi

# A scan finds a process by its marker (the JSON report names its pid) and signals nothing.
mark="REAPER_VG_SCAN=$$-$RANDOM"
start_marked "$mark" sleep 300
cli "scan --env --json" 0 scan --env "$mark" --json
grep -q "\"pid\": *$bg[,}]" "$out" || cli_fail "scan --env --json: pid $bg not in: $(head -c 2000 "$out")"
[ "$(cut -d' ' -f3 "/proc/$bg/stat")" != T ] || cli_fail "scan --env --json stopped pid $bg"
kill "$bg" # our own child, not yet waited for: its pid cannot have changed hands
wait "$bg" 2>/dev/null || true

# A reap whose process exits by itself within the timeout: nothing signalled, exit 0 (the
# summary of a clean reap is printed with -v only).
mark="REAPER_VG_REAP=$$-$RANDOM"
start_marked "$mark" sleep 5
cli "reap of a process that exits in time" 0 reap -v --env "$mark" --timeout 60
grep -q ' 1 exited in time' "$err" || cli_fail "reap: its process did not show as exited in time"
wait "$bg" 2>/dev/null || true

# A COMMAND that does not exist: 127.
cli "run -- /nonexistent" 127 run -- /nonexistent

if [ "$failed" != 0 ]; then
	echo "check-valgrind: FAILED after $((SECONDS - t0)) s" >&2
	exit 1
fi
echo "check-valgrind: memcheck clean: ${#bins[@]} suites, $ncli reaper command lines, $((SECONDS - t0)) s"
