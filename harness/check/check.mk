# SPDX-License-Identifier: MIT
# The Check helper <reaper/check.h>: libreaper-check.a (kept apart from libreaper so that
# libreaper never depends on Check), its test (check-checkhelper, part of make check) and
# installation with a pkg-config file. CHECK_CFLAGS / CHECK_LIBS come from tests/tests.mk.
# A plain `make` builds it only where Check's header is installed (`make` needs a C compiler
# and libc only); `make install` installs it when it was built.
CHECKH_LIB  := $(BUILD)/libreaper-check.a
CHECKH_TEST := $(BUILD)/harness-check/check_helper_test
# The helper's functions, from its header: each gets a man page link to reaper_check(3).
CHECKH_FUNCS := $(shell sed -n 's/^[a-z_]* \(reaper_check_[a-z_]*[a-z]\)[^a-z_{][^{]*$$/\1/p' harness/check/reaper/check.h)
HAVE_CHECK  := $(shell printf '\043include <check.h>\n' | $(CC) $(CHECK_CFLAGS) -E -x c - >/dev/null 2>&1 && echo 1)

ifeq ($(HAVE_CHECK),1)
all: $(CHECKH_LIB)
endif

$(BUILD)/obj/harness/check/check.o: harness/check/check.c harness/check/reaper/check.h reaper/reaper.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iharness/check $(CHECK_CFLAGS) -c $< -o $@

$(CHECKH_LIB): $(BUILD)/obj/harness/check/check.o
	@rm -f $@
	ar rcs $@ $^

# The helper's test links the public libreaper.a: the helper uses the public API only.
$(CHECKH_TEST): harness/check/tests/check_helper_test.c harness/check/reaper/check.h $(CHECKH_LIB) $(BUILD)/libreaper.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iharness/check $(CHECK_CFLAGS) -o $@ $< $(CHECKH_LIB) $(BUILD)/libreaper.a $(CHECK_LIBS) $(LDLIBS)

.PHONY: check-checkhelper install-check uninstall-check
check-checkhelper: $(CHECKH_TEST)
	$(CHECKH_TEST)

CHECK_TARGETS += check-checkhelper

install: install-check
install-check: all
	@if [ -f $(CHECKH_LIB) ]; then \
		umask 022; set -x; \
		install -d "$(DESTDIR)$(INCLUDEDIR)"/reaper "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(PKGCONFIGDIR)" \
			"$(DESTDIR)$(MANDIR)"/man3 && \
		install -m 0644 harness/check/reaper/check.h "$(DESTDIR)$(INCLUDEDIR)"/reaper/check.h && \
		install -m 0644 man/reaper_check.3 "$(DESTDIR)$(MANDIR)"/man3/reaper_check.3 && \
		for f in $(CHECKH_FUNCS); do echo '.so man3/reaper_check.3' > "$(DESTDIR)$(MANDIR)"/man3/$$f.3 || exit 1; done && \
		install -m 0644 $(CHECKH_LIB) "$(DESTDIR)$(LIBDIR)"/libreaper-check.a && \
		sed -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
			harness/check/libreaper-check.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)"/libreaper-check.pc; \
	else echo "install-check: Check's header is not installed, so the Check helper was not built"; fi

uninstall: uninstall-check
uninstall-check:
	rm -f "$(DESTDIR)$(INCLUDEDIR)"/reaper/check.h "$(DESTDIR)$(LIBDIR)"/libreaper-check.a \
		"$(DESTDIR)$(PKGCONFIGDIR)"/libreaper-check.pc "$(DESTDIR)$(MANDIR)"/man3/reaper_check.3 \
		$(foreach f,$(CHECKH_FUNCS),"$(DESTDIR)$(MANDIR)"/man3/$(f).3)
