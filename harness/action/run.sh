#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The step of action.yml that runs the command under `reaper run` and writes the step's
# outputs. Its inputs come as the environment a composite step gives it:
#   REAPER_BIN     the reaper command built by the step before
#   INPUT_COMMAND  a shell command line, run as a `run:` step with `shell: bash` runs its
#                  script (bash -e -o pipefail: the first line that fails ends it)
#   INPUT_ARGV     or the command itself, one argument a line, no shell (spaces, quotes, $ and
#                  ; stay in their argument); exactly one of the two is given
#   INPUT_ARGS     more `reaper run` options, one argument a line (`--allow` and `sleep 30*`
#                  on two lines, or `--allow=sleep 30*` on one); a --report or --junit there
#                  replaces INPUT_REPORT or INPUT_JUNIT
#   INPUT_HOME, INPUT_TIMEOUT, INPUT_GRACE, INPUT_JUNIT, INPUT_REPORT  as action.yml says
#   GITHUB_OUTPUT  the file the outputs are appended to; RUNNER_TEMP  a scratch directory
# In the line inputs an empty line is skipped, and a carriage return ending a line is dropped.
# Outputs: leaks (leaked processes, from the JSON report; empty when reaper wrote none, as on
# a usage error), report and junit (absolute paths of the files this run wrote, empty when not
# asked for or not written: a report an earlier run left is not this run's), exit-code (reaper's). The step's own status is reaper's.
set -u

# lines NAME TEXT: the array NAME, one element per non-empty line of TEXT
lines() {
	local -n into=$1
	local line
	into=()
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%$'\r'}
		[ -z "$line" ] || into+=("$line")
	done <<< "$2"
}

# output NAME VALUE: one output, in the delimited form (a value may hold any byte but NUL)
output() {
	local delim
	delim="reaper_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	printf '%s<<%s\n%s\n%s\n' "$1" "$delim" "$2" "$delim" >> "${GITHUB_OUTPUT:-/dev/null}"
}

# ident FILE: the file's device and inode (empty when there is none). reaper replaces a report
# by renaming a new file over it, so an unchanged inode is a file this run did not write.
ident() {
	stat -c '%d:%i' -- "$1" 2>/dev/null
}

# written FILE IDENT_BEFORE: FILE was written by this run
written() {
	[ -n "$1" ] && [ -f "$1" ] && [ "$(ident "$1")" != "$2" ]
}

absolute() {
	case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac
}

usage_error() {
	echo "::error title=reaper action::$*"
	echo "reaper action: $*" >&2
	output exit-code 64
	exit 64
}

lines argv "${INPUT_ARGV:-}"
lines given "${INPUT_ARGS:-}"
# --report and --junit among the args stand for the inputs of those names (reaper takes the
# last one given): the outputs then name the files reaper wrote, and the count is read there
extra=()
for ((i = 0; i < ${#given[@]}; i++)); do
	case ${given[i]} in
	--) extra+=("${given[@]:i}"); break ;;
	--report=*) INPUT_REPORT=${given[i]#--report=} ;;
	--junit=*) INPUT_JUNIT=${given[i]#--junit=} ;;
	--report | --junit)
		[ $((i + 1)) -lt ${#given[@]} ] || usage_error "args: ${given[i]} needs a file on the next line"
		if [ "${given[i]}" = --report ]; then INPUT_REPORT=${given[i + 1]}; else INPUT_JUNIT=${given[i + 1]}; fi
		i=$((i + 1)) ;;
	*) extra+=("${given[i]}") ;;
	esac
done
command=${INPUT_COMMAND:-}
if [ -n "$command" ] && [ "${#argv[@]}" -gt 0 ]; then
	usage_error "give either command (a shell command line) or argv (one argument a line), not both"
elif [ -n "$command" ]; then
	argv=(bash --noprofile --norc -eo pipefail -c "$command")
elif [ "${#argv[@]}" -eq 0 ]; then
	usage_error "no command: give command (a shell command line) or argv (one argument a line)"
fi

args=(--timeout "${INPUT_TIMEOUT:-10}" --grace "${INPUT_GRACE:-5}")
[ -z "${INPUT_HOME:-}" ] || args+=(--home "$INPUT_HOME")
junit=${INPUT_JUNIT:-}
[ -z "$junit" ] || args+=(--junit "$junit")
# the count needs the JSON report: one in the scratch directory when none was asked for
report=${INPUT_REPORT:-}
scratch=
if [ -n "$report" ]; then
	json=$report
else
	scratch=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/reaper-action.XXXXXX") || exit 1
	json=$scratch/report.json
fi
args+=(--report "$json")
json_was=$(ident "$json")
junit_was=$([ -z "$junit" ] || ident "$junit")

"$REAPER_BIN" run "${args[@]}" "${extra[@]}" -- "${argv[@]}"
status=$?

leaks=
if written "$json" "$json_was"; then
	# reaper writes the summary object on one line: "summary": {"processes": N, "leaks": N, ...}
	leaks=$(sed -n 's/^ *"summary": {.*"leaks": \([0-9][0-9]*\)[,}].*/\1/p' "$json")
fi
output leaks "$leaks"
output report "$([ -n "$report" ] && written "$report" "$json_was" && absolute "$report")"
output junit "$(written "$junit" "$junit_was" && absolute "$junit")"
output exit-code "$status"
[ -z "$scratch" ] || rm -rf "$scratch"
exit "$status"
