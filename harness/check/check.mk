# The Check helper <reaper/check.h>: libreaper-check.a (kept apart from libreaper so that
# libreaper never depends on Check), its test (check-checkhelper, part of make check) and
# installation. CHECK_CFLAGS / CHECK_LIBS come from tests/tests.mk (used in recipes only).
CHECKH_LIB  := $(BUILD)/libreaper-check.a
CHECKH_TEST := $(BUILD)/harness-check/check_helper_test

all: $(CHECKH_LIB)

$(BUILD)/obj/harness/check/check.o: harness/check/check.c harness/check/reaper/check.h reaper/reaper.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iharness/check $(CHECK_CFLAGS) -c $< -o $@

$(CHECKH_LIB): $(BUILD)/obj/harness/check/check.o
	@rm -f $@
	ar rcs $@ $^

$(CHECKH_TEST): harness/check/tests/check_helper_test.c harness/check/reaper/check.h $(CHECKH_LIB) $(BUILD)/libreaper.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iharness/check $(CHECK_CFLAGS) -o $@ $< $(CHECKH_LIB) $(BUILD)/libreaper.a $(CHECK_LIBS) $(LDLIBS)

.PHONY: check-checkhelper install-check
check-checkhelper: $(CHECKH_TEST)
	$(CHECKH_TEST)

CHECK_TARGETS += check-checkhelper

install: install-check
install-check: $(CHECKH_LIB)
	install -d $(DESTDIR)$(PREFIX)/include/reaper $(DESTDIR)$(PREFIX)/lib
	install -m 0644 harness/check/reaper/check.h $(DESTDIR)$(PREFIX)/include/reaper/check.h
	install -m 0644 $(CHECKH_LIB) $(DESTDIR)$(PREFIX)/lib/libreaper-check.a
