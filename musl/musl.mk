# SPDX-License-Identifier: MIT
# The command's objects for its static link against musl (MUSL_CC, set in the Makefile): the
# library's and the command's sources again, each with compat.h ahead of it (what they take
# from glibc that musl lacks), and the kernel's headers (linux/, asm/), which musl-gcc leaves
# out, from where the system keeps them.
MUSL_INCLUDE := $(BUILD)/musl/include
MUSL_ARCH    := $(shell $(CC) -print-multiarch 2>/dev/null)
# A static PIE, so the kernel maps it at a random address as it does any PIE. musl-gcc's spec
# drops -static-pie (its link line knows -static only, and the result would ask for a musl
# loader that is not there) and names Scrt1.o, whose start does not relocate the program: the
# link is spelled out, with musl's rcrt1.o (the start that relocates a static PIE) and crti/crtn
# from the directory the spec takes its own from, and gcc's crtbeginS/crtendS as the spec does.
# Where musl's directory cannot be told, the link fails and the Makefile falls back to glibc.
MUSL_LIBDIR  := $(if $(MUSL_CC),$(shell $(MUSL_CC) -\#\#\# -static x.o 2>&1 | tr ' ' '\n' | sed -n 's|^"\{0,1\}\(/.*\)/Scrt1\.o"\{0,1\}$$|\1|p' | head -n 1))
MUSL_START    = $(if $(MUSL_LIBDIR),$(MUSL_LIBDIR)/rcrt1.o $(MUSL_LIBDIR)/crti.o,/nonexistent/musl/rcrt1.o) $(shell $(MUSL_CC) -print-file-name=crtbeginS.o)
MUSL_END      = $(shell $(MUSL_CC) -print-file-name=crtendS.o) $(MUSL_LIBDIR)/crtn.o
# $(call musl_link,OBJECTS): a static PIE $@ of OBJECTS against musl
musl_link     = $(MUSL_CC) $(ALL_CFLAGS) -static -nostartfiles -Wl,-pie,--no-dynamic-linker,-z,text,--fatal-warnings \
		-o $@ $(MUSL_START) $(1) $(LDFLAGS) $(MUSL_END)
MUSL_LINK     = $(call musl_link,$(MUSL_OBJ))

$(MUSL_INCLUDE)/.made:
	@mkdir -p $(MUSL_INCLUDE)
	ln -sfn /usr/include/linux $(MUSL_INCLUDE)/linux
	ln -sfn /usr/include/asm-generic $(MUSL_INCLUDE)/asm-generic
	ln -sfn $(if $(wildcard /usr/include/$(MUSL_ARCH)/asm),/usr/include/$(MUSL_ARCH)/asm,/usr/include/asm) $(MUSL_INCLUDE)/asm
	@touch $@

$(BUILD)/musl/%.o: %.c musl/compat.h $(wildcard reaper/*.h harness/*.h) | $(MUSL_INCLUDE)/.made
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(ALL_CFLAGS) -isystem $(MUSL_INCLUDE) -include musl/compat.h -c $< -o $@
