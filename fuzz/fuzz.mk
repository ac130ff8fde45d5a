# SPDX-License-Identifier: MIT
# libFuzzer targets: every fuzz/fuzz_NAME.c is one target, built with clang's fuzzer, ASan
# and UBSan against the library and the command's sources (all but harness/main.c, through
# an archive so each target links only the objects it calls). `make check-fuzz` runs each
# for FUZZ_SECONDS_TOTAL / (number of targets) seconds, seeded from fuzz/corpus/NAME/ (kept
# in the tree, read only: new inputs go to a scratch directory), and prints the executions.
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= $(BUILD)/fuzz
FUZZ_SECONDS_TOTAL ?= 40
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=gnu11 $(WARN) -I. -g -O1 $(FUZZ_SAN)
FUZZ_SRC     := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_DEP_SRC := $(LIB_SRC) $(filter-out harness/main.c,$(CLI_SRC))
FUZZ_DEP_OBJ := $(FUZZ_DEP_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)

$(FUZZ_BUILD)/obj/%.o: %.c $(wildcard reaper/*.h harness/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/libfuzzdeps.a: $(FUZZ_DEP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_BUILD)/libfuzzdeps.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libfuzzdeps.a -lm -lpthread

.PHONY: fuzz check-fuzz
fuzz: $(FUZZ_BIN)

check-fuzz: $(FUZZ_BIN)
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS_TOTAL=$(FUZZ_SECONDS_TOTAL) bash fuzz/run.sh $(FUZZ_BIN)
