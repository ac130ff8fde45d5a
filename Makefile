# reaper: build, check, install, demo, bench.  See README.md.
# Parts add their own rules in */*.mk (tests/tests.mk, bench/bench.mk, ...).
BUILD   ?= build
CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
ALL_CFLAGS := -std=gnu11 $(WARN) -fPIC -I. $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  += -lpthread
PYTHON  ?= /usr/bin/python3

LIB_SRC := $(sort $(wildcard reaper/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC := $(sort $(wildcard harness/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
DEPS_STAMP := $(BUILD)/.deps-ok

# Targets that make check runs, in order; *.mk files append to it.
CHECK_TARGETS :=

.PHONY: all deps check check-suites demo install clean bench
all: $(BUILD)/reaper $(BUILD)/libreaper.so $(BUILD)/libreaper.a

# Missing Debian packages are installed when root, otherwise named (see ci/deps.sh).
$(DEPS_STAMP): ci/deps.sh
	@mkdir -p $(BUILD)
	@bash ci/deps.sh
	@touch $@
deps: $(DEPS_STAMP)

$(BUILD)/obj/%.o: %.c $(wildcard reaper/*.h harness/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libreaper.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libreaper.so: $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libreaper.so.0 -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/reaper: $(CLI_OBJ) $(BUILD)/libreaper.a
	$(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libreaper.a $(LDFLAGS) $(LDLIBS)

include $(sort $(wildcard */*.mk tests/*/*.mk harness/*/*.mk))

# The suites run under reaper itself: whatever a test leaves behind fails make check.
check: all
	$(BUILD)/reaper run --timeout 10 --grace 2 -- $(MAKE) --no-print-directory check-suites
check-suites: $(CHECK_TARGETS)
	@echo "make check: all suites passed"

demo: all $(BUILD)/fixtures/daemon
	@bash fixtures/demo/run-demo.sh $(BUILD)/reaper

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/reaper \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0755 $(BUILD)/reaper $(DESTDIR)$(PREFIX)/bin/reaper
	install -m 0644 $(BUILD)/libreaper.a $(DESTDIR)$(PREFIX)/lib/libreaper.a
	install -m 0755 $(BUILD)/libreaper.so $(DESTDIR)$(PREFIX)/lib/libreaper.so.0
	ln -sf libreaper.so.0 $(DESTDIR)$(PREFIX)/lib/libreaper.so
	install -m 0644 reaper/reaper.h $(DESTDIR)$(PREFIX)/include/reaper/reaper.h
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 0644 man/reaper.1 $(DESTDIR)$(PREFIX)/share/man/man1/reaper.1
	install -m 0644 man/libreaper.3 $(DESTDIR)$(PREFIX)/share/man/man3/libreaper.3
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|'"$$(sed -n 's/.*REAPER_VERSION "\(.*\)"/\1/p' reaper/reaper.h)"'|' \
		reaper/libreaper.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libreaper.pc

clean:
	rm -rf $(BUILD)
