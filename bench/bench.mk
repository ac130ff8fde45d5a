# SPDX-License-Identifier: MIT
# Benchmarks: `make bench` builds the drivers, runs every scenario beside its anchors, prints the
# table, writes bench/results.json (and bench/growth.png when gnuplot exists) and rewrites the
# results block of docs/BENCHMARKS.md. BENCH_QUICK=1: fewer repetitions and sizes, for iterating
# (the page is left alone). Not part of make check.
BENCH_DIR     := $(BUILD)/bench
BENCH_LIBPROC := $(shell pkg-config --libs libproc2 2>/dev/null || echo -lproc2)
BENCH_COMMON  := bench/benchlib.c bench/benchlib.h
BENCH_BINS    := $(addprefix $(BENCH_DIR)/,bench-spawn bench-scan bench-reap bench-wrap bench-listing)

$(BENCH_DIR)/bench-spawn: bench/spawn.c $(BENCH_COMMON) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< bench/benchlib.c

$(BENCH_DIR)/bench-scan: bench/scan.c $(BENCH_COMMON) $(INTERNAL_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< bench/benchlib.c $(INTERNAL_LIB) $(BENCH_LIBPROC) $(LDLIBS)

$(BENCH_DIR)/bench-reap: bench/reap.c $(BENCH_COMMON) $(BUILD)/libreaper.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< bench/benchlib.c $(BUILD)/libreaper.a $(LDLIBS)

# The floor of `reaper scan`'s listing is linked as the command is (Makefile): a static PIE
# against musl where the command is one, else against glibc where it can be, else dynamically;
# a start costs a listing what it costs the command, so the two compare like for like.
LISTING_MUSL_OBJ := $(if $(MUSL_CC),$(addprefix $(BUILD)/musl/,bench/listing.o bench/benchlib.o musl/strerror.o))
$(LISTING_MUSL_OBJ): $(BENCH_COMMON)
$(BENCH_DIR)/bench-listing: bench/listing.c $(BENCH_COMMON) $(LISTING_MUSL_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(LISTING_MUSL_OBJ),$(call musl_link,$(LISTING_MUSL_OBJ)) 2>/dev/null || )\
	$(if $(CLI_STATIC),$(CC) $(ALL_CFLAGS) $(CLI_STATIC) -o $@ $< bench/benchlib.c $(LDFLAGS) $(LDLIBS) 2>/dev/null || )\
	$(CC) $(ALL_CFLAGS) -o $@ $< bench/benchlib.c $(LDFLAGS) $(LDLIBS)

$(BENCH_DIR)/bench-wrap: bench/wrap.c $(BENCH_COMMON) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< bench/benchlib.c $(LDLIBS)

bench-build: all $(BENCH_BINS)
bench: bench-build
	$(PYTHON) bench/bench.py --build $(BUILD) $(if $(BENCH_QUICK),--quick,--doc docs/BENCHMARKS.md)
.PHONY: bench-build
