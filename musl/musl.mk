# SPDX-License-Identifier: MIT
# The command's objects for its static link against musl (MUSL_CC, set in the Makefile): the
# library's and the command's sources again, each with compat.h ahead of it (what they take
# from glibc that musl lacks), and the kernel's headers (linux/, asm/), which musl-gcc leaves
# out, from where the system keeps them.
MUSL_INCLUDE := $(BUILD)/musl/include
MUSL_ARCH    := $(shell $(CC) -print-multiarch 2>/dev/null)
# Static, not position-independent: musl-gcc's link line knows -static but not -static-pie.
MUSL_LINK     = $(MUSL_CC) $(ALL_CFLAGS) -static -Wl,--fatal-warnings -o $@ $(MUSL_OBJ) $(LDFLAGS)

$(MUSL_INCLUDE)/.made:
	@mkdir -p $(MUSL_INCLUDE)
	ln -sfn /usr/include/linux $(MUSL_INCLUDE)/linux
	ln -sfn /usr/include/asm-generic $(MUSL_INCLUDE)/asm-generic
	ln -sfn $(if $(wildcard /usr/include/$(MUSL_ARCH)/asm),/usr/include/$(MUSL_ARCH)/asm,/usr/include/asm) $(MUSL_INCLUDE)/asm
	@touch $@

$(BUILD)/musl/%.o: %.c musl/compat.h $(wildcard reaper/*.h harness/*.h) | $(MUSL_INCLUDE)/.made
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(ALL_CFLAGS) -isystem $(MUSL_INCLUDE) -include musl/compat.h -c $< -o $@
