#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each libFuzzer target given for an equal share of FUZZ_SECONDS_TOTAL, seeded from its
# corpus in fuzz/corpus/NAME (read only), and prints the executions each one made. A crash,
# a leak or a sanitizer report fails the run and leaves the input in $FUZZ_BUILD/artifacts.
set -euo pipefail
total=${FUZZ_SECONDS_TOTAL:-40}
out=${FUZZ_BUILD:?}
[ $# -gt 0 ] || { echo "check-fuzz: no fuzz targets"; exit 0; }
per=$(( total / $# )); [ "$per" -ge 1 ] || per=1
mkdir -p "$out/artifacts"
summary=""
for bin in "$@"; do
	name=$(basename "$bin"); name=${name#fuzz_}
	seed=fuzz/corpus/$name
	scratch=$(mktemp -d "$out/corpus-$name.XXXXXX")
	mkdir -p "$seed"
	log=$out/$name.log
	echo "== fuzz $name: ${per}s, seed corpus $seed ($(ls "$seed" | wc -l) inputs)"
	if ! "$bin" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$name-" "$scratch" "$seed" >"$log" 2>&1; then
		tail -n 60 "$log"
		echo "check-fuzz: $name FAILED (log $log, artifacts in $out/artifacts)"
		rm -rf "$scratch"
		exit 1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
	summary="$summary$(printf '%-10s %10s executions in %ss (%s)' "$name" "${runs:-?}" "$per" "${cov:-cov: ?}")\n"
	rm -rf "$scratch"
done
printf "check-fuzz: all targets clean\n$summary"
