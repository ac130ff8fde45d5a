# SPDX-License-Identifier: MIT
# reaper: build, check, install, demo, bench.  See README.md.
# Parts add their own rules in */*.mk (tests/tests.mk, bench/bench.mk, ...).
#
# `make` and `make install` need a C compiler and libc only. The test, demo, bench and fuzz
# targets need more (Check, pytest, valgrind, clang, ...): `make deps` installs the missing
# Debian packages as root (ci/deps.sh), and `make check` / `make demo` run it first.
# Warnings are errors in development builds: DEV=1, and always under check, demo, bench and fuzz.
BUILD   ?= build
CC      ?= cc
OBJCOPY ?= objcopy
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
# A distribution's multiarch directory goes here: LIBDIR=/usr/lib/x86_64-linux-gnu (debian/rules).
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR ?=
CFLAGS  ?= -O2 -g
PYTHON  ?= /usr/bin/python3
# The version lives in reaper/reaper.h only; everything else (pkg-config, Python) reads it there.
VERSION := $(shell sed -n 's/^\#define REAPER_VERSION "\(.*\)"/\1/p' reaper/reaper.h)

ifneq ($(filter check check-% demo bench bench-% fuzz soak-%,$(MAKECMDGOALS)),)
DEV ?= 1
endif
export DEV
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter $(if $(filter 1,$(DEV)),-Werror)
# CPPFLAGS is a packager's (dpkg-buildflags gives -D_FORTIFY_SOURCE=2 there).
ALL_CFLAGS := -std=gnu11 $(WARN) -fPIC -I. $(CPPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  += -lpthread

LIB_SRC := $(sort $(wildcard reaper/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC := $(sort $(wildcard harness/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
DEPS_STAMP := $(BUILD)/.deps-ok
# The library's objects hide everything but what reaper.h marks REAPER_EXPORT. The in-tree
# programs (the command, tests, bench, fuzz) use its internals too (pidref, procfs, ...), so
# they link this archive of the raw objects on purpose; libreaper.a and libreaper.so, the
# installed ones, offer the public API only.
INTERNAL_LIB := $(BUILD)/libreaper-internal.a
$(LIB_OBJ): ALL_CFLAGS += -fvisibility=hidden

# Targets that make check runs, in order; *.mk files append to it.
CHECK_TARGETS :=

.PHONY: all deps check check-suites demo install uninstall clean bench
all: $(BUILD)/reaper $(BUILD)/libreaper.so $(BUILD)/libreaper.a

# Missing Debian packages are installed when root, otherwise named (see ci/deps.sh).
$(DEPS_STAMP): ci/deps.sh
	@mkdir -p $(BUILD)
	@bash ci/deps.sh
	@touch $@
deps: $(DEPS_STAMP)

$(BUILD)/obj/%.o: %.c $(wildcard reaper/*.h harness/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(INTERNAL_LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# One relocatable object whose hidden symbols are made local: a static link against
# libreaper.a sees the same API as the shared library.
$(BUILD)/libreaper.a: $(LIB_OBJ)
	@rm -f $@ $(BUILD)/libreaper-public.o
	$(CC) -r -nostdlib -o $(BUILD)/libreaper-public.o $^
	$(OBJCOPY) --localize-hidden $(BUILD)/libreaper-public.o
	ar rcs $@ $(BUILD)/libreaper-public.o

$(BUILD)/libreaper.so: $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libreaper.so.0 -o $@ $^ $(LDFLAGS) $(LDLIBS)

# The command is linked statically (libc included) where it can be: it starts in front of every
# suite it wraps, and a static start skips the dynamic loader and copies fewer mappings at each
# fork. CLI_STATIC= (empty) links it dynamically, as sanitizer builds do (they cannot link
# statically); so does a toolchain without a static libc, or a static link that warns (a libc
# function that needs the dynamic loader): the static link is tried first, then the dynamic one.
# The library dlopens nothing (a static program could not): `reaper run -- /bin/true` costs
# 0.3 ms less per run static than dynamic here (make bench, "wrapper overhead").
# Statically, against musl where musl-gcc and the kernel's headers are installed (musl/musl.mk;
# MUSL_CC= for glibc):
# glibc's static start asks the CPU what it is (cpuid, some seventy times), which traps to the
# hypervisor in a virtual machine, 0.3 ms a run there; musl's asks nothing.
CLI_STATIC ?= $(if $(findstring -fsanitize,$(CFLAGS) $(EXTRA_CFLAGS)),,-static-pie -Wl,--fatal-warnings)
MUSL_CC ?= $(if $(CLI_STATIC),$(if $(wildcard /usr/include/linux/stat.h),$(shell command -v musl-gcc 2>/dev/null)))
MUSL_OBJ := $(if $(MUSL_CC),$(LIB_SRC:%.c=$(BUILD)/musl/%.o) $(CLI_SRC:%.c=$(BUILD)/musl/%.o) $(BUILD)/musl/musl/strerror.o)
CLI_LINK = $(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJ) $(INTERNAL_LIB) $(LDFLAGS) $(LDLIBS)
$(BUILD)/reaper: $(CLI_OBJ) $(INTERNAL_LIB) $(MUSL_OBJ)
	$(if $(CLI_STATIC),$(if $(MUSL_CC),$(MUSL_LINK) 2>/dev/null || \
		{ echo "note: no static link of $@ against musl here: linking it against glibc"; $(CLI_LINK) $(CLI_STATIC) 2>/dev/null; } || \
		,$(CLI_LINK) $(CLI_STATIC) 2>/dev/null || )\
		{ echo "note: no static link of $@ here ($(CLI_STATIC)): linking it dynamically"; \
		$(CLI_LINK); },$(CLI_LINK))

include $(sort $(wildcard */*.mk tests/*/*.mk harness/*/*.mk))
CHECK_TARGETS += check-pythons

# The suites run under reaper itself: whatever a test leaves behind fails make check.
# CHECK_SKIP: suites (of CHECK_TARGETS) left out, e.g. CHECK_SKIP=check-pkg.
# They run in two lanes side by side, each lane's suites one after the other: the Python lane
# (every suite that builds or installs the Python package, so that no two such builds share
# harness/python's build tree at once) and the rest. Each suite says when it starts; the Python
# lane's output is kept and printed when the lane ends (or is stopped), the other lane's as it
# goes. CHECK_JOBS=1 runs the lanes one after the other, every suite printing as it goes. What
# more than one suite runs (the fixtures, the Check suites' binaries) is built before the
# lanes start. A failing suite ends its lane; the other lane goes on to its end.
CHECK_SKIP ?=
CHECK_JOBS ?= 2
CHECK_LANE_PYTHON := check-python check-pythons check-pkg
CHECK_RUN := $(filter-out $(CHECK_SKIP),$(CHECK_TARGETS))
LANE_check-lane-python := $(filter $(CHECK_LANE_PYTHON),$(CHECK_RUN))
LANE_check-lane-rest := $(filter-out $(CHECK_LANE_PYTHON),$(CHECK_RUN))
check: deps
	@$(MAKE) --no-print-directory -j$(or $(CHECK_JOBS),1) all
	@rm -rf $(NOT_RUN_DIR)
	$(BUILD)/reaper run --timeout 10 --grace 2 -- $(MAKE) --no-print-directory -j$(or $(CHECK_JOBS),1) -k check-suites
check-suites: check-lane-python check-lane-rest
	@$(call not_run_summary,make check: all suites passed,$(NOT_RUN_DIR)/*.txt)
check-prereqs: all fixtures \
	$(if $(filter check-c check-unreachable-build check-pkg,$(CHECK_RUN)),$(TEST_BIN)) \
	$(if $(filter check-checkhelper,$(CHECK_RUN)),$(CHECKH_TEST))
ifneq ($(or $(CHECK_JOBS),1),1)
check-lane-python: KEEP_OUTPUT := 1
endif
check-lane-python check-lane-rest: check-prereqs
	@set -e; mkdir -p $(BUILD)/tests; log=$$(mktemp $(BUILD)/tests/$@.XXXXXX); rc=0; t=; \
	show() { [ ! -s "$$log" ] || { echo "== make check: the lane $@ ($(LANE_$@))"; cat "$$log"; }; rm -f "$$log"; }; \
	trap show EXIT; \
	for t in $(LANE_$@); do \
		echo "== make check: $$t starts (the lane $@)"; \
		$(MAKE) --no-print-directory $$t $(if $(KEEP_OUTPUT),>>"$$log" 2>&1) || rc=$$?; \
		[ "$$rc" = 0 ] || break; \
	done; \
	show; [ "$$rc" = 0 ] || echo "== make check: $$t failed in the lane $@"; exit "$$rc"
.PHONY: check-prereqs check-lane-python check-lane-rest

demo: deps
	@$(MAKE) --no-print-directory all $(BUILD)/fixtures/daemon
	@bash fixtures/demo/run-demo.sh $(BUILD)/reaper

# The public functions, from the header (each gets a man page link to libreaper(3)).
PUBLIC_FUNCS = sed -n 's/^REAPER_EXPORT [^(]*[ *]\(reaper_[a-z_0-9]*\)(.*/\1/p' reaper/reaper.h

# Files made by a redirection or unpacked (not by install -m) get umask 022: they are for every
# user, whatever the umask of the root who installs.
install: all
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(INCLUDEDIR)"/reaper \
		"$(DESTDIR)$(PKGCONFIGDIR)" "$(DESTDIR)$(MANDIR)"/man1 "$(DESTDIR)$(MANDIR)"/man3
	install -m 0755 $(BUILD)/reaper "$(DESTDIR)$(BINDIR)"/reaper
	install -m 0644 $(BUILD)/libreaper.a "$(DESTDIR)$(LIBDIR)"/libreaper.a
	install -m 0755 $(BUILD)/libreaper.so "$(DESTDIR)$(LIBDIR)"/libreaper.so.$(VERSION)
	ln -sf libreaper.so.$(VERSION) "$(DESTDIR)$(LIBDIR)"/libreaper.so.0
	ln -sf libreaper.so.0 "$(DESTDIR)$(LIBDIR)"/libreaper.so
	install -m 0644 reaper/reaper.h "$(DESTDIR)$(INCLUDEDIR)"/reaper/reaper.h
	install -m 0644 man/reaper.1 "$(DESTDIR)$(MANDIR)"/man1/reaper.1
	install -m 0644 man/libreaper.3 "$(DESTDIR)$(MANDIR)"/man3/libreaper.3
	umask 022; for f in $$($(PUBLIC_FUNCS)); do echo '.so man3/libreaper.3' > "$(DESTDIR)$(MANDIR)"/man3/$$f.3; done
	umask 022; sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' reaper/libreaper.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)"/libreaper.pc

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)"/reaper "$(DESTDIR)$(LIBDIR)"/libreaper.a \
		"$(DESTDIR)$(LIBDIR)"/libreaper.so.$(VERSION) "$(DESTDIR)$(LIBDIR)"/libreaper.so.0 \
		"$(DESTDIR)$(LIBDIR)"/libreaper.so "$(DESTDIR)$(INCLUDEDIR)"/reaper/reaper.h \
		"$(DESTDIR)$(MANDIR)"/man1/reaper.1 "$(DESTDIR)$(MANDIR)"/man3/libreaper.3 \
		"$(DESTDIR)$(PKGCONFIGDIR)"/libreaper.pc
	for f in $$($(PUBLIC_FUNCS)); do rm -f "$(DESTDIR)$(MANDIR)"/man3/$$f.3; done
	-rmdir "$(DESTDIR)$(INCLUDEDIR)"/reaper 2>/dev/null

clean:
	rm -rf $(BUILD)
